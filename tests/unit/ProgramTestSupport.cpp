//===- ProgramTestSupport.cpp - Whole programs run by the tests -----------===//
//
// The model builders and the in-process compile-and-run of
// ProgramTestSupport.h.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include "compiler/kernel/Interpreter.h"
#include "frontends/onnx/OnnxLoader.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace mlcc::testsupport {

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

pb::Graph *newGraph(pb::Model &m, const Shape &x) {
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  pb::Graph *g = m.mutable_graph();
  g->set_name("g");
  addFloatInfo(g->add_input(), "X", x);
  return g;
}

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

std::vector<float> compileAndRun(const std::string &model, const TargetDesc &target,
                                 const std::vector<float> &x, std::string *kernels,
                                 const passes::PlanChooser &choose) {
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

std::vector<float> referenceConv(const Shape &x, int64_t m, int64_t k, int64_t pad,
                                 int64_t stride, int64_t group, float (*operand)(float)) {
  int64_t c = x[1], h = x[2], wd = x[3], cg = c / group, mg = m / group;
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  std::vector<float> in = randomValues(x, 3), w = randomValues({m, cg, k, k}, 1),
                     b = randomValues({m}, 2), y((size_t)(m * oh * ow));
  if (operand)
    for (std::vector<float> *v : {&in, &w, &b})
      for (float &f : *v)
        f = operand(f);
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

std::string qlinearConvModel(const Shape &x, int64_t m, int64_t k, int64_t pad, int64_t stride,
                             int xtype, int64_t xzp, const Shape &y, int64_t group) {
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

} // namespace mlcc::testsupport
