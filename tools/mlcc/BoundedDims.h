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

#include "tools/mlcc/Driver.h"

#include <vector>

namespace mlcc {

/// The dimensions --dim binds to a range (NAME=MIN..MAX), in the order
/// given; usage errors for a malformed or empty range.
std::vector<ir::BoundedDim> boundedDims(const DriverOptions &o);

/// "--dim NAME=MIN..MAX", for messages.
std::string flagText(const ir::BoundedDim &d);

/// The Unsupported error of `mlcc check` given a range for `d`: it compares
/// layers at one value of each dimension so far.
[[noreturn]] void failCheckRange(const ir::BoundedDim &d);

/// `o` with each bounded dimension bound to one value: `values[k]` for
/// dimension k of `dims` (every --dim NAME=MIN..MAX becomes NAME=VALUE).
DriverOptions atValues(const DriverOptions &o, const std::vector<ir::BoundedDim> &dims,
                       const std::vector<int64_t> &values);

/// Adds to po.TripRules the Loops and Scans of `g` (the graph compiled at
/// every dimension's MAX with `po`) whose number of iterations follows the
/// dimensions, found by compiling at other values; true when it added any
/// (compile `g` again with them: a loop inside one may follow next).
/// Counts that are not affine in the dimensions, or that fall as one
/// grows, are Unsupported errors.
bool addTripRules(const DriverOptions &o, const llvmgen::TargetSpec &target, PipelineOptions &po,
                  const ir::Graph &g, const std::vector<ir::BoundedDim> &dims);

/// Sets g.BoundedDims and every value's Value::Bounded, `g` being the graph
/// compiled (GraphOnly) at every dimension's MAX; compiles the probes with
/// `po` (GraphOnly).
void attachBoundedExtents(const DriverOptions &o, const llvmgen::TargetSpec &target,
                          PipelineOptions po, ir::Graph &g,
                          const std::vector<ir::BoundedDim> &dims);

} // namespace mlcc
