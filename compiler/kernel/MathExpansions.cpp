//===- MathExpansions.cpp - exp and erf as operations that vectorize ------===//
#include "compiler/kernel/MathExpansions.h"

#include "compiler/kernel/Builder.h"

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
  const double hi = 88.3762626647949, lo = -87.3365447505531;
  Expr x = let(x0);
  Expr xc = min(max(x, lo), hi);
  Expr n = let(floor(xc * 1.44269504088896341 + 0.5));
  Expr r = let(xc - n * 0.693359375 - n * -2.12194440e-4);
  Expr p = constant(DType::F32, 1.9875691500E-4);
  for (double c : {1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2, 1.6666665459E-1,
                   5.0000001201E-1})
    p = p * r + c;
  Expr y = let(p * r * r + r + 1.0);
  Expr bits = binary(BinOp::Shl, cast(DType::I32, n) + constantInt(DType::I32, 127),
                     constantInt(DType::I32, 23));
  Expr v = y * bitcast(DType::F32, bits);
  v = select(gt(x, hi), constant(DType::F32, INFINITY), v);
  return select(lt(x, lo), constant(DType::F32, 0), v);
}

bool expandable(UnOp op, DType t) {
  return (op == UnOp::Erf || op == UnOp::Exp) && t == DType::F32;
}

} // namespace mlcc::kir
