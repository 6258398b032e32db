//===- Selection.cpp - Compress, NonZero, Unique ---------------------------===//
//
// Ops whose output shape depends on input values: the condition of Compress,
// and the whole input of NonZero and Unique, must be compile-time constants
// (the data of Compress stays a run-time value: the kernel copies the
// selected runs).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <numeric>

namespace mlcc::ops {

using namespace kir;

namespace {

// --- Compress -------------------------------------------------------------

struct CompressPlan {
  bool Flat;    ///< no axis: the input is flattened
  int64_t Axis; ///< when !Flat
  std::vector<std::pair<int64_t, int64_t>> Runs; ///< selected [begin, end)
  int64_t Count = 0;
  Shape Out;
};

CompressPlan compressPlan(const ir::Node &n) {
  CompressPlan p;
  const Shape &in = n.inShape(0);
  p.Flat = !n.hasAttr("axis");
  p.Axis = p.Flat ? 0 : normalizeAxis(n, n.attrInt("axis", 0), (int64_t)in.size());
  int64_t len = p.Flat ? numElements(in) : in[(size_t)p.Axis];
  TensorPtr cond = n.constInput(1, "the condition determines the output shape");
  if (cond->rank() != 1)
    n.error() << "condition must be a 1-D tensor";
  int64_t cn = cond->numel();
  for (int64_t i = 0; i < cn; ++i) {
    if (!cond->intAt(i))
      continue;
    if (i >= len)
      n.error() << "condition selects element " << i << " of an axis of extent " << len;
    if (!p.Runs.empty() && p.Runs.back().second == i)
      p.Runs.back().second = i + 1;
    else
      p.Runs.push_back({i, i + 1});
    ++p.Count;
  }
  if (p.Flat) {
    p.Out = {p.Count};
  } else {
    p.Out = in;
    p.Out[(size_t)p.Axis] = p.Count;
  }
  return p;
}

void inferCompress(ir::Node &n) {
  requireDType(n, 1, {DType::Bool});
  CompressPlan p = compressPlan(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerCompress(LowerCtx &c) {
  CompressPlan p = compressPlan(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  int64_t at = 0;
  for (auto [b, e] : p.Runs) {
    if (p.Flat) {
      c.b().loop("i", e - b, [&](Expr i) { y.storeFlat(i + at, x.loadFlat(i + b)); });
    } else {
      Shape s = y.shape();
      s[(size_t)p.Axis] = e - b;
      c.b().loops(s, [&](const std::vector<Expr> &o) {
        std::vector<Expr> src = o, dst = o;
        src[(size_t)p.Axis] = o[(size_t)p.Axis] + b;
        dst[(size_t)p.Axis] = o[(size_t)p.Axis] + at;
        y.store(dst, x.load(src));
      });
    }
    at += e - b;
  }
}
// --- NonZero --------------------------------------------------------------

/// Multi-indices of the nonzero elements, row-major order.
std::vector<int64_t> nonZeroFlat(const ir::Node &n, TensorPtr &t) {
  t = n.constInput(0, "the number of nonzero elements determines the output shape");
  std::vector<int64_t> idx;
  bool fp = isFloat(t->dtype());
  for (int64_t i = 0; i < t->numel(); ++i)
    if (fp ? t->doubleAt(i) != 0 : t->intAt(i) != 0)
      idx.push_back(i);
  return idx;
}

void inferNonZero(ir::Node &n) {
  TensorPtr t;
  std::vector<int64_t> idx = nonZeroFlat(n, t);
  n.setOutput(0, DType::I64, {(int64_t)t->rank(), (int64_t)idx.size()});
}

void lowerNonZero(LowerCtx &c) {
  TensorPtr t;
  std::vector<int64_t> idx = nonZeroFlat(c.node(), t);
  TensorRef y = c.out(0);
  const Shape &s = t->shape();
  int64_t cnt = (int64_t)idx.size();
  for (int64_t k = 0; k < cnt; ++k) {
    int64_t rem = idx[(size_t)k];
    for (int64_t d = (int64_t)s.size() - 1; d >= 0; --d) {
      int64_t e = s[(size_t)d];
      y.storeFlat(indexConst(d * cnt + k), constantInt(DType::I64, rem % e));
      rem /= e;
    }
  }
}
// --- Unique ---------------------------------------------------------------

struct UniquePlan {
  int64_t Axis = -1; ///< -1: flattened
  int64_t Outer = 1, Len = 0, Inner = 1; ///< input viewed as [Outer, Len, Inner]
  std::vector<int64_t> First;   ///< per unique slice: first occurrence
  std::vector<int64_t> Inverse; ///< per input slice: its unique slice
  std::vector<int64_t> Counts;
  Shape Out;
};

UniquePlan uniquePlan(const ir::Node &n) {
  TensorPtr t = n.constInput(0, "the unique values determine the output shape");
  UniquePlan p;
  const Shape &s = t->shape();
  if (n.hasAttr("axis")) {
    p.Axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)s.size());
    for (int64_t d = 0; d < (int64_t)s.size(); ++d)
      (d < p.Axis ? p.Outer : p.Inner) *= d == p.Axis ? 1 : s[(size_t)d];
    p.Len = s[(size_t)p.Axis];
  } else {
    p.Len = t->numel();
  }
  bool fp = isFloat(t->dtype());
  auto elem = [&](int64_t slice, int64_t o, int64_t i) {
    return (o * p.Len + slice) * p.Inner + i;
  };
  // Three-way comparison of two slices.
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < p.Outer; ++o)
      for (int64_t i = 0; i < p.Inner; ++i) {
        int64_t ea = elem(a, o, i), eb = elem(b, o, i);
        if (fp) {
          double x = t->doubleAt(ea), y = t->doubleAt(eb);
          if (x != y)
            return x < y ? -1 : 1;
        } else {
          int64_t x = t->intAt(ea), y = t->intAt(eb);
          if (x != y) {
            if (isUnsignedInt(t->dtype()))
              return (uint64_t)x < (uint64_t)y ? -1 : 1;
            return x < y ? -1 : 1;
          }
        }
      }
    return 0;
  };
  p.Inverse.assign((size_t)p.Len, -1);
  for (int64_t k = 0; k < p.Len; ++k) {
    bool found = false;
    for (size_t u = 0; u < p.First.size(); ++u)
      if (cmp(k, p.First[u]) == 0) {
        p.Inverse[(size_t)k] = (int64_t)u;
        ++p.Counts[u];
        found = true;
        break;
      }
    if (!found) {
      p.Inverse[(size_t)k] = (int64_t)p.First.size();
      p.First.push_back(k);
      p.Counts.push_back(1);
    }
  }
  if (n.attrInt("sorted", 1)) {
    std::vector<int64_t> order(p.First.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return cmp(p.First[(size_t)a], p.First[(size_t)b]) < 0;
    });
    std::vector<int64_t> rank(order.size()), first, counts;
    for (size_t r = 0; r < order.size(); ++r) {
      rank[(size_t)order[r]] = (int64_t)r;
      first.push_back(p.First[(size_t)order[r]]);
      counts.push_back(p.Counts[(size_t)order[r]]);
    }
    for (int64_t &v : p.Inverse)
      v = rank[(size_t)v];
    p.First = first;
    p.Counts = counts;
  }
  int64_t u = (int64_t)p.First.size();
  if (p.Axis < 0) {
    p.Out = {u};
  } else {
    p.Out = s;
    p.Out[(size_t)p.Axis] = u;
  }
  return p;
}

void inferUnique(ir::Node &n) {
  UniquePlan p = uniquePlan(n);
  int64_t u = (int64_t)p.First.size();
  n.setOutput(0, n.inDType(0), p.Out);
  n.setOutput(1, DType::I64, {u});
  n.setOutput(2, DType::I64, {p.Len});
  n.setOutput(3, DType::I64, {u});
}

void lowerUnique(LowerCtx &c) {
  UniquePlan p = uniquePlan(c.node());
  TensorRef x = c.in(0);
  int64_t u = (int64_t)p.First.size();
  if (c.hasOut(0)) {
    TensorRef y = c.out(0);
    for (int64_t k = 0; k < u; ++k) {
      int64_t src = p.First[(size_t)k];
      c.b().loop("o", p.Outer, [&](Expr o) {
        c.b().loop("i", p.Inner, [&](Expr i) {
          y.storeFlat((o * u + k) * p.Inner + i,
                      x.loadFlat((o * p.Len + src) * p.Inner + i));
        });
      });
    }
  }
  auto storeInts = [&](size_t out, const std::vector<int64_t> &v) {
    if (!c.hasOut(out))
      return;
    TensorRef y = c.out(out);
    for (size_t k = 0; k < v.size(); ++k)
      y.storeFlat(indexConst((int64_t)k), constantInt(DType::I64, v[k]));
  };
  storeInts(1, p.First);
  storeInts(2, p.Inverse);
  storeInts(3, p.Counts);
}

} // namespace

MLCC_OPS(Selection) {
  R.add({.Name = "Compress", .SinceVersion = 9, .Fusion = FusionClass::Injective,
         .Infer = inferCompress, .Lower = lowerCompress});
  R.add({.Name = "NonZero", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferNonZero, .Lower = lowerNonZero});
  R.add({.Name = "Unique", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferUnique, .Lower = lowerUnique});
}

} // namespace mlcc::ops
