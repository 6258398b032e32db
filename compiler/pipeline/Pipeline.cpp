//===- Pipeline.cpp - The ordered list of passes --------------------------===//
//
// The whole compiler, one step per line. Each step has one kebab-case name,
// used by --dump-ir=after-<name>, --time-passes and in the dump file names.
// No pass runs another: the clean-up a rewrite needs (infer-and-fold of the
// nodes it added, eliminate-dead-code of those it left unused) is written
// here after it, and runs when the rewrite reports a change. The progress
// line counts the passes, not their clean-ups.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Pipeline.h"

#include "compiler/kernel/GpuSchedule.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace mlcc {

namespace {

class PassRunner {
public:
  /// `resumed`: the graph passes ran before (lowerGraph); the progress
  /// line goes on counting after them.
  PassRunner(ir::Graph &g, const PipelineOptions &o, bool resumed = false) : G(g), Opts(o) {
    Last = ir::printGraph(G);
    if (resumed)
      Announced = total() - kLoweringSteps;
    else
      dump("000_input", Last, true);
  }

  /// The steps after the graph passes (lowerSteps).
  static constexpr size_t kLoweringSteps = 3;

  /// How a step runs: a clean-up after a rewrite is not counted in the
  /// progress line's passes; a rewrite whose new nodes get their types in
  /// the clean-up after it is verified after that.
  enum Kind { Pass, Rewrite, CleanUp };

  void run(const std::string &name, const std::function<void(ir::Graph &)> &pass,
           Kind kind = Pass) {
    if (kind != CleanUp)
      announce(name);
    auto start = std::chrono::steady_clock::now();
    pass(G);
    if (kind != Rewrite)
      ir::verifyGraph(G);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (Opts.TimePasses)
      std::fprintf(stderr, "mlcc: pass %-22s %8.2f ms\n", name.c_str(), ms);
    ++Index;
    if (Opts.DumpIr.empty())
      return;
    std::string text = ir::printGraph(G);
    bool changed = text != Last;
    bool want = Opts.DumpIr == "after-all" ||
                (Opts.DumpIr == "after-change" && changed) ||
                Opts.DumpIr == "after-" + name;
    if (want) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%03d_", Index);
      dump(prefix + name, changed ? text : "(unchanged)\n", false);
    }
    Last = std::move(text);
  }

  void timed(const std::string &name, const std::function<void()> &fn) {
    announce(name);
    auto start = std::chrono::steady_clock::now();
    fn();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (Opts.TimePasses)
      std::fprintf(stderr, "mlcc: pass %-22s %8.2f ms\n", name.c_str(), ms);
  }

private:
  void announce(const std::string &name) {
    if (!Opts.Status)
      return;
    Opts.Status->step("[" + std::to_string(++Announced) + "/" + std::to_string(total()) +
                      "] " + name);
  }

  /// The steps announced: the quantize pass runs only when asked for.
  size_t total() const { return passNames().size() - (Opts.Quantize ? 0 : 1); }

  void dump(const std::string &file, const std::string &text, bool initial) {
    if (Opts.DumpIr.empty() || (initial && Opts.DumpIr != "after-all"))
      return;
    if (!Opts.DumpIrDir.empty()) {
      std::string path = Opts.DumpIrDir + "/" + file + ".txt";
      std::ofstream out(path);
      if (!out)
        fail(ErrorKind::Io) << "cannot write IR dump '" << path << "'";
      out << text;
      return;
    }
    std::cerr << "// ----- IR " << file << " -----\n" << text;
  }

  ir::Graph &G;
  const PipelineOptions &Opts;
  std::string Last;
  int Index = 0;
  size_t Announced = 0;
};

/// lower-to-kernels, plan-memory and schedule (PassRunner::kLoweringSteps).
kir::Program lowerSteps(PassRunner &passes, ir::Graph &g, const PipelineOptions &options) {
  kir::Program program;
  passes.timed("lower-to-kernels", [&] { program = passes::lowerToProgram(g, options.Name); });
  const TargetDesc &target = options.Target;
  if (target.gpu())
    program.ArenaAlign = target.DeviceAlign; // any access is aligned
  passes.timed("plan-memory", [&] { kir::planMemory(program); });
  passes.timed("schedule", [&] {
    if (target.gpu())
      kir::scheduleProgramForGpu(program, target);
    else
      kir::scheduleProgram(program, target);
  });
  return program;
}

} // namespace

std::vector<std::string> passNames() {
  return {"infer-and-fold", "eliminate-dead-code",
          "eliminate-common-subexpressions", "fold-batch-norm", "quantize", "fuse-qdq",
          "plan-kernels", "fixed-point-requant", "pack-weights", "dispatch-library", "fuse-ops", "lower-to-kernels", "plan-memory", "schedule"};
}

kir::Program runPipeline(ir::Graph &g, const PipelineOptions &options) {
  g.TripRules = options.TripRules;
  PassRunner passes(g, options);
  // Until fuse-qdq, DequantizeLinear nodes of constants stay (it reads the
  // quantized weights and biases).
  passes::FoldOptions keepDq = options.Fold;
  keepDq.KeepDequantize = true;
  // The clean-up after a rewrite: its new nodes inferred and folded, what
  // it left unused removed.
  auto cleanUp = [&](const passes::FoldOptions &fold) {
    passes.run("infer-and-fold", [&](ir::Graph &x) { passes::inferAndFold(x, fold); },
               PassRunner::CleanUp);
    passes.run("eliminate-dead-code", passes::eliminateDeadCode, PassRunner::CleanUp);
  };
  passes.run("infer-and-fold", [&](ir::Graph &x) {
    passes::FoldOptions fold = keepDq;
    fold.Validate = true;
    passes::inferAndFold(x, fold);
  });
  passes.run("eliminate-dead-code", passes::eliminateDeadCode);
  bool changed = false;
  passes.run("eliminate-common-subexpressions",
             [&](ir::Graph &x) { changed = passes::eliminateCommonSubexpressions(x); });
  if (changed)
    passes.run("eliminate-dead-code", passes::eliminateDeadCode, PassRunner::CleanUp);
  passes.run("fold-batch-norm", passes::foldBatchNorm, PassRunner::Rewrite);
  cleanUp(keepDq);
  if (options.Quantize)
    passes.run("quantize", options.Quantize);
  if (options.StopAfterQuantize)
    return {};
  passes.run("fuse-qdq", passes::fuseQdq, PassRunner::Rewrite);
  cleanUp(options.Fold); // the DequantizeLinear nodes of constants fold now
  // How every kernel runs (a GPU target plans one output per thread and
  // hands matrix products to its library below), then the operands the
  // plans read: fixed-point requantization constants, packed weights.
  passes.run("plan-kernels", [&](ir::Graph &x) {
    passes::planKernels(x, options.Target, options.IntegerRequant,
                        options.ChoosePlan, &options.FixedPlans);
  });
  passes.run("fixed-point-requant", [&](ir::Graph &x) { passes::fixedPointRequant(x); });
  changed = false;
  passes.run("pack-weights", [&](ir::Graph &x) { changed = passes::packWeights(x); },
             PassRunner::Rewrite);
  if (changed)
    cleanUp(options.Fold);
  changed = false;
  passes.run("dispatch-library", [&](ir::Graph &x) {
    if (options.Target.gpu() && options.LibraryDispatch)
      changed = passes::dispatchLibrary(x);
  }, PassRunner::Rewrite);
  if (changed)
    cleanUp(options.Fold);
  passes.run("fuse-ops", passes::fuseOps);
  if (options.GraphOnly)
    return {};
  return lowerSteps(passes, g, options);
}

kir::Program lowerGraph(ir::Graph &g, const PipelineOptions &options) {
  PassRunner passes(g, options, true);
  return lowerSteps(passes, g, options);
}

} // namespace mlcc
