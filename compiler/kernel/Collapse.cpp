//===- Collapse.cpp - Perfect loop nests as one loop ------------------------===//
//
// collapse: perfectly nested loops whose accesses are contiguous across them
// become one loop (rows of a copy, the plane of a reduction), innermost
// first; what is computed and its order are unchanged.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Mutator.h"

#include <algorithm>
#include <map>
#include <set>

namespace mlcc::kir {

namespace {

/// Whether loops `o` (outer) and `i` (inner, `extent` iterations) can become
/// one loop in `s`: both variables are used only in load and store indices,
/// each affine with o's coefficient `extent` times i's (so the flat index
/// o * extent + i addresses the same elements in the same order).
bool collapsible(const Stmt &s, const Var &o, const Var &i, int64_t extent) {
  bool ok = true;
  std::function<void(const Expr &)> expr;
  auto index = [&](const Expr &e) {
    auto so = strideOf(e, o), si = strideOf(e, i);
    if (!so || !si || *so != *si * extent)
      ok = false;
    // The index itself may hold loads (a gather) that do not use o or i.
    visitExprs(e, [&](const Expr &x) {
      if (x->Kind == ExprKind::Load && (dependsOn(x->A, o) || dependsOn(x->A, i)))
        ok = false;
    });
  };
  expr = [&](const Expr &e) {
    if (!ok || !e)
      return;
    switch (e->Kind) {
    case ExprKind::VarRef:
      if (e->V == o || e->V == i)
        ok = false;
      return;
    case ExprKind::Load:
      index(e->A);
      return;
    default:
      expr(e->A);
      expr(e->B);
      expr(e->C);
    }
  };
  std::function<void(const Stmt &)> stmt = [&](const Stmt &st) {
    if (!ok || !st)
      return;
    switch (st->Kind) {
    case StmtKind::Block:
      for (auto &c : st->Body)
        stmt(c);
      return;
    case StmtKind::For:
      expr(st->Begin);
      expr(st->End);
      stmt(st->Inner);
      return;
    case StmtKind::Store:
      index(st->Index);
      expr(st->Value);
      return;
    case StmtKind::If:
      expr(st->Cond);
      stmt(st->Inner);
      stmt(st->Else);
      return;
    case StmtKind::Alloc:
      stmt(st->Inner);
      return;
    case StmtKind::Barrier:
      return;
    }
  };
  stmt(s);
  return ok;
}

/// Rewrites every index that uses o or i as its value at o = i = 0 plus
/// q times i's coefficient.
class Flattener : public Mutator {
public:
  Flattener(Var o, Var i, Var q) : O(std::move(o)), I(std::move(i)), Q(std::move(q)) {}
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    if (e && e->Kind == ExprKind::Load && uses(e->A))
      return vload(e->Buf, flat(e->A), e->Lanes, e->Stride);
    return Mutator::mutate(e);
  }
  Stmt mutate(const Stmt &s) override {
    if (s && s->Kind == StmtKind::Store && uses(s->Index))
      return store(s->Buf, flat(s->Index), mutate(s->Value));
    return Mutator::mutate(s);
  }

private:
  bool uses(const Expr &e) const { return dependsOn(e, O) || dependsOn(e, I); }
  Expr flat(const Expr &e) const {
    int64_t si = *strideOf(e, I);
    Expr base = substitute(substitute(e, O, indexConst(0)), I, indexConst(0));
    return base + varRef(Q) * si;
  }
  Var O, I, Q;
};

/// Merges perfectly nested serial loops from 0 whose accesses are
/// contiguous across them (a copy of whole rows, a reduction over a whole
/// plane) into one loop, innermost pairs first, so that the vectorizer
/// sees one long loop instead of many short rows.
class Collapser : public Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s0) override {
    Stmt s = Mutator::mutate(s0);
    if (!s || s->Kind != StmtKind::For)
      return s;
    const StmtNode *inner = s->Inner.get();
    if (inner->Kind == StmtKind::Block && inner->Body.size() == 1)
      inner = inner->Body[0].get();
    if (!plainLoop(*s) || inner->Kind != StmtKind::For || !plainLoop(*inner))
      return s;
    int64_t eo = s->End->IntValue, ei = inner->End->IntValue;
    if (!collapsible(inner->Inner, s->LoopVar, inner->LoopVar, ei))
      return s;
    Var q = newVar(inner->LoopVar->Name);
    Flattener f(s->LoopVar, inner->LoopVar, q);
    return forLoop(q, indexConst(0), indexConst(eo * ei), f.mutate(inner->Inner));
  }

private:
  static bool plainLoop(const StmtNode &s) {
    return s.Kind == StmtKind::For && s.Loop == LoopKind::Serial && s.Begin->isConst() &&
           s.Begin->IntValue == 0 && s.End->isConst() && s.End->IntValue > 0;
  }
};

} // namespace

Kernel collapse(const Kernel &k) {
  Collapser m;
  return rewrite(k, m);
}

} // namespace mlcc::kir
