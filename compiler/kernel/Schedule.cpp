#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"

namespace mlcc::kir {

int ScheduleTarget::lanes(DType t) const {
  int size = (int)dtypeSize(t);
  return VectorBytes > size && size > 0 ? VectorBytes / size : 1;
}

ContractionTile chooseContractionTile(const ScheduleTarget &t, int64_t rows,
                                      int64_t cols) {
  int64_t lanes = t.lanes(DType::F32);
  // Scalar floating-point units (Cortex-M4F, RV32F) have 32 registers.
  int64_t regs = t.VectorRegisters > 0 ? t.VectorRegisters : 32;
  ContractionTile best;
  double bestScore = -1;
  int64_t maxVectors = std::min<int64_t>(4, (cols + lanes - 1) / lanes);
  for (int64_t nv = 1; nv <= maxVectors; ++nv) {
    int64_t panel = nv * lanes;
    int64_t maxRows = std::min<int64_t>({(regs - nv - 1) / nv, 16, rows});
    for (int64_t rw = 1; rw <= maxRows; ++rw) {
      double usefulRows = (double)rows / (double)(((rows + rw - 1) / rw) * rw);
      double usefulCols = (double)cols / (double)(((cols + panel - 1) / panel) * panel);
      double accs = (double)(rw * nv);
      double latency = std::min(1.0, accs / 8.0);     // independent FMA chains
      double loads = (double)(rw + nv) / accs;       // operand loads per FMA
      double score = usefulRows * usefulCols * latency / (1.0 + 0.5 * loads);
      if (score > bestScore + 1e-9) {
        bestScore = score;
        best = {lanes, panel, rw};
      }
    }
  }
  return best;
}

std::optional<int64_t> strideOf(const Expr &e, const Var &v) {
  if (!dependsOn(e, v))
    return 0;
  if (e->Kind == ExprKind::VarRef)
    return 1;
  if (e->Kind != ExprKind::Binary || e->Type != DType::Index)
    return std::nullopt;
  auto a = strideOf(e->A, v), b = strideOf(e->B, v);
  switch (e->Bin) {
  case BinOp::Add:
    if (a && b)
      return *a + *b;
    break;
  case BinOp::Sub:
    if (a && b)
      return *a - *b;
    break;
  case BinOp::Mul:
    if (e->B->isConst() && a)
      return *a * e->B->IntValue;
    if (e->A->isConst() && b)
      return *b * e->A->IntValue;
    break;
  default:
    break;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// scalarize
// ---------------------------------------------------------------------------

namespace {

/// Lane `lane` of the vector expression `e`.
Expr laneOf(const Expr &e, const Expr &lane) {
  if (e->Lanes == 1)
    return e;
  switch (e->Kind) {
  case ExprKind::Load:
    return load(e->Buf, e->A + lane);
  case ExprKind::Broadcast:
    return e->A;
  case ExprKind::Unary:
    return unary(e->Un, laneOf(e->A, lane));
  case ExprKind::Binary:
    return binary(e->Bin, laneOf(e->A, lane), laneOf(e->B, lane));
  case ExprKind::Select:
    return select(laneOf(e->A, lane), laneOf(e->B, lane), laneOf(e->C, lane));
  case ExprKind::Cast:
    return cast(e->Type, laneOf(e->A, lane));
  default:
    MLCC_CHECK(false, "a vector " << print(e));
  }
  return e;
}

class Scalarizer : public Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (s->Kind == StmtKind::Store && s->Value->Lanes > 1) {
      Var l = newVar("lane");
      Expr lane = varRef(l);
      return forLoop(l, indexConst(0), indexConst(s->Value->Lanes),
                     store(s->Buf, s->Index + lane, laneOf(s->Value, lane)));
    }
    return Mutator::mutate(s);
  }
};

} // namespace

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

// ---------------------------------------------------------------------------
// vectorize
// ---------------------------------------------------------------------------

namespace {

/// Scalar types the emitters vectorize (no helper-function conversions).
bool vectorType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::Index ||
         (isInteger(t) && t != DType::Bool);
}

bool vectorUnary(UnOp op) {
  switch (op) {
  case UnOp::Neg:
  case UnOp::Abs:
  case UnOp::Sqrt:
  case UnOp::Floor:
  case UnOp::Ceil:
  case UnOp::Round:
  case UnOp::Trunc:
  case UnOp::Not:
  case UnOp::BitNot:
    return true;
  default:
    return false; // libm calls stay scalar
  }
}

/// Rewrites one innermost loop body for vectors of `Lanes` lanes.
class LoopVectorizer {
public:
  LoopVectorizer(const Var &v, int lanes) : V(v), Lanes(lanes) {}

  /// Whether `e` can be computed for Lanes consecutive iterations at once.
  bool canVectorize(const Expr &e) {
    if (!dependsOn(e, V))
      return true;
    if (e->Type != DType::Bool && !vectorType(e->Type))
      return false;
    switch (e->Kind) {
    case ExprKind::Load: {
      auto s = strideOf(e->A, V);
      return s && *s == 1 && vectorType(e->Buf->Type);
    }
    case ExprKind::Unary:
      return vectorUnary(e->Un) && canVectorize(e->A);
    case ExprKind::Binary:
      if (e->Bin == BinOp::Rem && isFloat(e->A->Type))
        return false;
      if (e->Bin == BinOp::Pow)
        return false;
      return canVectorize(e->A) && canVectorize(e->B);
    case ExprKind::Select:
      return canVectorize(e->A) && canVectorize(e->B) && canVectorize(e->C);
    case ExprKind::Cast:
      return vectorType(e->A->Type) && canVectorize(e->A);
    default:
      return false; // the loop variable as a value, ...
    }
  }

  /// The vector form of `e` for the iterations starting at `base`.
  Expr vec(const Expr &e, const Expr &base) {
    if (!dependsOn(e, V))
      return e;
    switch (e->Kind) {
    case ExprKind::Load:
      return vload(e->Buf, substitute(e->A, V, base), Lanes);
    case ExprKind::Unary:
      return unary(e->Un, vec(e->A, base));
    case ExprKind::Binary:
      return binary(e->Bin, vec(e->A, base), vec(e->B, base));
    case ExprKind::Select:
      return select(vec(e->A, base), vec(e->B, base), vec(e->C, base));
    case ExprKind::Cast:
      return cast(e->Type, vec(e->A, base));
    default:
      MLCC_CHECK(false, "cannot vectorize " << print(e));
    }
    return e;
  }

private:
  const Var &V;
  int Lanes;
};

/// The stores of a straight-line loop body, or nothing.
bool collectStores(const Stmt &s, std::vector<Stmt> &out) {
  if (s->Kind == StmtKind::Store) {
    out.push_back(s);
    return true;
  }
  if (s->Kind != StmtKind::Block)
    return false;
  for (auto &c : s->Body)
    if (!collectStores(c, out))
      return false;
  return true;
}

class Vectorizer : public Mutator {
public:
  explicit Vectorizer(const ScheduleTarget &t) : T(t) {}
  using Mutator::mutate;

  Stmt mutate(const Stmt &s) override {
    if (!s || s->Kind != StmtKind::For)
      return Mutator::mutate(s);
    Stmt inner = mutate(s->Inner);
    Stmt loop = inner == s->Inner ? s
                                  : forLoop(s->LoopVar, s->Begin, s->End, inner, s->Loop);
    Stmt v = tryVectorize(*loop);
    return v ? v : loop;
  }

private:
  Stmt tryVectorize(const StmtNode &s) {
    if (s.Loop != LoopKind::Serial && s.Loop != LoopKind::Vectorized)
      return nullptr;
    if (!s.Begin->isConst() || !s.End->isConst())
      return nullptr;
    std::vector<Stmt> stores;
    if (!collectStores(s.Inner, stores) || stores.empty())
      return nullptr;
    int64_t begin = s.Begin->IntValue, n = s.End->IntValue - begin;
    // The widest element decides the lanes.
    size_t widest = 1; // bytes
    for (auto &st : stores) {
      widest = std::max<size_t>(widest, dtypeSize(st->Buf->Type));
      visitExprs(st->Value, [&](const Expr &e) {
        if (e->Kind == ExprKind::Load || e->Kind == ExprKind::Cast)
          widest = std::max<size_t>(widest, dtypeSize(e->Type));
      });
    }
    int lanes = T.VectorBytes / (int)widest;
    if (lanes < 2 || n < lanes)
      return nullptr;
    LoopVectorizer lv(s.LoopVar, lanes);
    for (auto &st : stores) {
      auto stride = strideOf(st->Index, s.LoopVar);
      if (!stride || *stride != 1 || !vectorType(st->Buf->Type) ||
          !lv.canVectorize(st->Value))
        return nullptr;
      // A buffer this body stores to may only be read at the stored index
      // (lane i must not read what lane j writes).
      bool hazard = false;
      for (auto &other : stores) {
        visitExprs(other->Value, [&](const Expr &e) {
          if (e->Kind == ExprKind::Load && e->Buf == st->Buf &&
              print(e->A) != print(st->Index))
            hazard = true;
        });
        if (other != st && other->Buf == st->Buf)
          hazard = true;
      }
      if (hazard)
        return nullptr;
    }
    int64_t main = n / lanes * lanes;
    Var vo = newVar(s.LoopVar->Name + "v");
    Expr base = indexConst(begin) + varRef(vo) * lanes;
    std::vector<Stmt> vecBody;
    for (auto &st : stores) {
      Expr value = lv.vec(st->Value, base);
      if (value->Lanes == 1) // the same value in every lane
        value = broadcast(value, lanes);
      vecBody.push_back(store(st->Buf, substitute(st->Index, s.LoopVar, base), value));
    }
    std::vector<Stmt> out;
    out.push_back(forLoop(vo, indexConst(0), indexConst(main / lanes),
                          block(std::move(vecBody))));
    if (main < n)
      out.push_back(forLoop(s.LoopVar, indexConst(begin + main), s.End, s.Inner));
    return block(std::move(out));
  }

  const ScheduleTarget &T;
};

} // namespace

Kernel vectorize(const Kernel &k, const ScheduleTarget &t) {
  if (t.VectorBytes <= 0)
    return k;
  Vectorizer m(t);
  Kernel r = k;
  r.Body = m.mutate(k.Body);
  if (r.Body != k.Body)
    r.finalize();
  return r;
}

void scheduleProgram(Program &p, const ScheduleTarget &t) {
  for (auto &k : p.Kernels)
    k = vectorize(k, t);
}

} // namespace mlcc::kir
