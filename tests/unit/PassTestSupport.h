//===- PassTestSupport.h - Small graphs for the one-pass tests -------------===//
//
// What PassTest.cpp and LoweringPassTest.cpp share: a Builder that makes a
// graph value by value, and structure(), the graph as one line per node,
// which a test compares with the lines it expects (Before -> Expected).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace mlcc::passtest {

/// Builds a graph value by value (types given, as inference would set them).
struct Builder {
  ir::Graph G;
  Builder() { G.Opsets[""] = 17; }
  ir::Value *input(const std::string &name, DType t, Shape dims) {
    ir::Value *v = G.addValue(name, {t, std::move(dims)});
    G.Inputs.push_back(v);
    return v;
  }
  ir::Value *constant(const std::string &name, DType t, Shape dims, std::vector<double> values) {
    ir::Value *v = G.addValue(name, {t, dims});
    v->Const = std::make_shared<Tensor>(
        isFloat(t) ? Tensor::fromDoubles(t, dims, values)
                   : Tensor::fromInts(t, dims, std::vector<int64_t>(values.begin(), values.end())));
    return v;
  }
  /// A node named `out` + "_node" with one output `out` of `type`.
  ir::Value *node(const std::string &op, std::vector<ir::Value *> ins, const std::string &out,
                  ir::TensorType type, std::map<std::string, ir::Attribute> attrs = {}) {
    auto n = std::make_unique<ir::Node>();
    n->Name = out + "_node";
    n->OpType = op;
    n->Opset = 17;
    n->Inputs = std::move(ins);
    n->Attrs = std::move(attrs);
    ir::Value *v = G.addValue(out, std::move(type));
    n->Outputs = {v};
    v->Producer = n.get();
    G.addNode(std::move(n));
    return v;
  }
};

/// The graph's structure: one line per node, "Op(inputs) -> outputs", a
/// constant input written as its type, an omitted one as "-", another value
/// by its name when it is a graph input, else by its producer's index
/// ("%i", "%i.k" for output k of several) or by its name when it is a graph
/// output (names a pass makes up do not matter).
inline std::vector<std::string> structure(const ir::Graph &g) {
  std::map<const ir::Value *, std::string> names;
  for (const ir::Value *v : g.Inputs)
    names[v] = v->Name;
  std::vector<std::string> lines;
  for (size_t i = 0; i < g.Nodes.size(); ++i) {
    const ir::Node &n = *g.Nodes[i];
    std::ostringstream s;
    s << (n.Domain.empty() ? "" : n.Domain + ".") << n.OpType << "(";
    for (size_t k = 0; k < n.Inputs.size(); ++k) {
      const ir::Value *v = n.Inputs[k];
      s << (k ? ", " : "");
      if (!v)
        s << "-";
      else if (v->Const)
        s << "const " << dtypeName(v->Type.Type) << shapeToString(v->Type.Dims);
      else
        s << (names.count(v) ? names[v] : "?" + v->Name);
    }
    s << ")";
    for (size_t k = 0; k < n.Outputs.size(); ++k) {
      std::string name = "%" + std::to_string(i) + (n.Outputs.size() > 1 ? "." + std::to_string(k) : "");
      if (n.Outputs[k] && g.isGraphOutput(n.Outputs[k]))
        name = n.Outputs[k]->Name;
      if (n.Outputs[k])
        names[n.Outputs[k]] = name;
      s << (k ? ", " : " -> ") << name;
    }
    lines.push_back(s.str());
  }
  return lines;
}

} // namespace mlcc::passtest
