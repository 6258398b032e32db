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

#include "compiler/support/Float16.h"

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

namespace {

/// `model` (oneNodeModel's: X -> node -> Relu -> Y, float32) as a float16
/// graph: W and B rounded to float16, a Cast to float16 after X and one to
/// float32 before Y.
std::string asFloat16(const std::string &model) {
  pb::Model m;
  REQUIRE(m.ParseFromString(model));
  pb::Graph *g = m.mutable_graph();
  for (pb::Tensor &t : *g->mutable_initializer()) {
    std::vector<float> v(t.float_data().begin(), t.float_data().end());
    t.clear_float_data();
    t.set_data_type(10); // FLOAT16: the bits in int32_data
    for (float f : v)
      t.add_int32_data(floatToHalf(f));
  }
  for (pb::Node &n : *g->mutable_node()) {
    for (std::string &in : *n.mutable_input())
      if (in == "X")
        in = "Xh";
    for (std::string &out : *n.mutable_output())
      if (out == "Y")
        out = "Yh";
  }
  auto cast = [&](const std::string &from, const std::string &to, int64_t type) {
    pb::Node *c = addNode(g, "Cast", {from}, to);
    pb::Attribute *a = c->add_attribute();
    a->set_name("to");
    a->set_type(2);
    a->set_i(type);
  };
  cast("X", "Xh", 10);
  cast("Yh", "Y", 1);
  // The first Cast before the nodes that read it.
  auto *nodes = g->mutable_node();
  for (int i = nodes->size() - 2; i > 0; --i)
    nodes->SwapElements(i, i - 1);
  return m.SerializeAsString();
}

float roundHalf(float v) { return halfToFloat(floatToHalf(v)); }

/// A float16 Conv or Gemm case: the node, a piece of its kernel text that
/// the test expects (or empty), the shapes and attributes.
struct HalfCase {
  std::string Op, Expect;
  Shape X, W, Y;
  std::vector<std::pair<std::string, int64_t>> Attrs;
};

/// The case's float16 model (asFloat16) and its input, weights and bias
/// rounded to float16, as the model holds them.
struct HalfModel {
  std::string Model;
  std::vector<float> X, W, B;
};
HalfModel halfModel(const HalfCase &k) {
  const Shape bias = {k.Op == "Gemm" ? k.Y[1] : k.W[0]};
  HalfModel m{asFloat16(oneNodeModel(k.Op, k.X, k.W, bias, k.Y, k.Attrs)),
              randomValues(k.X, 3), randomValues(k.W, 1), randomValues(bias, 2)};
  for (std::vector<float> *v : {&m.X, &m.W, &m.B})
    for (float &f : *v)
      f = roundHalf(f);
  return m;
}

} // namespace

TEST_CASE("float16 convolutions and products take the float32 plans and equal the definition",
          "[contraction]") {
  // Each computes in f32 from float16 operands and rounds its output once:
  // the definition from the float16-rounded input and weights, in double,
  // rounded to float16, within half a float16 unit of its value (2^-11
  // relative) plus float32 rounding of the sum.
  const std::vector<HalfCase> cases = {
      // packed float16 weights, A staged in f32 per row tile (as vectors)
      {"Gemm", "] = f32x16(in0[", {37, 70}, {70, 50}, {37, 50}, {}},
      // 1x1: pixels as columns, the weights widened to f32 at compile time
      // (input 3 of the kernel)
      {"Conv", "in3: f32[", {1, 24, 9, 12}, {40, 24, 1, 1}, {1, 40, 9, 12},
       {{"kernel_shape", 1}}},
      // 3x3 over 64 channels: Winograd, U in f32
      {"Conv", "wv", {1, 64, 10, 10}, {16, 64, 3, 3}, {1, 16, 10, 10},
       {{"kernel_shape", 3}, {"pads", 1}}},
      // depthwise 3x3, stride 2: the plane staged in f32
      {"Conv", "grid", {1, 8, 15, 15}, {8, 1, 3, 3}, {1, 8, 8, 8},
       {{"kernel_shape", 3}, {"pads", 1}, {"strides", 2}, {"group", 8}}},
  };
  for (const HalfCase &k : cases) {
    INFO(k.Op << " " << shapeToString(k.X) << " x " << shapeToString(k.W));
    HalfModel hm = halfModel(k);
    const std::string &model = hm.Model;
    const std::vector<float> &x = hm.X, &w = hm.W, &b = hm.B;
    std::vector<float> ref;
    int64_t terms = 0;
    if (k.Op == "Gemm") {
      const int64_t M = k.X[0], K = k.X[1], N = k.W[1];
      terms = K;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = b[(size_t)j];
          for (int64_t kk = 0; kk < K; ++kk)
            acc += (double)x[(size_t)(i * K + kk)] * w[(size_t)(kk * N + j)];
          ref.push_back((float)std::max(acc, 0.0));
        }
    } else {
      int64_t pad = 0, stride = 1, group = 1;
      for (auto &[name, v] : k.Attrs) {
        pad = name == "pads" ? v : pad;
        stride = name == "strides" ? v : stride;
        group = name == "group" ? v : group;
      }
      terms = k.X[1] / group * k.W[2] * k.W[3];
      ref = referenceConv(k.X, k.W[0], k.W[2], pad, stride, group, roundHalf);
    }
    std::string text;
    std::vector<float> got = compileAndRun(model, avx512(32768, 524288), x, &text);
    INFO(text.substr(0, 4000));
    CHECK(text.find(k.Expect) != std::string::npos);
    REQUIRE(got.size() == ref.size());
    size_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      nonzero += ref[i] != 0.0f;
      double tol = std::fabs(ref[i]) * std::ldexp(1.0, -11) + 2e-7 * (double)terms;
      if (std::fabs(got[i] - ref[i]) > tol && bad++ == 0)
        UNSCOPED_INFO("first difference at " << i << ": " << got[i] << " vs " << ref[i]
                                             << " (tolerance " << tol << ")");
    }
    CHECK(bad == 0);
    CHECK(nonzero > ref.size() / 4);
  }
}

TEST_CASE("float16 tiles accumulate in float16 where the target has float16 arithmetic",
          "[contraction]") {
  // A NEON-shaped target with float16 arithmetic (Armv8.2-A FP16): the
  // float16 Conv and Gemm tiles keep float16 accumulators, panels and
  // products (8 lanes), and widen the finished sums to f32 for the
  // epilogue. The interpreter rounds each float16 operation as IEEE half
  // precision does, so the result equals, bit for bit, the definition
  // computed the same way: per output, acc = half(acc + half(x * w)) over
  // the reduction in order (channels, then kernel rows, then columns),
  // then half(relu(float(acc) + b)).
  TargetDesc neon = avx512(32768, 524288);
  neon.VectorBytes = 16;
  neon.HalfArithmetic = true;
  const std::vector<HalfCase> cases = {
      // packed float16 panels
      {"Gemm", "", {37, 70}, {70, 50}, {37, 50}, {}},
      // 1x1: pixels as columns, the float16 weights broadcast
      {"Conv", "", {1, 24, 9, 12}, {40, 24, 1, 1}, {1, 40, 9, 12}, {{"kernel_shape", 1}}},
      // 3x3 over few channels (no Winograd): pixels as rows, padded
      {"Conv", "", {1, 8, 10, 10}, {16, 8, 3, 3}, {1, 16, 10, 10},
       {{"kernel_shape", 3}, {"pads", 1}}},
  };
  auto half = [](float v) { return roundHalf(v); };
  for (const HalfCase &k : cases) {
    INFO(k.Op << " " << shapeToString(k.X) << " x " << shapeToString(k.W));
    const bool gemm = k.Op == "Gemm";
    HalfModel hm = halfModel(k);
    const std::string &model = hm.Model;
    const std::vector<float> &x = hm.X, &w = hm.W, &b = hm.B;
    std::vector<float> ref;
    auto finish = [&](float acc, int64_t o) {
      ref.push_back(half(std::max(acc + b[(size_t)o], 0.0f)));
    };
    if (gemm) {
      const int64_t M = k.X[0], K = k.X[1], N = k.W[1];
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float acc = 0;
          for (int64_t kk = 0; kk < K; ++kk)
            acc = half(acc + half(x[(size_t)(i * K + kk)] * w[(size_t)(kk * N + j)]));
          finish(acc, j);
        }
    } else {
      const int64_t C = k.X[1], H = k.X[2], Wd = k.X[3], M = k.W[0], R = k.W[2];
      const int64_t pad = R / 2;
      for (int64_t o = 0; o < M; ++o)
        for (int64_t oy = 0; oy < H; ++oy)
          for (int64_t ox = 0; ox < Wd; ++ox) {
            float acc = 0;
            for (int64_t c = 0; c < C; ++c)
              for (int64_t ky = 0; ky < R; ++ky)
                for (int64_t kx = 0; kx < R; ++kx) {
                  int64_t iy = oy + ky - pad, ix = ox + kx - pad;
                  if (iy < 0 || iy >= H || ix < 0 || ix >= Wd)
                    continue; // the padding's products are zeros
                  acc = half(acc + half(x[(size_t)((c * H + iy) * Wd + ix)] *
                                        w[(size_t)(((o * C + c) * R + ky) * R + kx)]));
                }
            finish(acc, o);
          }
    }
    std::string text;
    std::vector<float> got = compileAndRun(model, neon, x, &text);
    INFO(text.substr(0, 4000));
    // float16 accumulators
    CHECK(text.find("alloc acc: f16[") != std::string::npos);
    REQUIRE(got.size() == ref.size());
    size_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      nonzero += ref[i] != 0.0f;
      if (got[i] != ref[i] && bad++ == 0)
        UNSCOPED_INFO("first difference at " << i << ": " << got[i] << " vs " << ref[i]);
    }
    CHECK(bad == 0);
    CHECK(nonzero > ref.size() / 4);
    // The same model on the target without float16 arithmetic accumulates
    // in f32: not the float16 sums.
    TargetDesc f32 = neon;
    f32.HalfArithmetic = false;
    std::string plain;
    std::vector<float> wide = compileAndRun(model, f32, x, &plain);
    CHECK(plain.find("alloc acc: f32[") != std::string::npos);
    CHECK(wide != got);
  }
}
