//===- Vectorize.cpp - Innermost loops as vector loops ----------------------===//
//
// vectorize: an innermost loop whose iterations are independent and whose
// accesses are contiguous (or a few elements apart: strided loads,
// interleaved stores) becomes a loop over vectors of the target's width plus
// a scalar tail loop; exp and erf expand into vector arithmetic
// (MathExpansions.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Equality.h"
#include "compiler/kernel/MathExpansions.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace mlcc::kir {

namespace {

/// Scalar types the emitters vectorize. The 16-bit floats are loaded,
/// stored and converted to and from f32 (their arithmetic is in f32) as
/// vectors too: one instruction where the target converts, integer
/// operations lane by lane elsewhere. The float8 types stay scalar.
bool vectorType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::Index || t == DType::F16 ||
         t == DType::BF16 || (isInteger(t) && t != DType::Bool);
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
        return expand(e->Un, a, let);
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
      indices.push_back(index.value());
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

/// Whether `e` loads from a buffer (a value known only at run time).
bool readsMemory(const Expr &e) {
  bool loads = false;
  visitExprs(e, [&](const Expr &x) { loads |= x->Kind == ExprKind::Load; });
  return loads;
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
    // Constant bounds, or bounds read at run time (a dimension known only
    // then): a vector loop over the whole vectors the run's trip count
    // holds, and the remainder. Bounds computed from outer loops (clipped
    // windows) stay scalar.
    const bool fixed = s.Begin->isConst() && s.End->isConst();
    if (!fixed && !(readsMemory(s.Begin) || readsMemory(s.End)))
      return nullptr;
    std::vector<Stmt> stores;
    if (!collectStores(s.Inner, stores) || stores.empty())
      return nullptr;
    // A body that stores vectors already is not a scalar loop: its lanes
    // would be taken for elements (a loop zeroing a buffer a vector at a
    // time became a strided store of one element per vector: schedule
    // search's blocked tiles of 4 lanes on AArch64 left stack garbage in
    // their partial sums).
    for (auto &st : stores)
      if (st->Value->Lanes > 1)
        return nullptr;
    // The trip count: n when fixed; else only known at run time.
    const int64_t begin = fixed ? s.Begin->IntValue : 0;
    const int64_t n = fixed ? s.End->IntValue - begin : INT64_MAX;
    // The widest element decides the lanes: of the values computed lane by
    // lane (those that depend on the loop variable), not of the scalars
    // that stay scalar (a load's index, such as a block's first row read
    // from an index local, or a loop-invariant operand).
    size_t widest = 1; // bytes
    std::function<void(const Expr &)> widen = [&](const Expr &e) {
      if (!e || !dependsOn(e, s.LoopVar))
        return;
      if (e->Kind == ExprKind::Load || e->Kind == ExprKind::Cast)
        widest = std::max<size_t>(widest, dtypeSize(e->Type));
      if (e->Kind == ExprKind::Load)
        return; // its index is the vector's first element, a scalar
      widen(e->A);
      widen(e->B);
      widen(e->C);
    };
    for (auto &st : stores) {
      widest = std::max<size_t>(widest, dtypeSize(st->Buf->Type));
      widen(st->Value);
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
                    (*d % *stride == 0 && (!fixed || std::abs(*d) < n * *stride));
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
    const int64_t main = fixed ? n / lanes * lanes : 0;
    // The whole vectors of the run (fixed: main / lanes).
    Expr vectors = fixed ? indexConst(main / lanes) : (s.End - s.Begin) / indexConst(lanes);
    Var vo = newVar(s.LoopVar->Name + "v");
    Expr base = (fixed ? indexConst(begin) : s.Begin) + varRef(vo) * lanes;
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
    out.push_back(forLoop(vo, indexConst(0), vectors, body));
    out.insert(out.end(), combine.begin(), combine.end());
    // A run-time count may give no whole vector (a short row of a bounded
    // length): then nothing to set up or combine.
    if (!fixed && !partials.empty())
      out = {ifThen(gt(vectors, indexConst(0)), block(std::move(out)))};
    if (!fixed || main < n) {
      Expr restBegin = fixed ? indexConst(begin + main) : s.Begin + vectors * lanes;
      Stmt rest = forLoop(s.LoopVar, restBegin, s.End, s.Inner);
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

Kernel vectorize(const Kernel &k, const TargetDesc &t) {
  if (t.VectorBytes <= 0)
    return k;
  Vectorizer m(t);
  return rewrite(k, m);
}

} // namespace mlcc::kir
