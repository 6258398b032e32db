//===- Pipeline.h - The ordered list of passes ----------------------------===//
#pragma once

#include "compiler/kernel/Schedule.h"

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Program.h"
#include "compiler/passes/Passes.h"
#include "compiler/support/Progress.h"

#include <functional>
#include <map>
#include <string>

namespace mlcc {

struct PipelineOptions {
  std::string Name = "model"; ///< C prefix of the generated code.
  passes::FoldOptions Fold;
  /// --dump-ir: "after-all", "after-change" or "after-<pass>".
  std::string DumpIr;
  /// --dump-ir-dir: write dumps as DIR/NNN_<pass>.txt instead of stderr.
  std::string DumpIrDir;
  bool TimePasses = false;
  /// Stop after the graph passes (for --emit graph).
  bool GraphOnly = false;
  /// Stop after the quantize pass (for --emit onnx: the model still in
  /// standard ONNX ops, QDQ form when quantized).
  bool StopAfterQuantize = false;
  /// The target's description: the plans and the schedule read it. A GPU
  /// (Kind Gpu: CUDA, or --gpu-schedule-on-host): no CPU weight packing,
  /// kernels scheduled as GPU launches (kir::mapToGpu), the arena aligned
  /// for the device.
  TargetDesc Target;
  /// Integer products requantize in integers on every target (--quantize-io:
  /// no float instruction in the model; see passes::planKernels).
  bool IntegerRequant = false;
  /// On a GPU: matrix products go to the target's library (cuBLAS).
  bool LibraryDispatch = true;
  /// Schedule search (--tune, --tune-db): picks each node's plan among its
  /// candidates (passes::planCandidates); none: the cost model's.
  passes::PlanChooser ChoosePlan;
  /// Plans given by node name, taken as they are (the probes of a bounded
  /// dimension run with the plans chosen at its MAX).
  std::map<std::string, ir::KernelPlan> FixedPlans;
  /// Loops and Scans whose trip count follows bounded dimensions
  /// (ir::Graph::TripRules), by node name.
  std::map<std::string, ir::TripRule> TripRules;
  /// Numbers computed from bounded dimensions that nodes read as data
  /// (ir::Graph::RunTimeNumbers), by value name.
  std::map<std::string, ir::NumberRule> RunTimeNumbers;
  /// Where each pass announces itself (may be null).
  Progress *Status = nullptr;
  /// The "quantize" pass (--quantize: annotate, calibrate, realize), run
  /// after fold-batch-norm on the float graph; none when empty.
  std::function<void(ir::Graph &)> Quantize;
  /// --precision float16|bfloat16: the type the float32 weights and
  /// activations are stored in (reduce-precision); F32: unchanged.
  DType Precision = DType::F32;
  /// --kv-cache: graph input/output pairs (past, present) kept in one
  /// caller buffer ("auto": every input with "past" in its name whose
  /// "present" output exists); empty: none (passes::kvCache).
  std::vector<std::pair<std::string, std::string>> KvCache;
  bool KvCacheAuto = false;
};

/// Runs the graph passes and lowers the result; returns the program
/// (empty when GraphOnly).
kir::Program runPipeline(ir::Graph &g, const PipelineOptions &options);
/// The steps runPipeline takes after the graph passes (lower-to-kernels,
/// plan-memory, schedule), on a graph it ran GraphOnly and the caller then
/// annotated (the extents of bounded dimensions).
kir::Program lowerGraph(ir::Graph &g, const PipelineOptions &options);

/// Names of the passes, in order (for --help and tests).
std::vector<std::string> passNames();

} // namespace mlcc
