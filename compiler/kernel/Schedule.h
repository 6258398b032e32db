//===- Schedule.h - How a kernel's loops run on a target -------------------===//
//
// An op's lowering says what a kernel computes; a schedule says how its loops
// run on one target. Schedules are kernel-IR to kernel-IR rewrites (built on
// Mutator) that never change what is computed: the interpreter gives the same
// answer before and after.
//
//   vectorize   an innermost loop whose iterations are independent and whose
//               accesses are contiguous (or a few elements apart: strided
//               loads, interleaved stores) becomes a loop over vectors of
//               the target's width plus a scalar tail loop.
//   scalarize   the inverse: every vector store becomes a loop over lanes
//               (for the interpreter and the C emitter).
//   collapse    perfectly nested loops with contiguous accesses become one.
//   parallelize the outermost loops with independent iterations (outside
//               the lowering's own parallel loops) run on the caller's
//               workers.
//
// Lowerings that build register tiles themselves (the contraction
// generator) read the same TargetDesc to size their tiles.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "compiler/target/TargetDesc.h"

#include <optional>

namespace mlcc::kir {

/// The register tile of a contraction (see ops::lowerTiledContraction): a
/// tile of Rows x Panel accumulators, Panel = Panel/Lanes vectors per row,
/// held in registers across the whole reduction.
struct ContractionTile {
  int64_t Lanes = 1; ///< vector width in elements
  int64_t Panel = 1; ///< columns per tile (a multiple of Lanes)
  int64_t Rows = 1;  ///< rows per tile
  /// Cache blocking (0: none): the reduction runs in blocks of about
  /// ReduceBlock steps (whole slices of its outermost axis), and for each
  /// block every row tile of a block of RowBlock rows (a multiple of Rows)
  /// accumulates into partial sums in memory, so the block's slice of the
  /// B panel is read from the L1 cache by all of them.
  int64_t ReduceBlock = 0;
  int64_t RowBlock = 0;
  /// The chooser's estimate of the tile's efficiency (higher is better):
  /// the useful fraction of the computed rows and columns, the FMA latency
  /// hidden, the operand loads per FMA, the cache (see below).
  double Score = 0;
};

/// Picks the tile for an f32 contraction with `rows` x `cols` outputs: the
/// accumulators, one vector of each operand and a broadcast fit in the
/// target's registers; the tile wastes little of the edges (edge tiles are
/// shifted back to overlap, so rows need not divide evenly); and there are
/// enough independent accumulators to hide the FMA latency.
/// With `fullPanels` the panel never exceeds `cols` (a B operand read in
/// place, without padding). With `reduction` (the length of the sum) and a
/// target with an L1 size, a packed B panel larger than half the L1 cache
/// is blocked (ReduceBlock, RowBlock); without L1 size, the panel that
/// every row tile reads again should fit in t.L2Bytes: wider panels that
/// do not are tried last.
ContractionTile chooseContractionTile(const TargetDesc &t, int64_t rows,
                                      int64_t cols, bool fullPanels = false,
                                      int64_t reduction = 0);

/// Loop `v`'s coefficient in the Index expression `e` (0 when e does not
/// depend on v), or nothing when e is not affine in v with a constant
/// coefficient.
std::optional<int64_t> strideOf(const Expr &e, const Var &v);

/// b - a when the two Index expressions differ by a constant (the same
/// sum of terms), else nothing.
std::optional<int64_t> constantDifference(const Expr &a, const Expr &b);

/// The largest element stride of a vector load or store that the emitters
/// read or write as a span (a few full vectors, shuffled); a larger stride
/// takes a group (see strideGroups), or else a gather/scatter.
constexpr int64_t kMaxStride = 4;

/// With `indices` the element indices of the first lanes of vector loads
/// (or stores) of one buffer whose lanes are `stride` elements apart: their
/// positions in groups, each the indices base + 0, ..., base + G - 1 with
/// G <= stride (positions in that order). A group of G >= 2 moves G
/// consecutive elements per lane, which the emitters do with G-element
/// runs and a transpose in registers (the stores of a tile whose columns
/// are the output's rows), or, when G == stride, with contiguous vectors
/// (the interleaved outputs of a strided window). An index with no such
/// neighbour (or a repeated one) is a group of its own.
std::vector<std::vector<size_t>> strideGroups(const std::vector<Expr> &indices, int64_t stride);

/// Element operations one run of `s` performs, at least (loops with bounds
/// that are not constants count once).
int64_t workOf(const Stmt &s);

/// Whether the iterations of the loop `loop` (a For with constant bounds)
/// are independent: they store to distinct elements of parameters, at
/// indices affine in the loop variable, and read no element another
/// iteration stores.
bool iterationsIndependent(const StmtNode &loop);

/// Vectorizes every eligible innermost loop of `k` (see above).
Kernel vectorize(const Kernel &k, const TargetDesc &t);

/// Merges perfectly nested loops whose accesses are contiguous across them
/// into one loop (rows of a copy, the plane of a reduction), innermost
/// first: what is computed and its order are unchanged.
Kernel collapse(const Kernel &k);

/// Makes the outermost loops with independent iterations and enough work
/// that are outside any parallel loop and contain none parallel (split into
/// chunks of consecutive iterations).
Kernel parallelize(const Kernel &k);

/// Vector stores become loops over lanes; the result has no vector.
Stmt scalarize(const Stmt &s);
Kernel scalarize(const Kernel &k);
/// True when `s` holds a vector expression.
bool hasVectors(const Stmt &s);

/// Applies the target's schedule to every kernel of the program.
void scheduleProgram(Program &p, const TargetDesc &t);

} // namespace mlcc::kir
