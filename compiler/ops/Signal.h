//===- Signal.h - The FFT plan of DFT and STFT -----------------------------===//
//
// DFT and STFT whose transform length factors into radices of at most
// kMaxFftRadix run on a mixed-radix FFT in their compute type (f32 for
// f16/bf16/f32, f64 for f64) when plan-kernels gives them the plan Fft;
// pack-weights then adds the table of twiddle factors fftTwiddles() as an
// input. Without the plan (a GPU target, a length with a large prime
// factor, mlcc check's reference) they compute the DFT directly in f64.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/support/Tensor.h"

#include <optional>
#include <vector>

namespace mlcc::ops {

/// The largest radix of a stage (a larger prime factor would unroll into
/// a butterfly of radix^2 products).
constexpr int64_t kMaxFftRadix = 16;

/// The radices of the FFT stages of length `n` (fours, then twos, then
/// odd primes in increasing order), or nothing when a prime factor is
/// larger than kMaxFftRadix.
std::optional<std::vector<int64_t>> fftRadices(int64_t n);

/// The transform length of a DFT or STFT node (its dft_length or frame
/// length), or 0 for any other node.
int64_t transformLength(const ir::Node &n);

/// The twiddle factors e^{-2 pi i m / n} for m in [0, n) as an [n, 2]
/// tensor (real, imaginary) of type `t`, exact at the multiples of n/4.
Tensor fftTwiddles(DType t, int64_t n);

/// The input of a DFT or STFT node that pack-weights gives the twiddles.
size_t fftTwiddleInput(const ir::Node &n);

} // namespace mlcc::ops
