//===- KernelPlan.h - How a node's kernel is laid out and scheduled --------===//
//
// plan-kernels decides, from the target description (compiler/target/
// TargetDesc.h) and the node's shapes, how the kernel of a contraction or
// convolution runs: its register tile, Winograd or direct, int8 dot
// products in quads, the integer tiles, the depthwise planes, fixed-point
// requantization, one output per GPU thread; pack-weights then adds the
// operands the plan reads (packed weights, requantization constants) and
// records where. The op's lowering reads the plan; it holds no target
// constant of its own. An empty plan is the op's own loop nest.
// Plans are not ONNX: they print after a node's attributes as plan{...}.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlcc::ir {

struct KernelPlan {
  /// A contraction's register tile over packed weights (see
  /// ops::lowerTiledContraction).
  struct Tile {
    int64_t Lanes = 1, Panel = 1, Rows = 1;
    int64_t ReduceBlock = 0, RowBlock = 0; ///< cache blocking; 0: none
    /// Loop order without cache blocks: the row tiles outermost, every
    /// panel of B for one tile of A (false: the panels outermost, every
    /// row tile for one panel). Schedule search's knob.
    bool RowsOuter = false;
    /// Steps of the outermost reduction axis written out per iteration of
    /// its loop (a remainder loop after), without cache blocks. Schedule
    /// search's knob; 1: one.
    int64_t Unroll = 1;
    /// Which loop runs in parallel, without RowsOuter, where the caller
    /// leaves that to the tile (ops::TiledContraction::Parallel): the
    /// panels (each worker then reads only its panels of B) when there are
    /// more than one and at least ParallelPanels of them, or when the row
    /// units to share (row tiles; row blocks when cache-blocked) number
    /// fewer than ParallelRowUnits; else each panel's row units (a fork per
    /// panel, but balanced whatever the worker count). plan-kernels: 16 and
    /// 8 on every target (the defaults).
    int64_t ParallelPanels = 16, ParallelRowUnits = 8;
    /// The accumulators, the packed panels' vectors and the products are
    /// float16 (vectors of lanes(F16)): a float16 contraction on a target
    /// with float16 arithmetic (TargetDesc::HalfArithmetic); the epilogue
    /// (bias, activation) runs in f32 on the finished sums.
    bool HalfAccumulate = false;
    bool operator==(const Tile &) const = default;
  };
  std::optional<Tile> Register;
  /// The input that holds the packed weights (float tile or Winograd); -1:
  /// not packed yet (pack-weights adds it).
  int64_t PackedInput = -1;
  /// A convolution computed as a product over the packed image's pixel
  /// columns (packed input image).
  bool PixelColumns = false;
  /// An RNN, GRU or LSTM with constant weights reads W and R transposed,
  /// [D, I, G*H] and [D, H, G*H]: pack-weights replaces inputs 1 and 2 by
  /// their (folded) transposes and sets PackedInput to 1. A step's gate
  /// pre-activations are then vectors along the gate rows.
  bool GateRows = false;
  /// The gate rows a step sums at once in local accumulators (registers:
  /// the target's f32 lanes times its vector registers less four, or eight
  /// scalars), the products of each input element with that block's
  /// weights added before the next; 0: the sums stay in the kernel's
  /// scratch buffer.
  int64_t GateBlock = 0;
  /// A 3x3 convolution in the Winograd domain: output tile, rows of tiles
  /// per block, the transformed image's pitch, and the elements (a cache
  /// line) between the slices of its stack buffers.
  struct Winograd {
    int64_t Tile = 0, Rows = 0, Pitch = 0, Skew = 0;
    bool operator==(const Winograd &) const = default;
  };
  std::optional<Winograd> Wino;
  /// int8 products as dot products of byte quads on vectors of Dot4Lanes
  /// int32 (x86 VNNI), the packed quads in input Dot4Input (-1: not packed
  /// yet); 0: none.
  int64_t Dot4Lanes = 0;
  int64_t Dot4Input = -1;
  /// The dense dot-product convolution's quads as two dot2 of 16-bit pairs
  /// each (x86 pmaddwd, where VNNI is missing): its weight quads packed as
  /// the sign-extended pairs (w0, w2) and (w1, w3), two words a quad
  /// (mlcc.PackQuads pairs = 2), the input quads split into (x0, x2) and
  /// (x1, x3) as the tile reads them.
  bool DotPairs = false;
  /// The dot-product convolution's quads (dense, or depthwise taps) in the
  /// signed domain (input bytes less 128 where they are uint8), on sdot4
  /// (Arm's dot-product extension without i8mm, whose sdot multiplies
  /// signed bytes only).
  bool DotSigned = false;
  /// The DotSigned quads' weights never hold -128 (constant int8 weights,
  /// checked), so every two adjacent products sum within int16: their
  /// sdot4 is sdot4_narrow, which a core without dot products runs as
  /// 16-bit products summed in pairs (AArch64 NEON: Cortex-A53, A72).
  bool DotNarrow = false;
  /// A matrix product of one row of A (a matrix-vector product) on dot
  /// products along K: B's quads packed per column, [N, Kq rounded up to
  /// Lanes] (mlcc.PackQuadsK columns = Lanes), the Dot tile's Rows columns
  /// each summing Lanes quads at a time into a vector that is summed
  /// across at the end (the signed-quad AArch64 targets: no column of the
  /// tile computed twice or wasted, one vector load of A for every column).
  bool DotAlongK = false;
  /// A register tile of int32 accumulators: Rows output channels x Vectors
  /// vectors of Lanes outputs; a remainder of the outputs runs in
  /// TailGroups parallel groups of row tiles.
  struct IntTile {
    int64_t Rows = 1, Vectors = 1, Lanes = 1, TailGroups = 1;
    bool operator==(const IntTile &) const = default;
  };
  /// The dense dot-product convolution's tile (Dot4Lanes), when its shape
  /// fits the lowering (ops::dotConvFits).
  std::optional<IntTile> Dot;
  /// A depthwise int8 convolution with its taps on dot products: four taps
  /// of a kernel row per quad in tiles of one channel, or (Vectors 0: a
  /// shape that lowering does not take) one tap per quad.
  std::optional<IntTile> Taps;
  /// The tile of the integer convolutions without dot products (pointwise
  /// and windowed; a target without vectors runs the lanes as scalars).
  std::optional<IntTile> Int;
  /// The Int tile's weights of its rows for one tap as one vector, each
  /// row's weight a lane of it (AArch64's multiply-accumulate by element,
  /// smlal v.4s, v.4h, v.h[i], where a broadcast weight costs a load and a
  /// dup): the constant weights transposed to [C, kh, kw, M] (a folded
  /// Transpose) at input LaneWeightsInput (-1: not added yet), which the
  /// kernel reads instead of the weights.
  bool LaneWeights = false;
  int64_t LaneWeightsInput = -1;
  /// int8 products two at a time on a dual 16-bit multiply-accumulate
  /// (kir dot2: Arm smlad): pairs of consecutive input channels (or K),
  /// the weights packed in quads, two pairs each (mlcc.PackQuads with pairs = 1), at
  /// input PairsInput (-1: not packed yet).
  bool Pairs = false;
  int64_t PairsInput = -1;
  /// A matrix product's sums along K on vectors of signed bytes (Helium's
  /// vmladav.s8: sixteen products a instruction): constant int8 B of zero
  /// point 0 read as [N, K] (transposed at compile time when stored [K, N])
  /// at input ByteDotInput, its column sums (int32 [N]) at the next (-1:
  /// not added yet); uint8 A is offset to int8 (x ^ 0x80 = x - 128) and
  /// the sum corrected by (128 - a_zp) x the column's sum. A pointwise
  /// convolution on ByteDot copies bands of pixels channels-last on the
  /// stack and needs no packed operand (its weights are [M, C] already).
  bool ByteDot = false;
  int64_t ByteDotInput = -1;
  /// Pairs of a matrix product whose A rows are contiguous along K (no
  /// zero point, K a multiple of 4): each quad of A is read as one word and
  /// split into the pairs (a0, a2) and (a1, a3) (uxtb16/sxtb16), so the
  /// weights are packed in their own byte order (pairs = 0) and match.
  bool PairWords = false;
  /// Pairs of a pointwise convolution formed once per tile of pixels, into
  /// a stack buffer that every tile of output channels then reads (one
  /// load per pair instead of two byte loads and a pack per use).
  bool StagedPairs = false;
  /// Pairs of a windowed dense convolution (the Int tile's windowed path,
  /// on a target whose plan stages planes on the stack: Depthwise below)
  /// read from its bordered input staged on the stack as pair words (the
  /// 16-bit values of channels 2h and 2h + 1 in one int32), the whole
  /// image when its words fit the plane bound, else per output row the
  /// rows its windows read: each tap's pair is one load instead of two
  /// byte loads and a pack per use.
  bool WindowPairs = false;
  /// An f32 depthwise convolution whose padded planes of at most
  /// MaxElements are copied to the stack, its flattened output grid rounded
  /// up to GridRound elements; an integer depthwise convolution (the Int
  /// tile's windowed path) pads each channel's plane of at most MaxElements
  /// on the stack (GridRound 1).
  struct Plane {
    int64_t MaxElements = 0, GridRound = 1;
    bool operator==(const Plane &) const = default;
  };
  std::optional<Plane> Depthwise;
  /// A windowed integer convolution whose output rows are narrower than its
  /// tile's lanes runs on a flattened grid of positions wider than the rows
  /// (ops/IntegerConv.cpp). When Rows x the grid's positions, in the
  /// output's type, fit GridStageBytes, each tile's finished vectors are
  /// stored whole into a stack buffer and the output rows are copied out of
  /// it after the channel tile's last tile (0: every position is stored on
  /// its own and the ones past a row's end skipped).
  int64_t GridStageBytes = 0;
  /// A register-tiled product whose A operand is a 16-bit float copies each
  /// row tile's A (its rows over the whole reduction) to the stack in f32
  /// when it fits StagedABytes (plan-kernels: a quarter of the target's
  /// kernel stack): converted once per tile, as vectors, not once per
  /// product (TiledContraction::StageABytes). 0: A is read in place.
  int64_t StagedABytes = 0;
  /// com.microsoft MatMulNBits (ops/MatMulNBits.cpp): the rows of A that
  /// share each unpacked byte of B, and the f32 partial sums each row keeps
  /// (plan-kernels: 4 rows; a vector of the target's f32 lanes, 2 scalars
  /// without vectors). 0: the kernel's defaults (one row, one sum), as
  /// constant folding lowers it before any plan.
  int64_t NBitsRows = 0, NBitsLanes = 0;
  /// The Int tile's windowed path (ops/IntegerConv.cpp) writes out the taps
  /// of a kernel row of at most UnrolledTaps taps (constant offsets, no
  /// loop of a few iterations around the tile's steps); a longer row is a
  /// loop. plan-kernels: 3 on every target (the default).
  int64_t UnrolledTaps = 3;
  /// Requantization by per-channel fixed-point multipliers and shifts
  /// (targets without floating point), at inputs FixedRequantInput and the
  /// next (-1: not added yet).
  bool FixedRequant = false;
  int64_t FixedRequantInput = -1;
  /// The form of FixedRequant where the lowering proves a product's
  /// requantized values small (ops::fixedRequantSmall: every shift at
  /// least 33, |acc x multiplier| bounded): without 64-bit shifts
  /// (requant::requantizeFixedSmall, the same result in fewer instructions
  /// on a 32-bit core); false: requant::requantizeFixed always.
  /// plan-kernels: with FixedRequant, a QGemm's and a QLinearConv's (a
  /// QLinearMatMul's lowering has only the full form).
  bool SmallFixedRequant = false;
  /// A QLinearConv whose requantized values are bounded at compile time
  /// saturates them in int32 (requant::requantizeF32Small) instead of
  /// clamping in f32: on targets without one-instruction float min/max.
  bool IntSaturate = false;
  /// A QLinearConv's f32 requantization multipliers (one per output
  /// channel), computed at compile time from constant f32 scales, at input
  /// MultiplierInput (-1: computed by the kernel on each run).
  int64_t MultiplierInput = -1;
  /// A DFT or STFT on the mixed-radix FFT (ops/Fft.cpp), its twiddle
  /// table (e^{-2 pi i m/N}, [N, 2] in the compute type) at input FftInput
  /// (-1: not added yet).
  bool Fft = false;
  int64_t FftInput = -1;
  /// One output per iteration (the form a GPU runs one thread per output of).
  bool PerOutput = false;
  /// Fused attention (mlcc.Attention, ops/FusedAttention.cpp) in blocks:
  /// QueryBlock query rows at a time, each against the keys in blocks of
  /// KeyBlock, with a running maximum and sum per row (online softmax).
  /// Scores is the register tile of a block's scores: with KeysAsRows of
  /// K x Q^T (rows: keys; panels across the query block), else of Q x K^T
  /// (rows: queries; panels across the key block, which they divide);
  /// Values the tile of P x V (its panel divides the value width, so that
  /// no partial product accumulates twice).
  /// FewRows: with KeysAsRows, the score tile of the other form, which a
  /// run of fewer query rows than Scores' lanes takes (a query length known
  /// only at run time: a prompt of a few tokens); FewValues the P x V tile
  /// of that form (planned for its few rows, where Values is for
  /// QueryBlock's).
  struct AttentionBlocks {
    int64_t QueryBlock = 0, KeyBlock = 0;
    bool KeysAsRows = false;
    Tile Scores, Values;
    std::optional<Tile> FewRows, FewValues;
    bool operator==(const AttentionBlocks &) const = default;
  };
  std::optional<AttentionBlocks> Attention;

  bool empty() const { return *this == KernelPlan{}; }
  /// The plan as plan-kernels makes it: without the operands that later
  /// passes add for it (PackedInput, FixedRequantInput, MultiplierInput).
  KernelPlan asPlanned() const {
    KernelPlan p = *this;
    p.PackedInput = p.FixedRequantInput = p.MultiplierInput = -1;
    return p;
  }
  bool operator==(const KernelPlan &) const = default;
  /// "plan{tile=8x16 lanes=16, packed=3}" ("" when empty).
  std::string str() const;
};

} // namespace mlcc::ir
