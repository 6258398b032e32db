//===- RecurrentTest.cpp - LSTM and GRU with constant weights -------------===//
//
// Recurrent nodes with constant weights compiled in-process and run through
// the interpreter against the definition in double: the LSTM's gate rows
// (weights transposed once), the GRU's gate rows summed in blocks of
// registers with every candidate of schedule search.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

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
