//===- PackWeights.cpp - Weights in the layout their kernel reads ---------===//
//
// pack-weights: for every float contraction whose B operand (the weights) is
// a constant, chooses the register tile for the target
// (kir::chooseContractionTile) and inserts an mlcc.PackPanels node that
// reorders the weights into panels of that tile's width; infer-and-fold
// evaluates it, so the library holds only the packed copy. The contraction
// gets the packed operand as an extra input and a plan (ir::KernelPlan) that names it and
// the tile, and lowers through the register-tiled generator
// (ops::lowerTiledContraction):
//
//   Conv    rows: the output pixels of an image; columns: the output
//           channels of a group; reduction: input channels x kernel window
//   Gemm    rows: M; columns: N; reduction: K
//   MatMul  (constant 2-D B) rows: all rows of A; columns: N; reduction: K
//
// A pointwise convolution (1x1, stride 1, no padding) whose weights fit in
// half the L2 cache (or any, on a target without one) is packed differently:
// its tile's rows are output channels and its columns pixels, read straight
// from the input (pixels are contiguous in NCHW), so nothing is packed and
// the stores are vectors too. So is a convolution with a short reduction
// (fewer than 4 vectors' lanes: a first layer's 3 channels x 3x3), whose
// columns are the pixels of one output row.
//
// On targets with an L1 size, a contraction whose packed panel outgrows the
// L2 cache runs its reduction in cache blocks (kir::ContractionTile's
// ReduceBlock and RowBlock, in the node's plan).
//
// Depthwise-like convolutions (fewer than 4 output channels per group) keep
// their own loop nest (a vectorized sum of the window's taps).
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include <array>
#include <cmath>

namespace mlcc::passes {

namespace {

struct Plan {
  int64_t Groups, Cols, Rows, Reduce;
  bool Transposed;
  size_t Input; ///< where the packed operand goes
  bool PixelColumns = false; ///< pixels as columns: no packing, see above
};

/// Whether `n` is a standard-domain f32 node with constant f32 weights
/// (input 1), not yet planned, with a non-empty output: what packing and
/// Winograd both start from.
bool constantF32Weights(const ir::Node &n) {
  return n.Domain == "" && n.hasInput(1) && n.Inputs[1]->Const && n.inDType(0) == DType::F32 &&
         n.inDType(1) == DType::F32 && !n.Plan.Register && n.Outputs[0] &&
         n.Outputs[0]->Type.numel() > 0;
}

/// Whether and how to pack `n`'s weights for vectors of `lanes` f32 and an
/// L2 cache of `cacheBytes` (0: none to plan for).
std::optional<Plan> planFor(const ir::Node &n, int64_t lanes, int64_t cacheBytes) {
  if (!constantF32Weights(n))
    return std::nullopt;
  const Shape &w = n.inShape(1), &y = n.Outputs[0]->Type.Dims;
  if (n.OpType == "Conv") {
    if (w.size() != 4 || y.size() != 4)
      return std::nullopt;
    int64_t groups = n.attrInt("group", 1), mg = w[0] / groups;
    if (mg < 4)
      return std::nullopt;
    // Pointwise: pixels as the tile's columns, read straight from the input
    // (when there are enough pixels for a vector), unless the weights are
    // too large to be read again for every panel of pixels from the L2
    // cache: with pixels as rows the packed weights stream once.
    bool pointwise = w[2] == 1 && w[3] == 1 && n.inShape(0) == Shape{y[0], n.inShape(0)[1], y[2], y[3]};
    int64_t reduce = w[1] * w[2] * w[3];
    bool weightsFit = cacheBytes == 0 || numElements(w) * 4 <= cacheBytes / 2;
    if (pointwise && y[2] * y[3] >= 16 && weightsFit)
      return Plan{groups, y[2] * y[3], mg, reduce, false, 0, true};
    // A short reduction (a first layer: 3 channels x 3x3): a row's pixels
    // as the tile's columns too. With pixels as rows, every output is
    // stored as a scalar of a transposed tile, which costs about as much as
    // its K / lanes multiply-adds when K is below a few vectors' lanes; with
    // pixels as columns the stores are vectors (the input is read along
    // the row, strided for a strided convolution).
    if (!pointwise && reduce < 4 * lanes && n.attrInts("strides", {1, 1})[1] <= 4)
      return Plan{groups, y[3], mg, reduce, false, 0, true};
    return Plan{groups, mg, y[2] * y[3], reduce, false, 3};
  }
  if (n.OpType == "Gemm") {
    bool tb = n.attrInt("transB", 0) != 0;
    return Plan{1, y[1], y[0], n.inShape(0)[n.attrInt("transA", 0) ? 0 : 1], !tb, 3};
  }
  if (n.OpType == "MatMul") {
    const Shape &a = n.inShape(0);
    if (w.size() != 2 || a.size() < 2)
      return std::nullopt;
    return Plan{1, w[1], numElements(a) / a.back(), w[0], true, 2};
  }
  return std::nullopt;
}

/// How a stride-1 3x3 convolution runs as Winograd's F(m x m, 3 x 3) with
/// m = Tile (see ops::lowerConvWinograd): blocks of `Rows` rows of output
/// tiles, each row `Pitch` tiles wide.
struct WinogradPlan {
  int64_t Tile, Rows, Pitch;
  double Cost; ///< tiles computed per tile of the output
};

/// The fewest input channels (the products' reduction) for Winograd: with
/// fewer, each product's tile is set up and stored every few steps and the
/// transforms cost about what the products save (squeezenet1_1's expand
/// layers, 16 to 48 channels, were no faster).
constexpr int64_t kMinWinogradChannels = 64;
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

/// The block shape of F(m x m, 3 x 3) for an oh x ow output with c input
/// and mo output channels whose stack buffers take at most `stackBytes`
/// (see winogradPlan), or nothing.
std::optional<WinogradPlan> winogradBlocks(const TargetDesc &t, int64_t m, int64_t oh,
                                           int64_t ow, int64_t c, int64_t mo,
                                           int64_t stackBytes) {
  const int64_t lanes = t.lanes(DType::F32), positions = (m + 2) * (m + 2);
  const int64_t tilesY = (oh + m - 1) / m, tilesX = (ow + m - 1) / m;
  const int64_t maxTiles = stackBytes / (positions * (c + mo) * 4);
  const bool weightsFit = positions * c * mo * 4 <= t.L2Bytes;
  std::optional<WinogradPlan> best;
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
        best = WinogradPlan{m, rows, pitch, cost};
    }
  return best;
}

/// The Winograd plan for `n`, or nothing. Taken for f32 convolutions with
/// 3x3 kernels, stride and dilation 1, one group, at least 16 output and
/// kMinWinogradChannels input channels, on targets with vectors and a
/// cache to plan for, as F(2x2, 3x3). A block's two stack buffers, (C + M)
/// x 16 x tiles floats, stay within the cache (t.L2Bytes), or within
/// twice that when no block shape fits, and a block has at least
/// kMinStreamedTiles tiles when the transformed weights (16 x M x C
/// floats) do not fit in the cache; a convolution with too many channels
/// for both (resnet18's last stage) keeps the direct tiles, which read the
/// weights once. Among the block shapes, the one that
/// computes the fewest tiles (counting the tiles past the output's width,
/// the rows the last block recomputes and the contraction's partial
/// panels), then the largest, if it computes at most kMaxWinogradWaste
/// times the output's tiles.
std::optional<WinogradPlan> winogradPlan(const ir::Node &n, const TargetDesc &t) {
  if (n.OpType != "Conv" || t.VectorBytes == 0 || t.L2Bytes == 0 || !constantF32Weights(n))
    return std::nullopt;
  const Shape &w = n.inShape(1), &y = n.Outputs[0]->Type.Dims;
  if (w.size() != 4 || y.size() != 4 || w[2] != 3 || w[3] != 3 || n.attrInt("group", 1) != 1 ||
      n.attrInts("strides", {1, 1}) != std::vector<int64_t>{1, 1} ||
      n.attrInts("dilations", {1, 1}) != std::vector<int64_t>{1, 1} || w[0] < 16 ||
      w[1] < kMinWinogradChannels)
    return std::nullopt;
  // Blocks whose buffers stay in the cache; else twice as large ones (a
  // 14x14 output with 256 channels needs 32 tiles per block to read its
  // weights from memory, and fits only 16).
  for (int64_t stack : {t.L2Bytes, 2 * t.L2Bytes}) {
    auto p = winogradBlocks(t, 2, y[2], y[3], w[1], w[0], stack);
    if (p && p->Cost <= kMaxWinogradWaste)
      return p;
  }
  return std::nullopt;
}

/// The register tile of a contraction's plan (read back by
/// ops::packedOperand).
void planTile(ir::Node &n, const kir::ContractionTile &tile) {
  n.Plan.Register = ir::KernelPlan::Tile{tile.Lanes, tile.Panel, tile.Rows,
                                         tile.ReduceBlock > 0 ? tile.ReduceBlock : 0,
                                         tile.ReduceBlock > 0 ? tile.RowBlock : 0};
}

/// Whether input `i` (a zero point) is omitted or a constant of zeros.
bool zeroOrAbsent(const ir::Node &n, size_t i) {
  if (!n.hasInput(i))
    return true;
  const ir::Value *z = n.Inputs[i];
  if (!z->Const)
    return false;
  for (int64_t k = 0; k < z->Type.numel(); ++k)
    if (z->Const->intAt(z->Const->isSplat() ? 0 : k) != 0)
      return false;
  return true;
}

/// The input indices (x, w, w_zero_point, packed) of an integer 2-D
/// convolution that can run on the int8 dot product (dot4) over channel
/// quads: int8 constant weights with a zero point of 0, 8-bit data, one
/// group (see DotConv.cpp).
std::optional<std::array<size_t, 4>> dotConvInputs(const ir::Node &n) {
  std::array<size_t, 4> idx;
  if (n.Domain == "" && n.OpType == "QLinearConv")
    idx = {0, 3, 5, 9};
  else if (n.Domain == "" && n.OpType == "ConvInteger")
    idx = {0, 1, 3, 4};
  else
    return std::nullopt;
  if (!n.hasInput(idx[1]) || !n.Inputs[idx[1]]->Const || n.inDType(idx[1]) != DType::I8 ||
      n.inShape(idx[1]).size() != 4 || n.attrInt("group", 1) != 1 || n.Plan.Dot4Lanes ||
      n.numInputs() > idx[3])
    return std::nullopt;
  if (!zeroOrAbsent(n, idx[2]))
    return std::nullopt;
  return idx;
}

/// The input indices (A, B, b_zero_point) of an integer matrix product
/// with a constant int8 B (2-D) whose zero point is 0, and whether B is
/// stored transposed ([N, K]): it can run on dot4 over quads of K.
std::optional<std::pair<std::array<size_t, 3>, bool>> dotMatMulInputs(const ir::Node &n) {
  std::array<size_t, 3> idx;
  bool transposed = false;
  if (n.Domain == "" && n.OpType == "QLinearMatMul")
    idx = {0, 3, 5};
  else if (n.Domain == "" && n.OpType == "MatMulInteger")
    idx = {0, 1, 3};
  else if (n.Domain == "com.microsoft" && n.OpType == "QGemm" && !n.attrInt("transA", 0))
    idx = {0, 3, 5}, transposed = n.attrInt("transB", 0) != 0;
  else
    return std::nullopt;
  if (!n.hasInput(idx[1]) || !n.Inputs[idx[1]]->Const || n.inDType(idx[1]) != DType::I8 ||
      n.inShape(idx[1]).size() != 2 || n.Plan.Dot4Lanes)
    return std::nullopt;
  if (!zeroOrAbsent(n, idx[2]))
    return std::nullopt;
  return std::make_pair(idx, transposed);
}

/// Appends `op` (domain mlcc or ai.onnx) reading `inputs` to `nodes` and
/// returns its output.
ir::Value *addNode(ir::Graph &g, std::vector<std::unique_ptr<ir::Node>> &nodes,
                   const std::string &base, const std::string &op, const std::string &domain,
                   std::vector<ir::Value *> inputs,
                   std::vector<std::pair<std::string, int64_t>> attrs) {
  auto n = std::make_unique<ir::Node>();
  n->Name = g.uniqueNodeName(base + "/" + op);
  n->OpType = op;
  n->Domain = domain;
  n->Opset = domain.empty() ? 13 : 1;
  n->Inputs = std::move(inputs);
  for (auto &[k, v] : attrs)
    n->Attrs[k] = ir::intAttr(v);
  ir::Value *out = g.addValue(g.uniqueValueName(n->Name));
  out->Producer = n.get();
  n->Outputs = {out};
  nodes.push_back(std::move(n));
  return out;
}

/// Fixed-point requantization for targets without floating point: the
/// real multiplier of each output channel (column) of an integer
/// convolution or matrix product with constant f32 scales, as an int32
/// Q31 multiplier M0 in [2^30, 2^31) and a right shift S (m = M0 * 2^-S),
/// appended to the node's inputs (plan FixedRequantInput = the index
/// of the multipliers; the shifts follow). False when the node has no
/// constant per-tensor x/y scales.
bool addFixedRequant(ir::Graph &g, ir::Node &n) {
  std::array<size_t, 3> idx; // x scale, w scale, y scale
  if (n.Domain == "" && (n.OpType == "QLinearConv" || n.OpType == "QLinearMatMul"))
    idx = {1, 4, 6};
  else if (n.Domain == "com.microsoft" && n.OpType == "QGemm" && n.hasInput(7))
    idx = {1, 4, 7};
  else
    return false;
  for (size_t i : idx)
    if (!n.hasInput(i) || !n.Inputs[i]->Const || n.inDType(i) != DType::F32)
      return false;
  if (n.Inputs[idx[0]]->Type.numel() != 1 || n.Inputs[idx[2]]->Type.numel() != 1 ||
      n.Plan.FixedRequantInput >= 0)
    return false;
  const Tensor &ws = *n.Inputs[idx[1]]->Const;
  int64_t channels = ws.numel();
  float xs = (float)n.Inputs[idx[0]]->Const->doubleAt(0);
  float ys = (float)n.Inputs[idx[2]]->Const->doubleAt(0);
  float alpha = (float)n.attrFloat("alpha", 1.0);
  std::vector<int64_t> mult, shift;
  for (int64_t c = 0; c < channels; ++c) {
    float m = xs * (float)ws.doubleAt(c);
    if (n.OpType == "QGemm")
      m = alpha * m;
    m = m / ys;
    int e = 0;
    double f = std::frexp((double)m, &e); // m = f * 2^e, f in [0.5, 1)
    int64_t m0 = (int64_t)std::llround(f * 2147483648.0);
    if (m0 == (int64_t)1 << 31) {
      m0 /= 2;
      ++e;
    }
    int64_t s = 31 - e;
    if (!(m > 0) || s < 1 || s > 62)
      return false;
    mult.push_back(m0);
    shift.push_back(s);
  }
  auto constant = [&](const std::string &what, const std::vector<int64_t> &v) {
    ir::Value *c = g.addValue(g.uniqueValueName(n.Name + "/" + what), {DType::I32, {channels}});
    c->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I32, {channels}, v));
    return c;
  };
  size_t at = n.Inputs.size();
  n.Inputs.push_back(constant("requant_multiplier", mult));
  n.Inputs.push_back(constant("requant_shift", shift));
  n.Plan.FixedRequantInput = (int64_t)at;
  return true;
}

/// The operands of the int8 dot-product path of `n` (whose weights are
/// input `wi`): the weights packed by `packOp` (mlcc.PackQuads or
/// mlcc.PackQuadsK, with `packAttrs`) and their int32 sums over `sumAxes`,
/// both folded at compile time, appended after the op's own inputs; the
/// plan's Dot4Lanes is the vector lanes, Dot4Input the index of the packed
/// weights (the sums follow).
void addDotOperands(ir::Graph &g, std::vector<std::unique_ptr<ir::Node>> &nodes, ir::Node &n,
                    size_t wi, const std::string &packOp,
                    std::vector<std::pair<std::string, int64_t>> packAttrs,
                    const std::vector<int64_t> &sumAxes, int64_t lanes) {
  ir::Value *w = n.Inputs[wi];
  ir::Value *packed = addNode(g, nodes, n.Name, packOp, "mlcc", {w}, std::move(packAttrs));
  ir::Value *wide = addNode(g, nodes, n.Name, "Cast", "", {w}, {{"to", 6}}); // int32
  int64_t rank = (int64_t)sumAxes.size();
  ir::Value *axes = g.addValue(g.uniqueValueName(n.Name + "/sum_axes"), {DType::I64, {rank}});
  axes->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {rank}, sumAxes));
  ir::Value *sums = addNode(g, nodes, n.Name, "ReduceSum", "", {wide, axes}, {{"keepdims", 0}});
  // After every optional input of the op (QLinearConv 9, QLinearMatMul 8,
  // QGemm 9, ConvInteger and MatMulInteger 4).
  size_t at = n.OpType == "QLinearMatMul" ? 8 : n.OpType == "QLinearConv" || n.OpType == "QGemm" ? 9 : 4;
  n.Inputs.resize(at + 2, nullptr);
  n.Inputs[at] = packed;
  n.Inputs[at + 1] = sums;
  n.Plan.Dot4Lanes = lanes;
  n.Plan.Dot4Input = (int64_t)at;
}

} // namespace

bool packWeights(ir::Graph &g, const TargetDesc &target) {
  std::vector<std::unique_ptr<ir::Node>> nodes;
  bool changed = false;
  for (auto &n : g.Nodes) {
    if (!target.FloatUnit && addFixedRequant(g, *n)) {
      nodes.push_back(std::move(n));
      continue;
    }
    if (auto mm = target.has(MacForm::X86Vnni) ? dotMatMulInputs(*n) : std::nullopt) {
      auto [idx, transposed] = *mm;
      addDotOperands(g, nodes, *n, idx[1], "PackQuadsK", {{"transposed", transposed}},
                     {transposed ? 1 : 0}, target.lanes(DType::I32));
      nodes.push_back(std::move(n));
      changed = true;
      continue;
    }
    // Grouped (depthwise) int8 convolutions of uint8 data on dot4, on
    // 16-lane targets: four taps of a kernel row per quad (lowerIntTapQuads),
    // or one tap per quad for the shapes it does not take (lowerIntWindow).
    if (target.has(MacForm::X86Vnni) && target.lanes(DType::I32) == 16 && n->Domain == "" &&
        (n->OpType == "QLinearConv" || n->OpType == "ConvInteger") &&
        n->attrInt("group", 1) > 1 && !n->Plan.Dot4Taps) {
      size_t wi = n->OpType == "QLinearConv" ? 3 : 1, zi = n->OpType == "QLinearConv" ? 5 : 3;
      if (n->hasInput(wi) && n->inDType(wi) == DType::I8 && n->inDType(0) == DType::U8 &&
          zeroOrAbsent(*n, zi))
        n->Plan.Dot4Taps = true;
    }
    if (auto idx = target.has(MacForm::X86Vnni) ? dotConvInputs(*n) : std::nullopt) {
      addDotOperands(g, nodes, *n, (*idx)[1], "PackQuads", {}, {1, 2, 3},
                     target.lanes(DType::I32));
      nodes.push_back(std::move(n));
      changed = true;
      continue;
    }
    if (auto wp = winogradPlan(*n, target)) {
      // The transformed kernel (folded), read as the broadcast operand of
      // the products: rows output channels, columns tiles.
      ir::Value *u = addNode(g, nodes, n->Name, "WinogradWeights", "mlcc", {n->Inputs[1]},
                             {{"tile", wp->Tile}});
      int64_t M = n->inShape(1)[0], C = n->inShape(1)[1];
      kir::ContractionTile tile =
          kir::chooseContractionTile(target, M, wp->Rows * wp->Pitch, true, C);
      if (n->Inputs.size() < 4)
        n->Inputs.resize(4, nullptr);
      n->Inputs[3] = u;
      planTile(*n, tile);
      n->Plan.PackedInput = 3;
      n->Plan.Wino = ir::KernelPlan::Winograd{wp->Tile, wp->Rows, wp->Pitch};
      nodes.push_back(std::move(n));
      changed = true;
      continue;
    }
    std::optional<Plan> plan = planFor(*n, target.lanes(DType::F32), target.L2Bytes);
    if (plan && plan->PixelColumns) {
      kir::ContractionTile tile =
          kir::chooseContractionTile(target, plan->Rows, plan->Cols, true);
      // Pixels as rows instead (packed weights) when the reduction is not
      // short and their tile wastes less at the edges (few pixels: a 14x14
      // map fills 3 panels of 64 and a quarter), net of the transposed
      // stores: one per output, against its reduce / lanes multiply-adds.
      if (plan->Reduce >= 4 * tile.Lanes) {
        kir::ContractionTile rowsTile =
            kir::chooseContractionTile(target, plan->Cols, plan->Rows, false, plan->Reduce);
        double storeCost = 1.0 + (double)rowsTile.Lanes / (double)plan->Reduce;
        if (rowsTile.Score / storeCost > tile.Score)
          tile.Panel = plan->Cols + 1; // not taken
      }
      if (tile.Panel <= plan->Cols) {
        planTile(*n, tile);
        n->Plan.PixelColumns = true;
        nodes.push_back(std::move(n));
        continue;
      }
      plan = Plan{plan->Groups, plan->Rows, plan->Cols, plan->Reduce, false, 3};
    }
    if (plan) {
      kir::ContractionTile tile =
          kir::chooseContractionTile(target, plan->Rows, plan->Cols, false, plan->Reduce);
      auto pack = std::make_unique<ir::Node>();
      pack->Name = g.uniqueNodeName(n->Name + "/pack");
      pack->OpType = "PackPanels";
      pack->Domain = "mlcc";
      pack->Opset = 1;
      pack->Attrs["groups"] = ir::intAttr(plan->Groups);
      pack->Attrs["cols"] = ir::intAttr(plan->Cols);
      pack->Attrs["panel"] = ir::intAttr(tile.Panel);
      pack->Attrs["transposed"] = ir::intAttr(plan->Transposed);
      pack->Inputs = {n->Inputs[1]};
      ir::Value *packed = g.addValue(g.uniqueValueName(n->Inputs[1]->Name + ".packed"));
      packed->Producer = pack.get();
      pack->Outputs = {packed};
      if (n->Inputs.size() < plan->Input + 1)
        n->Inputs.resize(plan->Input + 1, nullptr);
      n->Inputs[plan->Input] = packed;
      planTile(*n, tile);
      n->Plan.PackedInput = (int64_t)plan->Input;
      nodes.push_back(std::move(pack));
      changed = true;
    }
    nodes.push_back(std::move(n));
  }
  g.Nodes = std::move(nodes);
  return changed;
}

void layoutForGpu(ir::Graph &g) {
  for (auto &n : g.Nodes) {
    bool floatConv = n->Domain.empty() && n->OpType == "Conv" && n->hasInput(0) &&
                     n->inDType(0) == DType::F32;
    // Every node whose lowering is the matrix-product generator.
    bool product = (n->Domain.empty() &&
                    (n->OpType == "MatMul" || n->OpType == "Gemm" ||
                     n->OpType == "MatMulInteger" || n->OpType == "QLinearMatMul")) ||
                   (n->Domain == "com.microsoft" && n->OpType == "QGemm");
    if (floatConv || product)
      n->Plan.PerOutput = true;
  }
}

} // namespace mlcc::passes
