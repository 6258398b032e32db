//===- DimOptions.h - --dim NAME=MIN..MAX as options -----------------------===//
//
// The ranges --dim gives, read from the options; the analysis of what
// follows them is BoundedDims.h's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlcc/Compiler.h"

#include "compiler/ir/Graph.h"

#include <string>
#include <vector>

namespace mlcc {

/// The dimensions --dim binds to a range (NAME=MIN..MAX), in the order
/// given; usage errors for a malformed or empty range.
std::vector<ir::BoundedDim> boundedDims(const CompileOptions &o);

/// "--dim NAME=MIN..MAX", for messages.
std::string flagText(const ir::BoundedDim &d);

/// The Unsupported error of a load given a range for `d` (the bounded
/// compile, compileWithDims, loads the model at values of it).
[[noreturn]] void failRangeHere(const ir::BoundedDim &d);

/// `o` with each bounded dimension bound to one value: `values[k]` for
/// dimension k of `dims` (every --dim NAME=MIN..MAX becomes NAME=VALUE).
CompileOptions atValues(const CompileOptions &o, const std::vector<ir::BoundedDim> &dims,
                       const std::vector<int64_t> &values);

} // namespace mlcc
