//===- Gather.cpp - Gather, GatherElements, GatherND ----------------------===//
//
// The indices are run-time data: each is converted to Index, negative values
// are wrapped by adding the axis extent, and the result is clamped into the
// axis so that a load never leaves the buffer (ONNX leaves out-of-range
// indices undefined).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

using namespace kir;

namespace {

void requireIndexType(const ir::Node &n, size_t i) {
  DType t = n.inDType(i);
  if (t != DType::I32 && t != DType::I64)
    n.error() << "input " << i << " (indices) has type " << dtypeOnnxName(t)
              << "; int32 or int64 is required";
}

/// A data-dependent index into an axis of extent `dim`: negative values
/// count from the end; the result is clamped into [0, dim).
/// `dim` may be known only when the kernel runs (an axis that follows a
/// bounded dimension: a negative index counts from its run-time end); a
/// constant folds as before.
Expr safeIndex(const Expr &v, const Expr &dim) {
  Expr i = toIndex(v);
  i = select(lt(i, indexConst(0)), i + dim, i);
  return clamp(i, indexConst(0), max(dim - indexConst(1), indexConst(0)));
}

Expr safeIndex(const Expr &v, int64_t dim) { return safeIndex(v, indexConst(dim)); }

// --- Gather ---------------------------------------------------------------

void inferGather(ir::Node &n) {
  requireIndexType(n, 1);
  const Shape &data = n.inShape(0), &idx = n.inShape(1);
  if (data.empty())
    n.error() << "data must have rank 1 or more";
  int64_t axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)data.size());
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  if (data[(size_t)axis] == 0 && numElements(out) > 0)
    n.error() << "gathers from an empty axis";
  n.setOutput(0, n.inDType(0), out);
}

void lowerGather(LowerCtx &c) {
  TensorRef x = c.in(0), ind = c.in(1), y = c.out(0);
  int64_t axis = normalizeAxis(c.node(), c.node().attrInt("axis", 0),
                               (int64_t)x.rank());
  size_t q = ind.rank();
  // Indices (a negative one counts from the end) refer to the axis's
  // extent when the kernel runs: it may follow a bounded dimension.
  const Expr extent = x.extent(axis);
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> ii(o.begin() + axis, o.begin() + axis + (int64_t)q);
    std::vector<Expr> src(o.begin(), o.begin() + axis);
    src.push_back(safeIndex(ind.load(ii), extent));
    src.insert(src.end(), o.begin() + axis + (int64_t)q, o.end());
    y.store(o, x.load(src));
  });
}

// --- GatherElements -------------------------------------------------------

void inferGatherElements(ir::Node &n) {
  requireIndexType(n, 1);
  const Shape &data = n.inShape(0), &idx = n.inShape(1);
  if (data.empty())
    n.error() << "data must have rank 1 or more";
  if (idx.size() != data.size())
    n.error() << "indices have rank " << idx.size() << " but data has rank "
              << data.size();
  int64_t axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)data.size());
  if (data[(size_t)axis] == 0 && numElements(idx) > 0)
    n.error() << "gathers from an empty axis";
  n.setOutput(0, n.inDType(0), idx);
}

void lowerGatherElements(LowerCtx &c) {
  TensorRef x = c.in(0), ind = c.in(1), y = c.out(0);
  int64_t axis = normalizeAxis(c.node(), c.node().attrInt("axis", 0),
                               (int64_t)x.rank());
  const Shape &xs = x.shape();
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> src = o;
    // Indices may be smaller than data on the other axes, never larger.
    for (size_t d = 0; d < o.size(); ++d)
      if ((int64_t)d != axis && y.shape()[d] > xs[d])
        src[d] = min(o[d], indexConst(xs[d] - 1));
    src[(size_t)axis] = safeIndex(ind.load(o), xs[(size_t)axis]);
    y.store(o, x.load(src));
  });
}

// --- GatherND -------------------------------------------------------------

struct GatherNDShape {
  int64_t B, K;
  Shape Out;
};

GatherNDShape gatherNDShape(const ir::Node &n) {
  const Shape &data = n.inShape(0), &idx = n.inShape(1);
  GatherNDShape s;
  s.B = n.Opset >= 12 ? n.attrInt("batch_dims", 0) : 0;
  int64_t r = (int64_t)data.size(), q = (int64_t)idx.size();
  if (r < 1 || q < 1)
    n.error() << "data and indices must have rank 1 or more";
  if (s.B < 0 || s.B >= std::min(r, q))
    n.error() << "batch_dims " << s.B << " is out of range";
  s.K = idx.back();
  if (s.K < 1 || s.K > r - s.B)
    n.error() << "the last indices dimension " << s.K << " must be in [1, "
              << r - s.B << "]";
  for (int64_t i = 0; i < s.B; ++i)
    if (data[(size_t)i] != idx[(size_t)i])
      n.error() << "batch dimension " << i << " differs between data "
                << shapeToString(data) << " and indices " << shapeToString(idx);
  s.Out.assign(idx.begin(), idx.end() - 1);
  s.Out.insert(s.Out.end(), data.begin() + s.B + s.K, data.end());
  return s;
}

void inferGatherND(ir::Node &n) {
  requireDType(n, 1, {DType::I64});
  GatherNDShape s = gatherNDShape(n);
  n.setOutput(0, n.inDType(0), s.Out);
}

void lowerGatherND(LowerCtx &c) {
  GatherNDShape s = gatherNDShape(c.node());
  TensorRef x = c.in(0), ind = c.in(1), y = c.out(0);
  size_t q = ind.rank();
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> ii(o.begin(), o.begin() + (q - 1));
    std::vector<Expr> src(o.begin(), o.begin() + s.B);
    for (int64_t j = 0; j < s.K; ++j) {
      std::vector<Expr> at = ii;
      at.push_back(indexConst(j));
      src.push_back(safeIndex(ind.load(at), x.shape()[(size_t)(s.B + j)]));
    }
    src.insert(src.end(), o.begin() + (q - 1), o.end());
    y.store(o, x.load(src));
  });
}

/// A Gather of one constant index in range picks a slab of the input: one
/// contiguous block when the axes before it are all 1.
std::optional<std::vector<int64_t>> gatherSelection(const ir::Node &n) {
  if (!n.hasInput(1) || !n.Inputs[1]->Const || n.Inputs[1]->Type.numel() != 1)
    return std::nullopt;
  const Shape &in = n.inShape(0);
  int64_t axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)in.size());
  int64_t i = n.constInputInts(1, "the index")[0], dim = in[(size_t)axis];
  if (i < 0)
    i += dim;
  if (i < 0 || i >= dim)
    return std::nullopt;
  std::vector<int64_t> start(in.size(), 0);
  start[(size_t)axis] = i;
  Shape out = in;
  out[(size_t)axis] = 1;
  std::optional<int64_t> o = contiguousBox(in, start, out);
  if (!o)
    return std::nullopt;
  return std::vector<int64_t>{*o};
}

} // namespace

MLCC_OPS(Gather) {
  R.add({.Name = "Gather", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferGather, .Lower = lowerGather, .Selection = gatherSelection,
         .RunTimeExtents = true});
  R.add({.Name = "GatherElements", .SinceVersion = 11,
         .Fusion = FusionClass::Injective, .Infer = inferGatherElements,
         .Lower = lowerGatherElements});
  R.add({.Name = "GatherND", .SinceVersion = 11, .Fusion = FusionClass::Injective,
         .Infer = inferGatherND, .Lower = lowerGatherND});
}

} // namespace mlcc::ops
