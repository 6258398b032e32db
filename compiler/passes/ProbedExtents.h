//===- ProbedExtents.h - A kernel's run-time extents from fixed lowerings -===//
//
// An op whose lowering writes fixed extents only still runs to an extent
// known at run time when its kernel differs between values of the dimension
// only in constants that follow it: integers, each an affine function of the
// dimension (the loop bounds and the offsets that follow the extent), and
// floats that are such a count or its reciprocal (a mean's 1/N).
// lower-to-kernels lowers such a node at MAX and at other values (MAX-1,
// MAX-2 and the least value keeping every extent above 1) and merges the
// kernels, each such constant becoming its expression of the dimension;
// anything else that differs (a tile, a crop offset (N - 4) / 2, a loop's
// structure) leaves the op unsupported, with that reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlcc::passes {

/// `atMax` (the kernel at the dimension's MAX) with every constant that
/// differs in `probes` (the kernel at MAX - deltas[p]) replaced by its
/// expression in `dim` (an Index): an integer's line through them, a
/// float's count or reciprocal count on such a line; the probes' other
/// parts must equal atMax's. Returns false with the first difference in
/// `why`.
bool mergeProbedKernels(kir::Kernel &atMax, const std::vector<kir::Kernel> &probes,
                        const std::vector<int64_t> &deltas, const kir::Expr &dim, int64_t max,
                        std::string &why);

} // namespace mlcc::passes
