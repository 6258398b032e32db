//===- DefaultPlans.h - What default plans and candidates share -*- C++ -*-===//
//
// Inside plan-kernels (DefaultPlans.cpp, TuningCandidates.cpp): the shapes
// of the products a node's plan tiles, and the choices that the default
// plan (passes::planKernel) and schedule search's candidates
// (passes::planCandidates) make alike. Not for other passes: they read
// the plan (ir::KernelPlan).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/schedule/CostModel.h"
#include "compiler/target/TargetDesc.h"

#include <optional>

namespace mlcc::passes::planning {

/// A float contraction over packed weights: Groups x (Rows x Cols outputs
/// over Reduce), or pixels as the columns (PixelColumns).
struct Contraction {
  int64_t Rows, Cols, Reduce;
  bool PixelColumns = false;
};

/// Whether and how `n` (f32, constant weights) is a packed contraction on
/// `t` (see DefaultPlans.cpp).
std::optional<Contraction> contractionOf(const ir::Node &n, const TargetDesc &t);

/// The multiply-accumulate form of `n`'s packed (or pixel-column) tiles:
/// float16 multiply-adds (F16Fma) for a float16 node on a target with
/// float16 arithmetic, else f32 ones (a float16 node's loads convert).
/// Winograd's products stay f32: its transforms lose too many of float16's
/// bits.
schedule::MacKind floatMac(const ir::Node &n, const TargetDesc &t);

/// The Winograd block shape of `n` where it is a stride-1 3x3 f32
/// convolution of one group with constant weights on which Winograd pays.
std::optional<schedule::WinogradBlocks> winogradBlocks(const ir::Node &n, const TargetDesc &t);

/// The products of a Winograd plan: rows output channels, columns tiles
/// (read in place).
schedule::TileProblem winogradProducts(const ir::Node &n, const schedule::WinogradBlocks &wb);

/// The Winograd plan of blocks `wb`: its output tile, rows of tiles and
/// pitch, the slices of its stack buffers a cache line apart.
ir::KernelPlan::Winograd winogradPlan(const schedule::WinogradBlocks &wb, const TargetDesc &t);

/// A register tile of the cost model's choice `c`, with the loop that runs
/// in parallel (KernelPlan::Tile::ParallelPanels, ParallelRowUnits): the
/// panels when there are at least 16 of them or fewer than 8 row units to
/// share, on every target (the worker count is the caller's, not the
/// target's).
ir::KernelPlan::Tile registerTile(const schedule::TileChoice &c);

/// Whether `n` lowers through ops' depthwise path (a 2-D f32 convolution
/// with one input channel per group and at most 7x7 taps).
bool depthwiseF32(const ir::Node &n);

/// The form of a target's int8 dot products (hasDotProducts) that its
/// tiles are costed on: x86 pmaddwd pairs where VNNI is missing, AArch64
/// pair sums without dotprod, else one instruction per quad.
schedule::MacKind dotMac(const TargetDesc &t);

/// Whether a windowed dense convolution in pairs stages its input as pair
/// words on the stack (within the plane bound: the lowering checks the
/// image or the band of rows; see KernelPlan::WindowPairs): its plan in
/// pairs, not staged pointwise, with a stack plane.
bool windowPairs(const ir::Node &n, const ops::IntegerOperands &o, const ir::KernelPlan &p);

/// Whether a pointwise convolution in pairs stages its input pairs (the
/// plan's StagedPairs): every kernel extent and stride 1, no padding, and
/// the pairs of a tile of pixels (two int32 per channel quad and pixel)
/// within a quarter of the target's kernel stack.
bool stagedPairs(const ir::Node &n, const ops::IntegerOperands &o,
                 const ir::KernelPlan::IntTile &tile, const TargetDesc &t);

/// The scalar int32 tile problem of an integer node on a target without
/// vectors: a matrix product's rows of A x columns of B; a convolution's
/// output channels per group x its flattened pixels (pointwise) or each
/// output row (windowed: a tile past a row's end is wasted).
std::optional<schedule::TileProblem> scalarIntProblem(const ir::Node &n,
                                                      const ops::IntegerOperands &o,
                                                      schedule::MacKind mac);

} // namespace mlcc::passes::planning
