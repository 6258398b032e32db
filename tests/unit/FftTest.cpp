//===- FftTest.cpp - DFT on the mixed-radix FFT ---------------------------===//
//
// DFT nodes compiled for the host (the plan's FFT where the length factors
// into small radices, the direct DFT otherwise) and run through the
// interpreter against the definition in double.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"
#include "compiler/ops/Signal.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// DFT (opset 17, axis 1) of x [1, L, C] (C 1: real, 2: complex) with
/// dft_length N, compiled for the host (the plan's FFT where N factors
/// into small radices) and run by the interpreter, against the definition
/// in double. An f32 FFT's error grows like log N times the rounding of
/// the line's norm: the tolerance is 1e-5 of the sum of |x| (the bound of
/// every output).
void checkDft(int64_t L, int64_t C, int64_t N, bool inverse, bool onesided) {
  INFO("L " << L << " C " << C << " N " << N << " inverse " << inverse << " onesided "
            << onesided);
  const bool irfft = inverse && onesided;
  const int64_t bins = irfft ? N : onesided ? N / 2 + 1 : N, outC = irfft ? 1 : 2;
  pb::Model m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  pb::Graph *g = m.mutable_graph();
  g->set_name("g");
  addFloatInfo(g->add_input(), "X", {1, L, C});
  pb::Tensor *len = g->add_initializer();
  len->set_name("len");
  len->set_data_type(7);
  len->add_int64_data(N);
  pb::Node *n = g->add_node();
  n->set_op_type("DFT");
  n->set_name("dft");
  n->add_input("X");
  n->add_input("len");
  n->add_output("Y");
  for (auto [name, v] : {std::pair<const char *, int64_t>{"inverse", inverse},
                         {"onesided", onesided}}) {
    pb::Attribute *a = n->add_attribute();
    a->set_name(name);
    a->set_type(2);
    a->set_i(v);
  }
  addFloatInfo(g->add_output(), "Y", {1, bins, outC});
  std::vector<float> x = randomValues({1, L, C}, (unsigned)(N * 7 + L));
  std::string text;
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), x, &text);
  {
    // The FFT's kernel computes no sine or cosine (the twiddles are a
    // table); the direct DFT (N with a large prime factor) does.
    INFO(text.substr(0, 2000));
    CHECK((text.find("cos(") == std::string::npos) == ops::fftRadices(N).has_value());
  }
  auto at = [&](int64_t t, int64_t comp) -> double {
    return t < L && comp < C ? x[(size_t)(t * C + comp)] : 0.0;
  };
  double norm = 0;
  for (float v : x)
    norm += std::fabs(v);
  const double twoPi = 6.283185307179586, sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (int64_t t = 0; t < N; ++t) {
      double xr, xi;
      if (irfft) { // the Hermitian extension of the one-sided input
        bool upper = t > N / 2;
        int64_t j = upper ? N - t : t;
        xr = at(j, 0);
        xi = upper ? -at(j, 1) : at(j, 1);
      } else {
        xr = at(t, 0);
        xi = at(t, 1);
      }
      double th = twoPi * (double)((t * k) % N) / (double)N;
      re += xr * std::cos(th) - sign * xi * std::sin(th);
      im += sign * xr * std::sin(th) + xi * std::cos(th);
    }
    if (inverse) {
      re /= (double)N;
      im /= (double)N;
    }
    INFO("bin " << k);
    CHECK(std::fabs(got[(size_t)(k * outC)] - re) <= 1e-5 * norm);
    if (!irfft)
      CHECK(std::fabs(got[(size_t)(k * outC + 1)] - im) <= 1e-5 * norm);
  }
}

} // namespace

TEST_CASE("DFT on the mixed-radix FFT equals the definition", "[fft]") {
  CHECK(ops::fftRadices(512) == std::vector<int64_t>{4, 4, 4, 4, 2});
  CHECK(ops::fftRadices(400) == std::vector<int64_t>{4, 4, 5, 5});
  CHECK(ops::fftRadices(1) == std::vector<int64_t>{});
  CHECK(!ops::fftRadices(17)); // a prime above kMaxFftRadix: the direct DFT
  for (int64_t n : {1, 2, 3, 5, 8, 10, 12, 13, 16, 17, 60, 400, 512}) {
    checkDft(n, 1, n, false, false);      // real input, both halves
    checkDft(n, 2, n, false, false);      // complex
    checkDft(n, 2, n, true, false);       // inverse
    checkDft(n, 1, n, false, true);       // one-sided (RFFT)
    checkDft(n / 2 + 1, 2, n, true, true); // IRFFT
  }
  checkDft(7, 1, 12, false, true); // zero-padded
  checkDft(20, 2, 12, false, false); // truncated
  checkDft(20, 1, 16, false, false);
}
