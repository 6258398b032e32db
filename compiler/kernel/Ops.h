//===- Ops.h - The scalar operations of the kernel IR ---------------------===//
//
// The unary and binary operations an Expr applies (KernelIR.h), apart from
// the IR's nodes so that their one reference semantics (ScalarEval.h) is
// defined on them without depending on the IR that uses it to fold
// constants.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace mlcc::kir {

/// Unary scalar operations. Float-only ones are marked (F); integer-only (I).
enum class UnOp : uint8_t {
  Neg,
  Not,    ///< Bool negation.
  BitNot, ///< (I) bitwise complement.
  Abs,
  Sqrt,  ///< (F)
  Exp,   ///< (F)
  Log,   ///< (F) natural logarithm
  Sin,   ///< (F)
  Cos,   ///< (F)
  Tan,   ///< (F)
  Asin,  ///< (F)
  Acos,  ///< (F)
  Atan,  ///< (F)
  Sinh,  ///< (F)
  Cosh,  ///< (F)
  Tanh,  ///< (F)
  Asinh, ///< (F)
  Acosh, ///< (F)
  Atanh, ///< (F)
  Erf,   ///< (F)
  Floor, ///< (F)
  Ceil,  ///< (F)
  Round, ///< (F) to nearest, ties to even
  Trunc, ///< (F) toward zero
  IsNaN, ///< (F) -> Bool
  IsInf, ///< (F) -> Bool, either sign
  /// (I32) bytes 0 and 2 (SextBytes13: 1 and 3) of a, sign-extended into
  /// the low and high 16-bit halves: Arm sxtb16, which turns four packed
  /// int8 weights into two operand pairs of dot2.
  SextBytes02,
  SextBytes13,
  /// (I32) the same pairs zero-extended: Arm uxtb16, which turns four packed
  /// uint8 activations into two operand pairs of dot2.
  ZextBytes02,
  ZextBytes13,
};

/// Binary scalar operations on operands of one type.
enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div, ///< Integers truncate toward zero (0 when dividing by zero in folding).
  Rem, ///< Integers: C remainder (sign of dividend). Floats: fmod.
  Min,
  Max,
  Pow, ///< (F)
  And, ///< Bool
  Or,  ///< Bool
  Xor, ///< Bool
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr, ///< Logical for unsigned, arithmetic for signed.
  Eq,  ///< Comparisons produce Bool.
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  /// (I32) the four bytes of a, unsigned, times the four bytes of b,
  /// signed, summed: the int8 dot product of x86 VNNI (vpdpbusd, which
  /// also adds the accumulator: `acc + dot4(a, b)` becomes one instruction).
  Dot4,
  /// (I32) the two signed 16-bit halves of a times those of b, summed: the
  /// dual multiply-accumulate of the Arm DSP extension (smlad, which also
  /// adds the accumulator: `acc + dot2(a, b)` becomes one instruction).
  Dot2,
  /// (I32) the four bytes of a, signed, times those of b, signed, summed:
  /// the int8 dot product of Arm's dot-product extension (sdot, which also
  /// adds the accumulator).
  SDot4,
  /// (I32) sdot4 where b never holds the byte -128 (int8 weights the plan
  /// checked): the same sum, but every two adjacent products of it then sum
  /// within int16, so a target without a dot product may add them as 16-bit
  /// pairs (AArch64 NEON: smull, smull2, addp, sadalp).
  SDot4Narrow,
  /// (I32) the high 32 bits of the signed 64-bit product a * b, i.e.
  /// floor(a * b / 2^32): the multiply-high of Arm (smmul; Helium's
  /// vmulh.s32, which LLVM does not form from the 64-bit product once the
  /// optimizer has merged its shift with those after it).
  MulHigh,
};

const char *unOpName(UnOp op);
/// The byte-pair unaries (sext_bytes02/13, zext_bytes02/13): I32 only.
inline bool isBytePairs(UnOp op) {
  return op == UnOp::SextBytes02 || op == UnOp::SextBytes13 || op == UnOp::ZextBytes02 ||
         op == UnOp::ZextBytes13;
}
const char *binOpName(BinOp op);
bool isComparison(BinOp op);

} // namespace mlcc::kir
