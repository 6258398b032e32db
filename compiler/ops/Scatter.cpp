//===- Scatter.cpp - ScatterND, ScatterElements, Scatter, TensorScatter ---===//
//
// The kernel copies the data to the output, then applies the updates in
// index order (so with duplicate indices and no reduction the last update
// wins). `reduction` (add, mul from opset 16; max, min from 18) combines the
// update with the current output element instead. Indices are run-time data:
// negative values wrap and the result is clamped into the axis.
//
// TensorScatter (opset 24) writes `update` into a copy of the cache along
// the sequence axis at each batch entry's write index (modulo the cache
// length in circular mode).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

using namespace kir;

namespace {

Expr safeIndex(const Expr &v, int64_t dim) {
  Expr i = toIndex(v);
  i = select(lt(i, indexConst(0)), i + dim, i);
  return clamp(i, indexConst(0), indexConst(std::max<int64_t>(dim - 1, 0)));
}

using Combine = std::function<Expr(Expr, Expr)>;

/// The combining function of the node's `reduction`; null for "none".
Combine reductionOf(const ir::Node &n) {
  std::string red = n.attrString("reduction", "none");
  bool isBool = n.inDType(0) == DType::Bool;
  if (red == "none")
    return nullptr;
  if (red != "add" && red != "mul" && red != "max" && red != "min")
    n.error() << "unknown reduction '" << red << "'";
  if (isBool)
    n.error(ErrorKind::Unsupported) << "reduction '" << red
                                    << "' on bool data is not supported";
  if (red == "add")
    return [](Expr a, Expr b) { return a + b; };
  if (red == "mul")
    return [](Expr a, Expr b) { return a * b; };
  if (red == "max")
    return [](Expr a, Expr b) { return max(a, b); };
  return [](Expr a, Expr b) { return min(a, b); };
}

void requireIndexType(const ir::Node &n, size_t i) {
  DType t = n.inDType(i);
  if (t != DType::I32 && t != DType::I64)
    n.error() << "input " << i << " (indices) has type " << dtypeOnnxName(t)
              << "; int32 or int64 is required";
}

void copyData(LowerCtx &c, const TensorRef &x, const TensorRef &y) {
  c.b().loop("i", y.numel(), [&](Expr i) { y.storeFlat(i, x.loadFlat(i)); });
}

void update(LowerCtx &c, const TensorRef &y, const std::vector<Expr> &at,
            const Expr &v, const Combine &fn) {
  if (!fn) {
    y.store(at, v);
    return;
  }
  y.store(at, fn(y.load(at), v));
}

// --- ScatterND ------------------------------------------------------------

void inferScatterND(ir::Node &n) {
  requireDType(n, 1, {DType::I64});
  const Shape &data = n.inShape(0), &idx = n.inShape(1), &upd = n.inShape(2);
  if (n.inDType(2) != n.inDType(0))
    n.error() << "updates have type " << dtypeOnnxName(n.inDType(2))
              << " but data has " << dtypeOnnxName(n.inDType(0));
  if (data.empty() || idx.empty())
    n.error() << "data and indices must have rank 1 or more";
  int64_t k = idx.back();
  if (k < 1 || k > (int64_t)data.size())
    n.error() << "the last indices dimension " << k << " must be in [1, "
              << data.size() << "]";
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (upd != want)
    n.error() << "updates have shape " << shapeToString(upd) << ", expected "
              << shapeToString(want);
  reductionOf(n);
  n.setOutput(0, n.inType(0));
}

void lowerScatterND(LowerCtx &c) {
  Combine fn = reductionOf(c.node());
  TensorRef x = c.in(0), ind = c.in(1), u = c.in(2), y = c.out(0);
  copyData(c, x, y);
  int64_t k = ind.shape().back();
  Shape outer(ind.shape().begin(), ind.shape().end() - 1);
  Shape inner(x.shape().begin() + k, x.shape().end());
  c.b().loops(outer, [&](const std::vector<Expr> &o) {
    std::vector<Expr> at;
    for (int64_t j = 0; j < k; ++j) {
      std::vector<Expr> ii = o;
      ii.push_back(indexConst(j));
      at.push_back(safeIndex(ind.load(ii), x.shape()[(size_t)j]));
    }
    c.b().loops(inner, [&](const std::vector<Expr> &r) {
      std::vector<Expr> ui = o, yi = at;
      ui.insert(ui.end(), r.begin(), r.end());
      yi.insert(yi.end(), r.begin(), r.end());
      update(c, y, yi, u.load(ui), fn);
    }, "r");
  }, "u");
}

// --- ScatterElements / Scatter --------------------------------------------

void inferScatterElements(ir::Node &n) {
  requireIndexType(n, 1);
  const Shape &data = n.inShape(0), &idx = n.inShape(1), &upd = n.inShape(2);
  if (n.inDType(2) != n.inDType(0))
    n.error() << "updates have type " << dtypeOnnxName(n.inDType(2))
              << " but data has " << dtypeOnnxName(n.inDType(0));
  if (data.empty())
    n.error() << "data must have rank 1 or more";
  if (idx != upd)
    n.error() << "indices " << shapeToString(idx) << " and updates "
              << shapeToString(upd) << " must have the same shape";
  if (idx.size() != data.size())
    n.error() << "indices have rank " << idx.size() << " but data has rank "
              << data.size();
  int64_t axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)data.size());
  for (size_t d = 0; d < data.size(); ++d)
    if ((int64_t)d != axis && idx[d] > data[d])
      n.error() << "indices " << shapeToString(idx)
                << " are larger than data " << shapeToString(data);
  if (data[(size_t)axis] == 0 && numElements(idx) > 0)
    n.error() << "scatters into an empty axis";
  reductionOf(n);
  n.setOutput(0, n.inType(0));
}

void lowerScatterElements(LowerCtx &c) {
  Combine fn = reductionOf(c.node());
  TensorRef x = c.in(0), ind = c.in(1), u = c.in(2), y = c.out(0);
  int64_t axis = normalizeAxis(c.node(), c.node().attrInt("axis", 0),
                               (int64_t)x.rank());
  copyData(c, x, y);
  c.b().loops(ind.shape(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> at = o;
    at[(size_t)axis] = safeIndex(ind.load(o), x.shape()[(size_t)axis]);
    update(c, y, at, u.load(o), fn);
  }, "u");
}

// --- TensorScatter --------------------------------------------------------

int64_t tensorScatterAxis(const ir::Node &n) {
  int64_t r = (int64_t)n.inShape(0).size();
  int64_t axis = normalizeAxis(n, n.attrInt("axis", -2), r);
  if (axis == 0)
    n.error() << "axis cannot be the batch dimension 0";
  return axis;
}

bool circularMode(const ir::Node &n) {
  std::string mode = n.attrString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    n.error() << "unknown mode '" << mode << "'";
  return mode == "circular";
}

void inferTensorScatter(ir::Node &n) {
  const Shape &past = n.inShape(0), &upd = n.inShape(1);
  if (past.size() < 2)
    n.error() << "past_cache must have rank 2 or more";
  int64_t axis = tensorScatterAxis(n);
  circularMode(n);
  if (n.inDType(1) != n.inDType(0))
    n.error() << "update has type " << dtypeOnnxName(n.inDType(1))
              << " but past_cache has " << dtypeOnnxName(n.inDType(0));
  bool ok = upd.size() == past.size() && upd[(size_t)axis] <= past[(size_t)axis];
  for (size_t d = 0; ok && d < past.size(); ++d)
    ok = (int64_t)d == axis || upd[d] == past[d];
  if (!ok)
    n.error() << "update " << shapeToString(upd) << " does not fit past_cache "
              << shapeToString(past) << " on axis " << axis;
  if (n.hasInput(2)) {
    requireDType(n, 2, {DType::I64});
    if (n.inShape(2) != Shape{past[0]})
      n.error() << "write_indices has shape " << shapeToString(n.inShape(2))
                << ", expected [" << past[0] << "]";
  }
  n.setOutput(0, n.inType(0));
}

void lowerTensorScatter(LowerCtx &c) {
  int64_t axis = tensorScatterAxis(c.node());
  bool circular = circularMode(c.node());
  TensorRef x = c.in(0), u = c.in(1), y = c.out(0);
  std::optional<TensorRef> wi;
  if (c.hasIn(2))
    wi = c.in(2);
  copyData(c, x, y);
  int64_t maxLen = x.shape()[(size_t)axis];
  c.b().loops(u.shape(), [&](const std::vector<Expr> &o) {
    Expr pos = o[(size_t)axis];
    if (wi)
      pos = pos + toIndex(wi->load({o[0]}));
    std::vector<Expr> at = o;
    if (circular) {
      at[(size_t)axis] = floorMod(pos, indexConst(maxLen));
      y.store(at, u.load(o));
      return;
    }
    // Linear mode: writes past the cache are undefined; drop them.
    at[(size_t)axis] = pos;
    c.b().ifThen(land(ge(pos, indexConst(0)), lt(pos, indexConst(maxLen))),
                 [&] { y.store(at, u.load(o)); });
  }, "u");
}

} // namespace

MLCC_OPS(Scatter) {
  R.add({.Name = "TensorScatter", .SinceVersion = 24, .Fusion = FusionClass::Opaque,
         .Infer = inferTensorScatter, .Lower = lowerTensorScatter});
  R.add({.Name = "ScatterND", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferScatterND, .Lower = lowerScatterND});
  R.add({.Name = "ScatterElements", .SinceVersion = 11,
         .Fusion = FusionClass::Opaque, .Infer = inferScatterElements,
         .Lower = lowerScatterElements});
  R.add({.Name = "Scatter", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferScatterElements, .Lower = lowerScatterElements});
}

} // namespace mlcc::ops
