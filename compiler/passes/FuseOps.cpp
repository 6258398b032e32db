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
// A group's nodes run under one guard (ir::Node::Guard): a node of an If's
// branch never joins a kernel that runs whichever branch is taken.
//
// The root's lowering must store each element without reading it back: the
// pass lowers it once with the epilogue attached and keeps the group only
// when no load of the fused output happened (LowerCtx::epilogueRead).
// A group stays shallow enough for its stores to be single expressions
// (kir::KernelBuilder::kSplitDepth, which keeps them vectorizable): a long
// chain is cut at the longest closed prefix that is (found by bisection),
// and what follows starts a group of its own.
//
// A chain node's operand whose producer is an elementwise node of the
// chain's shape, not yet in a group, whose value nothing else reads (and no
// graph output is), joins the group inlined (ir::Node::Inlined): the kernel
// computes that value at each element from the producer's own operands
// instead of loading it, recursively. An LSTM cell as exporters unroll it
// (sigmoid(i) * tanh(g) + sigmoid(f) * c) is then one kernel, not four. The
// inlining is dropped when it would make the stores too deep.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"
#include "compiler/passes/Passes.h"

#include <optional>
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

/// The depth of the deepest value `root`'s kernel stores with `chain`
/// applied at the stores of output `out` (before any split), or nothing
/// when the lowering reads that output back (or fails: reported when the
/// node is lowered on its own).
std::optional<int> epilogueDepth(const ir::Node &root, const ops::OpSchema &schema,
                                 size_t out, const std::vector<const ir::Node *> &chain,
                                 const std::vector<const ir::Node *> &inlined = {}) {
  kir::KernelBuilder b("probe_" + root.OpType);
  ops::LowerCtx ctx(root, b);
  ctx.fuseEpilogue(out, chain, inlined);
  try {
    schema.Lower(ctx);
    b.finish();
  } catch (const CompileError &) {
    return std::nullopt;
  }
  if (ctx.epilogueRead())
    return std::nullopt;
  return b.deepestValue();
}

/// The elementwise nodes after output `v` of the root g.Nodes[rootAt] that
/// can be computed at its stores (see the file comment), in graph order;
/// empty when none. `closedLengths` gets the lengths of its prefixes that
/// are closed groups too (ascending; the last is the chain's length).
std::vector<const ir::Node *> epilogueChain(const ir::Graph &g, size_t rootAt,
                                            const ir::Value *v,
                                            std::map<const ir::Value *, int> &uses,
                                            std::vector<size_t> &closedLengths) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::set<const ir::Value *> values = {v}; // computed by the group
  std::map<const ir::Value *, int> inside;  // uses by the group's nodes
  std::vector<const ir::Node *> chain;
  // Whether only the last value is needed outside the group.
  auto closed = [&](const ir::Value *last) {
    for (const ir::Value *x : values)
      if (x != last && (inside[x] != uses[x] || g.isGraphOutput(x)))
        return false;
    return true;
  };
  int pending = uses[v]; // uses of the group's values by nodes not yet seen
  // A chain whose nodes each read the previous one's value deepens the
  // stores by a level or more per node, so one longer than this would be
  // cut for depth (kSplitDepth) anyway; the bound keeps the probing of a
  // long chain linear in its length.
  constexpr size_t kMaxChain = 2 * kir::KernelBuilder::kSplitDepth;
  for (size_t at = rootAt + 1; at < g.Nodes.size() && pending > 0 && chain.size() < kMaxChain;
       ++at) {
    const ir::Node &c = *g.Nodes[at];
    bool reads = false;
    for (const ir::Value *in : c.Inputs)
      reads |= in && values.count(in);
    if (!reads)
      continue;
    const ops::OpSchema &cs = reg.lookup(c);
    const ir::Value *cv = singleOutput(c);
    if (c.Group >= 0 || cs.Fusion != ops::FusionClass::Elementwise || !cs.Scalar || !cv ||
        cv->Type.Dims != v->Type.Dims || c.Guard != g.Nodes[rootAt]->Guard)
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
      closedLengths.push_back(chain.size());
  }
  chain.resize(closedLengths.empty() ? 0 : closedLengths.back());
  return chain;
}

/// The producers a group with `chain` after value `v` computes inlined (see
/// the file comment), in graph order.
std::vector<const ir::Node *> inlinedProducers(const ir::Graph &g, const ir::Value *guard,
                                               const ir::Value *v,
                                               const std::vector<const ir::Node *> &chain,
                                               std::map<const ir::Value *, int> &uses) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::set<const ir::Value *> computed = {v};
  for (const ir::Node *c : chain)
    computed.insert(c->Outputs[0]);
  std::set<const ir::Node *> chosen;
  std::vector<const ir::Value *> work;
  for (const ir::Node *c : chain)
    for (const ir::Value *in : c->Inputs)
      work.push_back(in);
  while (!work.empty()) {
    const ir::Value *in = work.back();
    work.pop_back();
    if (!in || in->Const || computed.count(in))
      continue;
    const ir::Node *p = in->Producer;
    if (!p || p->Group >= 0 || chosen.count(p) || p->Guard != guard || p->Outputs.size() != 1 ||
        p->Outputs[0] != in || uses[in] != 1 || g.isGraphOutput(in) ||
        in->Type.Dims != v->Type.Dims)
      continue;
    const ops::OpSchema &ps = reg.lookup(*p);
    if (ps.Fusion != ops::FusionClass::Elementwise || !ps.Scalar)
      continue;
    chosen.insert(p);
    computed.insert(in);
    for (const ir::Value *x : p->Inputs)
      work.push_back(x);
  }
  std::vector<const ir::Node *> inlined;
  for (auto &n : g.Nodes)
    if (chosen.count(n.get()))
      inlined.push_back(n.get());
  return inlined;
}

} // namespace

void fuseOps(ir::Graph &g) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::map<const ir::Value *, int> uses = g.useCounts();
  for (auto &n : g.Nodes) {
    n->Group = -1;
    n->Inlined = false;
  }

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

    std::vector<size_t> closedLengths;
    std::vector<const ir::Node *> chain = epilogueChain(g, rootAt, v, uses, closedLengths);
    if (chain.empty())
      continue;
    std::optional<int> depth = epilogueDepth(root, schema, outIndex, chain);
    if (!depth)
      continue;
    if (*depth > kir::KernelBuilder::kSplitDepth) {
      // The longest closed prefix that is shallow enough (depth grows with
      // the prefix), or none.
      size_t lo = 0, hi = closedLengths.size() - 1; // closedLengths[hi] is too deep
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        std::vector<const ir::Node *> prefix(chain.begin(), chain.begin() + closedLengths[mid]);
        std::optional<int> d = epilogueDepth(root, schema, outIndex, prefix);
        if (d && *d <= kir::KernelBuilder::kSplitDepth)
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo == 0)
        continue;
      chain.resize(closedLengths[lo - 1]);
    }
    std::vector<const ir::Node *> inlined = inlinedProducers(g, root.Guard, v, chain, uses);
    if (!inlined.empty()) {
      std::optional<int> d = epilogueDepth(root, schema, outIndex, chain, inlined);
      if (!d || *d > kir::KernelBuilder::kSplitDepth)
        inlined.clear();
    }
    root.Group = groups;
    for (const ir::Node *c : chain)
      const_cast<ir::Node *>(c)->Group = groups;
    for (const ir::Node *p : inlined) {
      const_cast<ir::Node *>(p)->Group = groups;
      const_cast<ir::Node *>(p)->Inlined = true;
    }
    ++groups;
  }
}

} // namespace mlcc::passes
