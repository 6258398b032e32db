#include "compiler/ir/Inline.h"

#include <set>

namespace mlcc::ir {

Value *resolveCapture(Graph &g, const Node &owner, const std::string &name) {
  auto it = owner.Captured.find(name);
  if (it != owner.Captured.end())
    return it->second;
  if (Value *v = g.findValue(name))
    return v;
  owner.error() << "its subgraph refers to '" << name
                << "', which is not defined in an enclosing graph";
  return nullptr;
}

namespace {

/// Names that the subgraphs of `n` (recursively) capture from outside.
void capturedNames(const Node &n, std::set<std::string> &out) {
  for (auto &[key, a] : n.Attrs) {
    std::vector<std::shared_ptr<Graph>> graphs = a.Graphs;
    if (a.G)
      graphs.push_back(a.G);
    for (auto &sg : graphs) {
      for (Value *c : sg->Captures)
        out.insert(c->Name);
      for (auto &inner : sg->Nodes)
        capturedNames(*inner, out);
    }
  }
}

} // namespace

InlinedGraph inlineGraph(Graph &g, const Node &owner, const Graph &body,
                         const std::vector<Value *> &args,
                         const std::string &prefix) {
  if (args.size() != body.Inputs.size())
    owner.error() << "its subgraph takes " << body.Inputs.size()
                  << " inputs, but " << args.size() << " are given";
  std::map<const Value *, Value *> map;
  for (size_t i = 0; i < args.size(); ++i)
    map[body.Inputs[i]] = args[i];
  for (Value *c : body.Captures)
    if (!map.count(c))
      map[c] = resolveCapture(g, owner, c->Name);

  auto mapped = [&](const Value *v) -> Value * {
    if (!v)
      return nullptr;
    auto it = map.find(v);
    if (it != map.end())
      return it->second;
    if (v->Const) { // a constant of the body (initializer or Constant node)
      Value *c = g.addValue(g.uniqueValueName(prefix + v->Name), v->Type);
      c->Const = v->Const;
      map[v] = c;
      return c;
    }
    owner.error() << "its subgraph uses '" << v->Name << "' before defining it";
    return nullptr;
  };

  InlinedGraph out;
  for (auto &bn : body.Nodes) {
    auto n = std::make_unique<Node>();
    n->Name = prefix + bn->Name;
    n->OpType = bn->OpType;
    n->Domain = bn->Domain;
    n->Opset = bn->Opset;
    n->Attrs = bn->Attrs;
    for (Value *in : bn->Inputs)
      n->Inputs.push_back(mapped(in));
    for (Value *o : bn->Outputs) {
      if (!o) {
        n->Outputs.push_back(nullptr);
        continue;
      }
      Value *v = g.addValue(g.uniqueValueName(prefix + o->Name));
      v->Producer = n.get();
      map[o] = v;
      n->Outputs.push_back(v);
    }
    // Nested subgraphs refer by name to values that now have new names.
    std::set<std::string> names;
    capturedNames(*bn, names);
    for (auto &name : names) {
      // A value of the body: a node's output copied above, or a constant
      // (an initializer or a Constant node of the body) copied on first use.
      if (Value *bv = body.findValue(name); bv && (map.count(bv) || bv->Const))
        n->Captured[name] = mapped(bv);
      else if (auto it = bn->Captured.find(name); it != bn->Captured.end())
        n->Captured[name] = it->second;
      else
        n->Captured[name] = resolveCapture(g, owner, name);
    }
    out.Nodes.push_back(std::move(n));
  }
  for (Value *o : body.Outputs)
    out.Outputs.push_back(mapped(o));
  return out;
}

} // namespace mlcc::ir
