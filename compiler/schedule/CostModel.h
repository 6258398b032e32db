//===- CostModel.h - What a kernel's schedule costs on a target -------------===//
//
// The one place that estimates what a schedule costs: plan-kernels asks it
// for every register tile and Winograd block shape it considers, and keeps
// the cheapest. Estimates read only the target description
// (compiler/target/TargetDesc.h) and the shapes; no lowering holds a tile
// size or a cache size of its own.
//
//   register tiles   Rows x Vectors vectors of accumulators held across a
//                    whole reduction, for the multiply-accumulate form the
//                    plan uses: f32 FMA (or a scalar FPU) and int8 dot
//                    products in quads (x86 VNNI, or pmaddwd pairs without
//                    it). chooseTile enumerates the
//                    tiles whose accumulators, operand vectors and
//                    broadcasts fit the registers and keeps the cheapest.
//   cache blocks     a contraction whose packed panel outgrows the L2 cache
//                    runs its reduction in blocks that stay in the L1 cache.
//   Winograd blocks  how many rows of output tiles a block of F(m x m, 3 x 3)
//                    computes, and how wide, so that its stack buffers stay
//                    in the cache and few tiles are wasted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/KernelPlan.h"
#include "compiler/target/TargetDesc.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlcc::schedule {

/// The multiply-accumulate form a register tile is built on.
enum class MacKind : uint8_t {
  F32Fma,  ///< f32 multiply-adds: vectors of lanes(F32), or a scalar FPU
  /// float16 multiply-adds on vectors of lanes(F16) (TargetDesc::
  /// HalfArithmetic): the f32 tile's model with twice the lanes
  F16Fma,
  /// int8 dot products of byte quads into int32 lanes in one instruction
  /// (x86 VNNI, AArch64 sdot / usdot)
  Int8Dot,
  /// The same dot products where the target has no instruction for them
  /// (x86 without VNNI): each quad split into its even and odd bytes as
  /// 16-bit pairs and summed by two pmaddwd and two adds; the split of a
  /// vector of quads (two instructions) is shared by the tile's rows, whose
  /// weight quads come split at compile time (two broadcast loads a row).
  Int8Madd,
  /// The same dot products on AArch64 NEON without dotprod (sdot4_narrow):
  /// per accumulator and quad step, two widening byte products (smull,
  /// smull2), a pairwise 16-bit add and a pairwise widening accumulate
  /// (addp, sadalp), with a few registers for the products in flight.
  Int8PairSums,
  /// int32 multiply-accumulates of widened 8-bit values on the general
  /// registers of a target without vectors (a microcontroller): a tile is
  /// Rows output channels x Vectors outputs, one scalar each.
  IntScalar,
  /// The same tile on a dual 16-bit multiply-accumulate (Arm smlad): two
  /// products of a pair of reduction steps per instruction, a row's weight
  /// pair unpacked from a quad of int8 (a load per two pairs, one sxtb16
  /// each), each input pair formed from two loads.
  IntPair,
};

/// Whether an int8 convolution with `channels` input channels per group
/// costs fewer instructions as Int8PairSums dot products over quads of
/// channels (a partial quad's bytes wasted) than in the int32 window tiles
/// of widening multiply-adds (smlal), on AArch64 NEON without dotprod.
bool pairSumsOverWindow(int64_t channels);

/// Vector registers an Int8PairSums tile keeps for the 16-bit products and
/// pair sums in flight (two products and their sum, twice, so that one
/// accumulator's chain overlaps the next).
constexpr int64_t kPairSumTemporaries = 6;

/// The gate rows of a recurrent cell's step summed at once in registers
/// (KernelPlan::GateBlock): the f32 lanes times the vector registers less
/// four (the broadcast input element, a weight vector and two in flight),
/// or eight scalars on a target without vectors.
int64_t gateBlock(const TargetDesc &t);

/// A contraction to tile: Rows x Cols outputs, the columns along vectors.
struct TileProblem {
  MacKind Mac = MacKind::F32Fma;
  int64_t Rows = 1, Cols = 1;
  /// The sum's length (f32: elements; int8 dot: quad steps); 0: unknown.
  int64_t Reduce = 0;
  /// Columns read in place from the operand: no panel may pass Cols.
  bool FullPanels = false;
  /// The most vectors across (0: the form's own limit).
  int64_t MaxVectors = 0;
  /// An even number of rows (or vectors) in the tile where the problem has
  /// two or more: the output channels of 4-bit weights stored as nibble
  /// pairs (ir::Value::FourBitAxis), so that each pair is one load, unpacked
  /// as decided at compile time. chooseTile takes another only when no tile
  /// is even.
  bool EvenRows = false, EvenVectors = false;
  /// The cost of loading one row's (one column's) operand of a scalar
  /// integer tile relative to a plain load: more than 1 for 4-bit weights,
  /// which unpack with a shift and a mask (a load serving two).
  double RowLoads = 1, ColLoads = 1;
};

/// A register tile: Rows x Vectors vectors of Lanes accumulators, and (f32
/// tiles over packed panels) the cache blocks of the reduction (see
/// ir::KernelPlan::Tile); Cost is the model's estimate for the whole
/// contraction (lower is better; only comparable within one problem).
struct TileChoice {
  int64_t Lanes = 1, Vectors = 1, Rows = 1;
  int64_t ReduceBlock = 0, RowBlock = 0;
  double Cost = 0;
  bool Half = false; ///< an F16Fma tile (KernelPlan::Tile::HalfAccumulate)
  /// The f32 tile as a plan (Panel = Vectors x Lanes columns).
  ir::KernelPlan::Tile plan() const;
};

/// The model's cost of a Rows x Vectors tile for `p` on `t` (lower is
/// better). f32: minus the tile's efficiency (the useful fraction of the
/// computed rows and columns, the FMA latency hidden by independent
/// accumulators, the operand loads per FMA, halved when the panel every row
/// tile reads again does not fit the L2 cache and is not blocked). int8
/// dot: estimated cycles of the whole contraction (see CostModel.cpp).
/// int32 scalar: cycles per useful multiply-accumulate, one per product and
/// one per operand load (a row's weight, a column's input), over the
/// useful fraction of the computed rows and columns. int32 pairs: the same
/// per pair of steps (one dual product per accumulator, half a load and an
/// unpack per row's weight pair, two loads and a pack per column), per
/// useful product.
double tileCost(const TargetDesc &t, const TileProblem &p, int64_t rows, int64_t vectors);

/// The cheapest register tile for `p` among those that fit the target's
/// registers; ties keep the first in order of (vectors, rows).
TileChoice chooseTile(const TargetDesc &t, const TileProblem &p);

/// The `count` cheapest register tiles for `p` that fit the target's
/// registers, chooseTile's first, then by the model's cost (ties in order
/// of (vectors, rows)), each with its cache blocks: the tiles that
/// schedule search (--tune) measures.
std::vector<TileChoice> rankTiles(const TargetDesc &t, const TileProblem &p, size_t count);

/// The block shape of a stride-1 3x3 convolution as Winograd's
/// F(m x m, 3 x 3): blocks of Rows rows of output tiles, Pitch tiles wide.
struct WinogradBlocks {
  int64_t Tile = 2, Rows = 1, Pitch = 1;
  double Cost = 0; ///< tiles computed per tile of the output
};

/// The Winograd block shape for an f32 convolution with c input and mo
/// output channels and an oh x ow output, or nothing when Winograd should
/// not run (too few channels, no cache or vectors to plan for, too many
/// tiles wasted, buffers or weights too large for the cache).
std::optional<WinogradBlocks> chooseWinogradBlocks(const TargetDesc &t, int64_t c, int64_t mo,
                                                   int64_t oh, int64_t ow);

} // namespace mlcc::schedule
