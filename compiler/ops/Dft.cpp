//===- Dft.cpp - DFT ------------------------------------------------------===//
//
// DFT (opsets 17, 20) with the plan Fft (see Signal.h) runs on the
// mixed-radix FFT of Fft.h, one line of the transformed axis at a time.
// Without the plan it is computed directly, O(n^2) per transformed line, in
// f64: the angle of every twiddle factor is reduced exactly (k*n mod N in
// integers) before sin/cos. Complex values are a trailing axis of 2 (real,
// imaginary); real inputs have a trailing axis of 1. onesided=1 with
// inverse=0 returns the first N/2+1 bins (RFFT); with inverse=1 it takes a
// one-sided spectrum, extends it by conjugate symmetry (ignoring bins past
// N/2) and returns the real signal (IRFFT). The axis is an attribute at
// opset 17 (default 1) and a constant input at 20 (default -2); dft_length
// is a constant input (it determines the output shape).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Fft.h"
#include "compiler/ops/SignalCommon.h"

#include <functional>

namespace mlcc::ops {

using namespace kir;

namespace {

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

} // namespace

int64_t dftLength(const ir::Node &n) { return dftParams(n).Len; }

MLCC_OPS(Dft) {
  for (int64_t v : {17, 20})
    R.add({.Name = "DFT", .SinceVersion = v, .Fusion = FusionClass::Opaque,
           .Infer = inferDft, .Lower = lowerDft});
}

} // namespace mlcc::ops
