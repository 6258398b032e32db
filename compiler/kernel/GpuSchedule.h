//===- GpuSchedule.h - Kernels as GPU launches -----------------------------===//
//
// The schedule of the CUDA target. A kernel's body becomes a sequence of
// launches, each a GpuBlock loop (the grid) around one GpuThread loop (a
// block's threads), in the kernel's statement order; consecutive launches
// on one stream are ordered, so a statement that reads what the one before
// wrote sees it, as in the serial kernel.
//
//   flat        a top-level statement that is a nest of loops with
//               independent iterations (kir::iterationsIndependent, or a
//               loop the lowering made Parallel): the nest's iteration
//               space is flattened and one thread runs each point, with
//               consecutive points on consecutive threads (coalesced
//               accesses wherever the innermost loop walks memory
//               contiguously) and a guard for the last block.
//   block       a nest like `flat` whose points (rows) each hold loops
//               long enough to share (a reduction of at least a warp's
//               length, and fewer than 8192 rows): one block
//               per row, its threads sharing the row's work in phases
//               separated by barriers. The row's locals become shared
//               buffers; a loop with independent iterations is shared out
//               (thread t runs iterations t, t + threads, ...); a reduction
//               loop (`acc = acc op value` with op +, *, min or max, its
//               other stores independent) is shared out into per-thread
//               partials, combined in a shared-memory tree and folded into
//               the accumulator by thread 0; any other statement of the row
//               runs on thread 0. Blocks have a power of two of threads,
//               32 to 256, as many as the longest shared loop uses.
//               A statement that is not a nest of loops at all is one row.
//   single      any other statement (a scan, a loop-carried recurrence):
//               one block of one thread runs it as written.
//
// Like every schedule it changes how, not what: the interpreter and the
// CPU emitters run a GPU-scheduled kernel as serial loops with the same
// result (`mlcc --gpu-schedule-on-host` checks the schedule that way).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "compiler/target/TargetDesc.h"

namespace mlcc::kir {

/// `k`'s body as launches (see above) on GPU `t` (its warp and block size).
Kernel mapToGpu(const Kernel &k, const TargetDesc &t);

/// One launch of a GPU-scheduled kernel: the GpuBlock loop, its grid and
/// block sizes (the extent of its thread loops).
struct Launch {
  Stmt Loop;
  int64_t Blocks = 1, Threads = 1;
};
/// The launches of a kernel that mapToGpu scheduled, in order.
std::vector<Launch> launchesOf(const Kernel &k);

/// mapToGpu on every kernel of the program.
void scheduleProgramForGpu(Program &p, const TargetDesc &t);

} // namespace mlcc::kir
