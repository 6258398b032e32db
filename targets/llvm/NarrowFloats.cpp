//===- NarrowFloats.cpp - 16- and 8-bit float conversions in IR -----------===//
//
// The module's conversions between the narrow floats (f16, bf16 and the
// float8 types, kept as integer bit patterns) and f32: small internal
// functions, always inlined, made of integer operations and selects only,
// so that the library needs no compiler runtime helpers and every target
// rounds alike (to nearest even, as compiler/support/Float16.h and
// Float8.h do on the host).
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"
#include "targets/llvm/LLVMEmitter.h"

#include "compiler/support/Float16.h"
#include "compiler/support/Float8.h"

namespace mlcc::llvmgen {

using llvm::IRBuilder;
using llvm::Value;

namespace {

// The conversions, each from the argument `arg` of a helper function whose
// entry block `b` is in; each returns the result. `arg` is a scalar or a
// vector: the integer operations and selects work lane by lane.

/// `scalar`, or a vector of it with as many lanes as `arg` has.
llvm::Type *lanesOf(llvm::Type *scalar, Value *arg) {
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(arg->getType()))
    return llvm::FixedVectorType::get(scalar, vt->getNumElements());
  return scalar;
}

/// float8 e8m0 (a power of two, 0xff NaN) -> f32.
Value *e8m0ToFloat(IRBuilder<> &b, Value *arg) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value *c = b.CreateZExt(arg, i32);
  Value *bits = b.CreateShl(c, 23);
  bits = b.CreateSelect(b.CreateICmpEQ(c, c32(0)), c32(0x00400000u), bits);
  bits = b.CreateSelect(b.CreateICmpEQ(c, c32(0xffu)), c32(0x7fc00000u), bits);
  return b.CreateBitCast(bits, f32);
}

/// f32 -> float8 e8m0, rounded up, saturating.
Value *floatToE8m0(IRBuilder<> &b, Value *arg) {
  llvm::Type *i8 = lanesOf(b.getInt8Ty(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value *ax = b.CreateAnd(b.CreateBitCast(arg, i32), c32(0x7fffffffu));
  Value *e = b.CreateAdd(b.CreateLShr(ax, 23),
                         b.CreateZExt(b.CreateICmpNE(b.CreateAnd(ax, c32(0x7fffffu)), c32(0)), i32));
  Value *res = b.CreateSelect(b.CreateICmpUGT(e, c32(254)), c32(254), e);
  res = b.CreateSelect(b.CreateICmpULE(ax, c32(0x00400000u)), c32(0), res);
  res = b.CreateSelect(b.CreateICmpUGT(ax, c32(0x7f800000u)), c32(0xffu), res);
  return b.CreateTrunc(res, i8);
}

/// float8 of format `fmt` -> f32, exact.
Value *float8ToF32(IRBuilder<> &b, Value *arg, const Float8Format &fmt) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  auto asFloat = [&](uint32_t bits) {
    return llvm::ConstantFP::get(f32, (double)mlcc::bitsToFloat(bits));
  };
  uint32_t m = fmt.ManBits, bias = (uint32_t)fmt.Bias, eb = 7 - m;
  Value *c = b.CreateZExt(arg, i32);
  Value *sign = b.CreateShl(b.CreateAnd(c, c32(0x80u)), 24);
  Value *e = b.CreateAnd(b.CreateLShr(c, m), c32((1u << eb) - 1u));
  Value *man = b.CreateAnd(c, c32((1u << m) - 1u));
  Value *normal = b.CreateOr(b.CreateOr(sign, b.CreateShl(b.CreateAdd(e, c32(127u - bias)), 23)),
                             b.CreateShl(man, 23 - m));
  Value *res = b.CreateBitCast(normal, f32);
  // Subnormal: man units of 2^(1 - bias - m), exact.
  Value *sub = b.CreateFMul(b.CreateUIToFP(man, f32), asFloat((128u - bias - m) << 23));
  sub = b.CreateSelect(b.CreateICmpNE(sign, c32(0)), b.CreateFNeg(sub), sub);
  res = b.CreateSelect(b.CreateICmpEQ(e, c32(0)), sub, res);
  if (fmt.HasInf) {
    Value *special = b.CreateOr(
        b.CreateOr(sign, c32(0x7f800000u)),
        b.CreateSelect(b.CreateICmpNE(man, c32(0)), c32(0x400000u), c32(0)));
    res = b.CreateSelect(b.CreateICmpEQ(e, c32((1u << eb) - 1u)),
                         b.CreateBitCast(special, f32), res);
  }
  Value *isNan = fmt.Fnuz ? b.CreateICmpEQ(c, c32(0x80u))
               : fmt.HasInf ? llvm::ConstantInt::getFalse(lanesOf(b.getInt1Ty(), arg))
                            : b.CreateICmpEQ(b.CreateAnd(c, c32(0x7fu)), c32(0x7fu));
  Value *nan = b.CreateBitCast(b.CreateOr(sign, c32(0x7fc00000u)), f32);
  return b.CreateSelect(isNan, nan, res);
}

/// f32 -> float8 of format `fmt`, round to nearest even, no saturation.
Value *f32ToFloat8(IRBuilder<> &b, Value *arg, const Float8Format &fmt) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i8 = lanesOf(b.getInt8Ty(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  auto asFloat = [&](uint32_t bits) {
    return llvm::ConstantFP::get(f32, (double)mlcc::bitsToFloat(bits));
  };
  uint32_t m = fmt.ManBits, bias = (uint32_t)fmt.Bias;
  Value *x = b.CreateBitCast(arg, i32);
  Value *sign = b.CreateAnd(b.CreateLShr(x, 24), c32(0x80u));
  Value *ax = b.CreateAnd(x, c32(0x7fffffffu));
  Value *isSub = b.CreateICmpULT(ax, c32((128u - bias) << 23));
  // Below the smallest normal: units of the smallest subnormal, half to even.
  Value *a = b.CreateFMul(b.CreateBitCast(ax, f32), asFloat((126u + bias + m) << 23));
  Value *n = b.CreateFPToUI(b.CreateSelect(isSub, a, llvm::ConstantFP::get(f32, 0.0)), i32);
  Value *r = b.CreateFSub(a, b.CreateUIToFP(n, f32));
  Value *half = llvm::ConstantFP::get(f32, 0.5);
  Value *up = b.CreateOr(b.CreateFCmpOGT(r, half),
                         b.CreateAnd(b.CreateFCmpOEQ(r, half),
                                     b.CreateICmpNE(b.CreateAnd(n, c32(1)), c32(0))));
  Value *subCode = b.CreateAdd(n, b.CreateZExt(up, i32));
  // Normal: rebias and round the mantissa half to even.
  uint32_t shift = 23 - m;
  Value *adj = b.CreateSub(ax, c32((127u - bias) << 23));
  Value *hn = b.CreateLShr(adj, shift);
  Value *rest = b.CreateAnd(adj, c32((1u << shift) - 1u));
  uint32_t halfBits = 1u << (shift - 1);
  Value *upN = b.CreateOr(b.CreateICmpUGT(rest, c32(halfBits)),
                          b.CreateAnd(b.CreateICmpEQ(rest, c32(halfBits)),
                                      b.CreateICmpNE(b.CreateAnd(hn, c32(1)), c32(0))));
  Value *normCode = b.CreateAdd(hn, b.CreateZExt(upN, i32));
  Value *code = b.CreateSelect(isSub, subCode, normCode);
  Value *res = b.CreateOr(sign, code);
  if (fmt.Fnuz)
    res = b.CreateSelect(b.CreateICmpEQ(code, c32(0)), c32(0), res);
  Value *overflow = fmt.Fnuz ? (Value *)c32(0x80u)
                             : b.CreateOr(sign, c32(fmt.HasInf ? 0x7cu : 0x7fu));
  res = b.CreateSelect(b.CreateICmpUGT(code, c32(fmt.MaxCode)), overflow, res);
  Value *nan = fmt.Fnuz ? (Value *)c32(0x80u)
                        : b.CreateOr(sign, c32(fmt.HasInf ? 0x7eu : 0x7fu));
  res = b.CreateSelect(b.CreateICmpUGT(ax, c32(0x7f800000u)), nan, res);
  return b.CreateTrunc(res, i8);
}

/// bf16 -> f32: the high half of its bits.
Value *bf16ToF32(IRBuilder<> &b, Value *arg) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  Value *x = b.CreateShl(b.CreateZExt(arg, i32), 16);
  return b.CreateBitCast(x, f32);
}

/// f32 -> bf16, round to nearest even (NaN stays NaN).
Value *f32ToBf16(IRBuilder<> &b, Value *arg) {
  llvm::Type *i16 = lanesOf(b.getInt16Ty(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value *x = b.CreateBitCast(arg, i32);
  Value *isNan = b.CreateICmpUGT(b.CreateAnd(x, c32(0x7fffffffu)), c32(0x7f800000u));
  Value *nan = b.CreateOr(b.CreateLShr(x, 16), c32(0x40u));
  Value *lsb = b.CreateAnd(b.CreateLShr(x, 16), c32(1));
  Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, c32(0x7fffu)), lsb), 16);
  return b.CreateTrunc(b.CreateSelect(isNan, nan, rounded), i16);
}

/// half -> f32, exact.
Value *halfToF32(IRBuilder<> &b, Value *arg) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value *h = b.CreateZExt(arg, i32);
  Value *sign = b.CreateShl(b.CreateAnd(h, c32(0x8000u)), 16);
  Value *e = b.CreateAnd(b.CreateLShr(h, 10), c32(0x1fu));
  Value *m = b.CreateAnd(h, c32(0x3ffu));
  Value *special = b.CreateOr(b.CreateOr(sign, c32(0x7f800000u)), b.CreateShl(m, 13));
  Value *normal = b.CreateOr(
      b.CreateOr(sign, b.CreateShl(b.CreateAdd(e, c32(112)), 23)), b.CreateShl(m, 13));
  Value *sub = b.CreateFMul(b.CreateUIToFP(m, f32),
                            llvm::ConstantFP::get(f32, 1.0 / 16777216.0));
  sub = b.CreateSelect(b.CreateICmpNE(sign, c32(0)), b.CreateFNeg(sub), sub);
  Value *bits = b.CreateSelect(b.CreateICmpEQ(e, c32(0x1f)), special, normal);
  Value *asFloat = b.CreateBitCast(bits, f32);
  return b.CreateSelect(b.CreateICmpEQ(e, c32(0)), sub, asFloat);
}

/// f32 -> half, round to nearest even.
Value *f32ToHalf(IRBuilder<> &b, Value *arg) {
  llvm::Type *f32 = lanesOf(b.getFloatTy(), arg), *i16 = lanesOf(b.getInt16Ty(), arg), *i32 = lanesOf(b.getInt32Ty(), arg);
  auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
  Value *x = b.CreateBitCast(arg, i32);
  Value *sign = b.CreateAnd(b.CreateLShr(x, 16), c32(0x8000u));
  Value *ax = b.CreateAnd(x, c32(0x7fffffffu));
  Value *infNan = b.CreateOr(
      b.CreateOr(sign, c32(0x7c00u)),
      b.CreateSelect(b.CreateICmpUGT(ax, c32(0x7f800000u)), c32(0x200u), c32(0)));
  Value *overflow = b.CreateOr(sign, c32(0x7c00u));
  // Subnormal: scale to units of 2^-24 and round half to even.
  Value *a = b.CreateFMul(b.CreateBitCast(ax, f32), llvm::ConstantFP::get(f32, 16777216.0));
  Value *n = b.CreateFPToUI(b.CreateSelect(b.CreateICmpULT(ax, c32(0x38800000u)), a,
                                           llvm::ConstantFP::get(f32, 0.0)),
                            i32);
  Value *r = b.CreateFSub(a, b.CreateUIToFP(n, f32));
  Value *half = llvm::ConstantFP::get(f32, 0.5);
  Value *up = b.CreateOr(b.CreateFCmpOGT(r, half),
                         b.CreateAnd(b.CreateFCmpOEQ(r, half),
                                     b.CreateICmpNE(b.CreateAnd(n, c32(1)), c32(0))));
  Value *subnormal = b.CreateOr(sign, b.CreateAdd(n, b.CreateZExt(up, i32)));
  // Normal.
  Value *hn = b.CreateOr(b.CreateShl(b.CreateSub(b.CreateLShr(ax, 23), c32(112)), 10),
                         b.CreateLShr(b.CreateAnd(ax, c32(0x7fffffu)), 13));
  Value *rest = b.CreateAnd(ax, c32(0x1fffu));
  Value *upN = b.CreateOr(b.CreateICmpUGT(rest, c32(0x1000u)),
                          b.CreateAnd(b.CreateICmpEQ(rest, c32(0x1000u)),
                                      b.CreateICmpNE(b.CreateAnd(hn, c32(1)), c32(0))));
  Value *normal = b.CreateOr(sign, b.CreateAdd(hn, b.CreateZExt(upN, i32)));
  Value *res = b.CreateSelect(b.CreateICmpULT(ax, c32(0x38800000u)), subnormal, normal);
  res = b.CreateSelect(b.CreateICmpUGE(ax, c32(0x477ff000u)), overflow, res);
  res = b.CreateSelect(b.CreateICmpUGE(ax, c32(0x7f800000u)), infNan, res);
  return b.CreateTrunc(res, i16);
}

} // namespace

/// An internal, always-inlined conversion function `ret name(arg)`; `b` is
/// positioned in its entry block.
llvm::Function *ModuleEmitter::newHelper(const std::string &name, llvm::Type *ret, llvm::Type *arg,
                                         IRBuilder<> &b) {
  auto *fty = llvm::FunctionType::get(ret, {arg}, false);
  auto *f = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, M);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(Ctx, "entry", f));
  return f;
}

/// `scalar`, or a vector of `lanes` of it when lanes > 1.
static llvm::Type *withLanes(llvm::Type *scalar, unsigned lanes) {
  return lanes > 1 ? llvm::FixedVectorType::get(scalar, lanes) : scalar;
}

/// The helper's name for `lanes` lanes: `name`, or `name.vN`.
static std::string laneName(const std::string &name, unsigned lanes) {
  return lanes > 1 ? name + ".v" + std::to_string(lanes) : name;
}

llvm::Function *ModuleEmitter::float8Helper(const std::string &name0, DType t, bool toFloat,
                                            unsigned lanes) {
  const std::string name = laneName(name0, lanes);
  if (auto *f = M.getFunction(name))
    return f;
  llvm::Type *f32 = withLanes(llvm::Type::getFloatTy(Ctx), lanes),
             *i8 = withLanes(llvm::Type::getInt8Ty(Ctx), lanes);
  IRBuilder<> b(Ctx);
  llvm::Function *f = newHelper(name, toFloat ? f32 : i8, toFloat ? i8 : f32, b);
  Value *arg = f->getArg(0);
  Value *res;
  if (t == DType::F8E8M0)
    res = toFloat ? e8m0ToFloat(b, arg) : floatToE8m0(b, arg);
  else
    res = toFloat ? float8ToF32(b, arg, float8Format(t)) : f32ToFloat8(b, arg, float8Format(t));
  b.CreateRet(res);
  return f;
}

/// 16-bit float conversions as small internal functions (always inlined).
llvm::Function *ModuleEmitter::float16Helper(const std::string &name0, bool toFloat, bool bf16,
                                             unsigned lanes) {
  const std::string name = laneName(name0, lanes);
  if (auto *f = M.getFunction(name))
    return f;
  llvm::Type *f32 = withLanes(llvm::Type::getFloatTy(Ctx), lanes),
             *i16 = withLanes(llvm::Type::getInt16Ty(Ctx), lanes);
  IRBuilder<> b(Ctx);
  llvm::Function *f = newHelper(name, toFloat ? f32 : i16, toFloat ? i16 : f32, b);
  Value *arg = f->getArg(0);
  Value *res;
  if (bf16)
    res = toFloat ? bf16ToF32(b, arg) : f32ToBf16(b, arg);
  else if (Features.HalfConversions) {
    // The target converts in one instruction (x86 F16C vcvtph2ps/vcvtps2ph,
    // AArch64 fcvt/fcvtl/fcvtn), rounding to nearest even as the selects do.
    llvm::Type *h = withLanes(llvm::Type::getHalfTy(Ctx), lanes);
    res = toFloat ? b.CreateFPExt(b.CreateBitCast(arg, h), f32)
                  : b.CreateBitCast(b.CreateFPTrunc(arg, h), i16);
    if (toFloat && Features.FenceHalfWidening)
      res = b.CreateArithmeticFence(res, f32);
  } else
    res = toFloat ? halfToF32(b, arg) : f32ToHalf(b, arg);
  b.CreateRet(res);
  return f;
}

} // namespace mlcc::llvmgen
