//===- Optional.cpp - Optional, OptionalHasElement, OptionalGetElement ----===//
//
// mlcc has no optional type: an optional that holds a tensor is that tensor,
// and an empty optional is an omitted input. So Optional of a tensor and
// OptionalGetElement are views of their input, and OptionalHasElement is
// true exactly when its input is present (a compile-time constant). An
// empty Optional (no input, only the `type` attribute) cannot be
// represented and is rejected as unsupported.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferOptional(ir::Node &n) {
  if (!n.hasInput(0))
    n.error(ErrorKind::Unsupported)
        << "empty optionals (no input) are not supported";
  n.setOutput(0, n.inType(0));
}

void inferGetElement(ir::Node &n) {
  if (!n.hasInput(0))
    n.error() << "the input is required";
  n.setOutput(0, n.inType(0));
}

void inferHasElement(ir::Node &n) { n.setOutput(0, DType::Bool, {}); }

void lowerHasElement(LowerCtx &c) {
  c.out(0).storeFlat(indexConst(0), boolConst(c.hasIn(0)));
}

} // namespace

MLCC_OPS(Optional) {
  R.add({.Name = "Optional", .SinceVersion = 15, .Fusion = FusionClass::View,
         .Infer = inferOptional});
  R.add({.Name = "OptionalGetElement", .SinceVersion = 15,
         .Fusion = FusionClass::View, .Infer = inferGetElement});
  R.add({.Name = "OptionalHasElement", .SinceVersion = 15,
         .Fusion = FusionClass::Opaque, .Infer = inferHasElement,
         .Lower = lowerHasElement});
}

} // namespace mlcc::ops
