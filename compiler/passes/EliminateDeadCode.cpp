//===- EliminateDeadCode.cpp - Remove nodes nobody reads ------------------===//
#include "compiler/passes/Passes.h"

#include <set>

namespace mlcc::passes {

void eliminateDeadCode(ir::Graph &g) {
  std::set<const ir::Value *> live(g.Outputs.begin(), g.Outputs.end());
  std::set<const ir::Node *> dead;
  for (auto it = g.Nodes.rbegin(); it != g.Nodes.rend(); ++it) {
    const ir::Node &n = **it;
    bool used = false;
    for (auto *out : n.Outputs)
      if (out && live.count(out))
        used = true;
    if (!used) {
      dead.insert(&n);
      continue;
    }
    for (auto *in : n.Inputs)
      if (in)
        live.insert(in);
    if (n.Guard)
      live.insert(n.Guard);
  }
  g.removeNodesIf([&](const ir::Node &n) { return dead.count(&n) > 0; });
}

} // namespace mlcc::passes
