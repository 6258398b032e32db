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

/// Runs `k` with `args[i]` bound to `k.Params[i]`. Each pointer must address
/// at least Params[i]->Size elements of the parameter's type.
void interpret(const Kernel &k, const std::vector<void *> &args);

} // namespace mlcc::kir
