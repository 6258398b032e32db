//===- ContractionTest.cpp - Float contraction schedules ------------------===//
//
// The schedules of the float convolutions and matrix products that only
// some shapes reach on a real target, run through the interpreter against the
// definition: the register-tiled generator's cache-blocked form (forced by
// tiny caches), its pixels-as-columns form, the depthwise convolution's
// flattened grid, Winograd F(2x2, 3x3).
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Compiles `model` for `target`, runs it on randomValues(x, 3), checks that
/// its kernels contain `expect` (the schedule under test) and that the
/// result equals `ref` within float rounding of sums of `terms` products.
void check(const std::string &model, const Shape &x, const TargetDesc &target,
           const std::string &expect, const std::vector<float> &ref, int64_t terms) {
  std::string text;
  std::vector<float> got = compileAndRun(model, target, randomValues(x, 3), &text);
  INFO(text.substr(0, 6000));
  CHECK(text.find(expect) != std::string::npos);
  REQUIRE(got.size() == ref.size());
  double tol = 2e-7 * (double)terms;
  size_t bad = 0, nonzero = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    nonzero += ref[i] != 0.0f;
    if (std::fabs(got[i] - ref[i]) > tol && bad++ == 0)
      UNSCOPED_INFO("first difference at " << i << ": " << got[i] << " vs " << ref[i]
                                           << " (tolerance " << tol << ")");
  }
  CHECK(bad == 0);
  CHECK(nonzero > ref.size() / 4); // the Relu keeps about half
}

} // namespace

TEST_CASE("cache-blocked convolutions equal the definition", "[contraction]") {
  // 20 input channels x 3x3 taps: 180 reduction steps, blocked in slices of
  // whole input channels (the last block partial), over row blocks of the
  // 7x9 output pixels (the last one partial), with 40 output channels (a
  // partial panel).
  std::string model = oneNodeModel("Conv", {1, 20, 7, 9}, {40, 20, 3, 3}, {40}, {1, 40, 7, 9},
                                   {{"kernel_shape", 3}, {"pads", 1}});
  check(model, {1, 20, 7, 9}, avx512(2048, 4096), "kb in",
        referenceConv({1, 20, 7, 9}, 40, 3, 1, 1, 1), 180);
}

TEST_CASE("cache-blocked matrix products equal the definition", "[contraction]") {
  const int64_t M = 37, K = 70, N = 50;
  std::string model = oneNodeModel("Gemm", {M, K}, {K, N}, {N}, {M, N}, {});
  std::vector<float> a = randomValues({M, K}, 3), w = randomValues({K, N}, 1),
                     b = randomValues({N}, 2), y((size_t)(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = b[(size_t)j];
      for (int64_t k = 0; k < K; ++k)
        acc += (double)a[(size_t)(i * K + k)] * w[(size_t)(k * N + j)];
      y[(size_t)(i * N + j)] = (float)std::max(acc, 0.0);
    }
  check(model, {M, K}, avx512(2048, 4096), "kb in", y, K);
}

TEST_CASE("depthwise convolutions over a flattened grid equal the definition",
          "[contraction]") {
  for (int64_t stride : {1, 2}) {
    INFO("stride " << stride);
    int64_t out = (9 + 2 * 2 - 5) / stride + 1;
    std::string model =
        oneNodeModel("Conv", {1, 6, 9, 9}, {6, 1, 5, 5}, {6}, {1, 6, out, out},
                     {{"kernel_shape", 5}, {"pads", 2}, {"strides", stride}, {"group", 6}});
    check(model, {1, 6, 9, 9}, avx512(0, 0), "grid",
          referenceConv({1, 6, 9, 9}, 6, 5, 2, stride, 6), 25);
  }
}

TEST_CASE("short-reduction convolutions with pixels as columns equal the definition",
          "[contraction]") {
  // 3 channels x 3x3 taps (27 steps), stride 2: each output row's 20 pixels
  // are the tile's columns (two overlapping panels of 16), read from the
  // padded input with a stride-2 vector load.
  std::string model = oneNodeModel("Conv", {1, 3, 11, 40}, {20, 3, 3, 3}, {20}, {1, 20, 6, 20},
                                   {{"kernel_shape", 3}, {"pads", 1}, {"strides", 2}});
  check(model, {1, 3, 11, 40}, avx512(32768, 524288), "step 2",
        referenceConv({1, 3, 11, 40}, 20, 3, 1, 2, 1), 27);
}

TEST_CASE("Winograd F(2x2, 3x3) convolutions equal the definition", "[contraction]") {
  // Stride-1 3x3 convolutions with 64+ input channels run as Winograd
  // products; the transformed input tiles live in the stack buffer "wv".
  // A 31x31 output leaves partial tiles at the right and bottom edges
  // (blocks of 4 rows of 16 tiles); a small cache makes blocks of 2 rows of
  // 8 tiles over 9 rows, the last block shifted back over the one before.
  struct Case {
    Shape X;
    int64_t M, Pad, L2;
  };
  for (const Case &k : {Case{{1, 64, 31, 31}, 24, 1, 524288}, Case{{1, 64, 34, 34}, 16, 0, 524288},
                        Case{{1, 64, 18, 16}, 32, 1, 131072}}) {
    int64_t oh = k.X[2] + 2 * k.Pad - 2, ow = k.X[3] + 2 * k.Pad - 2;
    INFO("input " << shapeToString(k.X) << ", " << k.M << " outputs, pads " << k.Pad);
    std::string model = oneNodeModel("Conv", k.X, {k.M, k.X[1], 3, 3}, {k.M}, {1, k.M, oh, ow},
                                     {{"kernel_shape", 3}, {"pads", k.Pad}});
    check(model, k.X, avx512(32768, k.L2), "wv", referenceConv(k.X, k.M, 3, k.Pad, 1, 1),
          9 * k.X[1]);
  }
}
