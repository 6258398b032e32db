//===- Compile.h - From compile options to a compiled program -------------===//
//
// The layer under the public API (mlcc/Compiler.h): load a model with the
// options' bindings and run the pipeline for a target. The bounded
// dimensions' analysis, the schedule search and the check compile through
// it; compiler/driver/Library.cpp puts them together.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlcc/Compiler.h"

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Program.h"
#include "compiler/pipeline/Pipeline.h"
#include "targets/llvm/Targets.h"

#include <memory>
#include <string>
#include <vector>

namespace mlcc {

/// The model after the pipeline, and the graph it was lowered from.
struct CompiledModel {
  std::unique_ptr<ir::Graph> Graph;
  kir::Program Program;
};

/// Loads `o.Model` (with --dim and --freeze) and runs the pipeline as the
/// options say (--quantize included) for `target`; `po` gives the rest.
CompiledModel compileModel(const CompileOptions &o, const llvmgen::TargetSpec &target,
                           PipelineOptions po);

/// Loads `o.Model` with its --dim and --freeze bindings.
std::unique_ptr<ir::Graph> loadGraph(const CompileOptions &o);

/// Sets the largest tensor (compiler/support/Tensor.h) to --max-tensor, or
/// back to the default: a process that compiles several models (the
/// Python module) does not keep one compile's limit for the next.
void applyMaxTensor(const CompileOptions &o);

/// The pipeline options `target` decides: its description for the
/// schedules, the GPU schedule and library dispatch.
void setTargetOptions(PipelineOptions &po, const CompileOptions &o,
                      const llvmgen::TargetSpec &target);

} // namespace mlcc
