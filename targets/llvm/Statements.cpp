//===- Statements.cpp - Kernel statements and loops -----------------------===//
//
// KernelEmitter's statements: blocks (with the store groups and transposed
// load groups of their straight-line bodies, StridedAccess.cpp), stores and
// scatters, conditionals, stack buffers, serial loops, and parallel loops,
// whose body becomes a task function run through the caller's
// parallel_for hook or in a serial loop.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/support/Error.h"

namespace mlcc::llvmgen {

using namespace kir;
using llvm::IRBuilder;
using llvm::Value;

void KernelEmitter::stmt(const Stmt &s) {
  switch (s->Kind) {
  case StmtKind::Block:
    block(*s);
    return;
  case StmtKind::For:
    forLoop(*s);
    return;
  case StmtKind::Store:
    store(*s);
    return;
  case StmtKind::If:
    ifThenElse(*s);
    return;
  case StmtKind::Alloc:
    alloc(*s);
    return;
  case StmtKind::Barrier: // its thread loops run one after the other here
    return;
  }
}

void KernelEmitter::block(const StmtNode &s) {
  // The loads ahead stand for their expressions in this block only (an
  // unrolled loop emits it again with other indices).
  std::vector<const ExprNode *> ahead = loadTransposedGroups(s.Body);
  std::vector<StoreGroup> groups = storeGroups(s.Body);
  std::map<const StmtNode *, std::pair<StoreGroup *, size_t>> member;
  for (auto &g : groups)
    for (size_t k = 0; k < g.Members.size(); ++k)
      member[g.Members[k]] = {&g, k};
  for (size_t i = 0; i < s.Body.size();) {
    auto m = member.find(s.Body[i].get());
    if (m != member.end()) {
      // Evaluated in program order; stored once the last is known.
      StoreGroup &g = *m->second.first;
      g.Values[m->second.second] = expr(s.Body[i++]->Value);
      if (++g.Evaluated == g.Members.size())
        storeGroup(g);
      continue;
    }
    stmt(s.Body[i++]);
  }
  for (const ExprNode *e : ahead)
    Transposed.erase(e);
}

void KernelEmitter::store(const StmtNode &s) {
  Value *v = expr(s.Value);
  if (s.Buf->Type == DType::Bool)
    v = B.CreateZExt(v, B.getInt8Ty());
  Value *index = expr(s.Index);
  if (s.Stride > 1) { // a scatter
    auto *lanes = llvm::cast<llvm::FixedVectorType>(v->getType());
    llvm::SmallVector<llvm::Constant *, 64> offs;
    for (unsigned l = 0; l < lanes->getNumElements(); ++l)
      offs.push_back(llvm::ConstantInt::get(ME.IndexTy, (uint64_t)(l * s.Stride)));
    Value *idx = B.CreateAdd(B.CreateVectorSplat(lanes->getNumElements(), index),
                             llvm::ConstantVector::get(offs));
    Value *ptrs = address(s.Buf.get(), idx);
    B.CreateMaskedScatter(v, ptrs, llvm::Align(dtypeSize(s.Buf->Type)));
    return;
  }
  Value *addr = address(s.Buf.get(), index);
  if (s.Value->Lanes > 1)
    B.CreateAlignedStore(v, addr, llvm::Align(dtypeSize(s.Buf->Type)));
  else
    B.CreateStore(v, addr);
}

void KernelEmitter::ifThenElse(const StmtNode &s) {
  Value *c = expr(s.Cond);
  auto *thenBB = llvm::BasicBlock::Create(ME.Ctx, "then", F);
  auto *elseBB = s.Else ? llvm::BasicBlock::Create(ME.Ctx, "else", F) : nullptr;
  auto *merge = llvm::BasicBlock::Create(ME.Ctx, "endif", F);
  B.CreateCondBr(c, thenBB, elseBB ? elseBB : merge);
  B.SetInsertPoint(thenBB);
  stmt(s.Inner);
  B.CreateBr(merge);
  if (elseBB) {
    B.SetInsertPoint(elseBB);
    stmt(s.Else);
    B.CreateBr(merge);
  }
  B.SetInsertPoint(merge);
}

void KernelEmitter::alloc(const StmtNode &s) {
  // Stack slots live in the entry block so that SROA promotes them.
  IRBuilder<> eb(Entry, Entry->begin());
  llvm::Type *t = ME.memoryType(s.Buf->Type);
  llvm::AllocaInst *slot = eb.CreateAlloca(
      t, llvm::ConstantInt::get(ME.IndexTy, s.Buf->Size), s.Buf->Name);
  // Buffers of a vector or more (panels, tiles) start on a cache line,
  // so that whole-vector loads from them never split one.
  if (s.Buf->Size * (int64_t)dtypeSize(s.Buf->Type) >= 64)
    slot->setAlignment(llvm::Align(64));
  bind(s.Buf.get(), slot);
  stmt(s.Inner);
  unbind(s.Buf.get());
}

Value *KernelEmitter::address(const BufferNode *buf, Value *index) {
  auto it = Buffers.find(buf);
  MLCC_CHECK(it != Buffers.end(), "buffer " << buf->Name << " not bound");
  return B.CreateInBoundsGEP(ME.memoryType(buf->Type), it->second, index);
}

void KernelEmitter::forLoop(const StmtNode &s) {
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

/// A Parallel loop: its body becomes a task function
/// `void task(void *context, int32_t index, int32_t worker)` whose context
/// holds every buffer and variable in scope, run through
/// options->parallel_for when the caller gave one, else in a serial loop.
void KernelEmitter::parallelLoop(const StmtNode &s) {
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

  llvm::Function *task = taskFunction(s, ctxTy, bufs, vars);
  llvm::FunctionType *taskTy = task->getFunctionType();

  // parallel_for(pool, count, task, ctx), or a serial loop.
  Value *count = B.CreateSub(end, begin);
  count = B.CreateSelect(B.CreateICmpSLT(count, llvm::ConstantInt::get(ME.IndexTy, 0)),
                         llvm::ConstantInt::get(ME.IndexTy, 0), count);
  count = B.CreateTrunc(count, i32);
  auto *hookBB = llvm::BasicBlock::Create(ME.Ctx, "par.hook", F);
  auto *serialBB = llvm::BasicBlock::Create(ME.Ctx, "par.serial", F);
  auto *doneBB = llvm::BasicBlock::Create(ME.Ctx, "par.done", F);
  auto *checkFn = llvm::BasicBlock::Create(ME.Ctx, "par.check", F);
  // A kernel whose Parallel loops must run in order (Kernel::InOrder)
  // never hands them to parallel_for.
  B.CreateCondBr(InOrder ? B.getTrue() : B.CreateIsNull(Opts), serialBB, checkFn);
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

/// The task function of the Parallel loop `s`: `ctxTy` is its context,
/// which holds `bufs`, `vars`, then the loop's begin.
llvm::Function *KernelEmitter::taskFunction(const StmtNode &s, llvm::StructType *ctxTy,
                                            const std::vector<const BufferNode *> &bufs,
                                            const std::vector<const VarNode *> &vars) {
  llvm::Type *i32 = B.getInt32Ty();
  auto *taskTy = llvm::FunctionType::get(B.getVoidTy(), {ME.PtrTy, i32, i32}, false);
  auto *task = llvm::Function::Create(taskTy, llvm::GlobalValue::InternalLinkage,
                                      F->getName() + ".task", ME.M);
  task->addFnAttr(llvm::Attribute::NoUnwind);
  for (auto &attr : F->getAttributes().getFnAttrs())
    if (attr.isStringAttribute())
      task->addFnAttr(attr);
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
  return task;
}

} // namespace mlcc::llvmgen
