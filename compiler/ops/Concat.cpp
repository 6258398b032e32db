//===- Concat.cpp - Concat, mlcc.CacheAppend ------------------------------===//
//
// mlcc.CacheAppend(past, new; axis) is a Concat whose output already holds
// the past in its first rows (--kv-cache: the past input is the output's
// buffer, passes::kvCache): it writes only the new rows, at the past's
// extent along the axis, known when the kernel runs.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t concatAxis(const ir::Node &n) {
  // Concat-1 defaults to axis 1; later versions require the attribute.
  int64_t axis = !n.hasAttr("axis") && n.Opset < 4 ? 1 : n.requireInt("axis");
  return normalizeAxis(n, axis, (int64_t)n.inShape(0).size());
}

void inferConcat(ir::Node &n) {
  requireSameDTypes(n);
  int64_t axis = concatAxis(n);
  Shape out = n.inShape(0);
  out[(size_t)axis] = 0;
  for (size_t i = 0; i < n.Inputs.size(); ++i) {
    const Shape &s = n.inShape(i);
    if (s.size() != out.size())
      n.error() << "input " << i << " has rank " << s.size() << ", input 0 has " << out.size();
    for (size_t d = 0; d < s.size(); ++d)
      if ((int64_t)d != axis && s[d] != out[d])
        n.error() << "input " << i << " has shape " << shapeToString(s)
                  << ", incompatible with " << shapeToString(n.inShape(0))
                  << " outside axis " << axis;
    out[(size_t)axis] += s[(size_t)axis];
  }
  n.setOutput(0, n.inDType(0), out);
}

void lowerConcat(LowerCtx &c) {
  int64_t axis = concatAxis(c.node());
  TensorRef y = c.out(0);
  // Where each input starts along the axis: known at run time when
  // extents before it follow bounded dimensions.
  Expr offset = indexConst(0);
  // One loop nest per input, copying it into its slice of the output.
  for (size_t i = 0; i < c.node().Inputs.size(); ++i) {
    TensorRef x = c.in(i);
    c.b().loops(x.extents(), [&](const std::vector<Expr> &idx) {
      std::vector<Expr> o = idx;
      o[(size_t)axis] = o[(size_t)axis] + offset;
      y.store(o, x.load(idx));
    });
    offset = offset + x.extent(axis);
  }
}

void lowerCacheAppend(LowerCtx &c) {
  int64_t axis = concatAxis(c.node());
  TensorRef y = c.out(0), past = c.in(0), x = c.in(1);
  Expr offset = past.extent(axis);
  c.b().loops(x.extents(), [&](const std::vector<Expr> &idx) {
    std::vector<Expr> o = idx;
    o[(size_t)axis] = o[(size_t)axis] + offset;
    y.store(o, x.load(idx));
  });
}

void inferCacheAppend(ir::Node &n) {
  if (n.Inputs.size() != 2 || n.Outputs.size() != 1)
    n.error(ErrorKind::Internal) << "mlcc.CacheAppend takes the past and the new rows";
  inferConcat(n);
}

/// With only 1s before the axis, each input is one contiguous block of the
/// output, in order.
std::optional<std::vector<int64_t>> concatPlacement(const ir::Node &n) {
  int64_t axis = concatAxis(n);
  const Shape &out = n.Outputs[0]->Type.Dims;
  for (int64_t d = 0; d < axis; ++d)
    if (out[(size_t)d] != 1)
      return std::nullopt;
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (size_t i = 0; i < n.Inputs.size(); ++i) {
    offsets.push_back(offset);
    offset += n.inType(i).numel();
  }
  return offsets;
}

} // namespace

MLCC_OPS(Concat) {
  R.add({.Name = "Concat", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferConcat, .Lower = lowerConcat, .Placement = concatPlacement,
         .RunTimeExtents = true, .DenseOperands = true});
  R.add({.Domain = "mlcc", .Name = "CacheAppend", .SinceVersion = 1,
         .Infer = inferCacheAppend, .Lower = lowerCacheAppend, .RunTimeExtents = true});
}

} // namespace mlcc::ops
