//===- Scalarize.cpp - Vector stores as loops over lanes --------------------===//
//
// scalarize: every vector store becomes a loop over its lanes, each lane
// computed by scalar expressions (for the interpreter and the C emitter).
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"



namespace mlcc::kir {

namespace {

/// Lane `lane` of the vector expression `e`.
Expr laneOf(const Expr &e, const Expr &lane) {
  if (e->Lanes == 1)
    return e;
  switch (e->Kind) {
  case ExprKind::Load:
    return load(e->Buf, e->A + lane * e->Stride);
  case ExprKind::Broadcast:
    return e->A->Lanes > 1 ? laneOf(e->A, indexConst(e->IntValue)) : e->A;
  case ExprKind::Unary:
    return unary(e->Un, laneOf(e->A, lane));
  case ExprKind::Binary:
    return binary(e->Bin, laneOf(e->A, lane), laneOf(e->B, lane));
  case ExprKind::Select:
    return select(laneOf(e->A, lane), laneOf(e->B, lane), laneOf(e->C, lane));
  case ExprKind::Cast:
    return cast(e->Type, laneOf(e->A, lane));
  case ExprKind::BitCast:
    return bitcast(e->Type, laneOf(e->A, lane));
  default:
    MLCC_CHECK(false, "a vector " << print(e));
  }
  return e;
}

class Scalarizer : public Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s && s->Kind == StmtKind::Store && s->Value->Lanes > 1) {
      Var l = newVar("lane");
      Expr lane = varRef(l);
      return forLoop(l, indexConst(0), indexConst(s->Value->Lanes),
                     store(s->Buf, s->Index + lane * s->Stride, laneOf(s->Value, lane)));
    }
    return Mutator::mutate(s);
  }
};

/// Rewrites every halfArithmetic expression in f32 (widenHalfArithmetic).
class HalfWidener : public Mutator {
public:
  using Mutator::mutate;
  Expr mutate(const Expr &e) override {
    Expr r = Mutator::mutate(e);
    if (!halfArithmetic(*r))
      return r;
    Expr a = cast(DType::F32, r->A);
    if (r->Kind == ExprKind::Unary)
      return cast(DType::F16, unary(r->Un, a));
    Expr w = binary(r->Bin, a, cast(DType::F32, r->B));
    return isComparison(r->Bin) ? w : cast(DType::F16, w);
  }
};

} // namespace

Kernel widenHalfArithmetic(const Kernel &k) {
  bool found = false;
  visitExprs(k.Body, [&](const Expr &e) { found |= halfArithmetic(*e); });
  if (!found)
    return k;
  HalfWidener m;
  return rewrite(k, m);
}

bool hasVectors(const Stmt &s) {
  bool found = false;
  visitExprs(s, [&](const Expr &e) { found |= e->Lanes > 1; });
  return found;
}

Stmt scalarize(const Stmt &s) {
  if (!hasVectors(s))
    return s;
  Scalarizer m;
  return m.mutate(s);
}

Kernel scalarize(const Kernel &k) {
  Kernel r = k;
  r.Body = scalarize(k.Body);
  return r;
}

} // namespace mlcc::kir
