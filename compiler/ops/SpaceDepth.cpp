//===- SpaceDepth.cpp - DepthToSpace, SpaceToDepth ------------------------===//
//
// Both rearrange 4-D NCHW tensors between the channel axis and b x b spatial
// blocks. DepthToSpace's DCR mode (the default, and the only one before
// opset 11) takes channel (i * b + j) * C' + c to block offset (i, j) of
// channel c; CRD takes channel c * b * b + i * b + j.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t blockSize(const ir::Node &n) {
  int64_t b = n.requireInt("blocksize");
  if (b < 1)
    n.error() << "blocksize must be positive, got " << b;
  if (n.inShape(0).size() != 4)
    n.error() << "input must have rank 4, got " << shapeToString(n.inShape(0));
  return b;
}

bool crdMode(const ir::Node &n) {
  std::string mode = n.attrString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    n.error() << "unknown mode '" << mode << "'";
  return mode == "CRD";
}

void inferDepthToSpace(ir::Node &n) {
  int64_t b = blockSize(n);
  crdMode(n);
  const Shape &x = n.inShape(0);
  if (x[1] % (b * b))
    n.error() << "channels " << x[1] << " are not a multiple of blocksize^2 = "
              << b * b;
  n.setOutput(0, n.inDType(0), {x[0], x[1] / (b * b), x[2] * b, x[3] * b});
}

void lowerDepthToSpace(LowerCtx &c) {
  int64_t b = blockSize(c.node());
  bool crd = crdMode(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  int64_t cOut = y.shape()[1];
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr i = o[2] % b, j = o[3] % b;
    Expr ch = crd ? o[1] * (b * b) + i * b + j : (i * b + j) * cOut + o[1];
    y.store(o, x.load({o[0], ch, o[2] / b, o[3] / b}));
  });
}

void inferSpaceToDepth(ir::Node &n) {
  int64_t b = blockSize(n);
  const Shape &x = n.inShape(0);
  if (x[2] % b || x[3] % b)
    n.error() << "spatial extents " << x[2] << "x" << x[3]
              << " are not multiples of blocksize " << b;
  n.setOutput(0, n.inDType(0), {x[0], x[1] * b * b, x[2] / b, x[3] / b});
}

void lowerSpaceToDepth(LowerCtx &c) {
  int64_t b = blockSize(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  int64_t cIn = x.shape()[1];
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr blk = o[1] / cIn, ch = o[1] % cIn;
    Expr i = blk / b, j = blk % b;
    y.store(o, x.load({o[0], ch, o[2] * b + i, o[3] * b + j}));
  });
}

} // namespace

MLCC_OPS(SpaceDepth) {
  R.add({.Name = "DepthToSpace", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferDepthToSpace, .Lower = lowerDepthToSpace});
  R.add({.Name = "SpaceToDepth", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferSpaceToDepth, .Lower = lowerSpaceToDepth});
}

} // namespace mlcc::ops
