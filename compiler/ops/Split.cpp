//===- Split.cpp - Split --------------------------------------------------===//
//
// The split sizes come from the `split` attribute (opsets 1-12; opset 1 also
// accepts them as input 1) or input 1 (opset 13+), and determine the output
// shapes, so an input must be a compile-time constant. Without sizes the
// axis is split equally among the outputs (or `num_outputs` parts from
// opset 18, the last one smaller when the extent does not divide).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t splitAxis(const ir::Node &n) {
  return normalizeAxis(n, n.attrInt("axis", 0), (int64_t)n.inShape(0).size());
}

std::vector<int64_t> splitSizes(const ir::Node &n) {
  int64_t axis = splitAxis(n);
  int64_t dim = n.inShape(0)[(size_t)axis];
  int64_t outs = (int64_t)n.Outputs.size();
  std::vector<int64_t> split;
  bool given = false;
  if (n.Opset < 13 && n.hasAttr("split")) {
    split = n.attrInts("split");
    given = true;
  } else if ((n.Opset < 2 || n.Opset >= 13) && n.hasInput(1)) {
    split = n.constInputInts(1, "the split sizes determine the output shapes");
    given = true;
  }
  if (given) {
    if ((int64_t)split.size() != outs)
      n.error() << "split has " << split.size() << " entries for " << outs
                << " outputs";
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0)
        n.error() << "negative split size " << s;
      sum += s;
    }
    if (sum != dim)
      n.error() << "split sizes sum to " << sum << " but axis " << axis
                << " has extent " << dim;
    return split;
  }
  int64_t parts = outs;
  if (n.Opset >= 18 && n.hasAttr("num_outputs")) {
    parts = n.attrInt("num_outputs", outs);
    if (parts < 1)
      n.error() << "num_outputs must be positive, got " << parts;
    if (parts != outs)
      n.error() << "num_outputs is " << parts << " but the node has " << outs
                << " outputs";
  }
  if (parts < 1)
    n.error() << "the node has no outputs";
  int64_t chunk;
  if (dim % parts == 0) {
    chunk = dim / parts;
  } else if (n.Opset >= 18) {
    chunk = (dim + parts - 1) / parts;
  } else {
    n.error() << "axis " << axis << " of extent " << dim
              << " cannot be split equally into " << parts << " parts";
    chunk = 0;
  }
  int64_t left = dim;
  for (int64_t i = 0; i < parts; ++i) {
    int64_t s = std::min(chunk, left);
    split.push_back(s);
    left -= s;
  }
  return split;
}

void inferSplit(ir::Node &n) {
  std::vector<int64_t> split = splitSizes(n);
  int64_t axis = splitAxis(n);
  for (size_t i = 0; i < split.size(); ++i) {
    Shape s = n.inShape(0);
    s[(size_t)axis] = split[i];
    n.setOutput(i, n.inDType(0), s);
  }
}

void lowerSplit(LowerCtx &c) {
  std::vector<int64_t> split = splitSizes(c.node());
  int64_t axis = splitAxis(c.node());
  TensorRef x = c.in(0);
  // Each part starts where the parts before it end: along an axis that
  // follows bounded dimensions, at their extents when the kernel runs.
  Expr offset = indexConst(0);
  for (size_t i = 0; i < split.size(); ++i) {
    if (!c.hasOut(i)) {
      if (x.boundedAxis(axis))
        c.node().error(ErrorKind::Unsupported)
            << "output " << i << " is omitted, and the parts after it start at its extent, "
            << "which follows a bounded dimension; name the output";
      offset = offset + split[i];
      continue;
    }
    TensorRef y = c.out(i);
    c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
      std::vector<Expr> src = o;
      src[(size_t)axis] = src[(size_t)axis] + offset;
      y.store(o, x.load(src));
    });
    offset = offset + y.extent(axis);
  }
}

/// Each part is a contiguous block of the input when the axes before the
/// split axis are all 1.
std::optional<std::vector<int64_t>> splitSelection(const ir::Node &n) {
  std::vector<int64_t> split = splitSizes(n);
  size_t axis = (size_t)splitAxis(n);
  const Shape &in = n.inShape(0);
  std::vector<int64_t> offsets, start(in.size(), 0);
  for (size_t i = 0; i < split.size(); ++i) {
    Shape out = in;
    out[axis] = split[i];
    if (!n.hasOutput(i)) {
      offsets.push_back(-1);
    } else if (std::optional<int64_t> o = contiguousBox(in, start, out)) {
      offsets.push_back(*o);
    } else {
      return std::nullopt;
    }
    start[axis] += split[i];
  }
  return offsets;
}

} // namespace

MLCC_OPS(Split) {
  R.add({.Name = "Split", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferSplit, .Lower = lowerSplit, .Selection = splitSelection,
         .RunTimeExtents = true});
}

} // namespace mlcc::ops
