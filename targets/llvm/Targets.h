//===- Targets.h - Target presets and LLVM code generation ----------------===//
//
// `--target` accepts a preset name (host, x86_64, aarch64-linux, cortex-m4,
// ...) or any LLVM triple, which is normalized. A preset fixes the CPU, the
// features, the float ABI and the relocation model a firmware or Linux
// engineer would expect; --cpu and --features override them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Program.h"
#include "compiler/output/Report.h"

#include <functional>
#include <string_view>
#include <string>
#include <vector>

namespace mlcc::llvmgen {

struct TargetSpec {
  std::string Name;        ///< preset name, or the triple
  std::string Triple;      ///< normalized
  std::string Cpu;
  std::string Features;    ///< "+neon,+fp-armv8"
  std::string Abi;         ///< RISC-V ABI name (lp64d, ilp32f, ...), or empty
  bool HardFloat = false;  ///< ARM hard-float calling convention
  bool Pic = true;         ///< position-independent (Linux) or static (bare metal)
  std::string Description; ///< for --list-targets
};

/// The named presets, in the order --list-targets prints them.
std::vector<TargetSpec> targetPresets();

/// Resolves --target/--cpu/--features; a Usage error names an unknown
/// target or CPU.
TargetSpec resolveTarget(const std::string &target, const std::string &cpu,
                         const std::string &features);

/// --target cuda: NVIDIA GPUs of the architectures `archs` (sm_75, ...;
/// the CPU field lists them), through CUDA C++ and nvcc.
TargetSpec cudaTarget(const std::vector<std::string> &archs);

/// The description of `t` (compiler/target/TargetDesc.h): vector width
/// and registers, caches, float unit and integer multiply-accumulate forms,
/// from the CPU's features as LLVM knows them (--cpu and --features
/// included); for cudaTarget(), the GPU's (asGpu()).
TargetDesc describeTarget(const TargetSpec &t);

enum class OutputKind { Object, Assembly, LlvmIr };

using ObjectStats = output::ObjectStats;

using ProgressFn = std::function<void(const char *what, size_t done, size_t total)>;

struct CodegenOptions {
  int OptLevel = 3; ///< 0..3
  bool SizeOpt = false; ///< -Os
  /// Schedule search's llvm-mca estimate (mlcc --tune on a core this
  /// machine does not run): after optimization, a 64-bit counter per basic
  /// block of every defined function, incremented at the block's top: the
  /// globals NAME_0, NAME_1, ... (function and block order), the table of
  /// their addresses NAME, their number in the int32 NAME_n. Empty: none.
  std::string BlockCounters;
  /// Called as the work goes on: ("optimizing", 0, 0), then
  /// ("code generation", functions done, functions in all). May be empty.
  ProgressFn OnProgress;
};

/// Compiles a program to an object file, assembly text or LLVM IR text:
/// one module, its kernels internal functions.
std::string compileProgram(const kir::Program &p, const TargetSpec &t,
                           const CodegenOptions &o, OutputKind kind);

/// Object code by key (compiler/driver/KernelCache.h keeps it in a
/// folder). Both calls may come from several threads at once.
class ObjectCache {
public:
  virtual ~ObjectCache() = default;
  /// The object stored under `key` (32 hex digits), or false.
  virtual bool get(const std::string &key, std::string &object) = 0;
  virtual void put(const std::string &key, const std::string &object) = 0;
};

/// A program as the objects of a library: the program's own (its
/// constants, run functions and model info; named NAME.o) and one per
/// distinct kernel, named by its symbol.
struct ProgramObjects {
  std::vector<std::pair<std::string, std::string>> Members; ///< file name, object
  /// The function of kernel i: "mlcc_" + its name without the "kN_" of its
  /// position + "_" + 16 hex digits of its content's hash (the LLVM IR of
  /// its module, the target, the code generator's options, the compiler's
  /// build), so that two libraries defining the same kernel share one copy
  /// (weak_odr, hidden) and a cache finds it from another model.
  std::vector<std::string> KernelSymbols;
  size_t CacheHits = 0, CacheMisses = 0;
  /// What the objects contain in all, function bytes under the names of
  /// the kernels (not their symbols) as compileProgram's object has them.
  ObjectStats Stats;
};

/// Compiles `p` as ProgramObjects: the kernels' modules on `jobs` threads
/// (0: one per core), each kernel's object from `cache` when it holds it
/// (and into it when not; null: no cache). The bytes do not depend on the
/// threads or the cache.
ProgramObjects compileProgramObjects(const kir::Program &p, const TargetSpec &t,
                                     const CodegenOptions &o, ObjectCache *cache = nullptr,
                                     unsigned jobs = 0);

/// An object for `t` with kernel `k` alone and its entry `entry`:
/// `void entry(void *const *args, const mlcc_run_options *options)` calls
/// the kernel with args[i] for its parameter i (constant folding runs it on
/// the host: kir::evaluate).
std::string compileKernelEntry(const kir::Kernel &k, const std::string &entry,
                               const TargetSpec &t, const CodegenOptions &o);

/// Whether dataObject() can follow `like` (a little-endian ELF object).
bool canWriteDataObject(const std::string &like);
/// A relocatable ELF object, its header like `like`'s (class, machine,
/// flags, OS/ABI), that defines each symbol (hidden, 64-byte aligned) as
/// its bytes in one read-only section (DataObject.cpp).
std::string dataObject(const std::string &like,
                       const std::vector<std::pair<std::string, std::string_view>> &symbols);

/// An object file for target `t` that defines one constant array of bytes,
/// `symbol` (C linkage, `align`ed): data that does not belong in a source
/// file (the CUDA target's weights).
std::string compileData(const std::string &symbol, const std::string &bytes, unsigned align,
                        const TargetSpec &t);

/// A deterministic GNU archive (ar) of the given members.
std::string makeArchive(const std::vector<std::pair<std::string, std::string>> &members);

/// What an object file contains, for the report.
ObjectStats inspectObject(const std::string &objectBytes);

} // namespace mlcc::llvmgen
