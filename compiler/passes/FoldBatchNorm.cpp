//===- FoldBatchNorm.cpp - BatchNormalization into the weights ------------===//
//
// fold-batch-norm: an inference BatchNormalization whose input comes only
// from a Conv or a Gemm with constant weights is a per-output-channel affine
// map, so it folds into that node:
//
//   s  = scale / sqrt(var + epsilon)
//   W' = W * s        (s along the weights' output-channel axis)
//   B' = (B - mean) * s + bias        (B = 0 when the node has no bias)
//
// The pass writes these formulas as ordinary nodes (Add, Sqrt, Div, Mul,
// Sub, Reshape) on the constants and lets infer-and-fold evaluate them, so
// the arithmetic is the ops' own lowering run by the interpreter: there is
// no second implementation of any op. The producer then writes the
// BatchNormalization's output value directly.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include <set>

namespace mlcc::passes {

namespace {

/// Builds the new nodes before the producer, in order.
class Rewriter {
public:
  Rewriter(ir::Graph &g, const std::string &base, ir::Value *guard)
      : G(g), Base(base), Guard(guard) {}

  ir::Value *node(const std::string &op, std::vector<ir::Value *> inputs) {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(Base + "/" + op);
    n->OpType = op;
    n->Opset = 13;
    n->Inputs = std::move(inputs);
    n->Guard = Guard;
    ir::Value *out = G.addValue(G.uniqueValueName(n->Name));
    out->Producer = n.get();
    n->Outputs = {out};
    Nodes.push_back(std::move(n));
    return out;
  }

  ir::Value *constant(TensorPtr t) {
    ir::Value *v = G.addValue(G.uniqueValueName(Base + "/const"),
                              {t->dtype(), t->shape()});
    v->Const = std::move(t);
    return v;
  }

  ir::Graph &G;
  std::string Base;
  ir::Value *Guard;
  std::vector<std::unique_ptr<ir::Node>> Nodes;
};

bool allConstant(const ir::Node &n, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (!n.hasInput(i) || !n.Inputs[i]->Const)
      return false;
  return true;
}

/// The weights' output-channel axis for a per-channel scale, or -1 when
/// `p` cannot absorb a BatchNormalization over channel axis 1.
int64_t outputChannelAxis(const ir::Node &p) {
  if (p.Domain != "" || !allConstant(p, {1}) || (p.hasInput(2) && !p.Inputs[2]->Const))
    return -1;
  if (p.OpType == "Conv")
    return 0; // W: [M, C/group, k...]
  if (p.OpType == "Gemm" && p.Outputs[0]->Type.rank() == 2 &&
      p.attrFloat("alpha", 1.0) == 1.0 && p.attrFloat("beta", 1.0) == 1.0 &&
      (!p.hasInput(2) || p.inShape(2).size() <= 1 ||
       p.inShape(2) == p.Outputs[0]->Type.Dims))
    return p.attrInt("transB", 0) ? 0 : 1; // B: [N, K] or [K, N]
  return -1;
}

} // namespace

void foldBatchNorm(ir::Graph &g) {
  std::map<const ir::Value *, int> uses = g.useCounts();
  std::vector<std::pair<ir::Node *, std::vector<std::unique_ptr<ir::Node>>>> inserts;
  std::set<const ir::Node *> removed;
  for (auto &bnPtr : g.Nodes) {
    ir::Node &bn = *bnPtr;
    if (bn.OpType != "BatchNormalization" || bn.Domain != "" ||
        bn.attrInt("training_mode", 0) != 0 || bn.Outputs.size() != 1 ||
        !allConstant(bn, {1, 2, 3, 4}))
      continue;
    ir::Value *x = bn.Inputs[0];
    ir::Node *p = x->Producer;
    if (!p || uses[x] != 1 || g.isGraphOutput(x) || removed.count(p) || p->Guard != bn.Guard ||
        !isFloat(x->Type.Type) || x->Type.rank() < 2)
      continue;
    int64_t axis = outputChannelAxis(*p);
    if (axis < 0)
      continue;
    DType t = x->Type.Type;
    int64_t m = x->Type.Dims[1];
    const Shape &wShape = p->inShape(1);
    if (wShape[(size_t)axis] != m)
      continue;

    Rewriter r(g, bn.Name, p->Guard);
    ir::Value *eps = r.constant(std::make_shared<Tensor>(
        Tensor::fromDoubles(t, {}, {bn.attrFloat("epsilon", 1e-5)})));
    ir::Value *s = r.node("Div", {bn.Inputs[1],
                                  r.node("Sqrt", {r.node("Add", {bn.Inputs[4], eps})})});
    Shape sShape(wShape.size(), 1);
    sShape[(size_t)axis] = m;
    std::vector<int64_t> sDims(sShape.begin(), sShape.end());
    ir::Value *sw = r.node(
        "Reshape", {s, r.constant(std::make_shared<Tensor>(Tensor::fromInts(
                           DType::I64, {(int64_t)sDims.size()}, sDims)))});
    ir::Value *w = r.node("Mul", {p->Inputs[1], sw});
    ir::Value *centered = p->hasInput(2) ? r.node("Sub", {p->Inputs[2], bn.Inputs[3]})
                                         : r.node("Neg", {bn.Inputs[3]});
    ir::Value *bias = r.node("Add", {r.node("Mul", {centered, s}), bn.Inputs[2]});
    p->Inputs[1] = w;
    if (p->Inputs.size() < 3)
      p->Inputs.resize(3, nullptr);
    p->Inputs[2] = bias;
    // The producer writes the BatchNormalization's output.
    ir::Value *y = bn.Outputs[0];
    p->Outputs[0] = y;
    y->Producer = p;
    x->Producer = nullptr;
    removed.insert(&bn);
    inserts.emplace_back(p, std::move(r.Nodes));
  }
  if (inserts.empty())
    return;
  std::vector<std::unique_ptr<ir::Node>> nodes;
  for (auto &n : g.Nodes) {
    if (removed.count(n.get()))
      continue;
    for (auto &[before, added] : inserts)
      if (before == n.get())
        for (auto &a : added)
          nodes.push_back(std::move(a));
    nodes.push_back(std::move(n));
  }
  g.Nodes = std::move(nodes);
}

} // namespace mlcc::passes
