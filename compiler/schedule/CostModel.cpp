//===- CostModel.cpp - What a kernel's schedule costs on a target -----------===//
#include "compiler/schedule/CostModel.h"

#include <algorithm>

namespace mlcc::schedule {

ir::KernelPlan::Tile TileChoice::plan() const {
  ir::KernelPlan::Tile tile{Lanes, Vectors * Lanes, Rows, ReduceBlock, RowBlock};
  tile.HalfAccumulate = Half;
  return tile;
}

namespace {

/// Whether an f32 contraction of `reduction` steps over panels of `panel`
/// columns, `rows` rows in tiles of `rw`, runs its reduction in cache
/// blocks: more than one row tile reads its B panel, and the panel does not
/// fit comfortably in the L2 cache (a smaller one streams from L2 as fast as
/// the tiles consume it, and blocking would only add the partial sums'
/// traffic).
bool blockReduction(const TargetDesc &t, int64_t reduction, int64_t panel, int64_t rw,
                    int64_t rows) {
  return t.L1Bytes > 0 && t.L2Bytes > 0 && reduction * panel * 4 > t.L2Bytes / 2 && rows > rw;
}

/// Registers for f32 tiles: the vector registers, or the 32 registers of a
/// scalar FPU (Cortex-M4F, RV32F).
int64_t floatRegisters(const TargetDesc &t) {
  return t.VectorRegisters > 0 ? t.VectorRegisters : 32;
}

/// The int8 dot-product tiles keep at most three quarters of the vector
/// registers as accumulators (24 of AVX-512's 32): the rest hold the
/// tile's vectors of quads and its broadcast weight quads.
int64_t dotAccumulators(const TargetDesc &t) { return t.VectorRegisters * 3 / 4; }

/// An int8 dot-product tile of r x nv vectors, per reduction step: the dot
/// products (two per cycle) plus a quarter cycle per load (nv vectors and r
/// broadcasts: loads issue beside the dot products, but not for free), or
/// the dot product's latency (one per accumulator per step), whichever is
/// more; plus the epilogue. (A stand-alone probe of the tile loop over
/// packed panels on Ice Lake: 6 x 4 tiles reach about 93% of the
/// dot-product peak, 4 x 4 about 90%, 8 x 2 about 83%, which the quarter
/// cycle per load reproduces.)
double dotTileCycles(int64_t steps, int64_t r, int64_t nv) {
  double step = std::max((double)(r * nv) / 2 + (double)(r + nv) * 0.25, 5.0);
  return (double)steps * step + 3.0 * (double)(r * nv);
}

/// The same for dot products on pmaddwd pairs (MacKind::Int8Madd), per
/// reduction step: two pmaddwd and two adds per accumulator and two
/// instructions to split each vector of quads into its pairs, on four
/// vector ports with the pmaddwd on two; three loads a cycle (the vectors
/// and two broadcast weight pairs per row); or the latency of the two
/// dependent adds per accumulator.
double maddTileCycles(int64_t steps, int64_t r, int64_t nv) {
  double ops = (double)(4 * r * nv + 2 * nv) / 4, madds = (double)(r * nv);
  double loads = (double)(nv + 2 * r) / 3;
  double step = std::max({ops, madds, loads, 2.0});
  return (double)steps * step + 3.0 * (double)(r * nv);
}

/// The same for dot products as 16-bit pair sums (MacKind::Int8PairSums),
/// per reduction step: every instruction of the step (four per accumulator,
/// a load and a half split per vector, a broadcast weight load per row, the
/// loop's two) at two a cycle: the cores without dotprod are Cortex-A53
/// (in order, dual issue) and A72 (two vector pipes), where the products
/// and sums alone take two a cycle and the loads are what a larger tile
/// saves.
double pairSumsTileCycles(int64_t steps, int64_t r, int64_t nv) {
  double step = (double)(4 * r * nv + 2 * nv + r + 2) / 2;
  return (double)steps * step + 3.0 * (double)(r * nv);
}

/// Vectors of the one tail tile that covers the outputs past the last whole
/// tile of P outputs (the dot-product tiles' remainder).
int64_t tailVectors(int64_t cols, int64_t panel, int64_t lanes) {
  return (cols % panel + lanes - 1) / lanes;
}

/// General registers a scalar integer tile's loop keeps for itself: the
/// input, weight and output pointers and the reduction counter.
constexpr int64_t kScalarLoopRegisters = 4;
/// The most outputs across a scalar integer tile (unrolled code grows with
/// it, and wider tiles run out of registers first anyway).
constexpr int64_t kMaxScalarColumns = 8;

int64_t lanesOf(const TargetDesc &t, MacKind m) {
  if (m == MacKind::IntScalar || m == MacKind::IntPair)
    return 1;
  if (m == MacKind::F16Fma)
    return t.lanes(DType::F16);
  return t.lanes(m == MacKind::F32Fma ? DType::F32 : DType::I32);
}

/// The most vectors across a tile of `p`: f32 up to 4 vectors (a scalar FPU
/// takes wider panels of scalars, 16, so that a matrix-vector product reads
/// each input once per many outputs), never past the columns.
int64_t maxVectors(const TargetDesc &t, const TileProblem &p) {
  int64_t lanes = lanesOf(t, p.Mac);
  if (p.Mac == MacKind::IntScalar || p.Mac == MacKind::IntPair)
    return std::min<int64_t>(p.MaxVectors > 0 ? p.MaxVectors : kMaxScalarColumns, p.Cols);
  if (p.Mac == MacKind::Int8Dot || p.Mac == MacKind::Int8Madd || p.Mac == MacKind::Int8PairSums)
    return std::min<int64_t>(p.MaxVectors > 0 ? p.MaxVectors : 4, p.Cols / lanes);
  int64_t widest = lanes == 1 ? 16 : 4;
  if (p.MaxVectors > 0)
    widest = std::min(widest, p.MaxVectors);
  return std::min<int64_t>(widest, p.FullPanels ? std::max<int64_t>(p.Cols / lanes, 1)
                                                : (p.Cols + lanes - 1) / lanes);
}

/// The most rows of a tile of nv vectors across.
int64_t maxRows(const TargetDesc &t, const TileProblem &p, int64_t nv) {
  if (p.Mac == MacKind::Int8Dot)
    return std::min<int64_t>(p.Rows, dotAccumulators(t) / nv);
  if (p.Mac == MacKind::Int8Madd) // accumulators, each vector's two pairs, a row's two
    return std::min<int64_t>(p.Rows, (t.VectorRegisters - 2 * nv - 2) / nv);
  if (p.Mac == MacKind::Int8PairSums) // accumulators, the vectors, a row's quad, products
    return std::min<int64_t>(p.Rows, (t.VectorRegisters - nv - 1 - kPairSumTemporaries) / nv);
  if (p.Mac == MacKind::IntScalar) // accumulators, a weight per row, an input per column
    return std::min<int64_t>(p.Rows, (t.GeneralRegisters - kScalarLoopRegisters - nv) / (nv + 1));
  if (p.Mac == MacKind::IntPair) // the same, and a register to form an input pair in
    return std::min<int64_t>(p.Rows,
                             (t.GeneralRegisters - kScalarLoopRegisters - nv - 1) / (nv + 1));
  // Accumulators, one vector of each panel and a broadcast.
  return std::min<int64_t>({(floatRegisters(t) - nv - 1) / nv, 16, p.Rows});
}

} // namespace

double tileCost(const TargetDesc &t, const TileProblem &p, int64_t rw, int64_t nv) {
  const int64_t lanes = lanesOf(t, p.Mac), panel = nv * lanes;
  if (p.Mac == MacKind::Int8Dot || p.Mac == MacKind::Int8Madd || p.Mac == MacKind::Int8PairSums) {
    // Every row tile runs the whole tiles along the columns and one tail
    // tile; edge row tiles are computed whole.
    auto cycles = p.Mac == MacKind::Int8Dot    ? dotTileCycles
                  : p.Mac == MacKind::Int8Madd ? maddTileCycles
                                               : pairSumsTileCycles;
    int64_t tail = tailVectors(p.Cols, panel, lanes);
    double perRows = (double)(p.Cols / panel) * cycles(p.Reduce, rw, nv) +
                     (tail ? cycles(p.Reduce, rw, tail) : 0);
    return (double)((p.Rows + rw - 1) / rw) * perRows;
  }
  double usefulRows = (double)p.Rows / (double)(((p.Rows + rw - 1) / rw) * rw);
  double usefulCols = (double)p.Cols / (double)(((p.Cols + panel - 1) / panel) * panel);
  if (p.Mac == MacKind::IntScalar)
    return (1.0 + ((double)rw * p.RowLoads + (double)nv * p.ColLoads) / (double)(rw * nv)) /
           (usefulRows * usefulCols);
  if (p.Mac == MacKind::IntPair)
    return ((double)(rw * nv) + 1.5 * (double)rw * p.RowLoads + 3.0 * (double)nv * p.ColLoads) /
           (double)(2 * rw * nv) / (usefulRows * usefulCols);
  if (p.FullPanels && panel > p.Cols)
    usefulCols = 0; // cannot read past the operand
  double accs = (double)(rw * nv);
  double latency = std::min(1.0, accs / 8.0); // independent FMA chains
  double loads = (double)(rw + nv) / accs;    // operand loads per FMA
  double score = usefulRows * usefulCols * latency / (1.0 + 0.5 * loads);
  if (!blockReduction(t, p.Reduce, panel, rw, p.Rows) && t.L2Bytes > 0 &&
      p.Reduce * panel * 4 > t.L2Bytes)
    score *= 0.5; // B streams from the next cache level per row tile
  return -score;
}

bool pairSumsOverWindow(int64_t channels) {
  // Per output, tap and 16 channels: pair sums run four quads of four
  // outputs in four instructions each, plus about three quarters of one in
  // loads (4.75 / 4 per quad); the window tile of 4 x 16 outputs runs 27
  // instructions per tap and channel (a 16-byte input load and two
  // widenings shared by the rows, per row a weight load, its dup and four
  // smlal), 27 / 64 per output.
  const double quads = (double)((channels + 3) / 4);
  return quads * 4.75 / 4 < (double)channels * 27.0 / 64;
}

namespace {

/// `c` with the cache blocks of its reduction, where the model blocks it:
/// half the L1 cache for the slice of the B panel; the partial sums of all
/// the rows when they take at most a quarter of the L2 cache (each row
/// block reads the whole B panel again, from memory when it is this large:
/// a 7x7 map with 512 channels in two blocks read 9.4 MB of weights twice),
/// else a quarter of the L1 cache's worth of rows.
TileChoice withBlocks(const TargetDesc &t, const TileProblem &p, TileChoice c) {
  const int64_t panel = c.Vectors * c.Lanes;
  if ((p.Mac != MacKind::F32Fma && p.Mac != MacKind::F16Fma) || !blockReduction(t, p.Reduce, panel, c.Rows, p.Rows))
    return c;
  c.ReduceBlock = std::max<int64_t>(1, t.L1Bytes / 2 / (panel * 4));
  int64_t allRows = (p.Rows + c.Rows - 1) / c.Rows * c.Rows;
  c.RowBlock = allRows * panel * 4 <= t.L2Bytes / 4
                   ? allRows
                   : std::max<int64_t>(1, t.L1Bytes / 4 / (panel * 4) / c.Rows) * c.Rows;
  return c;
}

} // namespace

TileChoice chooseTile(const TargetDesc &t, const TileProblem &p) {
  const int64_t lanes = lanesOf(t, p.Mac);
  TileChoice best;
  best.Lanes = lanes;
  best.Half = p.Mac == MacKind::F16Fma;
  bool found = false;
  for (bool even : {true, false}) {
    if (!even && (found || (!p.EvenRows && !p.EvenVectors)))
      break;
    for (int64_t nv = 1, nvs = maxVectors(t, p); nv <= nvs; ++nv)
      for (int64_t rw = 1, rws = maxRows(t, p, nv); rw <= rws; ++rw) {
        if (even && ((p.EvenRows && p.Rows >= 2 && rw % 2) ||
                     (p.EvenVectors && p.Cols >= 2 && nv % 2)))
          continue;
        double cost = tileCost(t, p, rw, nv);
        if (found && cost >= best.Cost - 1e-9)
          continue;
        found = true;
        best = TileChoice{lanes, nv, rw, 0, 0, cost, best.Half};
      }
  }
  return found ? withBlocks(t, p, best) : best;
}

std::vector<TileChoice> rankTiles(const TargetDesc &t, const TileProblem &p, size_t count) {
  const int64_t lanes = lanesOf(t, p.Mac);
  const TileChoice first = chooseTile(t, p);
  std::vector<TileChoice> all;
  for (int64_t nv = 1, nvs = maxVectors(t, p); nv <= nvs; ++nv)
    for (int64_t rw = 1, rws = maxRows(t, p, nv); rw <= rws; ++rw)
      if (nv != first.Vectors || rw != first.Rows)
        all.push_back(withBlocks(t, p, TileChoice{lanes, nv, rw, 0, 0, tileCost(t, p, rw, nv),
                                                  p.Mac == MacKind::F16Fma}));
  std::stable_sort(all.begin(), all.end(),
                   [](const TileChoice &a, const TileChoice &b) { return a.Cost < b.Cost; });
  std::vector<TileChoice> ranked{first};
  for (size_t i = 0; i < all.size() && ranked.size() < count; ++i)
    ranked.push_back(all[i]);
  return ranked;
}

namespace {

/// The fewest input channels (the products' reduction) for Winograd: with
/// fewer, each product's tile is set up and stored every few steps and the
/// transforms cost about what the products save (squeezenet1_1's expand
/// layers, 16 to 48 channels, were no faster).
constexpr int64_t kMinWinogradChannels = 64;
/// The fewest output channels: the products' rows.
constexpr int64_t kMinWinogradOutputs = 16;
/// The most bytes of L2 cache a Winograd block's buffers are sized for.
constexpr int64_t kMaxWinogradBufferBytes = 512 * 1024;
/// The most tiles a Winograd plan may compute per tile of the output (the
/// tiles past the width, the rows recomputed by the last block, the
/// partial panels): 2.25x fewer multiply-adds, less what the transforms
/// cost, pays for a third more (resnet18's 14x14 outputs in blocks of 4
/// rows of 8 tiles, 1.31x: 12% faster than direct tiles).
constexpr double kMaxWinogradWaste = 1.35;
/// The fewest tiles per block when the transformed weights do not fit in
/// the cache and stream from memory for every block: 16 multiply-adds per
/// weight loaded.
constexpr int64_t kMinStreamedTiles = 32;

/// The block shape of F(m x m, 3 x 3) whose stack buffers take at most
/// `stackBytes`: among the shapes with at least a vector of tiles per
/// block, the one that computes the fewest tiles, then the largest.
std::optional<WinogradBlocks> blocksWithin(const TargetDesc &t, int64_t m, int64_t oh, int64_t ow,
                                           int64_t c, int64_t mo, int64_t stackBytes) {
  const int64_t lanes = t.lanes(DType::F32), positions = (m + 2) * (m + 2);
  const int64_t tilesY = (oh + m - 1) / m, tilesX = (ow + m - 1) / m;
  const int64_t maxTiles = stackBytes / (positions * (c + mo) * 4);
  const bool weightsFit = positions * c * mo * 4 <= t.L2Bytes;
  std::optional<WinogradBlocks> best;
  for (int64_t pitch = tilesX; pitch < (tilesX + lanes - 1) / lanes * lanes + 1; ++pitch)
    for (int64_t rows = 1; rows <= tilesY; ++rows) {
      int64_t tiles = rows * pitch;
      // Each block reads all of the transformed weights: from the cache
      // when they fit, else from memory, which needs many tiles per read.
      if (tiles < lanes || tiles > maxTiles || (!weightsFit && tiles < kMinStreamedTiles))
        continue;
      int64_t blocks = (tilesY + rows - 1) / rows;
      double panelWaste = (double)((tiles + lanes - 1) / lanes * lanes) / (double)tiles;
      double cost = (double)(blocks * tiles) / (double)(tilesY * tilesX) * panelWaste;
      if (!best || cost < best->Cost - 1e-9 ||
          (cost < best->Cost + 1e-9 && tiles > best->Rows * best->Pitch))
        best = WinogradBlocks{m, rows, pitch, cost};
    }
  return best;
}

} // namespace

std::optional<WinogradBlocks> chooseWinogradBlocks(const TargetDesc &t, int64_t c, int64_t mo,
                                                   int64_t oh, int64_t ow) {
  if (t.VectorBytes == 0 || t.L2Bytes == 0 || c < kMinWinogradChannels ||
      mo < kMinWinogradOutputs)
    return std::nullopt;
  // F(2x2, 3x3), in blocks whose buffers stay in the cache; else twice as
  // large ones (a 14x14 output with 256 channels needs 32 tiles per block
  // to read its weights from memory, and fits only 16); a convolution with
  // too many channels for both (resnet18's last stage) keeps the direct
  // tiles, which read the weights once.
  // The buffers' budget: the L2 cache, at most 512 KiB, since the block's
  // buffers share the cache with the transformed weights and the input
  // (on a Zen 5 core's 1 MiB, blocks sized to all of it took resnet18's
  // 56x56 layers from 0.61 to 0.71 ms).
  const int64_t budget = std::min<int64_t>(t.L2Bytes, kMaxWinogradBufferBytes);
  for (int64_t stack : {budget, 2 * budget}) {
    auto p = blocksWithin(t, 2, oh, ow, c, mo, stack);
    if (p && p->Cost <= kMaxWinogradWaste)
      return p;
  }
  return std::nullopt;
}

int64_t gateBlock(const TargetDesc &t) {
  int64_t lanes = t.lanes(DType::F32);
  if (lanes < 2 || t.VectorRegisters <= 4)
    return 8;
  return lanes * (t.VectorRegisters - 4);
}

} // namespace mlcc::schedule
