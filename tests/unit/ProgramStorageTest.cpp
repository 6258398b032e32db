//===- ProgramStorageTest.cpp - Values written in place, views ------------===//
//
// Where lower-to-kernels puts values: Concat inputs written in place into
// the Concat's output (nested too), Split, Slice, Gather and unit-axis
// Transpose outputs as views into their input; no copy kernel, the same
// result as the definition.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Sets the integer attribute `name` of `n` to `v`.
pb::Node *intAttr(pb::Node *n, const char *name, int64_t v) {
  pb::Attribute *a = n->add_attribute();
  a->set_name(name);
  a->set_type(2);
  a->set_i(v);
  return n;
}

/// Softmax over each row of 4 of `v` (the last axis of the tests' shapes).
std::vector<float> softmaxRows(const std::vector<float> &v) {
  std::vector<float> r;
  for (size_t row = 0; row < v.size() / 4; ++row) {
    double mx = -1e30, sum = 0;
    for (size_t j = 0; j < 4; ++j)
      mx = std::max(mx, (double)v[row * 4 + j]);
    for (size_t j = 0; j < 4; ++j)
      sum += std::exp(v[row * 4 + j] - mx);
    for (size_t j = 0; j < 4; ++j)
      r.push_back((float)(std::exp(v[row * 4 + j] - mx) / sum));
  }
  return r;
}

} // namespace

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
  std::vector<float> want = softmaxRows(d);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("row " << i / 4 << " column " << i % 4);
    CHECK(std::fabs(got[i] - want[i]) < 1e-6);
  }
}

TEST_CASE("growing concatenations share one buffer: each is a view of the next one's start",
          "[program]") {
  // DenseNet's block: A = -X; F1 = relu(A); C1 = Concat(A, F1);
  // F2 = Softmax(C1) (last axis); C2 = Concat(A, F1, F2); Y = Softmax(C2).
  // C2 holds A, F1, F2 written in place; C1 is its first part, no copy.
  const Shape x = {1, 2, 3, 4};
  pb::Model m;
  pb::Graph *g = newGraph(m, x);
  addNode(g, "Neg", {"X"}, "A");
  addNode(g, "Relu", {"A"}, "F1");
  intAttr(addNode(g, "Concat", {"A", "F1"}, "C1"), "axis", 1);
  intAttr(addNode(g, "Softmax", {"C1"}, "F2"), "axis", -1);
  intAttr(addNode(g, "Concat", {"A", "F1", "F2"}, "C2"), "axis", 1);
  intAttr(addNode(g, "Softmax", {"C2"}, "Y"), "axis", -1);
  addFloatInfo(g->add_output(), "Y", {1, 8, 3, 4});
  std::string text;
  std::vector<float> in = randomValues(x, 5);
  std::vector<float> got = compileAndRun(m.SerializeAsString(), avx512(32768, 524288), in, &text);
  INFO(text);
  CHECK(text.find("concat") == std::string::npos); // no copy kernel for either
  CHECK(text.find("C1: 192 bytes at 0 (part of buffer") != std::string::npos);
  // The definition.
  std::vector<float> a, f1, c1, f2;
  for (float v : in)
    a.push_back(-v);
  for (float v : a)
    f1.push_back(std::max(v, 0.0f));
  c1 = a;
  c1.insert(c1.end(), f1.begin(), f1.end());
  f2 = softmaxRows(c1);
  std::vector<float> c2 = c1;
  c2.insert(c2.end(), f2.begin(), f2.end());
  std::vector<float> y = softmaxRows(c2);
  REQUIRE(got.size() == y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    INFO("element " << i);
    CHECK(std::fabs(got[i] - y[i]) < 1e-6);
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
