//===- CosineWindows.cpp - Hann, Hamming, Blackman ------------------------===//
//
// HannWindow, HammingWindow and BlackmanWindow (17) are cosine sums over
// n / size (periodic) or n / (size - 1) (symmetric), computed in f64.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/SignalCommon.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t windowSize(const ir::Node &n) {
  requireScalarInt(n, 0);
  int64_t size = constScalar(n, 0, "the window size determines the output shape");
  if (size < 0)
    n.error() << "negative window size " << size;
  return size;
}

void inferWindow(ir::Node &n) {
  DType t = outputDatatype(n);
  n.setOutput(0, t, {windowSize(n)});
}

/// A generalized cosine window: sum_i a[i] * cos(2*pi*i*n/den) with
/// alternating signs folded into `a`.
void lowerWindow(LowerCtx &c, std::vector<double> a) {
  int64_t size = windowSize(c.node());
  bool periodic = c.node().attrInt("periodic", 1) != 0;
  TensorRef y = c.out(0);
  int64_t den = periodic ? size : size - 1;
  if (den < 1)
    den = 1;
  c.b().loop("n", size, [&](Expr i) {
    Expr v = f64(a[0]);
    for (size_t h = 1; h < a.size(); ++h) {
      Expr m = (i * (int64_t)h) % den;
      v = v + a[h] * unary(UnOp::Cos, angle(m, den));
    }
    y.store({i}, cast(y.computeType(), v));
  });
}

} // namespace

MLCC_OPS(CosineWindows) {
  R.add({.Name = "HannWindow", .SinceVersion = 17, .Fusion = FusionClass::Opaque,
         .Infer = inferWindow,
         .Lower = [](LowerCtx &c) { lowerWindow(c, {0.5, -0.5}); }});
  R.add({.Name = "HammingWindow", .SinceVersion = 17,
         .Fusion = FusionClass::Opaque, .Infer = inferWindow,
         .Lower = [](LowerCtx &c) {
           double a0 = 25.0 / 46.0;
           lowerWindow(c, {a0, -(1.0 - a0)});
         }});
  R.add({.Name = "BlackmanWindow", .SinceVersion = 17,
         .Fusion = FusionClass::Opaque, .Infer = inferWindow,
         .Lower = [](LowerCtx &c) { lowerWindow(c, {0.42, -0.5, 0.08}); }});
}

} // namespace mlcc::ops
