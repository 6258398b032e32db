#include "compiler/kernel/ScalarEval.h"

#include "compiler/support/Error.h"
#include "compiler/support/NarrowFloat.h"
#include "compiler/support/Tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mlcc::kir {

namespace {

/// Wraps an integer to the width and signedness of `type`.
int64_t wrapInt(DType type, int64_t v) {
  switch (type) {
  case DType::I8:
    return (int8_t)v;
  case DType::U8:
    return (uint8_t)v;
  case DType::I16:
    return (int16_t)v;
  case DType::U16:
    return (uint16_t)v;
  case DType::I32:
    return (int32_t)v;
  case DType::U32:
    return (uint32_t)v;
  case DType::Bool:
    return v != 0;
  default:
    return v; // i64, u64 (bits), index
  }
}

double roundFloat(DType type, double v) {
  switch (type) {
  case DType::F32:
    return (double)(float)v;
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
    // Stored and loaded again, via f32 (float8 without saturation).
    return narrowBitsToFloat(type, floatToNarrowBits(type, (float)v));
  default:
    return v;
  }
}

/// Saturating float to integer conversion (NaN -> 0).
int64_t floatToInt(DType to, double v) {
  if (std::isnan(v))
    return 0;
  v = std::trunc(v);
  if (to == DType::U64) {
    if (v <= 0)
      return 0;
    if (v >= 18446744073709551615.0)
      return (int64_t)UINT64_MAX;
    return (int64_t)(uint64_t)v;
  }
  double lo, hi;
  switch (to) {
  case DType::I8:
    lo = INT8_MIN, hi = INT8_MAX;
    break;
  case DType::U8:
    lo = 0, hi = UINT8_MAX;
    break;
  case DType::I16:
    lo = INT16_MIN, hi = INT16_MAX;
    break;
  case DType::U16:
    lo = 0, hi = UINT16_MAX;
    break;
  case DType::I32:
    lo = INT32_MIN, hi = INT32_MAX;
    break;
  case DType::U32:
    lo = 0, hi = UINT32_MAX;
    break;
  default:
    if (v >= 9.2233720368547758e18)
      return INT64_MAX;
    if (v <= -9.2233720368547758e18)
      return INT64_MIN;
    return (int64_t)v;
  }
  if (v < lo)
    return (int64_t)lo;
  if (v > hi)
    return (int64_t)hi;
  return (int64_t)v;
}

bool isU64(DType t) { return t == DType::U64; }

} // namespace

Scalar normalize(DType type, Scalar v) {
  if (isFloat(type))
    v.F = roundFloat(type, v.F);
  else
    v.I = wrapInt(type, v.I);
  return v;
}

double scalarAsDouble(DType type, Scalar v) {
  if (isFloat(type))
    return v.F;
  if (isU64(type))
    return (double)(uint64_t)v.I;
  return (double)v.I;
}

Scalar evalUnary(UnOp op, DType type, Scalar a) {
  Scalar r;
  if (isFloat(type)) {
    double x = a.F;
    switch (op) {
    case UnOp::Neg:
      r.F = -x;
      break;
    case UnOp::Abs:
      r.F = std::fabs(x);
      break;
    case UnOp::Sqrt:
      r.F = std::sqrt(x);
      break;
    case UnOp::Exp:
      r.F = std::exp(x);
      break;
    case UnOp::Log:
      r.F = std::log(x);
      break;
    case UnOp::Sin:
      r.F = std::sin(x);
      break;
    case UnOp::Cos:
      r.F = std::cos(x);
      break;
    case UnOp::Tan:
      r.F = std::tan(x);
      break;
    case UnOp::Asin:
      r.F = std::asin(x);
      break;
    case UnOp::Acos:
      r.F = std::acos(x);
      break;
    case UnOp::Atan:
      r.F = std::atan(x);
      break;
    case UnOp::Sinh:
      r.F = std::sinh(x);
      break;
    case UnOp::Cosh:
      r.F = std::cosh(x);
      break;
    case UnOp::Tanh:
      r.F = std::tanh(x);
      break;
    case UnOp::Asinh:
      r.F = std::asinh(x);
      break;
    case UnOp::Acosh:
      r.F = std::acosh(x);
      break;
    case UnOp::Atanh:
      r.F = std::atanh(x);
      break;
    case UnOp::Erf:
      r.F = std::erf(x);
      break;
    case UnOp::Floor:
      r.F = std::floor(x);
      break;
    case UnOp::Ceil:
      r.F = std::ceil(x);
      break;
    case UnOp::Round:
      r.F = std::nearbyint(x); // default rounding mode: ties to even
      break;
    case UnOp::Trunc:
      r.F = std::trunc(x);
      break;
    case UnOp::IsNaN:
      return Scalar{std::isnan(x) ? 1 : 0, 0};
    case UnOp::IsInf:
      return Scalar{std::isinf(x) ? 1 : 0, 0};
    default:
      MLCC_CHECK(false, "unary " << unOpName(op) << " on float");
    }
    return normalize(type, r);
  }
  int64_t x = a.I;
  switch (op) {
  case UnOp::Neg:
    r.I = (int64_t)(0 - (uint64_t)x);
    break;
  case UnOp::Not:
    r.I = x ? 0 : 1;
    break;
  case UnOp::BitNot:
    r.I = ~x;
    break;
  case UnOp::Abs:
    r.I = isUnsignedInt(type) ? x : (x < 0 ? (int64_t)(0 - (uint64_t)x) : x);
    break;
  case UnOp::SextBytes02:
  case UnOp::SextBytes13: {
    uint32_t u = (uint32_t)x >> (op == UnOp::SextBytes13 ? 8 : 0);
    uint32_t lo = (uint16_t)(int16_t)(int8_t)(uint8_t)u;
    uint32_t hi = (uint16_t)(int16_t)(int8_t)(uint8_t)(u >> 16);
    r.I = (int64_t)(int32_t)(lo | hi << 16);
    break;
  }
  case UnOp::ZextBytes02:
  case UnOp::ZextBytes13:
    r.I = (int64_t)(int32_t)(((uint32_t)x >> (op == UnOp::ZextBytes13 ? 8 : 0)) & 0x00ff00ffu);
    break;
  default:
    MLCC_CHECK(false, "unary " << unOpName(op) << " on " << dtypeName(type));
  }
  return normalize(type, r);
}

Scalar evalBinary(BinOp op, DType type, Scalar a, Scalar b) {
  if (isComparison(op)) {
    bool res;
    if (isFloat(type)) {
      double x = a.F, y = b.F;
      switch (op) {
      case BinOp::Eq: res = x == y; break;
      case BinOp::Ne: res = x != y; break;
      case BinOp::Lt: res = x < y; break;
      case BinOp::Le: res = x <= y; break;
      case BinOp::Gt: res = x > y; break;
      default: res = x >= y; break;
      }
    } else if (isU64(type)) {
      uint64_t x = (uint64_t)a.I, y = (uint64_t)b.I;
      switch (op) {
      case BinOp::Eq: res = x == y; break;
      case BinOp::Ne: res = x != y; break;
      case BinOp::Lt: res = x < y; break;
      case BinOp::Le: res = x <= y; break;
      case BinOp::Gt: res = x > y; break;
      default: res = x >= y; break;
      }
    } else {
      int64_t x = a.I, y = b.I;
      switch (op) {
      case BinOp::Eq: res = x == y; break;
      case BinOp::Ne: res = x != y; break;
      case BinOp::Lt: res = x < y; break;
      case BinOp::Le: res = x <= y; break;
      case BinOp::Gt: res = x > y; break;
      default: res = x >= y; break;
      }
    }
    return Scalar{res ? 1 : 0, 0};
  }
  Scalar r;
  if (isFloat(type)) {
    double x = a.F, y = b.F;
    switch (op) {
    case BinOp::Add: r.F = x + y; break;
    case BinOp::Sub: r.F = x - y; break;
    case BinOp::Mul: r.F = x * y; break;
    case BinOp::Div: r.F = x / y; break;
    case BinOp::Rem: r.F = std::fmod(x, y); break;
    case BinOp::Min: r.F = (std::isnan(x) || x < y) ? x : y; break;
    case BinOp::Max: r.F = (std::isnan(x) || x > y) ? x : y; break;
    case BinOp::Pow: r.F = std::pow(x, y); break;
    default:
      MLCC_CHECK(false, "binary " << binOpName(op) << " on float");
    }
    // f32 arithmetic must round like the target does: compute in float.
    if (type == DType::F32) {
      float fx = (float)x, fy = (float)y;
      switch (op) {
      case BinOp::Add: r.F = fx + fy; break;
      case BinOp::Sub: r.F = fx - fy; break;
      case BinOp::Mul: r.F = fx * fy; break;
      case BinOp::Div: r.F = fx / fy; break;
      default: break;
      }
    }
    return normalize(type, r);
  }
  bool uns = isUnsignedInt(type);
  uint64_t ux = (uint64_t)a.I, uy = (uint64_t)b.I;
  int64_t x = a.I, y = b.I;
  unsigned width = dtypeBits(type);
  switch (op) {
  case BinOp::Add: r.I = (int64_t)(ux + uy); break;
  case BinOp::Sub: r.I = (int64_t)(ux - uy); break;
  case BinOp::Mul: r.I = (int64_t)(ux * uy); break;
  case BinOp::Div:
    if (y == 0)
      r.I = 0;
    else if (uns)
      r.I = (int64_t)(ux / uy);
    else if (x == INT64_MIN && y == -1)
      r.I = x;
    else
      r.I = x / y;
    break;
  case BinOp::Rem:
    if (y == 0)
      r.I = 0;
    else if (uns)
      r.I = (int64_t)(ux % uy);
    else if (y == -1)
      r.I = 0;
    else
      r.I = x % y;
    break;
  case BinOp::Min:
    r.I = uns ? (int64_t)(ux < uy ? ux : uy) : (x < y ? x : y);
    break;
  case BinOp::Max:
    r.I = uns ? (int64_t)(ux > uy ? ux : uy) : (x > y ? x : y);
    break;
  case BinOp::And: r.I = (x && y) ? 1 : 0; break;
  case BinOp::Or: r.I = (x || y) ? 1 : 0; break;
  case BinOp::Xor: r.I = ((x != 0) != (y != 0)) ? 1 : 0; break;
  case BinOp::BitAnd: r.I = x & y; break;
  case BinOp::BitOr: r.I = x | y; break;
  case BinOp::BitXor: r.I = x ^ y; break;
  case BinOp::Dot4: {
    int64_t sum = 0;
    for (int j = 0; j < 4; ++j)
      sum += (int64_t)((uint64_t)x >> (8 * j) & 0xff) * (int64_t)(int8_t)(uint8_t)((uint64_t)y >> (8 * j));
    r.I = (int64_t)(int32_t)(uint32_t)sum;
    break;
  }
  case BinOp::SDot4:
  case BinOp::SDot4Narrow: {
    int64_t sum = 0;
    for (int j = 0; j < 4; ++j)
      sum += (int64_t)(int8_t)(uint8_t)((uint64_t)x >> (8 * j)) *
             (int64_t)(int8_t)(uint8_t)((uint64_t)y >> (8 * j));
    r.I = (int64_t)(int32_t)(uint32_t)sum;
    break;
  }
  case BinOp::MulHigh:
    // The operands are sign-extended int32 values; an arithmetic shift of
    // the exact product is the floor.
    r.I = (int64_t)(int32_t)(((int64_t)(int32_t)x * (int64_t)(int32_t)y) >> 32);
    break;
  case BinOp::Dot2: {
    int64_t sum = (int64_t)(int16_t)(uint16_t)x * (int16_t)(uint16_t)y +
                  (int64_t)(int16_t)(uint16_t)((uint64_t)x >> 16) *
                      (int16_t)(uint16_t)((uint64_t)y >> 16);
    r.I = (int64_t)(int32_t)(uint32_t)sum;
    break;
  }
  case BinOp::Shl:
    r.I = (uy >= width) ? 0 : (int64_t)(ux << uy);
    break;
  case BinOp::Shr:
    if (uns) {
      // Unsigned values are stored zero-extended, so a 64-bit shift is exact.
      r.I = (uy >= width) ? 0 : (int64_t)(ux >> uy);
    } else {
      r.I = (uy >= width) ? (x < 0 ? -1 : 0) : (x >> uy);
    }
    break;
  default:
    MLCC_CHECK(false, "binary " << binOpName(op) << " on " << dtypeName(type));
  }
  return normalize(type, r);
}

Scalar evalCast(DType to, DType from, Scalar a) {
  Scalar r;
  if (to == DType::Bool) {
    r.I = isFloat(from) ? (a.F != 0.0 ? 1 : 0) : (a.I != 0 ? 1 : 0);
    return r;
  }
  if (isFloat(to)) {
    if (isFloat(from))
      r.F = a.F;
    else if (isU64(from))
      r.F = (double)(uint64_t)a.I;
    else
      r.F = (double)a.I;
    // Integer -> f32 must round once, directly (not via double) for i64;
    // narrower floats convert from that f32 value, as the emitters do.
    if ((to == DType::F32 || isNarrowFloat(to)) && !isFloat(from))
      r.F = isU64(from) ? (double)(float)(uint64_t)a.I : (double)(float)a.I;
    return normalize(to, r);
  }
  if (isFloat(from))
    r.I = floatToInt(to, a.F);
  else
    r.I = a.I;
  return normalize(to, r);
}

Scalar evalBitCast(DType to, DType from, Scalar a) {
  uint32_t bits;
  if (from == DType::F32) {
    float f = (float)a.F;
    std::memcpy(&bits, &f, 4);
  } else {
    bits = (uint32_t)a.I;
  }
  Scalar r;
  if (to == DType::F32) {
    float f;
    std::memcpy(&f, &bits, 4);
    r.F = f;
  } else {
    r.I = to == DType::I32 ? (int64_t)(int32_t)bits : (int64_t)bits;
  }
  return r;
}

Scalar loadScalar(DType type, const void *p) {
  MLCC_CHECK(isStorable(type), "load of " << dtypeName(type));
  Scalar r;
  if (isFloat(type))
    r.F = loadScalarDouble(type, p);
  else
    r.I = loadScalarInt(type, p);
  return r;
}

void storeScalar(DType type, void *p, Scalar v) {
  MLCC_CHECK(isStorable(type), "store of " << dtypeName(type));
  // Values are already normalized to their type: floats convert exactly (or
  // round like a cast for the narrow formats), integers wrap.
  if (isFloat(type))
    mlcc::storeScalar(type, p, v.F);
  else
    storeScalarInt(type, p, v.I);
}

} // namespace mlcc::kir
