//===- Requantization.h - Helpers shared by the quantized ops --------------===//
//
// Saturation ranges and rounding of quantized types, and input type checks,
// used by QuantizeLinear.cpp (QuantizeLinear, DequantizeLinear),
// IntegerMatMul.cpp, IntegerConv.cpp and DotConv.cpp (the integer and
// requantizing matrix products and convolutions) and QLinearContrib.cpp
// (the com.microsoft quantized ops).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ops/Lowering.h"

#include <cmath>
#include <optional>
#include <utility>

namespace mlcc::ops::requant {

using kir::Expr;
using namespace kir;

/// The int32 whose bytes, lowest first, are `bytes` (at most four int32
/// values in [0, 255]): an operand quad of the kernel IR's dot4.
inline Expr byteQuad(const std::vector<Expr> &bytes) {
  Expr v = bytes.at(0);
  for (size_t j = 1; j < bytes.size(); ++j)
    v = binary(BinOp::BitOr, v,
               binary(BinOp::Shl, bytes[j], constantInt(DType::I32, 8 * (int64_t)j)));
  return v;
}

/// A quad of byteQuad with each byte offset by 128 (+ or -: the same flip
/// of its top bit): uint8 bytes as the signed bytes of sdot4, int8 ones as
/// the unsigned bytes of dot4, four at once.
inline Expr flipQuadBytes(const Expr &quad) {
  return binary(BinOp::BitXor, quad, constantInt(DType::I32, (int32_t)0x80808080u));
}

/// The int32 whose signed 16-bit halves are `lo` and `hi` (int32 values in
/// [-32768, 32767], scalars or vectors): an operand pair of the kernel IR's
/// dot2.
inline Expr halfPair(const Expr &lo, const Expr &hi) {
  return binary(BinOp::BitOr, binary(BinOp::BitAnd, lo, constantInt(DType::I32, 0xffff)),
                binary(BinOp::Shl, hi, constantInt(DType::I32, 16)));
}

/// The representable range of an integer type, for saturation.
inline std::pair<double, double> intRange(DType t) {
  switch (t) {
  case DType::I2: return {-2.0, 1.0};
  case DType::U2: return {0.0, 3.0};
  case DType::I4: return {-8.0, 7.0};
  case DType::U4: return {0.0, 15.0};
  case DType::I8: return {-128.0, 127.0};
  case DType::U8: return {0.0, 255.0};
  case DType::I16: return {-32768.0, 32767.0};
  case DType::U16: return {0.0, 65535.0};
  case DType::U32: return {0.0, 4294967295.0};
  default: return {-2147483648.0, 2147483647.0};
  }
}

inline void requireInputType(const ir::Node &n, size_t i, const std::string &what,
                             std::initializer_list<DType> allowed) {
  requireType(n, n.inDType(i), what, allowed);
}

/// A zero point (input `zp`, when present) has the type of its data (input `of`).
inline void requireZeroPointType(const ir::Node &n, size_t zp, size_t of) {
  if (n.hasInput(zp) && n.inDType(zp) != n.inDType(of))
    n.error() << "zero point (input " << zp << ") has type "
              << dtypeOnnxName(n.inDType(zp)) << " but input " << of << " has "
              << dtypeOnnxName(n.inDType(of));
}

/// A per-tensor parameter (input `i`, when present): one element, a scalar
/// or a 1-D tensor.
inline void requireScalarParam(const ir::Node &n, size_t i, const char *what) {
  if (!n.hasInput(i))
    return;
  const Shape &s = n.inShape(i);
  if (s.size() > 1 || numElements(s) != 1)
    n.error() << what << " (input " << i << ") has shape " << shapeToString(s)
              << "; a single value (per-tensor quantization) is required";
}

/// Rounds a compute-type value to the precision of storage type `t` (f16 and
/// bf16 values are computed in f32 but must round like their type).
inline Expr roundTo(DType t, const Expr &v) {
  if (isNarrowFloat(t))
    return cast(DType::F32, cast(t, v));
  return v;
}

/// round_half_even(v) + zp, saturated to `out`'s range; v and zp in f64.
inline Expr saturateRound(DType out, const Expr &v, const Expr &zp) {
  auto [lo, hi] = intRange(out);
  Expr r = unary(UnOp::Round, v) + zp;
  return clamp(r, constant(DType::F64, lo), constant(DType::F64, hi));
}

/// saturate(round_half_even(f32(acc) * mult) + zp) for an int32 `acc`, an
/// f32 `mult` and a zero point `zp` of type `out`: how ONNX Runtime's x86
/// kernels requantize (MLAS): the product rounds once to f32 and is clamped
/// in f32 to [lo - zp, hi - zp] of `out`'s range (so that the conversion to
/// int32 and the sum with zp cannot overflow), then rounded half to even
/// (exact: the bounds are integers), converted and offset by zp in int32.
/// The result is an int32 in `out`'s range.
///
/// The rounding and conversion add 1.5 * 2^23 in f32 and read the sum's
/// bits as an integer (exact for |v| < 2^22, which the clamp ensures; the
/// addition rounds half to even like the rest of f32 arithmetic): no round
/// instruction or library call, no saturating conversion.
/// round_half_even(v) as an int32 for an f32 `v` with |v| < 2^22 (clamped
/// by the caller): 1.5 * 2^23 is added in f32 and the sum's bits read.
inline Expr roundSmallF32(const Expr &v) {
  Expr bits = bitcast(DType::I32, v + constant(DType::F32, 12582912.0));
  return bits - constantInt(DType::I32, 0x4B400000);
}

/// The clamp before the rounding is to the integer bounds widened by a
/// quarter, [lo - 0.25, hi + 0.25]: the same result (everything within a
/// quarter of an integer rounds to it), and never a zero bound, so that a
/// target with a NaN-propagating float min/max (AArch64 fmin/fmax) clamps
/// in one instruction per bound (see llvmgen::EmitFeatures::FloatMinMax).
constexpr double kRoundingSlack = 0.25;

inline Expr requantizeF32(DType out, const Expr &acc, const Expr &mult, const Expr &zp) {
  auto [lo, hi] = intRange(out);
  Expr z = cast(DType::F32, zp);
  Expr v = clamp(cast(DType::F32, acc) * mult, constant(DType::F32, lo - kRoundingSlack) - z,
                 constant(DType::F32, hi + kRoundingSlack) - z);
  return roundSmallF32(v) + cast(DType::I32, zp);
}

/// The bound on |acc * mult| under which requantizeF32Small applies (a
/// quarter of roundSmallF32's 2^22: its rounded value keeps to 22 bits,
/// with a margin for the f32 rounding of the product).
constexpr double kSmallProductBound = 1048576.0;

/// requantizeF32 where |f32(acc) * mult| is known to stay below 2^20 (a
/// bound from constant weights, bias and multipliers: see
/// kSmallProductBound): rounded as roundSmallF32 rounds, without the f32
/// clamp to the output range, offset by zp and saturated in int32, the
/// same result. A single-precision unit without float min/max
/// (Cortex-M4's FPv4) spends a compare, a status move and a conditional
/// move on each f32 bound; Arm cores saturate an int32 in one usat/ssat.
inline Expr requantizeF32Small(DType out, const Expr &acc, const Expr &mult, const Expr &zp) {
  auto [lo, hi] = intRange(out);
  // The lower bound below the product's (a no-op) keeps the product and the
  // rounding's addition apart: contracted into one fused multiply-add, the
  // product would not round to f32 first (ONNX Runtime's does).
  Expr p = max(cast(DType::F32, acc) * mult, constant(DType::F32, -2.0 * kSmallProductBound));
  // round(p) from the sum's bits as roundSmallF32, but as the sign-extended
  // low 22 bits (|round(p)| < 2^21; the bits of 1.5 * 2^23 have none
  // there): a bit-field extract (sbfx), no constant in a register.
  const DType i = DType::I32;
  Expr bits = bitcast(i, p + constant(DType::F32, 12582912.0));
  Expr r = binary(BinOp::Shr, binary(BinOp::Shl, bits, constantInt(i, 10)), constantInt(i, 10)) +
           cast(i, zp);
  return clamp(r, constantInt(i, (int64_t)lo), constantInt(i, (int64_t)hi));
}

/// saturate(round_half_even(v)) to `out`'s range for an f32 `v`, as an
/// int32 (clamping first, to the bounds widened by kRoundingSlack, is the
/// same).
inline Expr saturateRoundF32(DType out, const Expr &v) {
  auto [lo, hi] = intRange(out);
  return roundSmallF32(clamp(v, constant(DType::F32, lo - kRoundingSlack),
                             constant(DType::F32, hi + kRoundingSlack)));
}

/// saturate(round(acc * m0 * 2^-shift) + zp) in integers only, for targets
/// without floating point (the plan's FixedRequant): `m0` is a Q31
/// multiplier in [2^30, 2^31), `shift` in [1, 62] (both int32); the product
/// is exact in int64 and rounds half up. The result is an int32 in `out`'s
/// range.
inline Expr requantizeFixed(DType out, const Expr &acc, const Expr &m0, const Expr &shift,
                            const Expr &zp) {
  auto [lo, hi] = intRange(out);
  const DType w = DType::I64;
  Expr s = cast(w, shift);
  Expr one = constantInt(w, 1);
  Expr p = cast(w, acc) * cast(w, m0);
  Expr r = binary(BinOp::Shr, p + binary(BinOp::Shl, one, s - one), s);
  Expr z = cast(w, zp);
  r = clamp(r, constantInt(w, (int64_t)lo) - z, constantInt(w, (int64_t)hi) - z);
  return cast(DType::I32, r + z);
}

/// requantizeFixed where every shift is at least 33 and |acc * m0 *
/// 2^-shift| stays below kSmallProductBound (bounds from constant weights,
/// bias and multipliers): the same floor((p + 2^(s-1)) / 2^s) for the
/// int64 product p = acc * m0, as floor(floor(floor(p / 2^32) / 2^(s-33))
/// + 1) / 2) (nested floors of powers of two compose), in int32 after the
/// product's high word (Arm: smull, then two arithmetic shifts and an
/// add), offset by zp and saturated in int32 (usat/ssat on Arm).
inline Expr requantizeFixedSmall(DType out, const Expr &acc, const Expr &m0, const Expr &shift,
                                 const Expr &zp) {
  auto [lo, hi] = intRange(out);
  const DType i = DType::I32;
  Expr high = binary(BinOp::MulHigh, cast(i, acc), cast(i, m0));
  Expr r = binary(BinOp::Shr, high, cast(i, shift) - constantInt(i, 33)) + constantInt(i, 1);
  r = binary(BinOp::Shr, r, constantInt(i, 1)) + cast(i, zp);
  return clamp(r, constantInt(i, (int64_t)lo), constantInt(i, (int64_t)hi));
}

/// A positive real multiplier m as a Q31 multiplier M0 in [2^30, 2^31) and
/// a right shift S in [1, 62] (m = M0 * 2^-S, M0 rounded to nearest), or
/// nothing when m is not positive or out of that range.
inline std::optional<std::pair<int64_t, int64_t>> q31Multiplier(double m) {
  if (!(m > 0) || !std::isfinite(m))
    return std::nullopt;
  int e = 0;
  double frac = std::frexp(m, &e); // m = frac * 2^e, frac in [0.5, 1)
  int64_t m0 = (int64_t)std::llround(frac * 2147483648.0);
  if (m0 == (int64_t)1 << 31) {
    m0 /= 2;
    ++e;
  }
  int64_t s = 31 - e;
  if (s < 1 || s > 62)
    return std::nullopt;
  return std::pair{m0, s};
}

/// The requantization multiplier a_scale * b_scale / y_scale in f32 (the
/// compute type of every scale type), rounded after each operation to the
/// scales' type `st` (f16 scales round like the reference).
inline Expr requantMultiplierF32(DType st, const Expr &as, const Expr &bs,
                                 const Expr &ys) {
  DType ct = computeType(st);
  Expr m = roundTo(st, cast(ct, as) * cast(ct, bs));
  return cast(DType::F32, roundTo(st, m / cast(ct, ys)));
}

/// Whether an operand is a compile-time constant whose elements are all 0
/// (an omitted or zero zero point: its corrections can be left out).
inline bool isZeroConstant(const TensorRef &t) {
  const TensorPtr &k = t.constant();
  if (!k)
    return false;
  for (int64_t i = 0, n = k->isSplat() ? std::min<int64_t>(k->numel(), 1) : k->numel();
       i < n; ++i)
    if (k->intAt(i) != 0)
      return false;
  return true;
}

/// Whether every operand is a compile-time constant.
inline bool allConstant(std::initializer_list<const TensorRef *> ts) {
  for (const TensorRef *t : ts)
    if (!t->constant())
      return false;
  return true;
}

} // namespace mlcc::ops::requant
