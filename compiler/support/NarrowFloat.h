//===- NarrowFloat.h - The narrow float types by DType --------------------===//
//
// f16, bf16 and the float8 types (isNarrowFloat) are stored as bit patterns
// and computed with in f32. Code that holds one of them as a DType (constant
// folding, tensor access, the emitters' constants) converts through these
// two functions, which choose the conversion of Float16.h or Float8.h; none
// restates the choice. The generated code spells the same conversions in its
// own language (the C prelude's mlcc_f2h, ..., the LLVM emitter's helper
// functions), bit for bit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/support/DType.h"
#include "compiler/support/Float16.h"
#include "compiler/support/Float8.h"

#include <cstdint>

namespace mlcc {

/// The bits that store `v` in the narrow float type `t` (16 or 8 of them):
/// rounded to nearest even, float8 without saturation (see Float8.h).
inline uint32_t floatToNarrowBits(DType t, float v) {
  switch (t) {
  case DType::F16:
    return floatToHalf(v);
  case DType::BF16:
    return floatToBfloat16(v);
  default:
    return floatToFloat8(t, v);
  }
}

/// The value of the bits `bits` of the narrow float type `t`, exactly.
inline float narrowBitsToFloat(DType t, uint32_t bits) {
  switch (t) {
  case DType::F16:
    return halfToFloat((uint16_t)bits);
  case DType::BF16:
    return bfloat16ToFloat((uint16_t)bits);
  default:
    return float8ToFloat(t, (uint8_t)bits);
  }
}

} // namespace mlcc
