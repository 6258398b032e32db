//===- DefaultPlans.cpp - The plan plan-kernels gives each kernel ---------===//
//
// passes::planKernel, the plan of one node that plan-kernels gives it
// unless schedule search chose another (TuningCandidates.cpp): how its
// kernel runs on the target (its ir::KernelPlan), from the target
// description and the shapes, asking the one cost model
// (compiler/schedule/CostModel.h) for every tile and block shape:
//
//   f32 Conv, Gemm, MatMul with constant weights
//       a register tile over the weights packed in panels of its width
//       (rows: output pixels, M or all rows of A; columns: output channels
//       or N; reduction: input channels x window, or K), cache-blocked when
//       a panel outgrows the L2 cache. A pointwise convolution whose weights
//       fit in half the L2 cache (or any, on a target without one) and a
//       convolution with a short reduction (fewer than 4 vectors' lanes: a
//       first layer's 3 channels x 3x3) take the pixels as the tile's
//       columns instead, read in place (nothing packed, vector stores),
//       unless pixels as rows waste less at the edges net of their
//       transposed stores. A stride-1 3x3 convolution with enough channels
//       runs as Winograd's F(2x2, 3x3) in blocks of output tiles.
//       Depthwise-like convolutions (fewer than 4 output channels per group)
//       keep their own loop nest.
//   f32 depthwise Conv
//       the largest zero-bordered plane it copies to the stack (8 KiB, or
//       the target's kernel stack if less) and the rounding of its
//       flattened output grid (a multiple of the target's f32 lanes, at
//       least 16, so narrow targets run several vectors per step).
//   QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger, QGemm
//       on targets with int8 dot products of byte quads (x86 VNNI), dense
//       ones with int8 constant weights of zero point 0 on them, with their
//       register tile; depthwise ones of uint8 data with four taps of a
//       kernel row per quad (16-lane vectors); the int32 register tile of
//       the convolutions' other paths (4 channels x 16 outputs, or the
//       target's i32 lanes if more; on a target without vectors the
//       cheapest tile of scalars that fits its general registers, its
//       products in pairs on a dual 16-bit multiply-accumulate where the
//       target has one: Cortex-M smlad); without floating point,
//       fixed-point requantization (a QLinearConv's and a QGemm's without
//       64-bit shifts where their values are provably small).
//   mlcc.Attention (fuse-attention)
//       its blocks of query rows and keys and the register tiles of its
//       two products (KernelPlan::AttentionBlocks).
//   GPU
//       one output per thread for f32 convolutions and matrix products.
//
// And, the same on every target, the loop that runs in parallel in a
// register tile and the kernel rows whose taps an integer convolution
// writes out.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/DefaultPlans.h"
#include "compiler/ops/Contraction.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/ops/Signal.h"
#include "compiler/passes/Passes.h"
#include "compiler/schedule/CostModel.h"

#include <algorithm>
#include <functional>

namespace mlcc::passes {

using schedule::MacKind;
using schedule::TileChoice;
using schedule::TileProblem;

namespace {

/// The largest plane a depthwise convolution copies to the stack: beyond
/// it, clipping the windows at the border costs less than the copy.
constexpr int64_t kMaxPlaneBytes = 8 * 1024;
/// Outputs per register row of the integer convolutions' tiles, and the
/// fewest outputs per tile row (a 16-lane vector, or several narrower ones
/// that LLVM keeps in registers).
constexpr int64_t kIntTileRows = 4, kIntTileOutputs = 16;
/// The rounding of a depthwise convolution's flattened grid: at least 16
/// (several vectors per step on narrow targets).
constexpr int64_t kMinGridRound = 16;
/// The dot-product matrix products' tile: 4 rows x 4 vectors (halved across
/// by the lowering until the columns fill it).
constexpr int64_t kDotMatMulRows = 4, kDotMatMulVectors = 4;
/// The fewest i32 lanes for a depthwise convolution's taps on dot products:
/// any vector (fewer outputs per vector than the int32 tiles' 16 cost less
/// than their 32-bit multiplies: mobilenet_v2 QDQ on AVX2 7.1 -> 6.0 ms,
/// on SSE2 14.1 -> 13.2 ms; DS-CNN on Neoverse N2 (usdot) 1.83 -> 0.94 M
/// instructions).
constexpr int64_t kMinTapLanes = 4;
/// The parallel groups of row tiles that a dense dot-product convolution's
/// tail tile runs in (each group packs its own panel).
constexpr int64_t kTailGroups = 8;
/// A windowed integer convolution's kernel rows of at most this many taps
/// are written out tap by tap (KernelPlan::UnrolledTaps), on every target.
constexpr int64_t kUnrolledTaps = 3;
/// Fused attention (mlcc.Attention): query rows and keys per block, at
/// most (KernelPlan::AttentionBlocks).
constexpr int64_t kAttentionQueryBlock = 64, kAttentionKeyBlock = 128;
/// A register tile's panels run in parallel when there are at least this
/// many of them, or fewer row units (row tiles or blocks) than this to
/// share (KernelPlan::Tile::ParallelPanels, ParallelRowUnits).
constexpr int64_t kParallelPanels = 16, kParallelRowUnits = 8;
// A plan that plan-kernels did not make (a tile built by a lowering, a
// test's) runs as plan-kernels' would.
static_assert(ir::KernelPlan{}.UnrolledTaps == kUnrolledTaps &&
              ir::KernelPlan::Tile{}.ParallelPanels == kParallelPanels &&
              ir::KernelPlan::Tile{}.ParallelRowUnits == kParallelRowUnits);

/// Whether `n` is a standard-domain node of f32 arithmetic (f32, f16 or
/// bf16: isF32Arithmetic) with constant weights of its input's type (input
/// 1) and a non-empty output: what packing and Winograd both start from.
/// The packed weights keep the type (a float16 model's stay half the
/// flash); the kernels convert them on load.
bool constantF32Weights(const ir::Node &n) {
  return n.Domain == "" && n.hasInput(1) && n.Inputs[1]->Const &&
         isF32Arithmetic(n.inDType(0)) && n.inDType(1) == n.inDType(0) && n.Outputs[0] &&
         n.Outputs[0]->Type.numel() > 0;
}

/// Whether the target is AArch64 with NEON without a dot-product
/// instruction (Cortex-A53, A72): its dot products of signed quads run as
/// 16-bit products summed in pairs (sdot4_narrow), where the weights avoid
/// -128 (narrowWeights).
bool longMacDots(const TargetDesc &t) {
  return t.has(MacForm::ArmLongMac) && !t.has(MacForm::ArmDot) && !t.has(MacForm::ArmMatMul) &&
         t.lanes(DType::I32) == 4;
}

/// Whether a convolution of weights `w` is pointwise: every kernel extent
/// and stride 1, no padding.
bool pointwiseConv(const ir::Node &n, const Shape &w) {
  for (size_t d = 2; d < w.size(); ++d)
    if (w[d] != 1)
      return false;
  for (int64_t v : n.attrInts("strides", {}))
    if (v != 1)
      return false;
  for (int64_t v : n.attrInts("pads", {}))
    if (v != 0)
      return false;
  return true;
}

} // namespace

namespace planning {

// Declared, and described, in DefaultPlans.h.
std::optional<Contraction> contractionOf(const ir::Node &n, const TargetDesc &t) {
  if (!constantF32Weights(n))
    return std::nullopt;
  const int64_t lanes = t.lanes(DType::F32);
  if (n.OpType == "Conv") {
    // A 1-D convolution (speech: STFTs as strided convolutions, frames of
    // features) as a 2-D one of one row: [N, C, W] read as [N, C, 1, W].
    Shape w = n.inShape(1), y = n.Outputs[0]->Type.Dims, x = n.inShape(0);
    if (w.size() == 3 && y.size() == 3 && x.size() == 3)
      for (Shape *s : {&w, &y, &x})
        s->insert(s->begin() + 2, 1);
    if (w.size() != 4 || y.size() != 4)
      return std::nullopt;
    int64_t groups = n.attrInt("group", 1), mg = w[0] / groups;
    if (mg < 4)
      return std::nullopt;
    // Pointwise: pixels as the tile's columns, read straight from the input
    // (when there are enough pixels for a vector), unless the weights are
    // too large to be read again for every panel of pixels from the L2
    // cache: with pixels as rows the packed weights stream once.
    bool pointwise = w[2] == 1 && w[3] == 1 && x == Shape{y[0], x[1], y[2], y[3]};
    int64_t reduce = w[1] * w[2] * w[3];
    bool weightsFit = t.L2Bytes == 0 ||
                      numElements(w) * (int64_t)dtypeSize(n.inDType(1)) <= t.L2Bytes / 2;
    if (pointwise && y[2] * y[3] >= 16 && weightsFit)
      return Contraction{mg, y[2] * y[3], reduce, true};
    // A short reduction: with pixels as rows, every output is stored as a
    // scalar of a transposed tile, which costs about as much as its
    // K / lanes multiply-adds when K is below a few vectors' lanes; with
    // pixels as columns the stores are vectors (the input is read along
    // the row, strided for a strided convolution).
    const std::vector<int64_t> strides = n.attrInts("strides", {});
    if (!pointwise && reduce < 4 * lanes && (strides.empty() || strides.back() <= 4))
      return Contraction{mg, y[3], reduce, true};
    return Contraction{y[2] * y[3], mg, reduce};
  }
  const Shape &w = n.inShape(1), &y = n.Outputs[0]->Type.Dims;
  if (n.OpType == "Gemm")
    return Contraction{y[0], y[1], n.inShape(0)[n.attrInt("transA", 0) ? 0 : 1]};
  if (n.OpType == "MatMul") {
    const Shape &a = n.inShape(0);
    if (w.size() != 2 || a.size() < 2)
      return std::nullopt;
    return Contraction{numElements(a) / a.back(), w[1], w[0]};
  }
  return std::nullopt;
}

// Declared, and described, in DefaultPlans.h.
MacKind floatMac(const ir::Node &n, const TargetDesc &t) {
  return t.HalfArithmetic && t.lanes(DType::F16) > 1 && n.inDType(0) == DType::F16 &&
                 n.Outputs[0] && n.Outputs[0]->Type.Type == DType::F16
             ? MacKind::F16Fma
             : MacKind::F32Fma;
}

// Declared, and described, in DefaultPlans.h.
std::optional<schedule::WinogradBlocks> winogradBlocks(const ir::Node &n, const TargetDesc &t) {
  if (n.OpType != "Conv" || !constantF32Weights(n))
    return std::nullopt;
  const Shape &w = n.inShape(1), &y = n.Outputs[0]->Type.Dims;
  if (w.size() == 4 && y.size() == 4 && w[2] == 3 && w[3] == 3 && n.attrInt("group", 1) == 1 &&
      n.attrInts("strides", {1, 1}) == std::vector<int64_t>{1, 1} &&
      n.attrInts("dilations", {1, 1}) == std::vector<int64_t>{1, 1})
    return schedule::chooseWinogradBlocks(t, w[1], w[0], y[2], y[3]);
  return std::nullopt;
}

// Declared, and described, in DefaultPlans.h.
TileProblem winogradProducts(const ir::Node &n, const schedule::WinogradBlocks &wb) {
  const Shape &w = n.inShape(1);
  return TileProblem{MacKind::F32Fma, w[0], wb.Rows * wb.Pitch, w[1], true};
}

// Declared, and described, in DefaultPlans.h.
ir::KernelPlan::Winograd winogradPlan(const schedule::WinogradBlocks &wb, const TargetDesc &t) {
  return ir::KernelPlan::Winograd{wb.Tile, wb.Rows, wb.Pitch, t.CacheLineBytes / 4};
}

// Declared, and described, in DefaultPlans.h.
ir::KernelPlan::Tile registerTile(const TileChoice &c) {
  ir::KernelPlan::Tile tile = c.plan();
  tile.ParallelPanels = kParallelPanels;
  tile.ParallelRowUnits = kParallelRowUnits;
  return tile;
}

// Declared, and described, in DefaultPlans.h.
bool depthwiseF32(const ir::Node &n) {
  if (n.Domain != "" || n.OpType != "Conv" || !n.hasInput(1) || !isF32Arithmetic(n.inDType(0)))
    return false;
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  return x.size() == 4 && w.size() == 4 && x[1] == n.attrInt("group", 1) && w[2] * w[3] <= 49;
}

// Declared, and described, in DefaultPlans.h.
MacKind dotMac(const TargetDesc &t) {
  if (!t.has(MacForm::X86Vnni) && t.has(MacForm::X86Madd16))
    return MacKind::Int8Madd;
  return longMacDots(t) ? MacKind::Int8PairSums : MacKind::Int8Dot;
}

// Declared, and described, in DefaultPlans.h.
bool windowPairs(const ir::Node &n, const ops::IntegerOperands &o, const ir::KernelPlan &p) {
  return p.Pairs && !p.StagedPairs && p.Depthwise && o.Conv && n.attrInt("group", 1) == 1 &&
         !pointwiseConv(n, n.inShape(o.W));
}

// Declared, and described, in DefaultPlans.h.
bool stagedPairs(const ir::Node &n, const ops::IntegerOperands &o,
                 const ir::KernelPlan::IntTile &tile, const TargetDesc &t) {
  if (!o.Conv)
    return false;
  const Shape &w = n.inShape(o.W);
  if (!pointwiseConv(n, w))
    return false;
  int64_t quads = (w[1] + 3) / 4;
  return quads * 2 * tile.Vectors * tile.Lanes * 4 <= t.StackBytes / 4;
}

// Declared, and described, in DefaultPlans.h.
std::optional<TileProblem> scalarIntProblem(const ir::Node &n, const ops::IntegerOperands &o,
                                            MacKind mac) {
  if (!n.Outputs[0])
    return std::nullopt;
  const Shape &y = n.Outputs[0]->Type.Dims;
  if (!o.Conv) {
    if (y.size() != 2 || !n.hasInput(o.W) || n.inShape(o.W).size() != 2)
      return std::nullopt;
    const Shape &w = n.inShape(o.W);
    return TileProblem{mac, y[0], y[1], o.TransposedW ? w[1] : w[0]};
  }
  const Shape &w = n.inShape(o.W);
  if (w.size() < 3)
    return std::nullopt;
  int64_t groups = n.attrInt("group", 1), outputs = 1;
  for (size_t d = 2; d < y.size(); ++d)
    outputs *= y[d];
  if (!pointwiseConv(n, w) && y.size() > 2)
    outputs = y.back();
  return TileProblem{mac, std::max<int64_t>(w[0] / groups, 1), std::max<int64_t>(outputs, 1),
                     numElements(w) / std::max<int64_t>(w[0], 1)};
}

} // namespace planning

using namespace planning;

namespace {

/// The f32 plan of `n`: Winograd, pixel columns or packed panels.
std::optional<ir::KernelPlan> floatPlan(const ir::Node &n, const TargetDesc &t) {
  ir::KernelPlan p;
  if (auto wb = winogradBlocks(n, t)) {
    p.Register = registerTile(schedule::chooseTile(t, winogradProducts(n, *wb)));
    p.Wino = winogradPlan(*wb, t);
    return p;
  }
  std::optional<Contraction> c = contractionOf(n, t);
  if (!c)
    return std::nullopt;
  const MacKind mac = floatMac(n, t);
  if (c->PixelColumns) {
    TileChoice tile = schedule::chooseTile(t, TileProblem{mac, c->Rows, c->Cols, 0, true});
    bool taken = true;
    // Pixels as rows instead (packed weights) when the reduction is not
    // short and their tile wastes less at the edges (few pixels: a 14x14
    // map fills 3 panels of 64 and a quarter), net of the transposed
    // stores: one per output, against its reduce / lanes multiply-adds.
    if (c->Reduce >= 4 * tile.Lanes) {
      TileChoice rowsTile =
          schedule::chooseTile(t, TileProblem{mac, c->Cols, c->Rows, c->Reduce});
      double storeCost = 1.0 + (double)rowsTile.Lanes / (double)c->Reduce;
      taken = -rowsTile.Cost / storeCost <= -tile.Cost;
    }
    if (taken && tile.Vectors * tile.Lanes <= c->Cols) {
      p.Register = registerTile(tile);
      p.PixelColumns = true;
      return p;
    }
    c = Contraction{c->Cols, c->Rows, c->Reduce};
  }
  p.Register = registerTile(
      schedule::chooseTile(t, TileProblem{mac, c->Rows, c->Cols, c->Reduce}));
  if (n.OpType != "Conv" && isNarrowFloat(n.inDType(0)))
    p.StagedABytes = t.StackBytes / 4; // a Conv stages its input image instead
  return p;
}

/// Whether a target runs int8 dot products of byte quads, and how: x86
/// VNNI and AArch64 i8mm (usdot) as dot4, AArch64 dotprod as sdot4 on
/// quads in the signed domain (without dotprod: sdot4_narrow, see
/// longMacDots), x86 pmaddwd as pairs.
bool hasDotProducts(const TargetDesc &t) {
  return t.has(MacForm::X86Vnni) || t.has(MacForm::X86Madd16) || t.has(MacForm::ArmDot) ||
         t.has(MacForm::ArmMatMul) || longMacDots(t);
}

/// Whether `n`'s weights are constant int8 that never hold -128 (mlcc's
/// quantizer writes [-127, 127]): the plan's DotNarrow.
bool narrowWeights(const ir::Node &n, const ops::IntegerOperands &o) {
  if (!n.hasInput(o.W) || !n.Inputs[o.W]->Const || n.inDType(o.W) != DType::I8)
    return false;
  const Tensor &w = *n.Inputs[o.W]->Const;
  for (int64_t i = 0, e = w.numel(); i < e; ++i)
    if (w.intAt(i) == -128)
      return false;
  return true;
}

/// The dot-product plan of an integer node on a target with dot products
/// (hasDotProducts), if any.
std::optional<ir::KernelPlan> dotPlan(const ir::Node &n, const ops::IntegerOperands &o,
                                      const TargetDesc &t) {
  const int64_t lanes = t.lanes(DType::I32);
  const bool madd = !t.has(MacForm::X86Vnni) && t.has(MacForm::X86Madd16);
  // Arm's dot-product extension without i8mm has no unsigned x signed
  // form: the quads of the input (or A) are offset to signed bytes.
  const bool longMac = longMacDots(t);
  const bool signedQuads = !t.has(MacForm::ArmMatMul) && (t.has(MacForm::ArmDot) || longMac);
  const bool narrow = signedQuads && narrowWeights(n, o);
  if (longMac && (!narrow || (o.Conv && (n.attrInt("group", 1) > 1 ||
                                         !schedule::pairSumsOverWindow(n.inShape(o.W)[1])))))
    return std::nullopt;
  const MacKind mac = dotMac(t);
  ir::KernelPlan p;
  const bool constInt8W = n.hasInput(o.W) && n.Inputs[o.W]->Const && n.inDType(o.W) == DType::I8;
  if (!o.Conv) {
    if (n.OpType == "QGemm" && n.attrInt("transA", 0))
      return std::nullopt;
    if (!constInt8W || n.inShape(o.W).size() != 2 || !ops::zeroOrAbsent(n, o.WZeroPoint))
      return std::nullopt;
    p.Dot4Lanes = lanes;
    p.Dot = ir::KernelPlan::IntTile{kDotMatMulRows, kDotMatMulVectors, lanes, 1};
    p.DotSigned = signedQuads;
    p.DotNarrow = narrow;
    // One row of A on signed quads: along K (KernelPlan::DotAlongK), the
    // columns in as few tiles as the registers allow (an accumulator per
    // column besides A's and B's vectors and a pair sum's temporaries).
    const Shape &a = n.inShape(o.X);
    if (signedQuads && !a.empty() && numElements(a) == a.back()) {
      const int64_t N = o.TransposedW ? n.inShape(o.W)[0] : n.inShape(o.W)[1];
      const int64_t maxCols =
          std::max<int64_t>(1, t.VectorRegisters - 2 - (narrow ? schedule::kPairSumTemporaries : 0));
      const int64_t tiles = (N + maxCols - 1) / maxCols;
      p.DotAlongK = true;
      p.Dot = ir::KernelPlan::IntTile{(N + tiles - 1) / tiles, 1, lanes, 1};
    }
    if (madd) // no wider than the registers hold with each vector's and row's pairs
      p.Dot->Vectors = std::clamp<int64_t>(
          (t.VectorRegisters - 2 * kDotMatMulRows - 2) / (kDotMatMulRows + 2), 1,
          kDotMatMulVectors);
    return p;
  }
  const int64_t group = n.attrInt("group", 1);
  if (group > 1) {
    // Depthwise: uint8 data, int8 weights of zero point 0, vectors of at
    // least kMinTapLanes.
    if (lanes < kMinTapLanes || !n.hasInput(o.W) ||
        n.inDType(o.W) != DType::I8 ||
        n.inDType(o.X) != DType::U8 || !ops::zeroOrAbsent(n, o.WZeroPoint))
      return std::nullopt;
    ir::KernelPlan::IntTile taps{1, 0, lanes, 1};
    if (auto geo = ops::tapQuadsGeometry(ops::convShape(n, o.X, o.W), lanes))
      taps.Vectors = schedule::chooseTile(t, TileProblem{mac, geo->Rows, geo->Cols, geo->Steps,
                                                         false, geo->MaxVectors})
                         .Vectors;
    p.Taps = taps;
    p.DotSigned = signedQuads;
    p.DotNarrow = narrow;
    return p;
  }
  if (!constInt8W || n.inShape(o.W).size() != 4 || n.numInputs() > o.Appended ||
      !ops::zeroOrAbsent(n, o.WZeroPoint))
    return std::nullopt;
  p.Dot4Lanes = lanes;
  if (auto geo = ops::dotConvGeometry(ops::convShape(n, o.X, o.W), lanes, t.StackBytes)) {
    TileChoice tile = schedule::chooseTile(
        t, TileProblem{mac, geo->Rows, geo->Cols, geo->Steps, false, geo->MaxVectors});
    p.Dot = ir::KernelPlan::IntTile{tile.Rows, tile.Vectors, lanes, kTailGroups};
    p.DotPairs = madd;
    p.DotSigned = signedQuads;
    p.DotNarrow = narrow;
  } else if (signedQuads) {
    return std::nullopt;
  }
  return p;
}

/// Whether a windowed integer convolution's Int tile reads its rows'
/// weights for a tap as one vector, a lane per row (KernelPlan::
/// LaneWeights): on targets with Arm's widening multiply-accumulate (by
/// element), dense (one group), constant int8 weights of zero point 0, a
/// kernel of more than one tap, and a tile of two rows or more.
bool laneWeights(const ir::Node &n, const ops::IntegerOperands &o, const TargetDesc &t,
                 const ir::KernelPlan &p) {
  if (!o.Conv || !t.has(MacForm::ArmLongMac) || !p.Int || p.Int->Rows < 2 ||
      p.Int->Lanes < 4 || p.Pairs || !n.hasInput(o.W) || !n.Inputs[o.W]->Const ||
      n.inDType(o.W) != DType::I8 || !ops::zeroOrAbsent(n, o.WZeroPoint) ||
      n.attrInt("group", 1) != 1)
    return false;
  const Shape &w = n.inShape(o.W);
  return w.size() == 4 && w[2] * w[3] > 1;
}

/// Whether the int8 products of `n` run two at a time on the target's dual
/// 16-bit multiply-accumulate (Arm smlad; a target without vectors):
/// constant int8 weights of zero point 0, which pack-weights stores in
/// quads along the reduction (one byte each), and (convolutions) at least
/// three input channels per group (a quad's padding wastes less than the
/// pairs save).
bool pairedProducts(const ir::Node &n, const ops::IntegerOperands &o, const TargetDesc &t) {
  if (t.VectorBytes > 0 || !t.has(MacForm::ArmSmlad) || !n.hasInput(o.W) || !n.Inputs[o.W]->Const ||
      n.inDType(o.W) != DType::I8 || !ops::zeroOrAbsent(n, o.WZeroPoint))
    return false;
  const Shape &w = n.inShape(o.W);
  return o.Conv ? w.size() >= 3 && w[1] >= 3 : w.size() == 2;
}

/// Whether the int8 products of `n` can run as sums of signed bytes on the
/// target's multiply-accumulate across lanes (Helium vmladav.s8; the plan's
/// ByteDot): constant int8 weights of zero point 0, an 8-bit input of one
/// zero point (input 2 of every integer op).
bool byteOperands(const ir::Node &n, const ops::IntegerOperands &o, const TargetDesc &t) {
  if (t.VectorBytes == 0 || !t.has(MacForm::HeliumMac) || !n.hasInput(o.W) ||
      !n.Inputs[o.W]->Const || n.inDType(o.W) != DType::I8 || !ops::zeroOrAbsent(n, o.WZeroPoint))
    return false;
  DType x = n.inDType(o.X);
  return (x == DType::U8 || x == DType::I8) && (!n.hasInput(2) || n.Inputs[2]->Type.numel() == 1);
}

/// Whether a matrix product sums along K on vectors of signed bytes (the
/// plan's ByteDot, byteOperands): A a plain matrix not transposed (its rows
/// contiguous along K), B a matrix, and at least a vector's worth of K.
bool byteDot(const ir::Node &n, const ops::IntegerOperands &o, const TargetDesc &t) {
  return !o.Conv && byteOperands(n, o, t) && n.attrInt("transA", 0) == 0 &&
         n.inShape(o.X).size() == 2 && n.inShape(o.W).size() == 2 &&
         n.inShape(o.X)[1] >= t.VectorBytes;
}

/// Whether a matrix product in pairs reads A's quads as words (the plan's
/// PairWords): A not transposed, contiguous along K, of no zero point, and
/// K a multiple of four (no quad runs past a row).
bool pairWords(const ir::Node &n, const ops::IntegerOperands &o) {
  if (o.Conv || n.attrInt("transA", 0) != 0 || !ops::zeroOrAbsent(n, 2) ||
      n.inShape(o.X).size() != 2)
    return false;
  return n.inShape(o.X)[1] % 4 == 0;
}

/// The fewest vectors of channels for which a pointwise convolution's
/// byte products (one sum per output, its channels copied channels-last
/// first) beat the int32 tiles: on the Cortex-M55, MobileNetV1 0.25's int8
/// took 7.21 M instructions with 1 (from 6.91 M without), 6.75 M with 2,
/// 5.89 M with 4, 5.80 M with 8; DS-CNN-S's 64-channel layers 2.67 M ->
/// 2.30 M with 4.
constexpr int64_t kMinByteDotVectors = 4;

/// Whether a pointwise convolution sums along its channels on vectors of
/// signed bytes (the plan's ByteDot for convolutions, byteOperands): one
/// group, kMinByteDotVectors vectors of channels or more, on a target that
/// stages planes on the stack (the channels-last copy of a band of pixels
/// lives there).
bool byteDotPointwise(const ir::Node &n, const ops::IntegerOperands &o, const TargetDesc &t,
                      const ir::KernelPlan &p) {
  if (!o.Conv || !p.Depthwise || n.attrInt("group", 1) != 1 || !byteOperands(n, o, t))
    return false;
  const Shape &w = n.inShape(o.W);
  return w.size() == 4 && pointwiseConv(n, w) && w[1] >= kMinByteDotVectors * t.VectorBytes &&
         w[1] <= p.Depthwise->MaxElements;
}

/// The int32 register tile of an integer convolution's pointwise and
/// windowed paths: on a vector target 4 output channels x 16 outputs (or
/// the i32 lanes if more: one AVX-512 vector, two AVX2 or four NEON ones),
/// fewer outputs where those accumulators do not fit the vector registers
/// (Helium, SSE);
/// without vectors, the cheapest tile of scalars that fits the general
/// registers (a microcontroller: 16 x 4 accumulators would live on the
/// stack). An integer matrix product gets one only without vectors.
std::optional<ir::KernelPlan::IntTile> intTile(const ir::Node &n, const ops::IntegerOperands &o,
                                               const TargetDesc &t, bool paired) {
  const bool gpu = t.gpu();
  const bool vectors = t.VectorBytes > 0;
  const MacKind mac = paired ? MacKind::IntPair : MacKind::IntScalar;
  // 4-bit weights: an even count of output channels a tile (TileProblem).
  const bool fourBit = n.hasInput(o.W) && n.Inputs[o.W]->FourBitAxis >= 0;
  // ... whose loads cost about twice a byte's (a shared load, a shift and
  // a mask or two: ldrsb + and, or ldrb + lsl + asr), a third more a quad
  // of pairs (half a load, a shift, a mask beside the two sxtb16).
  const double unpack = !fourBit ? 1.0 : paired ? 4.0 / 3.0 : 2.0;
  if (!o.Conv) {
    // With vectors, a matrix product's own loop nest vectorizes.
    std::optional<TileProblem> p = vectors || gpu ? std::nullopt : scalarIntProblem(n, o, mac);
    if (!p)
      return std::nullopt;
    p->EvenVectors = fourBit;
    p->ColLoads = unpack;
    TileChoice c = schedule::chooseTile(t, *p);
    return ir::KernelPlan::IntTile{c.Rows, 1, c.Vectors, 1};
  }
  std::optional<TileProblem> p = vectors ? std::nullopt : scalarIntProblem(n, o, mac);
  if (!p) {
    // Halve the outputs while the accumulators (rows x vectors), a vector
    // of inputs per vector and one spare outgrow the vector registers
    // (Helium's 8: 4 x 16 outputs took 16 accumulators and spilled, digits
    // int8 on Cortex-M55 55,631 instructions; 4 x 4: 23,530).
    const int64_t lanes = t.lanes(DType::I32);
    int64_t outputs = std::max<int64_t>(kIntTileOutputs, lanes);
    while (outputs > lanes && t.VectorRegisters > 0 &&
           kIntTileRows * (outputs / lanes) + outputs / lanes + 1 > t.VectorRegisters)
      outputs /= 2;
    return ir::KernelPlan::IntTile{kIntTileRows, 1, outputs, 1};
  }
  p->EvenRows = fourBit;
  p->RowLoads = unpack;
  TileChoice c = schedule::chooseTile(t, *p);
  return ir::KernelPlan::IntTile{c.Rows, 1, c.Vectors, 1};
}

/// Whether a product requantized in fixed point (FixedRequant) takes the
/// form without 64-bit shifts where its values are provably small
/// (KernelPlan::SmallFixedRequant): a QLinearConv and a QGemm, whose
/// lowerings have that form; on every target (a 32-bit core saves the
/// 64-bit shift, a 64-bit one loses nothing).
bool smallFixedRequant(const ir::Node &n) {
  return (n.Domain.empty() && n.OpType == "QLinearConv") ||
         (n.Domain == "com.microsoft" && n.OpType == "QGemm");
}

} // namespace

/// The blocks of a fused attention (see KernelPlan::AttentionBlocks). With
/// at least a vector of query rows and no step operand that differs along
/// both the rows and the keys (a mask per position, which would be read
/// across the query rows), keys as the score tile's rows and query rows as
/// its columns; else (a decode step, a masked prompt) the query rows as
/// rows and keys as columns. Keys and query rows go in blocks of about
/// kAttentionKeyBlock and kAttentionQueryBlock, as even as the lengths
/// allow (a multiple of the score tile's rows or panel, and of the vector
/// lanes); among the cost model's best score tiles, the first whose panel
/// divides the query block; with keys as rows, the other form's tile for
/// runs of fewer query rows than a vector (FewRows, and its value tile
/// FewValues). The value tiles' panels divide the value width. The blocks' stack buffers
/// must fit half the kernel stack. None (the row-at-a-time loop nest) on a
/// GPU, without a float unit, or where no such blocks fit.
static std::optional<ir::KernelPlan::AttentionBlocks> attentionBlocks(const ir::Node &n,
                                                                      const TargetDesc &t) {
  if (t.gpu() || !t.FloatUnit)
    return std::nullopt;
  const Shape q = ops::attentionOperandShape(n, 0), k = ops::attentionOperandShape(n, 1),
              v = ops::attentionOperandShape(n, 2);
  const int64_t lq = q[q.size() - 2], dk = q.back(), lk = k[k.size() - 2], dv = v.back();
  const int64_t lanes = std::max(1, t.lanes(DType::F32));
  if (lq < 1 || lk < 1 || dk < 1 || dv % lanes)
    return std::nullopt;
  auto roundUp = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  // The first of the cost model's best tiles for `p` that `fits`, else its best.
  auto pick = [&](const TileProblem &p, const std::function<bool(const TileChoice &)> &fits,
                  const std::function<bool(const TileChoice &)> &needs) {
    std::optional<TileChoice> first;
    for (const TileChoice &c : schedule::rankTiles(t, p, 12)) {
      if (!needs(c))
        continue;
      if (fits(c))
        return std::optional<TileChoice>(c);
      if (!first)
        first = c;
    }
    return first;
  };
  auto any = [](const TileChoice &) { return true; };
  ir::KernelPlan::AttentionBlocks b;
  // A step operand that differs along both the query rows and the keys (a
  // causal or padding mask per position) is read along the keys: with the
  // keys as the tile's rows its loads would gather across query rows.
  bool mask = false;
  for (size_t i = 3; i < n.Inputs.size(); ++i) {
    const Shape &s = n.inShape(i);
    mask |= s.size() >= 2 && s[s.size() - 1] > 1 && s[s.size() - 2] > 1;
  }
  b.KeysAsRows = lq >= lanes && !mask;
  std::optional<TileChoice> scores;
  // The length split into blocks of at most `most`, as even as they go,
  // rounded up to `unit`.
  auto even = [&](int64_t length, int64_t most, int64_t unit) {
    const int64_t blocks = (length + most - 1) / most;
    return roundUp((length + blocks - 1) / blocks, unit);
  };
  if (b.KeysAsRows) {
    b.QueryBlock = even(lq, std::max(kAttentionQueryBlock, lanes), lanes);
    const int64_t keys = std::min(lk, kAttentionKeyBlock);
    scores = pick(TileProblem{MacKind::F32Fma, keys, b.QueryBlock, dk, true},
                  [&](const TileChoice &c) { return b.QueryBlock % (c.Vectors * c.Lanes) == 0; },
                  any);
    if (scores)
      b.KeyBlock = even(lk, kAttentionKeyBlock, scores->Rows);
  } else {
    const int64_t keys = std::clamp(roundUp(lk, lanes), lanes,
                                    std::max(kAttentionKeyBlock / lanes, int64_t{1}) * lanes);
    scores = pick(TileProblem{MacKind::F32Fma, std::min(lq, kAttentionQueryBlock), keys, dk, true},
                  any, any);
    if (scores) {
      b.KeyBlock = even(lk, keys, scores->Vectors * scores->Lanes);
      b.QueryBlock = even(lq, std::max(kAttentionQueryBlock, scores->Rows), scores->Rows);
    }
  }
  std::optional<TileChoice> values =
      pick(TileProblem{MacKind::F32Fma, b.QueryBlock, dv, std::max<int64_t>(b.KeyBlock, 1), true},
           any, [&](const TileChoice &c) { return dv % (c.Vectors * c.Lanes) == 0; });
  if (!scores || !values)
    return std::nullopt;
  b.Scores = registerTile(*scores);
  b.Values = registerTile(*values);
  // A run of few query rows (a bounded length) takes the other form.
  if (b.KeysAsRows && lanes > 1 && b.KeyBlock >= lanes) {
    b.FewRows = registerTile(
        schedule::chooseTile(t, TileProblem{MacKind::F32Fma, lanes - 1, b.KeyBlock, dk, true}));
    if (std::optional<TileChoice> few =
            pick(TileProblem{MacKind::F32Fma, lanes - 1, dv, b.KeyBlock, true}, any,
                 [&](const TileChoice &c) { return dv % (c.Vectors * c.Lanes) == 0; }))
      b.FewValues = registerTile(*few);
  }
  for (ir::KernelPlan::Tile *tile : {&b.Scores, &b.Values})
    tile->ReduceBlock = tile->RowBlock = 0;
  for (std::optional<ir::KernelPlan::Tile> *tile : {&b.FewRows, &b.FewValues})
    if (*tile)
      (*tile)->ReduceBlock = (*tile)->RowBlock = 0;
  const int64_t bytes = 4 * (b.QueryBlock * (dv + b.KeyBlock + 4) + b.KeyBlock * dv +
                             dk * std::max(b.QueryBlock, b.KeyBlock));
  if (bytes > t.StackBytes / 2 || !ops::attentionBlocksFit(b, dv))
    return std::nullopt;
  return b;
}

ir::KernelPlan planKernel(const ir::Node &n, const TargetDesc &t, bool integerRequant) {
  const bool gpu = t.gpu(); // one output per thread, nothing packed
  ir::KernelPlan p;
  if (n.Domain == "mlcc" && n.OpType == "Attention") {
    p.Attention = attentionBlocks(n, t);
    return p;
  }
  // 4-bit weights: rows of A sharing each unpacked byte of B, each keeping
  // a vector of partial sums (a few scalars on a core without vectors).
  if (n.Domain == "com.microsoft" && n.OpType == "MatMulNBits") {
    p.NBitsRows = 4;
    p.NBitsLanes = t.VectorBytes > 0 && !gpu ? t.lanes(DType::F32) : 2;
    return p;
  }
  // Recurrent cells with constant weights read them transposed (see
  // KernelPlan::GateRows).
  if (n.Domain.empty() && (n.OpType == "RNN" || n.OpType == "GRU" || n.OpType == "LSTM") &&
      n.hasInput(1) && n.hasInput(2) && n.Inputs[1]->Const && n.Inputs[2]->Const) {
    p.GateRows = true;
    p.GateBlock = !gpu ? schedule::gateBlock(t) : 0;
    return p;
  }
  // DFT and STFT on the FFT where their length factors into small radices
  // (a GPU target keeps one output per thread).
  if (int64_t len = ops::transformLength(n); len > 0 && !gpu && ops::fftRadices(len)) {
    p.Fft = true;
    return p;
  }
  std::optional<ops::IntegerOperands> io = ops::integerOperands(n);
  if (io) {
    const bool paired = !gpu && pairedProducts(n, *io, t);
    p.Int = intTile(n, *io, t, paired);
    p.Pairs = paired && p.Int;
    p.ByteDot = !gpu && !p.Int && byteDot(n, *io, t);
    p.PairWords = p.Pairs && pairWords(n, *io);
    p.StagedPairs = p.Pairs && stagedPairs(n, *io, *p.Int, t);
    // On a microcontroller (no caches: RAM is what is scarce) a 2-D integer
    // convolution pads its input on the stack a part at a time (a depthwise
    // one a channel's plane, a dense one the rows of an output row's
    // windows), not the whole image in the arena.
    if (io->Conv && !gpu && p.Int && t.L2Bytes == 0) {
      const Shape &x = n.inShape(io->X), &w = n.inShape(io->W);
      if (x.size() == 4 && w.size() == 4)
        p.Depthwise = ir::KernelPlan::Plane{
            std::min(kMaxPlaneBytes, t.StackBytes) / (int64_t)dtypeSize(n.inDType(io->X)), 1};
    }
    // Requantized values saturate in int32 where float min/max is costly.
    p.IntSaturate = n.OpType == "QLinearConv" && t.FloatUnit && !t.FloatMinMax && !gpu;
    // A windowed dense convolution in pairs stages its input as pair words
    // on the stack (within the plane bound: the lowering checks the image
    // or the band of rows; see KernelPlan::WindowPairs).
    p.WindowPairs = windowPairs(n, *io, p);
    p.ByteDot = p.ByteDot || (!gpu && byteDotPointwise(n, *io, t, p));
    // A convolution's tiles on the flattened grid stage their outputs in at
    // most a quarter of the kernel stack, and only in what a staged input
    // plane leaves of it (the two can live in one kernel at once).
    if (io->Conv && !gpu && p.Int) {
      int64_t planeBytes =
          p.Depthwise ? p.Depthwise->MaxElements * (int64_t)dtypeSize(n.inDType(io->X)) : 0;
      p.GridStageBytes = std::min(t.StackBytes / 4, t.StackBytes - planeBytes);
    }
    // A windowed convolution's short kernel rows written out tap by tap.
    if (io->Conv)
      p.UnrolledTaps = kUnrolledTaps;
  }
  if (gpu) {
    bool floatConv = n.Domain.empty() && n.OpType == "Conv" && n.hasInput(0) &&
                     n.inDType(0) == DType::F32;
    bool product = (n.Domain.empty() && (n.OpType == "MatMul" || n.OpType == "Gemm" ||
                                         n.OpType == "MatMulInteger" ||
                                         n.OpType == "QLinearMatMul")) ||
                   (n.Domain == "com.microsoft" && n.OpType == "QGemm");
    p.PerOutput = floatConv || product;
    return p;
  }
  // Products requantize in integers without a float unit, and on request
  // (--quantize-io) on any target, which keeps its other plans (dot
  // products, lane weights); the f32 saturation choice is then moot.
  if ((!t.FloatUnit || integerRequant) && fixedPointScales(n)) {
    p.FixedRequant = true;
    p.SmallFixedRequant = smallFixedRequant(n);
    p.IntSaturate = false;
    if (!t.FloatUnit)
      return p;
  }
  // Elementwise requantization needs f64 to round like the reference:
  // where f64 is a library call it runs in integers, as does the pool's
  // on request.
  if (((!t.DoubleUnit || integerRequant) && ops::integerElementwise(n)) ||
      (integerRequant && ops::integerPool(n))) {
    p.FixedRequant = true;
    return p;
  }
  if (io && hasDotProducts(t))
    if (std::optional<ir::KernelPlan> d = dotPlan(n, *io, t)) {
      d->Int = p.Int;
      d->FixedRequant = p.FixedRequant;
      d->SmallFixedRequant = p.SmallFixedRequant;
      d->UnrolledTaps = p.UnrolledTaps;
      return *d;
    }
  if (io && laneWeights(n, *io, t, p))
    p.LaneWeights = true;
  if (std::optional<ir::KernelPlan> f = floatPlan(n, t))
    return *f;
  // A 16-bit float image is staged in f32 up to a quarter of the stack:
  // clipped windows read in place would convert each element once per tap.
  if (depthwiseF32(n))
    p.Depthwise = ir::KernelPlan::Plane{
        (isNarrowFloat(n.inDType(0)) ? t.StackBytes / 4 : std::min(kMaxPlaneBytes, t.StackBytes)) /
            4,
        std::max<int64_t>(kMinGridRound, t.lanes(DType::F32))};
  return p;
}

} // namespace mlcc::passes
