#include "targets/llvm/LLVMEmitter.h"

#include "compiler/kernel/Mutator.h"
#include "compiler/kernel/Schedule.h"
#include "compiler/output/Header.h"
#include "compiler/output/RuntimeAbi.h"
#include "compiler/support/Error.h"
#include "compiler/support/Float16.h"
#include "compiler/support/Float8.h"
#include "compiler/support/NarrowFloat.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MathExtras.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <set>
#include <tuple>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::IRBuilder;
using llvm::Value;

namespace {

/// The target's LLVM type of a runtime struct (compiler/output/RuntimeAbi.h):
/// a named type when `name` is given, else a literal one.
template <size_t N>
llvm::StructType *abiStruct(llvm::LLVMContext &ctx, const abi::Field (&fields)[N],
                            llvm::Type *ptr, llvm::Type *size, const char *name) {
  std::vector<llvm::Type *> types;
  for (abi::Field f : fields)
    types.push_back(f == abi::Field::Ptr    ? ptr
                    : f == abi::Field::Size ? size
                    : f == abi::Field::F32  ? llvm::Type::getFloatTy(ctx)
                    : f == abi::Field::I64  ? llvm::Type::getInt64Ty(ctx)
                                            : llvm::Type::getInt32Ty(ctx));
  return name ? llvm::StructType::create(ctx, types, name) : llvm::StructType::get(ctx, types);
}

/// Module-wide state: types, helper functions, libm declarations.
class ModuleEmitter {
public:
  ModuleEmitter(llvm::LLVMContext &ctx, llvm::Module &m,
                const llvm::DataLayout &dl)
      : Ctx(ctx), M(m), DL(dl) {
    IndexTy = llvm::IntegerType::get(Ctx, DL.getPointerSizeInBits(0));
    PtrTy = llvm::PointerType::get(Ctx, 0);
  }

  llvm::LLVMContext &Ctx;
  llvm::Module &M;
  const llvm::DataLayout &DL;
  llvm::IntegerType *IndexTy;
  llvm::PointerType *PtrTy;
  EmitFeatures Features;

  /// Type of a value of `t` in registers.
  llvm::Type *valueType(DType t) {
    switch (t) {
    case DType::F32: return llvm::Type::getFloatTy(Ctx);
    case DType::F64: return llvm::Type::getDoubleTy(Ctx);
    case DType::F16:
    case DType::BF16: return llvm::Type::getInt16Ty(Ctx);
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
    case DType::F8E8M0: return llvm::Type::getInt8Ty(Ctx);
    case DType::Bool: return llvm::Type::getInt1Ty(Ctx);
    case DType::I8:
    case DType::U8: return llvm::Type::getInt8Ty(Ctx);
    case DType::I16:
    case DType::U16: return llvm::Type::getInt16Ty(Ctx);
    case DType::I32:
    case DType::U32: return llvm::Type::getInt32Ty(Ctx);
    case DType::I64:
    case DType::U64: return llvm::Type::getInt64Ty(Ctx);
    case DType::Index: return IndexTy;
    default:
      MLCC_CHECK(false, "no LLVM type for " << dtypeName(t));
    }
    return nullptr;
  }

  /// Type of an element of `t` in memory (Bool is a byte).
  llvm::Type *memoryType(DType t) {
    return t == DType::Bool ? llvm::Type::getInt8Ty(Ctx) : valueType(t);
  }

  /// A libm function `name` of signature T(T[, T]).
  llvm::FunctionCallee libm(const std::string &name, llvm::Type *t, int args) {
    std::vector<llvm::Type *> params((size_t)args, t);
    auto *fty = llvm::FunctionType::get(t, params, false);
    llvm::FunctionCallee f = M.getOrInsertFunction(name, fty);
    if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
      fn->setDoesNotThrow();
      fn->setOnlyAccessesInaccessibleMemory(); // errno at most
    }
    return f;
  }

  llvm::Function *halfToFloat() { return helper("mlcc.h2f", true, false); }
  llvm::Function *floatToHalf() { return helper("mlcc.f2h", false, false); }
  llvm::Function *bf16ToFloat() { return helper("mlcc.bf2f", true, true); }
  llvm::Function *floatToBf16() { return helper("mlcc.f2bf", false, true); }

  /// float8 <-> f32 conversions of type `t`: the selects-only translation of
  /// compiler/support/Float8.h (float8ToFloat / floatToFloat8).
  llvm::Function *float8ToFloat(DType t) {
    return float8Helper(std::string("mlcc.") + dtypeName(t) + "2f", t, true);
  }
  llvm::Function *floatToFloat8(DType t) {
    return float8Helper(std::string("mlcc.f2") + dtypeName(t), t, false);
  }

private:
  /// An internal, always-inlined conversion function `ret name(arg)`; `b` is
  /// positioned in its entry block.
  llvm::Function *newHelper(const std::string &name, llvm::Type *ret, llvm::Type *arg,
                            IRBuilder<> &b) {
    auto *fty = llvm::FunctionType::get(ret, {arg}, false);
    auto *f = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, name, M);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    b.SetInsertPoint(llvm::BasicBlock::Create(Ctx, "entry", f));
    return f;
  }

  llvm::Function *float8Helper(const std::string &name, DType t, bool toFloat) {
    if (auto *f = M.getFunction(name))
      return f;
    llvm::Type *f32 = llvm::Type::getFloatTy(Ctx), *i8 = llvm::Type::getInt8Ty(Ctx),
               *i32 = llvm::Type::getInt32Ty(Ctx);
    IRBuilder<> b(Ctx);
    llvm::Function *f = newHelper(name, toFloat ? f32 : i8, toFloat ? i8 : f32, b);
    Value *arg = f->getArg(0);
    auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    auto asFloat = [&](uint32_t bits) {
      return llvm::ConstantFP::get(f32, (double)mlcc::bitsToFloat(bits));
    };
    if (t == DType::F8E8M0) {
      if (toFloat) {
        Value *c = b.CreateZExt(arg, i32);
        Value *bits = b.CreateShl(c, 23);
        bits = b.CreateSelect(b.CreateICmpEQ(c, c32(0)), c32(0x00400000u), bits);
        bits = b.CreateSelect(b.CreateICmpEQ(c, c32(0xffu)), c32(0x7fc00000u), bits);
        b.CreateRet(b.CreateBitCast(bits, f32));
        return f;
      }
      Value *ax = b.CreateAnd(b.CreateBitCast(arg, i32), c32(0x7fffffffu));
      Value *e = b.CreateAdd(b.CreateLShr(ax, 23),
                             b.CreateZExt(b.CreateICmpNE(b.CreateAnd(ax, c32(0x7fffffu)), c32(0)), i32));
      Value *res = b.CreateSelect(b.CreateICmpUGT(e, c32(254)), c32(254), e);
      res = b.CreateSelect(b.CreateICmpULE(ax, c32(0x00400000u)), c32(0), res);
      res = b.CreateSelect(b.CreateICmpUGT(ax, c32(0x7f800000u)), c32(0xffu), res);
      b.CreateRet(b.CreateTrunc(res, i8));
      return f;
    }
    Float8Format fmt = float8Format(t);
    uint32_t m = fmt.ManBits, bias = (uint32_t)fmt.Bias, eb = 7 - m;
    if (toFloat) {
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
                   : fmt.HasInf ? b.getFalse()
                                : b.CreateICmpEQ(b.CreateAnd(c, c32(0x7fu)), c32(0x7fu));
      Value *nan = b.CreateBitCast(b.CreateOr(sign, c32(0x7fc00000u)), f32);
      b.CreateRet(b.CreateSelect(isNan, nan, res));
      return f;
    }
    // f32 -> float8, round to nearest even, no saturation.
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
    b.CreateRet(b.CreateTrunc(res, i8));
    return f;
  }

  /// 16-bit float conversions as small internal functions (always inlined).
  llvm::Function *helper(const std::string &name, bool toFloat, bool bf16) {
    if (auto *f = M.getFunction(name))
      return f;
    llvm::Type *f32 = llvm::Type::getFloatTy(Ctx), *i16 = llvm::Type::getInt16Ty(Ctx),
               *i32 = llvm::Type::getInt32Ty(Ctx);
    IRBuilder<> b(Ctx);
    llvm::Function *f = newHelper(name, toFloat ? f32 : i16, toFloat ? i16 : f32, b);
    Value *arg = f->getArg(0);
    auto c32 = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    if (bf16 && toFloat) {
      Value *x = b.CreateShl(b.CreateZExt(arg, i32), 16);
      b.CreateRet(b.CreateBitCast(x, f32));
      return f;
    }
    if (bf16) {
      Value *x = b.CreateBitCast(arg, i32);
      Value *isNan = b.CreateICmpUGT(b.CreateAnd(x, c32(0x7fffffffu)), c32(0x7f800000u));
      Value *nan = b.CreateOr(b.CreateLShr(x, 16), c32(0x40u));
      Value *lsb = b.CreateAnd(b.CreateLShr(x, 16), c32(1));
      Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, c32(0x7fffu)), lsb), 16);
      b.CreateRet(b.CreateTrunc(b.CreateSelect(isNan, nan, rounded), i16));
      return f;
    }
    if (toFloat) {
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
      b.CreateRet(b.CreateSelect(b.CreateICmpEQ(e, c32(0)), sub, asFloat));
      return f;
    }
    // float -> half, round to nearest even.
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
    b.CreateRet(b.CreateTrunc(res, i16));
    return f;
  }
};

/// Translates one kernel into a function.
class KernelEmitter {
public:
  KernelEmitter(ModuleEmitter &me, llvm::Function *f, llvm::BasicBlock *entry)
      : ME(me), F(f), B(me.Ctx), Entry(entry) {
    // a * b + c may become one fused multiply-add (at most one rounding
    // fewer); nothing else about floating point is relaxed.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    B.setFastMathFlags(fmf);
  }

  void bindParam(const BufferNode *buf, Value *ptr) { bind(buf, ptr); }
  /// The kernel's `const mlcc_run_options *` (may be null at run time).
  void setOptions(Value *opts) { Opts = opts; }

  void stmt(const Stmt &s) {
    switch (s->Kind) {
    case StmtKind::Block: {
      // The loads ahead stand for their expressions in this block only (an
      // unrolled loop emits it again with other indices).
      std::vector<const ExprNode *> ahead = loadTransposedGroups(s->Body);
      std::vector<StoreGroup> groups = storeGroups(s->Body);
      std::map<const StmtNode *, std::pair<StoreGroup *, size_t>> member;
      for (auto &g : groups)
        for (size_t k = 0; k < g.Members.size(); ++k)
          member[g.Members[k]] = {&g, k};
      for (size_t i = 0; i < s->Body.size();) {
        auto m = member.find(s->Body[i].get());
        if (m != member.end()) {
          // Evaluated in program order; stored once the last is known.
          StoreGroup &g = *m->second.first;
          g.Values[m->second.second] = expr(s->Body[i++]->Value);
          if (++g.Evaluated == g.Members.size())
            storeGroup(g);
          continue;
        }
        stmt(s->Body[i++]);
      }
      for (const ExprNode *e : ahead)
        Transposed.erase(e);
      return;
    }
    case StmtKind::For:
      forLoop(*s);
      return;
    case StmtKind::Store: {
      Value *v = expr(s->Value);
      if (s->Buf->Type == DType::Bool)
        v = B.CreateZExt(v, B.getInt8Ty());
      Value *index = expr(s->Index);
      if (s->Stride > 1) { // a scatter
        auto *lanes = llvm::cast<llvm::FixedVectorType>(v->getType());
        llvm::SmallVector<llvm::Constant *, 64> offs;
        for (unsigned l = 0; l < lanes->getNumElements(); ++l)
          offs.push_back(llvm::ConstantInt::get(ME.IndexTy, (uint64_t)(l * s->Stride)));
        Value *idx = B.CreateAdd(B.CreateVectorSplat(lanes->getNumElements(), index),
                                 llvm::ConstantVector::get(offs));
        Value *ptrs = address(s->Buf.get(), idx);
        B.CreateMaskedScatter(v, ptrs, llvm::Align(dtypeSize(s->Buf->Type)));
        return;
      }
      Value *addr = address(s->Buf.get(), index);
      if (s->Value->Lanes > 1)
        B.CreateAlignedStore(v, addr, llvm::Align(dtypeSize(s->Buf->Type)));
      else
        B.CreateStore(v, addr);
      return;
    }
    case StmtKind::If: {
      Value *c = expr(s->Cond);
      auto *thenBB = llvm::BasicBlock::Create(ME.Ctx, "then", F);
      auto *elseBB = s->Else ? llvm::BasicBlock::Create(ME.Ctx, "else", F) : nullptr;
      auto *merge = llvm::BasicBlock::Create(ME.Ctx, "endif", F);
      B.CreateCondBr(c, thenBB, elseBB ? elseBB : merge);
      B.SetInsertPoint(thenBB);
      stmt(s->Inner);
      B.CreateBr(merge);
      if (elseBB) {
        B.SetInsertPoint(elseBB);
        stmt(s->Else);
        B.CreateBr(merge);
      }
      B.SetInsertPoint(merge);
      return;
    }
    case StmtKind::Alloc: {
      // Stack slots live in the entry block so that SROA promotes them.
      IRBuilder<> eb(Entry, Entry->begin());
      llvm::Type *t = ME.memoryType(s->Buf->Type);
      llvm::AllocaInst *slot = eb.CreateAlloca(
          t, llvm::ConstantInt::get(ME.IndexTy, s->Buf->Size), s->Buf->Name);
      // Buffers of a vector or more (panels, tiles) start on a cache line,
      // so that whole-vector loads from them never split one.
      if (s->Buf->Size * (int64_t)dtypeSize(s->Buf->Type) >= 64)
        slot->setAlignment(llvm::Align(64));
      bind(s->Buf.get(), slot);
      stmt(s->Inner);
      unbind(s->Buf.get());
      return;
    }
    case StmtKind::Barrier: // its thread loops run one after the other here
      return;
    }
  }

  IRBuilder<> &builder() { return B; }

private:
  /// Vector stores of one buffer whose lanes are Stride apart, at base +
  /// 0, ..., base + G - 1 (kir::strideGroups); Members and Values by
  /// offset. With G == Stride they are interleaved (the outputs of a tile
  /// with a strided window), else transposed (a tile stored column by
  /// column into rows of the output).
  struct StoreGroup {
    std::vector<const StmtNode *> Members;
    std::vector<Value *> Values;
    size_t Evaluated = 0;
  };

  /// The store groups among the statements of `body`: strided stores of
  /// one buffer, stride and width whose indices form a group, of a buffer
  /// that nothing else in the body reads or writes (each value is then
  /// computed where its store stands, and the group stored after the last).
  /// Strided stores outside a group are scattered.
  std::vector<StoreGroup> storeGroups(const std::vector<Stmt> &body) {
    // By buffer, stride and width, in the order of first appearance.
    using Key = std::tuple<const BufferNode *, int64_t, int>;
    std::vector<std::pair<Key, std::vector<const StmtNode *>>> wide;
    std::set<const BufferNode *> touched; // read, or written other than strided
    for (const Stmt &st : body) {
      kir::visitExprs(st, [&](const Expr &e) {
        if (e->Kind == ExprKind::Load)
          touched.insert(e->Buf.get());
      });
      if (st->Kind == StmtKind::Store && st->Stride > 1 && st->Buf->Type != DType::Bool) {
        Key key{st->Buf.get(), st->Stride, st->Value->Lanes};
        auto it = std::find_if(wide.begin(), wide.end(), [&](auto &w) { return w.first == key; });
        if (it == wide.end())
          it = wide.insert(wide.end(), {key, {}});
        it->second.push_back(st.get());
      } else
        kir::visitStmts(st, [&](const Stmt &x) {
          if (x->Kind == StmtKind::Store)
            touched.insert(x->Buf.get());
        });
    }
    std::vector<StoreGroup> groups;
    for (auto &[key, stores] : wide) {
      if (touched.count(std::get<0>(key)))
        continue;
      std::vector<Expr> indices;
      for (const StmtNode *st : stores)
        indices.push_back(st->Index);
      for (const std::vector<size_t> &members : kir::strideGroups(indices, std::get<1>(key))) {
        if (members.size() < 2)
          continue; // scattered
        StoreGroup g;
        for (size_t i : members)
          g.Members.push_back(stores[i]);
        g.Values.resize(members.size());
        groups.push_back(std::move(g));
      }
    }
    return groups;
  }

  /// The P x L matrix of `rows` (P vectors of L lanes, powers of two, P <=
  /// L) transposed by P log2 P two-vector shuffles: vector j of the result
  /// holds lanes j L/P, ..., (j + 1) L/P - 1, each as its P elements in
  /// row order. (The two halves of the rows are transposed, then each
  /// pair of their vectors, which cover the same lanes, is interleaved
  /// group by group into two.)
  std::vector<Value *> transposeRows(const std::vector<Value *> &rows, unsigned L) {
    const unsigned P = (unsigned)rows.size();
    if (P == 1)
      return rows;
    std::vector<Value *> left = transposeRows({rows.begin(), rows.begin() + P / 2}, L),
                         right = transposeRows({rows.begin() + P / 2, rows.end()}, L);
    const unsigned m = 2 * L / P, h = P / 2; // lanes per vector, group size
    std::vector<Value *> out;
    for (size_t j = 0; j < left.size(); ++j)
      for (unsigned half = 0; half < 2; ++half) {
        llvm::SmallVector<int, 64> mask;
        for (unsigned t = half * m / 2; t < (half + 1) * m / 2; ++t)
          for (unsigned side = 0; side < 2; ++side)
            for (unsigned e = 0; e < h; ++e)
              mask.push_back((int)(side * L + t * h + e));
        out.push_back(B.CreateShuffleVector(left[j], right[j], mask));
      }
    return out;
  }

  /// The inverse of transposeRows: from P vectors of lanes' groups back to
  /// the P rows.
  std::vector<Value *> untransposeRows(const std::vector<Value *> &groups, unsigned L) {
    const unsigned P = (unsigned)groups.size();
    if (P == 1)
      return groups;
    const unsigned m = 2 * L / P, h = P / 2;
    std::vector<Value *> left, right;
    for (size_t j = 0; j < P; j += 2)
      for (unsigned side = 0; side < 2; ++side) {
        llvm::SmallVector<int, 64> mask;
        for (unsigned t = 0; t < m; ++t)
          for (unsigned e = 0; e < h; ++e)
            mask.push_back((int)((t < m / 2 ? 0 : L) + (t % (m / 2)) * P + side * h + e));
        (side ? right : left).push_back(B.CreateShuffleVector(groups[j], groups[j + 1], mask));
      }
    std::vector<Value *> rows = untransposeRows(left, L), rest = untransposeRows(right, L);
    rows.insert(rows.end(), rest.begin(), rest.end());
    return rows;
  }

  /// The runs of a transposed group: from G vectors of L lanes, L vectors
  /// of G elements (lane l's elements in row order).
  std::vector<Value *> rowsToRuns(std::vector<Value *> rows, unsigned L) {
    const unsigned G = (unsigned)rows.size(), P = (unsigned)llvm::PowerOf2Ceil(G);
    if (llvm::isPowerOf2_32(L) && P <= L) {
      rows.resize(P, llvm::PoisonValue::get(rows[0]->getType()));
      std::vector<Value *> groups = transposeRows(rows, L), runs;
      for (unsigned l = 0; l < L; ++l) {
        llvm::SmallVector<int, 16> mask;
        for (unsigned k = 0; k < G; ++k)
          mask.push_back((int)(l % (L / P) * P + k));
        runs.push_back(B.CreateShuffleVector(groups[l / (L / P)], mask));
      }
      return runs;
    }
    return transposeConcatenated(rows);
  }

  /// The n x m matrix of `vs` (n vectors of m elements) transposed: m
  /// vectors of n elements, each one shuffle of all of them concatenated.
  std::vector<Value *> transposeConcatenated(const std::vector<Value *> &vs) {
    const unsigned n = (unsigned)vs.size(),
                   m = llvm::cast<llvm::FixedVectorType>(vs[0]->getType())->getNumElements();
    Value *cat = concatenate(vs); // element i m + j is element j of vs[i]
    std::vector<Value *> out;
    for (unsigned j = 0; j < m; ++j) {
      llvm::SmallVector<int, 64> mask;
      for (unsigned i = 0; i < n; ++i)
        mask.push_back((int)(i * m + j));
      out.push_back(B.CreateShuffleVector(cat, mask));
    }
    return out;
  }

  /// The inverse of rowsToRuns: from L runs of G elements, the G rows.
  std::vector<Value *> runsToRows(const std::vector<Value *> &runs, unsigned G) {
    const unsigned L = (unsigned)runs.size(), P = (unsigned)llvm::PowerOf2Ceil(G);
    if (llvm::isPowerOf2_32(L) && P <= L) {
      llvm::SmallVector<int, 16> mask;
      for (unsigned k = 0; k < P; ++k)
        mask.push_back(k < G ? (int)k : -1);
      std::vector<Value *> groups;
      for (unsigned j = 0; j < P; ++j) {
        std::vector<Value *> part;
        for (unsigned l = j * (L / P); l < (j + 1) * (L / P); ++l)
          part.push_back(P == G ? runs[l] : B.CreateShuffleVector(runs[l], mask));
        groups.push_back(concatenate(part));
      }
      std::vector<Value *> rows = untransposeRows(groups, L);
      rows.resize(G);
      return rows;
    }
    return transposeConcatenated(runs);
  }

  /// Stores a group: the G vectors of L lanes become L runs of G
  /// consecutive elements, one at each lane's index; interleaved (G ==
  /// Stride), the runs are one contiguous vector, one shuffle of all G.
  void storeGroup(const StoreGroup &g) {
    const StmtNode &at = *g.Members[0];
    const unsigned G = (unsigned)g.Members.size(), L = (unsigned)at.Value->Lanes;
    const llvm::Align align(dtypeSize(at.Buf->Type));
    Value *base = expr(at.Index);
    if (G == (unsigned)at.Stride) {
      llvm::SmallVector<int, 128> mask; // element l G + k is lane l of row k
      for (unsigned l = 0; l < L; ++l)
        for (unsigned k = 0; k < G; ++k)
          mask.push_back((int)(k * L + l));
      B.CreateAlignedStore(B.CreateShuffleVector(concatenate(g.Values), mask),
                           address(at.Buf.get(), base), align);
      return;
    }
    std::vector<Value *> runs = rowsToRuns(g.Values, L);
    for (unsigned l = 0; l < L; ++l) {
      Value *index = B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), l * at.Stride));
      B.CreateAlignedStore(runs[l], address(at.Buf.get(), index), align);
    }
  }

  /// Loads the transposed groups of vector loads in the values of the
  /// statements of `body` (lanes Stride > kMaxStride apart, indices base +
  /// 0, ..., base + G - 1): L runs of G consecutive elements, transposed
  /// into the G vectors, which the loads' expressions then stand for. The
  /// body is straight-line and reads no buffer it writes at another index
  /// (the vectorizer's rule), so reading ahead is safe. Returns the loads.
  std::vector<const ExprNode *> loadTransposedGroups(const std::vector<Stmt> &body) {
    std::vector<const ExprNode *> ahead;
    // By buffer, stride and width, in the order of first appearance (the
    // code does not depend on where buffers happen to be allocated).
    using Key = std::tuple<const BufferNode *, int64_t, int>;
    std::vector<std::pair<Key, std::vector<const ExprNode *>>> wide;
    std::set<const ExprNode *> seen;
    for (const Stmt &st : body) {
      if (st->Kind != StmtKind::Store)
        continue;
      kir::visitExprs(st->Value, [&](const Expr &e) {
        if (e->Kind != ExprKind::Load || e->Lanes < 2 || e->Stride <= kir::kMaxStride ||
            e->Buf->Type == DType::Bool || Transposed.count(e.get()) || !seen.insert(e.get()).second)
          return;
        Key key{e->Buf.get(), e->Stride, e->Lanes};
        auto it = std::find_if(wide.begin(), wide.end(), [&](auto &w) { return w.first == key; });
        if (it == wide.end())
          it = wide.insert(wide.end(), {key, {}});
        it->second.push_back(e.get());
      });
    }
    for (auto &[key, loads] : wide) {
      // Loads of one index may repeat: the groups are of distinct indices.
      std::vector<Expr> indices;
      std::vector<std::vector<const ExprNode *>> same;
      for (const ExprNode *e : loads) {
        auto it = std::find_if(indices.begin(), indices.end(),
                               [&](const Expr &i) { return kir::constantDifference(i, e->A) == 0; });
        if (it == indices.end()) {
          indices.push_back(e->A);
          same.push_back({e});
        } else {
          same[(size_t)(it - indices.begin())].push_back(e);
        }
      }
      for (const std::vector<size_t> &members : kir::strideGroups(indices, std::get<1>(key))) {
        if (members.size() < 2)
          continue; // gathered
        const ExprNode &first = *same[members[0]][0];
        const unsigned G = (unsigned)members.size(), L = (unsigned)first.Lanes;
        Value *base = expr(first.A);
        auto *run = llvm::FixedVectorType::get(ME.memoryType(first.Buf->Type), G);
        std::vector<Value *> runs;
        for (unsigned l = 0; l < L; ++l) {
          Value *index = B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), l * first.Stride));
          runs.push_back(B.CreateAlignedLoad(run, address(first.Buf.get(), index),
                                             llvm::Align(dtypeSize(first.Buf->Type))));
        }
        std::vector<Value *> rows = runsToRows(runs, G);
        for (size_t k = 0; k < G; ++k)
          for (const ExprNode *e : same[members[k]]) {
            Transposed[e] = rows[k];
            ahead.push_back(e);
          }
      }
    }
    return ahead;
  }

  Value *address(const BufferNode *buf, Value *index) {
    auto it = Buffers.find(buf);
    MLCC_CHECK(it != Buffers.end(), "buffer " << buf->Name << " not bound");
    return B.CreateInBoundsGEP(ME.memoryType(buf->Type), it->second, index);
  }

  /// A Parallel loop: its body becomes a task function
  /// `void task(void *context, int32_t index, int32_t worker)` whose context
  /// holds every buffer and variable in scope, run through
  /// options->parallel_for when the caller gave one, else in a serial loop.
  void parallelLoop(const StmtNode &s) {
    Value *begin = expr(s.Begin), *end = expr(s.End);
    llvm::Type *i32 = B.getInt32Ty();
    // The context: buffers, variables, then the loop's begin.
    std::vector<const BufferNode *> bufs;
    std::vector<const VarNode *> vars;
    std::vector<llvm::Type *> fields;
    for (const BufferNode *b : BufferOrder) {
      bufs.push_back(b);
      fields.push_back(ME.PtrTy);
    }
    for (const VarNode *var : VarOrder) {
      vars.push_back(var);
      fields.push_back(ME.IndexTy);
    }
    fields.push_back(ME.IndexTy);
    auto *ctxTy = llvm::StructType::get(ME.Ctx, fields);
    Value *ctx;
    {
      IRBuilder<> eb(Entry, Entry->begin());
      ctx = eb.CreateAlloca(ctxTy, nullptr, "par.ctx");
    }
    unsigned f = 0;
    for (auto *b : bufs)
      B.CreateStore(Buffers[b], B.CreateStructGEP(ctxTy, ctx, f++));
    for (auto *v : vars)
      B.CreateStore(Vars[v], B.CreateStructGEP(ctxTy, ctx, f++));
    B.CreateStore(begin, B.CreateStructGEP(ctxTy, ctx, f));

    // The task function.
    auto *taskTy = llvm::FunctionType::get(B.getVoidTy(), {ME.PtrTy, i32, i32}, false);
    auto *task = llvm::Function::Create(taskTy, llvm::GlobalValue::InternalLinkage,
                                        F->getName() + ".task", ME.M);
    task->addFnAttr(llvm::Attribute::NoUnwind);
    for (auto &attr : F->getAttributes().getFnAttrs())
      if (attr.isStringAttribute())
        task->addFnAttr(attr);
    {
      auto *entry = llvm::BasicBlock::Create(ME.Ctx, "entry", task);
      auto *start = llvm::BasicBlock::Create(ME.Ctx, "start", task);
      KernelEmitter sub(ME, task, entry);
      sub.setOptions(llvm::ConstantPointerNull::get(ME.PtrTy)); // nested: serial
      IRBuilder<> &tb = sub.B;
      tb.SetInsertPoint(start);
      Value *tctx = task->getArg(0);
      unsigned g = 0;
      for (auto *b : bufs)
        sub.bind(b, tb.CreateLoad(ME.PtrTy, tb.CreateStructGEP(ctxTy, tctx, g++)));
      for (auto *v : vars)
        sub.bind(v, tb.CreateLoad(ME.IndexTy, tb.CreateStructGEP(ctxTy, tctx, g++)));
      Value *tbegin = tb.CreateLoad(ME.IndexTy, tb.CreateStructGEP(ctxTy, tctx, g));
      sub.bind(s.LoopVar.get(),
               tb.CreateAdd(tbegin, tb.CreateSExt(task->getArg(1), ME.IndexTy), s.LoopVar->Name));
      sub.stmt(s.Inner);
      tb.CreateRetVoid();
      IRBuilder<> eb(entry);
      eb.CreateBr(start);
    }

    // parallel_for(pool, count, task, ctx), or a serial loop.
    Value *count = B.CreateSub(end, begin);
    count = B.CreateSelect(B.CreateICmpSLT(count, llvm::ConstantInt::get(ME.IndexTy, 0)),
                           llvm::ConstantInt::get(ME.IndexTy, 0), count);
    count = B.CreateTrunc(count, i32);
    auto *hookBB = llvm::BasicBlock::Create(ME.Ctx, "par.hook", F);
    auto *serialBB = llvm::BasicBlock::Create(ME.Ctx, "par.serial", F);
    auto *doneBB = llvm::BasicBlock::Create(ME.Ctx, "par.done", F);
    auto *checkFn = llvm::BasicBlock::Create(ME.Ctx, "par.check", F);
    B.CreateCondBr(B.CreateIsNull(Opts), serialBB, checkFn);
    B.SetInsertPoint(checkFn);
    Value *fn = B.CreateLoad(ME.PtrTy, Opts, "parallel_for");
    B.CreateCondBr(B.CreateIsNull(fn), serialBB, hookBB);
    B.SetInsertPoint(hookBB);
    Value *pool = B.CreateLoad(ME.PtrTy, B.CreateConstInBoundsGEP1_64(ME.PtrTy, Opts, 1));
    auto *hookTy = llvm::FunctionType::get(B.getVoidTy(), {ME.PtrTy, i32, ME.PtrTy, ME.PtrTy},
                                           false);
    B.CreateCall(hookTy, fn, {pool, count, task, ctx});
    B.CreateBr(doneBB);
    // Serial: task(ctx, i, 0) for each i.
    B.SetInsertPoint(serialBB);
    auto *header = llvm::BasicBlock::Create(ME.Ctx, "par.loop", F);
    auto *body = llvm::BasicBlock::Create(ME.Ctx, "par.body", F);
    B.CreateBr(header);
    B.SetInsertPoint(header);
    llvm::PHINode *i = B.CreatePHI(i32, 2);
    i->addIncoming(B.getInt32(0), serialBB);
    B.CreateCondBr(B.CreateICmpSLT(i, count), body, doneBB);
    B.SetInsertPoint(body);
    B.CreateCall(taskTy, task, {ctx, i, B.getInt32(0)});
    i->addIncoming(B.CreateAdd(i, B.getInt32(1)), body);
    B.CreateBr(header);
    B.SetInsertPoint(doneBB);
  }

  void forLoop(const StmtNode &s) {
    if (s.Loop == LoopKind::Parallel && Opts) {
      parallelLoop(s);
      return;
    }
    Value *begin = expr(s.Begin), *end = expr(s.End);
    llvm::BasicBlock *pre = B.GetInsertBlock();
    auto *header = llvm::BasicBlock::Create(ME.Ctx, "loop", F);
    auto *body = llvm::BasicBlock::Create(ME.Ctx, "body", F);
    auto *exit = llvm::BasicBlock::Create(ME.Ctx, "endloop", F);
    B.CreateBr(header);
    B.SetInsertPoint(header);
    llvm::PHINode *i = B.CreatePHI(ME.IndexTy, 2, s.LoopVar->Name);
    i->addIncoming(begin, pre);
    B.CreateCondBr(B.CreateICmpSLT(i, end), body, exit);
    B.SetInsertPoint(body);
    bind(s.LoopVar.get(), i);
    stmt(s.Inner);
    unbind(s.LoopVar.get());
    Value *next = B.CreateAdd(i, llvm::ConstantInt::get(ME.IndexTy, 1), "", true, true);
    B.CreateBr(header);
    i->addIncoming(next, B.GetInsertBlock());
    B.SetInsertPoint(exit);
  }

  llvm::Constant *constant(const ExprNode &e) {
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

  /// A vector load of Lanes elements Stride apart, element by element.
  Value *gather(const ExprNode &e) {
    auto *vt = llvm::FixedVectorType::get(ME.memoryType(e.Buf->Type), (unsigned)e.Lanes);
    Value *base = expr(e.A);
    llvm::SmallVector<llvm::Constant *, 64> offs;
    for (int64_t l = 0; l < e.Lanes; ++l)
      offs.push_back(llvm::ConstantInt::get(base->getType(), (uint64_t)(l * e.Stride)));
    Value *idx = B.CreateAdd(B.CreateVectorSplat((unsigned)e.Lanes, base),
                             llvm::ConstantVector::get(offs));
    return B.CreateMaskedGather(vt, address(e.Buf.get(), idx),
                                llvm::Align(dtypeSize(e.Buf->Type)));
  }

  /// A vector load of Lanes elements Stride apart: Stride full vectors
  /// that cover the span from the first to the last lane's element (the
  /// last one ends exactly there, so nothing past the buffer is read),
  /// concatenated and shuffled, which targets do with a few permutes.
  Value *stridedLoad(const ExprNode &e) {
    const int64_t L = e.Lanes, S = e.Stride;
    auto *vt = llvm::FixedVectorType::get(ME.memoryType(e.Buf->Type), (unsigned)L);
    Value *base = expr(e.A);
    const int64_t lastOffset = (L - 1) * (S - 1);
    llvm::SmallVector<Value *, 4> parts;
    for (int64_t j = 0; j < S; ++j) {
      int64_t off = j + 1 < S ? j * L : lastOffset;
      parts.push_back(B.CreateAlignedLoad(
          vt, address(e.Buf.get(), B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), off))),
          llvm::Align(dtypeSize(e.Buf->Type))));
    }
    Value *cat = concatenate({parts.begin(), parts.end()});
    // Lane l is element l*S: in part l*S/L, or in the last part.
    llvm::SmallVector<int, 64> mask;
    for (int64_t l = 0; l < L; ++l) {
      int64_t el = l * S;
      mask.push_back((int)(el < (S - 1) * L ? el : (S - 1) * L + (el - lastOffset)));
    }
    return B.CreateShuffleVector(cat, mask);
  }

  /// The vectors `parts` end to end, concatenated pairwise (both halves of
  /// a shuffle have one type: a shorter second half is padded with poison
  /// lanes).
  Value *concatenate(std::vector<Value *> parts) {
    while (parts.size() > 1) {
      std::vector<Value *> next;
      for (size_t i = 0; i < parts.size(); i += 2) {
        Value *a = parts[i];
        if (i + 1 == parts.size()) {
          next.push_back(a);
          continue;
        }
        unsigned n = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
        Value *b = parts[i + 1];
        unsigned m = llvm::cast<llvm::FixedVectorType>(b->getType())->getNumElements();
        if (m < n) {
          llvm::SmallVector<int, 64> pad;
          for (unsigned k = 0; k < n; ++k)
            pad.push_back(k < m ? (int)k : -1);
          b = B.CreateShuffleVector(b, pad);
        }
        llvm::SmallVector<int, 128> cat;
        for (unsigned k = 0; k < n + m; ++k)
          cat.push_back((int)k); // b's element k - n is operand index k
        next.push_back(B.CreateShuffleVector(a, b, cat));
      }
      parts = std::move(next);
    }
    return parts[0];
  }

  Value *expr(const Expr &e) {
    switch (e->Kind) {
    case ExprKind::Const:
      return constant(*e);
    case ExprKind::VarRef: {
      auto it = Vars.find(e->V.get());
      MLCC_CHECK(it != Vars.end(), "variable " << e->V->Name << " not bound");
      return it->second;
    }
    case ExprKind::Load: {
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

  /// How many bits (two's complement) hold every value `x` can take: its
  /// type's width, or fewer where the value was widened from a narrower
  /// type (casts that keep the value, broadcasts, sums, differences and
  /// products of such, integer constants). Floats: more than any integer.
  static int signedBits(const kir::ExprNode *x) {
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
  Value *wideningMul(const kir::ExprNode &e) {
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
  static const kir::ExprNode *zeroExtendedByte(const kir::ExprNode *x, int lanes = 1) {
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
  Value *wordOfBytes(const kir::ExprNode &e) {
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

  /// acc + dot4(a, b) as one vpdpbusd (AArch64: usdot), acc + dot2(a, b) as
  /// one smlad, acc + sdot4(a, b) as one sdot, where the target has them
  /// (null otherwise).
  Value *fusedDot(const Expr &e) {
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
  Value *pairSumsDot4(Value *acc, Value *a, Value *b) {
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
  Value *maddDot4(int lanes, Value *acc, Value *a, Value *b) {
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
  bool hasMadd(int lanes) const {
    return (lanes == 16 && ME.Features.Madd512) || (lanes == 8 && ME.Features.Madd256) ||
           (lanes == 4 && ME.Features.Madd128);
  }

  /// dot2 of two vectors of int32 (hasMadd of their lanes) as one pmaddwd.
  Value *pmaddwd(Value *a, Value *b) {
    unsigned lanes = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
    llvm::Intrinsic::ID id = lanes == 16  ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                             : lanes == 8 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                          : llvm::Intrinsic::x86_sse2_pmadd_wd;
    auto *words = llvm::FixedVectorType::get(B.getInt16Ty(), 2 * lanes);
    return B.CreateIntrinsic(id, {}, {B.CreateBitCast(a, words), B.CreateBitCast(b, words)});
  }

  /// Bytes 0 and 2 of a (odd: 1 and 3) sign-extended into its 16-bit
  /// halves: sxtb16 (rotated by a byte for the odd ones) with the Arm DSP
  /// extension, else shifts.
  Value *sextBytePairs(Value *a, bool odd, bool zext = false) {
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

  /// dot2(a, b): one pmaddwd on x86 vectors that have it, else in generic
  /// IR: the signed 16-bit halves multiplied and summed.
  Value *dot2(Value *a, Value *b) {
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType()))
      if (hasMadd((int)vt->getNumElements()))
        return pmaddwd(a, b);
    Value *sixteen = llvm::ConstantInt::get(a->getType(), 16);
    auto low = [&](Value *v) { return B.CreateAShr(B.CreateShl(v, sixteen), sixteen); };
    return B.CreateAdd(B.CreateMul(low(a), low(b)),
                       B.CreateMul(B.CreateAShr(a, sixteen), B.CreateAShr(b, sixteen)));
  }

  /// mulhi(a, b): Helium's vmulh.s32 on vectors of four int32, else the
  /// high word of the 64-bit product in generic IR (smull on Arm cores).
  Value *mulHigh(Value *a, Value *b) {
    auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
    if (vt && vt->getNumElements() == 4 && ME.Features.Helium)
      return B.CreateIntrinsic(llvm::Intrinsic::arm_mve_vmulh, {vt}, {a, b, B.getInt32(0)});
    llvm::Type *wide = vt ? (llvm::Type *)llvm::FixedVectorType::get(B.getInt64Ty(), vt->getNumElements())
                          : (llvm::Type *)B.getInt64Ty();
    Value *p = B.CreateMul(B.CreateSExt(a, wide), B.CreateSExt(b, wide));
    return B.CreateTrunc(B.CreateAShr(p, llvm::ConstantInt::get(wide, 32)), a->getType());
  }

  /// dot4(a, b) (sdot4: a's bytes signed too) in generic IR: bytes widened,
  /// multiplied, and each group of four summed.
  Value *dot4(Value *a, Value *b, bool signedA = false) {
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

  Value *intrinsic(llvm::Intrinsic::ID id, Value *a, Value *b = nullptr) {
    std::vector<Value *> args = {a};
    if (b)
      args.push_back(b);
    return B.CreateIntrinsic(id, {a->getType()}, args);
  }

  Value *libcall(const char *name, DType t, Value *a, Value *b = nullptr) {
    std::string n = name;
    if (t == DType::F32)
      n += "f";
    llvm::FunctionCallee f = ME.libm(n, a->getType(), b ? 2 : 1);
    return b ? B.CreateCall(f, {a, b}) : B.CreateCall(f, {a});
  }

  Value *unary(UnOp op, DType t, Value *a) {
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

  /// A floating-point constant (scalar or splat) that is not NaN.
  /// The float constant `v` is, or splats; null otherwise.
  static const llvm::ConstantFP *floatConstant(Value *v) {
    auto *c = llvm::dyn_cast<llvm::Constant>(v);
    if (c && v->getType()->isVectorTy())
      c = c->getSplatValue();
    return llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
  }
  static bool notNaNConstant(Value *v) {
    const llvm::ConstantFP *f = floatConstant(v);
    return f && !f->isNaN();
  }
  /// A constant (or splat) that is neither NaN nor a zero of either sign:
  /// Min and Max against it are llvm.minimum/maximum exactly (they differ
  /// from the IR's ordered select only on NaN payloads, never returned
  /// here, and on the sign of equal zeros).
  static bool nonZeroNumberConstant(Value *v) {
    const llvm::ConstantFP *f = floatConstant(v);
    return f && !f->isNaN() && !f->isZero();
  }

  Value *binary(BinOp op, DType t, Value *a, Value *b) {
    if (isFloat(t)) {
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
    }
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

  Value *castValue(DType to, DType from, Value *a) {
    if (to == from)
      return a;
    if (from == DType::F16)
      return castValue(to, DType::F32, B.CreateCall(ME.halfToFloat(), {a}));
    if (from == DType::BF16)
      return castValue(to, DType::F32, B.CreateCall(ME.bf16ToFloat(), {a}));
    if (to == DType::F16)
      return B.CreateCall(ME.floatToHalf(), {castValue(DType::F32, from, a)});
    if (to == DType::BF16)
      return B.CreateCall(ME.floatToBf16(), {castValue(DType::F32, from, a)});
    // float8 values are i8 bit patterns, converted through f32.
    if (isFloat8(from))
      return castValue(to, DType::F32, B.CreateCall(ME.float8ToFloat(from), {a}));
    if (isFloat8(to))
      return B.CreateCall(ME.floatToFloat8(to), {castValue(DType::F32, from, a)});
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

  ModuleEmitter &ME;
  llvm::Function *F;
  IRBuilder<> B;
  llvm::BasicBlock *Entry;
  std::map<const BufferNode *, Value *> Buffers;
  std::map<const VarNode *, Value *> Vars;
  /// The keys of Buffers and Vars in the order they were bound (scopes
  /// nest), which a parallel task's context follows: an order of addresses
  /// would depend on the heap, and the code with it.
  std::vector<const BufferNode *> BufferOrder;
  std::vector<const VarNode *> VarOrder;

  void bind(const BufferNode *b, Value *v) {
    if (Buffers.emplace(b, v).second)
      BufferOrder.push_back(b);
    else
      Buffers[b] = v;
  }
  void bind(const VarNode *x, Value *v) {
    if (Vars.emplace(x, v).second)
      VarOrder.push_back(x);
    else
      Vars[x] = v;
  }
  void unbind(const BufferNode *b) {
    Buffers.erase(b);
    BufferOrder.erase(std::find(BufferOrder.begin(), BufferOrder.end(), b));
  }
  void unbind(const VarNode *x) {
    Vars.erase(x);
    VarOrder.erase(std::find(VarOrder.begin(), VarOrder.end(), x));
  }
  /// The loads of transposed groups, loaded ahead (loadTransposedGroups).
  std::map<const ExprNode *, Value *> Transposed;
  Value *Opts = nullptr;
};

} // namespace

std::unique_ptr<llvm::Module> emitModule(const Program &p, llvm::LLVMContext &ctx,
                                         const std::string &triple,
                                         const llvm::DataLayout &layout,
                                         const EmitFeatures &features) {
  auto mod = std::make_unique<llvm::Module>(p.Name, ctx);
  mod->setTargetTriple(triple);
  mod->setDataLayout(layout);
  ModuleEmitter me(ctx, *mod, layout);
  me.Features = features;
  llvm::Type *i8 = llvm::Type::getInt8Ty(ctx), *i32 = llvm::Type::getInt32Ty(ctx),
             *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type *ptr = me.PtrTy, *size = me.IndexTy;

  // Constant data.
  std::vector<llvm::GlobalVariable *> consts;
  for (auto &c : p.Constants) {
    llvm::Type *et = me.memoryType(c.Type);
    size_t n = std::max<size_t>((size_t)c.Count, 1);
    std::string bytes(c.Bytes.begin(), c.Bytes.end());
    bytes.resize(n * dtypeSize(c.Type), '\0');
    MLCC_CHECK(et->isFloatTy() || et->isDoubleTy() || et->isIntegerTy(),
               "constant of type " << dtypeName(c.Type));
    llvm::Constant *init = llvm::ConstantDataArray::getRaw(bytes, n, et);
    auto *g = new llvm::GlobalVariable(*mod, init->getType(), true,
                                       llvm::GlobalValue::InternalLinkage, init, c.Name);
    g->setAlignment(llvm::Align(64));
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    consts.push_back(g);
  }

  // Kernels.
  std::vector<llvm::Function *> kernels;
  for (auto &k : p.Kernels) {
    std::vector<llvm::Type *> params(k.Params.size() + 1, ptr); // + options
    auto *fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
    auto *f = llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, k.Name, *mod);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::NoInline);
    for (size_t i = 0; i < k.Params.size(); ++i) {
      f->addParamAttr((unsigned)i, llvm::Attribute::NoAlias);
      f->addParamAttr((unsigned)i, llvm::Attribute::NoCapture);
      f->getArg((unsigned)i)->setName(k.Params[i]->Name);
    }
    auto *entry = llvm::BasicBlock::Create(ctx, "entry", f);
    auto *start = llvm::BasicBlock::Create(ctx, "start", f);
    KernelEmitter ke(me, f, entry);
    for (size_t i = 0; i < k.Params.size(); ++i)
      ke.bindParam(k.Params[i].get(), f->getArg((unsigned)i));
    ke.setOptions(f->getArg((unsigned)k.Params.size()));
    ke.builder().SetInsertPoint(start);
    ke.stmt(k.Body);
    ke.builder().CreateRetVoid();
    IRBuilder<> eb(entry);
    eb.CreateBr(start);
    kernels.push_back(f);
  }

  // NAME_run_with(in, out, arena, arena_size, options).
  auto *runTy = llvm::FunctionType::get(i32, {ptr, ptr, ptr, size}, false);
  // NAME_inputs: the input pointers (or `int unused_` when there are none),
  // then an int64_t per run-time dimension.
  std::vector<llvm::Type *> inputFieldTypes(p.Inputs.size(), ptr);
  if (p.Inputs.empty())
    inputFieldTypes.push_back(i32);
  const size_t inputFields = inputFieldTypes.size();
  for (size_t k = 0; k < p.Dims.size(); ++k)
    inputFieldTypes.push_back(i64);
  auto *inputsTy = llvm::StructType::get(ctx, inputFieldTypes);
  auto *runWithTy = llvm::FunctionType::get(i32, {ptr, ptr, ptr, size, ptr}, false);
  auto *run = llvm::Function::Create(runWithTy, llvm::GlobalValue::ExternalLinkage,
                                     p.Name + "_run_with", *mod);
  run->addFnAttr(llvm::Attribute::NoUnwind);
  {
    IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", run));
    Value *in = run->getArg(0), *out = run->getArg(1), *arena = run->getArg(2),
          *arenaSize = run->getArg(3), *options = run->getArg(4);
    auto check = [&](Value *bad, int status) {
      auto *err = llvm::BasicBlock::Create(ctx, "error", run);
      auto *ok = llvm::BasicBlock::Create(ctx, "ok", run);
      b.CreateCondBr(bad, err, ok);
      b.SetInsertPoint(err);
      b.CreateRet(llvm::ConstantInt::get(i32, status));
      b.SetInsertPoint(ok);
    };
    auto isNull = [&](Value *v) { return b.CreateIsNull(v); };
    check(b.CreateOr(isNull(in), isNull(out)), MLCC_ERR_NULL_ARGUMENT);
    std::vector<Value *> inPtrs, outPtrs;
    for (size_t i = 0; i < p.Inputs.size(); ++i) {
      Value *slot = b.CreateConstInBoundsGEP1_64(ptr, in, i);
      inPtrs.push_back(b.CreateLoad(ptr, slot, p.Inputs[i].CName));
      check(isNull(inPtrs.back()), MLCC_ERR_NULL_ARGUMENT);
    }
    for (size_t i = 0; i < p.Outputs.size(); ++i) {
      Value *slot = b.CreateConstInBoundsGEP1_64(ptr, out, i);
      outPtrs.push_back(b.CreateLoad(ptr, slot, p.Outputs[i].CName));
      check(isNull(outPtrs.back()), MLCC_ERR_NULL_ARGUMENT);
    }
    // Run-time dimensions (int64_t members after the input pointers): in
    // range before anything is written; the kernels read them in place.
    Value *dimsPtr = nullptr;
    for (size_t k = 0; k < p.Dims.size(); ++k) {
      Value *slot = b.CreateStructGEP(inputsTy, in, (unsigned)(inputFields + k));
      if (k == 0)
        dimsPtr = slot;
      Value *v = b.CreateLoad(i64, slot, p.Dims[k].CName);
      check(b.CreateOr(b.CreateICmpSLT(v, llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Min)),
                       b.CreateICmpSGT(v, llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Max))),
            MLCC_ERR_DIM_RANGE);
    }
    // Inputs whose value must lie in a range (--input-range).
    for (size_t i = 0; i < p.Inputs.size(); ++i) {
      const IoTensor &t = p.Inputs[i];
      if (!t.Range)
        continue;
      llvm::Type *elem = llvm::IntegerType::get(ctx, dtypeBits(t.Type));
      Value *v = b.CreateLoad(elem, inPtrs[i]);
      v = isSignedInt(t.Type) ? b.CreateSExt(v, i64) : b.CreateZExt(v, i64);
      check(b.CreateOr(b.CreateICmpSLT(v, llvm::ConstantInt::get(i64, (uint64_t)t.Range->first)),
                       b.CreateICmpSGT(v, llvm::ConstantInt::get(i64, (uint64_t)t.Range->second))),
            MLCC_ERR_DIM_RANGE);
    }
    if (p.ArenaSize > 0) {
      check(isNull(arena), MLCC_ERR_ARENA_NULL);
      check(b.CreateICmpULT(arenaSize, llvm::ConstantInt::get(size, (uint64_t)p.ArenaSize)),
            MLCC_ERR_ARENA_TOO_SMALL);
      Value *addr = b.CreatePtrToInt(arena, size);
      check(b.CreateICmpNE(b.CreateAnd(addr, llvm::ConstantInt::get(size, (uint64_t)p.ArenaAlign - 1)),
                           llvm::ConstantInt::get(size, 0)),
            MLCC_ERR_ARENA_MISALIGNED);
    }
    // The profiling hook, when the options give one.
    auto *optsTy = abiStruct(ctx, abi::RunOptions::Fields, ptr, size, nullptr);
    Value *hook, *hookCtx;
    {
      llvm::BasicBlock *from = b.GetInsertBlock();
      auto *load = llvm::BasicBlock::Create(ctx, "hook.load", run);
      auto *merge = llvm::BasicBlock::Create(ctx, "hook.done", run);
      b.CreateCondBr(isNull(options), merge, load);
      b.SetInsertPoint(load);
      Value *h = b.CreateLoad(ptr, b.CreateStructGEP(optsTy, options, abi::RunOptions::OnKernel));
      Value *hc =
          b.CreateLoad(ptr, b.CreateStructGEP(optsTy, options, abi::RunOptions::HookContext));
      b.CreateBr(merge);
      b.SetInsertPoint(merge);
      auto *hp = b.CreatePHI(ptr, 2);
      hp->addIncoming(llvm::ConstantPointerNull::get(me.PtrTy), from);
      hp->addIncoming(h, load);
      auto *hcp = b.CreatePHI(ptr, 2);
      hcp->addIncoming(llvm::ConstantPointerNull::get(me.PtrTy), from);
      hcp->addIncoming(hc, load);
      hook = hp;
      hookCtx = hcp;
    }
    // The calls twice: without the hook, and with it around every call
    // (one test of the hook, not one per call: a chain of tests is what
    // the optimizer would thread into these two copies, in time quadratic
    // in the number of calls).
    auto *hookTy = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i32, ptr, i32}, false);
    std::vector<llvm::GlobalVariable *> kernelNames(p.Kernels.size(), nullptr);
    auto emitCalls = [&](bool withHook) {
      for (size_t ci = 0; ci < p.Calls.size(); ++ci) {
        const Call &c = p.Calls[ci];
        llvm::GlobalVariable *&name = kernelNames[c.KernelIndex];
        if (!name) {
          auto *init = llvm::ConstantDataArray::getString(ctx, p.Kernels[c.KernelIndex].Name, true);
          name = new llvm::GlobalVariable(*mod, init->getType(), true,
                                          llvm::GlobalValue::PrivateLinkage, init,
                                          p.Kernels[c.KernelIndex].Name + ".name");
        }
        auto callHook = [&](int phase) {
          if (withHook)
            b.CreateCall(hookTy, hook,
                         {hookCtx, llvm::ConstantInt::get(i32, ci), name,
                          llvm::ConstantInt::get(i32, phase)});
        };
        auto pointer = [&](const Storage &s) -> Value * {
          switch (s.Kind) {
          case StorageKind::Input: return inPtrs[s.Index];
          case StorageKind::Output: return outPtrs[s.Index];
          case StorageKind::Constant: return consts[s.Index];
          case StorageKind::Dims: return dimsPtr;
          case StorageKind::Arena:
            return b.CreateConstInBoundsGEP1_64(i8, arena,
                                                (uint64_t)p.ArenaBuffers[s.Index].Offset);
          }
          return nullptr;
        };
        // A guarded call (a branch or loop iteration) runs only when its
        // condition's byte is non-zero.
        llvm::BasicBlock *after = nullptr;
        if (c.Guard) {
          auto *taken = llvm::BasicBlock::Create(ctx, "guarded", run);
          after = llvm::BasicBlock::Create(ctx, "after", run);
          Value *flag = b.CreateLoad(i8, pointer(*c.Guard));
          b.CreateCondBr(b.CreateICmpNE(flag, llvm::ConstantInt::get(i8, 0)), taken, after);
          b.SetInsertPoint(taken);
        }
        callHook(0);
        std::vector<Value *> args;
        for (auto &s : c.Args)
          args.push_back(pointer(s));
        args.push_back(options);
        b.CreateCall(kernels[c.KernelIndex], args);
        callHook(1);
        if (after) {
          b.CreateBr(after);
          b.SetInsertPoint(after);
        }
      }
      b.CreateRet(llvm::ConstantInt::get(i32, 0));
    };
    auto *plain = llvm::BasicBlock::Create(ctx, "calls", run);
    auto *hooked = llvm::BasicBlock::Create(ctx, "calls.hooked", run);
    b.CreateCondBr(isNull(hook), plain, hooked);
    b.SetInsertPoint(plain);
    emitCalls(false);
    b.SetInsertPoint(hooked);
    emitCalls(true);
  }

  // NAME_run and NAME_run_ptrs (the structs are arrays of pointers): the
  // same with no options.
  for (const char *suffix : {"_run", "_run_ptrs"}) {
    auto *fn = llvm::Function::Create(runTy, llvm::GlobalValue::ExternalLinkage,
                                      p.Name + suffix, *mod);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    std::vector<Value *> args;
    for (auto &a : fn->args())
      args.push_back(&a);
    args.push_back(llvm::ConstantPointerNull::get(me.PtrTy));
    if (suffix == std::string("_run_ptrs") && !p.Dims.empty()) {
      // The run-time dimensions follow the input pointers, each a pointer
      // to its int64_t: the inputs struct built here.
      Value *inputs = fn->getArg(0);
      Value *in = b.CreateAlloca(inputsTy);
      auto nullArgument = [&](Value *v) { // returns MLCC_ERR_NULL_ARGUMENT when v is null
        auto *bad = llvm::BasicBlock::Create(ctx, "null", fn);
        auto *ok = llvm::BasicBlock::Create(ctx, "ok", fn);
        b.CreateCondBr(b.CreateIsNull(v), bad, ok);
        b.SetInsertPoint(bad);
        b.CreateRet(llvm::ConstantInt::get(i32, MLCC_ERR_NULL_ARGUMENT));
        b.SetInsertPoint(ok);
      };
      nullArgument(inputs);
      for (size_t i = 0; i < p.Inputs.size(); ++i)
        b.CreateStore(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, inputs, i)),
                      b.CreateStructGEP(inputsTy, in, (unsigned)i));
      for (size_t k = 0; k < p.Dims.size(); ++k) {
        Value *at = b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, inputs, p.Inputs.size() + k));
        nullArgument(at);
        b.CreateStore(b.CreateLoad(i64, at),
                      b.CreateStructGEP(inputsTy, in, (unsigned)(inputFields + k)));
      }
      args[0] = in;
    }
    b.CreateRet(b.CreateCall(run, args));
  }

  // NAME_info(): constant structs laid out by the target's data layout.
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx);
  auto *tensorInfoTy = abiStruct(ctx, abi::TensorInfo::Fields, ptr, size, "mlcc_tensor_info");
  auto *modelInfoTy = abiStruct(ctx, abi::ModelInfo::Fields, ptr, size, "mlcc_model_info");
  auto cstr = [&](const std::string &s, const std::string &name) -> llvm::Constant * {
    auto *init = llvm::ConstantDataArray::getString(ctx, s, true);
    auto *g = new llvm::GlobalVariable(*mod, init->getType(), true,
                                       llvm::GlobalValue::PrivateLinkage, init, name);
    g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    return g;
  };
  auto table = [&](const std::vector<IoTensor> &ts, const std::string &kind) -> llvm::Constant * {
    if (ts.empty())
      return llvm::ConstantPointerNull::get(me.PtrTy);
    std::vector<llvm::Constant *> rows;
    for (size_t i = 0; i < ts.size(); ++i) {
      std::vector<llvm::Constant *> dims;
      for (int64_t d : output::infoShape(ts[i]))
        dims.push_back(llvm::ConstantInt::get(i64, (uint64_t)d));
      if (dims.empty())
        dims.push_back(llvm::ConstantInt::get(i64, 0));
      auto *shapeInit = llvm::ConstantArray::get(llvm::ArrayType::get(i64, dims.size()), dims);
      auto *shape = new llvm::GlobalVariable(*mod, shapeInit->getType(), true,
                                             llvm::GlobalValue::PrivateLinkage, shapeInit,
                                             p.Name + "_" + kind + std::to_string(i) + "_shape");
      rows.push_back(llvm::ConstantStruct::get(
          tensorInfoTy,
          {cstr(ts[i].Name, p.Name + "_" + kind + std::to_string(i) + "_name"),
           llvm::ConstantInt::get(i32, (uint64_t)ts[i].Type),
           llvm::ConstantInt::get(i32, ts[i].Dims.size()), shape,
           llvm::ConstantInt::get(size, (uint64_t)ts[i].bytes()),
           llvm::ConstantFP::get(f32, (double)(float)ts[i].Scale),
           llvm::ConstantInt::get(i32, (uint64_t)ts[i].ZeroPoint)}));
    }
    auto *init = llvm::ConstantArray::get(llvm::ArrayType::get(tensorInfoTy, rows.size()), rows);
    return new llvm::GlobalVariable(*mod, init->getType(), true,
                                    llvm::GlobalValue::PrivateLinkage, init,
                                    p.Name + "_" + kind + "_info");
  };
  llvm::Constant *dimTable = llvm::ConstantPointerNull::get(me.PtrTy);
  if (!p.Dims.empty()) {
    auto *dimInfoTy = abiStruct(ctx, abi::DimInfo::Fields, ptr, size, "mlcc_dim_info");
    std::vector<llvm::Constant *> rows;
    for (size_t k = 0; k < p.Dims.size(); ++k)
      rows.push_back(llvm::ConstantStruct::get(
          dimInfoTy, {cstr(p.Dims[k].Name, p.Name + "_dim" + std::to_string(k) + "_name"),
                      llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Min),
                      llvm::ConstantInt::get(i64, (uint64_t)p.Dims[k].Max)}));
    auto *init = llvm::ConstantArray::get(llvm::ArrayType::get(dimInfoTy, rows.size()), rows);
    dimTable = new llvm::GlobalVariable(*mod, init->getType(), true,
                                        llvm::GlobalValue::PrivateLinkage, init,
                                        p.Name + "_dim_info");
  }
  llvm::Constant *infoInit = llvm::ConstantStruct::get(
      modelInfoTy,
      {cstr(p.Name, p.Name + "_name"), cstr(output::mlccVersion(), p.Name + "_version"),
       llvm::ConstantInt::get(i32, p.Inputs.size()), table(p.Inputs, "input"),
       llvm::ConstantInt::get(i32, p.Outputs.size()), table(p.Outputs, "output"),
       llvm::ConstantInt::get(size, (uint64_t)p.ArenaSize),
       llvm::ConstantInt::get(size, (uint64_t)p.ArenaAlign),
       llvm::ConstantInt::get(size, (uint64_t)p.weightBytes()),
       llvm::ConstantInt::get(i32, p.Dims.size()), dimTable});
  auto *infoVar = new llvm::GlobalVariable(*mod, modelInfoTy, true,
                                           llvm::GlobalValue::PrivateLinkage, infoInit,
                                           p.Name + "_model_info");
  auto *infoFn = llvm::Function::Create(llvm::FunctionType::get(ptr, {}, false),
                                        llvm::GlobalValue::ExternalLinkage,
                                        p.Name + "_info", *mod);
  infoFn->addFnAttr(llvm::Attribute::NoUnwind);
  {
    IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", infoFn));
    b.CreateRet(infoVar);
  }

  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(*mod, &es))
    fail(ErrorKind::Internal) << "internal error: invalid LLVM module: " << es.str().substr(0, 1000);
  return mod;
}

} // namespace mlcc::llvmgen
