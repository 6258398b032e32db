//===- MathExpansions.h - exp, log, tanh, erf as vectorizable arithmetic --===//
//
// Math functions that have no vector instruction, written as kernel IR
// arithmetic (polynomials, bit manipulation) so that a vectorized loop does
// not fall back to one libm call per lane. The vectorizer (Schedule.cpp)
// expands them when it vectorizes a loop that calls them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <functional>

namespace mlcc::kir {

/// Binds a value to a temporary and returns a reference to it, so that an
/// expansion that uses a value several times refers to it, not copies it.
using Let = std::function<Expr(const Expr &)>;

/// erf(x) for f32 as x * P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 to f32
/// precision beyond): a rational fit of ours with a maximum relative error
/// of 4e-7 (a few ulp), made of operations that vectorize, unlike a call to
/// libm's erff. NaN propagates through the clamp.
Expr erfF32(const Expr &x0, const Let &let);

/// exp(x) for f32: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two
/// parts), a degree-7 polynomial for exp(r) (the Cephes expf coefficients),
/// and 2^n built in the exponent bits (n rounded by adding 1.5 * 2^23, whose
/// sum's low bits are n: no floor, no float-to-int conversion). Within 2 ulp
/// of libm on [-87, 127.5 ln2 = 88.376); +inf above it (short of e^88.72,
/// the largest float: 2^128 has no exponent), 0 below it (results that would
/// be subnormal are flushed), NaN stays NaN.
Expr expF32(const Expr &x0, const Let &let);

/// log(x) for f32: x = m 2^k with m in [sqrt(1/2), sqrt(2)) (subnormal
/// x scaled first), log(m) = f - f^2/2 + f^3 P(f) for f = m - 1 with a
/// degree-7 P of ours, plus k ln2 (ln2 split in two parts). Within about
/// 2 ulp of libm for positive finite x; log(+-0) = -inf, log(+inf) = +inf,
/// negative x and NaN give NaN.
Expr logF32(const Expr &x0, const Let &let);

/// tanh(x) for f32: x + x^3 P(x^2) with a degree-4 P of ours for |x| <
/// 0.625, else 1 - 2 / (exp(2|x|) + 1) with expF32 (|x| clamped to 9.1, past
/// which tanh rounds to 1), x's sign put back on the bits. Within about 3 ulp of
/// libm; NaN stays NaN.
Expr tanhF32(const Expr &x0, const Let &let);

/// Whether `op` on `t` has an expansion here.
bool expandable(UnOp op, DType t);
/// The vector registers an expansion of `op` keeps besides the tile of the
/// kernel it is an epilogue of (its constants and temporaries, which the
/// code generator hoists out of the loops): measured, not derived. tanh
/// (exp of 2|x|, a polynomial, a reciprocal in three Newton steps): 12 (a
/// 6x64 AVX-512 tile before it spilled its accumulators in the reduction,
/// a 5x48 one did not); erf, exp, log: 0 (no spill seen).
int64_t expansionRegisters(UnOp op);

/// The expansion of `op` (expandable) applied to `x`.
Expr expand(UnOp op, const Expr &x, const Let &let);

} // namespace mlcc::kir
