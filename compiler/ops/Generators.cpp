//===- Generators.cpp - Shape, Size, ConstantOfShape, Range, EyeLike, ... -===//
//
// Ops whose outputs are computed from shapes and attributes rather than from
// input data (Shape, Size, EyeLike never read their input's elements; their
// kernels store constants, so they fold at compile time), Range (its shape
// depends on its input values, which must be constants), and Dropout in
// inference mode (a copy, with an all-true mask).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

/// A constant of storage type `t` in its compute type.
Expr typedConstant(DType t, double f, int64_t i) {
  DType ct = computeType(t);
  return isFloat(t) ? constant(ct, f) : constantInt(ct, i);
}

// --- Shape -------------------------------------------------------------------

/// The [start, end) range of dimensions Shape returns (opset 15 attributes).
std::pair<int64_t, int64_t> shapeRange(const ir::Node &n) {
  int64_t r = (int64_t)n.inShape(0).size();
  if (n.Opset < 15)
    return {0, r};
  int64_t start = n.attrInt("start", 0), end = n.attrInt("end", r);
  auto clampAxis = [r](int64_t a) {
    if (a < 0)
      a += r;
    return std::clamp<int64_t>(a, 0, r);
  };
  start = clampAxis(start);
  end = clampAxis(end);
  return {start, std::max(start, end)};
}

void inferShape(ir::Node &n) {
  auto [start, end] = shapeRange(n);
  n.setOutput(0, DType::I64, {end - start});
}

void lowerShape(LowerCtx &c) {
  auto [start, end] = shapeRange(c.node());
  const Shape &dims = c.node().inShape(0);
  TensorRef y = c.out(0);
  for (int64_t i = start; i < end; ++i)
    y.storeFlat(indexConst(i - start), constantInt(DType::I64, dims[(size_t)i]));
}

// --- Size --------------------------------------------------------------------

void inferSize(ir::Node &n) { n.setOutput(0, DType::I64, {}); }

void lowerSize(LowerCtx &c) {
  TensorRef y = c.out(0);
  y.storeFlat(indexConst(0),
              constantInt(DType::I64, numElements(c.node().inShape(0))));
}

// --- ConstantOfShape -----------------------------------------------------------

TensorPtr constantOfShapeValue(const ir::Node &n) {
  if (!n.hasAttr("value"))
    return nullptr;
  TensorPtr v = n.requireTensor("value");
  if (v->numel() != 1)
    n.error() << "attribute 'value' must have one element, got "
              << v->numel();
  return v;
}

void inferConstantOfShape(ir::Node &n) {
  if (n.inDType(0) != DType::I64)
    n.error() << "input 0 has type " << dtypeOnnxName(n.inDType(0))
              << "; int64 is required";
  if (n.inShape(0).size() != 1)
    n.error() << "input 0 must be 1-D, got shape " << shapeToString(n.inShape(0));
  std::vector<int64_t> dims =
      n.constInputInts(0, "it is the output shape");
  for (int64_t d : dims)
    if (d < 0)
      n.error() << "negative dimension " << d << " in shape "
                << shapeToString(dims);
  TensorPtr v = constantOfShapeValue(n);
  DType t = v ? v->dtype() : DType::F32;
  if (!isStorable(t))
    n.error(ErrorKind::Unsupported) << "value of type " << dtypeOnnxName(t)
                                    << " is not supported";
  n.setOutput(0, t, dims);
}

void lowerConstantOfShape(LowerCtx &c) {
  TensorPtr v = constantOfShapeValue(c.node());
  TensorRef y = c.out(0);
  Expr value = v ? typedConstant(v->dtype(), v->doubleAt(0), v->intAt(0))
                 : constant(DType::F32, 0.0);
  c.b().loop("i", y.numel(), [&](Expr i) { y.storeFlat(i, value); });
}

// --- Range ---------------------------------------------------------------------

void checkRangeInputs(const ir::Node &n) {
  DType t = n.inDType(0);
  if (!isFloat(t) && t != DType::I16 && t != DType::I32 && t != DType::I64)
    n.error(ErrorKind::Unsupported)
        << "input 0 has type " << dtypeOnnxName(t)
        << "; float, double, int16, int32 or int64 is required";
  requireSameDTypes(n);
  for (size_t i = 0; i < 3; ++i)
    if (n.inType(i).numel() != 1)
      n.error() << "input " << i << " must be a scalar, got shape "
                << shapeToString(n.inShape(i));
}

int64_t rangeCount(const ir::Node &n) {
  const char *why = "the number of elements depends on it";
  TensorPtr s = n.constInput(0, why), l = n.constInput(1, why),
            d = n.constInput(2, why);
  DType t = n.inDType(0);
  if (isFloat(t)) {
    double start = s->doubleAt(0), limit = l->doubleAt(0), delta = d->doubleAt(0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) ||
        !std::isfinite(delta))
      n.error() << "delta must be non-zero and all inputs finite";
    // The count is computed in the inputs' own precision.
    double q = t == DType::F64 ? (limit - start) / delta
                               : (double)(((float)limit - (float)start) / (float)delta);
    return std::max<int64_t>((int64_t)std::ceil(q), 0);
  }
  int64_t start = s->intAt(0), limit = l->intAt(0), delta = d->intAt(0);
  if (delta == 0)
    n.error() << "delta must be non-zero";
  int64_t span = limit - start;
  int64_t q = span / delta;
  if (span % delta != 0 && ((span < 0) == (delta < 0)))
    ++q; // ceil for a positive quotient
  return std::max<int64_t>(q, 0);
}

void inferRange(ir::Node &n) {
  checkRangeInputs(n);
  n.setOutput(0, n.inDType(0), {rangeCount(n)});
}

void lowerRange(LowerCtx &c) {
  TensorRef start = c.in(0), delta = c.in(2), y = c.out(0);
  DType ct = y.computeType();
  Expr s = start.loadFlat(indexConst(0)), d = delta.loadFlat(indexConst(0));
  c.b().loop("i", y.numel(), [&](Expr i) {
    y.storeFlat(i, s + cast(ct, i) * d);
  });
}

// --- EyeLike -------------------------------------------------------------------

DType eyeLikeType(const ir::Node &n) {
  if (!n.hasAttr("dtype"))
    return n.inDType(0);
  auto t = dtypeFromOnnx(n.attrInt("dtype", 0));
  if (!t)
    n.error() << "attribute 'dtype' has unknown data type " << n.attrInt("dtype", 0);
  return *t;
}

void inferEyeLike(ir::Node &n) {
  if (n.inShape(0).size() != 2)
    n.error() << "input must be 2-D, got shape " << shapeToString(n.inShape(0));
  DType t = eyeLikeType(n);
  if (!isFloat(t) && !isInteger(t) && t != DType::Bool)
    n.error(ErrorKind::Unsupported) << "output type " << dtypeOnnxName(t)
                                    << " is not supported";
  n.setOutput(0, t, n.inShape(0));
}

void lowerEyeLike(LowerCtx &c) {
  int64_t k = c.node().attrInt("k", 0);
  TensorRef y = c.out(0);
  DType t = y.dtype();
  Expr one = typedConstant(t, 1, 1), zero = typedConstant(t, 0, 0);
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    y.store(o, select(eq(o[1] - o[0], indexConst(k)), one, zero));
  });
}

// --- Dropout -------------------------------------------------------------------

/// Whether the node asks for a random (training) dropout; such nodes are
/// rejected, all others are the identity.
void checkDropoutInference(const ir::Node &n) {
  if (n.Opset < 12 || !n.hasInput(2))
    return;
  if (n.inDType(2) != DType::Bool)
    n.error() << "training_mode has type " << dtypeOnnxName(n.inDType(2))
              << "; bool is required";
  TensorPtr mode = n.constInput(2, "training mode makes dropout random");
  if (mode->numel() < 1 || mode->intAt(0) == 0)
    return;
  double ratio = 0.5;
  if (n.hasInput(1))
    ratio = n.constInput(1, "the dropout ratio in training mode")->doubleAt(0);
  if (ratio > 0)
    n.error(ErrorKind::Unsupported)
        << "training mode with a non-zero ratio (random dropout) is not "
           "supported";
}

void inferDropout(ir::Node &n) {
  requireFloat(n, 0);
  checkDropoutInference(n);
  n.setOutput(0, n.inType(0));
  // The mask is bool from opset 10, the data type before.
  n.setOutput(1, n.Opset >= 10 ? DType::Bool : n.inDType(0), n.inShape(0));
}

void lowerDropout(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  std::optional<TensorRef> mask;
  if (c.hasOut(1))
    mask = c.out(1);
  c.b().loop("i", x.numel(), [&](Expr i) {
    y.storeFlat(i, x.loadFlat(i));
    if (mask)
      mask->storeFlat(i, typedConstant(mask->dtype(), 1, 1));
  });
}

} // namespace

MLCC_OPS(Generators) {
  R.add({.Name = "Shape", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferShape, .Lower = lowerShape});
  R.add({.Name = "Size", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferSize, .Lower = lowerSize});
  R.add({.Name = "ConstantOfShape", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferConstantOfShape, .Lower = lowerConstantOfShape});
  R.add({.Name = "Range", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferRange, .Lower = lowerRange});
  R.add({.Name = "EyeLike", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferEyeLike, .Lower = lowerEyeLike});
  R.add({.Name = "Dropout", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferDropout, .Lower = lowerDropout});
}

} // namespace mlcc::ops
