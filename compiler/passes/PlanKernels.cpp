//===- PlanKernels.cpp - How every kernel runs on the target --------------===//
//
// plan-kernels: the one pass that decides, node by node, how a kernel runs
// on the target (its ir::KernelPlan). Each node without a plan gets the one
// the caller fixed for it, else, with schedule search's chooser, the
// candidate it picks (passes::planCandidates, TuningCandidates.cpp), else
// its default plan (passes::planKernel, DefaultPlans.cpp: the cost model's
// choices for the target and the shapes).
//
// It only decides: pack-weights adds the packed operands a plan reads and
// fixed-point-requant the requantization constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include <algorithm>

namespace mlcc::passes {

bool planKernels(ir::Graph &g, const TargetDesc &target, bool integerRequant,
                 const PlanChooser &choose,
                 const std::map<std::string, ir::KernelPlan> *fixed) {
  bool changed = false;
  for (auto &n : g.Nodes) {
    if (!n->Plan.empty())
      continue;
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
