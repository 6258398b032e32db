// Whole programs compiled in-process and run through the kernel
// interpreter (arena offsets as planned), for the schedules and storage
// decisions that only some shapes reach on a real target:
//  - the register-tiled generator's cache-blocked form (forced here by tiny
//    caches), its pixels-as-columns form, the depthwise convolution's
//    flattened grid: equal to a direct computation;
//  - Concat inputs written in place into the Concat's output (nested too).
#include "compiler/kernel/Interpreter.h"
#include "compiler/ops/Signal.h"
#include "compiler/pipeline/Pipeline.h"
#include "frontends/onnx/OnnxLoader.h"
#include "targets/llvm/HostJit.h"
#include "targets/llvm/Targets.h"
#include "frontends/onnx/OnnxSchema.pb.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlcc;

namespace {

namespace pb = ::mlcc::onnxpb;

void addFloatInfo(pb::ValueInfo *v, const std::string &name, const Shape &dims) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(1);
  for (int64_t d : dims)
    t->mutable_shape()->add_dim()->set_dim_value(d);
}

std::vector<float> randomValues(const Shape &dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v((size_t)numElements(dims));
  for (float &e : v)
    e = u(rng);
  return v;
}

/// `n` integers drawn uniformly from [lo, hi] (int8 weights, int32 biases).
std::vector<int64_t> randomInts(std::mt19937 &rng, int64_t n, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int64_t> v((size_t)n);
  for (auto &e : v)
    e = u(rng);
  return v;
}

void addInitializer(pb::Graph *g, const std::string &name, const Shape &dims,
                    const std::vector<float> &values) {
  pb::Tensor *t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(1);
  for (int64_t d : dims)
    t->add_dims(d);
  for (float v : values)
    t->add_float_data(v);
}

/// A model's graph with the float input "X" of shape `x`, opset 13.
pb::Graph *newGraph(pb::Model &m, const Shape &x) {
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  pb::Graph *g = m.mutable_graph();
  g->set_name("g");
  addFloatInfo(g->add_input(), "X", x);
  return g;
}

/// A model of one node `op` (input X; W and B initializers with the values
/// of randomValues(.., 1) and (.., 2)) and a Relu after it (a fused
/// epilogue).
std::string oneNodeModel(const std::string &op, const Shape &x, const Shape &w,
                         const Shape &bias, const Shape &y,
                         const std::vector<std::pair<std::string, int64_t>> &attrs) {
  pb::Model m;
  pb::Graph *g = newGraph(m, x);
  addInitializer(g, "W", w, randomValues(w, 1));
  addInitializer(g, "B", bias, randomValues(bias, 2));
  pb::Node *n = g->add_node();
  n->set_op_type(op);
  n->set_name("node");
  n->add_input("X");
  n->add_input("W");
  n->add_input("B");
  n->add_output("T");
  for (auto &[name, v] : attrs) {
    pb::Attribute *a = n->add_attribute();
    a->set_name(name);
    if (name == "kernel_shape" || name == "pads" || name == "strides") {
      a->set_type(7);
      int count = name == "pads" ? 4 : 2;
      for (int i = 0; i < count; ++i)
        a->add_ints(v);
    } else {
      a->set_type(2);
      a->set_i(v);
    }
  }
  pb::Node *r = g->add_node();
  r->set_op_type("Relu");
  r->set_name("relu");
  r->add_input("T");
  r->add_output("Y");
  addFloatInfo(g->add_output(), "Y", y);
  return m.SerializeAsString();
}

/// Compiles `model` for `target` and runs it on `x` with the interpreter.
/// With `choose`, plan-kernels picks each node's plan with it (--tune).
std::vector<float> compileAndRun(const std::string &model, const TargetDesc &target,
                                 const std::vector<float> &x, std::string *kernels,
                                 const passes::PlanChooser &choose = {}) {
  auto g = onnx::loadModelBytes(model, "test.onnx", "", {});
  PipelineOptions po;
  po.Name = "m";
  po.Target = target;
  po.ChoosePlan = choose;
  kir::Program p = runPipeline(*g, po);
  if (kernels)
    *kernels = kir::printProgram(p);
  REQUIRE(p.Inputs.size() == 1);
  REQUIRE(p.Outputs.size() == 1);
  std::vector<float> in = x, out((size_t)numElements(p.Outputs[0].Dims));
  std::vector<uint8_t> arena((size_t)p.ArenaSize + 64);
  std::vector<std::vector<uint8_t>> consts;
  for (const kir::ConstantData &c : p.Constants)
    consts.push_back(c.Bytes);
  for (const kir::Call &call : p.Calls) {
    std::vector<void *> args;
    for (const kir::Storage &s : call.Args) {
      switch (s.Kind) {
      case kir::StorageKind::Input:
        args.push_back(in.data());
        break;
      case kir::StorageKind::Output:
        args.push_back(out.data());
        break;
      case kir::StorageKind::Constant:
        args.push_back(consts[s.Index].data());
        break;
      case kir::StorageKind::Arena:
        args.push_back(arena.data() + p.ArenaBuffers[s.Index].Offset);
        break;
      case kir::StorageKind::Dims:
        FAIL("a program of fixed shapes reads no run-time dimension");
        break;
      }
    }
    kir::interpret(p.Kernels[call.KernelIndex], args);
  }
  return out;
}

TargetDesc avx512(int64_t l1, int64_t l2) {
  TargetDesc t;
  t.VectorBytes = 64;
  t.VectorRegisters = 32;
  t.Fma = true;
  t.L1Bytes = l1;
  t.L2Bytes = l2;
  t.CacheLineBytes = 64;
  t.StackBytes = 256 * 1024;
  return t;
}

/// relu(conv(x, w) + b) for NCHW x [1, C, H, W], square kernel k, equal
/// pads and strides, `group` groups: the definition, in double.
std::vector<float> referenceConv(const Shape &x, int64_t m, int64_t k, int64_t pad,
                                 int64_t stride, int64_t group) {
  int64_t c = x[1], h = x[2], wd = x[3], cg = c / group, mg = m / group;
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  std::vector<float> in = randomValues(x, 3), w = randomValues({m, cg, k, k}, 1),
                     b = randomValues({m}, 2), y((size_t)(m * oh * ow));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = b[(size_t)o];
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t ki = 0; ki < k; ++ki)
            for (int64_t kj = 0; kj < k; ++kj) {
              int64_t r = i * stride + ki - pad, q = j * stride + kj - pad;
              if (r < 0 || r >= h || q < 0 || q >= wd)
                continue;
              int64_t ch = o / mg * cg + ic;
              acc += (double)in[(size_t)((ch * h + r) * wd + q)] *
                     w[(size_t)(((o * cg + ic) * k + ki) * k + kj)];
            }
        y[(size_t)((o * oh + i) * ow + j)] = (float)std::max(acc, 0.0);
      }
  return y;
}

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

TEST_CASE("an LSTM with constant weights (gate rows, weights transposed) equals the definition",
          "[contraction]") {
  // X [S, B, I] -> LSTM (H hidden; W, R, B initializers) -> Y_h [1, B, H].
  const int64_t S = 5, Bn = 2, I = 3, H = 4, G = 4;
  pb::Model m;
  pb::Graph *g = newGraph(m, {S, Bn, I});
  std::vector<float> w = randomValues({1, G * H, I}, 1), r = randomValues({1, G * H, H}, 2),
                     bias = randomValues({1, 2 * G * H}, 3), x = randomValues({S, Bn, I}, 4);
  addInitializer(g, "W", {1, G * H, I}, w);
  addInitializer(g, "R", {1, G * H, H}, r);
  addInitializer(g, "B", {1, 2 * G * H}, bias);
  pb::Node *n = g->add_node();
  n->set_op_type("LSTM");
  n->set_name("lstm");
  for (const char *in : {"X", "W", "R", "B"})
    n->add_input(in);
  n->add_output("");
  n->add_output("Y");
  pb::Attribute *a = n->add_attribute();
  a->set_name("hidden_size");
  a->set_type(2);
  a->set_i(H);
  addFloatInfo(g->add_output(), "Y", {1, Bn, H});
  std::string text;
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), x, &text);
  // The weights are constants of the program once, transposed.
  INFO(text.substr(0, 1500));
  CHECK(text.find("Transpose") != std::string::npos);
  CHECK(text.find("w0_W") == std::string::npos);
  // The definition (ONNX gate order i, o, f, c), in double.
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t b = 0; b < Bn; ++b) {
    std::vector<double> h((size_t)H, 0.0), c((size_t)H, 0.0);
    for (int64_t t = 0; t < S; ++t) {
      std::vector<double> pre((size_t)(G * H));
      for (int64_t row = 0; row < G * H; ++row) {
        double v = bias[(size_t)row] + bias[(size_t)(G * H + row)];
        for (int64_t i = 0; i < I; ++i)
          v += (double)x[(size_t)((t * Bn + b) * I + i)] * w[(size_t)(row * I + i)];
        for (int64_t k = 0; k < H; ++k)
          v += h[(size_t)k] * r[(size_t)(row * H + k)];
        pre[(size_t)row] = v;
      }
      for (int64_t j = 0; j < H; ++j) {
        double ig = sigmoid(pre[(size_t)j]), og = sigmoid(pre[(size_t)(H + j)]),
               fg = sigmoid(pre[(size_t)(2 * H + j)]), cg = std::tanh(pre[(size_t)(3 * H + j)]);
        c[(size_t)j] = fg * c[(size_t)j] + ig * cg;
        h[(size_t)j] = og * std::tanh(c[(size_t)j]);
      }
    }
    for (int64_t j = 0; j < H; ++j) {
      INFO("batch " << b << ", unit " << j);
      CHECK(std::fabs(got[(size_t)(b * H + j)] - h[(size_t)j]) <= 1e-5);
    }
  }
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

TEST_CASE("concatenated values are written in place, nested concatenations too",
          "[program]") {
  // A = relu(X), B = -X, E = X * X; C = Concat(A, B); D = Concat(C, E)
  // (axis 1); Y = Softmax(D) over the last axis.
  const Shape x = {1, 2, 3, 4};
  pb::Model m;
  pb::Graph *g = newGraph(m, x);
  auto node = [&](const std::string &op, std::vector<std::string> in, const std::string &out,
                  int64_t axis) {
    pb::Node *n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (auto &i : in)
      n->add_input(i);
    n->add_output(out);
    if (axis != 0) {
      pb::Attribute *a = n->add_attribute();
      a->set_name("axis");
      a->set_type(2);
      a->set_i(axis);
    }
  };
  node("Relu", {"X"}, "A", 0);
  node("Neg", {"X"}, "B", 0);
  node("Mul", {"X", "X"}, "E", 0);
  node("Concat", {"A", "B"}, "C", 1);
  node("Concat", {"C", "E"}, "D", 1);
  node("Softmax", {"D"}, "Y", -1);
  addFloatInfo(g->add_output(), "Y", {1, 6, 3, 4});
  std::string text;
  std::vector<float> in = randomValues(x, 3);
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), in, &text);
  INFO(text);
  CHECK(text.find("concat") == std::string::npos); // no copy kernel
  CHECK(text.find("(part of buffer") != std::string::npos);
  // The definition.
  std::vector<float> d;
  for (float v : in)
    d.push_back(std::max(v, 0.0f));
  for (float v : in)
    d.push_back(-v);
  for (float v : in)
    d.push_back(v * v);
  REQUIRE(got.size() == d.size());
  for (size_t row = 0; row < d.size() / 4; ++row) {
    double mx = -1e30, sum = 0;
    for (size_t j = 0; j < 4; ++j)
      mx = std::max(mx, (double)d[row * 4 + j]);
    for (size_t j = 0; j < 4; ++j)
      sum += std::exp(d[row * 4 + j] - mx);
    for (size_t j = 0; j < 4; ++j) {
      double want = std::exp(d[row * 4 + j] - mx) / sum;
      INFO("row " << row << " column " << j);
      CHECK(std::fabs(got[row * 4 + j] - want) < 1e-6);
    }
  }
}

namespace {

/// A node `op` named after its one output `out`, reading `in`.
pb::Node *addNode(pb::Graph *g, const std::string &op, const std::vector<std::string> &in,
                  const std::string &out) {
  pb::Node *n = g->add_node();
  n->set_op_type(op);
  n->set_name(out);
  for (auto &i : in)
    n->add_input(i);
  n->add_output(out);
  return n;
}

/// An initializer of an integer type (ONNX data type `type`: 2 uint8,
/// 3 int8, 6 int32) or float scale.
void addIntInitializer(pb::Graph *g, const std::string &name, int type, const Shape &dims,
                       const std::vector<int64_t> &values) {
  pb::Tensor *t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims)
    t->add_dims(d);
  for (int64_t v : values)
    t->add_int32_data((int32_t)v);
}

/// X (float) -> QuantizeLinear (type `xtype`, zero point `xzp`) ->
/// QLinearConv with int8 weights (per-channel scales, zero point 0), a
/// bias, output uint8 -> DequantizeLinear.
std::string qlinearConvModel(const Shape &x, int64_t m, int64_t k, int64_t pad, int64_t stride,
                             int xtype, int64_t xzp, const Shape &y, int64_t group = 1) {
  pb::Model model;
  pb::Graph *g = newGraph(model, x);
  int64_t c = x[1] / group;
  std::mt19937 rng(5);
  std::vector<int64_t> w = randomInts(rng, m * c * k * k, -127, 127);
  std::vector<int64_t> bias = randomInts(rng, m, -3000, 3000), zeros((size_t)m, 0);
  std::vector<float> wscale;
  for (int64_t i = 0; i < m; ++i)
    wscale.push_back(0.002f + 0.0005f * (float)i);
  addInitializer(g, "xs", {}, {0.01f});
  addIntInitializer(g, "xz", xtype, {}, {xzp});
  addIntInitializer(g, "W", 3, {m, c, k, k}, w);
  addInitializer(g, "ws", {m}, wscale);
  addIntInitializer(g, "wz", 3, {m}, zeros);
  addInitializer(g, "ys", {}, {0.05f});
  addIntInitializer(g, "yz", 2, {}, {7});
  addIntInitializer(g, "B", 6, {m}, bias);
  auto add = [&](const std::string &op, std::vector<std::string> in, const std::string &out) {
    return addNode(g, op, in, out);
  };
  add("QuantizeLinear", {"X", "xs", "xz"}, "XQ");
  pb::Node *conv = add("QLinearConv", {"XQ", "xs", "xz", "W", "ws", "wz", "ys", "yz", "B"}, "YQ");
  for (auto [name, v, count] : {std::tuple<const char *, int64_t, int>{"kernel_shape", k, 2},
                                {"pads", pad, 4},
                                {"strides", stride, 2}}) {
    pb::Attribute *a = conv->add_attribute();
    a->set_name(name);
    a->set_type(7);
    for (int i = 0; i < count; ++i)
      a->add_ints(v);
  }
  if (group > 1) {
    pb::Attribute *a = conv->add_attribute();
    a->set_name("group");
    a->set_type(2);
    a->set_i(group);
  }
  add("DequantizeLinear", {"YQ", "ys", "yz"}, "Y");
  addFloatInfo(g->add_output(), "Y", y);
  return model.SerializeAsString();
}

/// `got` equals `want`, which is not a constant output.
void checkEqualAndVarying(const std::vector<float> &got, const std::vector<float> &want) {
  REQUIRE(got.size() == want.size());
  size_t differ = 0, distinct = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    differ += got[i] != want[i];
    distinct += i > 0 && want[i] != want[i - 1];
  }
  CHECK(differ == 0);
  CHECK(distinct > got.size() / 4);
}

/// Dequantized outputs of two requantizations (steps of `step`): at most
/// one step apart, and different in at most one in `oneIn` places.
void checkWithinOneStep(const std::vector<float> &got, const std::vector<float> &want,
                        double step, size_t oneIn) {
  REQUIRE(got.size() == want.size());
  size_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    differ += got[i] != want[i];
    worst = std::max(worst, (double)std::fabs(got[i] - want[i]));
  }
  CHECK(worst <= step * 1.001);
  CHECK(differ <= got.size() / oneIn);
}

/// Compiles an int8 model for an AVX-512-shaped target with each form of
/// the int8 dot product and without, runs them on `in`: the outputs must
/// be equal and vary. Dense convolutions (quad images) take the form's
/// kernel IR: dot4 (x86 VNNI, Arm i8mm's usdot), dot2 of pre-split pairs
/// (x86 pmaddwd), sdot4 on signed quads (Arm dotprod); depthwise ones the
/// four taps per dot4 (Arm dotprod: sdot4 on signed quads); matrix
/// products dot4 (Arm dotprod: sdot4 along K for one row of A).
void checkDotEqualsPlain(const std::string &model, const std::vector<float> &in,
                         const char *path = nullptr) {
  TargetDesc plain = avx512(32768, 524288);
  std::vector<float> want = compileAndRun(model, plain, in, nullptr);
  for (MacForm form :
       {MacForm::X86Vnni, MacForm::X86Madd16, MacForm::ArmDot, MacForm::ArmMatMul}) {
    TargetDesc dot = plain;
    dot.IntMacs.push_back(form);
    std::string text;
    std::vector<float> got = compileAndRun(model, dot, in, &text);
    INFO(macFormName(form) << "\n" << text.substr(0, 4000));
    // (Arm dotprod's matrix products of several rows of A stay plain.)
    const bool dense = text.find("xquads") != std::string::npos,
               taps = text.find("tapquads") != std::string::npos,
               alongK = text.find("aquads") != std::string::npos;
    if (form != MacForm::ArmDot || dense || taps || alongK)
      CHECK(text.find(form == MacForm::ArmDot                ? "sdot4"
                      : form == MacForm::X86Madd16 && dense ? "dot2(zext_bytes02("
                                                            : "dot4(") != std::string::npos);
    if (path)
      CHECK(text.find(path) != std::string::npos);
    checkEqualAndVarying(got, want);
  }
}

} // namespace

TEST_CASE("int8 convolutions on the dot product equal the plain integer kernels",
          "[contraction][quantization]") {
  // 6 input channels (two quads, the second half empty); uint8 and int8
  // inputs with nonzero zero points (int8 data is offset to unsigned);
  // 10 output channels (an overlapping row tile); 1x1, 3x3 and 5x5
  // kernels padded by half their size (quad images per kernel column with
  // the zero point in the padding) at strides 1 and 2 (row phases): 200 and
  // 50 outputs (whole tiles and a tail tile).
  for (int xtype : {2, 3})
    for (int64_t k : {1, 3, 5})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", kernel " << k << ", stride " << stride);
        Shape x = {1, 6, 10, 20};
        int64_t pad = k / 2, oh = (10 + 2 * pad - k) / stride + 1,
                ow = (20 + 2 * pad - k) / stride + 1;
        std::string model = qlinearConvModel(x, 10, k, pad, stride, xtype, xtype == 2 ? 3 : -5,
                                             {1, 10, oh, ow});
        checkDotEqualsPlain(model, randomValues(x, 3), k == 1 ? "xquads" : "xpanel");
      }
  // Weights that outweigh the quad images (40 output channels over 20
  // input channels, 40 outputs): the panels of every output tile (a whole
  // tile of 32 outputs and a tail tile of 16 ending at the last) packed
  // once, the row tiles outside; a pointwise kernel reads its quad image.
  for (int xtype : {2, 3})
    for (int64_t k : {1, 3, 5}) {
      INFO("input type " << xtype << ", kernel " << k << ", weights outside");
      Shape x = {1, 20, 5, 8};
      std::string model =
          qlinearConvModel(x, 40, k, k / 2, 1, xtype, xtype == 2 ? 7 : -2, {1, 40, 5, 8});
      checkDotEqualsPlain(model, randomValues(x, 4), k == 1 ? "xquads" : "xpanels");
    }
}

namespace {

/// X [M, K] (float) -> QuantizeLinear (type `xtype`, zero point `xzp`) ->
/// QLinearMatMul with int8 B [K, N] (per-column scales), or com.microsoft
/// QGemm with B stored [N, K] (transB) and an int32 bias -> DequantizeLinear.
std::string qlinearMatMulModel(int64_t m, int64_t k, int64_t n, int xtype, int64_t xzp,
                               bool gemm) {
  pb::Model model;
  pb::Graph *g = newGraph(model, {m, k});
  if (gemm) {
    auto *ms = model.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
  }
  std::mt19937 rng(9);
  std::vector<int64_t> w = randomInts(rng, k * n, -127, 127);
  std::vector<int64_t> bias = randomInts(rng, n, -2000, 2000);
  std::vector<float> bscale;
  for (int64_t i = 0; i < n; ++i)
    bscale.push_back(0.003f + 0.0001f * (float)i);
  addInitializer(g, "xs", {}, {0.02f});
  addIntInitializer(g, "xz", xtype, {}, {xzp});
  addIntInitializer(g, "W", 3, gemm ? Shape{n, k} : Shape{k, n}, w);
  addInitializer(g, "ws", {n}, bscale);
  addIntInitializer(g, "wz", 3, {}, {0});
  addInitializer(g, "ys", {}, {0.1f});
  addIntInitializer(g, "yz", 2, {}, {100});
  addIntInitializer(g, "B", 6, {n}, bias);
  auto add = [&](const std::string &op, std::vector<std::string> in, const std::string &out) {
    return addNode(g, op, in, out);
  };
  add("QuantizeLinear", {"X", "xs", "xz"}, "XQ");
  if (gemm) {
    pb::Node *q = add("QGemm", {"XQ", "xs", "xz", "W", "ws", "wz", "B", "ys", "yz"}, "YQ");
    q->set_domain("com.microsoft");
    pb::Attribute *a = q->add_attribute();
    a->set_name("transB");
    a->set_type(2);
    a->set_i(1);
  } else {
    add("QLinearMatMul", {"XQ", "xs", "xz", "W", "ws", "wz", "ys", "yz"}, "YQ");
  }
  add("DequantizeLinear", {"YQ", "ys", "yz"}, "Y");
  addFloatInfo(g->add_output(), "Y", {m, n});
  return model.SerializeAsString();
}

} // namespace

TEST_CASE("int8 convolutions reading their rows' weights as lanes equal the plain kernels",
          "[contraction][quantization]") {
  // The int32 tile with the plan's LaneWeights (a target with Arm's
  // multiply-accumulate by element): one and two input channels (no
  // quads), uint8 and int8 inputs with zero points, 10 output channels
  // (an overlapping row tile), strides 1 and 2.
  for (int xtype : {2, 3})
    for (int64_t c : {1, 2})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", " << c << " channels, stride " << stride);
        Shape x = {1, c, 10, 20};
        int64_t oh = (10 + 2 - 3) / stride + 1, ow = (20 + 2 - 3) / stride + 1;
        std::string model =
            qlinearConvModel(x, 10, 3, 1, stride, xtype, xtype == 2 ? 3 : -5, {1, 10, oh, ow});
        std::vector<float> in = randomValues(x, 3);
        TargetDesc plain = avx512(32768, 524288), lanes = plain;
        lanes.IntMacs.push_back(MacForm::ArmLongMac);
        std::vector<float> want = compileAndRun(model, plain, in, nullptr);
        std::string text;
        std::vector<float> got = compileAndRun(model, lanes, in, &text);
        INFO(text.substr(0, 4000));
        CHECK(text.find(")[1])") != std::string::npos); // a row's weight as lane 1
        checkEqualAndVarying(got, want);
      }
}

TEST_CASE("int8 depthwise convolutions with taps on the dot product equal the plain kernels",
          "[contraction][quantization]") {
  // 6 channels, 6 groups, uint8 input with a zero point (the border),
  // through the tap-quad images of lowerIntTapQuads: 3x3 taps at strides
  // 1 and 2 (row phases), outputs narrower than a vector (7x7: tiles of
  // consecutive outputs across rows), 5x5 taps (two quads per kernel row),
  // two images, and output counts that leave an overlapping last tile.
  struct Case {
    Shape X;
    int64_t K, Pad, Stride;
  };
  for (const Case &k : {Case{{1, 6, 10, 20}, 3, 1, 1}, Case{{1, 6, 10, 20}, 3, 1, 2},
                        Case{{1, 6, 7, 7}, 3, 1, 1}, Case{{2, 6, 9, 11}, 5, 2, 2},
                        Case{{1, 6, 6, 13}, 5, 0, 1}}) {
    int64_t oh = (k.X[2] + 2 * k.Pad - k.K) / k.Stride + 1,
            ow = (k.X[3] + 2 * k.Pad - k.K) / k.Stride + 1;
    INFO("x " << k.X[0] << "x" << k.X[2] << "x" << k.X[3] << ", kernel " << k.K << ", stride "
              << k.Stride);
    std::string model =
        qlinearConvModel(k.X, 6, k.K, k.Pad, k.Stride, 2, 5, {k.X[0], 6, oh, ow}, 6);
    checkDotEqualsPlain(model, randomValues(k.X, 7), "tapquads");
  }
}

TEST_CASE("int8 matrix products on the dot product equal the plain integer kernels",
          "[contraction][quantization]") {
  // K = 37 (the last quad partial), N = 40 (two vectors and an overlapping
  // edge tile), M = 5 (a partial row tile); uint8 and int8 inputs.
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      std::string model = qlinearMatMulModel(5, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm);
      checkDotEqualsPlain(model, randomValues({5, 37}, 4));
      // One row of A (Arm dotprod: along K, its row staged as quads, the
      // last partial and the rest of the vector zero; 40 columns in two
      // tiles).
      std::string row = qlinearMatMulModel(1, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm);
      checkDotEqualsPlain(row, randomValues({1, 37}, 5));
    }
}

/// A Helium-shaped target (16-byte vectors, 8 registers, a float unit, a
/// kernel stack of `stackBytes`) and the same without Helium's
/// multiply-accumulate across lanes.
std::pair<TargetDesc, TargetDesc> heliumAndPlain(int64_t stackBytes) {
  TargetDesc plain;
  plain.VectorBytes = 16;
  plain.VectorRegisters = 8;
  plain.FloatUnit = true;
  plain.StackBytes = stackBytes;
  TargetDesc helium = plain;
  helium.IntMacs.push_back(MacForm::HeliumMac);
  return {helium, plain};
}

TEST_CASE("int8 matrix products on Helium's byte vectors equal the plain integer kernels",
          "[contraction][quantization]") {
  // The plan's ByteDot (signed bytes summed along K, uint8 A offset by 128
  // and corrected with B's column sums): QLinearMatMul (B [K, N],
  // transposed at compile time) and QGemm (transB), uint8 A with a zero
  // point and int8 A with a negative one, K = 37 (no whole vector at the
  // end), against the same target without Helium's multiply-accumulate.
  auto [helium, plain] = heliumAndPlain(8192);
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      std::string model = qlinearMatMulModel(3, 37, 10, xtype, xtype == 2 ? 9 : -3, gemm);
      std::vector<float> in = randomValues({3, 37}, 6);
      std::vector<float> want = compileAndRun(model, plain, in, nullptr);
      std::string text;
      std::vector<float> got = compileAndRun(model, helium, in, &text);
      INFO(text.substr(0, 4000));
      CHECK(text.find("scalar") != std::string::npos); // the byte loop, left to LLVM
      checkEqualAndVarying(got, want);
    }
}

TEST_CASE("int8 pointwise convolutions on Helium's byte vectors equal the plain integer kernels",
          "[contraction][quantization]") {
  // The plan's ByteDot for a pointwise convolution (bands of pixels copied
  // channels-last on the stack, one sum of bytes per output): 64 channels,
  // 7x8 pixels in bands of 3 (a 200-byte plane bound: the last band shifted
  // back), uint8 input with a zero point and int8 with a negative one.
  auto [helium, plain] = heliumAndPlain(200);
  for (int xtype : {2, 3}) {
    INFO("input type " << xtype);
    std::string model =
        qlinearConvModel({1, 64, 7, 8}, 24, 1, 0, 1, xtype, xtype == 2 ? 9 : -3, {1, 24, 7, 8});
    std::vector<float> in = randomValues({1, 64, 7, 8}, 8);
    std::vector<float> want = compileAndRun(model, plain, in, nullptr);
    std::string text;
    std::vector<float> got = compileAndRun(model, helium, in, &text);
    INFO(text.substr(0, 4000));
    CHECK(text.find("xbytes") != std::string::npos);
    checkEqualAndVarying(got, want);
  }
}

TEST_CASE("fixed-point requantization (targets without float) is within one step of f32",
          "[quantization]") {
  // The same int8 convolution and matrix products compiled for a target
  // without a floating-point unit (integer multiplier and shift per output
  // channel) and for one with (f32 multiplier): the outputs (dequantized by
  // the model's last DequantizeLinear, steps of 0.05 and 0.1) differ by at
  // most one step, and in few places (ties and the last bit of a product).
  struct Case {
    std::string Model;
    Shape X;
    double Step;
  };
  std::vector<Case> cases = {
      {qlinearConvModel({1, 6, 10, 20}, 10, 3, 1, 1, 2, 3, {1, 10, 10, 20}), {1, 6, 10, 20}, 0.05},
      {qlinearMatMulModel(5, 37, 40, 2, 9, false), {5, 37}, 0.1},
      {qlinearMatMulModel(5, 37, 40, 3, -3, true), {5, 37}, 0.1}};
  for (const Case &k : cases) {
    std::vector<float> in = randomValues(k.X, 6);
    TargetDesc fixed, f32;
    fixed.FloatUnit = false;
    std::string text;
    std::vector<float> got = compileAndRun(k.Model, fixed, in, &text);
    std::vector<float> want = compileAndRun(k.Model, f32, in, nullptr);
    INFO(text.substr(0, 3000));
    CHECK(text.find("requant_shift") != std::string::npos);
    checkWithinOneStep(got, want, k.Step, 50);
  }
}

/// X (float) quantized twice (A: type `xtype`, scale `as`; B: scale `bs`,
/// or the constant C [3, 1, 1] broadcast along the rows when `constantB`)
/// -> com.microsoft `op` (QLinearAdd or QLinearMul) -> DequantizeLinear of
/// scale `ys`.
std::string qlinearBinaryModel(const std::string &op, int xtype, bool constantB, float as,
                               float bs, float ys) {
  pb::Model model;
  const Shape x = {1, 3, 7, 9};
  pb::Graph *g = newGraph(model, x);
  auto *ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  const bool u8 = xtype == 2;
  addInitializer(g, "as", {}, {as});
  addIntInitializer(g, "az", xtype, {}, {u8 ? 131 : -5});
  addInitializer(g, "bs", {}, {bs});
  addIntInitializer(g, "bz", xtype, {}, {u8 ? 120 : 7});
  addInitializer(g, "ys", {}, {ys});
  addIntInitializer(g, "yz", xtype, {}, {u8 ? 128 : 3});
  addIntInitializer(g, "C", xtype, {3, 1, 1}, u8 ? std::vector<int64_t>{7, 200, 121}
                                                 : std::vector<int64_t>{-100, 90, 12});
  addNode(g, "QuantizeLinear", {"X", "as", "az"}, "A");
  if (!constantB)
    addNode(g, "QuantizeLinear", {"X", "bs", "bz"}, "B");
  addNode(g, op, {"A", "as", "az", constantB ? "C" : "B", "bs", "bz", "ys", "yz"}, "YQ")
      ->set_domain("com.microsoft");
  addNode(g, "DequantizeLinear", {"YQ", "ys", "yz"}, "Y");
  addFloatInfo(g->add_output(), "Y", x);
  return model.SerializeAsString();
}

TEST_CASE("QLinearAdd and QLinearMul in integers (targets without f64) are within one step",
          "[quantization]") {
  // On a target whose f64 is a library call, the elementwise quantized ops
  // requantize in integers: the outputs (dequantized, steps of ys) differ
  // from the f64 formula's by one step at most. Where the exact result is a
  // half, the two round on either side as their approximations of the
  // scale ratios fall: with the scales of a calibrated model (no simple
  // ratios) that is rare, so few outputs differ; with decimal scales whose
  // ratios make many exact halves (0.02, 0.035 and 0.05: 0.4 and 0.7), up
  // to a tenth of them may.
  for (const std::string op : {"QLinearAdd", "QLinearMul"})
    for (int xtype : {2, 3})
      for (bool constantB : {false, true})
        for (bool decimal : {false, true}) {
          INFO(op << ", type " << xtype << (constantB ? ", constant B" : "")
                  << (decimal ? ", decimal scales" : ""));
          const float as = decimal ? 0.02f : 0.0213f, bs = decimal ? 0.035f : 0.0347f;
          const float ys = op == "QLinearAdd" ? (decimal ? 0.05f : 0.0519f)
                                              : (decimal ? 0.02f : 0.0187f);
          std::string model = qlinearBinaryModel(op, xtype, constantB, as, bs, ys);
          std::vector<float> in = randomValues({1, 3, 7, 9}, 8);
          for (float &v : in)
            v *= 1.5f;
          TargetDesc integer, f64;
          integer.DoubleUnit = false;
          std::string text, floatText;
          std::vector<float> got = compileAndRun(model, integer, in, &text);
          std::vector<float> want = compileAndRun(model, f64, in, &floatText);
          INFO(text.substr(0, 3000));
          CHECK(text.find("f64") == std::string::npos);
          CHECK(floatText.find("f64") != std::string::npos);
          checkWithinOneStep(got, want, ys, decimal ? 10 : 50);
          checkEqualAndVarying(got, got); // the outputs vary
        }
}

TEST_CASE("integer depthwise convolutions padded a plane at a time on the stack",
          "[contraction][quantization]") {
  // A target without vectors and a kernel stack (a microcontroller): each
  // channel's bordered plane is copied to the stack (the plan's Depthwise),
  // not the whole image to the arena; the outputs equal those of the
  // whole-image copy (no stack). uint8 and int8 inputs with nonzero zero
  // points (the border holds them), 3x3 and 5x5 kernels, strides 1 and 2.
  TargetDesc stack, whole;
  stack.GeneralRegisters = whole.GeneralRegisters = 13;
  stack.StackBytes = 8192;
  for (int xtype : {2, 3})
    for (int64_t k : {3, 5})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", kernel " << k << ", stride " << stride);
        Shape x = {1, 6, 9, 12};
        int64_t pad = k / 2, oh = (9 + 2 * pad - k) / stride + 1,
                ow = (12 + 2 * pad - k) / stride + 1;
        std::string model = qlinearConvModel(x, 6, k, pad, stride, xtype,
                                             xtype == 2 ? 3 : -5, {1, 6, oh, ow}, 6);
        std::string text, wholeText;
        std::vector<float> got = compileAndRun(model, stack, randomValues(x, 3), &text);
        std::vector<float> want = compileAndRun(model, whole, randomValues(x, 3), &wholeText);
        INFO(text.substr(0, 3000));
        CHECK(text.find("alloc xplane") != std::string::npos);
        CHECK(wholeText.find("xplane") == std::string::npos);
        checkEqualAndVarying(got, want);
      }
}

TEST_CASE("int8 products in pairs (smlad) equal the plain integer kernels",
          "[contraction][quantization]") {
  // A target without vectors with and without the dual 16-bit
  // multiply-accumulate: the same outputs (exact integer sums either way),
  // which vary. Input channels per group 3, 5, 6 and 8 (partial and whole
  // quads), uint8 and int8 inputs with nonzero zero points, 1x1 (the
  // pointwise path), 3x3 and 5x5 kernels with padding, strides 1 and 2; the
  // matrix products with K = 37 (a partial quad) and M = 5.
  TargetDesc pairs;
  pairs.GeneralRegisters = 13;
  pairs.IntMacs.push_back(MacForm::ArmSmlad);
  TargetDesc plain = pairs;
  plain.IntMacs.clear();
  // A microcontroller's (small) kernel stack: the pointwise convolutions
  // stage their input pairs on it (the plan's StagedPairs), the windowed
  // ones whose bordered image passes its bound each output row's input
  // rows (the plan's Depthwise bound, 256 elements).
  TargetDesc staged = pairs;
  staged.StackBytes = 256;
  // Larger stacks: the windowed ones read pair words staged on the stack
  // (the plan's WindowPairs), the whole bordered image (8 KiB) or each
  // output row's input rows (1 KiB), wherever those words fit.
  TargetDesc imageWords = pairs, bandWords = pairs;
  imageWords.StackBytes = 8192;
  bandWords.StackBytes = 1024;
  auto check = [&](const std::string &model, const std::vector<float> &in,
                   std::string *imageText = nullptr, std::string *bandText = nullptr) {
    std::string text, stagedText;
    std::vector<float> got = compileAndRun(model, pairs, in, &text);
    std::vector<float> want = compileAndRun(model, plain, in, nullptr);
    std::vector<float> fromStack = compileAndRun(model, staged, in, &stagedText);
    INFO(text.substr(0, 3000));
    CHECK(text.find("dot2") != std::string::npos);
    CHECK(text.find("sext_bytes13") != std::string::npos);
    checkEqualAndVarying(got, want);
    checkEqualAndVarying(fromStack, want);
    if (imageText)
      checkEqualAndVarying(compileAndRun(model, imageWords, in, imageText), want);
    if (bandText)
      checkEqualAndVarying(compileAndRun(model, bandWords, in, bandText), want);
    return stagedText;
  };
  for (int64_t channels : {3, 5, 6, 8})
    for (int xtype : {2, 3})
      for (int64_t k : {1, 3, 5})
        for (int64_t stride : {1, 2}) {
          if (k == 1 && stride == 2)
            continue;
          INFO("channels " << channels << ", input type " << xtype << ", kernel " << k
                           << ", stride " << stride);
          Shape x = {1, channels, 9, 12};
          int64_t pad = k / 2, oh = (9 + 2 * pad - k) / stride + 1,
                  ow = (12 + 2 * pad - k) / stride + 1;
          std::string imageText, bandText;
          std::string stagedText =
              check(qlinearConvModel(x, 10, k, pad, stride, xtype, xtype == 2 ? 3 : -5,
                                     {1, 10, oh, ow}),
                    randomValues(x, 3), &imageText, &bandText);
          CHECK((stagedText.find("alloc pairs") != std::string::npos) == (k == 1));
          // The windowed ones stage each output row's input rows (the band)
          // when the bordered image passes 256 elements and the band fits.
          const int64_t band = channels * k * (12 + 2 * pad),
                        image = channels * (9 + 2 * pad) * (12 + 2 * pad);
          // Pair words: two int32 per channel quad and position.
          const int64_t words = (channels + 3) / 4 * 2 * 4;
          const bool pairImage = k != 1 && words * image / channels <= 1024;
          const bool pairBand = k != 1 && !pairImage && ow >= 2 && words * band / channels <= 1024;
          CHECK((stagedText.find("alloc xband") != std::string::npos) ==
                (k != 1 && band <= 256 && image > 256));
          CHECK((imageText.find("alloc xpairs") != std::string::npos) == (k != 1));
          CHECK((bandText.find("alloc xpairs") != std::string::npos) == pairImage);
          CHECK((bandText.find("alloc xbandpairs") != std::string::npos) == pairBand);
        }
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      check(qlinearMatMulModel(5, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm),
            randomValues({5, 37}, 4));
      // K = 40 and no zero point: A's quads read as words (the plan's
      // PairWords), split by zext_bytes (uint8) or sext_bytes (int8).
      std::string model = qlinearMatMulModel(5, 40, 40, xtype, 0, gemm);
      std::string text;
      INFO("K = 40, zero point 0");
      check(model, randomValues({5, 40}, 4));
      compileAndRun(model, pairs, randomValues({5, 40}, 4), &text);
      CHECK(text.find(xtype == 2 ? "zext_bytes13" : "sext_bytes13(bitor") != std::string::npos);
    }
}

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

TEST_CASE("a GRU with constant weights (gate rows summed in blocks of registers) equals the "
          "definition",
          "[contraction]") {
  // X [S, B, I] -> GRU (H hidden; W, R, B initializers) -> Y_h [1, B, H],
  // with both forms of the reset gate; the target's few registers give
  // blocks of 32 gate rows (H = 20: 60 rows, a block and a partial one).
  const int64_t S = 4, Bn = 2, I = 5, H = 20, G = 3;
  TargetDesc target = avx512(32768, 524288);
  target.VectorRegisters = 6;
  for (int lbr : {0, 1}) {
    pb::Model m;
    pb::Graph *g = newGraph(m, {S, Bn, I});
    std::vector<float> w = randomValues({1, G * H, I}, 11), r = randomValues({1, G * H, H}, 12),
                       bias = randomValues({1, 2 * G * H}, 13), x = randomValues({S, Bn, I}, 14);
    addInitializer(g, "W", {1, G * H, I}, w);
    addInitializer(g, "R", {1, G * H, H}, r);
    addInitializer(g, "B", {1, 2 * G * H}, bias);
    pb::Node *n = g->add_node();
    n->set_op_type("GRU");
    n->set_name("gru");
    for (const char *in : {"X", "W", "R", "B"})
      n->add_input(in);
    n->add_output("");
    n->add_output("Y");
    for (auto [name, v] : {std::pair<const char *, int64_t>{"hidden_size", H},
                           {"linear_before_reset", lbr}}) {
      pb::Attribute *a = n->add_attribute();
      a->set_name(name);
      a->set_type(2);
      a->set_i(v);
    }
    addFloatInfo(g->add_output(), "Y", {1, Bn, H});
    std::string text;
    std::vector<float> got = compileAndRun(m.SerializeAsString(), target, x, &text);
    INFO("linear_before_reset " << lbr << "\n" << text.substr(0, 1500));
    CHECK(text.find("alloc acc: f32[32]") != std::string::npos);
    // Every candidate of schedule search (gate blocks of 16, 8, 64 rows or
    // none), appended to the results checked below.
    std::vector<std::string> plans;
    compileAndRun(m.SerializeAsString(), target, x, nullptr,
                  [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
                    for (const ir::KernelPlan &p : c)
                      plans.push_back(p.str());
                    return size_t{0};
                  });
    CHECK(plans.size() == 5);
    std::vector<std::vector<float>> runs{got};
    for (size_t i = 1; i < plans.size(); ++i)
      runs.push_back(compileAndRun(m.SerializeAsString(), target, x, nullptr,
                                   [&](const ir::Node &, const std::vector<ir::KernelPlan> &) {
                                     return i;
                                   }));
    // The definition (ONNX gate order z, r, h), in double.
    auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
    auto W = [&](int64_t row, int64_t i) { return (double)w[(size_t)(row * I + i)]; };
    auto R = [&](int64_t row, int64_t k) { return (double)r[(size_t)(row * H + k)]; };
    auto Wb = [&](int64_t row) { return (double)bias[(size_t)row]; };
    auto Rb = [&](int64_t row) { return (double)bias[(size_t)(G * H + row)]; };
    for (int64_t b = 0; b < Bn; ++b) {
      std::vector<double> h((size_t)H, 0.0);
      for (int64_t t = 0; t < S; ++t) {
        auto xAt = [&](int64_t i) { return (double)x[(size_t)((t * Bn + b) * I + i)]; };
        std::vector<double> z((size_t)H), rg((size_t)H), nh((size_t)H);
        for (int64_t j = 0; j < H; ++j) {
          double pz = Wb(j) + Rb(j), pr = Wb(H + j) + Rb(H + j);
          for (int64_t i = 0; i < I; ++i) {
            pz += W(j, i) * xAt(i);
            pr += W(H + j, i) * xAt(i);
          }
          for (int64_t k = 0; k < H; ++k) {
            pz += R(j, k) * h[(size_t)k];
            pr += R(H + j, k) * h[(size_t)k];
          }
          z[(size_t)j] = sigmoid(pz);
          rg[(size_t)j] = sigmoid(pr);
        }
        for (int64_t j = 0; j < H; ++j) {
          double px = Wb(2 * H + j), ph = Rb(2 * H + j);
          for (int64_t i = 0; i < I; ++i)
            px += W(2 * H + j, i) * xAt(i);
          for (int64_t k = 0; k < H; ++k)
            ph += R(2 * H + j, k) * (lbr ? h[(size_t)k] : rg[(size_t)k] * h[(size_t)k]);
          nh[(size_t)j] = std::tanh(px + (lbr ? rg[(size_t)j] * ph : ph));
        }
        for (int64_t j = 0; j < H; ++j)
          h[(size_t)j] = (1 - z[(size_t)j]) * nh[(size_t)j] + z[(size_t)j] * h[(size_t)j];
      }
      for (size_t run = 0; run < runs.size(); ++run)
        for (int64_t j = 0; j < H; ++j) {
          INFO("batch " << b << ", unit " << j << ", plan " << (run ? plans[run] : "default"));
          CHECK(std::fabs(runs[run][(size_t)(b * H + j)] - h[(size_t)j]) <= 1e-5);
        }
    }
  }
}

TEST_CASE("Split, Slice, Gather and unit-axis Transpose of an arena value are views, not copies",
          "[program]") {
  // A = relu(X) [1, 6, 4]; Split(A, axis 1, [2, 4]) -> S1 [1, 2, 4], S2
  // [1, 4, 4]; T = Transpose(S1, [1, 0, 2]) [2, 1, 4]; G = Gather(S2, 3,
  // axis 1) [1, 4]; L = Slice(A, 2..5 on axis 1) [1, 3, 4]; Y = Concat of
  // the softmaxes (last axis; kernels of their own, which the views are
  // not fused into) of T, G and L flattened to [1, n] (axis 1) [1, 24].
  const Shape x = {1, 6, 4};
  pb::Model m;
  pb::Graph *g = newGraph(m, x);
  auto ints = [&](const std::string &name, const Shape &dims, std::vector<int64_t> v) {
    pb::Tensor *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(7);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t e : v)
      t->add_int64_data(e);
  };
  auto intAttr = [](pb::Node *n, const char *name, int64_t v) {
    pb::Attribute *a = n->add_attribute();
    a->set_name(name);
    a->set_type(2);
    a->set_i(v);
  };
  ints("split", {2}, {2, 4});
  ints("three", {}, {3});
  ints("starts", {1}, {2});
  ints("ends", {1}, {5});
  ints("axes", {1}, {1});
  ints("flat", {2}, {1, -1});
  addNode(g, "Relu", {"X"}, "A");
  pb::Node *split = addNode(g, "Split", {"A", "split"}, "S1");
  split->add_output("S2");
  intAttr(split, "axis", 1);
  pb::Node *tr = addNode(g, "Transpose", {"S1"}, "T");
  pb::Attribute *perm = tr->add_attribute();
  perm->set_name("perm");
  perm->set_type(7);
  for (int64_t p : {1, 0, 2})
    perm->add_ints(p);
  intAttr(addNode(g, "Gather", {"S2", "three"}, "G"), "axis", 1);
  addNode(g, "Slice", {"A", "starts", "ends", "axes"}, "L");
  intAttr(addNode(g, "Softmax", {"T"}, "NT"), "axis", -1);
  intAttr(addNode(g, "Softmax", {"G"}, "NG"), "axis", -1);
  intAttr(addNode(g, "Softmax", {"L"}, "NL"), "axis", -1);
  addNode(g, "Reshape", {"NT", "flat"}, "RT");
  addNode(g, "Reshape", {"NL", "flat"}, "RL");
  intAttr(addNode(g, "Concat", {"RT", "NG", "RL"}, "Y"), "axis", 1);
  addFloatInfo(g->add_output(), "Y", {1, 24});
  std::string text;
  std::vector<float> in = randomValues(x, 5);
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), in, &text);
  INFO(text);
  for (const char *op : {"split", "slice", "gather", "transpose"})
    CHECK(text.find(std::string("_") + op) == std::string::npos); // no kernel of theirs
  CHECK(text.find("(part of buffer") != std::string::npos);
  // The definition: rows 0-1 of A, row 5 (S2's row 3), rows 2-4, each
  // row's softmax.
  std::vector<double> want;
  for (int64_t row : {0, 1, 5, 2, 3, 4}) {
    double sum = 0;
    for (int64_t j = 0; j < 4; ++j)
      sum += std::exp(std::max(in[(size_t)(row * 4 + j)], 0.0f));
    for (int64_t j = 0; j < 4; ++j)
      want.push_back(std::exp(std::max(in[(size_t)(row * 4 + j)], 0.0f)) / sum);
  }
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got[i] - want[i]) < 1e-6);
  }
}

TEST_CASE("an unrolled LSTM cell's elementwise update is one kernel (operand producers inlined)",
          "[program]") {
  // G = X + X [1, 16]; Split into i, f, g, o [1, 4] (views);
  // c' = sigmoid(i) * tanh(g) + sigmoid(f) * C; h = sigmoid(o) * tanh(c'):
  // outputs Y = h * c' (one output for the harness). The producers that
  // feed one chain node each (tanh(g), sigmoid(f), sigmoid(f) * C, tanh(c'))
  // are computed inside the kernels that read them.
  const Shape x = {1, 16};
  pb::Model m;
  pb::Graph *g = newGraph(m, x);
  addInitializer(g, "C", {1, 4}, randomValues({1, 4}, 9));
  addNode(g, "Add", {"X", "X"}, "G");
  pb::Node *split = addNode(g, "Split", {"G"}, "i");
  for (const char *o : {"f", "gg", "o"})
    split->add_output(o);
  pb::Attribute *a = split->add_attribute();
  a->set_name("axis");
  a->set_type(2);
  a->set_i(1);
  addNode(g, "Sigmoid", {"i"}, "si");
  addNode(g, "Sigmoid", {"f"}, "sf");
  addNode(g, "Tanh", {"gg"}, "tg");
  addNode(g, "Sigmoid", {"o"}, "so");
  addNode(g, "Mul", {"sf", "C"}, "fc");
  addNode(g, "Mul", {"si", "tg"}, "ig");
  addNode(g, "Add", {"fc", "ig"}, "c2");
  addNode(g, "Tanh", {"c2"}, "tc");
  addNode(g, "Mul", {"so", "tc"}, "h");
  addNode(g, "Mul", {"h", "c2"}, "Y");
  addFloatInfo(g->add_output(), "Y", {1, 4});
  std::string text;
  std::vector<float> in = randomValues(x, 6), c = randomValues({1, 4}, 9);
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), in, &text);
  INFO(text);
  // The Add, then one kernel: sigmoid(i) its root, the chain reading it
  // (sigmoid(i) * tanh(g), c', tanh(c'), h, Y), the operands' producers
  // (tanh(g), sigmoid(f), sigmoid(f) * C, sigmoid(o)) inlined.
  size_t calls = text.find("calls:");
  REQUIRE(calls != std::string::npos);
  size_t kernels = 0;
  for (size_t at = text.find("\n  k", calls); at != std::string::npos;
       at = text.find("\n  k", at + 1))
    ++kernels;
  CHECK(kernels == 2);
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t j = 0; j < 4; ++j) {
    auto at = [&](int64_t part) { return 2.0 * in[(size_t)(part * 4 + j)]; };
    double c2 = sigmoid(at(0)) * std::tanh(at(2)) + sigmoid(at(1)) * c[(size_t)j];
    double h = sigmoid(at(3)) * std::tanh(c2);
    INFO("unit " << j);
    CHECK(std::fabs(got[(size_t)j] - h * c2) < 1e-6);
  }
}

namespace {

/// Runs `model` on `target` with every candidate plan of schedule search
/// (passes::planCandidates, one node tuned) and checks each against `ref`
/// within float rounding of sums of `terms` products; returns the plans
/// run.
std::vector<std::string> everyCandidate(const std::string &model, const Shape &x,
                                        const TargetDesc &target, const std::vector<float> &ref,
                                        int64_t terms) {
  std::vector<std::string> plans;
  passes::PlanChooser record = [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
    for (const ir::KernelPlan &p : c)
      plans.push_back(p.str());
    return size_t{0};
  };
  compileAndRun(model, target, randomValues(x, 3), nullptr, record);
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    std::string chosen;
    passes::PlanChooser pick = [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
      chosen = c.at(i).str();
      return i;
    };
    std::vector<float> got = compileAndRun(model, target, randomValues(x, 3), nullptr, pick);
    CHECK(chosen == plans[i]);
    REQUIRE(got.size() == ref.size());
    size_t bad = 0;
    for (size_t k = 0; k < ref.size(); ++k)
      if (std::fabs(got[k] - ref[k]) > 2e-7 * (double)terms && bad++ == 0)
        UNSCOPED_INFO("first difference at " << k << ": " << got[k] << " vs " << ref[k]);
    CHECK(bad == 0);
  }
  return plans;
}

size_t countWith(const std::vector<std::string> &plans, const std::string &text) {
  return (size_t)std::count_if(plans.begin(), plans.end(), [&](const std::string &p) {
    return p.find(text) != std::string::npos;
  });
}

} // namespace

TEST_CASE("every candidate plan of schedule search computes the definition", "[tune]") {
  const TargetDesc t = avx512(32768, 524288);
  SECTION("a 3x3 convolution: Winograd tiles and direct ones") {
    // 64 channels and a small cache: Winograd in blocks of 2 rows of 8
    // tiles by default (as in the Winograd test above).
    std::string model = oneNodeModel("Conv", {1, 64, 18, 16}, {32, 64, 3, 3}, {32},
                                     {1, 32, 18, 16}, {{"kernel_shape", 3}, {"pads", 1}});
    std::vector<std::string> plans =
        everyCandidate(model, {1, 64, 18, 16}, avx512(32768, 131072),
                       referenceConv({1, 64, 18, 16}, 32, 3, 1, 1, 1), 576);
    CHECK(plans.at(0).find("winograd") != std::string::npos);
    CHECK(countWith(plans, "winograd") > 1);
    CHECK(countWith(plans, "winograd") < plans.size()); // direct tiles too
  }
  SECTION("a pointwise convolution: pixels as columns and as rows") {
    std::string model = oneNodeModel("Conv", {1, 24, 9, 9}, {40, 24, 1, 1}, {40}, {1, 40, 9, 9},
                                     {{"kernel_shape", 1}});
    std::vector<std::string> plans =
        everyCandidate(model, {1, 24, 9, 9}, t, referenceConv({1, 24, 9, 9}, 40, 1, 0, 1, 1), 24);
    CHECK(countWith(plans, "pixel_columns") > 0);
    CHECK(countWith(plans, "pixel_columns") < plans.size());
    // The loop knobs: the row tiles outermost, the reduction unrolled
    // (24 steps: by 2, and by 4 with no remainder).
    CHECK(countWith(plans, "rows_outer") > 0);
    CHECK(countWith(plans, "unroll=2") > 0);
    CHECK(countWith(plans, "unroll=4") > 0);
  }
  SECTION("a matrix product: a reduction unrolled with a remainder") {
    // K = 27: unrolled by 2 and 4, a remainder of 1 and 3 steps.
    std::string model = oneNodeModel("Gemm", {20, 27}, {27, 48}, {48}, {20, 48}, {});
    std::vector<float> a = randomValues({20, 27}, 3), w = randomValues({27, 48}, 1),
                       bias = randomValues({48}, 2), ref(20 * 48);
    for (int64_t i = 0; i < 20; ++i)
      for (int64_t j = 0; j < 48; ++j) {
        double sum = bias[(size_t)j];
        for (int64_t k = 0; k < 27; ++k)
          sum += (double)a[(size_t)(i * 27 + k)] * w[(size_t)(k * 48 + j)];
        ref[(size_t)(i * 48 + j)] = (float)std::max(sum, 0.0); // the Relu after
      }
    std::vector<std::string> plans = everyCandidate(model, {20, 27}, t, ref, 27);
    CHECK(countWith(plans, "unroll=4") > 0);
    CHECK(countWith(plans, "rows_outer") > 0);
  }
  SECTION("a depthwise convolution: stack planes and grid roundings") {
    std::string model =
        oneNodeModel("Conv", {1, 6, 9, 9}, {6, 1, 5, 5}, {6}, {1, 6, 5, 5},
                     {{"kernel_shape", 5}, {"pads", 2}, {"strides", 2}, {"group", 6}});
    std::vector<std::string> plans = everyCandidate(
        model, {1, 6, 9, 9}, t, referenceConv({1, 6, 9, 9}, 6, 5, 2, 2, 6), 25);
    CHECK(plans.size() == 6);
    CHECK(countWith(plans, "plane<=0 ") == 2);
  }
  SECTION("a strided convolution with cache blocks") {
    // 20 x 3x3 = 180 reduction steps over a small L1: blocked tiles.
    std::string model = oneNodeModel("Conv", {1, 20, 7, 9}, {40, 20, 3, 3}, {40}, {1, 40, 4, 5},
                                     {{"kernel_shape", 3}, {"pads", 1}, {"strides", 2}});
    TargetDesc small = avx512(2048, 4096);
    std::vector<std::string> plans = everyCandidate(
        model, {1, 20, 7, 9}, small, referenceConv({1, 20, 7, 9}, 40, 3, 1, 2, 1), 180);
    CHECK(plans.size() > 2);
    CHECK(countWith(plans, "blocks=") > 0);
  }
}

TEST_CASE("every dot-product tile of schedule search equals the plain integer kernels",
          "[tune][quantization]") {
  // A QLinearConv on VNNI: each candidate tile against the plain kernels.
  Shape x = {1, 20, 5, 8};
  std::string model = qlinearConvModel(x, 40, 3, 1, 1, 2, 7, {1, 40, 5, 8});
  std::vector<float> in = randomValues(x, 4);
  TargetDesc plain = avx512(32768, 524288);
  std::vector<float> want = compileAndRun(model, plain, in, nullptr);
  TargetDesc dot = plain;
  dot.IntMacs.push_back(MacForm::X86Vnni);
  dot.IntMacs.push_back(MacForm::X86Madd16);
  std::vector<std::string> plans;
  compileAndRun(model, dot, in, nullptr,
                [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
                  for (const ir::KernelPlan &p : c)
                    plans.push_back(p.str());
                  return size_t{0};
                });
  REQUIRE(plans.size() > 1);
  // VNNI's quads and, where the target has both, pmaddwd's pairs.
  CHECK(countWith(plans, " pairs") > 0);
  CHECK(countWith(plans, " pairs") < plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    CHECK(plans[i].find("dot_tile=") != std::string::npos);
    std::vector<float> got =
        compileAndRun(model, dot, in, nullptr,
                      [&](const ir::Node &, const std::vector<ir::KernelPlan> &) { return i; });
    checkEqualAndVarying(got, want);
  }
}

TEST_CASE("every candidate of a NEON-shaped target, compiled by LLVM, computes the definition",
          "[tune]") {
  // The plans of an AArch64 Cortex-A76 (4 lanes, cache blocks for 512
  // channels) lowered and compiled for this machine by LLVM, where stack
  // buffers are not zeroed as the interpreter's are: a blocked tile's
  // partial sums once started from garbage here (the kernel vectorizer
  // turned their zeroing loop of 4-lane stores into strided stores).
  TargetDesc t = llvmgen::describeTarget(llvmgen::resolveTarget("aarch64-linux", "cortex-a76", ""));
  std::string model = oneNodeModel("Conv", {1, 512, 7, 7}, {16, 512, 3, 3}, {16}, {1, 16, 7, 7},
                                   {{"kernel_shape", 3}, {"pads", 1}});
  std::vector<float> in = randomValues({1, 512, 7, 7}, 3);
  std::vector<float> ref = referenceConv({1, 512, 7, 7}, 16, 3, 1, 1, 1);
  std::vector<std::string> plans;
  auto compile = [&](const passes::PlanChooser &choose) {
    auto g = onnx::loadModelBytes(model, "test.onnx", "", {});
    PipelineOptions po;
    po.Name = "m";
    po.Target = t;
    po.ChoosePlan = choose;
    return runPipeline(*g, po);
  };
  compile([&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
    for (const ir::KernelPlan &p : c)
      plans.push_back(p.str());
    return size_t{0};
  });
  CHECK(countWith(plans, "blocks=") > 0);
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    kir::Program p =
        compile([&](const ir::Node &, const std::vector<ir::KernelPlan> &) { return i; });
    llvmgen::HostModel host(p);
    std::vector<float> out(ref.size(), NAN);
    host.run({in.data()}, {out.data()});
    size_t bad = 0;
    for (size_t k = 0; k < ref.size(); ++k)
      if (!(std::fabs(out[k] - ref[k]) <= 2e-7 * 4608) && bad++ == 0)
        UNSCOPED_INFO("first difference at " << k << ": " << out[k] << " vs " << ref[k]);
    CHECK(bad == 0);
  }
}
