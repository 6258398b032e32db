//===- mlcc/Compiler.h - The mlcc compiler as a library -------------------===//
//
// Part of the public C++ API (installed as <mlcc/Compiler.h>, linked as
// mlcc::compiler; standard library only). The `mlcc` command line is a thin
// client of it, and so is the Python module:
//
//   mlcc::CompileOptions o;
//   o.Model = "model.onnx";
//   o.Target = "cortex-m4";
//   mlcc::Library lib = mlcc::compile(o);   // throws mlcc::CompileError
//   lib.write("build/libmodel.a");          // and build/model.h
//   std::printf("%lld arena bytes\n", (long long)lib.info().ArenaBytes);
//
// CompileOptions holds the command line's options by their names (their
// values as the command line spells them, so that a message names the flag
// a user can change). compile() does everything the command line does
// before it writes files: the output kind comes from `Output`'s extension or
// `Emit` (default: a library), and the artifacts of that kind are made
// then; write() makes others on demand. Nothing is written before the
// compile has succeeded, and a failed write leaves no partial file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlcc/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlcc {

/// How a model is compiled: the command line's options (mlcc --help).
struct CompileOptions {
  std::string Model;  ///< the ONNX file
  std::string Output; ///< -o: its extension picks the kind; "-": stdout; empty: in memory
  std::string Emit;   ///< --emit lib|obj|c|cuda|header|graph|kernels|plan|llvm|asm|onnx
  std::string Name;   ///< --name (default: from Output, else the model's file name)
  std::vector<std::string> Dims;        ///< --dim NAME=VALUE or NAME=MIN..MAX
  std::vector<std::string> Shapes;      ///< --shape NAME=D0xD1x...
  std::vector<std::string> Freeze;      ///< --freeze NAME=FILE.pb
  std::vector<std::string> InputRanges; ///< --input-range NAME=MIN..MAX
  std::string Backend = "llvm"; ///< llvm, or c (host C compiler)
  std::string Target = "host";
  std::string Cpu, Features;
  std::string CudaArch;           ///< --cuda-arch sm_80,sm_90; empty: sm_75
  bool NoLibraryDispatch = false; ///< --no-library-dispatch
  bool GpuScheduleOnHost = false; ///< --gpu-schedule-on-host
  int OptLevel = 3;
  bool SizeOpt = false;
  std::string Report;                        ///< --report FILE.json
  std::string ReportHtml;                    ///< --report-html FILE.html
  std::string MaxArena, MaxWeights, MaxCode; ///< budgets ("64k"), empty: none
  std::string MaxTensor;                     ///< the per-tensor limit ("4G"), empty: the default
  std::string ProgressMode = "auto";         ///< --progress auto|always|never
  std::string DumpIr, DumpIrDir;
  std::string DumpDot;                ///< --dump-dot FILE.dot
  std::string Precision;              ///< --precision float16|bfloat16; empty: float32
  /// --kv-cache PAST=PRESENT or auto (repeatable): key/value caches kept in
  /// one caller buffer, the step writing only the new rows.
  std::vector<std::string> KvCache;
  std::string Quantize;               ///< --quantize int8; empty: none
  std::vector<std::string> Calibrate; ///< NAME=SAMPLES.npy
  std::string CalibrationMethod;      ///< minmax (default), percentile[=P], entropy
  bool QuantizeIo = false;            ///< --quantize-io
  bool ReduceRange = false;           ///< --reduce-range
  int WeightBits = 8;                 ///< --weight-bits 8|4 (with --quantize)
  std::vector<std::string> KeepFloat; ///< --keep-float NODE
  bool TimePasses = false; ///< print each pass's time on stderr
  bool Verbose = false;    ///< print the summary and the kernel table on stderr
  /// --cycles auto|on|off: the cycle estimate on a Cortex-M target (the
  /// firmware run once under QEMU, each instruction priced by the core's
  /// timings): auto makes it with -v, --report or --report-html where
  /// arm-none-eabi-gcc and qemu-system-arm are installed.
  std::string Cycles = "auto";
  double ClockMHz = 0;  ///< --clock-mhz; 0: the core's reference board's
  int WaitStates = -1;  ///< --wait-states (flash); -1: the reference board's
  /// --cache-dir DIR: each kernel's object code kept in DIR and taken from
  /// it by later compiles of the same kernel for the same target (this
  /// model or another) with the same compiler build; empty:
  /// $MLCC_CACHE_DIR, and no cache where that is unset too. The output is
  /// the same bytes with and without it.
  std::string CacheDir;
  std::string CacheMax; ///< --cache-max SIZE ("512M"): the folder's bound; empty: 512 MiB
  int Jobs = 0;         ///< -j/--jobs: threads of code generation; 0: one per core
  bool Tune = false;       ///< --tune: measure the candidate plans
  std::string TuneDb;      ///< --tune-db FILE.jsonl
  std::string TuneBudget;  ///< --tune-budget 60s | 8 (trials)
};

/// A graph input or output of the compiled library, as its header declares
/// it.
struct TensorInfo {
  std::string Name;  ///< the ONNX name
  std::string CName; ///< its member in NAME_inputs / NAME_outputs
  std::string Type;  ///< ONNX's name of the element type: "float", "uint8", ...
  std::vector<int64_t> Shape; ///< at every run-time dimension's MAX
  /// Per axis: its extent as an expression of the run-time dimensions
  /// ("seq", "2*seq+1"), or "" where it is fixed.
  std::vector<std::string> Extents;
  double Scale = 0; ///< --quantize-io: real = Scale * (q - ZeroPoint); 0: not quantized
  int64_t ZeroPoint = 0;
};

/// A dimension given when the library runs (--dim NAME=MIN..MAX).
struct RunTimeDimInfo {
  std::string Name;
  int64_t Min = 0, Max = 0;
};

/// What the header says of the library, and the figures of --report.
struct LibraryInfo {
  std::string Name;   ///< the symbols' prefix
  std::string Target; ///< the target's name ("host", "cortex-m4", "cuda", ...)
  std::string Triple, Cpu;
  std::vector<TensorInfo> Inputs, Outputs;
  std::vector<RunTimeDimInfo> Dims;
  int64_t ArenaBytes = 0, ArenaAlign = 0; ///< NAME_ARENA_SIZE, NAME_ARENA_ALIGN
  int64_t WeightBytes = 0;
  int64_t CodeBytes = -1; ///< -1 until object code is made (library or object output)
  int64_t KernelCalls = 0;
};

/// A file the compile made, in memory: its path (`Output`'s folder for the
/// header and companions) and contents.
struct Artifact {
  std::string Path;
  std::string Bytes;
};

/// A compiled model. Copies share the compiled program.
class Library {
public:
  /// What the header declares and the memory figures.
  const LibraryInfo &info() const;
  /// The --report JSON (the figures known for the kind compiled).
  std::string reportJson() const;
  /// The -v summary and per-kernel table.
  std::string reportText() const;
  /// The files the compile made for `Output`/`Emit` (and --report,
  /// --report-html, --dump-dot, --tune-db), in the order written.
  const std::vector<Artifact> &artifacts() const;
  /// Text the command line writes to stdout (-o -), or "".
  const std::string &stdoutText() const;
  /// Writes artifacts() (stdoutText() to stdout), each file through a
  /// temporary and a rename, all after every one was made.
  void commit() const;

  /// Writes the library again as `path`'s extension says (.a, .o, .c, .h,
  /// .ll, .s; and the header beside it, for .a/.o/.c), reusing the object
  /// code made by compile() where it can. Symbols keep the compiled name.
  void write(const std::string &path) const;

  /// Whether run() can run this library here: the host target, or an x86-64
  /// level this CPU has, compiled to object code (not --target cuda).
  bool runsHere() const;
  /// Runs the code that ships (the object linked into this process, as
  /// `mlcc check` runs it): one dense buffer per input and output in the
  /// order of info(), the run-time dimensions by name (each must be given
  /// when the library has any). A status other than MLCC_OK (a dimension out
  /// of its range, ...) is a CompileError naming it. Not thread-safe on one
  /// Library: the arena is the library's.
  void run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs,
           const std::map<std::string, int64_t> &dims = {}) const;

  /// The run-time dimensions that inputs of these shapes give (each read
  /// from an axis whose extent follows one dimension alone); a Usage error
  /// for a shape no value in the ranges gives, naming the input and axis.
  std::map<std::string, int64_t>
  dimsFromShapes(const std::vector<std::vector<int64_t>> &inputShapes) const;
  /// The shape of input or output `index` at these run-time dimensions.
  std::vector<int64_t> inputShape(size_t index, const std::map<std::string, int64_t> &dims) const;
  std::vector<int64_t> outputShape(size_t index,
                                   const std::map<std::string, int64_t> &dims) const;

  struct Impl;
  explicit Library(std::shared_ptr<Impl> impl);

private:
  std::shared_ptr<Impl> I;
};

/// Compiles as the command line does with these options, up to writing the
/// files (Library::commit writes them). Throws CompileError.
Library compile(const CompileOptions &options);

/// The text of --list-targets, --list-ops and --print-target.
std::string targetList();
std::string opList();
std::string targetDescription(const CompileOptions &options);

/// Writes `files`, each through a temporary and a rename, after checking
/// that every one can be written; no partial file is left on an error.
void writeFiles(const std::vector<Artifact> &files);
/// An Io error naming `path` when it cannot be written (its folder is
/// missing or not writable).
void checkWritable(const std::string &path);

/// The version of the compiler ("0.1.0").
std::string version();

} // namespace mlcc
