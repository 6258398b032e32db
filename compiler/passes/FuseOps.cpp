//===- FuseOps.cpp - Group nodes into kernels -----------------------------===//
//
// fuse-ops: every node that builds a loop nest (a contraction, a pooling, a
// reduction, an elementwise op, ...) absorbs the chain of elementwise nodes
// that follows it, as TVM's FuseOps does for an op and its injective
// epilogue:
//
//   Conv -> Add(bias) -> Add(residual) -> Relu      one kernel
//   Add -> Relu -> Mul                              one kernel
//
// A node joins the chain when it is elementwise with a scalar function
// (OpSchema::Scalar) and its output has the chain's shape. The chain may
// branch and join again (x * sigmoid(x), SiLU): the group is grown one
// consumer of its values at a time, in graph order, and kept up to the
// last point where only its last node's value is used outside it (or is a
// graph output), so that no other value of the group needs memory. The
// other operands of its nodes are read by the fused kernel at the element's
// position (broadcasting as the op does). The kernel runs where the chain's
// last node stood, after every operand is computed.
//
// The root's lowering must store each element without reading it back: the
// pass lowers it once with the epilogue attached and keeps the group only
// when no load of the fused output happened (LowerCtx::epilogueRead).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"
#include "compiler/passes/Passes.h"

#include <set>

namespace mlcc::passes {

namespace {

/// The single present output of `n`, or null.
ir::Value *singleOutput(const ir::Node &n) {
  ir::Value *out = nullptr;
  for (ir::Value *v : n.Outputs) {
    if (!v)
      continue;
    if (out)
      return nullptr;
    out = v;
  }
  return out;
}

/// True when `root`'s lowering stores every element of output `out` without
/// reading it, so that `chain` can be applied at the store.
bool lowersWithEpilogue(const ir::Node &root, const ops::OpSchema &schema,
                        size_t out, const std::vector<const ir::Node *> &chain) {
  kir::KernelBuilder b("probe_" + root.OpType);
  ops::LowerCtx ctx(root, b);
  ctx.fuseEpilogue(out, chain);
  try {
    schema.Lower(ctx);
    b.finish();
  } catch (const CompileError &) {
    return false; // reported when the node is lowered on its own
  }
  return !ctx.epilogueRead();
}

/// The elementwise nodes after output `v` of the root g.Nodes[rootAt] that
/// can be computed at its stores (see the file comment), in graph order;
/// empty when none.
std::vector<const ir::Node *> epilogueChain(const ir::Graph &g, size_t rootAt,
                                            const ir::Value *v,
                                            std::map<const ir::Value *, int> &uses) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::set<const ir::Value *> values = {v}; // computed by the group
  std::map<const ir::Value *, int> inside;  // uses by the group's nodes
  std::vector<const ir::Node *> chain, best;
  // Whether only the last value is needed outside the group.
  auto closed = [&](const ir::Value *last) {
    for (const ir::Value *x : values)
      if (x != last && (inside[x] != uses[x] || g.isGraphOutput(x)))
        return false;
    return true;
  };
  int pending = uses[v]; // uses of the group's values by nodes not yet seen
  for (size_t at = rootAt + 1; at < g.Nodes.size() && pending > 0; ++at) {
    const ir::Node &c = *g.Nodes[at];
    bool reads = false;
    for (const ir::Value *in : c.Inputs)
      reads |= in && values.count(in);
    if (!reads)
      continue;
    const ops::OpSchema &cs = reg.lookup(c);
    const ir::Value *cv = singleOutput(c);
    if (c.Group >= 0 || cs.Fusion != ops::FusionClass::Elementwise || !cs.Scalar || !cv ||
        cv->Type.Dims != v->Type.Dims)
      break; // a value of the group is needed by a node that cannot join
    chain.push_back(&c);
    for (const ir::Value *in : c.Inputs)
      if (in && values.count(in)) {
        ++inside[in];
        --pending;
      }
    values.insert(cv);
    pending += uses[cv];
    if (closed(cv))
      best = chain;
  }
  return best;
}

} // namespace

void fuseOps(ir::Graph &g) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::map<const ir::Value *, int> uses = g.useCounts();
  for (auto &n : g.Nodes)
    n->Group = -1;

  int groups = 0;
  for (size_t rootAt = 0; rootAt < g.Nodes.size(); ++rootAt) {
    ir::Node &root = *g.Nodes[rootAt];
    const ops::OpSchema &schema = reg.lookup(root);
    if (root.Group >= 0 || schema.Fusion == ops::FusionClass::View || !schema.Lower)
      continue;
    ir::Value *v = singleOutput(root);
    if (!v || v->Type.numel() == 0)
      continue;
    size_t outIndex = 0;
    while (root.Outputs[outIndex] != v)
      ++outIndex;

    std::vector<const ir::Node *> chain = epilogueChain(g, rootAt, v, uses);
    if (chain.empty() || !lowersWithEpilogue(root, schema, outIndex, chain))
      continue;
    root.Group = groups;
    for (const ir::Node *c : chain)
      const_cast<ir::Node *>(c)->Group = groups;
    ++groups;
  }
}

} // namespace mlcc::passes
