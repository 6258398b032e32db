//===- ProbedExtents.h - A kernel's run-time extents from fixed lowerings -===//
//
// An op whose lowering writes fixed extents only still runs to an extent
// known at run time when its kernel differs between values of the dimension
// only in integer constants, each an affine function of the dimension: the
// loop bounds and the offsets that follow the extent. lower-to-kernels
// lowers such a node at MAX and at smaller values (MAX-1, MAX-2, MIN) and
// merges the kernels, each such constant becoming its expression of the
// dimension; anything else that differs (a tile, a float such as 1/N, a
// loop's structure) leaves the op unsupported, with that reason.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlcc::passes {

/// `atMax` (the kernel at the dimension's MAX) with every integer constant
/// that differs in `probes` (the kernel at MAX - deltas[p]) replaced by its
/// line through them in `dim` (an Index); the probes' other parts must
/// equal atMax's. Returns false with the first difference in `why`.
bool mergeProbedKernels(kir::Kernel &atMax, const std::vector<kir::Kernel> &probes,
                        const std::vector<int64_t> &deltas, const kir::Expr &dim, int64_t max,
                        std::string &why);

} // namespace mlcc::passes
