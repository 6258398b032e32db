//===- Report.h - Where the bytes and the time of a model go --------------===//
//
// A compiled model described kernel by kernel, for people and for build
// gates: each fused kernel call with the ONNX nodes it holds, its code bytes
// (from the object file), the weight bytes it reads first, its arithmetic
// (kir::countOps) and the arena bytes live while it runs; and the memory
// plan (offset and lifetime of every arena buffer). The per-call figures sum
// to the totals: code (kernels + the code outside them: NAME_run, info),
// weights, operations; the largest arena end over the calls is the arena.
//
// The same description gives the --report JSON, the -v table, the
// --report-html picture and the --max-arena/--max-weights/--max-code checks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlcc::output {

/// What an object file contains (read by the LLVM target's inspectObject).
struct ObjectStats {
  int64_t CodeBytes = 0;     ///< executable sections
  int64_t DataBytes = 0;     ///< read-only and writable data sections
  int64_t WritableBytes = 0; ///< .data/.bss (mutable state: should be 0)
  std::vector<std::string> Undefined; ///< symbols the library needs
  /// Defined functions and their sizes in bytes (ELF symbol sizes), sorted
  /// by name: the kernels (and their outlined parallel tasks), NAME_run, ...
  std::vector<std::pair<std::string, int64_t>> Functions;
};

/// One kernel call: a fused group of ONNX nodes.
struct KernelCallReport {
  std::string Kernel;                ///< the generated function
  std::vector<kir::NodeRef> Nodes;   ///< empty for an output copy
  std::string Label;                 ///< "node 'x' (Conv) + node 'y' (Relu)"
  std::string Plan;                  ///< kir::Call::Plan ("" : the op's own loop nest)
  /// Bytes of the kernel's functions; 0 when an earlier call runs the same
  /// function (SharesCodeWith is then that call), -1 without object code.
  int64_t CodeBytes = -1;
  int64_t SharesCodeWith = -1;
  int64_t WeightBytes = 0; ///< constants no earlier call reads
  int64_t Ops = 0;         ///< element operations (kir::countOps)
  /// Bytes stored as loaded (copies) and constants stored (fills), see
  /// kir::movementOf.
  int64_t CopiedBytes = 0, FilledBytes = 0;
  int64_t ExprDepth = 0;   ///< its deepest expression (kir::maxExprDepth)
  int64_t ArenaLiveBytes = 0; ///< bytes of the arena buffers live during the call
  int64_t ArenaEnd = 0;    ///< highest arena offset they reach (aligned)
  std::vector<size_t> LiveBuffers; ///< indexes into ModelReport::Buffers
  /// Schedule search (--tune, --tune-db): what the measure counts
  /// ("host-ns"; empty: the call's plan is the cost model's), the default
  /// plan, and the measure of a call with it and with the call's plan.
  std::string TuneMeasure, TuneDefaultPlan;
  double TuneDefault = 0, TuneTuned = 0;
  /// The cycle estimate of this call on a microcontroller (CycleReport;
  /// -1: none): instructions executed, cycles at zero wait states.
  double EstInstructions = -1, EstCycles = -1;
  /// Model inputs it reads and outputs it writes (indexes).
  std::vector<size_t> InputsRead, OutputsWritten;
};

struct BufferReport {
  std::string Name;
  int64_t Offset = 0, Bytes = 0;
  int64_t FirstCall = -1, LastCall = -1; ///< -1: never used
  /// The buffer this one is a part of (kir::ArenaBuffer::AliasOf), or -1.
  int64_t PartOf = -1;
  /// The buffer whose bytes it may take in its first call
  /// (kir::ArenaBuffer::LaidOver), or -1.
  int64_t LaidOver = -1;
};

/// The cycle estimate of one run on a Cortex-M core (llvmgen::McuCycles.h):
/// what ran, counted under QEMU, priced by the core's timings.
struct CycleReport {
  std::string Core, Board, Accuracy;
  double ClockMHz = 0;
  int WaitStates = 0;
  double Instructions = 0, Cycles = 0, WaitCycles = 0;
  /// Of those, the run function's own (between the calls).
  double OutsideInstructions = 0, OutsideCycles = 0;
  /// Why there is none (a tool is missing), when Cycles is 0.
  std::string Skipped;
};

struct ModelReport {
  std::string Name;
  std::optional<CycleReport> Cycles; ///< with an estimate (or the reason for none)
  std::vector<KernelCallReport> Calls;
  std::vector<BufferReport> Buffers;
  size_t DistinctKernels = 0;
  bool HasObject = false;      ///< the code figures below are known
  ObjectStats Object;
  int64_t CodeOutsideKernels = 0; ///< NAME_run, NAME_info, helpers
  int64_t WeightBytes = 0, ArenaBytes = 0, ArenaAlign = 0, Ops = 0;
  /// Per run: the calls that only move data (no arithmetic; copies) and,
  /// of those, the ones that only store constants (fills: memsets), and
  /// the bytes every call copies and fills.
  int64_t CopyCalls = 0, FillCalls = 0, CopiedBytes = 0, FilledBytes = 0;
  int64_t MaxExprDepth = 0; ///< the deepest expression of any kernel
  std::vector<std::pair<std::string, int64_t>> Constants; ///< name, bytes
  std::vector<int64_t> ConstantFirstCall;                 ///< per constant
  std::vector<std::string> Inputs, Outputs;               ///< model I/O names
  /// Data flow between calls: (the call that wrote a buffer, a later call
  /// that reads it), through the arena or an output buffer; sorted, unique.
  std::vector<std::pair<size_t, size_t>> Edges;
};

/// Describes `p` (the code figures are unknown until addObjectStats).
ModelReport buildReport(const kir::Program &p);
/// Adds the code sizes of the object file compiled from the report's program.
void addObjectStats(ModelReport &r, const ObjectStats &object);

/// What the report says about how the model was compiled.
struct ReportContext {
  std::string Model, Target, Triple, Cpu, Backend;
  /// Nodes of an int8 model that compute in float (quantizer::
  /// floatFallbacks: "name (Op)").
  std::vector<std::string> FloatNodes = {};
};

/// The --report JSON (totals first, then "fused_kernels" and "memory_plan").
std::string reportJson(const ModelReport &r, const ReportContext &c);
/// The -v summary: totals and one line per kernel call.
std::string reportText(const ModelReport &r, const ReportContext &c);
/// --report-html: one self-contained page with the arena over the kernel
/// calls and the fused graph drawn as SVG, and the per-kernel table.
std::string reportHtml(const ModelReport &r, const ReportContext &c);

/// --max-arena, --max-weights, --max-code (-1: no limit).
struct Budgets {
  int64_t MaxArena = -1, MaxWeights = -1, MaxCode = -1;
};

/// "64k", "1M", "4096": bytes, with k/K = 1024 and M = 1024^2, G = 1024^3;
/// a Usage error names `flag` otherwise.
int64_t parseByteSize(const std::string &text, const char *flag);

/// Throws an OverBudget error (one line: which figure, by how much, and the
/// three largest contributors) when a budget is exceeded. The code budget is
/// checked only when the report has object code.
void checkBudgets(const ModelReport &r, const Budgets &b);

/// A JSON string literal for arbitrary bytes (escaped as in error messages).
std::string jsonString(const std::string &s);

/// Text for HTML element content and attribute values (ReportHtml.cpp).
std::string html(const std::string &s);

} // namespace mlcc::output
