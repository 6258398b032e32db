//===- HostJit.h - Run a compiled program in the compiler's own process ---===//
//
// For work the compiler does by running a model (calibration for
// --quantize): the program is compiled for the host like any library and
// the object is loaded with LLVM's ORC JIT linker, so the model runs at
// full speed without a C compiler or a temporary file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "runtime-c/mlcc.h"
#include "targets/llvm/Targets.h"

#include <memory>
#include <vector>

namespace mlcc::llvmgen {

/// Runs kernel `k` (args[i] its parameter i) as code compiled for this
/// machine without optimization: kir::evaluate's compiled run, which this
/// library installs (kir::setCompiledRun) when it is linked.
void runCompiledKernel(const kir::Kernel &k, const std::vector<void *> &args);

class HostModel {
public:
  /// Compiles `p` for this CPU and links it into the process.
  explicit HostModel(const kir::Program &p);
  /// Compiles `p` as a library for `target` would be (mlcc check: the code
  /// that ships; the target must be one this CPU runs) and links it.
  HostModel(const kir::Program &p, const TargetSpec &target, const CodegenOptions &options);
  ~HostModel();
  HostModel(const HostModel &) = delete;
  HostModel &operator=(const HostModel &) = delete;

  /// Runs the model: one pointer per graph input and output, in order, to
  /// dense buffers of their types.
  void run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs);
  /// The same, returning NAME_run_ptrs's status (a run-time dimension out
  /// of its range: MLCC_ERR_DIM_RANGE) instead of failing on one; the
  /// run-time dimensions follow the inputs, each a pointer to its int64_t.
  int32_t tryRun(const std::vector<const void *> &inputs, const std::vector<void *> &outputs);

  /// The same through NAME_run_with, with its on_kernel hook (mlcc.h):
  /// `hook(context, call, kernel name, phase)` before and after every call.
  using KernelHook = mlcc_kernel_hook;
  void runWithHook(const std::vector<const void *> &inputs, const std::vector<void *> &outputs,
                   KernelHook hook, void *context);

  /// The arena the model runs in (ArenaSize bytes, aligned as it needs).
  uint8_t *arena() const;

private:
  struct Impl;
  std::unique_ptr<Impl> I;
};

} // namespace mlcc::llvmgen
