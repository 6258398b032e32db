//===- PlanKernels.cpp - How every kernel runs on the target --------------===//
//
// plan-kernels: the one pass that decides, node by node, how a kernel runs
// on the target (its ir::KernelPlan). Each node without a plan gets the one
// the caller fixed for it, else, with schedule search's chooser, the
// candidate it picks (passes::planCandidates, TuningCandidates.cpp), else
// its default plan (passes::planKernel, DefaultPlans.cpp: the cost model's
// choices for the target and the shapes).
//
// A node whose elementwise consumers (the epilogue fuse-ops will join to it)
// expand into arithmetic that keeps many constants in vector registers is
// planned as for a target with that many registers fewer
// (kir::expansionRegisters) where at least 16 remain, so that its register
// tile does not spill in its reduction loop (GPT-2's tanh GELU after a 6x64
// tile of AVX-512: the accumulators spilled, the product ran 1.8x as long
// as with a 5x48 tile).
//
// It only decides: pack-weights adds the packed operands a plan reads and
// fixed-point-requant the requantization constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/MathExpansions.h"
#include "compiler/ops/OpRegistry.h"
#include "compiler/passes/Passes.h"

#include <algorithm>
#include <deque>
#include <set>

namespace mlcc::passes {

namespace {

/// The expanded function an elementwise node computes, if any.
std::optional<kir::UnOp> expandedOp(const ir::Node &m) {
  if (!m.Domain.empty() || !m.hasOutput(0) || m.Outputs[0]->Type.Type != DType::F32)
    return std::nullopt;
  if (m.OpType == "Tanh" || (m.OpType == "Gelu" && m.attrString("approximate", "") == "tanh"))
    return kir::UnOp::Tanh;
  if (m.OpType == "Erf" || m.OpType == "Gelu")
    return kir::UnOp::Erf;
  if (m.OpType == "Exp" || m.OpType == "Sigmoid")
    return kir::UnOp::Exp;
  return std::nullopt;
}

/// The vector registers the expansions in the elementwise consumers of
/// `n`'s output keep (the largest of them: they run one after another),
/// following consumers of the same shape up to kEpilogueNodes nodes.
int64_t epilogueRegisters(const ir::Node &n,
                          const std::map<const ir::Value *, std::vector<const ir::Node *>> &users) {
  constexpr size_t kEpilogueNodes = 24;
  if (n.Outputs.empty() || !n.Outputs[0])
    return 0;
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  int64_t most = 0;
  std::deque<const ir::Value *> work = {n.Outputs[0]};
  std::set<const ir::Node *> seen;
  while (!work.empty() && seen.size() < kEpilogueNodes) {
    const ir::Value *v = work.front();
    work.pop_front();
    auto it = users.find(v);
    if (it == users.end())
      continue;
    for (const ir::Node *m : it->second) {
      if (seen.count(m) || !m->hasOutput(0) || m->Outputs[0]->Type.Dims != v->Type.Dims ||
          reg.lookup(*m).Fusion != ops::FusionClass::Elementwise)
        continue;
      seen.insert(m);
      if (std::optional<kir::UnOp> op = expandedOp(*m))
        most = std::max(most, kir::expansionRegisters(*op));
      work.push_back(m->Outputs[0]);
    }
  }
  return most;
}

} // namespace

bool planKernels(ir::Graph &g, const TargetDesc &targetIn, bool integerRequant,
                 const PlanChooser &choose,
                 const std::map<std::string, ir::KernelPlan> *fixed) {
  bool changed = false;
  std::map<const ir::Value *, std::vector<const ir::Node *>> users;
  for (auto &n : g.Nodes)
    for (const ir::Value *v : n->Inputs)
      if (v)
        users[v].push_back(n.get());
  for (auto &n : g.Nodes) {
    if (!n->Plan.empty())
      continue;
    // Only where the tile keeps kMinTileRegisters: with fewer registers in
    // all (16: AVX2, SSE) the constants come from memory instead, which
    // costs less than a tile of a few accumulators (GPT-2's ff1 on
    // x86-64-v3: 11 ms at 4x24, 15 ms at 6x8 with the reserve).
    constexpr int kMinTileRegisters = 16;
    TargetDesc target = targetIn;
    if (int64_t reserve = target.VectorRegisters > 0 ? epilogueRegisters(*n, users) : 0;
        reserve > 0 && target.VectorRegisters - reserve >= kMinTileRegisters)
      target.VectorRegisters -= (int)reserve;
    auto given = fixed ? fixed->find(n->Name) : decltype(fixed->end()){};
    if (fixed && given != fixed->end()) {
      n->Plan = given->second;
    } else if (choose && !target.gpu()) {
      std::vector<ir::KernelPlan> candidates = planCandidates(*n, target, integerRequant);
      size_t pick = candidates.size() > 1 ? choose(*n, candidates) : 0;
      n->Plan = candidates[std::min(pick, candidates.size() - 1)];
    } else {
      n->Plan = planKernel(*n, target, integerRequant);
    }
    changed |= !n->Plan.empty();
  }
  return changed;
}

} // namespace mlcc::passes
