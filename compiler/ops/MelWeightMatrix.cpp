//===- MelWeightMatrix.cpp - Mel filter banks -----------------------------===//
//
// MelWeightMatrix (17) builds triangular filters between mel-spaced bins:
// the mel edges in the frequency inputs' type, the rest in f64.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/SignalCommon.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

struct MelParams {
  int64_t Mel = 0, DftLen = 0, Bins = 0;
};

MelParams melParams(const ir::Node &n) {
  for (size_t i = 0; i < 3; ++i)
    requireScalarInt(n, i);
  requireFloat(n, 3);
  requireFloat(n, 4);
  MelParams p;
  p.Mel = constScalar(n, 0, "num_mel_bins determines the output shape");
  p.DftLen = constScalar(n, 1, "dft_length determines the output shape");
  if (p.Mel < 1)
    n.error() << "num_mel_bins " << p.Mel << " must be positive";
  if (p.DftLen < 1)
    n.error() << "dft_length " << p.DftLen << " must be positive";
  p.Bins = p.DftLen / 2 + 1;
  return p;
}

void inferMel(ir::Node &n) {
  DType t = outputDatatype(n);
  MelParams p = melParams(n);
  n.setOutput(0, t, {p.Bins, p.Mel});
}

void lowerMel(LowerCtx &c) {
  MelParams p = melParams(c.node());
  TensorRef rate = c.in(2), lower = c.in(3), upper = c.in(4), y = c.out(0);
  KernelBuilder &b = c.b();
  // Mel edges in the frequency inputs' type, the rest in f64.
  DType ft = lower.computeType();
  auto toMel = [&](const Expr &hz) {
    Expr h = cast(ft, hz);
    return constant(ft, 2595.0) *
           (log(constant(ft, 1.0) + h / 700.0) / std::log(10.0));
  };
  Expr lowMel = toMel(lower.loadFlat(indexConst(0)));
  Expr highMel = toMel(upper.loadFlat(indexConst(0)));
  Local lowL = b.local("low_mel", lowMel);
  Local stepL = b.local("mel_step", (cast(ft, highMel) - lowL.get()) /
                                        (double)(p.Mel + 2));
  Local sr = b.local("rate", cast(DType::F64, rate.loadFlat(indexConst(0))));
  auto binOf = [&](const Expr &i) {
    Expr mel = cast(DType::F64, i) * cast(DType::F64, stepL.get()) +
               cast(DType::F64, lowL.get());
    Expr hz = (exp(mel / 2595.0 * std::log(10.0)) - 1.0) * 700.0;
    return floor(hz * (double)(p.DftLen + 1) / sr.get());
  };
  b.loop("i", p.Mel, [&](Expr i) {
    Local lo = b.local("lo", binOf(i));
    Local ce = b.local("ce", binOf(i + 1));
    Local hi = b.local("hi", binOf(i + 2));
    b.loop("j", p.Bins, [&](Expr j) {
      Expr jf = cast(DType::F64, j);
      Expr l = lo.get(), m = ce.get(), h = hi.get();
      Expr down = land(gt(h, m), land(ge(jf, m), lt(jf, h)));
      Expr downV = (h - jf) / (h - m);
      Expr flat = eq(m, l);
      Expr flatV = select(eq(jf, m), f64(1.0), f64(0.0));
      Expr up = land(ge(jf, l), le(jf, m));
      Expr upV = (jf - l) / (m - l);
      Expr v = select(down, downV,
                      select(flat, flatV, select(up, upV, f64(0.0))));
      y.store({j, i}, cast(y.computeType(), v));
    });
  });
}

} // namespace

MLCC_OPS(MelWeightMatrix) {
  R.add({.Name = "MelWeightMatrix", .SinceVersion = 17,
         .Fusion = FusionClass::Opaque, .Infer = inferMel, .Lower = lowerMel});
}

} // namespace mlcc::ops
