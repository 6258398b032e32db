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

} // namespace mlcc::kir
