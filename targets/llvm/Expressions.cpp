//===- Expressions.cpp - Kernel expressions, operators and casts ----------===//
//
// KernelEmitter's expressions: constants, variables, loads (strided ones
// in StridedAccess.cpp), the unary and binary operators on floats and
// integers (the integer forms that take a target's own instructions first:
// DotProducts.cpp and IntegerForms.cpp), selects, broadcasts, bit casts,
// and casts between every pair of types (16-bit and 8-bit floats through
// f32, with the module's conversion functions, NarrowFloats.cpp).
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/kernel/Schedule.h"
#include "compiler/support/Error.h"
#include "compiler/support/NarrowFloat.h"
#include "targets/llvm/LLVMEmitter.h"

#include <llvm/IR/Constants.h>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::Value;

namespace {

/// The float constant `v` is, or splats; null otherwise.
const llvm::ConstantFP *floatConstant(Value *v) {
  auto *c = llvm::dyn_cast<llvm::Constant>(v);
  if (c && v->getType()->isVectorTy())
    c = c->getSplatValue();
  return llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
}

/// A floating-point constant (scalar or splat) that is not NaN.
bool notNaNConstant(Value *v) {
  const llvm::ConstantFP *f = floatConstant(v);
  return f && !f->isNaN();
}

/// A constant (or splat) that is neither NaN nor a zero of either sign:
/// Min and Max against it are llvm.minimum/maximum exactly (they differ
/// from the IR's ordered select only on NaN payloads, never returned
/// here, and on the sign of equal zeros).
bool nonZeroNumberConstant(Value *v) {
  const llvm::ConstantFP *f = floatConstant(v);
  return f && !f->isNaN() && !f->isZero();
}

} // namespace

Value *KernelEmitter::expr(const Expr &e) {
  switch (e->Kind) {
  case ExprKind::Const:
    return constant(*e);
  case ExprKind::VarRef: {
    auto it = Vars.find(e->V.get());
    MLCC_CHECK(it != Vars.end(), "variable " << e->V->Name << " not bound");
    return it->second;
  }
  case ExprKind::Load:
    return load(e);
  case ExprKind::Unary:
    return unary(e->Un, e->A->Type, expr(e->A));
  case ExprKind::Binary:
    if (Value *v = fusedDot(e))
      return v;
    if (Value *v = wordOfBytes(*e))
      return v;
    if (Value *v = wideningMul(*e))
      return v;
    return binary(e->Bin, e->A->Type, expr(e->A), expr(e->B));
  case ExprKind::Select:
    return B.CreateSelect(expr(e->A), expr(e->B), expr(e->C));
  case ExprKind::Cast:
    return castValue(e->Type, e->A->Type, expr(e->A));
  case ExprKind::Broadcast:
    if (e->A->Lanes > 1)
      return B.CreateShuffleVector(expr(e->A),
                                   llvm::SmallVector<int>((size_t)e->Lanes, (int)e->IntValue));
    return B.CreateVectorSplat((unsigned)e->Lanes, expr(e->A));
  case ExprKind::BitCast: {
    llvm::Type *t = ME.valueType(e->Type);
    if (e->Lanes > 1)
      t = llvm::FixedVectorType::get(t, (unsigned)e->Lanes);
    return B.CreateBitCast(expr(e->A), t);
  }
  }
  return nullptr;
}

Value *KernelEmitter::load(const Expr &e) {
  if (auto t = Transposed.find(e.get()); t != Transposed.end())
    return t->second;
  if (e->Lanes > 1 && e->Stride > kir::kMaxStride)
    return gather(*e);
  if (e->Lanes > 1 && e->Stride == 1)
    return B.CreateAlignedLoad(
        llvm::FixedVectorType::get(ME.memoryType(e->Buf->Type), (unsigned)e->Lanes),
        address(e->Buf.get(), expr(e->A)), llvm::Align(dtypeSize(e->Buf->Type)));
  if (e->Lanes > 1)
    return stridedLoad(*e);
  Value *v = B.CreateLoad(ME.memoryType(e->Buf->Type),
                          address(e->Buf.get(), expr(e->A)));
  if (e->Buf->Type == DType::Bool)
    v = B.CreateICmpNE(v, B.getInt8(0));
  return v;
}

llvm::Constant *KernelEmitter::constant(const ExprNode &e) {
  llvm::Type *t = ME.valueType(e.Type);
  switch (e.Type) {
  case DType::F32:
  case DType::F64:
    return llvm::ConstantFP::get(t, e.FloatValue);
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
    // The bit pattern, encoded on the host.
    return llvm::ConstantInt::get(t, floatToNarrowBits(e.Type, (float)e.FloatValue));
  default:
    return llvm::ConstantInt::get(t, (uint64_t)e.IntValue, isSignedInt(e.Type));
  }
}

Value *KernelEmitter::intrinsic(llvm::Intrinsic::ID id, Value *a, Value *b) {
  std::vector<Value *> args = {a};
  if (b)
    args.push_back(b);
  return B.CreateIntrinsic(id, {a->getType()}, args);
}

Value *KernelEmitter::libcall(const char *name, DType t, Value *a, Value *b) {
  std::string n = name;
  if (t == DType::F32)
    n += "f";
  llvm::FunctionCallee f = ME.libm(n, a->getType(), b ? 2 : 1);
  return b ? B.CreateCall(f, {a, b}) : B.CreateCall(f, {a});
}

/// An f16 value (i16 bits in registers) as LLVM's half, or back.
static Value *asHalf(llvm::IRBuilder<> &b, Value *v, bool toHalf) {
  llvm::Type *scalar = toHalf ? b.getHalfTy() : b.getInt16Ty();
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType()))
    return b.CreateBitCast(v, llvm::FixedVectorType::get(scalar, vt->getNumElements()));
  return b.CreateBitCast(v, scalar);
}

Value *KernelEmitter::unary(UnOp op, DType t, Value *a) {
  if (t == DType::F16 && (op == UnOp::Neg || op == UnOp::Abs))
    return asHalf(B, unary(op, DType::F32, asHalf(B, a, true)), false);
  if (isFloat(t)) {
    using namespace llvm;
    switch (op) {
    case UnOp::Neg: return B.CreateFNeg(a);
    case UnOp::Abs: return intrinsic(Intrinsic::fabs, a);
    case UnOp::Sqrt: return intrinsic(Intrinsic::sqrt, a);
    case UnOp::Exp: return intrinsic(Intrinsic::exp, a);
    case UnOp::Log: return intrinsic(Intrinsic::log, a);
    case UnOp::Sin: return intrinsic(Intrinsic::sin, a);
    case UnOp::Cos: return intrinsic(Intrinsic::cos, a);
    case UnOp::Floor: return intrinsic(Intrinsic::floor, a);
    case UnOp::Ceil: return intrinsic(Intrinsic::ceil, a);
    case UnOp::Round: return intrinsic(Intrinsic::rint, a);
    case UnOp::Trunc: return intrinsic(Intrinsic::trunc, a);
    case UnOp::Tan: return libcall("tan", t, a);
    case UnOp::Asin: return libcall("asin", t, a);
    case UnOp::Acos: return libcall("acos", t, a);
    case UnOp::Atan: return libcall("atan", t, a);
    case UnOp::Sinh: return libcall("sinh", t, a);
    case UnOp::Cosh: return libcall("cosh", t, a);
    case UnOp::Tanh: return libcall("tanh", t, a);
    case UnOp::Asinh: return libcall("asinh", t, a);
    case UnOp::Acosh: return libcall("acosh", t, a);
    case UnOp::Atanh: return libcall("atanh", t, a);
    case UnOp::Erf: return libcall("erf", t, a);
    case UnOp::IsNaN: return B.CreateFCmpUNO(a, a);
    case UnOp::IsInf:
      return B.CreateFCmpOEQ(intrinsic(Intrinsic::fabs, a),
                             llvm::ConstantFP::getInfinity(a->getType()));
    default:
      MLCC_CHECK(false, "unary " << unOpName(op) << " on float");
    }
  }
  switch (op) {
  case UnOp::Neg: return B.CreateNeg(a);
  case UnOp::Not: return B.CreateNot(a);
  case UnOp::BitNot: return B.CreateNot(a);
  case UnOp::SextBytes02:
  case UnOp::SextBytes13: return sextBytePairs(a, op == UnOp::SextBytes13);
  case UnOp::ZextBytes02:
  case UnOp::ZextBytes13: return sextBytePairs(a, op == UnOp::ZextBytes13, true);
  case UnOp::Abs:
    if (isUnsignedInt(t))
      return a;
    return B.CreateSelect(B.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)),
                          B.CreateNeg(a), a);
  default:
    MLCC_CHECK(false, "unary " << unOpName(op) << " on " << dtypeName(t));
  }
  return nullptr;
}

Value *KernelEmitter::binary(BinOp op, DType t, Value *a, Value *b) {
  if (t == DType::F16) { // halfArithmetic: native f16, rounded per operation
    Value *r = floatBinary(op, t, asHalf(B, a, true), asHalf(B, b, true));
    return isComparison(op) ? r : asHalf(B, r, false);
  }
  if (isFloat(t))
    return floatBinary(op, t, a, b);
  return integerBinary(op, t, a, b);
}

Value *KernelEmitter::floatBinary(BinOp op, DType t, Value *a, Value *b) {
  switch (op) {
  case BinOp::Add: return B.CreateFAdd(a, b);
  case BinOp::Sub: return B.CreateFSub(a, b);
  case BinOp::Mul: return B.CreateFMul(a, b);
  case BinOp::Div: return B.CreateFDiv(a, b);
  case BinOp::Rem: return libcall("fmod", t, a, b);
  case BinOp::Pow: return intrinsic(llvm::Intrinsic::pow, a, b);
  // Min and Max propagate a NaN of either operand. Against a constant
  // that is not NaN (a clamp's bounds), one ordered comparison with
  // the constant first does it (a NaN a compares false and is kept):
  // one minps/maxps on x86 instead of two comparisons and a blend.
  case BinOp::Min:
    if (ME.Features.FloatMinMax && nonZeroNumberConstant(b))
      return B.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a, b);
    if (notNaNConstant(b))
      return B.CreateSelect(B.CreateFCmpOLT(b, a), b, a);
    return B.CreateSelect(B.CreateOr(B.CreateFCmpUNO(a, a), B.CreateFCmpOLT(a, b)), a, b);
  case BinOp::Max:
    if (ME.Features.FloatMinMax && nonZeroNumberConstant(b))
      return B.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a, b);
    if (notNaNConstant(b))
      return B.CreateSelect(B.CreateFCmpOGT(b, a), b, a);
    return B.CreateSelect(B.CreateOr(B.CreateFCmpUNO(a, a), B.CreateFCmpOGT(a, b)), a, b);
  case BinOp::Eq: return B.CreateFCmpOEQ(a, b);
  case BinOp::Ne: return B.CreateFCmpUNE(a, b);
  case BinOp::Lt: return B.CreateFCmpOLT(a, b);
  case BinOp::Le: return B.CreateFCmpOLE(a, b);
  case BinOp::Gt: return B.CreateFCmpOGT(a, b);
  case BinOp::Ge: return B.CreateFCmpOGE(a, b);
  default:
    MLCC_CHECK(false, "binary " << binOpName(op) << " on float");
  }
  return nullptr;
}

Value *KernelEmitter::integerBinary(BinOp op, DType t, Value *a, Value *b) {
  bool uns = isUnsignedInt(t);
  unsigned width = a->getType()->getScalarSizeInBits();
  auto zero = llvm::ConstantInt::get(a->getType(), 0);
  switch (op) {
  case BinOp::Add: return B.CreateAdd(a, b);
  case BinOp::Sub: return B.CreateSub(a, b);
  case BinOp::Mul: return B.CreateMul(a, b);
  case BinOp::Div: return uns ? B.CreateUDiv(a, b) : B.CreateSDiv(a, b);
  case BinOp::Rem: return uns ? B.CreateURem(a, b) : B.CreateSRem(a, b);
  case BinOp::Min:
    return B.CreateSelect(uns ? B.CreateICmpULT(a, b) : B.CreateICmpSLT(a, b), a, b);
  case BinOp::Max:
    return B.CreateSelect(uns ? B.CreateICmpUGT(a, b) : B.CreateICmpSGT(a, b), a, b);
  case BinOp::And: return B.CreateAnd(a, b);
  case BinOp::Or: return B.CreateOr(a, b);
  case BinOp::Xor: return B.CreateXor(a, b);
  case BinOp::BitAnd: return B.CreateAnd(a, b);
  case BinOp::BitOr: return B.CreateOr(a, b);
  case BinOp::BitXor: return B.CreateXor(a, b);
  case BinOp::Shl:
  case BinOp::Shr: {
    // Shifts by >= width are defined (0, or -1 for negative signed >>).
    Value *big = B.CreateICmpUGE(b, llvm::ConstantInt::get(b->getType(), width));
    Value *safe = B.CreateSelect(big, zero, b);
    Value *r, *overflow = zero;
    if (op == BinOp::Shl) {
      r = B.CreateShl(a, safe);
    } else if (uns) {
      r = B.CreateLShr(a, safe);
    } else {
      r = B.CreateAShr(a, safe);
      overflow = B.CreateSelect(B.CreateICmpSLT(a, zero),
                                llvm::ConstantInt::getSigned(a->getType(), -1), zero);
    }
    return B.CreateSelect(big, overflow, r);
  }
  case BinOp::Dot4: return dot4(a, b);
  case BinOp::SDot4:
  case BinOp::SDot4Narrow: return dot4(a, b, true);
  case BinOp::Dot2: return dot2(a, b);
  case BinOp::MulHigh: return mulHigh(a, b);
  case BinOp::Eq: return B.CreateICmpEQ(a, b);
  case BinOp::Ne: return B.CreateICmpNE(a, b);
  case BinOp::Lt: return uns ? B.CreateICmpULT(a, b) : B.CreateICmpSLT(a, b);
  case BinOp::Le: return uns ? B.CreateICmpULE(a, b) : B.CreateICmpSLE(a, b);
  case BinOp::Gt: return uns ? B.CreateICmpUGT(a, b) : B.CreateICmpSGT(a, b);
  case BinOp::Ge: return uns ? B.CreateICmpUGE(a, b) : B.CreateICmpSGE(a, b);
  default:
    MLCC_CHECK(false, "binary " << binOpName(op) << " on " << dtypeName(t));
  }
  return nullptr;
}

Value *KernelEmitter::castValue(DType to, DType from, Value *a) {
  if (to == from)
    return a;
  // The narrow floats convert through f32, lane by lane.
  unsigned lanes = 1;
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
    lanes = vt->getNumElements();
  if (from == DType::F16)
    return castValue(to, DType::F32, B.CreateCall(ME.halfToFloat(lanes), {a}));
  if (from == DType::BF16)
    return castValue(to, DType::F32, B.CreateCall(ME.bf16ToFloat(lanes), {a}));
  if (to == DType::F16)
    return B.CreateCall(ME.floatToHalf(lanes), {castValue(DType::F32, from, a)});
  if (to == DType::BF16)
    return B.CreateCall(ME.floatToBf16(lanes), {castValue(DType::F32, from, a)});
  // float8 values are i8 bit patterns, converted through f32.
  if (isFloat8(from))
    return castValue(to, DType::F32, B.CreateCall(ME.float8ToFloat(from, lanes), {a}));
  if (isFloat8(to))
    return B.CreateCall(ME.floatToFloat8(to, lanes), {castValue(DType::F32, from, a)});
  llvm::Type *t = ME.valueType(to);
  if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
    t = llvm::FixedVectorType::get(t, vt->getNumElements());
  if (to == DType::Bool) {
    if (isFloat(from))
      return B.CreateFCmpUNE(a, llvm::ConstantFP::get(a->getType(), 0.0));
    return B.CreateICmpNE(a, llvm::ConstantInt::get(a->getType(), 0));
  }
  if (isFloat(to)) {
    if (isFloat(from))
      return B.CreateFPCast(a, t);
    if (from == DType::Bool || isUnsignedInt(from))
      return B.CreateUIToFP(a, t);
    return B.CreateSIToFP(a, t);
  }
  if (isFloat(from)) {
    if (a->getType()->isVectorTy() && (a->getType()->getScalarType()->isFloatTy() ||
                                       a->getType()->getScalarType()->isDoubleTy()))
      // (LLVM 19 expands the intrinsic for x86 vectors lane by lane.)
      return saturatingToInt(B, a, t, !isUnsignedInt(to), false);
    auto id = isUnsignedInt(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return B.CreateIntrinsic(id, {t, a->getType()}, {a});
  }
  // Integer to integer: extend by the source's signedness.
  bool srcSigned = isSignedInt(from);
  return B.CreateIntCast(a, t, srcSigned);
}

} // namespace mlcc::llvmgen
