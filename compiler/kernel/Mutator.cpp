#include "compiler/kernel/Mutator.h"

#include "compiler/support/Error.h"

namespace mlcc::kir {

Expr withOperands(const Expr &e, const Expr &a, const Expr &b, const Expr &c) {
  if (a == e->A && b == e->B && c == e->C)
    return e;
  switch (e->Kind) {
  case ExprKind::Const:
  case ExprKind::VarRef:
    return e;
  case ExprKind::Load:
    return vload(e->Buf, a, e->Lanes, e->Stride);
  case ExprKind::Broadcast:
    return a->Lanes > 1 ? broadcastLane(a, e->IntValue, e->Lanes) : broadcast(a, e->Lanes);
  case ExprKind::Unary:
    return unary(e->Un, a);
  case ExprKind::Binary:
    return binary(e->Bin, a, b);
  case ExprKind::Select:
    return select(a, b, c);
  case ExprKind::Cast:
    return cast(e->Type, a);
  case ExprKind::BitCast:
    return bitcast(e->Type, a);
  }
  return e;
}

Expr Mutator::mutate(const Expr &e) {
  auto sub = [&](const Expr &x) { return x ? mutate(x) : x; };
  return withOperands(e, sub(e->A), sub(e->B), sub(e->C));
}

Stmt Mutator::mutate(const Stmt &s) {
  if (!s)
    return s;
  switch (s->Kind) {
  case StmtKind::Block: {
    std::vector<Stmt> body;
    bool changed = false;
    for (auto &c : s->Body) {
      body.push_back(mutate(c));
      changed |= body.back() != c;
    }
    return changed ? block(std::move(body)) : s;
  }
  case StmtKind::For: {
    Expr b = mutate(s->Begin), e = mutate(s->End);
    Stmt inner = mutate(s->Inner);
    return b == s->Begin && e == s->End && inner == s->Inner
               ? s
               : forLoop(s->LoopVar, b, e, inner, s->Loop);
  }
  case StmtKind::Store: {
    Expr i = mutate(s->Index), v = mutate(s->Value);
    return i == s->Index && v == s->Value ? s : store(s->Buf, i, v, s->Stride);
  }
  case StmtKind::If: {
    Expr c = mutate(s->Cond);
    Stmt t = mutate(s->Inner), f = mutate(s->Else);
    return c == s->Cond && t == s->Inner && f == s->Else ? s : ifThen(c, t, f);
  }
  case StmtKind::Alloc: {
    Stmt inner = mutate(s->Inner);
    return inner == s->Inner ? s : alloc(s->Buf, inner);
  }
  case StmtKind::Barrier:
    return s;
  }
  return s;
}

void visitExprs(const Expr &e, const std::function<void(const Expr &)> &fn) {
  if (!e)
    return;
  fn(e);
  visitExprs(e->A, fn);
  visitExprs(e->B, fn);
  visitExprs(e->C, fn);
}

void visitStmts(const Stmt &s, const std::function<void(const Stmt &)> &fn) {
  if (!s)
    return;
  fn(s);
  for (auto &c : s->Body)
    visitStmts(c, fn);
  visitStmts(s->Inner, fn);
  visitStmts(s->Else, fn);
}

void visitExprs(const Stmt &s, const std::function<void(const Expr &)> &fn) {
  if (!s)
    return;
  for (auto &c : s->Body)
    visitExprs(c, fn);
  visitExprs(s->Begin, fn);
  visitExprs(s->End, fn);
  visitExprs(s->Index, fn);
  visitExprs(s->Value, fn);
  visitExprs(s->Cond, fn);
  visitExprs(s->Inner, fn);
  visitExprs(s->Else, fn);
}

namespace {
class Substituter : public Mutator {
public:
  Substituter(const Var &v, const Expr &value) : V(v), Value(value) {}
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    if (e->Kind == ExprKind::VarRef && e->V == V)
      return Value;
    return Mutator::mutate(e);
  }

private:
  const Var &V;
  const Expr &Value;
};
} // namespace

Stmt substitute(const Stmt &s, const Var &v, const Expr &value) {
  Substituter m(v, value);
  return m.mutate(s);
}

Expr substitute(const Expr &e, const Var &v, const Expr &value) {
  Substituter m(v, value);
  return m.mutate(e);
}

bool dependsOn(const Expr &e, const Var &v) {
  bool found = false;
  visitExprs(e, [&](const Expr &x) {
    if (x->Kind == ExprKind::VarRef && x->V == v)
      found = true;
  });
  return found;
}

Var newVar(const std::string &name) { return std::make_shared<VarNode>(VarNode{name}); }

Kernel rewrite(const Kernel &k, Mutator &m) {
  Kernel r = k;
  r.Body = m.mutate(k.Body);
  if (r.Body != k.Body)
    r.finalize();
  return r;
}

} // namespace mlcc::kir
