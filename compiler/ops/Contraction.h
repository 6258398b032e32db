//===- Contraction.h - Convolution and matrix-product loop nests ----------===//
//
// The float and integer forms of convolution (Conv, ConvInteger,
// QLinearConv) and of matrix products (MatMul, Gemm, MatMulInteger,
// QLinearMatMul) share their geometry and their loop nests; an op supplies
// only how to read its operands and how to finish an accumulated value.
//
// The loop nests accumulate one output row at a time: the innermost loop
// runs over contiguous output elements (the last spatial axis for a
// convolution, the columns for a matrix product), which vectorizes, and
// convolution windows are clipped to the image per kernel offset instead of
// per element. The row lives in the output itself when the op needs no
// finishing step and the accumulator type is the output type, otherwise in
// a scratch buffer.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Schedule.h"
#include "compiler/ops/Window.h"

namespace mlcc::ops {

// --- convolution ---------------------------------------------------------

struct ConvShape {
  int64_t N, C, M, Group;
  Shape InSpatial;
  Window W;
  /// [N, M, out spatial...]
  Shape outShape() const;
};

/// Checks and resolves the geometry of a convolution whose input and
/// weights are node inputs `xIdx` and `wIdx`.
ConvShape convShape(const ir::Node &n, size_t xIdx, size_t wIdx);

struct ConvSpec {
  DType Acc;
  /// Input element (in Acc) at [n, channel, spatial...].
  std::function<Expr(const std::vector<Expr> &)> LoadX;
  /// Weight element (in Acc) at [m, input channel in group, kernel...].
  std::function<Expr(const std::vector<Expr> &)> LoadW;
  /// Initial accumulator of output channel m (bias), default 0.
  std::function<Expr(const Expr &m)> Init;
  /// The stored value for an accumulator of channel m, default identity.
  std::function<Expr(const Expr &acc, const Expr &m)> Finish;
};

/// y = conv(x, w): positions in the padding contribute nothing.
void lowerConvolution(LowerCtx &c, const ConvShape &s, const TensorRef &y,
                      const ConvSpec &spec);
/// The same convolution as a loop nest over the outputs, each summing its
/// window in a local accumulator: iterations are independent, so a GPU
/// runs one thread per output (nodes whose plan says PerOutput, by
/// plan-kernels for a GPU target).
void lowerConvolutionPerOutput(LowerCtx &c, const ConvShape &s, const TensorRef &y,
                               const ConvSpec &spec);

// --- matrix product ---------------------------------------------------------

/// numpy matmul geometry: 1-D operands are promoted (and the added axis
/// dropped from the result), batch dimensions broadcast.
struct MatMulShape {
  Shape A, B;  ///< operands promoted to rank >= 2
  Shape Batch; ///< broadcast batch dims
  int64_t M, K, N;
  Shape Out;   ///< result shape
  size_t RankA, RankB; ///< the operands' real ranks
  /// The extents when the kernel runs, when some follow bounded dimensions
  /// (null / empty: the constants above).
  std::vector<Expr> BatchAt;
  Expr MAt, KAt, NAt;
};

MatMulShape matmulShape(const ir::Node &n, const Shape &a, const Shape &b);

/// Index into operand A (isA) or B at batch position `bi`, matrix (r, c).
std::vector<Expr> matmulOperandIndex(const MatMulShape &s, bool isA,
                                     const std::vector<Expr> &bi, const Expr &r,
                                     const Expr &c);

struct MatMulSpec {
  DType Acc;
  /// A[bi, i, k] and B[bi, k, j] in Acc.
  std::function<Expr(const std::vector<Expr> &bi, const Expr &i, const Expr &k)> LoadA;
  std::function<Expr(const std::vector<Expr> &bi, const Expr &k, const Expr &j)> LoadB;
  /// Initial accumulator (default 0) and the stored value (default identity).
  std::function<Expr(const std::vector<Expr> &bi, const Expr &i, const Expr &j)> Init;
  std::function<Expr(const Expr &acc, const std::vector<Expr> &bi, const Expr &i,
                     const Expr &j)>
      Finish;
};

/// y[bi, i, j] = Finish(Init + sum_k A[bi, i, k] * B[bi, k, j]); nodes
/// whose plan says PerOutput (plan-kernels for a GPU target) get a loop nest
/// over the outputs, each summing in a local accumulator.
void lowerMatrixProduct(LowerCtx &c, const MatMulShape &s, const TensorRef &y,
                        const MatMulSpec &spec);

// --- register-tiled contraction --------------------------------------------

/// out(r, c) = sum over the box `Reduce` of A(r, k) * B(k, c), for r in
/// [0, Rows), c in [0, Cols): the generator behind every float contraction
/// whose B operand is packed in panels (pack-weights, mlcc.PackPanels).
///
/// Each tile of Tile.Rows rows by Tile.Panel columns keeps its accumulators
/// in vector registers for the whole reduction; per reduction step it
/// broadcasts Tile.Rows scalars of A and loads Panel/Lanes vectors of the
/// packed B panel. Edge tiles are shifted back so that they overlap the
/// previous tile (rows are then computed twice and stored twice with the
/// same value), so every tile is full; columns past Cols are computed on the
/// panel's zero padding and not stored.
struct TiledContraction {
  int64_t Rows = 0, Cols = 0;
  /// The rows when the kernel runs, when they follow bounded dimensions
  /// (null: Rows, the most there are). The rows left after the whole tiles
  /// run as one more clamped tile (more than half a tile left), else as
  /// tiles of half as many rows (down to one), each in a branch of its own.
  Expr RowsAt;
  /// With RowsAt: the last row tile may pass RowsAt; its rows past it read
  /// the last row and are not stored (one tile for the rows left, not a
  /// run of smaller tiles). Not with RowsContiguous.
  bool ClampRows = false;
  /// With RowsAt: the rows run as whole tiles only, the last one clamped
  /// (ClampRows), never as smaller tiles: for rows of which a tile's worth
  /// computed and not stored costs less than the code of the smaller tiles
  /// (the fused attention's keys and query blocks). Not with RowsContiguous.
  bool ClampAll = false;
  std::vector<int64_t> Reduce;
  /// The outermost reduction axis's extent when the kernel runs, when
  /// shorter than Reduce[0] (null: Reduce[0]); no cache blocks then.
  Expr ReduceAt;
  /// The columns when the kernel runs (null: Cols), for B read directly:
  /// the panels up to them run and store the columns up to them (the last
  /// one's columns past them are computed on what B holds there).
  Expr ColsAt;
  ir::KernelPlan::Tile Tile;
  DType Acc = DType::F32;
  /// A(r, k), a scalar of type Acc.
  std::function<Expr(const Expr &r, const std::vector<Expr> &k)> LoadA;
  /// The packed B operand (mlcc.PackPanels layout) and the index of the
  /// first panel this contraction reads (a group's panels).
  TensorRef PackedB;
  Expr FirstPanel = kir::indexConst(0);
  /// Or B read directly: Tile.Lanes consecutive columns from col0, for
  /// operands whose rows are contiguous (then Cols >= Tile.Panel, and edge
  /// panels overlap like edge row tiles, so every store is a full vector).
  std::function<Expr(const std::vector<Expr> &k, const Expr &col0)> LoadB;
  /// The product A(r, k) B(k, c) added to the accumulator; null: a * b
  /// (integer products in pairs: dot2).
  std::function<Expr(const Expr &a, const Expr &b)> Product;
  /// Stores the sum for (r, c).
  std::function<void(const Expr &r, const Expr &c, const Expr &acc)> Store;
  /// Whether Store's consecutive rows are adjacent in memory (a column of
  /// an NCHW output): the tile is then stored column by column.
  bool RowsContiguous = false;
  /// Run the panels or the row tiles of each panel as a parallel loop (which
  /// one: Tile.ParallelPanels and Tile.ParallelRowUnits); false when the
  /// caller's own loop is parallel.
  bool Parallel = false;
  /// Only this panel (null: every panel up to the columns). Rows known at
  /// run time run panel by panel, each panel's row runs one after another
  /// while its B is in cache (see lowerRowRuns).
  Expr Panel;
  /// Copy each row tile's A operand (its rows over the whole reduction, a
  /// single axis) into an f32 buffer on the stack before its products, when
  /// it fits these bytes (the plan's StagedABytes; 0: never): an A of a
  /// 16-bit float is then converted once per tile, as vectors, not once per
  /// element per product (a conversion and a shuffle next to every
  /// broadcast). Not for blocked reductions.
  int64_t StageABytes = 0;
};

void lowerTiledContraction(LowerCtx &c, const TiledContraction &t);

/// What the plan says of a contraction whose B operand pack-weights packed,
/// and the packed operand's input index; or, for a pointwise convolution,
/// the tile of its pixels-as-columns form (out[m, p] = W[m, :] . x[:, p], B
/// read directly from the input, no packed operand).
struct PackedOperand {
  ir::KernelPlan::Tile Tile;
  size_t Input = 0;
  bool PixelColumns = false;
};
/// The packed operand of `n`, if pack-weights packed one.
std::optional<PackedOperand> packedOperand(const ir::Node &n);

// --- fused attention (mlcc.Attention, FusedAttention.cpp) -------------------

/// The steps an mlcc.Attention applies to each score (its `steps`
/// attribute; fuse-attention writes them, the kernel reads them): a binary
/// op's code + 1 when the score is its second operand.
namespace attention {
enum Step : int64_t {
  Add = 0,       ///< s + x (1: x + s)
  Sub = 2,       ///< s - x (3: x - s)
  Mul = 4,       ///< s * x (5: x * s)
  Div = 6,       ///< s / x (7: x / s)
  WhereKeep = 8, ///< Where(c, s, x): reads c, then x
  WhereFill = 9, ///< Where(c, x, s): reads c, then x
  Causal = 10,   ///< s where key j <= query i + causal_offset, else -inf
  Softcap = 11,  ///< softcap * tanh(s / softcap)
};
/// The operands (node inputs) a step reads.
inline size_t operandsOf(int64_t step) { return step >= Causal ? 0 : step >= WhereKeep ? 2 : 1; }
} // namespace attention

/// Whether the blocks `p` fit an attention of value width `dv`: the value
/// tile's panels divide it (no partial product is added twice); the score
/// tiles' columns (the query block with KeysAsRows, else the key block)
/// hold a panel, and with KeysAsRows the key block a tile's rows.
bool attentionBlocksFit(const ir::KernelPlan::AttentionBlocks &p, int64_t dv);
/// The logical shape of an mlcc.Attention's operand i (0 Q [..., Lq, dk],
/// 1 K [..., Lk, dk], 2 V [..., Lk, dv]) as its kernel reads it.
Shape attentionOperandShape(const ir::Node &n, size_t i);

} // namespace mlcc::ops
