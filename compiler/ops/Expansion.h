//===- Expansion.h - Building the nodes that replace a node ---------------===//
//
// OpSchema::Expand replaces a node by standard nodes before inference (the
// contrib ops of ONNX Runtime, If/Loop/Scan). Expansion collects them:
// each new node is named after the node it replaces ("attn/Add"), runs
// under its guard (set by inference), and may produce one of the node's
// own outputs (the same Value objects, as Expand requires).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::ops {

using Nodes = std::vector<std::unique_ptr<ir::Node>>;

/// Collects the nodes that replace a node.
struct Expansion {
  const ir::Node &Owner;
  ir::Graph &G;
  Nodes Out;

  /// A node computing `out` (a new value when null); returns `out`.
  ir::Value *add(const std::string &op, int64_t opset, std::vector<ir::Value *> ins,
                 std::map<std::string, ir::Attribute> attrs = {},
                 ir::Value *out = nullptr, const std::string &domain = "") {
    if (!out)
      out = G.addValue(G.uniqueValueName(Owner.Name + "/" + op));
    while (!ins.empty() && !ins.back())
      ins.pop_back();
    auto node = std::make_unique<ir::Node>();
    node->Name = G.uniqueNodeName(Owner.Name + "/" + op);
    node->OpType = op;
    node->Domain = domain;
    node->Opset = opset;
    node->Attrs = std::move(attrs);
    node->Inputs = std::move(ins);
    node->Outputs = {out};
    out->Producer = node.get();
    Out.push_back(std::move(node));
    return out;
  }

  /// Like add, for a node with several outputs (null: omitted).
  void addMulti(const std::string &op, int64_t opset, std::vector<ir::Value *> ins,
                std::map<std::string, ir::Attribute> attrs, std::vector<ir::Value *> outs) {
    add(op, opset, std::move(ins), std::move(attrs), outs.at(0));
    ir::Node &node = *Out.back();
    while (!outs.empty() && !outs.back())
      outs.pop_back();
    node.Outputs = outs;
    for (ir::Value *v : outs)
      if (v)
        v->Producer = &node;
  }

  ir::Value *constant(Tensor t, const std::string &hint) {
    ir::Value *v = G.addValue(G.uniqueValueName(Owner.Name + "/" + hint),
                              {t.dtype(), t.shape()});
    v->Const = std::make_shared<Tensor>(std::move(t));
    return v;
  }

  ir::Value *input(size_t i) const { return Owner.hasInput(i) ? Owner.Inputs[i] : nullptr; }
  /// Output i of the node when the graph has it, else null.
  ir::Value *output(size_t i) const {
    return i < Owner.Outputs.size() ? Owner.Outputs[i] : nullptr;
  }
};

} // namespace mlcc::ops
