//===- EliminateCommonSubexpressions.cpp - One node per computation -------===//
//
// eliminate-common-subexpressions: two nodes of the same op (domain, type,
// opset) with equal attributes and the same input values compute the same
// outputs; the later one is dropped and its uses read the earlier one's
// outputs. Not merged: ops that must not be folded (random numbers), nodes
// with tensor or subgraph attributes, and nodes whose outputs are graph
// outputs (they keep their names in the generated interface).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/passes/Passes.h"

#include <sstream>

namespace mlcc::passes {

namespace {

/// A text key of what `n` computes, or "" when it must not be merged.
std::string nodeKey(const ir::Node &n, const std::map<const ir::Value *, size_t> &ids) {
  std::ostringstream os;
  os.precision(17);
  os << n.Domain << "." << n.OpType << "@" << n.Opset << "(";
  for (const ir::Value *in : n.Inputs)
    os << (in ? std::to_string(ids.at(in)) : "-") << ",";
  os << ")" << n.Outputs.size() << ":";
  // Only nodes under the same guard compute the same values when they run.
  os << "?" << (n.Guard ? std::to_string(ids.at(n.Guard)) : "-") << ":";
  for (const ir::Value *out : n.Outputs)
    os << (out ? "1" : "0");
  for (auto &[name, a] : n.Attrs) {
    os << "|" << name << "=" << (int)a.Kind << ":";
    switch (a.Kind) {
    case ir::AttrKind::Float: os << a.F; break;
    case ir::AttrKind::Int: os << a.I; break;
    case ir::AttrKind::String: os << a.S.size() << "'" << a.S; break;
    case ir::AttrKind::Floats:
      for (double f : a.Floats)
        os << f << ",";
      break;
    case ir::AttrKind::Ints:
      for (int64_t i : a.Ints)
        os << i << ",";
      break;
    case ir::AttrKind::Strings:
      for (auto &str : a.Strings)
        os << str.size() << "'" << str << ",";
      break;
    default:
      return ""; // tensors, graphs, types
    }
  }
  return os.str();
}

} // namespace

bool eliminateCommonSubexpressions(ir::Graph &g) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::map<const ir::Value *, size_t> ids; // stable ids for the keys
  for (auto &v : g.Values)
    ids[v.get()] = ids.size();
  std::map<std::string, const ir::Node *> seen;
  bool changed = false;
  for (auto &n : g.Nodes) {
    if (!reg.lookup(*n).Foldable)
      continue;
    bool isOutput = false;
    for (const ir::Value *out : n->Outputs)
      isOutput |= out && g.isGraphOutput(out);
    std::string key = nodeKey(*n, ids);
    if (key.empty())
      continue;
    auto [it, inserted] = seen.emplace(key, n.get());
    if (inserted || isOutput)
      continue;
    for (size_t i = 0; i < n->Outputs.size(); ++i)
      if (n->Outputs[i])
        g.replaceAllUses(n->Outputs[i], it->second->Outputs[i]);
    changed = true;
  }
  return changed;
}

} // namespace mlcc::passes
