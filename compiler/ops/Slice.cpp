//===- Slice.cpp - Slice --------------------------------------------------===//
//
// Slice-1 takes starts/ends/axes as attributes; from opset 10 they are inputs
// (with optional axes and steps). The slice parameters determine the output
// shape, so they must be compile-time constants; the data stays a run-time
// value. Each output element reads data[start + i * step] on sliced axes.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

using namespace kir;

namespace {

struct SliceParams {
  std::vector<int64_t> Start, Step; ///< per data axis
  Shape Out;
};

SliceParams sliceParams(const ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.Opset < 10) {
    starts = n.requireInts("starts");
    ends = n.requireInts("ends");
    axes = n.attrInts("axes");
  } else {
    starts = n.constInputInts(1, "the slice starts determine the output shape");
    ends = n.constInputInts(2, "the slice ends determine the output shape");
    if (n.hasInput(3))
      axes = n.constInputInts(3, "the slice axes determine the output shape");
    if (n.hasInput(4))
      steps = n.constInputInts(4, "the slice steps determine the output shape");
  }
  if (starts.size() != ends.size())
    n.error() << "starts has " << starts.size() << " entries but ends has "
              << ends.size();
  if (axes.empty()) {
    if ((int64_t)starts.size() > r)
      n.error() << "starts has " << starts.size() << " entries for a rank-" << r
                << " input";
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back((int64_t)i);
  }
  if (axes.size() != starts.size())
    n.error() << "axes has " << axes.size() << " entries but starts has "
              << starts.size();
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (steps.size() != starts.size())
    n.error() << "steps has " << steps.size() << " entries but starts has "
              << starts.size();

  SliceParams p;
  p.Start.assign((size_t)r, 0);
  p.Step.assign((size_t)r, 1);
  p.Out = in;
  std::vector<bool> seen((size_t)r, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = normalizeAxis(n, axes[i], r, "slice axis");
    if (seen[(size_t)a])
      n.error() << "axis " << axes[i] << " is sliced twice";
    seen[(size_t)a] = true;
    int64_t dim = in[(size_t)a], step = steps[i];
    if (step == 0)
      n.error() << "step 0 on axis " << axes[i];
    int64_t s = starts[i], e = ends[i];
    if (s < 0)
      s = s < -dim ? -1 : s + dim; // keep below 0 without overflow
    if (e < 0)
      e = e < -dim - 1 ? -dim - 1 : e + dim;
    int64_t len;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      len = e > s ? (e - s + step - 1) / step : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
    }
    if (dim == 0)
      len = 0;
    p.Start[(size_t)a] = s;
    p.Step[(size_t)a] = step;
    p.Out[(size_t)a] = len;
  }
  return p;
}

void inferSlice(ir::Node &n) {
  SliceParams p = sliceParams(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerSlice(LowerCtx &c) {
  SliceParams p = sliceParams(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  // Starts, axes or steps computed from a bounded dimension hold their
  // values at MAX only (the ends may: the output's extents follow them).
  for (size_t i : {1u, 3u, 4u})
    if (c.node().hasInput(i) && c.node().Inputs[i]->FromDims)
      c.node().error(ErrorKind::Unsupported)
          << "its input " << i << " ('" << c.node().Inputs[i]->Name
          << "') is computed from a bounded dimension; a Slice takes such numbers only as "
             "its ends so far";
  // An axis that follows a bounded dimension starts at 0 at every extent
  // only when it starts at 0 at MAX (a start counted from the end moves).
  for (size_t d = 0; d < p.Start.size(); ++d)
    if (x.boundedAxis((int64_t)d) && (p.Start[d] != 0 || p.Step[d] != 1))
      c.node().error(ErrorKind::Unsupported)
          << "slices axis " << d
          << ", which follows a bounded dimension, from " << p.Start[d] << " in steps of "
          << p.Step[d] << "; such an axis is sliced only from 0 in steps of 1 so far";
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> src(o.size());
    for (size_t d = 0; d < o.size(); ++d)
      src[d] = o[d] * p.Step[d] + p.Start[d];
    y.store(o, x.load(src));
  });
}

/// A slice of unit steps whose box is one contiguous block of the input.
std::optional<std::vector<int64_t>> sliceSelection(const ir::Node &n) {
  SliceParams p = sliceParams(n);
  for (size_t d = 0; d < p.Step.size(); ++d)
    if (p.Step[d] != 1 && p.Out[d] > 1)
      return std::nullopt;
  std::optional<int64_t> o = contiguousBox(n.inShape(0), p.Start, p.Out);
  if (!o)
    return std::nullopt;
  return std::vector<int64_t>{*o};
}

} // namespace

MLCC_OPS(Slice) {
  R.add({.Name = "Slice", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferSlice, .Lower = lowerSlice, .Selection = sliceSelection,
         .RunTimeExtents = true});
}

} // namespace mlcc::ops
