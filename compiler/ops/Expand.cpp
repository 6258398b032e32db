//===- Expand.cpp - Expand, Tile ------------------------------------------===//
//
// Expand broadcasts its input to the shape given by input 1 (numpy rules, in
// both directions); Tile repeats it along every axis. The target shape and
// the repeats determine the output shape and must be compile-time constants
// (computed from a bounded dimension they may be: both run to the extents
// known when the kernel runs).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferExpand(ir::Node &n) {
  std::vector<int64_t> shape =
      n.constInputInts(1, "the target shape determines the output shape");
  for (int64_t d : shape)
    if (d < 0)
      n.error() << "invalid dimension " << d << " in shape " << shapeToString(shape);
  n.setOutput(0, n.inDType(0), broadcastShapes(n, {n.inShape(0), shape}));
}

void lowerExpand(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    y.store(o, x.loadBroadcast(o));
  });
}

/// Repeats per input axis.
std::vector<int64_t> tileRepeats(const ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> reps;
  if (n.Opset < 6) {
    std::vector<int64_t> tiles = n.constInputInts(1, "the tile count determines the output shape");
    std::vector<int64_t> axis = n.constInputInts(2, "the tile axis determines the output shape");
    if (tiles.size() != 1 || axis.size() != 1)
      n.error() << "tiles and axis must be scalars";
    reps.assign((size_t)r, 1);
    reps[(size_t)normalizeAxis(n, axis[0], r)] = tiles[0];
  } else {
    reps = n.constInputInts(1, "the repeats determine the output shape");
  }
  if ((int64_t)reps.size() != r)
    n.error() << "repeats has " << reps.size() << " entries for a rank-" << r
              << " input";
  for (int64_t v : reps)
    if (v < 0)
      n.error() << "negative repeat count " << v;
  return reps;
}

void inferTile(ir::Node &n) {
  std::vector<int64_t> reps = tileRepeats(n);
  Shape out = n.inShape(0);
  for (size_t d = 0; d < out.size(); ++d)
    out[d] *= reps[d];
  n.setOutput(0, n.inDType(0), out);
}

void lowerTile(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> src(o.size());
    for (size_t d = 0; d < o.size(); ++d) {
      int64_t e = x.shape()[d];
      // An axis that follows a bounded dimension repeats its extent at run
      // time.
      if (x.boundedAxis((int64_t)d))
        src[d] = o[d] % x.extent((int64_t)d);
      else
        src[d] = e == y.shape()[d] ? o[d] : o[d] % e;
    }
    y.store(o, x.load(src));
  });
}

} // namespace

MLCC_OPS(Expand) {
  R.add({.Name = "Expand", .SinceVersion = 8, .Fusion = FusionClass::Injective,
         .Infer = inferExpand, .Lower = lowerExpand, .RunTimeExtents = true});
  R.add({.Name = "Tile", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferTile, .Lower = lowerTile, .RunTimeExtents = true});
}

} // namespace mlcc::ops
