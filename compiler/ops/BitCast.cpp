//===- BitCast.cpp - BitCast ----------------------------------------------===//
//
// BitCast (opset 26) reinterprets each element's bits as another type of the
// same width. The bytes do not change, so it is a View op: the output shares
// the input's storage (kernels read it with the output's element type), and
// constant folding keeps the bytes under the new type. This covers every
// pair of storable types of equal width, floats included (NaN payloads and
// all); bool reinterprets as the 8-bit integers.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

namespace {

DType bitcastTarget(const ir::Node &n) {
  int64_t code = n.requireInt("to");
  std::optional<DType> t = dtypeFromOnnx(code);
  if (!t || *t == DType::String || *t == DType::Undefined)
    n.error() << "attribute 'to' (" << code << ") is not a valid target type";
  return *t;
}

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
  if (!isStorable(from) || !isStorable(to))
    n.error(ErrorKind::Unsupported)
        << "bitcast from " << dtypeOnnxName(from) << " to " << dtypeOnnxName(to)
        << " is not supported";
  n.setOutput(0, to, n.inShape(0));
}

} // namespace

MLCC_OPS(BitCast) {
  R.add({.Name = "BitCast", .SinceVersion = 26, .Fusion = FusionClass::View,
         .Infer = inferBitCast});
}

} // namespace mlcc::ops
