//===- Cycles.h - The cycle estimate of a compiled Cortex-M library -------===//
//
// mlcc --target cortex-m4 -v (or --report, or --cycles on): the library's
// object linked into a firmware that runs the model once on inputs like
// --tune's, QEMU runs it with its translation-block log on, and
// llvmgen::estimateCycles prices what ran with the core's timings
// (targets/llvm/McuCycles.h). The report gets the total, the milliseconds
// at the reference board's clock (or --clock-mhz), the figure with its
// flash wait states (or --wait-states) and each kernel call's cycles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "compiler/output/Report.h"
#include "targets/llvm/Targets.h"

#include <mlcc/Compiler.h>

#include <string>

namespace mlcc {

/// Whether the compile makes a cycle estimate: --cycles on, or auto with
/// -v/--report/--report-html on a core that has a timing model. A Usage
/// error for --cycles on where there is no model or no object code.
bool wantsCycleEstimate(const CompileOptions &o, const llvmgen::TargetSpec &t,
                        const std::string &kind);

/// Runs the estimate of `objects` (the library's code, kernel i the
/// function kernelSymbols[i]; `header` its header) and puts it in `r`: the figures, or with --cycles auto the reason there
/// are none (a tool is missing). --cycles on fails instead.
void estimateLibraryCycles(const CompileOptions &o, const kir::Program &p,
                           const llvmgen::TargetSpec &t,
                           const std::vector<std::pair<std::string, std::string>> &objects,
                           const std::vector<std::string> &kernelSymbols,
                           const std::string &header, output::ModelReport &r);

} // namespace mlcc
