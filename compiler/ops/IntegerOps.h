//===- IntegerOps.h - What the integer op files share ----------------------===//
//
// IntegerMatMul.cpp (MatMulInteger, QLinearMatMul, QGemm), IntegerConv.cpp
// (ConvInteger, QLinearConv) and DotConv.cpp (their dot-product paths):
// zero points, type checks and requantization from the first, the
// dot-product convolutions from the last, the register tile of the integer
// convolutions.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ops/Contraction.h"

#include <functional>
#include <optional>
#include <utility>

namespace mlcc::ops {

// --- IntegerMatMul.cpp ------------------------------------------------------

/// The zero point at input `i`, unless it is omitted or a constant 0.
std::optional<TensorRef> zeroPoint(LowerCtx &c, size_t i);

/// QLinearMatMul and QLinearConv share their operand layout: (a, a_scale,
/// a_zp, b, b_scale, b_zp, y_scale, y_zp, ...) with 8-bit data, zero points
/// of their data's type and scales of one float type.
void checkQLinearTypes(const ir::Node &n, const char *a, const char *b);

/// Requantizes an int32 accumulator by `mult` (f32) to `out` with zero
/// point `zp`: in f32 like ONNX Runtime when `f32`, else in double like the
/// ONNX reference. The result is an int32 in `out`'s range (the double one
/// is converted through f32, where it is exact: vector conversions that do
/// not narrow the element width, which every target has).
kir::Expr requantize(DType out, bool f32, const kir::Expr &acc, const kir::Expr &mult, const kir::Expr &zp);

/// The fixed-point multiplier and shift of output channel (column) `m`
/// when plan-kernels chose integer-only requantization, else nullopt.
std::optional<std::pair<kir::Expr, kir::Expr>> fixedRequant(LowerCtx &c, const kir::Expr &m);

/// Bounds on |acc| per output channel (column) of an 8-bit product whose
/// weights (input wIdx), weight zero point (wzpIdx, absent: 0) and int32
/// bias (biasIdx, absent, one value or one per channel) are constants:
/// 255 * sum_k |w - w_zp| + |bias| (|x - x_zp| <= 255 for 8-bit data).
/// The weights are [channels, K] when channelsFirst (a convolution's
/// [M, C, kh, kw] flattened), else [K, channels]. nullopt when an operand
/// is not constant or has another shape.
std::optional<std::vector<double>> accumulatorBounds(const ir::Node &n, size_t wIdx,
                                                     size_t wzpIdx, size_t biasIdx,
                                                     bool channelsFirst);

/// Whether |acc * mult[c]| < requant::kSmallProductBound for every
/// channel c (one multiplier for all when mult has one element).
bool productsSmall(const std::vector<double> &bounds, const std::vector<double> &mult);

/// With the plan's FixedRequant: whether every channel's shift is at least
/// 33 and its real multiplier keeps the products small (productsSmall), so
/// requant::requantizeFixedSmall applies.
bool fixedRequantSmall(const ir::Node &n, const std::vector<double> &bounds);

// --- DotConv.cpp ------------------------------------------------------------

/// The contraction a dot-product convolution tiles, for plan-kernels'
/// cost model: Rows (output channels per tile row) x Cols outputs over
/// Steps reduction steps (quads x taps), with at most MaxVectors vectors
/// across (0: no bound of the lowering's own).
struct DotGeometry {
  int64_t Rows, Cols, Steps, MaxVectors;
};

/// Whether lowerIntTapQuads computes convolution `s` with vectors of
/// `lanes` (2-D, depthwise: one input and one output channel per group,
/// and at least a vector of outputs per channel), and what it tiles.
std::optional<DotGeometry> tapQuadsGeometry(const ConvShape &s, int64_t lanes);

/// A 2-D depthwise convolution of uint8 data x by int8 weights (zero point
/// 0) on the int8 dot product. Per channel (the parallel loop), x is first
/// rewritten as tap quads: T[u, py, i, ox] holds, as the four bytes of an
/// int32, the inputs that taps 4u..4u+3 of one kernel row multiply for
/// output column ox on padded input row iy = sh * i + py,
///   T[u, py, i, ox] = sum_t xp[iy, sw * ox + (4u + t) dw] << 8t  (t < KW),
/// xp being x bordered by the padding, whose bytes are the zero point `xz`
/// (the rows and columns that reach it are split off at compile time, so
/// the interior is read in whole vectors), so that one dot4 with the quad
/// of those taps' weights does four of a row's multiply-adds. The rows are split by phase py = iy % sh, which
/// makes the input of output q = oy * ow + ox for kernel row kh the affine
///   T[u, (kh dh) % sh, oy + (kh dh) / sh, ox] = plane + q + (kh dh / sh) ow,
/// so that tiles of consecutive outputs of the dense output (any width, no
/// grid columns to skip) read whole vectors and store whole vectors. Tiles
/// of NV vectors of outputs (the plan's Taps tile) keep their int32
/// sums in registers; the outputs past the last whole tile run in one
/// narrower tail tile.
void lowerIntTapQuads(LowerCtx &c, const ConvShape &s, const TensorRef &x, const kir::Expr &xz,
                      const TensorRef &w, const std::function<kir::Expr(const kir::Expr &)> &init,
                      const TensorRef &y, const std::function<kir::Expr(kir::Expr, kir::Expr)> &finish);

/// A 2-D convolution on the int8 dot product (kernel IR dot4, x86 VNNI
/// vpdpbusd: 4 bytes x 4 bytes summed into each int32 lane), chosen by
/// plan-kernels (plan Dot4Lanes = the vector lanes, Dot = the tile) for int8 weights
/// with a zero point of 0 and one group. The weights come packed as int32
/// quads of four consecutive input channels (mlcc.PackQuads, input
/// `packed`: [M, C/4, KH, KW]), with their per-channel sums (input
/// `packed` + 1), both computed at compile time.
///
/// The input is rewritten once per call as an int32 image of channel quads,
/// one copy per kernel column kw and row phase py = iy % sh:
///   X[n, c/4, kw, py, i, ox] = the bytes of channels 4(c/4)..+3 at input
///   row sh * i + py - pad_top, column sw * ox + kw dw - pad_left,
/// as unsigned values (int8 data offset by 128, and its zero point too, so
/// that vpdpbusd's unsigned x signed product applies); the padding and the
/// channels past C hold the zero point. The input of output q = oy * ow + ox
/// for tap (kh, kw) is then
///   X[n, c/4, kw, (kh dh) % sh, oy + (kh dh) / sh, ox] = plane + q,
/// affine in q over the whole dense output: register tiles of R output
/// channels x NV vectors of consecutive outputs (rows of any width, any
/// stride) load whole vectors of quads, broadcast one weight quad per
/// channel and store whole vectors, with
///   sum_k (x - x_zp) w = sum over quads dot4(X, w4) - x_zp' sum_k w,
/// the second term (with the bias) the accumulators' initial value. R and
/// NV come from the plan's Dot tile; the last row tile is shifted back to
/// overlap, and the outputs past the last whole tile run in one narrower
/// tail tile ending at the last output. The quads of an output tile are
/// first packed into a panel, each step's NV vectors contiguous, so that
/// the tile loop reads one aligned sequential stream (the images' rows
/// are scattered over the kernel columns and quads, and misaligned): on
/// the 3x3 convolutions of resnet18's second stage this lifts the tiles
/// from about 64% of the dot-product peak to about 81%. A pointwise
/// convolution reads its quad image directly (see `direct`).
///
/// The plan's DotPairs (x86 pmaddwd): the weights come as two words a quad
/// ([M, C/4, KH, KW, 2]: channels (0, 2) and (1, 3) as sign-extended 16-bit
/// pairs), each vector of quads is split into its (x0, x2) and (x1, x3)
/// pairs once per step, and a quad's products are two dot2. DotSigned
/// (AArch64 sdot): the images hold x - 128 as signed bytes (int8 data as it
/// is), x_zp' is the zero point in that domain, and the products are sdot4.
void lowerIntDotConv(LowerCtx &c, size_t xIdx, size_t xzpIdx, size_t wIdx, size_t biasIdx,
                     size_t packedIdx, const std::function<kir::Expr(kir::Expr, kir::Expr)> &finish);

/// Stores `value` into the border of `planes` planes of Hp x Wp elements
/// (flat in `buf`) around an image of H x W whose first element is at
/// (top, left): the rows above and below, and the columns left and right of
/// each image row. The image itself is written by the caller.
void fillBorder(kir::KernelBuilder &b, const TensorRef &buf, int64_t planes, int64_t Hp, int64_t Wp,
                int64_t top, int64_t left, int64_t H, int64_t W, const kir::Expr &value);

/// Whether lowerIntDotConv handles convolution `s` with vectors of `lanes`
/// (2-D, one group, a vector of outputs per channel, and a stack panel, for
/// a convolution that is not pointwise and whose output tiles run outside,
/// of one vector per step within `stackBytes`), and what it tiles.
std::optional<DotGeometry> dotConvGeometry(const ConvShape &s, int64_t lanes, int64_t stackBytes);

/// Where an integer convolution's or matrix product's operands are (input
/// indices): QLinearConv, ConvInteger, QLinearMatMul, MatMulInteger and
/// com.microsoft QGemm.
struct IntegerOperands {
  bool Conv = false;
  size_t X = 0, W = 0, WZeroPoint = 0;
  /// The first index past the op's own optional inputs (where pack-weights
  /// appends operands).
  size_t Appended = 0;
  bool TransposedW = false; ///< QGemm transB: W is [N, K]
};
std::optional<IntegerOperands> integerOperands(const ir::Node &n);

/// The dot product of a plan's quads (the input's bytes first, the
/// weights' second): dot4 (unsigned input bytes), or sdot4 (DotSigned),
/// sdot4_narrow where the weights avoid -128 (DotNarrow).
kir::BinOp quadDot(const ir::KernelPlan &p);

/// The input that holds the int8 weights packed for products in pairs
/// (the plan's Pairs: mlcc.PackQuads/PackQuadsK with pairs = 1), once
/// pack-weights added it.
inline std::optional<size_t> pairedWeightsInput(const ir::Node &n) {
  if (n.Plan.PairsInput < 0 || !n.hasInput((size_t)n.Plan.PairsInput))
    return std::nullopt;
  return (size_t)n.Plan.PairsInput;
}

// --- QLinearContrib.cpp -----------------------------------------------------

/// Whether a com.microsoft QLinearAdd or QLinearMul can requantize in
/// integers (constant scales and zero points, ratios that fit the
/// fixed-point forms): plan-kernels' FixedRequant for it.
bool integerElementwise(const ir::Node &n);

/// Whether a com.microsoft QLinearGlobalAveragePool can requantize its sums
/// in integers (constant f32 scales, a Q31 multiplier of x_scale / (y_scale
/// * count), int32 sums): plan-kernels' FixedRequant for it with
/// --quantize-io (else it requantizes in f32, exactly like the reference).
bool integerPool(const ir::Node &n);

/// Whether input `i` (a zero point) is omitted or a constant of zeros.
bool zeroOrAbsent(const ir::Node &n, size_t i);

} // namespace mlcc::ops
