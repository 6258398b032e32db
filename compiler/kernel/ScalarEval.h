//===- ScalarEval.h - The meaning of kernel IR scalar operations ----------===//
//
// The single definition of what each UnOp/BinOp/Cast computes on the host.
// The interpreter (and through it constant folding) and the constant folder in
// the Expr constructors both call these, so the compiler has exactly one
// reference semantics; the emitters must produce the same results.
//
// Values are carried in a Scalar: integers (and Bool, and the bits of u64) in
// `I`, floats in `F`, already rounded to their type's precision (f32, f16,
// bf16 and float8 results are rounded after every operation). Conversions to
// the narrow floats go through f32; to float8 they round to nearest even
// without saturating (compiler/support/Float8.h).
//
// Integer corner cases that are undefined in C (division by zero, INT_MIN/-1,
// oversized shifts, out-of-range float-to-int casts) get a fixed, documented
// result here so that folding never traps: x/0 = 0, x%0 = 0, shifts by >= the
// width give 0 (arithmetic right shift of a negative value gives -1), and
// float-to-int casts saturate with NaN -> 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Ops.h"
#include "compiler/support/DType.h"

namespace mlcc::kir {

struct Scalar {
  int64_t I = 0;
  double F = 0;
};

/// Rounds/wraps a value to the precision of `type` (f32 rounding, integer
/// wrap-around to the type's width, Bool to 0/1).
Scalar normalize(DType type, Scalar v);

Scalar evalUnary(UnOp op, DType type, Scalar a);
/// `type` is the operand type (the result is Bool for comparisons and
/// And/Or/Xor).
Scalar evalBinary(BinOp op, DType type, Scalar a, Scalar b);
Scalar evalCast(DType to, DType from, Scalar a);
/// The 32 bits of `a` (f32, i32 or u32) read as `to`.
Scalar evalBitCast(DType to, DType from, Scalar a);

/// Reads and writes one element of `type` in memory.
Scalar loadScalar(DType type, const void *p);
void storeScalar(DType type, void *p, Scalar v);

/// Numeric view of a scalar (for constants and printing).
double scalarAsDouble(DType type, Scalar v);

} // namespace mlcc::kir
