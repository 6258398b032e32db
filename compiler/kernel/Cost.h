//===- Cost.h - What a kernel computes, counted ----------------------------===//
//
// The kernel-level estimates, two measures from one walk of the kernel IR
// (the plans' costs, before kernels exist, are compiler/schedule/
// CostModel.h's).
//
// countOps: the arithmetic a kernel performs, for reports
// (`--report`, `-v`): every unary or binary operation on tensor elements (not
// on Index values, which are addressing) in a stored value, times the lanes
// of its vector, times the trip counts of the loops around it. A
// multiply-add is two operations, so for float kernels this is the FLOP
// count; for integer kernels it counts integer operations the same way.
//
// Loop bounds that depend on an enclosing loop (tails, triangles) are taken
// at the middle of that loop's range; an If whose condition can be evaluated
// that way counts the branch it takes, otherwise the costlier branch. Bounds
// read from memory count one trip.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

namespace mlcc::kir {

/// Element operations one run of `k` performs (see above).
int64_t countOps(const Kernel &k);

/// The bytes a run of `k` stores into its parameters (inputs, outputs,
/// arena buffers) without computing them, its loops counted as countOps
/// counts them: elements loaded from a parameter and stored as they are
/// (copies: Concat, Split, Slice, Transpose, a padded input's interior, an
/// output copy) and constants stored (fills: memsets, a padded border).
struct Movement {
  int64_t CopiedBytes = 0, FilledBytes = 0;
};
Movement movementOf(const Kernel &k);

/// workOf: the elements one run of `s` stores (a vector store counts its
/// lanes), at least: loops whose bounds are not constants count one trip,
/// an If its costlier branch. Cheap and conservative, for deciding whether
/// a loop is worth a fork (parallelize) or a GPU block's shared work.
int64_t workOf(const Stmt &s);

} // namespace mlcc::kir
