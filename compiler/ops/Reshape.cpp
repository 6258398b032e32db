//===- Reshape.cpp - Reshape, Flatten, Squeeze, Unsqueeze, Identity -------===//
//
// Ops that only reinterpret the shape: they are View ops, which cost nothing
// at run time (their output shares the input's storage).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <set>

namespace mlcc::ops {

namespace {

void inferReshape(ir::Node &n) {
  const Shape &in = n.inShape(0);
  std::vector<int64_t> spec;
  if (n.Opset < 5)
    spec = n.requireInts("shape");
  else
    spec = n.constInputInts(1, "the output shape depends on it");
  bool allowZero = n.attrInt("allowzero", 0) != 0;
  Shape out;
  int64_t inferAt = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (inferAt >= 0)
        n.error() << "more than one -1 in shape " << shapeToString(spec);
      inferAt = (int64_t)i;
      out.push_back(1);
      continue;
    }
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        n.error() << "shape " << shapeToString(spec) << " copies dimension " << i
                  << " of a rank-" << in.size() << " input";
      d = in[i];
    }
    if (d < 0)
      n.error() << "invalid dimension " << d << " in shape " << shapeToString(spec);
    out.push_back(d);
    if (__builtin_mul_overflow(known, d, &known))
      n.error() << "shape " << shapeToString(spec) << " has more elements than 64 bits count";
  }
  int64_t total = numElements(in);
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      n.error() << "cannot reshape " << shapeToString(in) << " to "
                << shapeToString(spec);
    out[(size_t)inferAt] = total / known;
  }
  if (numElements(out) != total)
    n.error() << "cannot reshape " << shapeToString(in) << " ("
              << total << " elements) to " << shapeToString(out);
  n.setOutput(0, n.inDType(0), out);
}

void inferFlatten(ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  int64_t axis = n.attrInt("axis", 1);
  if (axis < 0)
    axis += r;
  if (axis < 0 || axis > r)
    n.error() << "axis " << n.attrInt("axis", 1) << " is out of range for rank " << r;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i)
    (i < axis ? a : b) *= in[(size_t)i];
  n.setOutput(0, n.inDType(0), {a, b});
}

/// Squeeze/Unsqueeze axes: attribute before opset 13, input from 13.
std::vector<int64_t> axesOf(const ir::Node &n, bool required) {
  if (n.Opset < 13)
    return required ? n.requireInts("axes") : n.attrInts("axes");
  if (!n.hasInput(1)) {
    if (required)
      n.error() << "input 'axes' is required";
    return {};
  }
  return n.constInputInts(1, "the output shape depends on it");
}

void inferSqueeze(ir::Node &n) {
  const Shape &in = n.inShape(0);
  std::vector<int64_t> axes = axesOf(n, false);
  std::set<int64_t> drop;
  for (int64_t a : axes) {
    int64_t ax = normalizeAxis(n, a, (int64_t)in.size());
    if (in[(size_t)ax] != 1)
      n.error() << "cannot squeeze axis " << a << " of extent " << in[(size_t)ax];
    drop.insert(ax);
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool squeeze = axes.empty() ? in[i] == 1 : drop.count((int64_t)i) > 0;
    if (!squeeze)
      out.push_back(in[i]);
  }
  n.setOutput(0, n.inDType(0), out);
}

void inferUnsqueeze(ir::Node &n) {
  const Shape &in = n.inShape(0);
  std::vector<int64_t> axes = axesOf(n, true);
  int64_t r = (int64_t)(in.size() + axes.size());
  std::set<int64_t> add;
  for (int64_t a : axes) {
    int64_t ax = normalizeAxis(n, a, r);
    if (!add.insert(ax).second)
      n.error() << "axis " << a << " appears twice";
  }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < r; ++i)
    out.push_back(add.count(i) ? 1 : in[k++]);
  n.setOutput(0, n.inDType(0), out);
}

OpSchema view(const char *name, int64_t since, std::function<void(ir::Node &)> infer) {
  OpSchema s;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::View;
  s.Infer = std::move(infer);
  return s;
}

} // namespace

MLCC_OPS(Reshape) {
  R.add(view("Reshape", 1, inferReshape));
  R.add(view("Flatten", 1, inferFlatten));
  R.add(view("Squeeze", 1, inferSqueeze));
  R.add(view("Unsqueeze", 1, inferUnsqueeze));
  R.add(view("Identity", 1, inferSameAsInput));
}

} // namespace mlcc::ops
