// The schedule layer: the cost model's choices (compiler/schedule/CostModel)
// and the plans that plan-kernels, fixed-point-requant and pack-weights give
// nodes for each class of target (AVX-512 with VNNI, AVX2, AArch64 NEON,
// Cortex-M4, Cortex-M0+), from the targets' real descriptions.
#include "compiler/passes/Passes.h"
#include "compiler/schedule/CostModel.h"
#include "targets/llvm/Targets.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using schedule::MacKind;
using schedule::TileProblem;

namespace {

TargetDesc describe(const std::string &target, const std::string &cpu = "") {
  return llvmgen::describeTarget(llvmgen::resolveTarget(target, cpu, ""));
}

TargetDesc avx512Vnni() { return describe("x86_64", "icelake-server"); }

ir::Attribute ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.Kind = ir::AttrKind::Ints;
  a.Ints = std::move(v);
  return a;
}

/// A graph with one node `op` whose inputs are `inputs` (a null type: an
/// omitted input; a tensor: a constant) and whose output has `out`.
struct OneNode {
  ir::Graph G;
  ir::Node *N = nullptr;
  OneNode(const std::string &op, const std::string &domain,
          const std::vector<std::pair<ir::TensorType, TensorPtr>> &inputs, ir::TensorType out,
          std::map<std::string, ir::Attribute> attrs = {}) {
    auto n = std::make_unique<ir::Node>();
    n->Name = "n";
    n->OpType = op;
    n->Domain = domain;
    n->Opset = 13;
    n->Attrs = std::move(attrs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].first.Dims.empty() && !inputs[i].second) {
        n->Inputs.push_back(nullptr);
        continue;
      }
      ir::Value *v = G.addValue("in" + std::to_string(i), inputs[i].first);
      v->Const = inputs[i].second;
      if (!v->Const)
        G.Inputs.push_back(v);
      n->Inputs.push_back(v);
    }
    ir::Value *y = G.addValue("y", out);
    y->Producer = n.get();
    n->Outputs = {y};
    G.Outputs = {y};
    N = G.addNode(std::move(n));
  }
};

TensorPtr zeros(DType t, Shape s) {
  return std::make_shared<Tensor>(
      Tensor::fromInts(t, s, std::vector<int64_t>((size_t)numElements(s), 0)));
}
TensorPtr filled(DType t, Shape s, double v) {
  return std::make_shared<Tensor>(
      Tensor::fromDoubles(t, s, std::vector<double>((size_t)numElements(s), v)));
}

/// An f32 convolution x [1, c, h, h] by constant w [m, c / group, k, k].
OneNode floatConv(int64_t c, int64_t m, int64_t h, int64_t k, int64_t group = 1) {
  int64_t pad = k / 2;
  return OneNode("Conv", "",
                 {{{DType::F32, {1, c, h, h}}, nullptr},
                  {{DType::F32, {m, c / group, k, k}}, filled(DType::F32, {m, c / group, k, k}, 0.5)}},
                 {DType::F32, {1, m, h, h}},
                 {{"kernel_shape", ints({k, k})},
                  {"pads", ints({pad, pad, pad, pad})},
                  {"group", ir::intAttr(group)}});
}

/// A QLinearConv of uint8 x [1, c, h, h] by int8 constant weights (zero
/// point 0), scales 0.02 / 0.01 / 0.05.
OneNode qlinearConv(int64_t c, int64_t m, int64_t h, int64_t k, int64_t group = 1) {
  int64_t pad = k / 2;
  Shape w{m, c / group, k, k};
  auto scalar = [](DType t, double v) { return std::make_pair(ir::TensorType{t, {}}, filled(t, {}, v)); };
  return OneNode("QLinearConv", "",
                 {{{DType::U8, {1, c, h, h}}, nullptr}, scalar(DType::F32, 0.02),
                  scalar(DType::U8, 128), {{DType::I8, w}, filled(DType::I8, w, 3)},
                  {{DType::F32, {m}}, filled(DType::F32, {m}, 0.01)},
                  {{DType::I8, {m}}, zeros(DType::I8, {m})}, scalar(DType::F32, 0.05),
                  scalar(DType::U8, 128)},
                 {DType::U8, {1, m, h, h}},
                 {{"kernel_shape", ints({k, k})},
                  {"pads", ints({pad, pad, pad, pad})},
                  {"group", ir::intAttr(group)}});
}

} // namespace

TEST_CASE("the cost model's register tiles fit each target's registers", "[plan]") {
  for (const char *name : {"x86_64", "x86_64-v3", "aarch64-linux", "cortex-m4", "riscv64-linux-v"}) {
    TargetDesc t = describe(name);
    const int64_t regs = t.VectorRegisters > 0 ? t.VectorRegisters : 32;
    for (int64_t rows : {1, 7, 56, 112})
      for (int64_t cols : {8, 64, 1000}) {
        schedule::TileChoice c =
            schedule::chooseTile(t, TileProblem{MacKind::F32Fma, rows, cols, 256});
        INFO(name << ": " << rows << " x " << cols);
        CHECK(c.Lanes == t.lanes(DType::F32));
        CHECK(c.Rows <= rows);
        CHECK(c.Rows * c.Vectors + c.Vectors + 1 <= regs);
        // No cheaper tile among those that fit.
        for (int64_t nv = 1; nv <= c.Vectors; ++nv)
          for (int64_t r = 1; r <= std::min<int64_t>(rows, (regs - nv - 1) / nv); ++r)
            CHECK(schedule::tileCost(t, TileProblem{MacKind::F32Fma, rows, cols, 256}, r, nv) >=
                  c.Cost - 1e-9);
      }
  }
  // A vector target's tiles are wider than a scalar FPU's lanes.
  CHECK(schedule::chooseTile(describe("x86_64-v3"), TileProblem{MacKind::F32Fma, 64, 64}).Lanes == 8);
  CHECK(schedule::chooseTile(describe("cortex-m4"), TileProblem{MacKind::F32Fma, 64, 64}).Lanes == 1);
}

TEST_CASE("int8 dot tiles keep a quarter of the registers free", "[plan]") {
  TargetDesc t = avx512Vnni();
  for (int64_t m : {8, 64, 512})
    for (int64_t q : {16, 49, 196, 3136}) {
      schedule::TileChoice c =
          schedule::chooseTile(t, TileProblem{MacKind::Int8Dot, m, q, 64, false, 4});
      INFO(m << " x " << q);
      CHECK(c.Lanes == 16);
      CHECK(c.Rows * c.Vectors <= 24);
      CHECK(c.Vectors * 16 <= q);
    }
  // A long reduction over a big image: many accumulators hide the latency.
  schedule::TileChoice big = schedule::chooseTile(t, TileProblem{MacKind::Int8Dot, 256, 3136, 576});
  CHECK(big.Rows * big.Vectors >= 16);
}

TEST_CASE("a contraction whose panel outgrows the L2 cache is blocked", "[plan]") {
  TargetDesc t = avx512Vnni();
  schedule::TileChoice small = schedule::chooseTile(t, TileProblem{MacKind::F32Fma, 196, 256, 256});
  CHECK(small.ReduceBlock == 0);
  schedule::TileChoice large = schedule::chooseTile(t, TileProblem{MacKind::F32Fma, 196, 512, 4608});
  CHECK(large.ReduceBlock > 0);
  CHECK(large.ReduceBlock * large.Vectors * large.Lanes * 4 <= t.L1Bytes / 2);
  CHECK(large.RowBlock % large.Rows == 0);
}

TEST_CASE("Winograd only where the cache and the channels pay for it", "[plan]") {
  TargetDesc t = avx512Vnni();
  auto wb = schedule::chooseWinogradBlocks(t, 128, 128, 28, 28);
  REQUIRE(wb);
  CHECK(wb->Tile == 2);
  CHECK(wb->Cost <= 1.35);
  CHECK(wb->Rows * wb->Pitch >= t.lanes(DType::F32));
  CHECK_FALSE(schedule::chooseWinogradBlocks(t, 32, 128, 28, 28));       // few channels
  CHECK_FALSE(schedule::chooseWinogradBlocks(describe("cortex-m4"), 128, 128, 28, 28)); // no cache
}

TEST_CASE("plan-kernels: f32 convolutions on each target class", "[plan]") {
  // A 3x3 convolution with 128 channels: Winograd where there are vectors
  // and a cache, packed register tiles on Cortex-M4 (a scalar FPU).
  for (const char *name : {"x86_64", "x86_64-v3", "aarch64-linux"}) {
    OneNode c = floatConv(128, 128, 28, 3);
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    REQUIRE(p.Wino);
    CHECK(p.Wino->Skew == t.CacheLineBytes / 4);
    REQUIRE(p.Register);
    CHECK(p.Register->Lanes == t.lanes(DType::F32));
  }
  {
    OneNode c = floatConv(128, 128, 28, 3);
    ir::KernelPlan p = passes::planKernel(*c.N, describe("cortex-m4"), false);
    INFO(p.str());
    CHECK_FALSE(p.Wino);
    REQUIRE(p.Register);
    CHECK(p.Register->Lanes == 1);
    CHECK(p.Register->Panel <= 16);
  }
  // A pointwise convolution reads pixels in place.
  {
    OneNode c = floatConv(64, 64, 14, 1);
    ir::KernelPlan p = passes::planKernel(*c.N, avx512Vnni(), false);
    INFO(p.str());
    CHECK(p.PixelColumns);
  }
  // A depthwise one keeps its loop nest, with the target's plane budget.
  for (const char *name : {"x86_64", "x86_64-v3", "cortex-m4"}) {
    OneNode c = floatConv(32, 32, 28, 3, 32);
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    CHECK_FALSE(p.Register);
    REQUIRE(p.Depthwise);
    CHECK(p.Depthwise->MaxElements * 4 <= t.StackBytes);
    CHECK(p.Depthwise->GridRound % t.lanes(DType::F32) == 0);
  }
  // 1-D convolutions as 2-D ones of one row: an STFT as a strided
  // convolution (kernel 512, stride 160, 514 output channels, 8 frames)
  // tiles frames x output channels over packed weights, its vectors along
  // the channels.
  for (const char *name : {"x86_64-v3", "aarch64-linux", "cortex-m4"}) {
    OneNode c("Conv", "",
              {{{DType::F32, {1, 1, 1632}}, nullptr},
               {{DType::F32, {514, 1, 512}}, filled(DType::F32, {514, 1, 512}, 0.5)}},
              {DType::F32, {1, 514, 8}}, {{"strides", ints({160})}});
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    REQUIRE(p.Register);
    CHECK_FALSE(p.PixelColumns);
    CHECK(p.Register->Lanes == t.lanes(DType::F32));
    CHECK(p.Register->Rows <= 8);
  }
  // On a GPU: one output per thread, nothing packed.
  {
    OneNode c = floatConv(64, 64, 14, 3);
    ir::KernelPlan p = passes::planKernel(*c.N, asGpu(avx512Vnni()));
    CHECK(p.PerOutput);
    CHECK_FALSE(p.Register);
  }
}

TEST_CASE("plan-kernels: int8 convolutions on each target class", "[plan]") {
  // VNNI: dot products with a tile; depthwise: four taps per quad.
  {
    OneNode c = qlinearConv(64, 64, 28, 3);
    ir::KernelPlan p = passes::planKernel(*c.N, avx512Vnni(), false);
    INFO(p.str());
    CHECK(p.Dot4Lanes == 16);
    REQUIRE(p.Dot);
    CHECK(p.Dot->Rows * p.Dot->Vectors <= 24);
    REQUIRE(p.Int);
    OneNode d = qlinearConv(64, 64, 28, 3, 64);
    ir::KernelPlan q = passes::planKernel(*d.N, avx512Vnni(), false);
    INFO(q.str());
    REQUIRE(q.Taps);
    CHECK(q.Taps->Vectors >= 1);
  }
  // x86 without VNNI (AVX2, SSE2): the dot products on pmaddwd pairs, in
  // tiles of the vector's i32 lanes.
  for (const char *name : {"x86_64-v3", "x86_64"}) {
    OneNode c = qlinearConv(64, 64, 28, 3);
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    CHECK(p.Dot4Lanes == t.lanes(DType::I32));
    REQUIRE(p.Dot);
    CHECK(p.Dot->Rows * p.Dot->Vectors <= t.VectorRegisters * 3 / 4);
  }
  // AArch64 with dotprod (sdot on signed quads) and with i8mm (usdot, the
  // u8 x s8 form, as VNNI).
  for (auto [cpu, signedQuads] : {std::pair{"cortex-a76", true}, {"neoverse-n2", false}}) {
    OneNode c = qlinearConv(64, 64, 28, 3);
    TargetDesc t = describe("aarch64-linux", cpu);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(cpu << ": " << p.str());
    CHECK(p.Dot4Lanes == 4);
    REQUIRE(p.Dot);
    CHECK(p.DotSigned == signedQuads);
    CHECK(p.Dot->Rows * p.Dot->Vectors <= 24);
  }
  // AArch64 without dotprod (cortex-a72, the default): weights that never
  // hold -128 run sdot4_narrow on signed quads (16-bit pair sums), in a tile
  // that leaves registers for the products in flight.
  {
    OneNode c = qlinearConv(64, 64, 28, 3);
    TargetDesc t = describe("aarch64-linux");
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(p.str());
    CHECK(p.Dot4Lanes == 4);
    REQUIRE(p.Dot);
    CHECK(p.DotSigned);
    CHECK(p.DotNarrow);
    CHECK(p.Dot->Rows * p.Dot->Vectors + p.Dot->Vectors + 1 + 6 <= t.VectorRegisters);
    // A weight of -128 would overflow a pair sum: the int32 tiles.
    ir::Value *w = c.N->Inputs[3];
    std::vector<uint8_t> bytes = w->Const->denseBytes();
    bytes[5] = 0x80;
    w->Const = std::make_shared<Tensor>(DType::I8, w->Const->shape(), bytes);
    ir::KernelPlan q = passes::planKernel(*c.N, t, false);
    INFO(q.str());
    CHECK(q.Dot4Lanes == 0);
    REQUIRE(q.Int);
    // Two input channels waste half of each quad: the int32 tiles too,
    // their rows' weights for a tap read as one vector (smlal by element).
    OneNode two = qlinearConv(2, 16, 28, 3);
    ir::KernelPlan r = passes::planKernel(*two.N, t, false);
    INFO(r.str());
    CHECK(r.Dot4Lanes == 0);
    REQUIRE(r.Int);
    CHECK(r.LaneWeights);
    // Not depthwise (a row per group), nor on x86 (no multiply by element).
    OneNode dw = qlinearConv(16, 16, 28, 3, 16);
    CHECK_FALSE(passes::planKernel(*dw.N, t, false).LaneWeights);
    CHECK_FALSE(passes::planKernel(*two.N, describe("x86_64-v3"), false).LaneWeights);
  }
  // Helium (Cortex-M55: 8 vector registers, four i32 lanes): the int32
  // tiles' accumulators, a vector of inputs each and a spare fit the
  // registers (4 x 16 outputs took 16 accumulators and spilled).
  {
    TargetDesc t = describe("cortex-m55");
    for (int64_t cin : {1, 16}) {
      OneNode c = qlinearConv(cin, 16, 12, 3);
      ir::KernelPlan p = passes::planKernel(*c.N, t, false);
      INFO(p.str());
      REQUIRE(p.Int);
      int64_t vectors = p.Int->Vectors * p.Int->Lanes / t.lanes(DType::I32);
      CHECK(p.Int->Rows * vectors + vectors + 1 <= t.VectorRegisters);
    }
  }
  // Helium: a matrix product with constant int8 B sums along K on byte
  // vectors (vmladav.s8; B packed as [N, K] with its column sums); not
  // without Helium, and not for a transposed A.
  {
    auto product = [](std::map<std::string, ir::Attribute> attrs = {}) {
      Shape w{256, 24};
      return OneNode("MatMulInteger", "",
                     {{{DType::U8, {2, 256}}, nullptr}, {{DType::I8, w}, filled(DType::I8, w, 3)}},
                     {DType::I32, {2, 24}}, std::move(attrs));
    };
    OneNode m = product();
    ir::KernelPlan p = passes::planKernel(*m.N, describe("cortex-m55"), false);
    INFO(p.str());
    CHECK(p.ByteDot);
    CHECK_FALSE(p.Int);
    CHECK_FALSE(passes::planKernel(*m.N, describe("cortex-m4"), false).ByteDot);
    CHECK_FALSE(passes::planKernel(*m.N, avx512Vnni(), false).ByteDot);
  }
  // A matrix-vector product on signed quads (cortex-a72's pair sums,
  // cortex-a76's sdot): along K, every column in one tile that leaves
  // registers for A, B and the products in flight; more rows of A, or
  // VNNI, keep the column tiles.
  for (auto [cpu, temporaries] : {std::pair{"cortex-a72", 6}, {"cortex-a76", 0}}) {
    auto matVec = [](int64_t rows, int64_t n) {
      Shape w{256, n};
      return OneNode("MatMulInteger", "",
                     {{{DType::U8, {rows, 256}}, nullptr}, {{DType::I8, w}, filled(DType::I8, w, 3)}},
                     {DType::I32, {rows, n}}, {});
    };
    TargetDesc t = describe("aarch64-linux", cpu);
    OneNode ten = matVec(1, 10);
    ir::KernelPlan p = passes::planKernel(*ten.N, t, false);
    INFO(cpu << ": " << p.str());
    CHECK(p.DotSigned);
    CHECK(p.DotAlongK);
    REQUIRE(p.Dot);
    CHECK(p.Dot->Rows == 10);
    OneNode wide = matVec(1, 100);
    ir::KernelPlan q = passes::planKernel(*wide.N, t, false);
    INFO(q.str());
    REQUIRE(q.Dot);
    CHECK(q.DotAlongK);
    CHECK(q.Dot->Rows + 2 + temporaries <= t.VectorRegisters);
    CHECK(q.Dot->Rows * ((100 + q.Dot->Rows - 1) / q.Dot->Rows) < 100 + q.Dot->Rows);
    OneNode rows = matVec(8, 64);
    CHECK_FALSE(passes::planKernel(*rows.N, t, false).DotAlongK);
    CHECK_FALSE(passes::planKernel(*ten.N, avx512Vnni(), false).DotAlongK);
  }
  // AVX without AVX2 has no 256-bit pmaddwd: the int32 tiles.
  {
    OneNode c = qlinearConv(64, 64, 28, 3);
    ir::KernelPlan p = passes::planKernel(*c.N, describe("x86_64", "sandybridge"), false);
    INFO(p.str());
    CHECK(p.Dot4Lanes == 0);
    REQUIRE(p.Int);
    CHECK(p.Int->Lanes * p.Int->Vectors >= 16);
  }
  // Microcontrollers: a tile of scalars that fits the general registers
  // (accumulators, a weight per row, an input per column, 4 for the loop).
  for (const char *name : {"cortex-m4", "cortex-m0plus", "riscv32"}) {
    OneNode c = qlinearConv(8, 16, 8, 3);
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    REQUIRE(p.Int);
    const int64_t r = p.Int->Rows, cols = p.Int->Vectors * p.Int->Lanes;
    CHECK(r * cols + r + cols + 4 <= t.GeneralRegisters);
    CHECK(r * cols >= 1);
  }
  // Products in pairs (smlad) only where the target has the DSP extension
  // and a group has three input channels or more.
  {
    OneNode dense = qlinearConv(8, 16, 8, 3), thin = qlinearConv(2, 16, 8, 3),
            depthwise = qlinearConv(16, 16, 8, 3, 16), m0 = qlinearConv(8, 16, 8, 3);
    TargetDesc m4 = describe("cortex-m4");
    REQUIRE(m4.has(MacForm::ArmSmlad));
    ir::KernelPlan p = passes::planKernel(*dense.N, m4, false);
    INFO(p.str());
    CHECK(p.Pairs);
    REQUIRE(p.Int);
    // Accumulators, a weight pair per row, an input pair per column, one
    // to form a pair in, 4 for the loop.
    const int64_t r = p.Int->Rows, cols = p.Int->Vectors * p.Int->Lanes;
    CHECK(r * cols + r + cols + 1 + 4 <= m4.GeneralRegisters);
    CHECK_FALSE(passes::planKernel(*thin.N, m4, false).Pairs);
    CHECK_FALSE(passes::planKernel(*depthwise.N, m4, false).Pairs);
    CHECK_FALSE(passes::planKernel(*m0.N, describe("cortex-m0plus"), false).Pairs);
    CHECK_FALSE(passes::planKernel(*dense.N, describe("cortex-m55"), false).Pairs);
  }
  // A matrix product gets a scalar tile only without vectors.
  {
    auto scalar = [](DType t, double v) { return std::make_pair(ir::TensorType{t, {}}, filled(t, {}, v)); };
    auto qmatmul = [&] {
      return OneNode("QLinearMatMul", "",
                     {{{DType::U8, {1, 64}}, nullptr}, scalar(DType::F32, 0.02),
                      scalar(DType::U8, 128), {{DType::I8, {64, 32}}, filled(DType::I8, {64, 32}, 3)},
                      scalar(DType::F32, 0.01), scalar(DType::I8, 0), scalar(DType::F32, 0.05),
                      scalar(DType::U8, 128)},
                     {DType::U8, {1, 32}});
    };
    OneNode m4 = qmatmul(), host = qmatmul();
    TargetDesc t = describe("cortex-m4");
    ir::KernelPlan p = passes::planKernel(*m4.N, t, false);
    INFO(p.str());
    REQUIRE(p.Int);
    CHECK(p.Int->Rows == 1); // one row of A
    const int64_t cols = p.Int->Vectors * p.Int->Lanes;
    CHECK(cols + 1 + cols + 4 <= t.GeneralRegisters);
    CHECK(p.Pairs); // int8 B of zero point 0 on smlad
    CHECK_FALSE(passes::planKernel(*host.N, describe("x86_64-v3"), false).Int);
  }
  // Cortex-M0+: no floating point, so fixed-point requantization; the
  // pass adds one multiplier and shift per channel.
  {
    OneNode c = qlinearConv(8, 16, 8, 3);
    TargetDesc m0 = describe("cortex-m0plus");
    REQUIRE_FALSE(m0.FloatUnit);
    CHECK(passes::planKernels(c.G, m0, false));
    CHECK(c.N->Plan.FixedRequant);
    CHECK(passes::fixedPointRequant(c.G));
    // After the 9 inputs, the absent bias included (in its slot the
    // multipliers would be read as the bias).
    REQUIRE(c.N->Plan.FixedRequantInput == 9);
    CHECK_FALSE(c.N->hasInput(8));
    const Tensor &mult = *c.N->Inputs[9]->Const, &shift = *c.N->Inputs[10]->Const;
    REQUIRE(mult.numel() == 16);
    // 0.02 * 0.01 / 0.05 = 0.004 = M0 * 2^-S with M0 in [2^30, 2^31).
    double m = (double)mult.intAt(0) * std::ldexp(1.0, -(int)shift.intAt(0));
    CHECK(mult.intAt(0) >= (int64_t(1) << 30));
    CHECK(std::fabs(m - 0.02f * 0.01f / 0.05f) < 1e-9);
    CHECK_FALSE(passes::fixedPointRequant(c.G)); // once
  }
}

TEST_CASE("pack-weights adds the operands the plans read, once", "[plan]") {
  OneNode c = floatConv(64, 64, 28, 3);
  TargetDesc t = describe("x86_64-v3");
  REQUIRE(passes::planKernels(c.G, t, false));
  REQUIRE(c.N->Plan.Register);
  CHECK(c.N->Plan.PackedInput == -1);
  CHECK(passes::packWeights(c.G));
  REQUIRE(c.G.Nodes.size() == 2);
  const ir::Node &pack = *c.G.Nodes[0];
  CHECK(pack.Domain == "mlcc");
  CHECK(((pack.OpType == "PackPanels" && pack.attrInt("panel", 0) == c.N->Plan.Register->Panel) ||
         pack.OpType == "WinogradWeights"));
  REQUIRE(c.N->Plan.PackedInput == 3);
  CHECK(c.N->Inputs[3] == pack.Outputs[0]);
  CHECK_FALSE(passes::packWeights(c.G));
  CHECK_FALSE(passes::planKernels(c.G, t, false)); // planned nodes keep their plan
}

TEST_CASE("pack-weights packs the weights of products in pairs in quads", "[plan]") {
  OneNode c = qlinearConv(6, 16, 8, 3);
  TargetDesc m4 = describe("cortex-m4");
  CHECK(passes::planKernels(c.G, m4, false));
  REQUIRE(c.N->Plan.Pairs);
  CHECK(passes::packWeights(c.G));
  REQUIRE(c.G.Nodes.size() == 2);
  const ir::Node &pack = *c.G.Nodes[0];
  CHECK(pack.Domain == "mlcc");
  CHECK(pack.OpType == "PackQuads");
  CHECK(pack.attrInt("pairs", 0) == 1);
  // After the 9 inputs (the absent bias's slot kept).
  REQUIRE(c.N->Plan.PairsInput == 9);
  CHECK(c.N->Inputs[9] == pack.Outputs[0]);
  CHECK_FALSE(passes::packWeights(c.G));
}

TEST_CASE("pack-weights gives byte products B as [N, K] with its column sums", "[plan]") {
  // MatMulInteger on Helium (ByteDot): B [K, N] transposed, and the int32
  // sums of each column, folded by infer-and-fold into constants.
  Shape w{32, 3};
  std::vector<int64_t> values(32 * 3);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = (int64_t)(i % 7) - 3;
  OneNode m("MatMulInteger", "",
            {{{DType::U8, {1, 32}}, nullptr},
             {{DType::I8, w}, std::make_shared<Tensor>(Tensor::fromInts(DType::I8, w, values))}},
            {DType::I32, {1, 3}});
  REQUIRE(passes::planKernels(m.G, describe("cortex-m55"), false));
  REQUIRE(m.N->Plan.ByteDot);
  CHECK(passes::packWeights(m.G));
  passes::inferAndFold(m.G, {});
  REQUIRE(m.N->Plan.ByteDotInput >= 0);
  const ir::Value *bt = m.N->Inputs[(size_t)m.N->Plan.ByteDotInput];
  const ir::Value *sums = m.N->Inputs[(size_t)m.N->Plan.ByteDotInput + 1];
  REQUIRE(bt->Const);
  REQUIRE(sums->Const);
  CHECK(bt->Type.Dims == Shape{3, 32});
  CHECK(sums->Type.Type == DType::I32);
  for (int64_t j = 0; j < 3; ++j) {
    int64_t sum = 0;
    for (int64_t k = 0; k < 32; ++k) {
      CHECK(bt->Const->intAt(j * 32 + k) == values[(size_t)(k * 3 + j)]);
      sum += values[(size_t)(k * 3 + j)];
    }
    CHECK(sums->Const->intAt(j) == sum);
  }
}

TEST_CASE("plan-kernels: the schedule choices once in lowerings, by target", "[plan]") {
  // The loop of a register tile that runs in parallel: the panels when at
  // least 16 or fewer than 8 row units, on x86 (Winograd's products) and
  // on Cortex-M4 (packed panels) alike, in every candidate too.
  for (const char *name : {"x86_64", "cortex-m4"}) {
    OneNode c = floatConv(128, 128, 28, 3);
    TargetDesc t = describe(name);
    ir::KernelPlan p = passes::planKernel(*c.N, t, false);
    INFO(name << ": " << p.str());
    REQUIRE(p.Register);
    CHECK(p.Register->ParallelPanels == 16);
    CHECK(p.Register->ParallelRowUnits == 8);
    for (const ir::KernelPlan &q : passes::planCandidates(*c.N, t, false))
      if (q.Register) {
        CHECK(q.Register->ParallelPanels == 16);
        CHECK(q.Register->ParallelRowUnits == 8);
      }
  }
  // A 3x3 QLinearConv: its kernel rows of 3 taps written out on every
  // target; where it requantizes in fixed point (Cortex-M0+: no float
  // unit; --quantize-io anywhere, dot-product plans included) without
  // 64-bit shifts where its values are provably small; in f32 on x86.
  {
    OneNode c = qlinearConv(8, 16, 8, 3);
    ir::KernelPlan host = passes::planKernel(*c.N, describe("x86_64"), false);
    ir::KernelPlan m0 = passes::planKernel(*c.N, describe("cortex-m0plus"), false);
    ir::KernelPlan io = passes::planKernel(*c.N, avx512Vnni(), true);
    INFO(host.str() << " / " << m0.str() << " / " << io.str());
    CHECK(host.UnrolledTaps == 3);
    CHECK(m0.UnrolledTaps == 3);
    CHECK(io.UnrolledTaps == 3);
    CHECK_FALSE(host.FixedRequant);
    CHECK_FALSE(host.SmallFixedRequant);
    CHECK(m0.FixedRequant);
    CHECK(m0.SmallFixedRequant);
    CHECK(io.Dot4Lanes == 16);
    CHECK(io.FixedRequant);
    CHECK(io.SmallFixedRequant);
  }
  // A QLinearMatMul keeps the full fixed-point form (its lowering has no
  // other) on Cortex-M0+ too.
  {
    Shape w{8, 4};
    auto scalar = [](DType t, double v) {
      return std::make_pair(ir::TensorType{t, {}}, filled(t, {}, v));
    };
    OneNode m("QLinearMatMul", "",
              {{{DType::U8, {2, 8}}, nullptr}, scalar(DType::F32, 0.02), scalar(DType::U8, 128),
               {{DType::I8, w}, filled(DType::I8, w, 3)}, scalar(DType::F32, 0.01),
               scalar(DType::I8, 0), scalar(DType::F32, 0.05), scalar(DType::U8, 128)},
              {DType::U8, {2, 4}});
    ir::KernelPlan host = passes::planKernel(*m.N, describe("x86_64"), false);
    ir::KernelPlan m0 = passes::planKernel(*m.N, describe("cortex-m0plus"), false);
    INFO(host.str() << " / " << m0.str());
    CHECK_FALSE(host.FixedRequant);
    CHECK_FALSE(host.SmallFixedRequant);
    CHECK(m0.FixedRequant);
    CHECK_FALSE(m0.SmallFixedRequant);
  }
}
