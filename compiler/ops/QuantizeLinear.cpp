//===- QuantizeLinear.cpp - QuantizeLinear, DequantizeLinear, Dynamic... -===//
//
// Linear (de)quantization with per-tensor, per-axis and blocked scales;
// DynamicQuantizeLinear (uint8, scale from the data's range).
//
// Quantized types: 8/16/32-bit integers and the four float8 types (E4M3FN,
// E4M3FNUZ, E5M2, E5M2FNUZ). Quantizing to float8 computes
// x / y_scale + y_zero_point in f32 and converts it with round to nearest
// even; `saturate` (default 1) clamps to the type's finite range first, as in
// Cast (the plain kernel IR conversion does not saturate). 4- and 2-bit
// integers saturate to their ranges like the 8-bit ones; float4e2m1 is
// computed like float8 (its conversion always saturates, at +-6).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Requantization.h"
#include "compiler/support/Float8.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

using namespace requant;

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
  requireType(n, out, "the output",
                   {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32,
                    DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2,
                    DType::F8E5M2FNUZ, DType::I4, DType::U4, DType::I2, DType::U2,
                    DType::F4E2M1});
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
    if (isFloat8(out) || out == DType::F4E2M1) {
      // No integer rounding: the float8 conversion rounds (to nearest even).
      Expr v = cast(DType::F32, q);
      if (zp)
        v = v + cast(DType::F32, loadParam(*zp, g, i));
      if (n.attrInt("saturate", 1) != 0 && isFloat8(out)) {
        double mx = float8MaxValue(out);
        v = clamp(v, constant(DType::F32, -mx), constant(DType::F32, mx));
      }
      y.store(i, v);
      return;
    }
    if (pt == DType::F32 && (out == DType::U8 || out == DType::I8)) {
      // 8-bit output of an f32 quotient: clamped to [lo - zp, hi - zp] in
      // f32, rounded with the f32 bit trick (requant::roundSmallF32), zp
      // added; NaN gives 0 like the saturating conversion.
      auto [lo, hi] = intRange(out);
      Expr zi = zp ? cast(DType::I32, loadParam(*zp, g, i)) : constantInt(DType::I32, 0);
      Expr zf = cast(DType::F32, zi);
      Expr r = roundSmallF32(clamp(q, constant(DType::F32, lo) - zf,
                                   constant(DType::F32, hi) - zf)) + zi;
      y.store(i, select(unary(UnOp::IsNaN, q), constantInt(DType::I32, 0), r));
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
                    DType::F8E5M2FNUZ, DType::I4, DType::U4, DType::I2, DType::U2,
                    DType::F4E2M1});
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

} // namespace


MLCC_OPS(QuantizeLinear) {
  R.add({.Name = "QuantizeLinear", .SinceVersion = 10, .Fusion = FusionClass::Injective,
         .Infer = inferQuantize, .Lower = lowerQuantize});
  R.add({.Name = "DequantizeLinear", .SinceVersion = 10,
         .Fusion = FusionClass::Injective, .Infer = inferDequantize,
         .Lower = lowerDequantize});
  R.add({.Name = "DynamicQuantizeLinear", .SinceVersion = 11,
         .Fusion = FusionClass::Opaque, .Infer = inferDynamicQuantize,
         .Lower = lowerDynamicQuantize});
}

} // namespace mlcc::ops
