//===- SubByte.h - Packed 4- and 2-bit elements on the host ---------------===//
//
// int4, uint4, float4e2m1, int2 and uint2 elements as ONNX stores them:
// packed, element i in the bits from (i % per) * bits of byte i / per, with
// per = 8 / bits (low bits first). An element's *code* is its bits; its value
// is the integer they encode (two's complement for int4/int2) or the
// float4e2m1 number (1 sign, 2 exponent, 1 mantissa bit: 0, 0.5, 1, 1.5, 2,
// 3, 4, 6 and their negatives; no infinity, no NaN).
//
// Conversions (the semantics of Cast, which kernel IR's expansion in
// compiler/kernel/SubByte.cpp computes the same way):
// - to int4/uint4/int2/uint2: an integer keeps its low bits (two's
//   complement wrap-around: 9 -> int4 -7); a float truncates toward zero to
//   an integer first.
// - to float4e2m1: round to nearest, ties to even, saturating at +-6
//   (infinities too); NaN becomes 0x8 (as the ONNX reference does).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/support/DType.h"

#include <cmath>
#include <cstdint>

namespace mlcc {

/// Elements of a sub-byte type in one byte (2 or 4).
inline int64_t subBytePerByte(DType t) { return 8 / (int64_t)dtypeBits(t); }

/// The code (bits) of element `i` of packed data.
inline uint8_t subByteCode(const uint8_t *data, DType t, int64_t i) {
  int64_t per = subBytePerByte(t);
  unsigned bits = dtypeBits(t), shift = (unsigned)(i % per) * bits;
  return (uint8_t)((data[i / per] >> shift) & ((1u << bits) - 1));
}

/// Sets the code of element `i`, leaving the other elements of its byte.
inline void setSubByteCode(uint8_t *data, DType t, int64_t i, uint8_t code) {
  int64_t per = subBytePerByte(t);
  unsigned bits = dtypeBits(t), shift = (unsigned)(i % per) * bits;
  uint8_t mask = (uint8_t)(((1u << bits) - 1) << shift);
  data[i / per] = (uint8_t)((data[i / per] & ~mask) | ((code << shift) & mask));
}

/// The float4e2m1 number of a code.
inline double float4e2m1Value(uint8_t code) {
  static const double Magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  double m = Magnitudes[code & 7];
  return (code & 8) ? -m : m;
}

/// The float4e2m1 code nearest to `v` (ties to even, saturating; NaN: 0x8).
inline uint8_t float4e2m1Code(double v) {
  if (std::isnan(v))
    return 0x8;
  double a = std::fabs(v);
  // The midpoints between neighbouring magnitudes; a tie goes to the even
  // code (mantissa bit 0), so every other midpoint is inclusive.
  uint8_t m = (a > 0.25) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) +
              (a >= 3.5) + (a > 5.0);
  return (uint8_t)((std::signbit(v) ? 8 : 0) | m);
}

/// The value of a code of sub-byte type `t`.
inline double subByteValue(DType t, uint8_t code) {
  if (t == DType::F4E2M1)
    return float4e2m1Value(code);
  unsigned bits = dtypeBits(t);
  if (isSignedInt(t) && (code >> (bits - 1)) & 1)
    return (double)((int)code - (1 << bits));
  return (double)code;
}

/// The code of the integer `v` in sub-byte type `t` (its low bits).
inline uint8_t subByteFromInt(DType t, int64_t v) {
  if (t == DType::F4E2M1)
    return float4e2m1Code((double)v);
  return (uint8_t)((uint64_t)v & ((1u << dtypeBits(t)) - 1));
}

/// The code of `v` in sub-byte type `t` (integers: truncated toward zero,
/// NaN and values beyond int64 as the other integer conversions of constant
/// folding take them, then wrapped).
inline uint8_t subByteFromDouble(DType t, double v) {
  if (t == DType::F4E2M1)
    return float4e2m1Code(v);
  int64_t i = std::isnan(v) ? 0
              : v >= 9.2233720368547758e18  ? INT64_MAX
              : v <= -9.2233720368547758e18 ? INT64_MIN
                                            : (int64_t)v;
  return subByteFromInt(t, i);
}

} // namespace mlcc
