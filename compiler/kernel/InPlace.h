//===- InPlace.h - Where a kernel's output may lie over its input ---------===//
//
// A call whose input dies with it may write its output over that input's
// bytes where the kernel's access order allows: every input byte the output
// covers must be read for the last time before the output's first write to
// it (a residual add writing into its skip input, an elementwise op in
// place, a convolution whose output rows trail the input rows it has
// finished with). The order is the kernel's own, after scheduling: its
// loops are run here with only the loop variables, the conditions and the
// two parameters' indices evaluated (no data). The iterations of a Parallel
// or GPU loop may run in any order or at once, so an input byte read in one
// such iteration may only be covered by an output byte written in the same
// iteration, after the read.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlcc::kir {

/// How a kernel reads one parameter and writes another, element by element.
class AccessOrder {
public:
  /// Runs the accesses of kernel `k` to params `in` (read) and `out`
  /// (written). Empty (ok() false) when the kernel is not one whose order
  /// can be known without its data (an index or condition that loads, a
  /// run-time dimension, a library call), when a loop is left to LLVM's
  /// vectorizer (LoopKind::Scalar, which needs the params not to alias),
  /// when it reads `out` or writes `in`, or when the accesses would exceed `budget` (decremented by the
  /// accesses and loop iterations run). `ordered`: the Parallel loops run
  /// their iterations in order (the caller then sets Kernel::InOrder).
  AccessOrder(const Kernel &k, size_t in, size_t out, bool ordered, int64_t &budget);

  bool ok() const { return Ok; }
  /// Whether `out` may start `displacement` bytes after `in` starts
  /// (negative: before): every byte of an input element the output covers
  /// is read for the last time before the output's first write there.
  bool allows(int64_t displacement) const;

private:
  bool Ok = false;
  int64_t InElem = 1, OutElem = 1;
  /// Per input element: the time of its last read (-1: never read) and the
  /// parallel iteration that read it (-1: none, -2: several).
  std::vector<int64_t> LastRead, ReadIteration;
  /// Per output element: the time of its first write (-1: never written)
  /// and the parallel iteration that wrote it.
  std::vector<int64_t> FirstWrite, WriteIteration;
};

} // namespace mlcc::kir
