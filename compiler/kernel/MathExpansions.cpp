//===- MathExpansions.cpp - exp, log, tanh, erf as vectorizable arithmetic ===//
#include "compiler/kernel/MathExpansions.h"

#include "compiler/kernel/Builder.h"
#include "compiler/support/Error.h"

#include <cmath>

namespace mlcc::kir {

Expr erfF32(const Expr &x0, const Let &let) {
  static const double p[] = {1.1283791065216064,     0.1983959823846817,
                             0.05035217106342316,    0.0036288569681346416,
                             0.00013951645814813673, -1.935122327267891e-06,
                             1.9704268439113548e-08};
  static const double q[] = {1.0, 0.5091560482978821, 0.1143491193652153,
                             0.014210740104317665, 0.0009365665027871728};
  Expr x = let(min(max(x0, -4.0), 4.0)), t = let(x * x);
  auto horner = [&](const double *c, int n) {
    Expr r = constant(DType::F32, c[n - 1]);
    for (int i = n - 2; i >= 0; --i)
      r = r * t + c[i];
    return r;
  };
  return x * horner(p, 7) / horner(q, 5);
}

Expr expF32(const Expr &x0, const Let &let) {
  // Below lo the result is 0: e^-87 is about 1.6e-38, so every product
  // below stays a normal float (an x at the limit, a masked -inf score
  // clamped to it, would otherwise make a subnormal product, which x86
  // cores compute in a microcode assist of a hundred cycles or more).
  const double hi = 88.3762626647949, lo = -87.0;
  // n = xc / ln2 rounded to an integer by adding 1.5 * 2^23: the sum lies
  // in [2^23, 2^24), whose units are whole numbers, so its rounding is n's
  // and its low mantissa bits hold n in two's complement (no floor, and no
  // float-to-int conversion with its NaN and saturation handling).
  const double magic = 12582912.0;
  const int32_t magicBits = 0x4B400000;
  Expr x = let(x0);
  Expr xc = min(max(x, lo), hi);
  Expr t = let(xc * 1.44269504088896341 + magic);
  Expr n = let(t - magic);
  Expr r = let(xc - n * 0.693359375 - n * -2.12194440e-4);
  // p(r) = c0 + c1 r + ... + c5 r^5 in pairs (Estrin's scheme): three
  // products deep rather than five, so that more exponentials are in flight
  // at once where the core's window, not its units, limits a loop of them.
  Expr r2 = let(r * r);
  Expr lo01 = r * 1.6666665459E-1 + 5.0000001201E-1;
  Expr lo23 = r * 8.3334519073E-3 + 4.1665795894E-2;
  Expr lo45 = r * 1.9875691500E-4 + 1.3981999507E-3;
  Expr p = (lo45 * r2 + lo23) * r2 + lo01;
  Expr y = let(p * r2 + r + 1.0);
  Expr bits = binary(BinOp::Shl,
                     bitcast(DType::I32, t) + constantInt(DType::I32, 127 - magicBits),
                     constantInt(DType::I32, 23));
  Expr v = y * bitcast(DType::F32, bits);
  v = select(gt(x, hi), constant(DType::F32, INFINITY), v);
  return select(lt(x, lo), constant(DType::F32, 0), v);
}

Expr logF32(const Expr &x0, const Let &let) {
  // (log1p(f) - f + f^2 / 2) / f^3 on [sqrt(1/2) - 1, sqrt(2) - 1]: a
  // least-squares fit of ours at 4000 Chebyshev nodes, weighted to the
  // relative error of log1p; evaluated in f32 its log1p is within 7.7e-8
  // (relative) over the interval.
  static const double c[] = {0.33333354047279,    -0.25000851943544383, 0.19999826572964047,
                             -0.16621369910211384, 0.1422711403556238,  -0.13202104208747276,
                             0.12620327491359365, -0.07362867875279969};
  Expr x = let(x0);
  // Subnormal inputs are scaled by 2^23 into the normal range, and their
  // exponent taken 23 lower.
  // (Comparisons are not bound: a temporary holds numbers.)
  Expr tiny = lt(x, constant(DType::F32, 0x1p-126));
  Expr bits = let(bitcast(DType::I32, select(tiny, x * 8388608.0, x)));
  Expr e = binary(BinOp::Shr, bits, constantInt(DType::I32, 23)) -
           select(tiny, constantInt(DType::I32, 127 + 23), constantInt(DType::I32, 127));
  // x = m 2^e with m in [1, 2), then in [sqrt(1/2), sqrt(2)).
  Expr m = let(bitcast(DType::F32, binary(BinOp::BitOr,
                                          binary(BinOp::BitAnd, bits, constantInt(DType::I32, 0x7fffff)),
                                          constantInt(DType::I32, 0x3f800000))));
  Expr high = gt(m, 1.4142135623730951);
  Expr f = let(select(high, m * 0.5, m) - 1.0); // exact
  Expr k = let(cast(DType::F32, e + select(high, constantInt(DType::I32, 1),
                                           constantInt(DType::I32, 0))));
  Expr p = constant(DType::F32, c[7]);
  for (int i = 6; i >= 0; --i)
    p = p * f + c[i];
  Expr f2 = let(f * f);
  Expr log1p = f + (f2 * f * p - f2 * 0.5);
  // k ln2 in two parts (the first exact in a few bits) so that k ln2 + f
  // loses nothing for large k.
  Expr y = log1p + k * -2.12194440e-4 + k * 0.693359375;
  y = select(eq(x, constant(DType::F32, INFINITY)), x, y);
  y = select(eq(x, 0.0), constant(DType::F32, -INFINITY), y);
  // Negative inputs and NaN: NaN.
  return select(lnot(ge(x, 0.0)), constant(DType::F32, NAN), y);
}

Expr tanhF32(const Expr &x0, const Let &let) {
  // (tanh(x) - x) / x^3 as a polynomial in x^2 on [0, 0.625]: a
  // least-squares fit of ours at 4000 Chebyshev nodes, weighted to the
  // relative error of tanh; evaluated in f32 within 8e-8 (relative).
  static const double c[] = {-0.3333328521956359, 0.13331512664994621, -0.053744657899919994,
                             0.020653124512029233, -0.005718962556084668};
  Expr x = let(x0);
  // |x| up to 9.1, past which tanh rounds to 1 in f32 (NaN stays NaN
  // through the min).
  Expr a = let(min(abs(x), 9.1)), t = let(a * a);
  Expr p = constant(DType::F32, c[4]);
  for (int i = 3; i >= 0; --i)
    p = p * t + c[i];
  Expr small = a + a * t * p;
  // 1 - 2 / d, d = e^2a + 1 in [1, 8e7], without a division (a vector
  // division takes about 16 cycles a vector on x86, the rest of tanh less):
  // 1 / d from the exponent trick (within 12%) and three Newton steps
  // (1.5%, 2e-4, 4e-8).
  Expr d = let(expF32(a * 2.0, let) + 1.0);
  Expr inv = let(bitcast(DType::F32, constantInt(DType::I32, 0x7EF311C3) - bitcast(DType::I32, d)));
  for (int step = 0; step < 3; ++step)
    inv = let(inv * (2.0 - d * inv));
  Expr big = 1.0 - 2.0 * inv;
  Expr r = select(lt(a, 0.625), small, big);
  // x's sign on the non-negative r (tanh(-0) is -0).
  Expr sign = binary(BinOp::BitAnd, bitcast(DType::I32, x),
                     constantInt(DType::I32, (int64_t)(int32_t)0x80000000u));
  return bitcast(DType::F32, binary(BinOp::BitOr, bitcast(DType::I32, r), sign));
}

int64_t expansionRegisters(UnOp op) { return op == UnOp::Tanh ? 12 : 0; }

bool expandable(UnOp op, DType t) {
  return (op == UnOp::Erf || op == UnOp::Exp || op == UnOp::Log || op == UnOp::Tanh) &&
         t == DType::F32;
}

Expr expand(UnOp op, const Expr &x, const Let &let) {
  switch (op) {
  case UnOp::Erf: return erfF32(x, let);
  case UnOp::Exp: return expF32(x, let);
  case UnOp::Log: return logF32(x, let);
  case UnOp::Tanh: return tanhF32(x, let);
  default: break;
  }
  MLCC_CHECK(false, "no expansion of " << unOpName(op));
  return x;
}

} // namespace mlcc::kir
