//===- Affine.cpp - Index expressions as affine sums ------------------------===//
//
// The analyses the schedules share (declared in Schedule.h): a loop
// variable's coefficient in an index (strideOf), the constant difference of
// two indices, the groups of strided vector accesses, and whether the
// iterations of a loop are independent. Indices are compared structurally
// (Equality.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Equality.h"
#include "compiler/kernel/Mutator.h"

#include <algorithm>
#include <functional>
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

} // namespace mlcc::kir
