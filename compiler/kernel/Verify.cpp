//===- Verify.cpp - The kernel IR's verifier ------------------------------===//
//
// kir::verify checks a kernel's invariants (parameters, types of every
// operand, buffers in scope, loop variables bound once) and Kernel::finalize
// records which parameters the body writes.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/KernelIR.h"

#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"

#include <map>
#include <set>
#include <sstream>

namespace mlcc::kir {

// ---------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------

namespace {

class Verifier {
public:
  explicit Verifier(const Kernel &k) : K(k) {
    for (auto &p : k.Params) {
      check(p->Kind == BufferKind::Param, "parameter " + p->Name +
                                              " is not a Param buffer");
      check(isStorable(p->Type), "parameter " + p->Name + " has type " +
                                     dtypeName(p->Type));
      Buffers.insert(p.get());
    }
  }

  void stmt(const Stmt &s) {
    check(s != nullptr, "null statement");
    switch (s->Kind) {
    case StmtKind::Block:
      for (auto &c : s->Body)
        stmt(c);
      break;
    case StmtKind::For:
      expr(s->Begin);
      expr(s->End);
      check(s->Begin->Lanes == 1 && s->End->Lanes == 1, "vector loop bound");
      check(!Vars.count(s->LoopVar.get()), "loop variable " +
                                               s->LoopVar->Name +
                                               " is bound twice");
      Vars.insert(s->LoopVar.get());
      {
        // Where barriers and shared buffers may stand (see StmtKind).
        Place saved = Where;
        if (s->Loop == LoopKind::GpuBlock)
          Where = Place::Block;
        else if (s->Loop == LoopKind::GpuThread)
          Where = Place::Elsewhere;
        stmt(s->Inner);
        Where = saved;
      }
      Vars.erase(s->LoopVar.get());
      break;
    case StmtKind::Store:
      check(Buffers.count(s->Buf.get()), "store to unknown buffer " +
                                             s->Buf->Name);
      expr(s->Index);
      expr(s->Value);
      check(s->Index->Lanes == 1, "vector index of a store to " + s->Buf->Name);
      break;
    case StmtKind::If:
      expr(s->Cond);
      check(s->Cond->Lanes == 1, "vector if condition");
      {
        Place saved = Where;
        Where = Place::Elsewhere;
        stmt(s->Inner);
        if (s->Else)
          stmt(s->Else);
        Where = saved;
      }
      break;
    case StmtKind::Alloc:
      check(!Buffers.count(s->Buf.get()), "buffer " + s->Buf->Name +
                                              " allocated twice");
      check(s->Buf->Kind != BufferKind::Shared || Where == Place::Block,
            "shared buffer " + s->Buf->Name + " allocated outside a GPU block's body");
      Buffers.insert(s->Buf.get());
      stmt(s->Inner);
      Buffers.erase(s->Buf.get());
      break;
    case StmtKind::Barrier:
      check(Where == Place::Block, "barrier outside a GPU block's body or inside a "
                                   "thread loop or a condition");
      break;
    }
  }

  void expr(const Expr &e) {
    check(e != nullptr, "null expression");
    check(e->Depth <= kMaxExprDepth, "an expression " + std::to_string(e->Depth) +
                                         " levels deep (at most " +
                                         std::to_string(kMaxExprDepth) + ")");
    switch (e->Kind) {
    case ExprKind::Const:
      break;
    case ExprKind::VarRef:
      check(Vars.count(e->V.get()), "variable " + e->V->Name +
                                        " used outside its loop");
      break;
    case ExprKind::Load:
      check(Buffers.count(e->Buf.get()), "load from unknown buffer " +
                                             e->Buf->Name);
      expr(e->A);
      check(e->A->Lanes == 1, "vector load index");
      break;
    case ExprKind::Broadcast:
      expr(e->A);
      check(e->Lanes > 1 && (e->A->Lanes == 1 ? e->IntValue == 0 : e->IntValue < e->A->Lanes),
            "broadcast of a vector");
      break;
    case ExprKind::Unary:
      check(!isNarrowFloat(e->A->Type) || halfArithmetic(*e), "arithmetic on a narrow float");
      expr(e->A);
      break;
    case ExprKind::Binary:
      check(!isNarrowFloat(e->A->Type) || halfArithmetic(*e), "arithmetic on a narrow float");
      expr(e->A);
      expr(e->B);
      break;
    case ExprKind::Select:
      expr(e->A);
      expr(e->B);
      expr(e->C);
      break;
    case ExprKind::Cast:
    case ExprKind::BitCast:
      expr(e->A);
      break;
    }
  }

private:
  /// Block: in a GpuBlock loop's body, outside thread loops and Ifs.
  enum class Place { Elsewhere, Block };
  Place Where = Place::Elsewhere;

  void check(bool ok, const std::string &msg) {
    if (!ok)
      fail(ErrorKind::Internal) << "internal error: kernel " << K.Name << ": "
                                << msg;
  }
  const Kernel &K;
  std::set<const BufferNode *> Buffers;
  std::set<const VarNode *> Vars;
};

void collectWritten(const Stmt &s, std::set<const BufferNode *> &out) {
  visitStmts(s, [&](const Stmt &st) {
    if (st->Kind == StmtKind::Store)
      out.insert(st->Buf.get());
  });
}

} // namespace

int maxExprDepth(const Kernel &k) {
  int depth = 0;
  visitStmts(k.Body, [&](const Stmt &s) {
    for (const Expr *e : {&s->Begin, &s->End, &s->Index, &s->Value, &s->Cond})
      if (*e)
        depth = std::max(depth, (*e)->Depth);
  });
  return depth;
}

void verify(const Kernel &k) {
  Verifier v(k);
  v.stmt(k.Body);
}

void Kernel::finalize() {
  verify(*this);
  std::set<const BufferNode *> w;
  collectWritten(Body, w);
  Written.clear();
  for (auto &p : Params)
    Written.push_back(w.count(p.get()) > 0);
}

} // namespace mlcc::kir
