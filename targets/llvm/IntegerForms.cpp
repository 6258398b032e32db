//===- IntegerForms.cpp - Integer patterns with their own instructions ----===//
//
// KernelEmitter's integer expressions that a target does in fewer
// instructions than their literal translation, recognized in the kernel IR
// (the emitter knows no op): products of values that fit 16 bits as
// AArch64 smull (signedBits tells which fit), four bytes or-ed into a word
// as one word load, bytes sign- or zero-extended in pairs as Arm
// sxtb16/uxtb16, and the high word of a product as Helium's vmulh.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/kernel/Schedule.h"
#include "targets/llvm/LLVMEmitter.h"

#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>

#include <array>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::Value;

/// How many bits (two's complement) hold every value `x` can take: its
/// type's width, or fewer where the value was widened from a narrower
/// type (casts that keep the value, broadcasts, sums, differences and
/// products of such, integer constants). Floats: more than any integer.
int KernelEmitter::signedBits(const kir::ExprNode *x) {
  auto isUnsigned = [](DType t) { return t == DType::Bool || isUnsignedInt(t); };
  auto typeBits = [&](DType t) {
    if (t == DType::Bool)
      return 2;
    if (!isInteger(t) || t == DType::Index)
      return 65;
    int bits = 8 * (int)dtypeSize(t);
    return isUnsigned(t) ? bits + 1 : bits;
  };
  const int own = typeBits(x->Type);
  switch (x->Kind) {
  case ExprKind::Const: {
    if (!isInteger(x->Type))
      return own;
    int n = 1;
    while (n < 64 && (x->IntValue < -(int64_t(1) << (n - 1)) || x->IntValue >= (int64_t(1) << (n - 1))))
      ++n;
    return std::min(own, n);
  }
  case ExprKind::Broadcast: return std::min(own, signedBits(x->A.get()));
  case ExprKind::Cast: {
    // The value survives the cast when it fits the target type (into an
    // unsigned type only from an unsigned one: never negative).
    int from = signedBits(x->A.get());
    bool keeps = from <= own && (!isUnsigned(x->Type) || isUnsigned(x->A->Type));
    return keeps ? from : own;
  }
  case ExprKind::Binary: {
    if (!isInteger(x->Type))
      return own;
    int a = signedBits(x->A.get()), b = signedBits(x->B.get());
    switch (x->Bin) {
    case BinOp::Add:
    case BinOp::Sub: return std::min(own, std::max(a, b) + 1);
    case BinOp::Mul: return std::min(own, a + b);
    case BinOp::Min:
    case BinOp::Max: return std::min(own, std::max(a, b));
    default: return own;
    }
  }
  default: return own;
  }
}

/// a * b of int32 vectors whose values fit 16 signed bits, on AArch64:
/// the operands narrowed to 16-bit lanes and multiplied four lanes at a
/// time by smull, which LLVM folds with the sum that takes the product
/// into smlal/smlal2 (by element where b is a broadcast of a vector's
/// lane): a widening multiply-add on the bytes widened once to 16 bits,
/// instead of bytes widened to 32 bits (four table lookups a vector) and
/// mla. Exact: every value fits 16 bits and the product 32. Null
/// otherwise.
Value *KernelEmitter::wideningMul(const kir::ExprNode &e) {
  if (!ME.Features.ArmMull || e.Kind != ExprKind::Binary || e.Bin != BinOp::Mul ||
      e.Type != DType::I32 || e.Lanes < 4 || e.Lanes % 4 != 0)
    return nullptr;
  if (signedBits(e.A.get()) > 16 || signedBits(e.B.get()) > 16)
    return nullptr;
  const unsigned lanes = (unsigned)e.Lanes;
  auto *words = llvm::FixedVectorType::get(B.getInt16Ty(), lanes);
  Value *a = B.CreateTrunc(expr(e.A), words), *b = B.CreateTrunc(expr(e.B), words);
  std::vector<Value *> parts;
  for (unsigned j = 0; j < lanes; j += 4) {
    std::vector<int> quarter = {(int)j, (int)j + 1, (int)j + 2, (int)j + 3};
    parts.push_back(B.CreateIntrinsic(
        llvm::Intrinsic::aarch64_neon_smull, {llvm::FixedVectorType::get(B.getInt32Ty(), 4)},
        {B.CreateShuffleVector(a, quarter), B.CreateShuffleVector(b, quarter)}));
  }
  return concatenate(parts);
}

/// A zero-extended byte as an int32: Cast(I32, Load) of a uint8 buffer or
/// Cast(I32, Cast(U8, Load)) of an int8 one; the load, else null. With
/// `lanes` > 1, a vector of them loaded four bytes apart.
const kir::ExprNode *KernelEmitter::zeroExtendedByte(const kir::ExprNode *x, int lanes) {
  if (x->Kind != ExprKind::Cast || x->Type != DType::I32 || x->Lanes != lanes)
    return nullptr;
  x = x->A.get();
  if (x->Kind == ExprKind::Cast && x->Type == DType::U8 && x->A->Type == DType::I8)
    x = x->A.get();
  if (x->Kind != ExprKind::Load || x->Lanes != lanes || (lanes > 1 && x->Stride != 4) ||
      (x->Buf->Type != DType::U8 && x->Buf->Type != DType::I8))
    return nullptr;
  return x;
}

/// The int32 whose bytes, lowest first, are four consecutive bytes of one
/// buffer (an or of the zero-extended bytes shifted by 0, 8, 16 and 24:
/// requant::byteQuad) as one little-endian word load, alignment 1 (LLVM
/// splits it again where the target has no unaligned loads); else null.
/// LLVM's own load combining misses these once loop strength reduction has
/// given each byte its own pointer. A vector of such words (each byte a
/// load of lanes bytes four apart: a vectorized loop over quads) is one
/// load of 4 x lanes bytes.
Value *KernelEmitter::wordOfBytes(const kir::ExprNode &e) {
  if (e.Bin != BinOp::BitOr || e.Type != DType::I32 || !ME.DL.isLittleEndian())
    return nullptr;
  std::vector<const kir::ExprNode *> terms, work{&e};
  while (!work.empty() && terms.size() <= 4) {
    const kir::ExprNode *x = work.back();
    work.pop_back();
    if (x->Kind == ExprKind::Binary && x->Bin == BinOp::BitOr) {
      work.push_back(x->A.get());
      work.push_back(x->B.get());
    } else {
      terms.push_back(x);
    }
  }
  if (!work.empty() || terms.size() != 4)
    return nullptr;
  std::array<const kir::ExprNode *, 4> bytes{};
  for (const kir::ExprNode *t : terms) {
    int64_t shift = 0;
    if (t->Kind == ExprKind::Binary && t->Bin == BinOp::Shl) {
      const kir::ExprNode *by = t->B.get();
      if (by->Kind == ExprKind::Broadcast && by->A->Lanes == 1)
        by = by->A.get();
      if (!by->isConst())
        return nullptr;
      shift = by->IntValue;
      t = t->A.get();
    }
    const kir::ExprNode *load = zeroExtendedByte(t, e.Lanes);
    if (!load || shift < 0 || shift > 24 || shift % 8 != 0 || bytes[shift / 8])
      return nullptr;
    bytes[shift / 8] = load;
  }
  for (int j = 1; j < 4; ++j)
    if (bytes[j]->Buf != bytes[0]->Buf ||
        kir::constantDifference(bytes[0]->A, bytes[j]->A) != std::optional<int64_t>(j))
      return nullptr;
  llvm::Type *words = B.getInt32Ty();
  if (e.Lanes > 1)
    words = llvm::FixedVectorType::get(words, (unsigned)e.Lanes);
  return B.CreateAlignedLoad(words, address(bytes[0]->Buf.get(), expr(bytes[0]->A)),
                             llvm::Align(1));
}

/// Bytes 0 and 2 of a (odd: 1 and 3) sign-extended into its 16-bit
/// halves: sxtb16 (rotated by a byte for the odd ones) with the Arm DSP
/// extension, else shifts.
Value *KernelEmitter::sextBytePairs(Value *a, bool odd, bool zext) {
  if (ME.Features.Smlad && !a->getType()->isVectorTy()) {
    Value *v = odd ? B.CreateIntrinsic(llvm::Intrinsic::fshr, {a->getType()},
                                       {a, a, B.getInt32(8)})
                   : a;
    return B.CreateIntrinsic(zext ? llvm::Intrinsic::arm_uxtb16 : llvm::Intrinsic::arm_sxtb16,
                             {}, {v});
  }
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(a->getType(), (uint64_t)v); };
  if (zext)
    return B.CreateAnd(odd ? B.CreateLShr(a, c(8)) : a, c(0x00ff00ff));
  // The byte at `at`, sign-extended: shifted to the top, then down.
  auto byte = [&](int at) { return B.CreateAShr(B.CreateShl(a, c(24 - 8 * at)), c(24)); };
  return B.CreateOr(B.CreateAnd(byte(odd ? 1 : 0), c(0xffff)), B.CreateShl(byte(odd ? 3 : 2), c(16)));
}

/// mulhi(a, b): Helium's vmulh.s32 on vectors of four int32, else the
/// high word of the 64-bit product in generic IR (smull on Arm cores).
Value *KernelEmitter::mulHigh(Value *a, Value *b) {
  auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  if (vt && vt->getNumElements() == 4 && ME.Features.Helium)
    return B.CreateIntrinsic(llvm::Intrinsic::arm_mve_vmulh, {vt}, {a, b, B.getInt32(0)});
  llvm::Type *wide = vt ? (llvm::Type *)llvm::FixedVectorType::get(B.getInt64Ty(), vt->getNumElements())
                        : (llvm::Type *)B.getInt64Ty();
  Value *p = B.CreateMul(B.CreateSExt(a, wide), B.CreateSExt(b, wide));
  return B.CreateTrunc(B.CreateAShr(p, llvm::ConstantInt::get(wide, 32)), a->getType());
}

} // namespace mlcc::llvmgen
