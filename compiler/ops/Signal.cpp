//===- Signal.cpp - DFT, STFT, window functions, MelWeightMatrix ----------===//
//
// DFT (opsets 17, 20) is computed directly, O(n^2) per transformed line, in
// f64: the angle of every twiddle factor is reduced exactly (k*n mod N in
// integers) before sin/cos. Complex values are a trailing axis of 2 (real,
// imaginary); real inputs have a trailing axis of 1. onesided=1 with
// inverse=0 returns the first N/2+1 bins (RFFT); with inverse=1 it takes a
// one-sided spectrum, extends it by conjugate symmetry (ignoring bins past
// N/2) and returns the real signal (IRFFT). The axis is an attribute at
// opset 17 (default 1) and a constant input at 20 (default -2); dft_length
// is a constant input (it determines the output shape).
//
// STFT (17) runs the same DFT on frames of the signal, multiplied by the
// optional window. HannWindow, HammingWindow and BlackmanWindow (17) are
// cosine sums over n / size (periodic) or n / (size - 1) (symmetric).
// MelWeightMatrix (17) builds triangular filters between mel-spaced bins.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

const double TwoPi = 6.283185307179586476925286766559;

Expr f64(double v) { return constant(DType::F64, v); }

/// cos/sin of 2*pi*m/N for an Index m in [0, N).
Expr angle(const Expr &m, int64_t N) {
  return cast(DType::F64, m) * (TwoPi / (double)N);
}

void requireScalarInt(const ir::Node &n, size_t i) {
  requireDType(n, i, {DType::I32, DType::I64});
}

/// One scalar from a constant input.
int64_t constScalar(const ir::Node &n, size_t i, const char *why) {
  std::vector<int64_t> v = n.constInputInts(i, why);
  if (v.size() != 1)
    n.error() << "input " << i << " must be a scalar, got " << v.size()
              << " elements";
  return v[0];
}

// --- DFT ------------------------------------------------------------------

struct DftParams {
  int64_t Axis = 0;
  int64_t Len = 0; ///< dft_length
  bool Inverse = false, Onesided = false, ComplexIn = false;
  Shape Out;
};

DftParams dftParams(const ir::Node &n) {
  DftParams p;
  const Shape &x = n.inShape(0);
  int64_t r = (int64_t)x.size();
  if (r < 2 || (x.back() != 1 && x.back() != 2))
    n.error() << "input must have rank 2 or more with a last dimension of 1 "
                 "(real) or 2 (complex), got "
              << shapeToString(x);
  p.ComplexIn = x.back() == 2;
  p.Inverse = n.attrInt("inverse", 0) != 0;
  p.Onesided = n.attrInt("onesided", 0) != 0;
  int64_t axis;
  if (n.Opset >= 20) {
    axis = -2;
    if (n.hasInput(2))
      axis = constScalar(n, 2, "the axis determines the output shape");
  } else {
    axis = n.attrInt("axis", 1);
  }
  int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a > r - 2)
    n.error() << "axis " << axis << " is out of range for rank " << r
              << " (the last axis holds complex components)";
  p.Axis = a;
  int64_t dim = x[(size_t)a];
  bool irfft = p.Onesided && p.Inverse;
  if (irfft && !p.ComplexIn)
    n.error() << "onesided inverse DFT needs a complex input";
  if (n.hasInput(1)) {
    requireScalarInt(n, 1);
    p.Len = constScalar(n, 1, "dft_length determines the output shape");
  } else {
    p.Len = irfft ? 2 * (dim - 1) : dim;
  }
  if (p.Len < 1)
    n.error() << "dft_length " << p.Len << " must be positive";
  p.Out = x;
  if (p.Onesided && !p.Inverse)
    p.Out[(size_t)a] = p.Len / 2 + 1;
  else
    p.Out[(size_t)a] = p.Len;
  p.Out.back() = irfft ? 1 : 2;
  return p;
}

void inferDft(ir::Node &n) {
  requireFloat(n, 0);
  DftParams p = dftParams(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerDft(LowerCtx &c) {
  DftParams p = dftParams(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  size_t ax = (size_t)p.Axis;
  int64_t N = p.Len, dim = x.shape()[ax];
  Shape loopShape(p.Out.begin(), p.Out.end() - 1);
  bool irfft = p.Onesided && p.Inverse;
  auto loadX = [&](const std::vector<Expr> &o, const Expr &j, int comp) {
    std::vector<Expr> xi = o;
    xi[ax] = j;
    xi.push_back(indexConst(comp));
    return cast(DType::F64, x.load(xi));
  };
  b.loops(loopShape, [&](const std::vector<Expr> &o) {
    Expr k = o[ax];
    Local re = b.local("re", f64(0.0)), im = b.local("im", f64(0.0));
    if (irfft) {
      // Hermitian extension of the one-sided spectrum X[0..N/2].
      b.loop("k", N, [&](Expr f) {
        Expr upper = gt(f, indexConst(N / 2));
        Expr j = select(upper, indexConst(N) - f, f);
        Expr ok = lt(j, indexConst(dim));
        Expr js = min(j, indexConst(dim - 1));
        Expr xr = select(ok, loadX(o, js, 0), f64(0.0));
        Expr xi = select(ok, loadX(o, js, 1), f64(0.0));
        xi = select(upper, -xi, xi);
        Local th = b.local("th", angle((f * k) % N, N));
        b.set(re, re.get() + xr * unary(UnOp::Cos, th.get()) -
                      xi * unary(UnOp::Sin, th.get()));
      });
      std::vector<Expr> yi = o;
      yi.push_back(indexConst(0));
      y.store(yi, cast(y.computeType(), re.get() / (double)N));
      return;
    }
    b.loop("n", std::min(N, dim), [&](Expr t) {
      Expr xr = loadX(o, t, 0);
      Expr xi = p.ComplexIn ? loadX(o, t, 1) : f64(0.0);
      Local th = b.local("th", angle((t * k) % N, N));
      Local cs = b.local("cs", unary(UnOp::Cos, th.get()));
      Local sn = b.local("sn", unary(UnOp::Sin, th.get()));
      if (p.Inverse) { // e^{+i th}
        b.set(re, re.get() + xr * cs.get() - xi * sn.get());
        b.set(im, im.get() + xr * sn.get() + xi * cs.get());
      } else { // e^{-i th}
        b.set(re, re.get() + xr * cs.get() + xi * sn.get());
        b.set(im, im.get() - xr * sn.get() + xi * cs.get());
      }
    });
    double scale = p.Inverse ? 1.0 / (double)N : 1.0;
    std::vector<Expr> yi = o;
    yi.push_back(indexConst(0));
    y.store(yi, cast(y.computeType(), re.get() * scale));
    yi.back() = indexConst(1);
    y.store(yi, cast(y.computeType(), im.get() * scale));
  }, "o");
}

// --- STFT -----------------------------------------------------------------

struct StftParams {
  int64_t Step = 0, Frames = 0, FrameLen = 0, Bins = 0;
  bool ComplexIn = false, HaveWindow = false;
};

StftParams stftParams(const ir::Node &n) {
  StftParams p;
  const Shape &x = n.inShape(0);
  if (x.size() != 3 || (x[2] != 1 && x[2] != 2))
    n.error() << "signal must have shape [batch, length, 1 or 2], got "
              << shapeToString(x);
  p.ComplexIn = x[2] == 2;
  requireScalarInt(n, 1);
  p.Step = constScalar(n, 1, "frame_step determines the output shape");
  if (p.Step < 1)
    n.error() << "frame_step " << p.Step << " must be positive";
  p.HaveWindow = n.hasInput(2);
  int64_t winLen = -1;
  if (p.HaveWindow) {
    if (n.inShape(2).size() != 1)
      n.error() << "window must have rank 1, got " << shapeToString(n.inShape(2));
    winLen = n.inShape(2)[0];
  }
  if (n.hasInput(3)) {
    requireScalarInt(n, 3);
    p.FrameLen = constScalar(n, 3, "frame_length determines the output shape");
    if (winLen >= 0 && winLen != p.FrameLen)
      n.error() << "window length " << winLen << " differs from frame_length "
                << p.FrameLen;
  } else if (winLen >= 0) {
    p.FrameLen = winLen;
  } else {
    n.error() << "one of window and frame_length is required";
  }
  if (p.FrameLen < 1 || p.FrameLen > x[1])
    n.error() << "frame length " << p.FrameLen << " must be in [1, " << x[1] << "]";
  p.Frames = (x[1] - p.FrameLen) / p.Step + 1;
  bool onesided = n.attrInt("onesided", 1) != 0;
  if (onesided && p.ComplexIn)
    n.error() << "onesided output needs a real signal";
  p.Bins = onesided ? p.FrameLen / 2 + 1 : p.FrameLen;
  return p;
}

void inferStft(ir::Node &n) {
  requireFloat(n, 0);
  if (n.hasInput(2) && n.inDType(2) != n.inDType(0))
    n.error() << "window has type " << dtypeOnnxName(n.inDType(2))
              << " but the signal has " << dtypeOnnxName(n.inDType(0));
  StftParams p = stftParams(n);
  n.setOutput(0, n.inDType(0), {n.inShape(0)[0], p.Frames, p.Bins, 2});
}

void lowerStft(LowerCtx &c) {
  StftParams p = stftParams(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  std::optional<TensorRef> win;
  if (p.HaveWindow)
    win = c.in(2);
  KernelBuilder &b = c.b();
  int64_t N = p.FrameLen;
  b.loops({x.shape()[0], p.Frames, p.Bins}, [&](const std::vector<Expr> &o) {
    Expr bi = o[0], fr = o[1], k = o[2];
    Local re = b.local("re", f64(0.0)), im = b.local("im", f64(0.0));
    b.loop("n", N, [&](Expr t) {
      Expr pos = fr * p.Step + t;
      Expr w = win ? cast(DType::F64, win->load({t})) : f64(1.0);
      Expr xr = cast(DType::F64, x.load({bi, pos, indexConst(0)})) * w;
      Expr xi = p.ComplexIn ? cast(DType::F64, x.load({bi, pos, indexConst(1)})) * w
                            : f64(0.0);
      Local th = b.local("th", angle((t * k) % N, N));
      Local cs = b.local("cs", unary(UnOp::Cos, th.get()));
      Local sn = b.local("sn", unary(UnOp::Sin, th.get()));
      b.set(re, re.get() + xr * cs.get() + xi * sn.get());
      b.set(im, im.get() - xr * sn.get() + xi * cs.get());
    });
    y.store({bi, fr, k, indexConst(0)}, cast(y.computeType(), re.get()));
    y.store({bi, fr, k, indexConst(1)}, cast(y.computeType(), im.get()));
  }, "o");
}

// --- Windows --------------------------------------------------------------

DType outputDatatype(const ir::Node &n) {
  int64_t code = n.attrInt("output_datatype", 1);
  std::optional<DType> t = dtypeFromOnnx(code);
  if (!t || !(isFloat(*t) || (isInteger(*t) && *t != DType::Index)))
    n.error() << "output_datatype " << code << " is not a numeric type";
  if (!isStorable(*t))
    n.error(ErrorKind::Unsupported) << "output_datatype " << dtypeOnnxName(*t)
                                    << " is not supported";
  return *t;
}

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

// --- MelWeightMatrix ------------------------------------------------------

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

MLCC_OPS(Signal) {
  for (int64_t v : {17, 20})
    R.add({.Name = "DFT", .SinceVersion = v, .Fusion = FusionClass::Opaque,
           .Infer = inferDft, .Lower = lowerDft});
  R.add({.Name = "STFT", .SinceVersion = 17, .Fusion = FusionClass::Opaque,
         .Infer = inferStft, .Lower = lowerStft});
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
  R.add({.Name = "MelWeightMatrix", .SinceVersion = 17,
         .Fusion = FusionClass::Opaque, .Infer = inferMel, .Lower = lowerMel});
}

} // namespace mlcc::ops
