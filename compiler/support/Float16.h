//===- Float16.h - Bit-exact half and bfloat16 conversions ----------------===//
//
// Host-side conversions used by the frontend, the interpreter and constant
// folding. Rounding is to nearest, ties to even; NaN stays NaN.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <cstring>

namespace mlcc {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) // inf or NaN
    return bitsToFloat(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return bitsToFloat(sign);
    // Subnormal half: value = man * 2^-24.
    float v = (float)man * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bitsToFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or NaN
    return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  if (absx >= 0x477ff000u) // rounds to a value beyond the largest half
    return (uint16_t)(sign | 0x7c00u);
  if (absx < 0x38800000u) { // below the smallest normal half (2^-14)
    // Subnormal or zero: scale to units of 2^-24 and round to nearest even.
    float a = bitsToFloat(absx) * 16777216.0f;
    uint32_t n = (uint32_t)a;
    float rem = a - (float)n;
    if (rem > 0.5f || (rem == 0.5f && (n & 1u)))
      n++;
    return (uint16_t)(sign | n);
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    h++; // may carry into the exponent, which is the correct rounding
  return (uint16_t)(sign | h);
}

inline float bfloat16ToFloat(uint16_t b) { return bitsToFloat((uint32_t)b << 16); }

inline uint16_t floatToBfloat16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u); // quiet NaN
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return (uint16_t)(x >> 16);
}

} // namespace mlcc
