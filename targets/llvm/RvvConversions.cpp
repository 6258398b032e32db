//===- RvvConversions.cpp - RVV float-to-integer without .rtz -------------===//
//
// RISC-V selects a vector float-to-integer conversion toward zero (fptosi,
// fptoui, their saturating intrinsics, and llvm.trunc) as vfcvt.rtz.*,
// vfwcvt.rtz.* or vfncvt.rtz.*. QEMU 7.2, the user-mode emulator of Debian
// 12 that our cross tests and many users' CI run RVV code under, aborts on
// those instructions (an assertion in its decoder), so the LLVM module for
// an RVV target has them rewritten before code generation:
//   - a conversion to an integer is done on the float's bits: the
//     significand with its implicit one, shifted by the exponent, negated
//     for a negative sign (exact for every value the conversion defines);
//     the saturating forms clamp first and select the limits and 0 for NaN;
//   - llvm.trunc(x) is copysign(floor(|x|), x) (floor converts with a
//     static rounding mode, not .rtz).
// Scalar conversions are left alone (QEMU runs fcvt.*.rtz correctly).
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/LLVMEmitter.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <vector>

namespace mlcc::llvmgen {

namespace {

using llvm::Value;

/// The integer (of the float's width) that the float vector `x` truncates
/// to, computed on its bits; `isSigned` negates for a negative sign. `x`
/// must be within the integer's range (what fptosi/fptoui define).
Value *truncateByBits(llvm::IRBuilderBase &b, Value *x, bool isSigned) {
  auto *vt = llvm::cast<llvm::VectorType>(x->getType());
  bool dbl = vt->getElementType()->isDoubleTy();
  unsigned bits = dbl ? 64 : 32, mant = dbl ? 52 : 23, bias = dbl ? 1023 : 127;
  llvm::Type *it = llvm::VectorType::get(b.getIntNTy(bits), vt->getElementCount());
  auto c = [&](uint64_t v) { return llvm::ConstantInt::get(it, v); };
  Value *raw = b.CreateBitCast(x, it);
  Value *exp = b.CreateAnd(b.CreateLShr(raw, c(mant)), c(dbl ? 0x7ff : 0xff));
  Value *sig = b.CreateOr(b.CreateAnd(raw, c((uint64_t(1) << mant) - 1)), c(uint64_t(1) << mant));
  // value = sig * 2^(exp - bias - mant): a left shift when exp >= bias +
  // mant, else a right shift (by at least mant + 1, i.e. to 0, below 1).
  Value *up = b.CreateICmpUGE(exp, c(bias + mant));
  Value *left = b.CreateSub(exp, c(bias + mant));
  Value *right = b.CreateSub(c(bias + mant), exp);
  // Shift amounts of the width or more are poison: clamped (a left shift
  // that large is out of range anyway; the right shift gives 0).
  auto clamp = [&](Value *s) {
    return b.CreateSelect(b.CreateICmpUGT(s, c(bits - 1)), c(bits - 1), s);
  };
  Value *mag = b.CreateSelect(up, b.CreateShl(sig, clamp(left)),
                              b.CreateLShr(sig, clamp(right)));
  if (!isSigned)
    return mag;
  Value *neg = b.CreateICmpSLT(raw, llvm::Constant::getNullValue(it));
  return b.CreateSelect(neg, b.CreateNeg(mag), mag);
}

/// fptosi/fptoui of the float vector `x` to the integer vector type `to`,
/// on bits: computed in the float's width or the integer's, whichever is
/// wider (the float widened exactly), then narrowed.
Value *convert(llvm::IRBuilderBase &b, Value *x, llvm::Type *to, bool isSigned) {
  auto *vt = llvm::cast<llvm::VectorType>(x->getType());
  unsigned toBits = to->getScalarSizeInBits();
  if (toBits > 32 && vt->getElementType()->isFloatTy())
    x = b.CreateFPExt(x, llvm::VectorType::get(b.getDoubleTy(), vt->getElementCount()));
  Value *r = truncateByBits(b, x, isSigned);
  return b.CreateTrunc(r, to); // a no-op when the widths match
}

} // namespace

Value *saturatingToInt(llvm::IRBuilderBase &b, Value *x, llvm::Type *to, bool isSigned,
                       bool byBits) {
  unsigned bits = to->getScalarSizeInBits();
  bool dbl = x->getType()->getScalarType()->isDoubleTy();
  double lo = isSigned ? -std::ldexp(1.0, (int)bits - 1) : 0.0;
  double limit = isSigned ? std::ldexp(1.0, (int)bits - 1) : std::ldexp(1.0, (int)bits);
  double hi = dbl ? std::nextafter(limit, 0.0) : (double)std::nextafter((float)limit, 0.0f);
  llvm::Type *ft = x->getType();
  auto f = [&](double v) { return llvm::ConstantFP::get(ft, v); };
  Value *clamped = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, f(hi));
  clamped = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, clamped, f(lo));
  Value *r = byBits      ? convert(b, clamped, to, isSigned)
             : isSigned ? b.CreateFPToSI(clamped, to)
                        : b.CreateFPToUI(clamped, to);
  llvm::APInt max = isSigned ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits);
  r = b.CreateSelect(b.CreateFCmpOGE(x, f(limit)), llvm::ConstantInt::get(to, max), r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), llvm::Constant::getNullValue(to), r);
}

void avoidVectorRtz(llvm::Module &m) {
  std::vector<llvm::Instruction *> work;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb) {
        if (!i.getType()->isVectorTy())
          continue;
        if (llvm::isa<llvm::FPToSIInst>(i) || llvm::isa<llvm::FPToUIInst>(i)) {
          work.push_back(&i);
          continue;
        }
        if (auto *ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i)) {
          llvm::Intrinsic::ID id = ii->getIntrinsicID();
          if (id == llvm::Intrinsic::fptosi_sat || id == llvm::Intrinsic::fptoui_sat ||
              id == llvm::Intrinsic::trunc)
            work.push_back(&i);
        }
      }
  for (llvm::Instruction *i : work) {
    llvm::IRBuilder<> b(i);
    Value *x = i->getOperand(0), *r = nullptr;
    if (llvm::isa<llvm::FPToSIInst>(i) || llvm::isa<llvm::FPToUIInst>(i)) {
      r = convert(b, x, i->getType(), llvm::isa<llvm::FPToSIInst>(i));
    } else {
      llvm::Intrinsic::ID id = llvm::cast<llvm::IntrinsicInst>(i)->getIntrinsicID();
      if (id == llvm::Intrinsic::trunc) {
        Value *mag = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor,
                                            b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x));
        r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, x);
      } else {
        r = saturatingToInt(b, x, i->getType(), id == llvm::Intrinsic::fptosi_sat, true);
      }
    }
    i->replaceAllUsesWith(r);
    i->eraseFromParent();
  }
}

} // namespace mlcc::llvmgen
