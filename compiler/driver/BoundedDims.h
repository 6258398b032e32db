//===- BoundedDims.h - --dim NAME=MIN..MAX: dimensions known at run time ---===//
//
// A bounded dimension takes any value in MIN..MAX when the library runs.
// The graph is compiled at MAX (so every buffer is planned for the largest
// value); which axes of which values follow the dimension, and how, is found
// by compiling the graph again at other values of the dimension and
// comparing: an axis whose extent changes is bounded, its extent an affine
// function of the dimensions (checked at three values). What depends on a
// dimension in any other way (the graph's structure, a non-affine extent,
// numbers computed from it that a node reads as data) is an Unsupported
// error naming the dimension, the node and the value.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/driver/Compile.h"
#include "compiler/driver/DimOptions.h"

#include <vector>

namespace mlcc {

/// Adds to po.TripRules the Loops and Scans of `g` (the graph compiled at
/// every dimension's MAX with `po`) whose number of iterations follows the
/// dimensions, found by compiling at other values; true when it added any
/// (compile `g` again with them: a loop inside one may follow next).
/// Counts that are not affine in the dimensions, or that fall as one
/// grows, are Unsupported errors.
bool addTripRules(const CompileOptions &o, const llvmgen::TargetSpec &target, PipelineOptions &po,
                  const ir::Graph &g, const std::vector<ir::BoundedDim> &dims);

/// Sets g.BoundedDims and every value's Value::Bounded, `g` being the graph
/// compiled (GraphOnly) at every dimension's MAX with po.RunTimeNumbers;
/// compiles the probes with `po` (GraphOnly). False when nodes read as data
/// numbers computed from the dimensions that are not yet computed at run
/// time: their rules are added to `numbers` (ir::NumberRule), and the
/// caller compiles again with them.
bool attachBoundedExtents(const CompileOptions &o, const llvmgen::TargetSpec &target,
                          PipelineOptions po, ir::Graph &g,
                          const std::vector<ir::BoundedDim> &dims,
                          std::map<std::string, ir::NumberRule> &numbers);

/// compileModel for `o` with its bounded dimensions `bounded` (boundedDims:
/// --dim NAME=MIN..MAX; none: compileModel itself): the graph at every
/// dimension's MAX with the trip rules, the extents and the run-time
/// numbers the dimensions need, then (unless po.GraphOnly) its kernels,
/// which run to the extents the caller gives.
CompiledModel compileWithDims(const CompileOptions &o, const llvmgen::TargetSpec &target,
                              PipelineOptions po, const std::vector<ir::BoundedDim> &bounded);

} // namespace mlcc
