// Graph simplifications of infer-and-fold: nodes that compute their input
// unchanged are removed.
#include "compiler/passes/Passes.h"

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
