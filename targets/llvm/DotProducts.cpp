//===- DotProducts.cpp - Integer dot products -----------------------------===//
//
// KernelEmitter's int8 and int16 dot products (the kernel IR's Dot4,
// SDot4, SDot4Narrow and Dot2, added to an accumulator) in the target's
// instructions where it has them: x86 vpdpbusd (VNNI) or pmaddwd pairs,
// AArch64 sdot/usdot or NEON pair sums, Arm smlad; else in generic IR,
// bytes widened, multiplied and summed.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "targets/llvm/LLVMEmitter.h"

#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/IntrinsicsX86.h>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::Value;

/// acc + dot4(a, b) as one vpdpbusd (AArch64: usdot), acc + dot2(a, b) as
/// one smlad, acc + sdot4(a, b) as one sdot, where the target has them
/// (null otherwise).
Value *KernelEmitter::fusedDot(const Expr &e) {
  if (e->Bin != BinOp::Add || e->Type != DType::I32)
    return nullptr;
  auto isDot = [](const Expr &x) {
    return x->Kind == ExprKind::Binary &&
           (x->Bin == BinOp::Dot4 || x->Bin == BinOp::Dot2 || x->Bin == BinOp::SDot4 ||
            x->Bin == BinOp::SDot4Narrow);
  };
  const Expr *acc = &e->A, *dot = &e->B;
  if (!isDot(*dot))
    std::swap(acc, dot);
  if (!isDot(*dot))
    return nullptr;
  if ((*dot)->Bin == BinOp::Dot2) {
    if (!ME.Features.Smlad)
      return nullptr;
    // One smlad per lane (a target with smlad has no vectors: the lanes
    // of a register tile become scalars).
    Value *a = expr((*dot)->A), *b = expr((*dot)->B), *c = expr(*acc);
    if (e->Lanes == 1)
      return B.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {}, {a, b, c});
    Value *r = llvm::PoisonValue::get(c->getType());
    for (int j = 0; j < e->Lanes; ++j)
      r = B.CreateInsertElement(
          r,
          B.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {},
                            {B.CreateExtractElement(a, (uint64_t)j),
                             B.CreateExtractElement(b, (uint64_t)j),
                             B.CreateExtractElement(c, (uint64_t)j)}),
          (uint64_t)j);
    return r;
  }
  const bool sdot = (*dot)->Bin == BinOp::SDot4 || (*dot)->Bin == BinOp::SDot4Narrow;
  if (e->Lanes == 4 && (sdot ? ME.Features.ArmDot : ME.Features.ArmI8mm)) {
    auto *bytes = llvm::FixedVectorType::get(B.getInt8Ty(), 16);
    Value *c = expr(*acc);
    return B.CreateIntrinsic(sdot ? llvm::Intrinsic::aarch64_neon_sdot
                                  : llvm::Intrinsic::aarch64_neon_usdot,
                             {c->getType(), bytes},
                             {c, B.CreateBitCast(expr((*dot)->A), bytes),
                              B.CreateBitCast(expr((*dot)->B), bytes)});
  }
  if ((*dot)->Bin == BinOp::SDot4Narrow && e->Lanes == 4 && ME.Features.ArmMull)
    return pairSumsDot4(expr(*acc), expr((*dot)->A), expr((*dot)->B));
  if (sdot)
    return nullptr;
  llvm::Intrinsic::ID id;
  if (e->Lanes == 16 && ME.Features.Vnni512)
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_512;
  else if (e->Lanes == 8 && ME.Features.Vnni256)
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_256;
  else if (e->Lanes == 4 && ME.Features.Vnni256)
    id = llvm::Intrinsic::x86_avx512_vpdpbusd_128;
  else
    return maddDot4(e->Lanes, expr(*acc), expr((*dot)->A), expr((*dot)->B));
  return B.CreateIntrinsic(id, {}, {expr(*acc), expr((*dot)->A), expr((*dot)->B)});
}

/// acc + sdot4_narrow(a, b) on AArch64 NEON without dot products: the
/// sixteen byte products as 16-bit lanes (smull, smull2), adjacent ones
/// summed (addp: exact, since b never holds -128, so no product passes
/// 128 x 127 and no pair 32512), and the pairs of pairs added to the
/// accumulator as int32 (sadalp). Four instructions for sixteen
/// multiply-adds where smlal does four.
Value *KernelEmitter::pairSumsDot4(Value *acc, Value *a, Value *b) {
  auto *bytes = llvm::FixedVectorType::get(B.getInt8Ty(), 16);
  auto *words = llvm::FixedVectorType::get(B.getInt16Ty(), 8);
  a = B.CreateBitCast(a, bytes);
  b = B.CreateBitCast(b, bytes);
  auto products = [&](int from) {
    std::vector<int> half;
    for (int j = 0; j < 8; ++j)
      half.push_back(from + j);
    return B.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_smull, {words},
                             {B.CreateShuffleVector(a, half), B.CreateShuffleVector(b, half)});
  };
  Value *pairs =
      B.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_addp, {words}, {products(0), products(8)});
  return B.CreateAdd(acc, B.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_saddlp,
                                            {acc->getType(), words}, {pairs}));
}

/// acc + dot4(a, b) on x86 without VNNI: the quads split into their even
/// and odd bytes as 16-bit pairs (a's zero-extended, b's sign-extended),
/// each pair of products summed by one pmaddwd; exact, since no pair sum
/// of u8 x s8 products reaches pmaddwd's one overflow (-32768 squared
/// twice). Null where the lanes have no pmaddwd.
Value *KernelEmitter::maddDot4(int lanes, Value *acc, Value *a, Value *b) {
  if (!hasMadd(lanes))
    return nullptr;
  auto *words = llvm::FixedVectorType::get(B.getInt16Ty(), 2 * (unsigned)lanes);
  auto c32 = [&](uint64_t v) { return llvm::ConstantInt::get(a->getType(), v); };
  auto c16 = [&](uint64_t v) { return llvm::ConstantInt::get(words, v); };
  Value *evenA = B.CreateAnd(a, c32(0x00ff00ff));
  Value *oddA = B.CreateAnd(B.CreateLShr(a, c32(8)), c32(0x00ff00ff));
  Value *bw = B.CreateBitCast(b, words);
  Value *evenB = B.CreateBitCast(B.CreateAShr(B.CreateShl(bw, c16(8)), c16(8)), a->getType());
  Value *oddB = B.CreateBitCast(B.CreateAShr(bw, c16(8)), a->getType());
  return B.CreateAdd(B.CreateAdd(acc, pmaddwd(evenA, evenB)), pmaddwd(oddA, oddB));
}

/// Whether vectors of `lanes` int32 have pmaddwd.
bool KernelEmitter::hasMadd(int lanes) const {
  return (lanes == 16 && ME.Features.Madd512) || (lanes == 8 && ME.Features.Madd256) ||
         (lanes == 4 && ME.Features.Madd128);
}

/// dot2 of two vectors of int32 (hasMadd of their lanes) as one pmaddwd.
Value *KernelEmitter::pmaddwd(Value *a, Value *b) {
  unsigned lanes = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
  llvm::Intrinsic::ID id = lanes == 16  ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                           : lanes == 8 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                        : llvm::Intrinsic::x86_sse2_pmadd_wd;
  auto *words = llvm::FixedVectorType::get(B.getInt16Ty(), 2 * lanes);
  return B.CreateIntrinsic(id, {}, {B.CreateBitCast(a, words), B.CreateBitCast(b, words)});
}

/// dot2(a, b): one pmaddwd on x86 vectors that have it, else in generic
/// IR: the signed 16-bit halves multiplied and summed.
Value *KernelEmitter::dot2(Value *a, Value *b) {
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
    if (hasMadd((int)vt->getNumElements()))
      return pmaddwd(a, b);
  Value *sixteen = llvm::ConstantInt::get(a->getType(), 16);
  auto low = [&](Value *v) { return B.CreateAShr(B.CreateShl(v, sixteen), sixteen); };
  return B.CreateAdd(B.CreateMul(low(a), low(b)),
                     B.CreateMul(B.CreateAShr(a, sixteen), B.CreateAShr(b, sixteen)));
}

/// dot4(a, b) (sdot4: a's bytes signed too) in generic IR: bytes widened,
/// multiplied, and each group of four summed.
Value *KernelEmitter::dot4(Value *a, Value *b, bool signedA) {
  auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  unsigned n = vt ? vt->getNumElements() : 1;
  auto *bytes = llvm::FixedVectorType::get(B.getInt8Ty(), 4 * n);
  auto *wide = llvm::FixedVectorType::get(B.getInt32Ty(), 4 * n);
  Value *p = B.CreateMul(signedA ? B.CreateSExt(B.CreateBitCast(a, bytes), wide)
                                 : B.CreateZExt(B.CreateBitCast(a, bytes), wide),
                         B.CreateSExt(B.CreateBitCast(b, bytes), wide));
  Value *sum = nullptr;
  for (unsigned j = 0; j < 4; ++j) {
    std::vector<int> mask;
    for (unsigned i = 0; i < n; ++i)
      mask.push_back((int)(4 * i + j));
    Value *part = B.CreateShuffleVector(p, mask);
    sum = sum ? B.CreateAdd(sum, part) : part;
  }
  return vt ? sum : B.CreateExtractElement(sum, (uint64_t)0);
}

} // namespace mlcc::llvmgen
