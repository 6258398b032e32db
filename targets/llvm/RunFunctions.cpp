//===- RunFunctions.cpp - The library's run entry points ------------------===//
//
// NAME_run_with(in, out, arena, arena_size, options) checks its arguments
// (null pointers, the run-time dimensions' ranges, --input-range inputs,
// the arena's size and alignment), each failure returning its status
// code, loads the profiling hook from the options, then calls the kernels
// in program order: once without the hook and once with it around every
// call, a guarded call only when its condition's byte is non-zero.
// NAME_run and NAME_run_ptrs call it without options; NAME_run_ptrs first
// gathers the run-time dimensions it is given by pointer into the inputs
// struct.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/output/RuntimeAbi.h"

#include <llvm/IR/Constants.h>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::IRBuilder;
using llvm::Value;

namespace {

/// Builds the body of NAME_run_with, step by step.
class RunWithEmitter {
public:
  RunWithEmitter(ModuleEmitter &me, const Program &p, const InputsLayout &inputs,
                 const std::vector<llvm::GlobalVariable *> &constants,
                 const std::vector<llvm::Function *> &kernels, llvm::Function *run)
      : ME(me), P(p), Inputs(inputs), Constants(constants), Kernels(kernels), Run(run),
        B(llvm::BasicBlock::Create(me.Ctx, "entry", run)), I8(llvm::Type::getInt8Ty(me.Ctx)),
        I32(llvm::Type::getInt32Ty(me.Ctx)), I64(llvm::Type::getInt64Ty(me.Ctx)),
        Ptr(me.PtrTy), Size(me.IndexTy), In(run->getArg(0)), Out(run->getArg(1)),
        Arena(run->getArg(2)), ArenaSize(run->getArg(3)), Options(run->getArg(4)) {}

  void emit() {
    loadTensorPointers();
    checkDims();
    checkInputRanges();
    checkCachePairs();
    checkArena();
    loadHook();
    // The calls twice: without the hook, and with it around every call
    // (one test of the hook, not one per call: a chain of tests is what
    // the optimizer would thread into these two copies, in time quadratic
    // in the number of calls).
    KernelNames.assign(P.Kernels.size(), nullptr);
    auto *plain = llvm::BasicBlock::Create(ME.Ctx, "calls", Run);
    auto *hooked = llvm::BasicBlock::Create(ME.Ctx, "calls.hooked", Run);
    B.CreateCondBr(isNull(Hook), plain, hooked);
    B.SetInsertPoint(plain);
    emitCalls(false);
    B.SetInsertPoint(hooked);
    emitCalls(true);
  }

private:
  /// Returns `status` when `bad` holds; continues in a new block.
  void check(Value *bad, int status) {
    auto *err = llvm::BasicBlock::Create(ME.Ctx, "error", Run);
    auto *ok = llvm::BasicBlock::Create(ME.Ctx, "ok", Run);
    B.CreateCondBr(bad, err, ok);
    B.SetInsertPoint(err);
    B.CreateRet(llvm::ConstantInt::get(I32, status));
    B.SetInsertPoint(ok);
  }

  Value *isNull(Value *v) { return B.CreateIsNull(v); }

  /// The input and output pointers, none of them null.
  void loadTensorPointers() {
    check(B.CreateOr(isNull(In), isNull(Out)), MLCC_ERR_NULL_ARGUMENT);
    for (size_t i = 0; i < P.Inputs.size(); ++i) {
      Value *slot = B.CreateConstInBoundsGEP1_64(Ptr, In, i);
      InPtrs.push_back(B.CreateLoad(Ptr, slot, P.Inputs[i].CName));
      check(isNull(InPtrs.back()), MLCC_ERR_NULL_ARGUMENT);
    }
    for (size_t i = 0; i < P.Outputs.size(); ++i) {
      Value *slot = B.CreateConstInBoundsGEP1_64(Ptr, Out, i);
      OutPtrs.push_back(B.CreateLoad(Ptr, slot, P.Outputs[i].CName));
      check(isNull(OutPtrs.back()), MLCC_ERR_NULL_ARGUMENT);
    }
  }

  /// Run-time dimensions (int64_t members after the input pointers): in
  /// range before anything is written; the kernels read them in place.
  void checkDims() {
    for (size_t k = 0; k < P.Dims.size(); ++k) {
      Value *slot = B.CreateStructGEP(Inputs.Type, In, (unsigned)(Inputs.PointerFields + k));
      if (k == 0)
        DimsPtr = slot;
      Value *v = B.CreateLoad(I64, slot, P.Dims[k].CName);
      check(B.CreateOr(B.CreateICmpSLT(v, llvm::ConstantInt::get(I64, (uint64_t)P.Dims[k].Min)),
                       B.CreateICmpSGT(v, llvm::ConstantInt::get(I64, (uint64_t)P.Dims[k].Max))),
            MLCC_ERR_DIM_RANGE);
    }
  }

  /// --kv-cache: each cache input is its output's buffer.
  void checkCachePairs() {
    for (size_t i = 0; i < P.Inputs.size(); ++i)
      if (P.Inputs[i].CachePair)
        check(B.CreateICmpNE(InPtrs[i], OutPtrs[*P.Inputs[i].CachePair]), MLCC_ERR_CACHE_BUFFER);
  }

  /// Inputs whose value must lie in a range (--input-range).
  void checkInputRanges() {
    for (size_t i = 0; i < P.Inputs.size(); ++i) {
      const IoTensor &t = P.Inputs[i];
      if (!t.Range)
        continue;
      llvm::Type *elem = llvm::IntegerType::get(ME.Ctx, dtypeBits(t.Type));
      Value *v = B.CreateLoad(elem, InPtrs[i]);
      v = isSignedInt(t.Type) ? B.CreateSExt(v, I64) : B.CreateZExt(v, I64);
      check(B.CreateOr(B.CreateICmpSLT(v, llvm::ConstantInt::get(I64, (uint64_t)t.Range->first)),
                       B.CreateICmpSGT(v, llvm::ConstantInt::get(I64, (uint64_t)t.Range->second))),
            MLCC_ERR_DIM_RANGE);
    }
  }

  /// The arena: given, large enough and aligned, when the program uses one.
  void checkArena() {
    if (P.ArenaSize > 0) {
      check(isNull(Arena), MLCC_ERR_ARENA_NULL);
      check(B.CreateICmpULT(ArenaSize, llvm::ConstantInt::get(Size, (uint64_t)P.ArenaSize)),
            MLCC_ERR_ARENA_TOO_SMALL);
      Value *addr = B.CreatePtrToInt(Arena, Size);
      check(B.CreateICmpNE(B.CreateAnd(addr, llvm::ConstantInt::get(Size, (uint64_t)P.ArenaAlign - 1)),
                           llvm::ConstantInt::get(Size, 0)),
            MLCC_ERR_ARENA_MISALIGNED);
    }
  }

  /// The profiling hook and its context, when the options give one (else
  /// null).
  void loadHook() {
    auto *optsTy = abiStruct(ME.Ctx, abi::RunOptions::Fields, Ptr, Size, nullptr);
    llvm::BasicBlock *from = B.GetInsertBlock();
    auto *load = llvm::BasicBlock::Create(ME.Ctx, "hook.load", Run);
    auto *merge = llvm::BasicBlock::Create(ME.Ctx, "hook.done", Run);
    B.CreateCondBr(isNull(Options), merge, load);
    B.SetInsertPoint(load);
    Value *h = B.CreateLoad(Ptr, B.CreateStructGEP(optsTy, Options, abi::RunOptions::OnKernel));
    Value *hc =
        B.CreateLoad(Ptr, B.CreateStructGEP(optsTy, Options, abi::RunOptions::HookContext));
    B.CreateBr(merge);
    B.SetInsertPoint(merge);
    auto *hp = B.CreatePHI(Ptr, 2);
    hp->addIncoming(llvm::ConstantPointerNull::get(ME.PtrTy), from);
    hp->addIncoming(h, load);
    auto *hcp = B.CreatePHI(Ptr, 2);
    hcp->addIncoming(llvm::ConstantPointerNull::get(ME.PtrTy), from);
    hcp->addIncoming(hc, load);
    Hook = hp;
    HookCtx = hcp;
  }

  /// The address of a kernel argument's storage.
  Value *pointer(const Storage &s) {
    switch (s.Kind) {
    case StorageKind::Input: return InPtrs[s.Index];
    case StorageKind::Output: return OutPtrs[s.Index];
    case StorageKind::Constant: return Constants[s.Index];
    case StorageKind::Dims: return DimsPtr;
    case StorageKind::Arena:
      return B.CreateConstInBoundsGEP1_64(I8, Arena, (uint64_t)P.ArenaBuffers[s.Index].Offset);
    }
    return nullptr;
  }

  /// The program's calls in order (`withHook`: each between two calls of
  /// the hook), then `return 0`.
  void emitCalls(bool withHook) {
    auto *hookTy =
        llvm::FunctionType::get(llvm::Type::getVoidTy(ME.Ctx), {Ptr, I32, Ptr, I32}, false);
    for (size_t ci = 0; ci < P.Calls.size(); ++ci) {
      const Call &c = P.Calls[ci];
      llvm::GlobalVariable *&name = KernelNames[c.KernelIndex];
      if (!name) {
        auto *init =
            llvm::ConstantDataArray::getString(ME.Ctx, P.Kernels[c.KernelIndex].Name, true);
        name = new llvm::GlobalVariable(ME.M, init->getType(), true,
                                        llvm::GlobalValue::PrivateLinkage, init,
                                        P.Kernels[c.KernelIndex].Name + ".name");
      }
      auto callHook = [&](int phase) {
        if (withHook)
          B.CreateCall(hookTy, Hook,
                       {HookCtx, llvm::ConstantInt::get(I32, ci), name,
                        llvm::ConstantInt::get(I32, phase)});
      };
      // A guarded call (a branch or loop iteration) runs only when its
      // condition's byte is non-zero.
      llvm::BasicBlock *after = nullptr;
      if (c.Guard) {
        auto *taken = llvm::BasicBlock::Create(ME.Ctx, "guarded", Run);
        after = llvm::BasicBlock::Create(ME.Ctx, "after", Run);
        Value *flag = B.CreateLoad(I8, pointer(*c.Guard));
        B.CreateCondBr(B.CreateICmpNE(flag, llvm::ConstantInt::get(I8, 0)), taken, after);
        B.SetInsertPoint(taken);
      }
      callHook(0);
      std::vector<Value *> args;
      for (auto &s : c.Args)
        args.push_back(pointer(s));
      args.push_back(Options);
      B.CreateCall(Kernels[c.KernelIndex], args);
      callHook(1);
      if (after) {
        B.CreateBr(after);
        B.SetInsertPoint(after);
      }
    }
    B.CreateRet(llvm::ConstantInt::get(I32, 0));
  }

  ModuleEmitter &ME;
  const Program &P;
  const InputsLayout &Inputs;
  const std::vector<llvm::GlobalVariable *> &Constants;
  const std::vector<llvm::Function *> &Kernels;
  llvm::Function *Run;
  IRBuilder<> B;
  llvm::Type *I8, *I32, *I64, *Ptr, *Size;
  /// The arguments of NAME_run_with.
  Value *In, *Out, *Arena, *ArenaSize, *Options;
  std::vector<Value *> InPtrs, OutPtrs;
  /// The first run-time dimension in the inputs struct (null without).
  Value *DimsPtr = nullptr;
  /// The profiling hook and its context (null when not given).
  Value *Hook = nullptr, *HookCtx = nullptr;
  /// The kernels' names for the hook, made at their first call.
  std::vector<llvm::GlobalVariable *> KernelNames;
};

/// NAME`suffix`, NAME_run or NAME_run_ptrs: NAME_run_with without options.
void emitRunWrapper(ModuleEmitter &me, const Program &p, const InputsLayout &inputsLayout,
                    llvm::Function *run, const char *suffix) {
  llvm::LLVMContext &ctx = me.Ctx;
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::Type *ptr = me.PtrTy, *size = me.IndexTy;
  llvm::StructType *inputsTy = inputsLayout.Type;
  const size_t inputFields = inputsLayout.PointerFields;
  auto *runTy = llvm::FunctionType::get(i32, {ptr, ptr, ptr, size}, false);
  auto *fn = llvm::Function::Create(runTy, llvm::GlobalValue::ExternalLinkage,
                                    p.Name + suffix, me.M);
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

} // namespace

llvm::Function *emitRunWith(ModuleEmitter &me, const Program &p, const InputsLayout &inputs,
                            const std::vector<llvm::GlobalVariable *> &constants,
                            const std::vector<llvm::Function *> &kernels) {
  llvm::Type *i32 = llvm::Type::getInt32Ty(me.Ctx), *ptr = me.PtrTy, *size = me.IndexTy;
  auto *runWithTy = llvm::FunctionType::get(i32, {ptr, ptr, ptr, size, ptr}, false);
  auto *run = llvm::Function::Create(runWithTy, llvm::GlobalValue::ExternalLinkage,
                                     p.Name + "_run_with", me.M);
  run->addFnAttr(llvm::Attribute::NoUnwind);
  RunWithEmitter(me, p, inputs, constants, kernels, run).emit();
  return run;
}

void emitRunWrappers(ModuleEmitter &me, const Program &p, const InputsLayout &inputs,
                     llvm::Function *runWith) {
  // NAME_run and NAME_run_ptrs (the structs are arrays of pointers): the
  // same with no options.
  for (const char *suffix : {"_run", "_run_ptrs"})
    emitRunWrapper(me, p, inputs, runWith, suffix);
}

} // namespace mlcc::llvmgen
