//===- Interpreter.h - Runs kernel IR on the host -------------------------===//
//
// Executes a kernel over host buffers. Constant folding runs each op's own
// lowering through this, so no op has a second implementation. Every access
// is bounds-checked: an out-of-range index is an internal error, not a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <vector>

namespace mlcc::kir {

/// Thrown by interpret() when a kernel runs more loop iterations than its
/// budget allows (constant folding then leaves the node to run time).
struct BudgetExceeded {};

/// Runs `k` with `args[i]` bound to `k.Params[i]`. Each pointer must address
/// at least Params[i]->Size elements of the parameter's type. With
/// `maxIterations` >= 0, throws BudgetExceeded once the kernel's loops have
/// run more iterations than that in all.
void interpret(const Kernel &k, const std::vector<void *> &args,
               int64_t maxIterations = -1);

/// What compiledFit() finds of a kernel.
struct CompiledFit {
  /// Every operation exactly rounded (no libm function, no float8 or
  /// sub-byte element, integer division only by positive constants) and
  /// every access provably within its buffer (intervals of the indices over
  /// the loops' ranges): compiled code computes the interpreter's bytes.
  bool Exact = false;
  int64_t Iterations = 0; ///< loop iterations, at most (as interpret() counts them)
  int64_t Work = 0;       ///< expression nodes evaluated, at most
};
CompiledFit compiledFit(const Kernel &k);

/// Runs `k` as code compiled for this machine (targets/llvm/HostJit.cpp
/// installs one; the compiler library without LLVM has none).
using CompiledRun = void (*)(const Kernel &k, const std::vector<void *> &args);
void setCompiledRun(CompiledRun run);

/// The expression nodes from which a kernel is compiled rather than
/// interpreted (the interpreter evaluates some 10^8 a second; compiling
/// without optimization takes 1-3 ms).
constexpr int64_t kCompiledWork = int64_t(1) << 18;

/// interpret(), or for a kernel of at least kCompiledWork whose fit is
/// exact and within `maxIterations`, the compiled run where one is
/// installed: the same bytes either way (constant folding calls this).
/// $MLCC_FOLD_INTERPRET=1 interprets every kernel (to compare).
void evaluate(const Kernel &k, const std::vector<void *> &args, int64_t maxIterations = -1);

} // namespace mlcc::kir
