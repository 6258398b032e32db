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
// (OpSchema::Scalar), its output has the chain's shape, and the value it
// consumes has no other use and is not a graph output, so that value never
// needs memory. Its other operands are read by the fused kernel at the
// element's position (broadcasting as the op does). The kernel runs where
// the chain's last node stood, after every operand is computed.
//
// The root's lowering must store each element without reading it back: the
// pass lowers it once with the epilogue attached and keeps the group only
// when no load of the fused output happened (LowerCtx::epilogueRead).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"
#include "compiler/passes/Passes.h"

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

} // namespace

void fuseOps(ir::Graph &g) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::map<const ir::Value *, int> uses = g.useCounts();
  std::map<const ir::Value *, ir::Node *> consumer;
  for (auto &n : g.Nodes)
    for (const ir::Value *in : n->Inputs)
      if (in)
        consumer[in] = n.get();
  for (auto &n : g.Nodes)
    n->Group = -1;

  int groups = 0;
  for (auto &rootPtr : g.Nodes) {
    ir::Node &root = *rootPtr;
    const ops::OpSchema &schema = reg.lookup(root);
    if (root.Group >= 0 || schema.Fusion == ops::FusionClass::View || !schema.Lower)
      continue;
    ir::Value *v = singleOutput(root);
    if (!v || v->Type.numel() == 0)
      continue;
    size_t outIndex = 0;
    while (root.Outputs[outIndex] != v)
      ++outIndex;

    std::vector<const ir::Node *> chain;
    while (uses[v] == 1 && !g.isGraphOutput(v) && consumer.count(v)) {
      ir::Node *c = consumer[v];
      const ops::OpSchema &cs = reg.lookup(*c);
      ir::Value *cv = singleOutput(*c);
      if (c->Group >= 0 || cs.Fusion != ops::FusionClass::Elementwise ||
          !cs.Scalar || !cv || cv->Type.Dims != v->Type.Dims)
        break;
      chain.push_back(c);
      v = cv;
    }
    if (chain.empty() || !lowersWithEpilogue(root, schema, outIndex, chain))
      continue;
    root.Group = groups;
    for (const ir::Node *c : chain)
      const_cast<ir::Node *>(c)->Group = groups;
    ++groups;
  }
}

} // namespace mlcc::passes
