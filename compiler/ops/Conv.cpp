//===- Conv.cpp - Conv (N-D, grouped, dilated, padded) --------------------===//
//
// The geometry and the loop nest are shared with the integer convolutions
// (compiler/ops/Contraction.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferConv(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  ConvShape s = convShape(n, 0, 1);
  if (n.hasInput(2) && n.inShape(2) != Shape{s.M})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << ", expected ["
              << s.M << "]";
  n.setOutput(0, n.inDType(0), s.outShape());
}

void lowerConv(LowerCtx &c) {
  ConvShape s = convShape(c.node(), 0, 1);
  TensorRef x = c.in(0), w = c.in(1), y = c.out(0);
  ConvSpec spec;
  spec.Acc = y.computeType();
  spec.LoadX = [&](const std::vector<Expr> &i) { return x.load(i); };
  spec.LoadW = [&](const std::vector<Expr> &i) { return w.load(i); };
  if (c.hasIn(2)) {
    TensorRef bias = c.in(2);
    spec.Init = [bias](const Expr &m) { return bias.load({m}); };
  }
  lowerConvolution(c, s, y, spec);
}

} // namespace

MLCC_OPS(Conv) {
  R.add({.Name = "Conv", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferConv, .Lower = lowerConv});
}

} // namespace mlcc::ops
