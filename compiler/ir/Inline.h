//===- Inline.h - Copying a subgraph into a graph -------------------------===//
//
// Control-flow ops (If, Loop, Scan) are expanded at compile time by copying
// their body subgraphs into the enclosing graph. The copy gets fresh values
// with unique names; the body's inputs become given values, its constants
// are shared, and the names it captures from enclosing graphs resolve
// through the owning node's Captured map, then the graph's own names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <memory>
#include <vector>

namespace mlcc::ir {

struct InlinedGraph {
  std::vector<std::unique_ptr<Node>> Nodes; ///< in order, not yet in the graph
  std::vector<Value *> Outputs;             ///< the body outputs' new values
};

/// Copies `body` into `g` as if called by `owner` with `args` bound to the
/// body's inputs. New names start with `prefix`.
InlinedGraph inlineGraph(Graph &g, const Node &owner, const Graph &body,
                         const std::vector<Value *> &args,
                         const std::string &prefix);

/// Resolves a name captured by one of `owner`'s subgraphs.
Value *resolveCapture(Graph &g, const Node &owner, const std::string &name);

} // namespace mlcc::ir
