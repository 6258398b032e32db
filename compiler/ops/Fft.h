//===- Fft.h - The FFT engine of DFT and STFT -----------------------------===//
//
// A mixed-radix Stockham FFT written into the kernel being built: each line
// of the transformed axis is copied into a scratch buffer of two ping-pong
// planes (real and imaginary parts apart), then each stage of radix R (4, 2,
// 3, other primes up to kMaxFftRadix) reads R points N/R apart, multiplies
// them by the twiddles of the table that pack-weights adds (e^{-2 pi i m/N},
// conjugated for the inverse), computes an R-point DFT and writes them Ns
// apart (Ns the product of the radices before it), so the result ends in
// natural order without a bit reversal; O(N log N) per line in the compute
// type. A real line of even length runs as a complex one of half the length
// (RealFft). planFft picks the transform for a node with the plan Fft.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ops/Lowering.h"
#include "compiler/ops/Signal.h"

#include <optional>

namespace mlcc::ops {

/// A complex value of the kernel.
struct Cx {
  Expr Re, Im;
};

inline Cx operator+(const Cx &a, const Cx &b) { return {a.Re + b.Re, a.Im + b.Im}; }
inline Cx operator-(const Cx &a, const Cx &b) { return {a.Re - b.Re, a.Im - b.Im}; }
inline Cx operator*(const Cx &a, const Cx &w) {
  return {a.Re * w.Re - a.Im * w.Im, a.Re * w.Im + a.Im * w.Re};
}

/// One line's FFT in a scratch buffer of 4 N elements: planes 0 and 1,
/// each N real parts then N imaginary parts. put() fills plane 0, run()
/// computes the stages, re()/im() read the result.
class FftLine {
public:
  /// A transform of length n with the twiddles of a table of n * stride.
  FftLine(kir::KernelBuilder &b, TensorRef work, TensorRef twiddles, int64_t n, bool inverse,
          int64_t stride = 1)
      : B(b), Work(std::move(work)), Tw(std::move(twiddles)), N(n), Inverse(inverse),
        Stride(stride), Radices(*fftRadices(n)) {}

  void put(const Expr &t, const Expr &re, const Expr &im) {
    Work.storeFlat(at(0, 0, t), re);
    Work.storeFlat(at(0, 1, t), im);
  }
  void run();
  Expr re(const Expr &k) const { return Work.loadFlat(at(Final, 0, k)); }
  Expr im(const Expr &k) const { return Work.loadFlat(at(Final, 1, k)); }

private:
  Expr at(int plane, int part, const Expr &i) const {
    return kir::indexConst((2 * plane + part) * N) + i;
  }
  Cx keep(const Cx &v, const char *name);
  /// The stage of radix `r` after radices whose product is `ns`: point
  /// j = jh*ns + k of the sub-transforms, read N/r apart, written ns apart.
  void stage(int src, int dst, int64_t r, int64_t ns);
  /// The r-point DFT of v (forward: e^{-2 pi i qp/r}; inverse: conjugate).
  std::vector<Cx> butterfly(const std::vector<Cx> &v);

  kir::KernelBuilder &B;
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
  RealFft(kir::KernelBuilder &b, const TensorRef &work, const TensorRef &twiddles, int64_t n)
      : B(b), Tw(twiddles), H(n / 2), Line(b, work, twiddles, n / 2, false, 2) {}

  /// The pair (x[2i], x[2i+1]) of the line.
  void put(const Expr &i, const Expr &even, const Expr &odd) { Line.put(i, even, odd); }
  void run() { Line.run(); }
  /// X[k] for k in [0, N/2].
  Cx bin(const Expr &k);

private:
  kir::KernelBuilder &B;
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
std::optional<Transform> planFft(LowerCtx &c, DType t, int64_t n, bool inverse, bool realIn);

} // namespace mlcc::ops
