//===- Pipeline.cpp - The ordered list of passes --------------------------===//
//
// The whole compiler, one step per line of one table (steps()): runPipeline
// runs it, passNames() lists it, the progress line counts it. Each step has
// one kebab-case name, used by --dump-ir=after-<name>, --time-passes and in
// the dump file names. No pass runs another: the clean-up a rewrite needs
// (infer-and-fold of the nodes it added, eliminate-dead-code of those it
// left unused) is asked for by its step and runs after it, not counted as a
// pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipeline/Pipeline.h"

#include "compiler/kernel/GpuSchedule.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

namespace mlcc {

namespace {

/// One step of the pipeline: a graph pass, or a step of the lowering that
/// follows them. The table below is the pipeline: runPipeline runs its
/// steps in order and passNames() lists their names.
struct StepContext;
struct Step {
  enum Phase { Graph, Lowering };
  /// How a graph step is checked: a rewrite's new nodes get their types in
  /// the clean-up after it, so the graph is verified after that.
  enum Kind { Pass, Rewrite };
  const char *Name;
  Phase StepPhase;
  Kind StepKind;
  void (*Run)(StepContext &);
  /// Whether the step runs for these options (null: always).
  bool (*Enabled)(const PipelineOptions &) = nullptr;
  /// Whether the pipeline ends after this step (run or not) for these
  /// options (null: never): --emit onnx, --emit graph.
  bool (*EndsAfter)(const PipelineOptions &) = nullptr;

  bool enabled(const PipelineOptions &o) const { return !Enabled || Enabled(o); }
};

const std::vector<Step> &steps();

size_t countSteps(const PipelineOptions &o, bool loweringOnly) {
  size_t n = 0;
  for (const Step &s : steps())
    if (s.enabled(o) && (!loweringOnly || s.StepPhase == Step::Lowering))
      ++n;
  return n;
}

class PassRunner {
public:
  /// `resumed`: the graph passes ran before (lowerGraph); the progress
  /// line goes on counting after them.
  PassRunner(ir::Graph &g, const PipelineOptions &o, bool resumed = false) : G(g), Opts(o) {
    if (resumed)
      Announced = countSteps(Opts, false) - countSteps(Opts, true);
    if (Opts.DumpIr.empty()) // the text is for --dump-ir only (a hash of every constant)
      return;
    Last = ir::printGraph(G);
    if (!resumed)
      dump("000_input", Last, true);
  }

  /// How a graph step runs: a clean-up after a rewrite is not counted in
  /// the progress line's passes; a rewrite is verified after its clean-up.
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
    Opts.Status->step("[" + std::to_string(++Announced) + "/" +
                      std::to_string(countSteps(Opts, false)) + "] " + name);
  }

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

/// What a step works on, and the clean-ups it asks for.
struct StepContext {
  ir::Graph &G;
  const PipelineOptions &Opts;
  PassRunner &Runner;
  kir::Program Program;
  /// The clean-up a step asks for, run after it: infer-and-fold with these
  /// options, then eliminate-dead-code; or eliminate-dead-code alone.
  std::optional<passes::FoldOptions> FoldAfter;
  bool DeadCodeAfter = false;

  /// Until fuse-qdq, DequantizeLinear nodes of constants stay (it reads the
  /// quantized weights and biases).
  passes::FoldOptions foldKeepingDequantize() const {
    passes::FoldOptions f = Opts.Fold;
    f.KeepDequantize = true;
    return f;
  }
  /// Asks for the clean-up after a rewrite: its new nodes inferred and
  /// folded, what it left unused removed.
  void cleanUp(const passes::FoldOptions &fold) {
    FoldAfter = fold;
    DeadCodeAfter = true;
  }
  void removeDeadCode() { DeadCodeAfter = true; }

  /// Runs the clean-up the last step asked for (not counted as a pass).
  void runCleanUp() {
    if (FoldAfter) {
      passes::FoldOptions fold = *FoldAfter;
      Runner.run("infer-and-fold", [&](ir::Graph &x) { passes::inferAndFold(x, fold); },
                 PassRunner::CleanUp);
    }
    if (DeadCodeAfter)
      Runner.run("eliminate-dead-code", passes::eliminateDeadCode, PassRunner::CleanUp);
    FoldAfter.reset();
    DeadCodeAfter = false;
  }
};

// The steps' bodies, in pipeline order.
void inferAndFoldStep(StepContext &c) {
  passes::FoldOptions fold = c.foldKeepingDequantize();
  fold.Validate = true;
  passes::inferAndFold(c.G, fold);
}
void cseStep(StepContext &c) {
  if (passes::eliminateCommonSubexpressions(c.G))
    c.removeDeadCode();
}
void foldBatchNormStep(StepContext &c) {
  passes::foldBatchNorm(c.G);
  c.cleanUp(c.foldKeepingDequantize());
}
void fuseQdqStep(StepContext &c) {
  passes::fuseQdq(c.G);
  c.cleanUp(c.Opts.Fold); // the DequantizeLinear nodes of constants fold now
}
void fuseAttentionStep(StepContext &c) {
  // A GPU target hands the products to its library instead.
  if (!c.Opts.Target.gpu() && passes::fuseAttention(c.G))
    c.removeDeadCode();
}
void fuseNormalizationStep(StepContext &c) {
  if (passes::fuseNormalization(c.G))
    c.removeDeadCode();
}
void planKernelsStep(StepContext &c) {
  // How every kernel runs (a GPU target plans one output per thread and
  // hands matrix products to its library below); the steps after it make
  // the operands the plans read (fixed-point requantization constants,
  // packed weights).
  passes::planKernels(c.G, c.Opts.Target, c.Opts.IntegerRequant, c.Opts.ChoosePlan,
                      &c.Opts.FixedPlans);
}
void packWeightsStep(StepContext &c) {
  if (passes::packWeights(c.G, /*wideHalfWeights=*/c.Opts.Target.VectorBytes > 0))
    c.cleanUp(c.Opts.Fold);
}
void dispatchLibraryStep(StepContext &c) {
  if (c.Opts.Target.gpu() && c.Opts.LibraryDispatch && passes::dispatchLibrary(c.G))
    c.cleanUp(c.Opts.Fold);
}
void lowerToKernelsStep(StepContext &c) {
  c.Program = passes::lowerToProgram(c.G, c.Opts.Name);
  if (c.Opts.Target.gpu())
    c.Program.ArenaAlign = c.Opts.Target.DeviceAlign; // any access is aligned
}
void planMemoryStep(StepContext &c) {
  // After the schedule: outputs laid over inputs follow the kernels' final
  // access order. On a bare-metal target (a microcontroller: RAM is what is
  // short; one thread, so a kernel's Parallel loops may run in order);
  // elsewhere the parameters keep noalias, which the vectorizers use.
  const std::string &triple = c.Opts.Target.Triple;
  const bool bareMetal = !c.Opts.Target.gpu() && (triple.find("-none") != std::string::npos ||
                                                   triple.find("-unknown-elf") != std::string::npos);
  kir::planMemory(c.Program, bareMetal ? kir::InPlace::Ordered : kir::InPlace::Off);
}
void scheduleStep(StepContext &c) {
  if (c.Opts.Target.gpu())
    kir::scheduleProgramForGpu(c.Program, c.Opts.Target);
  else
    kir::scheduleProgram(c.Program, c.Opts.Target);
}

const std::vector<Step> &steps() {
  // A rewrite asks for its clean-up (StepContext::cleanUp), which runs
  // after it and is not counted as a pass.
  static const std::vector<Step> list = {
      {"infer-and-fold", Step::Graph, Step::Pass, inferAndFoldStep},
      {"eliminate-dead-code", Step::Graph, Step::Pass,
       [](StepContext &c) { passes::eliminateDeadCode(c.G); }},
      {"eliminate-common-subexpressions", Step::Graph, Step::Pass, cseStep},
      {"fold-batch-norm", Step::Graph, Step::Rewrite, foldBatchNormStep},
      {"reduce-precision", Step::Graph, Step::Rewrite,
       [](StepContext &c) {
         if (passes::reducePrecision(c.G, c.Opts.Precision))
           c.cleanUp(c.Opts.Fold);
       },
       [](const PipelineOptions &o) { return o.Precision != DType::F32; }},
      {"quantize", Step::Graph, Step::Pass, [](StepContext &c) { c.Opts.Quantize(c.G); },
       [](const PipelineOptions &o) { return bool(o.Quantize); },
       [](const PipelineOptions &o) { return o.StopAfterQuantize; }},
      {"fuse-qdq", Step::Graph, Step::Rewrite, fuseQdqStep},
      {"fuse-normalization", Step::Graph, Step::Rewrite, fuseNormalizationStep},
      {"fuse-attention", Step::Graph, Step::Rewrite, fuseAttentionStep},
      {"kv-cache", Step::Graph, Step::Rewrite,
       [](StepContext &c) { passes::kvCache(c.G, c.Opts.KvCache, c.Opts.KvCacheAuto); },
       [](const PipelineOptions &o) { return o.KvCacheAuto || !o.KvCache.empty(); }},
      {"plan-kernels", Step::Graph, Step::Pass, planKernelsStep},
      {"fixed-point-requant", Step::Graph, Step::Pass,
       [](StepContext &c) { passes::fixedPointRequant(c.G); }},
      {"pack-weights", Step::Graph, Step::Rewrite, packWeightsStep},
      {"scale-into-weights", Step::Graph, Step::Rewrite,
       [](StepContext &c) {
         if (passes::scaleIntoWeights(c.G))
           c.cleanUp(c.Opts.Fold);
       },
       [](const PipelineOptions &o) { return !o.Target.gpu(); }},
      {"dispatch-library", Step::Graph, Step::Rewrite, dispatchLibraryStep},
      {"fuse-ops", Step::Graph, Step::Pass, [](StepContext &c) { passes::fuseOps(c.G); },
       nullptr, [](const PipelineOptions &o) { return o.GraphOnly; }},
      {"lower-to-kernels", Step::Lowering, Step::Pass, lowerToKernelsStep},
      {"schedule", Step::Lowering, Step::Pass, scheduleStep},
      {"plan-memory", Step::Lowering, Step::Pass, planMemoryStep},
  };
  return list;
}

kir::Program runSteps(ir::Graph &g, const PipelineOptions &options, bool resumed) {
  PassRunner runner(g, options, resumed);
  StepContext c{g, options, runner};
  for (const Step &step : steps()) {
    if (resumed && step.StepPhase != Step::Lowering)
      continue;
    bool enabled = step.enabled(options);
    if (enabled && step.StepPhase == Step::Lowering) {
      runner.timed(step.Name, [&] { step.Run(c); });
    } else if (enabled) {
      runner.run(step.Name, [&](ir::Graph &) { step.Run(c); },
                 step.StepKind == Step::Rewrite ? PassRunner::Rewrite : PassRunner::Pass);
      c.runCleanUp();
    }
    if (step.EndsAfter && step.EndsAfter(options))
      return {};
  }
  return std::move(c.Program);
}

} // namespace

std::vector<std::string> passNames() {
  std::vector<std::string> names;
  for (const Step &s : steps())
    names.push_back(s.Name);
  return names;
}

kir::Program runPipeline(ir::Graph &g, const PipelineOptions &options) {
  g.TripRules = options.TripRules;
  g.RunTimeNumbers = options.RunTimeNumbers;
  return runSteps(g, options, false);
}

kir::Program lowerGraph(ir::Graph &g, const PipelineOptions &options) {
  return runSteps(g, options, true);
}

} // namespace mlcc
