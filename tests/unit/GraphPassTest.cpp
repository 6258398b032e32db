// Graph simplifications of infer-and-fold: nodes that compute their input
// unchanged are removed. Guarded nodes (an If's branches, ir::Node::Guard)
// through the passes and into guarded calls.
#include "compiler/kernel/Program.h"
#include "compiler/passes/Passes.h"
#include "compiler/quantizer/Quantize.h"

#include "PassTestSupport.h"

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

namespace {

/// y = Where(c, Relu(x) [if c], Sigmoid(x) [if not c]) + Sigmoid(x): the
/// branches of an If as its expansion guards them (ir::Node::Guard), and
/// the same Sigmoid unguarded.
struct GuardedBranches {
  ir::Graph G;
  ir::Value *X, *C, *NotC = nullptr;
  ir::Node *add(const std::string &name, const std::string &op, int opset,
                std::vector<ir::Value *> ins, ir::Value *guard = nullptr) {
    auto n = std::make_unique<ir::Node>();
    n->Name = name;
    n->OpType = op;
    n->Opset = opset;
    n->Inputs = std::move(ins);
    n->Guard = guard;
    ir::Value *out = G.addValue(name);
    out->Producer = n.get();
    n->Outputs = {out};
    return G.addNode(std::move(n));
  }
  GuardedBranches() {
    X = G.addValue("x", {DType::F32, {4, 8}});
    C = G.addValue("c", {DType::Bool, {}});
    G.Inputs = {X, C};
    NotC = add("not_c", "Not", 1, {C})->Outputs[0];
    ir::Value *a = add("relu", "Relu", 14, {X}, C)->Outputs[0];
    ir::Value *b = add("sigmoid", "Sigmoid", 13, {X}, NotC)->Outputs[0];
    ir::Value *b2 = add("sigmoid_always", "Sigmoid", 13, {X})->Outputs[0];
    ir::Value *w = add("select", "Where", 16, {C, a, b})->Outputs[0];
    G.Outputs = {add("sum", "Add", 14, {w, b2})->Outputs[0]};
  }
  const ir::Node *node(const std::string &name) const {
    for (auto &n : G.Nodes)
      if (n->Name == name)
        return n.get();
    return nullptr;
  }
};

} // namespace

TEST_CASE("guarded nodes: their guard is a use, and they stay apart", "[passes]") {
  GuardedBranches b;
  passes::inferAndFold(b.G, {});
  // The Not is read only as a guard: dead-code elimination keeps it, and
  // use counts count it.
  passes::eliminateDeadCode(b.G);
  REQUIRE(b.node("not_c"));
  CHECK(b.G.useCounts()[b.NotC] == 1);
  // The guarded Sigmoid and the unguarded one compute the same values only
  // when the guard holds: not merged.
  passes::eliminateCommonSubexpressions(b.G);
  passes::eliminateDeadCode(b.G);
  REQUIRE(b.node("sigmoid"));
  REQUIRE(b.node("sigmoid_always"));
  // A chain of elementwise nodes fuses only under one guard: x -> Relu [if
  // c] -> Neg [if c, or always] -> y.
  for (bool same : {true, false}) {
    GuardedBranches u;
    u.G.Nodes.clear();
    ir::Value *r = u.add("relu", "Relu", 14, {u.X}, u.C)->Outputs[0];
    u.G.Outputs = {u.add("neg", "Neg", 13, {r}, same ? u.C : nullptr)->Outputs[0]};
    passes::inferAndFold(u.G, {});
    passes::fuseOps(u.G);
    const ir::Node *relu = u.node("relu");
    if (same) {
      CHECK(relu->Group >= 0);
      CHECK(relu->Group == u.node("neg")->Group);
    } else {
      CHECK((relu->Group < 0 || relu->Group != u.node("neg")->Group));
    }
  }
  // replaceAllUses reaches guards.
  ir::Value *other = b.G.addValue("other", {DType::Bool, {}});
  b.G.replaceAllUses(b.C, other);
  CHECK(b.node("relu")->Guard == other);
}

TEST_CASE("infer-and-fold: a Where with a constant condition is its operand", "[passes]") {
  for (bool take : {true, false}) {
    GuardedBranches b;
    b.C->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::Bool, {}, {take ? 1 : 0}));
    b.G.Inputs = {b.X};
    passes::inferAndFold(b.G, {});
    passes::eliminateDeadCode(b.G);
    // The guards folded: the branch taken is left unguarded (its guard, c
    // or Not(c), is true), the other is dead.
    CHECK(!b.node("select"));
    CHECK(!b.node(take ? "sigmoid" : "relu"));
    const ir::Node *kept = b.node(take ? "relu" : "sigmoid");
    REQUIRE(kept);
    CHECK(kept->Guard == nullptr);
  }
}

TEST_CASE("a call's guard keeps its buffer alive, and lowering guards the branches' calls",
          "[passes]") {
  GuardedBranches b;
  passes::inferAndFold(b.G, {});
  passes::fuseOps(b.G);
  kir::Program p = passes::lowerToProgram(b.G, "m");
  // The Relu runs if input 1 (c); the Sigmoid if the Not's buffer, which
  // no call reads as an argument after the Not: the guard is its last use.
  int64_t notCall = -1, guarded = 0;
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    const kir::Call &call = p.Calls[c];
    if (call.Nodes[0].Name == "not_c")
      notCall = (int64_t)c;
    if (call.Nodes[0].Name == "relu") {
      REQUIRE(call.Guard);
      CHECK(call.Guard->Kind == kir::StorageKind::Input);
      CHECK(call.Guard->Index == 1);
    }
    if (call.Nodes[0].Name == "sigmoid") {
      REQUIRE(call.Guard);
      REQUIRE(call.Guard->Kind == kir::StorageKind::Arena);
      std::vector<kir::Lifetime> life = kir::bufferLifetimes(p);
      CHECK(life[call.Guard->Index].First == notCall);
      CHECK(life[call.Guard->Index].Last == (int64_t)c);
    }
    guarded += call.Guard.has_value();
  }
  CHECK(guarded == 2);
  CHECK(kir::printProgram(p).find("if input 1: ") != std::string::npos);
}

namespace {

/// A Loop of 3 iterations (a constant trip count, no condition) carrying
/// x[4] <- x + 1, each new x also a scan output (of shape [3, 4]).
struct CountedLoop {
  ir::Graph G;
  ir::Value *Carried = nullptr, *Scanned = nullptr;
  CountedLoop() {
    auto body = std::make_shared<ir::Graph>();
    ir::Value *iter = body->addValue("iter", {DType::I64, {}});
    ir::Value *ci = body->addValue("ci", {DType::Bool, {}});
    ir::Value *xi = body->addValue("xi", {DType::F32, {4}});
    body->Inputs = {iter, ci, xi};
    ir::Value *one = body->addValue("one", {DType::F32, {}});
    one->Const = std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, {}, {1.0}));
    auto bodyNode = [&](const std::string &name, const std::string &op,
                        std::vector<ir::Value *> ins) {
      auto n = std::make_unique<ir::Node>();
      n->Name = name;
      n->OpType = op;
      n->Opset = 14;
      n->Inputs = std::move(ins);
      ir::Value *out = body->addValue(name);
      out->Producer = n.get();
      n->Outputs = {out};
      return body->addNode(std::move(n))->Outputs[0];
    };
    ir::Value *co = bodyNode("co", "Identity", {ci});
    ir::Value *xo = bodyNode("xo", "Add", {xi, one});
    ir::Value *xs = bodyNode("xs", "Identity", {xo});
    body->Outputs = {co, xo, xs};

    ir::Value *m = G.addValue("m", {DType::I64, {}});
    m->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {}, {3}));
    ir::Value *x = G.addValue("x", {DType::F32, {4}});
    G.Inputs = {x};
    auto loop = std::make_unique<ir::Node>();
    loop->Name = "loop";
    loop->OpType = "Loop";
    loop->Opset = 13;
    loop->Inputs = {m, nullptr, x};
    Carried = G.addValue("carried");
    Scanned = G.addValue("scanned");
    Carried->Producer = Scanned->Producer = loop.get();
    loop->Outputs = {Carried, Scanned};
    ir::Attribute a;
    a.Kind = ir::AttrKind::Graph;
    a.G = body;
    loop->Attrs["body"] = a;
    G.addNode(std::move(loop));
    G.Outputs = {Carried, Scanned};
  }
  size_t count(const std::string &op) const {
    size_t k = 0;
    for (auto &n : G.Nodes)
      k += n->OpType == op;
    return k;
  }
  bool hasNodeUnder(const std::string &prefix) const {
    for (auto &n : G.Nodes)
      if (n->Name.compare(0, prefix.size(), prefix) == 0)
        return true;
    return false;
  }
};

} // namespace

TEST_CASE("a Loop whose trip count follows a bounded dimension unrolls to the most",
          "[passes]") {
  SECTION("a count known at compile time is recorded, and unrolled as it is") {
    CountedLoop l;
    passes::inferAndFold(l.G, {});
    passes::eliminateDeadCode(l.G);
    CHECK(l.G.TripCounts.at("loop") == 3);
    CHECK(l.count("TripCount") == 0);
    CHECK(l.hasNodeUnder("loop/it2/"));
    CHECK(!l.hasNodeUnder("loop/it3/"));
    CHECK(l.Scanned->Type.Dims == Shape{3, 4});
    CHECK(l.G.SpareIterations.empty());
  }
  SECTION("a TripRule: guarded iterations to the most, the count computed at run time") {
    CountedLoop l;
    l.G.TripRules["loop"] = ir::TripRule{{1}, 0, 5};
    passes::inferAndFold(l.G, {});
    passes::eliminateDeadCode(l.G);
    CHECK(l.G.TripCounts.at("loop") == 3); // this compile's count, checked against the rule
    CHECK(l.G.Decisions.empty());
    REQUIRE(l.count("TripCount") == 1);
    // Iterations 3 and 4 (beyond this compile's count of 3) are spare
    // copies of iteration 2; every iteration's nodes run under a guard.
    CHECK(l.hasNodeUnder("loop/it4/"));
    CHECK(l.G.SpareIterations == std::vector<std::string>{"loop/it3/", "loop/it4/"});
    for (auto &n : l.G.Nodes)
      if (n->Name.compare(0, 8, "loop/it0") == 0 || n->Name.compare(0, 8, "loop/it4") == 0)
        CHECK(n->Guard);
    // The scan output is the first 3 (this compile's count) of 5, the
    // carried value selected after each iteration.
    CHECK(l.Scanned->Type.Dims == Shape{3, 4});
    CHECK(l.Carried->Type.Dims == Shape{4});
    CHECK(l.count("Where") == 5);
    CHECK(l.count("Slice") == 1);
  }
  SECTION("a count above the rule's most is an error") {
    CountedLoop l;
    l.G.TripRules["loop"] = ir::TripRule{{1}, 0, 2};
    CHECK_THROWS_WITH(passes::inferAndFold(l.G, {}),
                      Catch::Contains("above the most its bounded dimensions give (2)"));
  }
}

namespace {
/// x -> Cast(mid) -> Cast(out) -> Abs -> y, and the nodes left after
/// infer-and-fold and dead-code elimination.
std::vector<std::string> castPair(DType in, DType mid, DType out) {
  passtest::Builder b;
  ir::Value *x = b.input("x", in, {4, 8});
  auto to = [](DType t) { return ir::intAttr((int64_t)t); };
  ir::Value *m = b.node("Cast", {x}, "m", {mid, {4, 8}}, {{"to", to(mid)}});
  ir::Value *c = b.node("Cast", {m}, "c", {out, {4, 8}}, {{"to", to(out)}});
  ir::Value *y = b.node("Abs", {c}, "y", {out, {4, 8}});
  b.G.Outputs = {y};
  passes::inferAndFold(b.G, {});
  passes::eliminateDeadCode(b.G);
  std::vector<std::string> ops;
  for (auto &n : b.G.Nodes)
    ops.push_back(n->OpType + (n->Inputs[0] == x ? "(x)" : ""));
  return ops;
}
} // namespace

TEST_CASE("infer-and-fold: a Cast after a Cast that only widened reads around it", "[passes]") {
  using V = std::vector<std::string>;
  // Widened exactly, then back: both Casts go.
  CHECK(castPair(DType::F16, DType::F32, DType::F16) == V{"Abs(x)"});
  CHECK(castPair(DType::I8, DType::I32, DType::I8) == V{"Abs(x)"});
  CHECK(castPair(DType::U8, DType::I16, DType::U8) == V{"Abs(x)"});
  // Widened exactly, then to a third type: one Cast from the input.
  CHECK(castPair(DType::I8, DType::I32, DType::F32) == V{"Cast(x)", "Abs"});
  CHECK(castPair(DType::BF16, DType::F32, DType::F16) == V{"Cast(x)", "Abs"});
  // The first Cast rounds or may wrap: both stay.
  CHECK(castPair(DType::F32, DType::F16, DType::F32) == V{"Cast(x)", "Cast", "Abs"});
  CHECK(castPair(DType::I32, DType::F32, DType::I32) == V{"Cast(x)", "Cast", "Abs"});
  CHECK(castPair(DType::I16, DType::U16, DType::I16) == V{"Cast(x)", "Cast", "Abs"});
  CHECK(castPair(DType::U16, DType::I16, DType::U16) == V{"Cast(x)", "Cast", "Abs"});
  CHECK(castPair(DType::I32, DType::F16, DType::I32) == V{"Cast(x)", "Cast", "Abs"});
}
