//===- BitCast.cpp - BitCast ----------------------------------------------===//
//
// BitCast (opset 26) reinterprets each element's bits as another type of the
// same width. Between integer types (and bool <-> 8-bit integers) the
// reinterpretation is the wrapping integer conversion the kernel IR's casts
// already perform, so it lowers to a cast.
//
// Reinterpreting floating-point bits as integers (or the reverse) has no
// kernel-IR expression: arithmetic cannot read or build NaN payloads, and
// f16/bf16 loads are widened to f32. Those pairs are rejected as
// unsupported until the kernel IR grows a bit-cast facility.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

DType bitcastTarget(const ir::Node &n) {
  int64_t code = n.requireInt("to");
  std::optional<DType> t = dtypeFromOnnx(code);
  if (!t || *t == DType::String || *t == DType::Undefined)
    n.error() << "attribute 'to' (" << code << ") is not a valid target type";
  return *t;
}

/// Types whose bits a wrapping integer conversion preserves.
bool isIntegerLike(DType t) { return isInteger(t) || t == DType::Bool; }

void inferBitCast(ir::Node &n) {
  DType from = n.inDType(0), to = bitcastTarget(n);
  if (from == DType::String)
    n.error() << "cannot bitcast from string";
  unsigned fb = dtypeBits(from), tb = dtypeBits(to);
  // Bool occupies one byte: it reinterprets as the 8-bit integer types.
  if (from == DType::Bool)
    fb = 8;
  if (to == DType::Bool)
    tb = 8;
  if (fb == 0 || tb == 0 || fb != tb)
    n.error() << "cannot bitcast " << dtypeOnnxName(from) << " to "
              << dtypeOnnxName(to) << ": the bit widths differ";
  if (!isStorable(from) || !isStorable(to) || !isIntegerLike(from) ||
      !isIntegerLike(to))
    n.error(ErrorKind::Unsupported)
        << "bitcast from " << dtypeOnnxName(from) << " to " << dtypeOnnxName(to)
        << " is not supported (only between integer and bool types: the kernel "
           "IR has no bit reinterpretation of floating-point values)";
  n.setOutput(0, to, n.inShape(0));
}

void lowerBitCast(LowerCtx &c) {
  DType to = c.node().Outputs[0]->Type.Type;
  lowerElementwise(c, [to](const std::vector<Expr> &a) { return cast(to, a[0]); });
}

} // namespace

MLCC_OPS(BitCast) {
  R.add({.Name = "BitCast", .SinceVersion = 26, .Fusion = FusionClass::Elementwise,
         .Infer = inferBitCast, .Lower = lowerBitCast});
}

} // namespace mlcc::ops
