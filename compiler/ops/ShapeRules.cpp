//===- ShapeRules.cpp - Broadcasting, boxes, axes -------------------------===//
//
// The shape rules many ops share (Lowering.h): numpy broadcasting, whether
// a box of a tensor is one contiguous block of it, axis normalization.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

Shape broadcastShapes(const ir::Node &n, const std::vector<Shape> &shapes) {
  size_t rank = 0;
  for (auto &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (auto &s : shapes) {
    size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t &o = out[lead + d];
      int64_t v = s[d];
      if (v == o || v == 1)
        continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string all;
      for (auto &x : shapes)
        all += (all.empty() ? "" : " and ") + shapeToString(x);
      n.error() << "shapes " << all << " do not broadcast";
    }
  }
  return out;
}

std::optional<int64_t> contiguousBox(const Shape &in, const std::vector<int64_t> &start,
                                     const Shape &out) {
  if (in.size() != out.size() || start.size() != in.size() || numElements(out) == 0)
    return std::nullopt;
  // The last axis the box does not cover whole; before it only 1s.
  size_t last = 0;
  bool partial = false;
  for (size_t d = 0; d < in.size(); ++d)
    if (out[d] != in[d] || start[d] != 0) {
      last = d;
      partial = true;
    }
  int64_t offset = 0, stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (partial && d < last && out[d] != 1)
      return std::nullopt;
    if (start[d] < 0 || start[d] + out[d] > in[d])
      return std::nullopt;
    offset += start[d] * stride;
    stride *= in[d];
  }
  return offset;
}

int64_t normalizeAxis(const ir::Node &n, int64_t axis, int64_t rank,
                      const char *what) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    n.error() << what << " " << axis << " is out of range for rank " << rank;
  return a;
}

} // namespace mlcc::ops
