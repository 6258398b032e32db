//===- Driver.h - From options to output files ----------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Program.h"
#include "compiler/pipeline/Pipeline.h"
#include "targets/llvm/Targets.h"

#include <memory>
#include <string>
#include <vector>

namespace mlcc {

struct DriverOptions {
  std::string Model;
  std::string Output;
  std::string Emit; ///< empty: from the output extension
  std::string Name;
  std::vector<std::string> Dims;   ///< NAME=VALUE
  std::vector<std::string> Shapes; ///< NAME=D0xD1x...
  std::vector<std::string> Freeze; ///< NAME=FILE.pb
  std::vector<std::string> InputRanges; ///< NAME=MIN..MAX
  std::string Backend = "llvm"; ///< llvm, or c (host C compiler)
  std::string Target = "host";
  std::string Cpu, Features;
  std::string CudaArch;          ///< --cuda-arch sm_80,sm_90; empty: sm_75
  bool NoLibraryDispatch = false; ///< --no-library-dispatch
  bool GpuScheduleOnHost = false; ///< --gpu-schedule-on-host
  int OptLevel = 3;
  bool SizeOpt = false;
  std::string Report; ///< --report FILE.json
  std::string ReportHtml; ///< --report-html FILE.html
  std::string MaxArena, MaxWeights, MaxCode; ///< budgets ("64k"), empty: none
  std::string MaxTensor; ///< the per-tensor limit ("4G"), empty: the default
  std::string ProgressMode = "auto"; ///< --progress auto|always|never
  std::string DumpIr, DumpIrDir;
  std::string DumpDot; ///< --dump-dot FILE.dot
  std::string Quantize;               ///< --quantize int8; empty: none
  std::vector<std::string> Calibrate; ///< NAME=SAMPLES.npy
  std::string CalibrationMethod;      ///< minmax (default), percentile[=P], entropy
  bool QuantizeIo = false;            ///< --quantize-io
  bool ReduceRange = false;           ///< --reduce-range
  std::vector<std::string> KeepFloat; ///< --keep-float NODE
  bool TimePasses = false;
  bool Verbose = false;
  bool Tune = false;       ///< --tune: measure the candidate plans
  std::string TuneDb;      ///< --tune-db FILE.jsonl
  std::string TuneBudget;  ///< --tune-budget 60s | 8 (trials)
};

/// The model after the pipeline, and the graph it was lowered from.
struct CompiledModel {
  std::unique_ptr<ir::Graph> Graph;
  kir::Program Program;
};

/// Loads `o.Model` (with --dim and --freeze) and runs the pipeline as the
/// options say (--quantize included) for `target`; `po` gives the rest.
CompiledModel compileModel(const DriverOptions &o, const llvmgen::TargetSpec &target,
                           PipelineOptions po);

/// Loads `o.Model` with its --dim and --freeze bindings.
std::unique_ptr<ir::Graph> loadGraph(const DriverOptions &o);

/// Whether code for `t` runs in this process (mlcc check, --tune): the
/// host itself, or an x86-64 level (x86-64 to x86-64-v4) that this CPU
/// has. Anything else runs as a program (QEMU), so that an instruction this
/// CPU lacks cannot crash mlcc.
bool runsInProcess(const llvmgen::TargetSpec &t);

/// How a program for `t` is built and run where this machine does not run
/// its code: the C compiler command that links a harness with the model's
/// object (a cross gcc; for Cortex-M4/M7, arm-none-eabi-gcc with newlib's
/// semihosting and the firmware startup code and linker script) and the
/// command that runs it (qemu-user; qemu-system-arm on the MPS2 boards).
/// `cc` and `run` given (mlcc check --cc/--run) are kept; a Usage error
/// that starts with `who` when there is no way.
void crossCommands(const llvmgen::TargetSpec &t, const std::string &who,
                   std::vector<std::string> &cc, std::vector<std::string> &run);

/// The C declarations of a harness that runs program `p` (mlcc check,
/// --tune): a static arena, the input and output buffers, the pointer
/// tables `ins` and `outs` and their sizes `in_bytes` and `out_bytes`.
std::string harnessBuffers(const kir::Program &p);
/// C statements that fill `ins` from the file inputs.bin (the program
/// returns 90 or 91 when it cannot).
std::string harnessReadInputs(const kir::Program &p);

/// The exit status of an error of this kind (mlcc --help lists them).
int exitStatus(ErrorKind kind);

/// Prints the target presets (--list-targets).
void listTargets();

/// Prints the description of --target/--cpu/--features (--print-target).
void printTarget(const DriverOptions &o);

/// Prints the supported operators (--list-ops).
void listOps();

/// Compiles and writes the outputs; throws CompileError on any problem
/// (and then leaves no output file behind).
void runDriver(const DriverOptions &options);

} // namespace mlcc
