// Graph simplifications of infer-and-fold: nodes that compute their input
// unchanged are removed.
#include "compiler/passes/Passes.h"
#include "compiler/quantizer/Quantize.h"

#include <catch2/catch.hpp>

using namespace mlcc;

namespace {

/// x -> Pad(pads) -> Relu -> y, x a graph input of shape [1, 2, 3, 3].
struct PadThenRelu {
  ir::Graph G;
  PadThenRelu(std::vector<int64_t> pads) {
    ir::TensorType f{DType::F32, {1, 2, 3, 3}};
    ir::Value *x = G.addValue("x", f);
    G.Inputs.push_back(x);
    ir::Value *p = G.addValue("pads", {DType::I64, {8}});
    p->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {8}, pads));
    ir::Value *padded = G.addValue("padded");
    ir::Value *y = G.addValue("y");
    auto pad = std::make_unique<ir::Node>();
    pad->Name = "pad";
    pad->OpType = "Pad";
    pad->Opset = 13;
    pad->Inputs = {x, p};
    pad->Outputs = {padded};
    padded->Producer = pad.get();
    G.addNode(std::move(pad));
    auto relu = std::make_unique<ir::Node>();
    relu->Name = "relu";
    relu->OpType = "Relu";
    relu->Opset = 14;
    relu->Inputs = {padded};
    relu->Outputs = {y};
    y->Producer = relu.get();
    G.addNode(std::move(relu));
    G.Outputs = {y};
  }
};

} // namespace

TEST_CASE("infer-and-fold removes a Pad that adds nothing", "[passes]") {
  PadThenRelu empty({0, 0, 0, 0, 0, 0, 0, 0});
  passes::inferAndFold(empty.G, {});
  REQUIRE(empty.G.Nodes.size() == 1);
  CHECK(empty.G.Nodes[0]->OpType == "Relu");
  CHECK(empty.G.Nodes[0]->Inputs[0] == empty.G.Inputs[0]);

  PadThenRelu some({0, 0, 1, 0, 0, 0, 0, 1});
  passes::inferAndFold(some.G, {});
  REQUIRE(some.G.Nodes.size() == 2);
  CHECK(some.G.Nodes[0]->OpType == "Pad");
  CHECK(some.G.Outputs[0]->Type.Dims == Shape{1, 2, 4, 4});
}

TEST_CASE("the float nodes of an int8 model are named", "[passes][quantization]") {
  // x(u8) -> QLinearConv -> DequantizeLinear -> Tanh -> QuantizeLinear -> y:
  // the Tanh computes in float between the integer ops.
  auto graph = [](bool integer) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value *v = g->addValue("x", {integer ? DType::U8 : DType::F32, {1, 4}});
    g->Inputs.push_back(v);
    auto add = [&](const std::string &name, const std::string &op, DType out) {
      auto n = std::make_unique<ir::Node>();
      n->Name = name;
      n->OpType = op;
      n->Inputs = {v};
      v = g->addValue(name + "_out", {out, {1, 4}});
      v->Producer = n.get();
      n->Outputs = {v};
      g->addNode(std::move(n));
    };
    if (integer) {
      add("conv", "QLinearConv", DType::U8);
      add("dq", "DequantizeLinear", DType::F32);
    } else {
      add("conv", "Conv", DType::F32);
    }
    add("tanh", "Tanh", DType::F32);
    if (integer)
      add("q", "QuantizeLinear", DType::U8);
    g->Outputs = {v};
    return g;
  };
  CHECK(quantizer::floatFallbacks(*graph(true)) == std::vector<std::string>{"tanh (Tanh)"});
  CHECK(quantizer::floatFallbacks(*graph(false)).empty());
}
