//===- FusedKernelTest.cpp - Elementwise chains in one kernel -------------===//
//
// fuse-ops on a whole program: an unrolled LSTM cell's elementwise update
// is one kernel, its operands' single-use producers computed inside it.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

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
