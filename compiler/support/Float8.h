//===- Float8.h - Bit-exact float8 conversions ----------------------------===//
//
// Host-side conversions between f32 and the ONNX 8-bit float formats, used by
// the frontend, the interpreter (ScalarEval) and constant folding. The C
// emitter's prelude (mlcc_f8_to_f, mlcc_f_to_f8, mlcc_e8m0_to_f,
// mlcc_f_to_e8m0) and the LLVM emitter's helpers (mlcc.<type>2f, mlcc.f2<type>,
// branchless with selects) translate these functions step by step and must
// stay bit-identical to them.
//
//   format      exp/man bias  inf          NaN                  max finite
//   E4M3FN      4/3     7     none         S.1111.111           448
//   E4M3FNUZ    4/3     8     none         0x80 (the "-0")      240
//   E5M2        5/2     15    S.11111.00   S.11111.{01,10,11}   57344
//                                          (encodes S.11111.10)
//   E5M2FNUZ    5/2     16    none         0x80 (the "-0")      57344
//   E8M0        8/0     127   none         0xff                 2^127
//
// f32 -> float8 (floatToFloat8) rounds to nearest, ties to even, and does NOT
// saturate: a value whose rounded magnitude exceeds the largest finite one
// (infinities included) becomes infinity (E5M2) or NaN (the other formats);
// NaN stays NaN (the sign is kept where the format has signed NaNs); zero and
// values that round to zero keep their sign except in the FNUZ formats, which
// have no negative zero. This is the one conversion of kernel IR (a Cast to a
// float8 type and a Store to a float8 buffer), so a float8 value that is
// loaded and stored again keeps its exact bits, infinities included.
// Saturation (the default of ONNX Cast and QuantizeLinear) is expressed by the
// ops that want it: they clamp the f32 value to +-float8MaxValue() first, which
// leaves NaN unchanged (see floatToFloat8Saturate, the reference for that).
//
// E8M0 (unsigned powers of two) has a single conversion too: the value rounds
// up to the next power of two (ONNX Cast's default round_mode "up") and
// saturates to [2^-127, 2^127] (the default saturate=1); zero becomes 2^-127,
// NaN becomes 0xff, infinities 2^127. The sign is ignored (negative inputs are
// unspecified in ONNX).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/support/DType.h"
#include "compiler/support/Float16.h"

#include <cstdint>

namespace mlcc {

/// Parameters of the four sign/exponent/mantissa float8 formats (not E8M0).
struct Float8Format {
  unsigned ManBits;  ///< explicit mantissa bits
  int Bias;          ///< exponent bias
  uint32_t MaxCode;  ///< magnitude bits of the largest finite value
  bool Fnuz;         ///< NaN is 0x80; no negative zero, no infinity
  bool HasInf;       ///< E5M2: 0x7c is infinity
};

/// The format of a signed float8 type; t must not be E8M0.
inline Float8Format float8Format(DType t) {
  switch (t) {
  case DType::F8E4M3FN: return {3, 7, 0x7eu, false, false};
  case DType::F8E4M3FNUZ: return {3, 8, 0x7fu, true, false};
  case DType::F8E5M2: return {2, 15, 0x7bu, false, true};
  default: return {2, 16, 0x7fu, true, false}; // F8E5M2FNUZ
  }
}

/// Code of NaN (with the sign bit `sign`, 0 or 0x80, where NaN is signed).
/// E5M2 uses the quiet NaN S.11111.10, the top byte of f16's 0x7e00.
inline uint32_t float8NaNCode(const Float8Format &f, uint32_t sign) {
  if (f.Fnuz)
    return 0x80u;
  return sign | (f.HasInf ? 0x7eu : 0x7fu);
}

/// Code that an overflowing value of sign `sign` becomes without saturation.
inline uint32_t float8OverflowCode(const Float8Format &f, uint32_t sign) {
  if (f.Fnuz)
    return 0x80u;
  return sign | (f.HasInf ? 0x7cu : 0x7fu);
}

inline float e8m0ToFloat(uint8_t c) {
  if (c == 0xffu)
    return bitsToFloat(0x7fc00000u);
  if (c == 0)
    return bitsToFloat(0x00400000u); // 2^-127, an f32 subnormal
  return bitsToFloat((uint32_t)c << 23);
}

inline uint8_t floatToE8M0(float v) {
  uint32_t ax = floatBits(v) & 0x7fffffffu;
  if (ax > 0x7f800000u) // NaN
    return 0xffu;
  if (ax <= 0x00400000u) // at most 2^-127 (zero included): the smallest code
    return 0;
  // Round up: the exponent field, plus one unless the mantissa is zero (an
  // f32 subnormal above 2^-127 thereby becomes code 1, 2^-126). Saturate at
  // 2^127 (infinity included).
  uint32_t e = (ax >> 23) + ((ax & 0x7fffffu) != 0 ? 1u : 0u);
  return (uint8_t)(e > 254u ? 254u : e);
}

/// Decodes a float8 code of type `t` exactly to f32.
inline float float8ToFloat(DType t, uint8_t c) {
  if (t == DType::F8E8M0)
    return e8m0ToFloat(c);
  Float8Format f = float8Format(t);
  uint32_t code = c, sign = (code & 0x80u) << 24;
  uint32_t expBits = 7 - f.ManBits;
  uint32_t e = (code >> f.ManBits) & ((1u << expBits) - 1u);
  uint32_t m = code & ((1u << f.ManBits) - 1u);
  bool nan = f.Fnuz ? code == 0x80u : (!f.HasInf && (code & 0x7fu) == 0x7fu);
  if (nan)
    return bitsToFloat(sign | 0x7fc00000u);
  if (f.HasInf && e == (1u << expBits) - 1u) // E5M2 infinity or NaN
    return bitsToFloat(sign | 0x7f800000u | (m != 0 ? 0x400000u : 0u));
  if (e == 0) {
    // Subnormal: m units of 2^(1 - bias - ManBits), exactly representable.
    float v = (float)m * bitsToFloat((uint32_t)(127 + 1 - f.Bias - (int)f.ManBits) << 23);
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((e + 127u - (uint32_t)f.Bias) << 23) |
                     (m << (23u - f.ManBits)));
}

/// Encodes f32 to float8 type `t`: round to nearest even, no saturation (see
/// the file comment; E8M0 rounds up and saturates).
inline uint8_t floatToFloat8(DType t, float v) {
  if (t == DType::F8E8M0)
    return floatToE8M0(v);
  Float8Format f = float8Format(t);
  uint32_t x = floatBits(v);
  uint32_t sign = (x >> 24) & 0x80u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u)
    return (uint8_t)float8NaNCode(f, sign);
  uint32_t code;
  if (ax < (uint32_t)(127 + 1 - f.Bias) << 23) {
    // Below the smallest normal: scale to units of the smallest subnormal
    // (exact) and round half to even. n + 1 == 2^ManBits is the smallest
    // normal, which is the right code.
    float a = bitsToFloat(ax) * bitsToFloat((uint32_t)(127 + f.Bias - 1 + (int)f.ManBits) << 23);
    uint32_t n = (uint32_t)a;
    float r = a - (float)n;
    if (r > 0.5f || (r == 0.5f && (n & 1u)))
      n++;
    code = n;
  } else {
    // Rebias the exponent and round the mantissa half to even; a carry into
    // the exponent is the correct rounding. Infinity lands far above MaxCode.
    uint32_t shift = 23u - f.ManBits;
    uint32_t adj = ax - ((uint32_t)(127 - f.Bias) << 23);
    code = adj >> shift;
    uint32_t rest = adj & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (code & 1u)))
      code++;
  }
  if (code > f.MaxCode)
    return (uint8_t)float8OverflowCode(f, sign);
  if (code == 0 && f.Fnuz)
    return 0;
  return (uint8_t)(sign | code);
}

/// Largest finite value of a float8 type.
inline float float8MaxValue(DType t) {
  if (t == DType::F8E8M0)
    return e8m0ToFloat(0xfeu);
  return float8ToFloat(t, (uint8_t)float8Format(t).MaxCode);
}

/// The saturating conversion of ONNX Cast/QuantizeLinear (saturate=1): NaN
/// stays NaN, magnitudes above the largest finite value (infinities included)
/// become it, everything else rounds like floatToFloat8. Lowerings implement
/// it as floatToFloat8(clamp(v, -max, max)); this is the host reference.
inline uint8_t floatToFloat8Saturate(DType t, float v) {
  float mx = float8MaxValue(t);
  if (v > mx)
    v = mx;
  else if (v < -mx)
    v = -mx;
  return floatToFloat8(t, v);
}

} // namespace mlcc
