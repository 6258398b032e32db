//===- Fft.cpp - The FFT engine of DFT and STFT ---------------------------===//
//
// The stages and butterflies of the mixed-radix FFT (Fft.h), the plan's
// transform for a node (planFft), and what Signal.h offers plan-kernels and
// pack-weights: the radices of a length, a node's transform length, the
// twiddle table and the input that holds it.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Fft.h"

#include "compiler/ops/SignalCommon.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

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

/// a times the constant (c, s), without the products by zero.
Cx times(const Cx &a, double c, double s) {
  auto scaled = [](const Expr &e, double f) { return f == 1.0 ? e : f == -1.0 ? -e : e * f; };
  if (s == 0.0)
    return {scaled(a.Re, c), scaled(a.Im, c)};
  if (c == 0.0)
    return {scaled(a.Im, -s), scaled(a.Re, s)};
  return {a.Re * c - a.Im * s, a.Re * s + a.Im * c};
}

} // namespace

void FftLine::run() {
  int64_t ns = 1;
  int src = 0;
  for (int64_t r : Radices) {
    stage(src, 1 - src, r, ns);
    src = 1 - src;
    ns *= r;
  }
  Final = src;
}

Cx FftLine::keep(const Cx &v, const char *name) {
  return {B.local(std::string(name) + "r", v.Re).get(),
          B.local(std::string(name) + "i", v.Im).get()};
}

/// The stage of radix `r` after radices whose product is `ns`: point
/// j = jh*ns + k of the sub-transforms, read N/r apart, written ns apart.
void FftLine::stage(int src, int dst, int64_t r, int64_t ns) {
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
std::vector<Cx> FftLine::butterfly(const std::vector<Cx> &v) {
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

Cx RealFft::bin(const Expr &k) {
  Expr i1 = k % H, i2 = (indexConst(H) - k) % H;
  Local ar = B.local("zr", Line.re(i1)), ai = B.local("zi", Line.im(i1));
  Local br = B.local("cr", Line.re(i2)), bi = B.local("ci", Line.im(i2));
  Cx e{(ar.get() + br.get()) * 0.5, (ai.get() - bi.get()) * 0.5};
  // (Z[k] - conj Z[N/2-k]) / 2i
  Cx o{(ai.get() + bi.get()) * 0.5, (br.get() - ar.get()) * 0.5};
  Cx w{Tw.load({k, indexConst(0)}), Tw.load({k, indexConst(1)})};
  return e + o * w;
}

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
    return dftLength(n);
  if (n.OpType == "STFT")
    return stftFrameLength(n);
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

} // namespace mlcc::ops
