//===- Cast.cpp - Cast and CastLike ---------------------------------------===//
//
// Conversions between the storable types (floats, float8, float4e2m1,
// integers of 2 to 64 bits, bool). Float to integer conversion truncates
// toward zero and saturates (NaN -> 0), integer to integer wraps, anything to
// bool tests for non-zero. To int4/uint4/int2/uint2 every value wraps to
// the low bits (a float truncated to an integer first), and to float4e2m1 a
// float rounds to nearest even, saturating (kir::expandSubByte, compiler/kernel/SubByte.cpp).
// Strings are not supported.
//
// float8 targets: the kernel IR conversion f32 -> float8 rounds to nearest
// even and never saturates (out of range -> inf for E5M2, NaN otherwise; see
// compiler/support/Float8.h), so that loading and storing float8 data is
// exact. The `saturate` attribute (default 1) is therefore implemented here:
// the value, converted to f32, is clamped to [-max, max] of the target before
// the conversion (the NaN-propagating clamp keeps NaN). With saturate=0 the
// plain conversion already gives the spec's table.
//
// float8e8m0 has one conversion in kernel IR: round up, saturate (Cast's
// defaults); other `round_mode`/`saturate` combinations are rejected.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"
#include "compiler/support/Float8.h"

namespace mlcc::ops {

using namespace kir;

namespace {

/// The target type of a Cast: an integer code from opset 6, a type name
/// ("FLOAT", "INT64", ...) before.
DType castTarget(const ir::Node &n) {
  const ir::Attribute *a = n.attr("to");
  if (!a)
    n.error() << "attribute 'to' is required";
  std::optional<DType> t;
  if (a->Kind == ir::AttrKind::String) {
    static const std::pair<const char *, DType> names[] = {
        {"FLOAT", DType::F32},     {"UINT8", DType::U8},
        {"INT8", DType::I8},       {"UINT16", DType::U16},
        {"INT16", DType::I16},     {"INT32", DType::I32},
        {"INT64", DType::I64},     {"STRING", DType::String},
        {"BOOL", DType::Bool},     {"FLOAT16", DType::F16},
        {"DOUBLE", DType::F64},    {"UINT32", DType::U32},
        {"UINT64", DType::U64},    {"COMPLEX64", DType::C64},
        {"COMPLEX128", DType::C128}, {"BFLOAT16", DType::BF16}};
    for (auto &[name, dt] : names)
      if (a->S == name)
        t = dt;
    if (!t)
      n.error() << "unknown type name '" << a->S << "' in attribute 'to'";
  } else if (a->Kind == ir::AttrKind::Int) {
    t = dtypeFromOnnx(a->I);
    if (!t)
      n.error() << "attribute 'to' has unknown data type " << a->I;
  } else {
    n.error() << "attribute 'to' must be an integer, got "
              << ir::attrKindName(a->Kind);
  }
  return *t;
}

void checkCastTypes(const ir::Node &n, DType from, DType to) {
  if (!isStorable(from))
    n.error(ErrorKind::Unsupported) << "casting from " << dtypeOnnxName(from)
                                    << " is not supported";
  if (!isStorable(to))
    n.error(ErrorKind::Unsupported) << "casting to " << dtypeOnnxName(to)
                                    << " is not supported";
  int64_t sat = n.attrInt("saturate", 1);
  if (sat != 0 && sat != 1)
    n.error() << "attribute 'saturate' must be 0 or 1, got " << sat;
  std::string mode = n.attrString("round_mode", "up");
  if (mode != "up" && mode != "down" && mode != "nearest")
    n.error() << "attribute 'round_mode' must be up, down or nearest, got '"
              << mode << "'";
  if (to == DType::F8E8M0 && from != to && (mode != "up" || sat == 0))
    n.error(ErrorKind::Unsupported)
        << "casting to float8e8m0 is only supported with round_mode 'up' and "
           "saturate=1";
}

/// Whether the conversion to `to` clamps to its finite range first.
bool saturates(const ir::Node &n, DType to) {
  return isFloat8(to) && to != DType::F8E8M0 && n.attrInt("saturate", 1) != 0;
}

void inferCast(ir::Node &n) {
  DType to = castTarget(n);
  checkCastTypes(n, n.inDType(0), to);
  n.setOutput(0, to, n.inShape(0));
}

void inferCastLike(ir::Node &n) {
  DType to = n.inDType(1);
  checkCastTypes(n, n.inDType(0), to);
  n.setOutput(0, to, n.inShape(0));
}

/// The element a Cast computes, in the input's compute type (the fused
/// chain converts it to the output type, as a store would): the value,
/// clamped first for a saturating float8 target.
Expr castScalar(const ir::Node &n, const std::vector<Expr> &a) {
  DType to = n.Outputs[0]->Type.Type;
  if (saturates(n, to) && n.inDType(0) != to) {
    double mx = float8MaxValue(to);
    return clamp(cast(DType::F32, a[0]), constant(DType::F32, -mx), constant(DType::F32, mx));
  }
  return a[0];
}

void lowerCast(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  // Loads give the compute type (f16/bf16/float8 widen exactly to f32); the
  // store converts to the target type.
  if (saturates(c.node(), y.dtype()) && x.dtype() != y.dtype()) {
    double mx = float8MaxValue(y.dtype());
    Expr lo = constant(DType::F32, -mx), hi = constant(DType::F32, mx);
    lowerMap(c, x, y, [&](Expr v) { return clamp(cast(DType::F32, v), lo, hi); });
    return;
  }
  lowerMap(c, x, y, [](Expr v) { return v; });
}

} // namespace

MLCC_OPS(Cast) {
  R.add({.Name = "Cast", .SinceVersion = 1, .Fusion = FusionClass::Elementwise,
         .Infer = inferCast, .Lower = lowerCast, .Scalar = castScalar, .RunTimeExtents = true,
         .DenseOperands = true});
  R.add({.Name = "CastLike", .SinceVersion = 15, .Fusion = FusionClass::Elementwise,
         .Infer = inferCastLike, .Lower = lowerCast, .Scalar = castScalar,
         .RunTimeExtents = true,
         .DenseOperands = true});
}

} // namespace mlcc::ops
