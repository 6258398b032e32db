//===- QLinear.cpp - MatMulInteger, ConvInteger, QLinearMatMul/Conv -------===//
//
// MatMulInteger and ConvInteger accumulate zero-point-corrected operands in
// int32; QLinearMatMul and QLinearConv requantize the accumulator:
//
//   y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zp)
//
// The multiplier is computed in the scales' precision (f16 scales round after
// every operation, like the reference), the product in double. The loop
// nests are the float ones (compiler/ops/Contraction.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/ops/Quantization.h"

namespace mlcc::ops {

using namespace kir;
using namespace quant;

namespace {

// ---------------------------------------------------------------------------
// Integer matrix multiplication
// ---------------------------------------------------------------------------

/// A per-tensor, per-row (of A: 1-D of M elements, or [..., M, 1]) or
/// per-column (of B: 1-D of N elements, or [..., 1, N]) parameter.
void checkMatParam(const ir::Node &n, size_t i, const MatMulShape &s, bool rows) {
  if (!n.hasInput(i))
    return;
  const Shape &p = n.inShape(i);
  if (numElements(p) == 1)
    return;
  int64_t len = rows ? s.M : s.N;
  if (p.size() == 1) {
    if (p[0] != len)
      n.error() << "input " << i << " of shape " << shapeToString(p)
                << " must have " << len << " elements (one per "
                << (rows ? "row" : "column") << ")";
    return;
  }
  Shape full = s.Batch;
  full.push_back(rows ? s.M : 1);
  full.push_back(rows ? 1 : s.N);
  if (p.size() > full.size() || broadcastShapes(n, {p, full}) != full)
    n.error() << "input " << i << " of shape " << shapeToString(p)
              << " does not broadcast to " << shapeToString(full);
}

/// Loads the parameter of batch `bi`, row `r`, column `c` of the output.
Expr loadMatParam(const TensorRef &t, bool rows, const std::vector<Expr> &bi,
                  const Expr &r, const Expr &c) {
  if (t.numel() == 1)
    return t.loadFlat(indexConst(0));
  if (t.rank() == 1)
    return t.load({rows ? r : c});
  std::vector<Expr> idx = bi;
  idx.push_back(rows ? r : indexConst(0));
  idx.push_back(rows ? indexConst(0) : c);
  return t.loadBroadcast(idx);
}

/// Lowers sum_k (a - a_zp)(b - b_zp) in int32 and stores finish(acc, bi, i, j).
void lowerIntMatMul(LowerCtx &c, size_t aIdx, size_t bIdx, size_t azpIdx,
                    size_t bzpIdx,
                    const std::function<Expr(Expr, const std::vector<Expr> &,
                                             Expr, Expr)> &finish) {
  TensorRef a = c.in(aIdx), bm = c.in(bIdx), y = c.out(0);
  std::optional<TensorRef> azp, bzp;
  if (c.hasIn(azpIdx))
    azp = c.in(azpIdx);
  if (c.hasIn(bzpIdx))
    bzp = c.in(bzpIdx);
  MatMulShape s = matmulShape(c.node(), a.shape(), bm.shape());
  const DType acc = DType::I32;
  MatMulSpec spec;
  spec.Acc = acc;
  spec.LoadA = [&](const std::vector<Expr> &bi, const Expr &i, const Expr &k) {
    Expr v = cast(acc, a.load(matmulOperandIndex(s, true, bi, i, k)));
    return azp ? v - cast(acc, loadMatParam(*azp, true, bi, i, k)) : v;
  };
  spec.LoadB = [&](const std::vector<Expr> &bi, const Expr &k, const Expr &j) {
    Expr v = cast(acc, bm.load(matmulOperandIndex(s, false, bi, k, j)));
    return bzp ? v - cast(acc, loadMatParam(*bzp, false, bi, k, j)) : v;
  };
  if (finish)
    spec.Finish = [&](const Expr &v, const std::vector<Expr> &bi, const Expr &i,
                      const Expr &j) { return finish(v, bi, i, j); };
  lowerMatrixProduct(c, s, y, spec);
}

void inferMatMulInteger(ir::Node &n) {
  requireInputType(n, 0, "A", {DType::I8, DType::U8});
  requireInputType(n, 1, "B", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 3, 1);
  MatMulShape s = matmulShape(n, n.inShape(0), n.inShape(1));
  checkMatParam(n, 2, s, true);
  checkMatParam(n, 3, s, false);
  n.setOutput(0, DType::I32, s.Out);
}

void lowerMatMulInteger(LowerCtx &c) {
  lowerIntMatMul(c, 0, 1, 2, 3, nullptr);
}

/// The requantization multiplier a_scale * b_scale / y_scale, computed in
/// the scales' precision (f16 scales round after each operation).
Expr requantMultiplier(DType st, const Expr &as, const Expr &bs, const Expr &ys) {
  DType ct = computeType(st);
  Expr m = roundTo(st, cast(ct, as) * cast(ct, bs));
  return cast(DType::F64, roundTo(st, m / cast(ct, ys)));
}

/// QLinearMatMul and QLinearConv share their operand layout: (a, a_scale,
/// a_zp, b, b_scale, b_zp, y_scale, y_zp, ...) with 8-bit data, zero points
/// of their data's type and scales of one float type.
void checkQLinearTypes(const ir::Node &n, const char *a, const char *b) {
  requireInputType(n, 0, a, {DType::I8, DType::U8});
  requireInputType(n, 3, b, {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 5, 3);
  requireInputType(n, 7, "y_zero_point", {DType::I8, DType::U8});
  for (size_t i : {1, 4, 6}) {
    requireInputType(n, i, "a scale", {DType::F32, DType::F16, DType::BF16});
    if (n.inDType(i) != n.inDType(1))
      n.error() << "scales must share one type";
  }
}

void inferQLinearMatMul(ir::Node &n) {
  checkQLinearTypes(n, "a", "b");
  MatMulShape s = matmulShape(n, n.inShape(0), n.inShape(3));
  checkMatParam(n, 1, s, true);
  checkMatParam(n, 2, s, true);
  checkMatParam(n, 4, s, false);
  checkMatParam(n, 5, s, false);
  checkMatParam(n, 6, s, true);
  checkMatParam(n, 7, s, true);
  n.setOutput(0, n.inDType(7), s.Out);
}

void lowerQLinearMatMul(LowerCtx &c) {
  TensorRef as = c.in(1), bs = c.in(4), ys = c.in(6), yzp = c.in(7);
  DType st = c.node().inDType(1);
  DType out = c.node().inDType(7);
  lowerIntMatMul(c, 0, 3, 2, 5,
                 [&](Expr acc, const std::vector<Expr> &bi, Expr i, Expr j) {
                   Expr m = requantMultiplier(
                       st, loadMatParam(as, true, bi, i, j),
                       loadMatParam(bs, false, bi, i, j),
                       loadMatParam(ys, true, bi, i, j));
                   Expr z = cast(DType::F64, loadMatParam(yzp, true, bi, i, j));
                   return saturateRound(out, cast(DType::F64, acc) * m, z);
                 });
}

// ---------------------------------------------------------------------------
// Integer convolution
// ---------------------------------------------------------------------------

/// A scalar or per-output-channel ([M]) parameter.
void checkChannelParam(const ir::Node &n, size_t i, int64_t m, bool perChannel) {
  if (!n.hasInput(i))
    return;
  const Shape &p = n.inShape(i);
  if (numElements(p) == 1 && p.size() <= 1)
    return;
  if (!perChannel || p.size() != 1 || p[0] != m)
    n.error() << "input " << i << " has shape " << shapeToString(p)
              << "; expected a scalar" << (perChannel ? " or one value per output channel" : "");
}

Expr loadChannelParam(const TensorRef &t, const Expr &m) {
  if (t.numel() == 1)
    return t.loadFlat(indexConst(0));
  return t.load({m});
}

/// Lowers the int32 convolution sum (x - x_zp)(w - w_zp) (+ bias) and stores
/// finish(acc, m) for every output element (the padding contributes
/// x_zp - x_zp = 0, so it is skipped like in a float convolution).
void lowerIntConv(LowerCtx &c, size_t xIdx, size_t xzpIdx, size_t wIdx,
                  size_t wzpIdx, size_t biasIdx,
                  const std::function<Expr(Expr, Expr)> &finish) {
  ConvShape s = convShape(c.node(), xIdx, wIdx);
  TensorRef x = c.in(xIdx), w = c.in(wIdx), y = c.out(0);
  std::optional<TensorRef> xzp, wzp, bias;
  if (c.hasIn(xzpIdx))
    xzp = c.in(xzpIdx);
  if (c.hasIn(wzpIdx))
    wzp = c.in(wzpIdx);
  if (biasIdx && c.hasIn(biasIdx))
    bias = c.in(biasIdx);
  const DType acc = DType::I32;
  Expr xz = xzp ? cast(acc, xzp->loadFlat(indexConst(0))) : constantInt(acc, 0);
  ConvSpec spec;
  spec.Acc = acc;
  spec.LoadX = [&](const std::vector<Expr> &i) { return cast(acc, x.load(i)) - xz; };
  spec.LoadW = [&](const std::vector<Expr> &i) {
    Expr v = cast(acc, w.load(i));
    return wzp ? v - cast(acc, loadChannelParam(*wzp, i[0])) : v;
  };
  if (bias)
    spec.Init = [&](const Expr &m) { return cast(acc, bias->load({m})); };
  if (finish)
    spec.Finish = [&](const Expr &v, const Expr &m) { return finish(v, m); };
  lowerConvolution(c, s, y, spec);
}

void inferConvInteger(ir::Node &n) {
  requireInputType(n, 0, "x", {DType::I8, DType::U8});
  requireInputType(n, 1, "w", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 3, 1);
  ConvShape s = convShape(n, 0, 1);
  checkChannelParam(n, 2, s.M, false);
  checkChannelParam(n, 3, s.M, true);
  n.setOutput(0, DType::I32, s.outShape());
}

void lowerConvInteger(LowerCtx &c) {
  lowerIntConv(c, 0, 2, 1, 3, 0, nullptr);
}

void inferQLinearConv(ir::Node &n) {
  checkQLinearTypes(n, "x", "w");
  ConvShape s = convShape(n, 0, 3);
  checkChannelParam(n, 1, s.M, false);
  checkChannelParam(n, 2, s.M, false);
  checkChannelParam(n, 4, s.M, true);
  checkChannelParam(n, 5, s.M, true);
  checkChannelParam(n, 6, s.M, false);
  checkChannelParam(n, 7, s.M, false);
  if (n.hasInput(8)) {
    if (n.inDType(8) != DType::I32)
      n.error() << "bias has type " << dtypeOnnxName(n.inDType(8))
                << "; int32 is required";
    if (n.inShape(8) != Shape{s.M})
      n.error() << "bias has shape " << shapeToString(n.inShape(8))
                << ", expected [" << s.M << "]";
  }
  n.setOutput(0, n.inDType(7), s.outShape());
}

void lowerQLinearConv(LowerCtx &c) {
  TensorRef xs = c.in(1), ws = c.in(4), ys = c.in(6), yzp = c.in(7);
  DType st = c.node().inDType(1);
  DType out = c.node().inDType(7);
  lowerIntConv(c, 0, 2, 3, 5, 8, [&](Expr acc, Expr m) {
    Expr mult = requantMultiplier(st, xs.loadFlat(indexConst(0)),
                                  loadChannelParam(ws, m),
                                  ys.loadFlat(indexConst(0)));
    Expr z = cast(DType::F64, yzp.loadFlat(indexConst(0)));
    return saturateRound(out, cast(DType::F64, acc) * mult, z);
  });
}

} // namespace

MLCC_OPS(QLinear) {
  R.add({.Name = "MatMulInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferMatMulInteger, .Lower = lowerMatMulInteger});
  R.add({.Name = "QLinearMatMul", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearMatMul, .Lower = lowerQLinearMatMul});
  R.add({.Name = "ConvInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferConvInteger, .Lower = lowerConvInteger});
  R.add({.Name = "QLinearConv", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearConv, .Lower = lowerQLinearConv});
}

} // namespace mlcc::ops
