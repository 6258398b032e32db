//===- StridedAccess.cpp - Strided and transposed vector memory -----------===//
//
// KernelEmitter's vector loads and stores whose lanes are not adjacent in
// memory. Lanes up to kir::kMaxStride apart are loaded as a few whole
// vectors and shuffled; farther apart they are gathered, unless the loads
// of a block form a transposed group (lanes Stride apart at base + 0, ...,
// base + G - 1), which is loaded as runs of consecutive elements and
// transposed by shuffles. Strided stores of a block likewise become store
// groups, interleaved or transposed, else scatters.
//
//===----------------------------------------------------------------------===//
#include "targets/llvm/EmitterState.h"

#include "compiler/kernel/Mutator.h"
#include "compiler/kernel/Schedule.h"

#include <llvm/Support/MathExtras.h>

#include <set>
#include <tuple>

namespace mlcc::llvmgen {

using namespace kir;
using llvm::Value;

/// The store groups among the statements of `body`: strided stores of
/// one buffer, stride and width whose indices form a group, of a buffer
/// that nothing else in the body reads or writes (each value is then
/// computed where its store stands, and the group stored after the last).
/// Strided stores outside a group are scattered.
std::vector<KernelEmitter::StoreGroup> KernelEmitter::storeGroups(const std::vector<Stmt> &body) {
  // By buffer, stride and width, in the order of first appearance.
  using Key = std::tuple<const BufferNode *, int64_t, int>;
  std::vector<std::pair<Key, std::vector<const StmtNode *>>> wide;
  std::set<const BufferNode *> touched; // read, or written other than strided
  for (const Stmt &st : body) {
    kir::visitExprs(st, [&](const Expr &e) {
      if (e->Kind == ExprKind::Load)
        touched.insert(e->Buf.get());
    });
    if (st->Kind == StmtKind::Store && st->Stride > 1 && st->Buf->Type != DType::Bool) {
      Key key{st->Buf.get(), st->Stride, st->Value->Lanes};
      auto it = std::find_if(wide.begin(), wide.end(), [&](auto &w) { return w.first == key; });
      if (it == wide.end())
        it = wide.insert(wide.end(), {key, {}});
      it->second.push_back(st.get());
    } else
      kir::visitStmts(st, [&](const Stmt &x) {
        if (x->Kind == StmtKind::Store)
          touched.insert(x->Buf.get());
      });
  }
  std::vector<StoreGroup> groups;
  for (auto &[key, stores] : wide) {
    if (touched.count(std::get<0>(key)))
      continue;
    std::vector<Expr> indices;
    for (const StmtNode *st : stores)
      indices.push_back(st->Index);
    for (const std::vector<size_t> &members : kir::strideGroups(indices, std::get<1>(key))) {
      if (members.size() < 2)
        continue; // scattered
      StoreGroup g;
      for (size_t i : members)
        g.Members.push_back(stores[i]);
      g.Values.resize(members.size());
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

/// Stores a group: the G vectors of L lanes become L runs of G
/// consecutive elements, one at each lane's index; interleaved (G ==
/// Stride), the runs are one contiguous vector, one shuffle of all G.
void KernelEmitter::storeGroup(const StoreGroup &g) {
  const StmtNode &at = *g.Members[0];
  const unsigned G = (unsigned)g.Members.size(), L = (unsigned)at.Value->Lanes;
  const llvm::Align align(dtypeSize(at.Buf->Type));
  Value *base = expr(at.Index);
  if (G == (unsigned)at.Stride) {
    llvm::SmallVector<int, 128> mask; // element l G + k is lane l of row k
    for (unsigned l = 0; l < L; ++l)
      for (unsigned k = 0; k < G; ++k)
        mask.push_back((int)(k * L + l));
    B.CreateAlignedStore(B.CreateShuffleVector(concatenate(g.Values), mask),
                         address(at.Buf.get(), base), align);
    return;
  }
  std::vector<Value *> runs = rowsToRuns(g.Values, L);
  for (unsigned l = 0; l < L; ++l) {
    Value *index = B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), l * at.Stride));
    B.CreateAlignedStore(runs[l], address(at.Buf.get(), index), align);
  }
}

/// Loads the transposed groups of vector loads in the values of the
/// statements of `body` (lanes Stride > kMaxStride apart, indices base +
/// 0, ..., base + G - 1): L runs of G consecutive elements, transposed
/// into the G vectors, which the loads' expressions then stand for. The
/// body is straight-line and reads no buffer it writes at another index
/// (the vectorizer's rule), so reading ahead is safe. Returns the loads.
std::vector<const ExprNode *> KernelEmitter::loadTransposedGroups(const std::vector<Stmt> &body) {
  std::vector<const ExprNode *> ahead;
  // By buffer, stride and width, in the order of first appearance (the
  // code does not depend on where buffers happen to be allocated).
  using Key = std::tuple<const BufferNode *, int64_t, int>;
  std::vector<std::pair<Key, std::vector<const ExprNode *>>> wide;
  std::set<const ExprNode *> seen;
  for (const Stmt &st : body) {
    if (st->Kind != StmtKind::Store)
      continue;
    kir::visitExprs(st->Value, [&](const Expr &e) {
      if (e->Kind != ExprKind::Load || e->Lanes < 2 || e->Stride <= kir::kMaxStride ||
          e->Buf->Type == DType::Bool || Transposed.count(e.get()) || !seen.insert(e.get()).second)
        return;
      Key key{e->Buf.get(), e->Stride, e->Lanes};
      auto it = std::find_if(wide.begin(), wide.end(), [&](auto &w) { return w.first == key; });
      if (it == wide.end())
        it = wide.insert(wide.end(), {key, {}});
      it->second.push_back(e.get());
    });
  }
  for (auto &[key, loads] : wide) {
    // Loads of one index may repeat: the groups are of distinct indices.
    std::vector<Expr> indices;
    std::vector<std::vector<const ExprNode *>> same;
    for (const ExprNode *e : loads) {
      auto it = std::find_if(indices.begin(), indices.end(),
                             [&](const Expr &i) { return kir::constantDifference(i, e->A) == 0; });
      if (it == indices.end()) {
        indices.push_back(e->A);
        same.push_back({e});
      } else {
        same[(size_t)(it - indices.begin())].push_back(e);
      }
    }
    for (const std::vector<size_t> &members : kir::strideGroups(indices, std::get<1>(key))) {
      if (members.size() < 2)
        continue; // gathered
      const ExprNode &first = *same[members[0]][0];
      const unsigned G = (unsigned)members.size(), L = (unsigned)first.Lanes;
      Value *base = expr(first.A);
      auto *run = llvm::FixedVectorType::get(ME.memoryType(first.Buf->Type), G);
      std::vector<Value *> runs;
      for (unsigned l = 0; l < L; ++l) {
        Value *index = B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), l * first.Stride));
        runs.push_back(B.CreateAlignedLoad(run, address(first.Buf.get(), index),
                                           llvm::Align(dtypeSize(first.Buf->Type))));
      }
      std::vector<Value *> rows = runsToRows(runs, G);
      for (size_t k = 0; k < G; ++k)
        for (const ExprNode *e : same[members[k]]) {
          Transposed[e] = rows[k];
          ahead.push_back(e);
        }
    }
  }
  return ahead;
}

/// The P x L matrix of `rows` (P vectors of L lanes, powers of two, P <=
/// L) transposed by P log2 P two-vector shuffles: vector j of the result
/// holds lanes j L/P, ..., (j + 1) L/P - 1, each as its P elements in
/// row order. (The two halves of the rows are transposed, then each
/// pair of their vectors, which cover the same lanes, is interleaved
/// group by group into two.)
std::vector<Value *> KernelEmitter::transposeRows(const std::vector<Value *> &rows, unsigned L) {
  const unsigned P = (unsigned)rows.size();
  if (P == 1)
    return rows;
  std::vector<Value *> left = transposeRows({rows.begin(), rows.begin() + P / 2}, L),
                       right = transposeRows({rows.begin() + P / 2, rows.end()}, L);
  const unsigned m = 2 * L / P, h = P / 2; // lanes per vector, group size
  std::vector<Value *> out;
  for (size_t j = 0; j < left.size(); ++j)
    for (unsigned half = 0; half < 2; ++half) {
      llvm::SmallVector<int, 64> mask;
      for (unsigned t = half * m / 2; t < (half + 1) * m / 2; ++t)
        for (unsigned side = 0; side < 2; ++side)
          for (unsigned e = 0; e < h; ++e)
            mask.push_back((int)(side * L + t * h + e));
      out.push_back(B.CreateShuffleVector(left[j], right[j], mask));
    }
  return out;
}

/// The inverse of transposeRows: from P vectors of lanes' groups back to
/// the P rows.
std::vector<Value *> KernelEmitter::untransposeRows(const std::vector<Value *> &groups,
                                                    unsigned L) {
  const unsigned P = (unsigned)groups.size();
  if (P == 1)
    return groups;
  const unsigned m = 2 * L / P, h = P / 2;
  std::vector<Value *> left, right;
  for (size_t j = 0; j < P; j += 2)
    for (unsigned side = 0; side < 2; ++side) {
      llvm::SmallVector<int, 64> mask;
      for (unsigned t = 0; t < m; ++t)
        for (unsigned e = 0; e < h; ++e)
          mask.push_back((int)((t < m / 2 ? 0 : L) + (t % (m / 2)) * P + side * h + e));
      (side ? right : left).push_back(B.CreateShuffleVector(groups[j], groups[j + 1], mask));
    }
  std::vector<Value *> rows = untransposeRows(left, L), rest = untransposeRows(right, L);
  rows.insert(rows.end(), rest.begin(), rest.end());
  return rows;
}

/// The runs of a transposed group: from G vectors of L lanes, L vectors
/// of G elements (lane l's elements in row order).
std::vector<Value *> KernelEmitter::rowsToRuns(std::vector<Value *> rows, unsigned L) {
  const unsigned G = (unsigned)rows.size(), P = (unsigned)llvm::PowerOf2Ceil(G);
  if (llvm::isPowerOf2_32(L) && P <= L) {
    rows.resize(P, llvm::PoisonValue::get(rows[0]->getType()));
    std::vector<Value *> groups = transposeRows(rows, L), runs;
    for (unsigned l = 0; l < L; ++l) {
      llvm::SmallVector<int, 16> mask;
      for (unsigned k = 0; k < G; ++k)
        mask.push_back((int)(l % (L / P) * P + k));
      runs.push_back(B.CreateShuffleVector(groups[l / (L / P)], mask));
    }
    return runs;
  }
  return transposeConcatenated(rows);
}

/// The inverse of rowsToRuns: from L runs of G elements, the G rows.
std::vector<Value *> KernelEmitter::runsToRows(const std::vector<Value *> &runs, unsigned G) {
  const unsigned L = (unsigned)runs.size(), P = (unsigned)llvm::PowerOf2Ceil(G);
  if (llvm::isPowerOf2_32(L) && P <= L) {
    llvm::SmallVector<int, 16> mask;
    for (unsigned k = 0; k < P; ++k)
      mask.push_back(k < G ? (int)k : -1);
    std::vector<Value *> groups;
    for (unsigned j = 0; j < P; ++j) {
      std::vector<Value *> part;
      for (unsigned l = j * (L / P); l < (j + 1) * (L / P); ++l)
        part.push_back(P == G ? runs[l] : B.CreateShuffleVector(runs[l], mask));
      groups.push_back(concatenate(part));
    }
    std::vector<Value *> rows = untransposeRows(groups, L);
    rows.resize(G);
    return rows;
  }
  return transposeConcatenated(runs);
}

/// The n x m matrix of `vs` (n vectors of m elements) transposed: m
/// vectors of n elements, each one shuffle of all of them concatenated.
std::vector<Value *> KernelEmitter::transposeConcatenated(const std::vector<Value *> &vs) {
  const unsigned n = (unsigned)vs.size(),
                 m = llvm::cast<llvm::FixedVectorType>(vs[0]->getType())->getNumElements();
  Value *cat = concatenate(vs); // element i m + j is element j of vs[i]
  std::vector<Value *> out;
  for (unsigned j = 0; j < m; ++j) {
    llvm::SmallVector<int, 64> mask;
    for (unsigned i = 0; i < n; ++i)
      mask.push_back((int)(i * m + j));
    out.push_back(B.CreateShuffleVector(cat, mask));
  }
  return out;
}

/// A vector load of Lanes elements Stride apart, element by element.
Value *KernelEmitter::gather(const ExprNode &e) {
  auto *vt = llvm::FixedVectorType::get(ME.memoryType(e.Buf->Type), (unsigned)e.Lanes);
  Value *base = expr(e.A);
  llvm::SmallVector<llvm::Constant *, 64> offs;
  for (int64_t l = 0; l < e.Lanes; ++l)
    offs.push_back(llvm::ConstantInt::get(base->getType(), (uint64_t)(l * e.Stride)));
  Value *idx = B.CreateAdd(B.CreateVectorSplat((unsigned)e.Lanes, base),
                           llvm::ConstantVector::get(offs));
  return B.CreateMaskedGather(vt, address(e.Buf.get(), idx),
                              llvm::Align(dtypeSize(e.Buf->Type)));
}

/// A vector load of Lanes elements Stride apart: Stride full vectors
/// that cover the span from the first to the last lane's element (the
/// last one ends exactly there, so nothing past the buffer is read),
/// concatenated and shuffled, which targets do with a few permutes.
Value *KernelEmitter::stridedLoad(const ExprNode &e) {
  const int64_t L = e.Lanes, S = e.Stride;
  auto *vt = llvm::FixedVectorType::get(ME.memoryType(e.Buf->Type), (unsigned)L);
  Value *base = expr(e.A);
  const int64_t lastOffset = (L - 1) * (S - 1);
  llvm::SmallVector<Value *, 4> parts;
  for (int64_t j = 0; j < S; ++j) {
    int64_t off = j + 1 < S ? j * L : lastOffset;
    parts.push_back(B.CreateAlignedLoad(
        vt, address(e.Buf.get(), B.CreateAdd(base, llvm::ConstantInt::get(base->getType(), off))),
        llvm::Align(dtypeSize(e.Buf->Type))));
  }
  Value *cat = concatenate({parts.begin(), parts.end()});
  // Lane l is element l*S: in part l*S/L, or in the last part.
  llvm::SmallVector<int, 64> mask;
  for (int64_t l = 0; l < L; ++l) {
    int64_t el = l * S;
    mask.push_back((int)(el < (S - 1) * L ? el : (S - 1) * L + (el - lastOffset)));
  }
  return B.CreateShuffleVector(cat, mask);
}

/// The vectors `parts` end to end, concatenated pairwise (both halves of
/// a shuffle have one type: a shorter second half is padded with poison
/// lanes).
Value *KernelEmitter::concatenate(std::vector<Value *> parts) {
  while (parts.size() > 1) {
    std::vector<Value *> next;
    for (size_t i = 0; i < parts.size(); i += 2) {
      Value *a = parts[i];
      if (i + 1 == parts.size()) {
        next.push_back(a);
        continue;
      }
      unsigned n = llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements();
      Value *b = parts[i + 1];
      unsigned m = llvm::cast<llvm::FixedVectorType>(b->getType())->getNumElements();
      if (m < n) {
        llvm::SmallVector<int, 64> pad;
        for (unsigned k = 0; k < n; ++k)
          pad.push_back(k < m ? (int)k : -1);
        b = B.CreateShuffleVector(b, pad);
      }
      llvm::SmallVector<int, 128> cat;
      for (unsigned k = 0; k < n + m; ++k)
        cat.push_back((int)k); // b's element k - n is operand index k
      next.push_back(B.CreateShuffleVector(a, b, cat));
    }
    parts = std::move(next);
  }
  return parts[0];
}

} // namespace mlcc::llvmgen
