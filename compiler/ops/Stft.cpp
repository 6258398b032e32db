//===- Stft.cpp - STFT ----------------------------------------------------===//
//
// STFT (17) runs the DFT of DFT's lowering on frames of the signal,
// multiplied by the optional window: on the mixed-radix FFT of Fft.h with
// the plan Fft (see Signal.h), else directly in f64.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Fft.h"
#include "compiler/ops/SignalCommon.h"

namespace mlcc::ops {

using namespace kir;

namespace {

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
  if (std::optional<Transform> f = planFft(c, x.computeType(), N, false, !p.ComplexIn)) {
    DType t = x.computeType();
    b.loops({x.shape()[0], p.Frames}, [&](const std::vector<Expr> &o) {
      Expr bi = o[0], fr = o[1];
      // The frame's sample i (component comp), windowed.
      auto at = [&](const Expr &i, int comp) {
        Expr v = x.load({bi, fr * p.Step + i, indexConst(comp)});
        return win ? v * win->load({i}) : v;
      };
      auto store = [&](const Expr &k, const Expr &re, const Expr &im) {
        y.store({bi, fr, k, indexConst(0)}, re);
        y.store({bi, fr, k, indexConst(1)}, im);
      };
      if (f->Real) {
        RealFft &r = *f->Real;
        b.loop("t", N / 2, [&](Expr i) { r.put(i, at(i * 2, 0), at(i * 2 + 1, 0)); });
        r.run();
        b.loop("k", std::min(p.Bins, N / 2 + 1), [&](Expr k) {
          Cx v = r.bin(k);
          store(k, v.Re, v.Im);
        });
        if (p.Bins > N / 2 + 1)
          b.loop("k", indexConst(N / 2 + 1), indexConst(N), [&](Expr k) {
            Cx v = r.bin(indexConst(N) - k);
            store(k, v.Re, -v.Im);
          });
        return;
      }
      FftLine &line = *f->Complex;
      b.loop("t", N, [&](Expr i) {
        line.put(i, at(i, 0), p.ComplexIn ? at(i, 1) : constant(t, 0.0));
      });
      line.run();
      b.loop("k", p.Bins, [&](Expr k) { store(k, line.re(k), line.im(k)); });
    }, "o");
    return;
  }
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

} // namespace

int64_t stftFrameLength(const ir::Node &n) { return stftParams(n).FrameLen; }

MLCC_OPS(Stft) {
  R.add({.Name = "STFT", .SinceVersion = 17, .Fusion = FusionClass::Opaque,
         .Infer = inferStft, .Lower = lowerStft});
}

} // namespace mlcc::ops
