// One pass at a time on a small graph: the graph it leaves is compared,
// node by node, with the graph it should leave (Before -> Expected). The
// passes the other unit tests reach only through whole models:
// fold-batch-norm, fuse-qdq, dispatch-library, pack-weights,
// eliminate-dead-code, eliminate-common-subexpressions. The passes that
// prepare and make the kernel program (fixed-point-requant, fuse-ops,
// lower-to-kernels) are tested the same way in LoweringPassTest.cpp; the
// Builder and structure() both use are PassTestSupport.h.
#include "PassTestSupport.h"
#include "compiler/passes/Passes.h"
#include "compiler/target/TargetDesc.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlcc;

using passtest::Builder;
using passtest::structure;

TEST_CASE("fold-batch-norm: a Conv's BatchNormalization becomes its weights and bias",
          "[passes][pass:fold-batch-norm]") {
  Builder b;
  ir::TensorType f{DType::F32, {1, 2, 4, 4}};
  ir::Value *x = b.input("x", DType::F32, {1, 3, 4, 4});
  ir::Value *w = b.constant("w", DType::F32, {2, 3, 1, 1}, {1, 2, 3, 4, 5, 6});
  ir::Value *bias = b.constant("bias", DType::F32, {2}, {0.5, -0.5});
  ir::Value *conv = b.node("Conv", {x, w, bias}, "conv", f);
  std::vector<ir::Value *> stats;
  for (const char *s : {"scale", "shift", "mean", "var"})
    stats.push_back(b.constant(s, DType::F32, {2}, {2, 4}));
  ir::Value *y = b.node("BatchNormalization", {conv, stats[0], stats[1], stats[2], stats[3]}, "y", f,
                        {{"epsilon", [] { ir::Attribute a; a.Kind = ir::AttrKind::Float; a.F = 0.25; return a; }()}});
  b.G.Outputs = {y};

  passes::foldBatchNorm(b.G);
  // Expected: the scale s = scale / sqrt(var + eps) and the bias
  // (bias - mean) * s + shift as nodes that infer-and-fold evaluates, the
  // Conv reading them and writing y; no BatchNormalization.
  std::vector<std::string> expected = {
      "Add(const f32[2], const f32[])",
      "Sqrt(%0) -> %1",
      "Div(const f32[2], %1) -> %2",
      "Reshape(%2, const i64[4]) -> %3",
      "Mul(const f32[2,3,1,1], %3) -> %4",
      "Sub(const f32[2], const f32[2]) -> %5",
      "Mul(%5, %2) -> %6",
      "Add(%6, const f32[2]) -> %7",
      "Conv(x, %4, %7) -> y",
  };
  expected[0] += " -> %0";
  CHECK(structure(b.G) == expected);

  // Folded, the weights are w * scale / sqrt(var + eps) per output channel.
  passes::inferAndFold(b.G, {});
  passes::eliminateDeadCode(b.G);
  REQUIRE(structure(b.G) == std::vector<std::string>{"Conv(x, const f32[2,3,1,1], const f32[2]) -> y"});
  std::vector<double> wf = b.G.Nodes[0]->Inputs[1]->Const->toDoubles();
  std::vector<double> bf = b.G.Nodes[0]->Inputs[2]->Const->toDoubles();
  double s0 = 2 / std::sqrt(2 + 0.25), s1 = 4 / std::sqrt(4 + 0.25);
  CHECK(wf[0] == Approx(1 * s0));
  CHECK(wf[5] == Approx(6 * s1));
  CHECK(bf[0] == Approx((0.5 - 2) * s0 + 2));
  CHECK(bf[1] == Approx((-0.5 - 4) * s1 + 4));
}

TEST_CASE("fold-batch-norm: a BatchNormalization whose input is used twice stays",
          "[passes][pass:fold-batch-norm]") {
  Builder b;
  ir::TensorType f{DType::F32, {1, 2, 4, 4}};
  ir::Value *x = b.input("x", DType::F32, {1, 3, 4, 4});
  ir::Value *w = b.constant("w", DType::F32, {2, 3, 1, 1}, {1, 2, 3, 4, 5, 6});
  ir::Value *conv = b.node("Conv", {x, w}, "conv", f);
  std::vector<ir::Value *> stats;
  for (const char *s : {"scale", "shift", "mean", "var"})
    stats.push_back(b.constant(s, DType::F32, {2}, {2, 4}));
  ir::Value *y = b.node("BatchNormalization", {conv, stats[0], stats[1], stats[2], stats[3]}, "y", f);
  ir::Value *z = b.node("Add", {y, conv}, "z", f);
  b.G.Outputs = {z};
  std::vector<std::string> before = structure(b.G);
  passes::foldBatchNorm(b.G);
  CHECK(structure(b.G) == before);
}

TEST_CASE("fuse-qdq: DequantizeLinear -> MatMul -> QuantizeLinear is a QLinearMatMul",
          "[passes][pass:fuse-qdq]") {
  Builder b;
  ir::Value *aq = b.input("a", DType::U8, {2, 4});
  ir::Value *as = b.constant("a_scale", DType::F32, {}, {0.5});
  ir::Value *az = b.constant("a_zero", DType::U8, {}, {128});
  ir::Value *bq = b.constant("b", DType::I8, {4, 3}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12});
  ir::Value *bs = b.constant("b_scale", DType::F32, {}, {0.25});
  ir::Value *bz = b.constant("b_zero", DType::I8, {}, {0});
  ir::Value *ys = b.constant("y_scale", DType::F32, {}, {2});
  ir::Value *yz = b.constant("y_zero", DType::U8, {}, {100});
  ir::Value *a = b.node("DequantizeLinear", {aq, as, az}, "a_f", {DType::F32, {2, 4}});
  ir::Value *w = b.node("DequantizeLinear", {bq, bs, bz}, "b_f", {DType::F32, {4, 3}});
  ir::Value *c = b.node("MatMul", {a, w}, "c", {DType::F32, {2, 3}});
  ir::Value *y = b.node("QuantizeLinear", {c, ys, yz}, "y", {DType::U8, {2, 3}});
  b.G.Outputs = {y};

  passes::fuseQdq(b.G);
  passes::eliminateDeadCode(b.G);
  CHECK(structure(b.G) ==
        std::vector<std::string>{"QLinearMatMul(a, const f32[], const u8[], const i8[4,3], "
                                 "const f32[], const i8[], const f32[], const u8[]) -> y"});
  // What the 8-bit output stands for, for mlcc check.
  CHECK(y->QuantizedFrom == "c");
  CHECK(y->DequantScale == 2);
  CHECK(y->DequantZeroPoint == 100);
}

TEST_CASE("fuse-qdq: a float op between two quantizations that it cannot fuse stays",
          "[passes][pass:fuse-qdq]") {
  Builder b;
  ir::Value *aq = b.input("a", DType::U8, {2, 4});
  ir::Value *as = b.constant("a_scale", DType::F32, {}, {0.5});
  ir::Value *az = b.constant("a_zero", DType::U8, {}, {128});
  ir::Value *a = b.node("DequantizeLinear", {aq, as, az}, "a_f", {DType::F32, {2, 4}});
  ir::Value *e = b.node("Erf", {a}, "e", {DType::F32, {2, 4}});
  b.G.Outputs = {e};
  std::vector<std::string> before = structure(b.G);
  passes::fuseQdq(b.G);
  CHECK(structure(b.G) == before);
}

TEST_CASE("dispatch-library: float products become mlcc.Gemm, their bias an Add",
          "[passes][pass:dispatch-library]") {
  Builder b;
  ir::Value *a = b.input("a", DType::F32, {8, 16});
  ir::Value *w = b.constant("w", DType::F32, {16, 4}, std::vector<double>(64, 0.5));
  ir::Value *c = b.constant("c", DType::F32, {4}, {1, 2, 3, 4});
  ir::Value *y = b.node("Gemm", {a, w, c}, "y", {DType::F32, {8, 4}});
  ir::Value *i = b.input("i", DType::I32, {8, 16});
  ir::Value *wi = b.constant("wi", DType::I32, {16, 4}, std::vector<double>(64, 1));
  ir::Value *z = b.node("MatMul", {i, wi}, "z", {DType::I32, {8, 4}});
  b.G.Outputs = {y, z};

  CHECK(passes::dispatchLibrary(b.G));
  CHECK(structure(b.G) == std::vector<std::string>{
                              "mlcc.Gemm(a, const f32[16,4]) -> %0",
                              "Add(%0, const f32[4]) -> y",
                              "MatMul(i, const i32[16,4]) -> z", // integer: a generated kernel
                          });
  const ir::Node &gemm = *b.G.Nodes[0];
  CHECK(gemm.attrInt("m", 0) == 8);
  CHECK(gemm.attrInt("n", 0) == 4);
  CHECK(gemm.attrInt("k", 0) == 16);
  CHECK_FALSE(passes::dispatchLibrary(b.G)); // nothing left to dispatch
}

TEST_CASE("plan-kernels on a GPU target: one output per thread, no search",
          "[passes][pass:plan-kernels]") {
  Builder b;
  ir::Value *a = b.input("a", DType::F32, {8, 16});
  ir::Value *w = b.constant("w", DType::F32, {16, 4}, std::vector<double>(64, 0.5));
  b.G.Outputs = {b.node("MatMul", {a, w}, "y", {DType::F32, {8, 4}})};
  size_t asked = 0;
  passes::PlanChooser choose = [&](const ir::Node &, const std::vector<ir::KernelPlan> &) {
    ++asked;
    return size_t(0);
  };
  REQUIRE(passes::planKernels(b.G, asGpu(), false, choose));
  CHECK(b.G.Nodes[0]->Plan.PerOutput);
  CHECK(asked == 0);
  // The pass only decides: pack-weights adds nothing for a GPU's plan.
  CHECK_FALSE(passes::packWeights(b.G));
}

TEST_CASE("pack-weights: a register tile's weights in panels, as an extra input",
          "[passes][pass:pack-weights]") {
  Builder b;
  ir::Value *a = b.input("a", DType::F32, {64, 32});
  std::vector<double> values(32 * 48);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (double)(i % 7) - 3;
  ir::Value *w = b.constant("w", DType::F32, {32, 48}, values);
  b.G.Outputs = {b.node("MatMul", {a, w}, "y", {DType::F32, {64, 48}})};
  // A CPU of 8 float lanes and 16 vector registers: the product gets a
  // register tile of whole vectors.
  TargetDesc cpu;
  cpu.VectorBytes = 32;
  cpu.VectorRegisters = 16;
  cpu.GeneralRegisters = 16;
  cpu.Fma = true;
  cpu.L1Bytes = 32 * 1024;
  cpu.L2Bytes = 1024 * 1024;
  cpu.CacheLineBytes = 64;
  cpu.StackBytes = 64 * 1024;
  REQUIRE(passes::planKernels(b.G, cpu));
  const ir::KernelPlan plan = b.G.Nodes[0]->Plan;
  REQUIRE(plan.Register);
  CHECK(plan.Register->Lanes == 8);

  CHECK(passes::packWeights(b.G));
  CHECK(structure(b.G) == std::vector<std::string>{
                              "mlcc.PackPanels(const f32[32,48]) -> %0",
                              "MatMul(a, const f32[32,48], %0) -> y",
                          });
  // Folded: the packed copy holds every weight once (in panels of whole
  // tiles: the columns rounded up to the tile's width), and the original
  // is no longer read.
  passes::inferAndFold(b.G, {});
  REQUIRE(b.G.Nodes.size() == 1);
  const ir::Value *packed = b.G.Nodes[0]->Inputs[2];
  REQUIRE(packed->Const);
  int64_t width = plan.Register->Panel; // the panel's columns
  CHECK(packed->Type.numel() == 32 * ((48 + width - 1) / width * width));
  std::vector<double> p = packed->Const->toDoubles();
  double sum = 0, want = 0;
  for (double v : p)
    sum += std::fabs(v);
  for (double v : values)
    want += std::fabs(v);
  CHECK(sum == want);
  CHECK_FALSE(passes::packWeights(b.G)); // packed once
}

TEST_CASE("eliminate-dead-code: a node no output reads goes, with the nodes only it read",
          "[passes][pass:eliminate-dead-code]") {
  Builder b;
  ir::TensorType f{DType::F32, {4}};
  ir::Value *x = b.input("x", DType::F32, {4});
  ir::Value *kept = b.node("Relu", {x}, "kept", f);
  ir::Value *unused = b.node("Exp", {x}, "unused", f);
  b.node("Neg", {unused}, "unused2", f);
  b.G.Outputs = {kept};
  passes::eliminateDeadCode(b.G);
  CHECK(structure(b.G) == std::vector<std::string>{"Relu(x) -> kept"});
}

TEST_CASE("eliminate-common-subexpressions: one node for two equal ones, not for different "
          "attributes",
          "[passes][pass:eliminate-common-subexpressions]") {
  Builder b;
  ir::TensorType f{DType::F32, {4}};
  ir::Value *x = b.input("x", DType::F32, {4});
  ir::Value *a1 = b.node("Relu", {x}, "a1", f);
  ir::Value *a2 = b.node("Relu", {x}, "a2", f);
  ir::Value *s = b.node("Add", {a1, a2}, "s", f);
  ir::Attribute lo, hi;
  lo.Kind = hi.Kind = ir::AttrKind::Float;
  lo.F = 0.5;
  hi.F = 0.25;
  ir::Value *e1 = b.node("Elu", {s}, "e1", f, {{"alpha", lo}});
  ir::Value *e2 = b.node("Elu", {s}, "e2", f, {{"alpha", hi}});
  ir::Value *y = b.node("Add", {e1, e2}, "y", f);
  b.G.Outputs = {y};
  CHECK(passes::eliminateCommonSubexpressions(b.G));
  passes::eliminateDeadCode(b.G);
  CHECK(structure(b.G) == std::vector<std::string>{
                              "Relu(x) -> %0", "Add(%0, %0) -> %1", "Elu(%1) -> %2",
                              "Elu(%1) -> %3", "Add(%2, %3) -> y"});
  // Nothing equal is left: a second run changes nothing.
  CHECK_FALSE(passes::eliminateCommonSubexpressions(b.G));
}
