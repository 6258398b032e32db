// Constant folding's compiled run (kir::evaluate, targets/llvm/HostJit.cpp)
// against the interpreter: the same bytes for the kernels it takes (weight
// packing, Winograd transforms, transposes, casts, quantization), and the
// kernels it must leave to the interpreter.
#include "PassTestSupport.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/passes/Passes.h"
#include "targets/llvm/HostJit.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

using namespace mlcc;
using passtest::Builder;

namespace {

int gCompiledRuns = 0;

void countingRun(const kir::Kernel &k, const std::vector<void *> &args) {
  ++gCompiledRuns;
  llvmgen::runCompiledKernel(k, args);
}

/// `n` values: random normals with the hard cases of a float mixed in.
std::vector<double> values(size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  const double special[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN(), 1e-40, -3e-39, 65504.0,
                            65520.0, 1e38, -1e38, 0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 300.0};
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 97 < sizeof special / sizeof *special ? special[i % 97] : d(rng);
  return v;
}

/// Folds `make`'s graph with the interpreter, then with the compiled run,
/// and returns the number of compiled runs; each output's bytes must agree.
int foldBothWays(const std::function<void(Builder &)> &make) {
  Builder a, b;
  make(a);
  make(b);
  kir::setCompiledRun(nullptr);
  passes::inferAndFold(a.G);
  gCompiledRuns = 0;
  kir::setCompiledRun(&countingRun);
  passes::inferAndFold(b.G);
  kir::setCompiledRun(&llvmgen::runCompiledKernel);
  REQUIRE(a.G.Outputs.size() == b.G.Outputs.size());
  for (size_t i = 0; i < a.G.Outputs.size(); ++i) {
    const ir::Value *x = a.G.Outputs[i], *y = b.G.Outputs[i];
    INFO("output " << x->Name);
    REQUIRE(x->Const);
    REQUIRE(y->Const);
    CHECK(x->Const->denseBytes() == y->Const->denseBytes());
  }
  return gCompiledRuns;
}

ir::Value *mlccNode(Builder &g, const std::string &op, std::vector<ir::Value *> ins,
                    const std::string &out, ir::TensorType type,
                    std::map<std::string, ir::Attribute> attrs) {
  ir::Value *v = g.node(op, std::move(ins), out, std::move(type), std::move(attrs));
  v->Producer->Domain = "mlcc";
  v->Producer->Opset = 1;
  return v;
}

} // namespace

TEST_CASE("compiled folding: weight packing gives the interpreter's bytes", "[fold]") {
  int runs = foldBothWays([](Builder &g) {
    // Panels of 16 columns, the last one partial; and a transposed [K, N].
    ir::Value *w = g.constant("w", DType::F32, {200, 37, 3, 3}, values(200 * 37 * 9, 1));
    g.G.Outputs.push_back(mlccNode(g, "PackPanels", {w}, "panels", {DType::F32, {}},
                                   {{"groups", ir::intAttr(1)},
                                    {"cols", ir::intAttr(200)},
                                    {"panel", ir::intAttr(16)}}));
    ir::Value *b = g.constant("b", DType::F32, {700, 390}, values(700 * 390, 2));
    g.G.Outputs.push_back(mlccNode(g, "PackPanels", {b}, "panels_t", {DType::F32, {}},
                                   {{"groups", ir::intAttr(1)},
                                    {"cols", ir::intAttr(390)},
                                    {"panel", ir::intAttr(24)},
                                    {"transposed", ir::intAttr(1)}}));
    // int8 quads and pairs (x86 dot4, Arm dot2), by channel and along K.
    std::vector<double> bytes(120 * 67 * 9);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = (double)((int)(i * 37 % 256) - 128);
    ir::Value *q = g.constant("q", DType::I8, {120, 67, 3, 3}, bytes);
    for (int pairs : {0, 1, 2})
      g.G.Outputs.push_back(mlccNode(g, "PackQuads", {q}, "quads" + std::to_string(pairs),
                                     {DType::I32, {}}, {{"pairs", ir::intAttr(pairs)}}));
    ir::Value *k = g.constant("k", DType::I8, {603, 120},
                              std::vector<double>(bytes.begin(), bytes.begin() + 603 * 120));
    g.G.Outputs.push_back(mlccNode(g, "PackQuadsK", {k}, "quads_k", {DType::I32, {}},
                                   {{"transposed", ir::intAttr(1)}, {"columns", ir::intAttr(8)}}));
  });
  CHECK(runs >= 4); // the large ones compiled
}

TEST_CASE("compiled folding: Winograd weight transforms give the interpreter's bytes",
          "[fold]") {
  for (int64_t tile : {2}) { // F(2x2, 3x3), the transform mlcc has
    int runs = foldBothWays([tile](Builder &g) {
      ir::Value *w = g.constant("w", DType::F32, {160, 128, 3, 3}, values(160 * 128 * 9, 3));
      g.G.Outputs.push_back(mlccNode(g, "WinogradWeights", {w}, "u", {DType::F32, {}},
                                     {{"tile", ir::intAttr(tile)}}));
    });
    CHECK(runs == 1);
  }
}

TEST_CASE("compiled folding: transposes, casts and quantization give the interpreter's bytes",
          "[fold]") {
  int runs = foldBothWays([](Builder &g) {
    const Shape s = {48, 96, 80};
    ir::Value *x = g.constant("x", DType::F32, s, values(48 * 96 * 80, 4, 50.0));
    g.G.Outputs.push_back(g.node("Transpose", {x}, "t", {DType::F32, {}},
                                 {{"perm", ir::intsAttr({2, 0, 1})}}));
    for (auto [type, to] : {std::pair{DType::F16, 10}, {DType::BF16, 16}, {DType::I8, 3},
                            {DType::U16, 4}, {DType::F64, 11}})
      g.G.Outputs.push_back(g.node("Cast", {x}, "cast" + std::string(dtypeName(type)),
                                   {type, {}}, {{"to", ir::intAttr(to)}}));
    // Per-channel int8 quantization (division, rounding half to even,
    // saturation).
    std::vector<double> scales(96);
    for (size_t i = 0; i < scales.size(); ++i)
      scales[i] = 0.05 + 0.01 * (double)i;
    ir::Value *scale = g.constant("scale", DType::F32, {96}, scales);
    ir::Value *zero = g.constant("zero", DType::I8, {96}, std::vector<double>(96, 3));
    g.G.Outputs.push_back(g.node("QuantizeLinear", {x, scale, zero}, "q", {DType::I8, {}},
                                 {{"axis", ir::intAttr(1)}}));
  });
  CHECK(runs >= 5);
}

TEST_CASE("compiled folding: libm functions stay interpreted",
          "[fold]") {
  int runs = foldBothWays([](Builder &g) {
    ir::Value *x = g.constant("x", DType::F32, {600, 500}, values(600 * 500, 5));
    g.G.Outputs.push_back(g.node("Exp", {x}, "e", {DType::F32, {}}));
    g.G.Outputs.push_back(g.node("Tanh", {x}, "th", {DType::F32, {}}));
  });
  CHECK(runs == 0);
}

TEST_CASE("compiled folding: the fit of a kernel", "[fold]") {
  using namespace kir;
  Buffer in = std::make_shared<BufferNode>(BufferNode{"in", DType::F32, 100});
  Buffer out = std::make_shared<BufferNode>(BufferNode{"out", DType::F32, 100});
  Var i = std::make_shared<VarNode>(VarNode{"i"});
  auto kernelOf = [&](Stmt body) {
    Kernel k;
    k.Name = "k";
    k.Params = {in, out};
    k.Body = std::move(body);
    return k;
  };
  Expr iv = varRef(i);
  // In bounds: i in [0, 100), and min(i + 1, 99).
  CompiledFit ok = compiledFit(kernelOf(forLoop(
      i, indexConst(0), indexConst(100),
      store(out, iv, load(in, min(iv + indexConst(1), indexConst(99))) + load(in, iv)))));
  CHECK(ok.Exact);
  CHECK(ok.Iterations == 100);
  // One past the end.
  CHECK_FALSE(compiledFit(kernelOf(forLoop(i, indexConst(0), indexConst(100),
                                           store(out, iv, load(in, iv + indexConst(1))))))
                  .Exact);
  // An index read from a buffer (a gather): no bound.
  Buffer idx = std::make_shared<BufferNode>(BufferNode{"idx", DType::I64, 100});
  Kernel gather = kernelOf(forLoop(i, indexConst(0), indexConst(100),
                                   store(out, iv, load(in, cast(DType::Index, load(idx, iv))))));
  gather.Params.push_back(idx);
  CHECK_FALSE(compiledFit(gather).Exact);
  // A libm function.
  CHECK_FALSE(compiledFit(kernelOf(forLoop(i, indexConst(0), indexConst(100),
                                           store(out, iv, unary(UnOp::Exp, load(in, iv))))))
                  .Exact);
}
