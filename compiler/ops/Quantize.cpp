//===- Quantize.cpp - QuantizeLinear, DequantizeLinear, integer MatMul/Conv ===//
//
// Linear (de)quantization with per-tensor, per-axis and blocked scales;
// DynamicQuantizeLinear (uint8, scale from the data's range); MatMulInteger
// and ConvInteger (int32 accumulation of zero-point-corrected operands);
// QLinearMatMul and QLinearConv, which requantize the int32 accumulator:
//
//   y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zp)
//
// The multiplier is computed in the scales' precision (f16 scales round after
// every operation, like the reference), the product in double.
//
// Quantized types: 8/16/32-bit integers and the four float8 types (E4M3FN,
// E4M3FNUZ, E5M2, E5M2FNUZ). Quantizing to float8 computes
// x / y_scale + y_zero_point in f32 and converts it with round to nearest
// even; `saturate` (default 1) clamps to the type's finite range first, as in
// Cast (the plain kernel IR conversion does not saturate). 4/2-bit types are
// rejected as unsupported.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/support/Float8.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

/// The representable range of an integer type, for saturation.
std::pair<double, double> intRange(DType t) {
  switch (t) {
  case DType::I8: return {-128.0, 127.0};
  case DType::U8: return {0.0, 255.0};
  case DType::I16: return {-32768.0, 32767.0};
  case DType::U16: return {0.0, 65535.0};
  case DType::U32: return {0.0, 4294967295.0};
  default: return {-2147483648.0, 2147483647.0};
  }
}

void requireQuantType(const ir::Node &n, DType t, const char *what,
                      std::initializer_list<DType> allowed) {
  for (DType a : allowed)
    if (a == t)
      return;
  std::string list;
  for (DType a : allowed)
    list += (list.empty() ? "" : ", ") + std::string(dtypeOnnxName(a));
  n.error(ErrorKind::Unsupported) << what << " has type " << dtypeOnnxName(t)
                                  << "; supported: " << list;
}

void requireInputType(const ir::Node &n, size_t i, const char *what,
                      std::initializer_list<DType> allowed) {
  requireQuantType(n, n.inDType(i), what, allowed);
}

/// Rounds a compute-type value to the precision of storage type `t` (f16 and
/// bf16 values are computed in f32 but must round like their type).
Expr roundTo(DType t, const Expr &v) {
  if (isNarrowFloat(t))
    return cast(DType::F32, cast(t, v));
  return v;
}

/// round_half_even(v) + zp, saturated to `out`'s range; v and zp in f64.
Expr saturateRound(DType out, const Expr &v, const Expr &zp) {
  auto [lo, hi] = intRange(out);
  Expr r = unary(UnOp::Round, v) + zp;
  return clamp(r, constant(DType::F64, lo), constant(DType::F64, hi));
}

// ---------------------------------------------------------------------------
// Quantization granularity (QuantizeLinear / DequantizeLinear)
// ---------------------------------------------------------------------------

struct Granularity {
  enum Kind { PerTensor, PerAxis, Blocked } K = PerTensor;
  int64_t Axis = 0;
  int64_t Block = 0;
};

Granularity granularity(const ir::Node &n, size_t scaleIdx, size_t zpIdx) {
  const Shape &x = n.inShape(0), &s = n.inShape(scaleIdx);
  int64_t r = (int64_t)x.size();
  if (n.hasInput(zpIdx) && n.inShape(zpIdx) != s &&
      !(numElements(n.inShape(zpIdx)) == 1 && numElements(s) == 1))
    n.error() << "zero point shape " << shapeToString(n.inShape(zpIdx))
              << " differs from scale shape " << shapeToString(s);
  Granularity g;
  int64_t block = n.Opset >= 21 ? n.attrInt("block_size", 0) : 0;
  if (block < 0)
    n.error() << "block_size must be positive, got " << block;
  if (block == 0 && s.size() <= 1 && numElements(s) == 1)
    return g;
  if (n.Opset < 13)
    n.error() << "scale must be a scalar before opset 13, got shape "
              << shapeToString(s);
  g.Axis = normalizeAxis(n, n.attrInt("axis", 1), r);
  if (block == 0) {
    if (s.size() != 1 || s[0] != x[(size_t)g.Axis])
      n.error() << "per-axis scale of shape " << shapeToString(s)
                << " does not match axis " << g.Axis << " of input "
                << shapeToString(x);
    g.K = Granularity::PerAxis;
    return g;
  }
  if ((int64_t)s.size() != r)
    n.error() << "blocked scale of shape " << shapeToString(s)
              << " must have the input's rank " << r;
  for (int64_t d = 0; d < r; ++d) {
    int64_t want = d == g.Axis ? (x[(size_t)d] + block - 1) / block : x[(size_t)d];
    if (s[(size_t)d] != want)
      n.error() << "blocked scale of shape " << shapeToString(s)
                << " does not fit input " << shapeToString(x) << " with block_size "
                << block << " on axis " << g.Axis;
  }
  g.K = Granularity::Blocked;
  g.Block = block;
  return g;
}

/// The scale or zero point element for input position `xi`.
Expr loadParam(const TensorRef &t, const Granularity &g,
               const std::vector<Expr> &xi) {
  switch (g.K) {
  case Granularity::PerTensor:
    return t.loadFlat(indexConst(0));
  case Granularity::PerAxis:
    return t.load({xi[(size_t)g.Axis]});
  case Granularity::Blocked: {
    std::vector<Expr> idx = xi;
    idx[(size_t)g.Axis] = idx[(size_t)g.Axis] / g.Block;
    return t.load(idx);
  }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// QuantizeLinear
// ---------------------------------------------------------------------------

DType quantizeOutputType(const ir::Node &n) {
  int64_t code = n.Opset >= 21 ? n.attrInt("output_dtype", 0) : 0;
  if (code != 0) {
    auto t = dtypeFromOnnx(code);
    if (!t)
      n.error() << "output_dtype has unknown data type " << code;
    if (n.hasInput(2) && n.inDType(2) != *t)
      n.error() << "output_dtype " << dtypeOnnxName(*t)
                << " differs from the zero point type "
                << dtypeOnnxName(n.inDType(2));
    return *t;
  }
  return n.hasInput(2) ? n.inDType(2) : DType::U8;
}

/// The type in which x / scale is computed (the scale's, or `precision`).
DType quantizePrecision(const ir::Node &n) {
  int64_t code = n.Opset >= 25 ? n.attrInt("precision", 0) : 0;
  if (code != 0) {
    auto t = dtypeFromOnnx(code);
    if (!t || !isFloat(*t))
      n.error(ErrorKind::Unsupported) << "precision " << code
                                      << " is not a supported float type";
    return *t;
  }
  DType s = n.inDType(1);
  return isFloat(s) ? s : DType::F32;
}

void inferQuantize(ir::Node &n) {
  DType x = n.inDType(0);
  if (!isFloat(x) && x != DType::I32)
    n.error(ErrorKind::Unsupported) << "x has type " << dtypeOnnxName(x)
                                    << "; float or int32 is required";
  requireInputType(n, 1, "y_scale",
                   {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32});
  DType out = quantizeOutputType(n);
  requireQuantType(n, out, "the output",
                   {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32,
                    DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2,
                    DType::F8E5M2FNUZ});
  int64_t sat = n.attrInt("saturate", 1);
  if (sat != 0 && sat != 1)
    n.error() << "attribute 'saturate' must be 0 or 1, got " << sat;
  quantizePrecision(n);
  granularity(n, 1, 2);
  n.setOutput(0, out, n.inShape(0));
}

void lowerQuantize(LowerCtx &c) {
  const ir::Node &n = c.node();
  Granularity g = granularity(n, 1, 2);
  DType prec = quantizePrecision(n);
  DType pt = computeType(prec);
  TensorRef x = c.in(0), s = c.in(1), y = c.out(0);
  std::optional<TensorRef> zp;
  if (c.hasIn(2))
    zp = c.in(2);
  DType out = y.dtype();
  // A 16-bit quotient rounds to its type when both operands have it (or
  // `precision` asks for it); otherwise the division is in the wider type.
  bool narrow = n.hasAttr("precision") || x.dtype() == prec;
  c.b().loops(x.shape(), [&](const std::vector<Expr> &i) {
    Expr xv = cast(pt, x.load(i));
    Expr sv = cast(pt, loadParam(s, g, i));
    Expr q = xv / sv;
    if (narrow)
      q = roundTo(prec, q);
    if (isFloat8(out)) {
      // No integer rounding: the float8 conversion rounds (to nearest even).
      Expr v = cast(DType::F32, q);
      if (zp)
        v = v + cast(DType::F32, loadParam(*zp, g, i));
      if (n.attrInt("saturate", 1) != 0) {
        double mx = float8MaxValue(out);
        v = clamp(v, constant(DType::F32, -mx), constant(DType::F32, mx));
      }
      y.store(i, v);
      return;
    }
    Expr z = zp ? cast(DType::F64, loadParam(*zp, g, i)) : constant(DType::F64, 0);
    y.store(i, saturateRound(out, cast(DType::F64, q), z));
  });
}

// ---------------------------------------------------------------------------
// DequantizeLinear
// ---------------------------------------------------------------------------

DType dequantizeOutputType(const ir::Node &n) {
  int64_t code = n.Opset >= 23 ? n.attrInt("output_dtype", 0) : 0;
  if (code != 0) {
    auto t = dtypeFromOnnx(code);
    if (!t || !isFloat(*t))
      n.error() << "output_dtype " << code << " is not a float type";
    return *t;
  }
  return n.Opset >= 19 ? n.inDType(1) : DType::F32;
}

void inferDequantize(ir::Node &n) {
  requireInputType(n, 0, "x",
                   {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32,
                    DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2,
                    DType::F8E5M2FNUZ});
  if (n.hasInput(2) && n.inDType(2) != n.inDType(0))
    n.error() << "x_zero_point has type " << dtypeOnnxName(n.inDType(2))
              << " but x has " << dtypeOnnxName(n.inDType(0));
  requireInputType(n, 1, "x_scale", {DType::F32, DType::F16, DType::BF16});
  granularity(n, 1, 2);
  n.setOutput(0, dequantizeOutputType(n), n.inShape(0));
}

void lowerDequantize(LowerCtx &c) {
  const ir::Node &n = c.node();
  Granularity g = granularity(n, 1, 2);
  TensorRef x = c.in(0), s = c.in(1), y = c.out(0);
  std::optional<TensorRef> zp;
  if (c.hasIn(2))
    zp = c.in(2);
  c.b().loops(x.shape(), [&](const std::vector<Expr> &i) {
    Expr v = cast(DType::F32, x.load(i));
    if (zp)
      v = v - cast(DType::F32, loadParam(*zp, g, i));
    y.store(i, v * cast(DType::F32, loadParam(s, g, i)));
  });
}

// ---------------------------------------------------------------------------
// DynamicQuantizeLinear
// ---------------------------------------------------------------------------

void inferDynamicQuantize(ir::Node &n) {
  requireInputType(n, 0, "x", {DType::F32, DType::F16, DType::BF16, DType::F64});
  n.setOutput(0, DType::U8, n.inShape(0));
  n.setOutput(1, DType::F32, {});
  n.setOutput(2, DType::U8, {});
}

void lowerDynamicQuantize(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  const DType f = DType::F32;
  // The range always includes 0.
  Local lo = b.local("lo", constant(f, 0)), hi = b.local("hi", constant(f, 0));
  b.loop("i", x.numel(), [&](Expr i) {
    Expr v = cast(f, x.loadFlat(i));
    b.set(lo, min(lo.get(), v));
    b.set(hi, max(hi.get(), v));
  });
  Local scale = b.local("scale", (hi.get() - lo.get()) / 255.0);
  // zero point = saturate(round(0 - lo / scale)); 0 when the data is all 0.
  Expr zpf = clamp(unary(UnOp::Round, (0.0 - lo.get() / scale.get())),
                   constant(f, 0), constant(f, 255));
  Local zp = b.local("zp", select(eq(scale.get(), 0.0), constant(f, 0), zpf));
  if (c.hasOut(1))
    c.out(1).storeFlat(indexConst(0), scale.get());
  if (c.hasOut(2))
    c.out(2).storeFlat(indexConst(0), zp.get());
  b.loop("i", x.numel(), [&](Expr i) {
    Expr v = cast(f, x.loadFlat(i));
    Expr q = unary(UnOp::Round, v / scale.get()) + zp.get();
    y.storeFlat(i, clamp(q, constant(f, 0), constant(f, 255)));
  });
}

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

void requireZeroPointType(const ir::Node &n, size_t zp, size_t of) {
  if (n.hasInput(zp) && n.inDType(zp) != n.inDType(of))
    n.error() << "zero point (input " << zp << ") has type "
              << dtypeOnnxName(n.inDType(zp)) << " but input " << of << " has "
              << dtypeOnnxName(n.inDType(of));
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

void inferQLinearMatMul(ir::Node &n) {
  requireInputType(n, 0, "a", {DType::I8, DType::U8});
  requireInputType(n, 3, "b", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 5, 3);
  requireInputType(n, 7, "y_zero_point", {DType::I8, DType::U8});
  for (size_t i : {1, 4, 6}) {
    requireInputType(n, i, "a scale", {DType::F32, DType::F16, DType::BF16});
    if (n.inDType(i) != n.inDType(1))
      n.error() << "scales must share one type";
  }
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
  requireInputType(n, 0, "x", {DType::I8, DType::U8});
  requireInputType(n, 3, "w", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 5, 3);
  requireInputType(n, 7, "y_zero_point", {DType::I8, DType::U8});
  for (size_t i : {1, 4, 6}) {
    requireInputType(n, i, "a scale", {DType::F32, DType::F16, DType::BF16});
    if (n.inDType(i) != n.inDType(1))
      n.error() << "scales must share one type";
  }
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

MLCC_OPS(Quantize) {
  R.add({.Name = "QuantizeLinear", .SinceVersion = 10, .Fusion = FusionClass::Injective,
         .Infer = inferQuantize, .Lower = lowerQuantize});
  R.add({.Name = "DequantizeLinear", .SinceVersion = 10,
         .Fusion = FusionClass::Injective, .Infer = inferDequantize,
         .Lower = lowerDequantize});
  R.add({.Name = "DynamicQuantizeLinear", .SinceVersion = 11,
         .Fusion = FusionClass::Opaque, .Infer = inferDynamicQuantize,
         .Lower = lowerDynamicQuantize});
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
