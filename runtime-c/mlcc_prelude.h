/* mlcc_prelude.h - the helpers every C and CUDA source mlcc generates starts
   with: conversions and NaN-propagating min/max with the semantics of kernel
   IR (compiler/kernel/ScalarEval.h). targets/c/CEmitter.cpp embeds what
   follows this comment at build time. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef MLCC_PRELUDE_INCLUDED
#define MLCC_PRELUDE_INCLUDED
#if defined(__CUDACC__)
/* The same helpers as device functions (the CUDA target); inline functions
   with external linkage, so that nvcc does not warn about unused ones. */
#define MLCC_FN __device__ __forceinline__
#define MLCC_RESTRICT __restrict__
#define MLCC_NOINLINE
#define MLCC_ALIGNED __attribute__((aligned(64)))
#else
#define MLCC_FN static inline
#define MLCC_RESTRICT restrict
#if defined(__GNUC__)
#define MLCC_NOINLINE __attribute__((noinline))
#define MLCC_ALIGNED __attribute__((aligned(64)))
#else
#define MLCC_NOINLINE
#define MLCC_ALIGNED
#endif
#endif

typedef ptrdiff_t mlcc_idx;

MLCC_FN float mlcc_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
           m = h & 0x3ffu, bits;
  union { uint32_t u; float f; } v;
  if (e == 0x1fu) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    float r = (float)m * (1.0f / 16777216.0f);
    return sign ? -r : r;
  } else {
    bits = sign | ((e + 112u) << 23) | (m << 13);
  }
  v.u = bits;
  return v.f;
}

MLCC_FN uint16_t mlcc_f2h(float f) {
  union { uint32_t u; float f; } v;
  uint32_t x, sign, ax, h, rest;
  v.f = f;
  x = v.u;
  sign = (x >> 16) & 0x8000u;
  ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u)
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    float a, r;
    uint32_t n;
    v.u = ax;
    a = v.f * 16777216.0f;
    n = (uint32_t)a;
    r = a - (float)n;
    if (r > 0.5f || (r == 0.5f && (n & 1u)))
      n++;
    return (uint16_t)(sign | n);
  }
  h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);
  rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    h++;
  return (uint16_t)(sign | h);
}

MLCC_FN float mlcc_bf2f(uint16_t b) {
  union { uint32_t u; float f; } v;
  v.u = (uint32_t)b << 16;
  return v.f;
}

MLCC_FN uint16_t mlcc_f2bf(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  if ((v.u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((v.u >> 16) | 0x40u);
  return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

/* float8 <-> float, the same functions as compiler/support/Float8.h: m
   mantissa bits, exponent bias b, mx the magnitude code of the largest finite
   value; fnuz: NaN is 0x80 (no -0, no inf); inf: E5M2's infinities. float to
   float8 rounds to nearest even and does not saturate. E8M0 rounds up and
   saturates. */
/* The int8 dot products: the bytes of a (signed when sa, else unsigned)
   times the signed bytes of b, summed (kernel IR dot4 and sdot4). */
MLCC_FN int32_t mlcc_bytes_dot(int32_t a, int32_t b, int sa) {
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  int32_t s = 0;
  int j;
  for (j = 0; j < 4; ++j) {
    uint32_t x = ua >> (8 * j) & 0xffu;
    s += (sa ? (int32_t)(int8_t)(uint8_t)x : (int32_t)x) * (int32_t)(int8_t)(uint8_t)(ub >> (8 * j));
  }
  return s;
}
MLCC_FN int32_t mlcc_dot4(int32_t a, int32_t b) { return mlcc_bytes_dot(a, b, 0); }
MLCC_FN int32_t mlcc_sdot4(int32_t a, int32_t b) { return mlcc_bytes_dot(a, b, 1); }
/* Bytes 0 and 2 of v sign-extended into the 16-bit halves (kernel IR
   sext_bytes02; sext_bytes13 passes v >> 8). */
MLCC_FN int32_t mlcc_sxtb16(uint32_t v) {
  uint32_t lo = (uint16_t)(int16_t)(int8_t)(uint8_t)v;
  uint32_t hi = (uint16_t)(int16_t)(int8_t)(uint8_t)(v >> 16);
  return (int32_t)(lo | hi << 16);
}
/* The dual 16-bit product (kernel IR dot2): the signed halves of a times
   those of b, summed (wrapping like smlad's 32-bit sum). */
MLCC_FN int32_t mlcc_dot2(int32_t a, int32_t b) {
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  uint32_t lo = (uint32_t)((int32_t)(int16_t)(uint16_t)ua * (int32_t)(int16_t)(uint16_t)ub);
  uint32_t hi = (uint32_t)((int32_t)(int16_t)(uint16_t)(ua >> 16) * (int32_t)(int16_t)(uint16_t)(ub >> 16));
  return (int32_t)(lo + hi);
}

/* The high word of the signed 64-bit product (kernel IR mulhi): floor(a * b
   / 2^32), the arithmetic shift of a negative product written as a
   division that rounds down. */
MLCC_FN int32_t mlcc_mulhi(int32_t a, int32_t b) {
  int64_t p = (int64_t)a * (int64_t)b;
  return (int32_t)(p >= 0 ? p / 4294967296LL : -((-p + 4294967295LL) / 4294967296LL));
}

MLCC_FN float mlcc_bits2f(uint32_t u) {
  union { uint32_t u; float f; } v;
  v.u = u;
  return v.f;
}

MLCC_FN uint32_t mlcc_f2bits(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  return v.u;
}

MLCC_FN float mlcc_f8_to_f(uint8_t c8, uint32_t m, uint32_t b, uint32_t fnuz,
                                 uint32_t inf) {
  uint32_t c = c8, sign = (c & 0x80u) << 24, eb = 7u - m;
  uint32_t e = (c >> m) & ((1u << eb) - 1u), man = c & ((1u << m) - 1u);
  if (fnuz ? c == 0x80u : (!inf && (c & 0x7fu) == 0x7fu))
    return mlcc_bits2f(sign | 0x7fc00000u);
  if (inf && e == (1u << eb) - 1u)
    return mlcc_bits2f(sign | 0x7f800000u | (man != 0 ? 0x400000u : 0u));
  if (e == 0) {
    float v = (float)man * mlcc_bits2f((128u - b - m) << 23);
    return sign ? -v : v;
  }
  return mlcc_bits2f(sign | ((e + 127u - b) << 23) | (man << (23u - m)));
}

MLCC_FN uint8_t mlcc_f_to_f8(float f, uint32_t m, uint32_t b, uint32_t mx,
                                   uint32_t fnuz, uint32_t inf) {
  uint32_t x = mlcc_f2bits(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu, code;
  if (ax > 0x7f800000u)
    return (uint8_t)(fnuz ? 0x80u : (sign | (inf ? 0x7eu : 0x7fu)));
  if (ax < ((128u - b) << 23)) {
    float a = mlcc_bits2f(ax) * mlcc_bits2f((126u + b + m) << 23), r;
    uint32_t n = (uint32_t)a;
    r = a - (float)n;
    if (r > 0.5f || (r == 0.5f && (n & 1u)))
      n++;
    code = n;
  } else {
    uint32_t s = 23u - m, adj = ax - ((127u - b) << 23), rest, half;
    code = adj >> s;
    rest = adj & ((1u << s) - 1u);
    half = 1u << (s - 1u);
    if (rest > half || (rest == half && (code & 1u)))
      code++;
  }
  if (code > mx)
    return (uint8_t)(fnuz ? 0x80u : (sign | (inf ? 0x7cu : 0x7fu)));
  if (code == 0 && fnuz)
    return 0;
  return (uint8_t)(sign | code);
}

MLCC_FN float mlcc_e8m0_to_f(uint8_t c) {
  return mlcc_bits2f(c == 0xffu ? 0x7fc00000u : c == 0 ? 0x00400000u : (uint32_t)c << 23);
}

MLCC_FN uint8_t mlcc_f_to_e8m0(float f) {
  uint32_t ax = mlcc_f2bits(f) & 0x7fffffffu, e;
  if (ax > 0x7f800000u)
    return 0xffu;
  if (ax <= 0x00400000u)
    return 0;
  e = (ax >> 23) + ((ax & 0x7fffffu) != 0 ? 1u : 0u);
  return (uint8_t)(e > 254u ? 254u : e);
}

MLCC_FN float mlcc_minf(float a, float b) { return (a != a || a < b) ? a : b; }
MLCC_FN float mlcc_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
MLCC_FN double mlcc_min(double a, double b) { return (a != a || a < b) ? a : b; }
MLCC_FN double mlcc_max(double a, double b) { return (a != a || a > b) ? a : b; }
/* Integer minimum and maximum as functions: a nested chain of them (a
   pooling window written out) then stays linear in size. */
MLCC_FN int64_t mlcc_smin(int64_t a, int64_t b) { return a < b ? a : b; }
MLCC_FN int64_t mlcc_smax(int64_t a, int64_t b) { return a > b ? a : b; }
MLCC_FN uint64_t mlcc_umin(uint64_t a, uint64_t b) { return a < b ? a : b; }
MLCC_FN uint64_t mlcc_umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Saturating float to integer conversions (NaN gives 0). */
MLCC_FN int64_t mlcc_sat_i(double x, double lo, double hi) {
  if (x != x) return 0;
  if (x <= lo) return (int64_t)lo;
  if (x >= hi) return (int64_t)hi;
  return (int64_t)x;
}
MLCC_FN int64_t mlcc_sat_i64(double x) {
  if (x != x) return 0;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  return (int64_t)x;
}
MLCC_FN uint64_t mlcc_sat_u64(double x) {
  if (x != x || x <= 0.0) return 0;
  if (x >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)x;
}
#endif /* MLCC_PRELUDE_INCLUDED */
