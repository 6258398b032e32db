#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Cost.h"
#include "compiler/kernel/Equality.h"
#include "compiler/kernel/MathExpansions.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mlcc::kir {

namespace {

/// A sum of Index expressions as its terms (structurally equal ones merged)
/// with their integer coefficients, and its constant part: sums,
/// differences and products by constants are distributed.
void sumTerms(const Expr &e, int64_t k, std::map<ExprKey, int64_t> &terms, int64_t &c) {
  if (e->isConst() && e->Type == DType::Index) {
    c += k * e->IntValue;
    return;
  }
  if (e->Kind == ExprKind::Binary && e->Type == DType::Index) {
    if (e->Bin == BinOp::Add || e->Bin == BinOp::Sub) {
      sumTerms(e->A, k, terms, c);
      sumTerms(e->B, e->Bin == BinOp::Add ? k : -k, terms, c);
      return;
    }
    if (e->Bin == BinOp::Mul && (e->A->isConst() || e->B->isConst())) {
      const Expr &f = e->A->isConst() ? e->A : e->B, &x = e->A->isConst() ? e->B : e->A;
      sumTerms(x, k * f->IntValue, terms, c);
      return;
    }
  }
  ExprKey term(e);
  if ((terms[term] += k) == 0)
    terms.erase(term);
}

} // namespace

std::optional<int64_t> constantDifference(const Expr &a, const Expr &b) {
  std::map<ExprKey, int64_t> ta, tb;
  int64_t ca = 0, cb = 0;
  sumTerms(a, 1, ta, ca);
  sumTerms(b, 1, tb, cb);
  if (ta != tb)
    return std::nullopt;
  return cb - ca;
}

std::vector<std::vector<size_t>> strideGroups(const std::vector<Expr> &indices, int64_t stride) {
  // Classes of indices that differ by constants, each with its offsets
  // from its first member.
  std::vector<std::vector<std::pair<int64_t, size_t>>> classes;
  for (size_t i = 0; i < indices.size(); ++i) {
    bool placed = false;
    for (auto &c : classes)
      if (auto d = constantDifference(indices[c[0].second], indices[i])) {
        c.push_back({*d, i});
        placed = true;
        break;
      }
    if (!placed)
      classes.push_back({{0, i}});
  }
  // Each class in order of offset, cut into runs of consecutive offsets of
  // at most `stride` elements.
  std::vector<std::vector<size_t>> groups;
  for (auto &c : classes) {
    std::stable_sort(c.begin(), c.end());
    int64_t last = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      if (k == 0 || c[k].first != last + 1 || (int64_t)groups.back().size() == stride)
        groups.emplace_back();
      groups.back().push_back(c[k].second);
      last = c[k].first;
    }
  }
  return groups;
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
    return load(e->Buf, e->A + lane * e->Stride);
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

  /// Statements that must run before the store using the last vec() result
  /// (temporaries of math expansions), and the temporaries' buffers.
  std::vector<Stmt> Pre;
  std::vector<Buffer> Temps;

  /// Whether `e` can be computed for Lanes consecutive iterations at once.
  bool canVectorize(const Expr &e) {
    if (!dependsOn(e, V))
      return true;
    if (e->Type != DType::Bool && !vectorType(e->Type))
      return false;
    switch (e->Kind) {
    case ExprKind::Load: {
      // Consecutive, a small constant stride (a strided window), or a
      // larger one when the body's loads form transposed groups (checked
      // by the caller, see wideLoadsGrouped).
      auto s = strideOf(e->A, V);
      return s && *s >= 1 && vectorType(e->Buf->Type);
    }
    case ExprKind::Unary:
      return (vectorUnary(e->Un) || expandable(e->Un, e->Type)) && canVectorize(e->A);
    case ExprKind::Binary:
      if (e->Bin == BinOp::Rem && isFloat(e->A->Type))
        return false;
      if (e->Bin == BinOp::Pow)
        return false;
      return canVectorize(e->A) && canVectorize(e->B);
    case ExprKind::Select:
      return canVectorize(e->A) && canVectorize(e->B) && canVectorize(e->C);
    case ExprKind::Cast:
    case ExprKind::BitCast:
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
      return vload(e->Buf, substitute(e->A, V, base), Lanes, *strideOf(e->A, V));
    case ExprKind::Unary:
      if (expandable(e->Un, e->Type)) {
        Let let = [&](const Expr &v) {
          if (v->Kind == ExprKind::Load || v->isConst())
            return v;
          auto t = std::make_shared<BufferNode>(
              BufferNode{"t" + std::to_string(Temps.size()), v->Type, v->Lanes, BufferKind::Local});
          Temps.push_back(t);
          Pre.push_back(store(t, indexConst(0), v));
          return vload(t, indexConst(0), v->Lanes);
        };
        Expr a = vec(e->A, base);
        return e->Un == UnOp::Erf ? erfF32(a, let) : expF32(a, let);
      }
      return unary(e->Un, vec(e->A, base));
    case ExprKind::Binary:
      return binary(e->Bin, vec(e->A, base), vec(e->B, base));
    case ExprKind::Select:
      return select(vec(e->A, base), vec(e->B, base), vec(e->C, base));
    case ExprKind::Cast:
      return cast(e->Type, vec(e->A, base));
    case ExprKind::BitCast:
      return bitcast(e->Type, vec(e->A, base));
    default:
      MLCC_CHECK(false, "cannot vectorize " << print(e));
    }
    return e;
  }

private:
  const Var &V;
  int Lanes;
};

/// Whether the loads in `values` whose stride along `v` exceeds kMaxStride
/// are all in groups of two or more (per buffer and stride, their distinct
/// indices in strideGroups).
bool wideLoadsGrouped(const std::vector<Expr> &values, const Var &v) {
  std::map<std::pair<const BufferNode *, int64_t>, std::set<ExprKey>> wide;
  for (const Expr &value : values)
    visitExprs(value, [&](const Expr &e) {
      if (e->Kind != ExprKind::Load)
        return;
      auto s = strideOf(e->A, v);
      if (s && *s > kMaxStride)
        wide[{e->Buf.get(), *s}].emplace(e->A);
    });
  for (auto &[key, distinct] : wide) {
    std::vector<Expr> indices;
    for (const ExprKey &index : distinct)
      indices.push_back(index.expr());
    for (const std::vector<size_t> &g : strideGroups(indices, key.second))
      if (g.size() < 2)
        return false;
  }
  return true;
}

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
  explicit Vectorizer(const TargetDesc &t) : T(t) {}
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
  /// A reduction into a scalar local: acc[I] = op(acc[I], f) with I
  /// independent of the loop, op Add, Max or Min. Returns the other operand f.
  static Expr reductionOperand(const Stmt &st, const Var &v) {
    if (st->Buf->Kind != BufferKind::Local || dependsOn(st->Index, v))
      return nullptr;
    const Expr &e = st->Value;
    if (e->Kind != ExprKind::Binary ||
        (e->Bin != BinOp::Add && e->Bin != BinOp::Max && e->Bin != BinOp::Min))
      return nullptr;
    auto isAcc = [&](const Expr &x) {
      return x->Kind == ExprKind::Load && x->Buf == st->Buf && structuralEqual(x->A, st->Index);
    };
    Expr f = isAcc(e->A) ? e->B : isAcc(e->B) ? e->A : nullptr;
    if (!f)
      return nullptr;
    bool readsAcc = false;
    visitExprs(f, [&](const Expr &x) { readsAcc |= x->Kind == ExprKind::Load && x->Buf == st->Buf; });
    return readsAcc ? nullptr : f;
  }

  /// The identity of a reduction: 0 for Add, -inf/+inf (or the type's
  /// extreme) for Max/Min.
  static Expr identity(BinOp op, DType t) {
    if (op == BinOp::Add)
      return constant(t, 0);
    bool max = op == BinOp::Max;
    if (isFloat(t))
      return constant(t, max ? -INFINITY : INFINITY);
    return max ? lowestValue(t) : highestValue(t);
  }

  /// The vector form of loop `s`, with at most `maxLanes` lanes when that
  /// is not 0; the remainder is vectorized again with narrower vectors.
  Stmt tryVectorize(const StmtNode &s, int maxLanes = 0) {
    if (s.Loop != LoopKind::Serial)
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
    // The target's full width, or narrower vectors for a short loop.
    int lanes = T.VectorBytes / (int)widest;
    if (maxLanes > 0)
      lanes = std::min(lanes, maxLanes);
    while (lanes > 4 && n < lanes)
      lanes /= 2;
    if (lanes < 2 || n < lanes)
      return nullptr;
    LoopVectorizer lv(s.LoopVar, lanes);
    // Each store is elementwise (contiguous in the loop) or a reduction into
    // a scalar local (its lanes are combined after the loop; float sums are
    // reassociated).
    std::vector<Expr> reduced(stores.size());
    std::vector<int64_t> strides(stores.size(), 1);
    for (size_t si = 0; si < stores.size(); ++si) {
      const Stmt &st = stores[si];
      if (!vectorType(st->Buf->Type))
        return nullptr;
      auto stride = strideOf(st->Index, s.LoopVar);
      strides[si] = stride.value_or(1);
      reduced[si] = reductionOperand(st, s.LoopVar);
      if (reduced[si]) {
        if (!lv.canVectorize(reduced[si]))
          return nullptr;
      } else if (!stride || *stride < 1 || !lv.canVectorize(st->Value)) {
        return nullptr;
      } else if (*stride > kMaxStride) {
        // Only as one of a group of stores (see strideGroups).
        std::vector<Expr> indices = {st->Index};
        for (auto &other : stores)
          if (other != st && other->Buf == st->Buf && strideOf(other->Index, s.LoopVar) == stride)
            indices.push_back(other->Index);
        for (const std::vector<size_t> &g : strideGroups(indices, *stride))
          if (g.size() < 2 && g[0] == 0)
            return nullptr;
      }
      // A buffer this body stores to may only be read at the stored index
      // (lane i must not read what lane j writes), and only by its own
      // store when it is a reduction. Several stores to one buffer have the
      // same stride S and offsets distinct modulo S (interleaved) or at
      // least the loop's whole span apart (disjoint).
      bool hazard = false;
      for (auto &other : stores) {
        visitExprs(other->Value, [&](const Expr &e) {
          if (e->Kind == ExprKind::Load && e->Buf == st->Buf &&
              (!structuralEqual(e->A, st->Index) || (reduced[si] && other != st)))
            hazard = true;
        });
        if (other != st && other->Buf == st->Buf) {
          auto d = constantDifference(st->Index, other->Index);
          hazard |= reduced[si] || !d || strideOf(other->Index, s.LoopVar) != stride ||
                    (*d % *stride == 0 && std::abs(*d) < n * *stride);
        }
      }
      if (hazard)
        return nullptr;
    }
    std::vector<Expr> values;
    for (size_t si = 0; si < stores.size(); ++si)
      values.push_back(reduced[si] ? reduced[si] : stores[si]->Value);
    if (!wideLoadsGrouped(values, s.LoopVar))
      return nullptr;
    int64_t main = n / lanes * lanes;
    Var vo = newVar(s.LoopVar->Name + "v");
    Expr base = indexConst(begin) + varRef(vo) * lanes;
    std::vector<Stmt> init, vecBody, combine;
    std::vector<Buffer> partials;
    for (size_t si = 0; si < stores.size(); ++si) {
      const Stmt &st = stores[si];
      if (reduced[si]) {
        BinOp op = st->Value->Bin;
        DType t = st->Buf->Type;
        auto acc = std::make_shared<BufferNode>(
            BufferNode{st->Buf->Name + "_lanes", t, lanes, BufferKind::Local});
        partials.push_back(acc);
        init.push_back(store(acc, indexConst(0), broadcast(identity(op, t), lanes)));
        Expr f = lv.vec(reduced[si], base);
        vecBody.insert(vecBody.end(), lv.Pre.begin(), lv.Pre.end());
        lv.Pre.clear();
        vecBody.push_back(store(acc, indexConst(0),
                                binary(op, vload(acc, indexConst(0), lanes), f)));
        Var l = newVar("lane");
        combine.push_back(forLoop(l, indexConst(0), indexConst(lanes),
                                  store(st->Buf, st->Index,
                                        binary(op, load(st->Buf, st->Index),
                                               load(acc, varRef(l))))));
        continue;
      }
      Expr value = lv.vec(st->Value, base);
      if (value->Lanes == 1) // the same value in every lane
        value = broadcast(value, lanes);
      vecBody.insert(vecBody.end(), lv.Pre.begin(), lv.Pre.end());
      lv.Pre.clear();
      vecBody.push_back(store(st->Buf, substitute(st->Index, s.LoopVar, base), value, strides[si]));
    }
    // The expansions' temporaries live in one iteration (so that the loop
    // may still become parallel); the reductions' partial sums around it.
    Stmt body = block(std::move(vecBody));
    for (auto &t : lv.Temps)
      body = alloc(t, body);
    std::vector<Stmt> out = init;
    out.push_back(forLoop(vo, indexConst(0), indexConst(main / lanes), body));
    out.insert(out.end(), combine.begin(), combine.end());
    if (main < n) {
      Stmt rest = forLoop(s.LoopVar, indexConst(begin + main), s.End, s.Inner);
      Stmt narrower = tryVectorize(*rest, lanes / 2);
      out.push_back(narrower ? narrower : rest);
    }
    Stmt result = block(std::move(out));
    for (auto &acc : partials)
      result = alloc(acc, result);
    return result;
  }

  const TargetDesc &T;
};

} // namespace

namespace {

/// `k` with its body rewritten by `m` (finalized again when it changed).
Kernel rewrite(const Kernel &k, Mutator &m) {
  Kernel r = k;
  r.Body = m.mutate(k.Body);
  if (r.Body != k.Body)
    r.finalize();
  return r;
}

} // namespace

Kernel vectorize(const Kernel &k, const TargetDesc &t) {
  if (t.VectorBytes <= 0)
    return k;
  Vectorizer m(t);
  return rewrite(k, m);
}

// ---------------------------------------------------------------------------
// collapse
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// parallelize
// ---------------------------------------------------------------------------

namespace {

bool hasParallelLoop(const Stmt &s) {
  bool found = false;
  visitStmts(s, [&](const Stmt &st) {
    found |= st->Kind == StmtKind::For && st->Loop == LoopKind::Parallel;
  });
  return found;
}

} // namespace

/// Each iteration stores only to parameters (no local declared outside
/// it), at an index affine in the loop variable whose step is at least the
/// span the rest of the index covers in one iteration (constant inner
/// loops), and reads no buffer it stores to except at the very index of a
/// store.
bool iterationsIndependent(const StmtNode &s) {
  std::vector<std::pair<const StmtNode *, std::vector<const StmtNode *>>> stores;
  bool ok = true;
  std::vector<const StmtNode *> loops; // the inner loops around a statement
  int dynamicLoops = 0;                // of which have non-constant bounds
  std::set<const StmtNode *> inDynamicLoop; // stores inside such a loop
  std::set<const BufferNode *> locals;
  std::function<void(const Stmt &)> walk = [&](const Stmt &st) {
    if (!ok || !st)
      return;
    switch (st->Kind) {
    case StmtKind::Block:
      for (auto &c : st->Body)
        walk(c);
      return;
    case StmtKind::For: {
      // A loop with bounds that vary (a window clipped to the image) may
      // only hold stores to the iteration's own locals.
      bool dynamic = !st->Begin->isConst() || !st->End->isConst();
      dynamicLoops += dynamic;
      if (!dynamic)
        loops.push_back(st.get());
      walk(st->Inner);
      if (!dynamic)
        loops.pop_back();
      dynamicLoops -= dynamic;
      return;
    }
    case StmtKind::Store:
      stores.push_back({st.get(), loops});
      if (dynamicLoops > 0)
        inDynamicLoop.insert(st.get());
      return;
    case StmtKind::If:
      walk(st->Inner);
      walk(st->Else);
      return;
    case StmtKind::Alloc:
      locals.insert(st->Buf.get());
      walk(st->Inner);
      return;
    case StmtKind::Barrier:
      return;
    }
  };
  walk(s.Inner);
  if (!ok)
    return false;
  std::set<const BufferNode *> written;
  std::set<std::pair<const BufferNode *, ExprKey>> storedAt; // buffer, index
  for (auto &[st, around] : stores) {
    if (locals.count(st->Buf.get()))
      continue; // the iteration's own temporary
    if (st->Buf->Kind != BufferKind::Param || inDynamicLoop.count(st))
      return false;
    auto step = strideOf(st->Index, s.LoopVar);
    if (!step || *step == 0)
      return false;
    // The index is a sum of stride * counter terms: this loop's, the inner
    // loops' and the vector lanes'. Distinct iterations store to disjoint
    // elements when the inner terms together span less than this loop's
    // stride (each iteration a block of its own), or when the whole sum is
    // one-to-one (interleaved: ordered by stride, each stride exceeds the
    // span of the smaller ones).
    int64_t lanes = st->Value->Lanes, span = lanes;
    std::vector<std::pair<int64_t, int64_t>> terms{{1, lanes}}; // stride, extent
    for (const StmtNode *l : around) {
      auto c = strideOf(st->Index, l->LoopVar);
      if (!c)
        return false;
      int64_t n = l->End->IntValue - l->Begin->IntValue;
      span += std::abs(*c) * (n - 1);
      if (*c != 0 && n > 1)
        terms.push_back({std::abs(*c), n});
    }
    if (span > std::abs(*step)) {
      if (!s.Begin->isConst() || !s.End->isConst())
        return false;
      terms.push_back({std::abs(*step), s.End->IntValue - s.Begin->IntValue});
      std::sort(terms.begin(), terms.end());
      int64_t reach = 0; // the largest offset of the smaller terms
      for (auto [c, n] : terms) {
        if (c <= reach)
          return false;
        reach += c * (n - 1);
      }
    }
    written.insert(st->Buf.get());
    storedAt.insert({st->Buf.get(), ExprKey(st->Index)});
  }
  visitExprs(s.Inner, [&](const Expr &e) {
    if (e->Kind == ExprKind::Load && written.count(e->Buf.get()) &&
        !storedAt.count({e->Buf.get(), ExprKey(e->A)}))
      ok = false;
  });
  return ok;
}

namespace {

/// Makes the outermost loops that can be parallel: loops outside any
/// parallel loop and containing none, whose iterations are independent and
/// which do enough work (else their inner loops are tried), split into at
/// most kMaxChunks chunks of consecutive iterations. Serial loops around a
/// parallel one stay serial (their other loops are tried: the copy of a
/// convolution's padded input before its parallel contraction).
class Parallelizer : public Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (!s)
      return s;
    if (s->Kind != StmtKind::For)
      return Mutator::mutate(s);
    if (s->Loop == LoopKind::Parallel)
      return s;
    if (hasParallelLoop(s->Inner) || !s->Begin->isConst() || !s->End->isConst())
      return Mutator::mutate(s);
    int64_t begin = s->Begin->IntValue, n = s->End->IntValue - begin;
    if (s->Loop != LoopKind::Serial || workOf(s) < kMinWork)
      return s; // too little work here, and so in any inner loop
    if (n < 2 || !iterationsIndependent(*s))
      return Mutator::mutate(s);
    int64_t chunk = (n + kMaxChunks - 1) / kMaxChunks, chunks = (n + chunk - 1) / chunk;
    Var c = newVar(s->LoopVar->Name + "c");
    Expr lo = indexConst(begin) + varRef(c) * chunk;
    Expr hi = n % chunk == 0 ? lo + chunk : min(lo + chunk, indexConst(begin + n));
    if (chunk == 1)
      return forLoop(s->LoopVar, s->Begin, s->End, s->Inner, LoopKind::Parallel);
    return forLoop(c, indexConst(0), indexConst(chunks),
                   forLoop(s->LoopVar, lo, hi, s->Inner), LoopKind::Parallel);
  }

  /// Below this many element operations a fork costs more than it saves.
  static constexpr int64_t kMinWork = 1 << 14;
  /// Chunks per loop: enough to balance a few workers.
  static constexpr int64_t kMaxChunks = 32;
};

} // namespace

Kernel parallelize(const Kernel &k) {
  Parallelizer m;
  return rewrite(k, m);
}

void scheduleProgram(Program &p, const TargetDesc &t) {
  for (auto &k : p.Kernels) {
    k = vectorize(collapse(k), t);
    if (t.VectorBytes > 0) // application processors; not microcontrollers
      k = parallelize(k);
  }
}

} // namespace mlcc::kir
