//===- Signal.cpp - DFT, STFT, window functions, MelWeightMatrix ----------===//
//
// DFT (opsets 17, 20) with the plan Fft (see Signal.h) runs on a
// mixed-radix Stockham FFT: each line of the transformed axis is copied into
// a scratch buffer of two ping-pong planes (real and imaginary parts apart),
// then each stage of radix R (4, 2, 3, other primes up to kMaxFftRadix)
// reads R points N/R apart, multiplies them by the twiddles of the table
// that pack-weights adds (e^{-2 pi i m/N}, conjugated for the inverse),
// computes an R-point DFT and writes them Ns apart (Ns the product of the
// radices before it), so the result ends in natural order without a bit
// reversal; O(N log N) per line in the compute type. Without the plan it is
// computed directly, O(n^2) per transformed line, in f64: the angle of
// every twiddle factor is reduced exactly (k*n mod N in integers) before
// sin/cos. Complex values are a trailing axis of 2 (real,
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
#include "compiler/ops/Signal.h"

#include "compiler/ops/Lowering.h"

#include <cmath>
#include <functional>

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

// --- FFT ------------------------------------------------------------------

/// e^{-2 pi i m / n}, exact at the multiples of n/4.
std::pair<double, double> unitRoot(int64_t m, int64_t n) {
  m %= n;
  if (m < 0)
    m += n;
  if ((4 * m) % n == 0) {
    switch (4 * m / n) {
    case 0: return {1.0, 0.0};
    case 1: return {0.0, -1.0};
    case 2: return {-1.0, 0.0};
    default: return {0.0, 1.0};
    }
  }
  const long double twoPi = 6.283185307179586476925286766559L;
  long double a = twoPi * (long double)m / (long double)n;
  return {(double)std::cos(a), (double)-std::sin(a)};
}

/// A complex value of the kernel.
struct Cx {
  Expr Re, Im;
};

Cx operator+(const Cx &a, const Cx &b) { return {a.Re + b.Re, a.Im + b.Im}; }
Cx operator-(const Cx &a, const Cx &b) { return {a.Re - b.Re, a.Im - b.Im}; }
Cx operator*(const Cx &a, const Cx &w) {
  return {a.Re * w.Re - a.Im * w.Im, a.Re * w.Im + a.Im * w.Re};
}
/// a times the constant (c, s), without the products by zero.
Cx times(const Cx &a, double c, double s) {
  auto scaled = [](const Expr &e, double f) { return f == 1.0 ? e : f == -1.0 ? -e : e * f; };
  if (s == 0.0)
    return {scaled(a.Re, c), scaled(a.Im, c)};
  if (c == 0.0)
    return {scaled(a.Im, -s), scaled(a.Re, s)};
  return {a.Re * c - a.Im * s, a.Re * s + a.Im * c};
}

/// Point f of the Hermitian extension of a one-sided spectrum X[0..dim)
/// to n points: X[f] up to n/2, conj X[n - f] past it, 0 past the input's
/// end; `load(j, comp)` reads component comp of X[j].
Cx hermitianAt(const Expr &f, int64_t n, int64_t dim,
               const std::function<Expr(const Expr &, int)> &load, const Expr &zero) {
  Expr upper = gt(f, indexConst(n / 2));
  Expr j = select(upper, indexConst(n) - f, f);
  Expr ok = lt(j, indexConst(dim));
  Expr js = min(j, indexConst(dim - 1));
  Expr xi = select(ok, load(js, 1), zero);
  return {select(ok, load(js, 0), zero), select(upper, -xi, xi)};
}

/// One line's FFT in a scratch buffer of 4 N elements: planes 0 and 1,
/// each N real parts then N imaginary parts. put() fills plane 0, run()
/// computes the stages, re()/im() read the result.
class FftLine {
public:
  /// A transform of length n with the twiddles of a table of n * stride.
  FftLine(KernelBuilder &b, TensorRef work, TensorRef twiddles, int64_t n, bool inverse,
          int64_t stride = 1)
      : B(b), Work(std::move(work)), Tw(std::move(twiddles)), N(n), Inverse(inverse),
        Stride(stride), Radices(*fftRadices(n)) {}

  void put(const Expr &t, const Expr &re, const Expr &im) {
    Work.storeFlat(at(0, 0, t), re);
    Work.storeFlat(at(0, 1, t), im);
  }
  void run() {
    int64_t ns = 1;
    int src = 0;
    for (int64_t r : Radices) {
      stage(src, 1 - src, r, ns);
      src = 1 - src;
      ns *= r;
    }
    Final = src;
  }
  Expr re(const Expr &k) const { return Work.loadFlat(at(Final, 0, k)); }
  Expr im(const Expr &k) const { return Work.loadFlat(at(Final, 1, k)); }

private:
  Expr at(int plane, int part, const Expr &i) const {
    return indexConst((2 * plane + part) * N) + i;
  }
  Cx keep(const Cx &v, const char *name) {
    return {B.local(std::string(name) + "r", v.Re).get(),
            B.local(std::string(name) + "i", v.Im).get()};
  }
  /// The stage of radix `r` after radices whose product is `ns`: point
  /// j = jh*ns + k of the sub-transforms, read N/r apart, written ns apart.
  void stage(int src, int dst, int64_t r, int64_t ns) {
    int64_t span = N / r, step = N / (ns * r);
    auto body = [&](const Expr &jh, const Expr &k) {
      Expr j = jh * ns + k;
      std::vector<Cx> v;
      for (int64_t q = 0; q < r; ++q) {
        Expr i = j + q * span;
        Cx x{Work.loadFlat(at(src, 0, i)), Work.loadFlat(at(src, 1, i))};
        if (q > 0 && ns > 1) {
          Expr m = k * (q * step * Stride);
          Cx w{Tw.load({m, indexConst(0)}), Tw.load({m, indexConst(1)})};
          if (Inverse)
            w.Im = -w.Im;
          x = x * w;
        }
        v.push_back(keep(x, "v"));
      }
      std::vector<Cx> y = butterfly(v);
      Expr d = jh * (ns * r) + k;
      for (int64_t q = 0; q < r; ++q) {
        Work.storeFlat(at(dst, 0, d + q * ns), y[(size_t)q].Re);
        Work.storeFlat(at(dst, 1, d + q * ns), y[(size_t)q].Im);
      }
    };
    B.loop("fj", N / (r * ns), [&](Expr jh) {
      if (ns == 1)
        body(jh, indexConst(0));
      else
        B.loop("fk", ns, [&](Expr k) { body(jh, k); });
    });
  }
  /// The r-point DFT of v (forward: e^{-2 pi i qp/r}; inverse: conjugate).
  std::vector<Cx> butterfly(const std::vector<Cx> &v) {
    size_t r = v.size();
    double sign = Inverse ? -1.0 : 1.0; // applied to the imaginary parts
    if (r == 2)
      return {v[0] + v[1], v[0] - v[1]};
    if (r == 4) {
      Cx a0 = keep(v[0] + v[2], "a"), a1 = keep(v[0] - v[2], "a");
      Cx a2 = keep(v[1] + v[3], "a"), d = keep(v[1] - v[3], "a");
      Cx a3 = times(d, 0.0, -sign); // d * (-i), or * i for the inverse
      return {a0 + a2, a1 + a3, a0 - a2, a1 - a3};
    }
    if (r == 3) {
      Cx t = keep(v[1] + v[2], "t");
      Cx m = keep(Cx{v[0].Re - t.Re * 0.5, v[0].Im - t.Im * 0.5}, "m");
      Cx d = times(v[1] - v[2], 0.0, -sign * 0.86602540378443864676); // * -i sqrt(3)/2
      Cx dk = keep(d, "d");
      return {v[0] + t, m + dk, m - dk};
    }
    std::vector<Cx> y;
    for (size_t q = 0; q < r; ++q) {
      Cx acc = v[0];
      for (size_t p = 1; p < r; ++p) {
        auto [c, s] = unitRoot((int64_t)((p * q) % r), (int64_t)r);
        acc = acc + times(v[p], c, sign * s);
      }
      y.push_back(acc);
    }
    return y;
  }

  KernelBuilder &B;
  TensorRef Work, Tw;
  int64_t N;
  bool Inverse;
  int64_t Stride;
  std::vector<int64_t> Radices;
  int Final = 0;
};

/// The forward transform of a real line of even length N as a complex one
/// of N/2: z[n] = x[2n] + i x[2n+1], Z its transform, then for k in
/// [0, N/2]: X[k] = E + W^k O with E = (Z[k] + conj Z[N/2-k]) / 2 and
/// O = (Z[k] - conj Z[N/2-k]) / 2i (indices mod N/2). Half the work of the
/// complex transform, and the bins that are real (0 and N/2) come out with
/// an imaginary part of exactly zero.
class RealFft {
public:
  RealFft(KernelBuilder &b, const TensorRef &work, const TensorRef &twiddles, int64_t n)
      : B(b), Tw(twiddles), H(n / 2), Line(b, work, twiddles, n / 2, false, 2) {}

  /// The pair (x[2i], x[2i+1]) of the line.
  void put(const Expr &i, const Expr &even, const Expr &odd) { Line.put(i, even, odd); }
  void run() { Line.run(); }
  /// X[k] for k in [0, N/2].
  Cx bin(const Expr &k) {
    Expr i1 = k % H, i2 = (indexConst(H) - k) % H;
    Local ar = B.local("zr", Line.re(i1)), ai = B.local("zi", Line.im(i1));
    Local br = B.local("cr", Line.re(i2)), bi = B.local("ci", Line.im(i2));
    Cx e{(ar.get() + br.get()) * 0.5, (ai.get() - bi.get()) * 0.5};
    // (Z[k] - conj Z[N/2-k]) / 2i
    Cx o{(ai.get() + bi.get()) * 0.5, (br.get() - ar.get()) * 0.5};
    Cx w{Tw.load({k, indexConst(0)}), Tw.load({k, indexConst(1)})};
    return e + o * w;
  }

private:
  KernelBuilder &B;
  TensorRef Tw;
  int64_t H;
  FftLine Line;
};

/// Which transform a node's line runs.
struct Transform {
  std::optional<FftLine> Complex;
  std::optional<RealFft> Real;
};

/// The plan's FFT for a node of transform length n, if it has one: a
/// forward transform of a real line of even length on RealFft, any other
/// on FftLine.
std::optional<Transform> planFft(LowerCtx &c, DType t, int64_t n, bool inverse, bool realIn) {
  const ir::Node &node = c.node();
  if (!node.Plan.Fft || node.Plan.FftInput < 0 || !node.hasInput((size_t)node.Plan.FftInput) ||
      !fftRadices(n))
    return std::nullopt;
  TensorRef tw = c.in((size_t)node.Plan.FftInput);
  if (tw.shape() != Shape{n, 2} || tw.computeType() != t)
    node.error() << "the FFT's twiddle table has shape " << shapeToString(tw.shape())
                 << ", expected [" << n << ", 2]";
  Transform f;
  if (realIn && !inverse && n % 2 == 0)
    f.Real.emplace(c.b(), c.scratch("fft", t, {2 * n}), tw, n);
  else
    f.Complex.emplace(c.b(), c.scratch("fft", t, {4 * n}), tw, n, inverse);
  return f;
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
  if (std::optional<Transform> f =
          planFft(c, x.computeType(), N, p.Inverse, !p.ComplexIn)) {
    // One transform per line: the output's loops without the axis.
    Shape lines = loopShape;
    lines.erase(lines.begin() + (std::ptrdiff_t)ax);
    DType t = x.computeType();
    b.loops(lines, [&](const std::vector<Expr> &l) {
      auto along = [&](const Expr &i, int comp) {
        std::vector<Expr> o = l;
        o.insert(o.begin() + (std::ptrdiff_t)ax, i);
        o.push_back(indexConst(comp));
        return o;
      };
      Expr zero = constant(t, 0.0);
      // x[i] (component comp), zero past the input's end.
      auto xAt = [&](const Expr &i, int comp) {
        if (dim >= N)
          return x.load(along(i, comp));
        return select(lt(i, indexConst(dim)), x.load(along(min(i, indexConst(dim - 1)), comp)),
                      zero);
      };
      if (f->Real) {
        RealFft &r = *f->Real;
        b.loop("t", N / 2, [&](Expr i) { r.put(i, xAt(i * 2, 0), xAt(i * 2 + 1, 0)); });
        r.run();
        b.loop("k", N / 2 + 1, [&](Expr k) {
          Cx v = r.bin(k);
          y.store(along(k, 0), v.Re);
          y.store(along(k, 1), v.Im);
        });
        // The other half of a two-sided spectrum: X[k] = conj X[N-k].
        if (p.Out[ax] > N / 2 + 1)
          b.loop("k", indexConst(N / 2 + 1), indexConst(N), [&](Expr k) {
            Cx v = r.bin(indexConst(N) - k);
            y.store(along(k, 0), v.Re);
            y.store(along(k, 1), -v.Im);
          });
        return;
      }
      FftLine &line = *f->Complex;
      if (irfft) {
        b.loop("t", N, [&](Expr i) {
          Cx v = hermitianAt(
              i, N, dim, [&](const Expr &j, int comp) { return x.load(along(j, comp)); }, zero);
          line.put(i, v.Re, v.Im);
        });
      } else {
        b.loop("t", N, [&](Expr i) {
          line.put(i, xAt(i, 0), p.ComplexIn ? xAt(i, 1) : zero);
        });
      }
      line.run();
      double scale = p.Inverse ? 1.0 / (double)N : 1.0;
      b.loop("k", p.Out[ax], [&](Expr k) {
        Expr re = line.re(k), im = line.im(k);
        if (scale != 1.0) {
          re = re * scale;
          im = im * scale;
        }
        y.store(along(k, 0), re);
        if (!irfft)
          y.store(along(k, 1), im);
      });
    }, "o");
    return;
  }
  b.loops(loopShape, [&](const std::vector<Expr> &o) {
    Expr k = o[ax];
    Local re = b.local("re", f64(0.0)), im = b.local("im", f64(0.0));
    if (irfft) {
      // Hermitian extension of the one-sided spectrum X[0..N/2].
      b.loop("k", N, [&](Expr f) {
        Cx v = hermitianAt(
            f, N, dim, [&](const Expr &j, int comp) { return loadX(o, j, comp); }, f64(0.0));
        Expr xr = v.Re, xi = v.Im;
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

std::optional<std::vector<int64_t>> fftRadices(int64_t n) {
  std::vector<int64_t> r;
  if (n < 1)
    return std::nullopt;
  for (; n % 4 == 0; n /= 4)
    r.push_back(4);
  for (; n % 2 == 0; n /= 2)
    r.push_back(2);
  for (int64_t p = 3; n > 1; p += 2) {
    if (p > kMaxFftRadix)
      return std::nullopt;
    for (; n % p == 0; n /= p)
      r.push_back(p);
  }
  return r;
}

int64_t transformLength(const ir::Node &n) {
  if (!n.Domain.empty())
    return 0;
  if (n.OpType == "DFT")
    return dftParams(n).Len;
  if (n.OpType == "STFT")
    return stftParams(n).FrameLen;
  return 0;
}

Tensor fftTwiddles(DType t, int64_t n) {
  std::vector<double> v;
  v.reserve((size_t)(2 * n));
  for (int64_t m = 0; m < n; ++m) {
    auto [c, s] = unitRoot(m, n);
    v.push_back(c);
    v.push_back(s);
  }
  return Tensor::fromDoubles(t, {n, 2}, v);
}

size_t fftTwiddleInput(const ir::Node &n) { return n.OpType == "STFT" ? 4 : 3; }

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
