//===- Parallelize.cpp - Outer loops on the caller's workers ----------------===//
//
// parallelize: the outermost loops with independent iterations
// (iterationsIndependent, Affine.cpp) and enough work (workOf, Cost.h),
// outside the lowering's own parallel loops, run in chunks on the caller's
// workers.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Schedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Cost.h"
#include "compiler/kernel/Mutator.h"

#include <algorithm>

namespace mlcc::kir {

namespace {

bool hasParallelLoop(const Stmt &s) {
  bool found = false;
  visitStmts(s, [&](const Stmt &st) {
    found |= st->Kind == StmtKind::For && st->Loop == LoopKind::Parallel;
  });
  return found;
}

} // namespace

namespace {

/// Makes the outermost loops that can be parallel: loops outside any
/// parallel loop and containing none, whose iterations are independent and
/// which do enough work (else their inner loops are tried), split into at
/// most kMaxChunks chunks of consecutive iterations. Serial loops around a
/// parallel one stay serial (their other loops are tried: the copy of a
/// convolution's padded input before its parallel contraction).
class Parallelizer : public Mutator {
public:
  using Mutator::mutate;
  Stmt mutate(const Stmt &s) override {
    if (!s)
      return s;
    if (s->Kind != StmtKind::For)
      return Mutator::mutate(s);
    if (s->Loop == LoopKind::Parallel)
      return s;
    if (hasParallelLoop(s->Inner) || !s->Begin->isConst() || !s->End->isConst())
      return Mutator::mutate(s);
    int64_t begin = s->Begin->IntValue, n = s->End->IntValue - begin;
    if (s->Loop != LoopKind::Serial || workOf(s) < kMinWork)
      return s; // too little work here, and so in any inner loop
    if (n < 2 || !iterationsIndependent(*s))
      return Mutator::mutate(s);
    int64_t chunk = (n + kMaxChunks - 1) / kMaxChunks, chunks = (n + chunk - 1) / chunk;
    Var c = newVar(s->LoopVar->Name + "c");
    Expr lo = indexConst(begin) + varRef(c) * chunk;
    Expr hi = n % chunk == 0 ? lo + chunk : min(lo + chunk, indexConst(begin + n));
    if (chunk == 1)
      return forLoop(s->LoopVar, s->Begin, s->End, s->Inner, LoopKind::Parallel);
    return forLoop(c, indexConst(0), indexConst(chunks),
                   forLoop(s->LoopVar, lo, hi, s->Inner), LoopKind::Parallel);
  }

  /// Below this many element operations a fork costs more than it saves.
  static constexpr int64_t kMinWork = 1 << 14;
  /// Chunks per loop: enough to balance a few workers.
  static constexpr int64_t kMaxChunks = 32;
};

} // namespace

Kernel parallelize(const Kernel &k) {
  Parallelizer m;
  return rewrite(k, m);
}

} // namespace mlcc::kir
