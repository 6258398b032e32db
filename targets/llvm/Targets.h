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

/// Compiles a program to an object file, assembly text or LLVM IR text.
std::string compileProgram(const kir::Program &p, const TargetSpec &t,
                           const CodegenOptions &o, OutputKind kind);

/// An object file for target `t` that defines one constant array of bytes,
/// `symbol` (C linkage, `align`ed): data that does not belong in a source
/// file (the CUDA target's weights).
std::string compileData(const std::string &symbol, const std::string &bytes, unsigned align,
                        const TargetSpec &t);

/// A deterministic GNU archive (ar) of the given members.
std::string makeArchive(const std::vector<std::pair<std::string, std::string>> &members);

/// What an object file contains, for the report.
using ObjectStats = output::ObjectStats;
ObjectStats inspectObject(const std::string &objectBytes);

} // namespace mlcc::llvmgen
