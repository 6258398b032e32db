#include "compiler/kernel/Cost.h"

#include "compiler/kernel/ScalarEval.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>

namespace mlcc::kir {

namespace {

/// What a Counter counts (see Cost.h).
enum class Measure { Ops, Stores, CopiedBytes, FilledBytes };

/// Walks a statement and counts one of the measures of Cost.h.
class Counter {
public:
  explicit Counter(Measure m) : M(m), Stores(m == Measure::Stores) {}

  double stmt(const Stmt &s) {
    if (!s)
      return 0;
    switch (s->Kind) {
    case StmtKind::Block: {
      double n = 0;
      for (auto &b : s->Body)
        n += stmt(b);
      return n;
    }
    case StmtKind::For: {
      if (Stores) {
        bool fixed = s->Begin->isConst() && s->End->isConst();
        double trips = fixed ? (double)std::max<int64_t>(s->End->IntValue - s->Begin->IntValue, 0) : 1;
        return trips * stmt(s->Inner);
      }
      std::optional<int64_t> begin = eval(s->Begin), end = eval(s->End);
      if (!begin || !end) {
        Env[s->LoopVar.get()] = begin.value_or(0);
        double n = stmt(s->Inner);
        Env.erase(s->LoopVar.get());
        return n;
      }
      int64_t trips = *end - *begin;
      if (trips <= 0)
        return 0;
      Env[s->LoopVar.get()] = *begin + (trips - 1) / 2;
      double n = (double)trips * stmt(s->Inner);
      Env.erase(s->LoopVar.get());
      return n;
    }
    case StmtKind::Store: {
      if (Stores)
        return s->Value->Lanes;
      if (M == Measure::CopiedBytes || M == Measure::FilledBytes) {
        if (s->Buf->Kind != BufferKind::Param)
          return 0;
        const Expr &v = s->Value;
        bool copy = v->Kind == ExprKind::Load && v->Buf->Kind == BufferKind::Param;
        bool fill = v->Kind == ExprKind::Const ||
                    (v->Kind == ExprKind::Broadcast && v->A->Kind == ExprKind::Const);
        bool counted = M == Measure::CopiedBytes ? copy : fill;
        return counted ? (double)v->Lanes * (double)dtypeSize(s->Buf->Type) : 0;
      }
      std::set<const ExprNode *> seen;
      return expr(s->Value, seen);
    }
    case StmtKind::If: {
      if (std::optional<int64_t> c = Stores ? std::nullopt : eval(s->Cond))
        return stmt(*c ? s->Inner : s->Else);
      return std::max(stmt(s->Inner), stmt(s->Else));
    }
    case StmtKind::Alloc:
      return stmt(s->Inner);
    case StmtKind::Barrier:
      return 0;
    }
    return 0;
  }

private:
  /// Operations in a stored value; a shared subexpression counts once.
  double expr(const Expr &e, std::set<const ExprNode *> &seen) {
    if (!e || !seen.insert(e.get()).second)
      return 0;
    double n = 0;
    if (e->Kind == ExprKind::Unary || e->Kind == ExprKind::Binary) {
      DType operand = e->A->Type;
      if (operand != DType::Index && operand != DType::Bool)
        n += e->Lanes;
    }
    if (e->Kind == ExprKind::Load)
      return n; // its index is addressing
    return n + expr(e->A, seen) + expr(e->B, seen) + expr(e->C, seen);
  }

  /// The value of an Index/integer/Bool expression with the enclosing loop
  /// variables at their middle values, or nothing when it reads memory.
  std::optional<int64_t> eval(const Expr &e) {
    std::optional<Scalar> v = scalar(e);
    if (!v || isFloat(e->Type))
      return std::nullopt;
    return v->I;
  }

  std::optional<Scalar> scalar(const Expr &e) {
    if (!e || e->Lanes != 1)
      return std::nullopt;
    switch (e->Kind) {
    case ExprKind::Const: {
      Scalar s;
      s.I = e->IntValue;
      s.F = e->FloatValue;
      return s;
    }
    case ExprKind::VarRef: {
      auto it = Env.find(e->V.get());
      if (it == Env.end())
        return std::nullopt;
      Scalar s;
      s.I = it->second;
      return s;
    }
    case ExprKind::Unary: {
      auto a = scalar(e->A);
      if (!a)
        return std::nullopt;
      return evalUnary(e->Un, e->A->Type, *a);
    }
    case ExprKind::Binary: {
      auto a = scalar(e->A), b = scalar(e->B);
      if (!a || !b)
        return std::nullopt;
      return evalBinary(e->Bin, e->A->Type, *a, *b);
    }
    case ExprKind::Select: {
      auto c = scalar(e->A);
      if (!c)
        return std::nullopt;
      return scalar(c->I ? e->B : e->C);
    }
    case ExprKind::Cast: {
      auto a = scalar(e->A);
      if (!a)
        return std::nullopt;
      return evalCast(e->Type, e->A->Type, *a);
    }
    default:
      return std::nullopt;
    }
  }

  const Measure M;
  const bool Stores;
  std::map<const VarNode *, int64_t> Env;
};

int64_t toCount(double n) { return n >= 9.2e18 ? INT64_MAX : (int64_t)n; }

} // namespace

int64_t countOps(const Kernel &k) { return toCount(Counter(Measure::Ops).stmt(k.Body)); }

int64_t workOf(const Stmt &s) { return toCount(Counter(Measure::Stores).stmt(s)); }

Movement movementOf(const Kernel &k) {
  return {toCount(Counter(Measure::CopiedBytes).stmt(k.Body)),
          toCount(Counter(Measure::FilledBytes).stmt(k.Body))};
}

} // namespace mlcc::kir
