//===- PackWeights.cpp - Weights in the layout their kernel reads ---------===//
//
// pack-weights: adds, for every node whose plan (plan-kernels) reads
// weights in a layout of its own, a node that computes that layout from the
// constant weights; infer-and-fold evaluates it, so the library holds only
// the packed copy. The node gets the result as an extra input, and its plan
// records which:
//
//   register tile (f32, f16 and bf16 Conv, Gemm, MatMul; not pixel columns)
//       mlcc.PackPanels: the weights in panels of the tile's width, rows
//       the output channels (Conv: per group; Gemm: N; MatMul: N),
//       transposed for Gemm without transB and for MatMul; input 3 (MatMul
//       2); 16-bit float weights cast to f32 first unless the tile has one
//       row, accumulates in float16 or the target has no vectors;
//   Winograd    mlcc.WinogradWeights: the transformed kernel U [a*a, M, C],
//               input 3;
//   register tile with pixel columns, f16/bf16 Conv (targets with vectors)
//       the weights cast to f32 (the tile broadcasts them one at a time),
//       input 3, unless the tile accumulates in float16;
//   dot products (int8, Dot4Lanes)
//       mlcc.PackQuads (convolutions: quads of input channels) or
//       mlcc.PackQuadsK (matrix products: quads of K), and the int32 sums
//       of each output channel's weights, after the op's own inputs.
//   FFT (DFT, STFT)
//       the table of twiddle factors (ops::fftTwiddles), a constant;
//   int8 products in pairs (Pairs: Cortex-M smlad)
//       mlcc.PackQuads (convolutions: quads of input channels) or
//       mlcc.PackQuadsK (matrix products: quads of K) with pairs = 1 (two
//       operand pairs a quad), one byte a weight, after the op's own inputs
//       and any requantization constants.
//   matrix products on byte vectors (ByteDot: Helium vmladav.s8)
//       the weights as [N, K] (a Transpose unless QGemm's transB) and their
//       int32 sums along K, after the op's own inputs.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Builder.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/ops/Signal.h"
#include "compiler/passes/Passes.h"

namespace mlcc::passes {

namespace {

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

/// `out`, a layout of `w`, holds 4-bit weights in 8-bit form when `w` does
/// (ir::Value::FourBitAxis), its output channels along `axis`: paired
/// along them when `w` is paired along its own (axis 0 of a convolution's
/// weights, the columns of a matrix product's; a depthwise convolution's
/// weights, paired along their taps, leave their layouts plain).
void fourBitLayout(const ir::Value *w, ir::Value *out, int axis, int wAxis = 0) {
  if (w->FourBitAxis >= 0 && w->FourBitAxis == wAxis)
    out->FourBitAxis = axis;
}

/// The operands of the int8 dot-product path of `n` (whose weights are
/// input `wi`): the weights packed by `packOp` (mlcc.PackQuads or
/// mlcc.PackQuadsK, with `packAttrs`) and their int32 sums over `sumAxes`,
/// both folded at compile time, appended at `at`, after the op's own
/// inputs; the plan's Dot4Input is that index (the sums follow).
void addDotOperands(ir::Graph &g, std::vector<std::unique_ptr<ir::Node>> &nodes, ir::Node &n,
                    size_t wi, const std::string &packOp,
                    std::vector<std::pair<std::string, int64_t>> packAttrs,
                    const std::vector<int64_t> &sumAxes, size_t at) {
  ir::Value *w = n.Inputs[wi];
  bool columns = false, transposed = false;
  for (auto &[k, v] : packAttrs) {
    columns = columns || (k == "columns" && v > 0);
    transposed = transposed || (k == "transposed" && v);
  }
  ir::Value *packed = addNode(g, nodes, n.Name, packOp, "mlcc", {w}, std::move(packAttrs));
  // Output channels: PackQuads [M, ...], PackQuadsK [kq, N] or per column [N, kq].
  fourBitLayout(w, packed, packOp == "PackQuads" || columns ? 0 : 1,
                packOp == "PackQuads" || transposed ? 0 : 1);
  ir::Value *wide = addNode(g, nodes, n.Name, "Cast", "", {w}, {{"to", 6}}); // int32
  int64_t rank = (int64_t)sumAxes.size();
  ir::Value *axes = g.addValue(g.uniqueValueName(n.Name + "/sum_axes"), {DType::I64, {rank}});
  axes->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {rank}, sumAxes));
  ir::Value *sums = addNode(g, nodes, n.Name, "ReduceSum", "", {wide, axes}, {{"keepdims", 0}});
  n.Inputs.resize(at + 2, nullptr);
  n.Inputs[at] = packed;
  n.Inputs[at + 1] = sums;
  n.Plan.Dot4Input = (int64_t)at;
}

/// The panels of a register-tiled f32 contraction's weights: groups,
/// columns per group, whether the weights are stored transposed
/// ([K, N]), and the input the packed copy goes to.
struct PanelLayout {
  int64_t Groups, Cols;
  bool Transposed;
  size_t Input;
};

PanelLayout panelLayout(const ir::Node &n) {
  const Shape &w = n.inShape(1);
  if (n.OpType == "Conv") {
    int64_t groups = n.attrInt("group", 1);
    return {groups, w[0] / groups, false, 3};
  }
  if (n.OpType == "Gemm")
    return {1, n.Outputs[0]->Type.Dims[1], n.attrInt("transB", 0) == 0, 3};
  return {1, w[1], true, 2}; // MatMul
}

} // namespace

bool packWeights(ir::Graph &g, bool wideHalfWeights) {
  std::vector<std::unique_ptr<ir::Node>> nodes;
  bool changed = false;
  for (auto &n : g.Nodes) {
    size_t added = nodes.size();
    ir::KernelPlan &p = n->Plan;
    if (p.Dot4Lanes && p.Dot4Input < 0) {
      ops::IntegerOperands o = *ops::integerOperands(*n);
      if (o.Conv)
        addDotOperands(g, nodes, *n, o.W, "PackQuads", {{"pairs", p.DotPairs ? 2 : 0}}, {1, 2, 3},
                       std::max(n->Inputs.size(), o.Appended));
      else {
        std::vector<std::pair<std::string, int64_t>> attrs{{"transposed", o.TransposedW}};
        if (p.DotAlongK)
          attrs.push_back({"columns", p.Dot4Lanes});
        addDotOperands(g, nodes, *n, o.W, "PackQuadsK", attrs, {o.TransposedW ? 1 : 0},
                       std::max(n->Inputs.size(), o.Appended));
      }
      changed = true;
    } else if (p.ByteDot && p.ByteDotInput < 0 && !ops::integerOperands(*n)->Conv) {
      // B as [N, K] (a folded Transpose when stored [K, N]) and its int32
      // sums along K.
      ops::IntegerOperands o = *ops::integerOperands(*n);
      size_t at = std::max(n->Inputs.size(), o.Appended);
      ir::Value *w = n->Inputs[o.W];
      if (!o.TransposedW) {
        ir::Value *src = w;
        w = addNode(g, nodes, n->Name, "Transpose", "", {w}, {});
        fourBitLayout(src, w, 0, 1);
        ir::Attribute perm;
        perm.Kind = ir::AttrKind::Ints;
        perm.Ints = {1, 0};
        w->Producer->Attrs["perm"] = perm;
      }
      ir::Value *wide = addNode(g, nodes, n->Name, "Cast", "", {w}, {{"to", 6}}); // int32
      ir::Value *axes = g.addValue(g.uniqueValueName(n->Name + "/sum_axes"), {DType::I64, {1}});
      axes->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {1}, {1}));
      ir::Value *sums = addNode(g, nodes, n->Name, "ReduceSum", "", {wide, axes}, {{"keepdims", 0}});
      n->Inputs.resize(at + 2, nullptr);
      n->Inputs[at] = w;
      n->Inputs[at + 1] = sums;
      p.ByteDotInput = (int64_t)at;
      changed = true;
    } else if (p.Pairs && p.PairsInput < 0) {
      ops::IntegerOperands o = *ops::integerOperands(*n);
      size_t at = std::max(n->Inputs.size(), o.Appended);
      ir::Value *packed =
          o.Conv ? addNode(g, nodes, n->Name, "PackQuads", "mlcc", {n->Inputs[o.W]}, {{"pairs", 1}})
                 : addNode(g, nodes, n->Name, "PackQuadsK", "mlcc", {n->Inputs[o.W]},
                           {{"transposed", o.TransposedW}, {"pairs", p.PairWords ? 0 : 1}});
      fourBitLayout(n->Inputs[o.W], packed, o.Conv ? 0 : 1, o.Conv || o.TransposedW ? 0 : 1);
      n->Inputs.resize(at + 1, nullptr);
      n->Inputs[at] = packed;
      p.PairsInput = (int64_t)at;
      changed = true;
    } else if (p.LaneWeights && p.LaneWeightsInput < 0) {
      // The weights [M, C, kh, kw] transposed to [C, kh, kw, M] (folded).
      ops::IntegerOperands o = *ops::integerOperands(*n);
      size_t at = std::max(n->Inputs.size(), o.Appended);
      ir::Value *t = addNode(g, nodes, n->Name, "Transpose", "", {n->Inputs[o.W]}, {});
      fourBitLayout(n->Inputs[o.W], t, 3);
      ir::Attribute perm;
      perm.Kind = ir::AttrKind::Ints;
      perm.Ints = {1, 2, 3, 0};
      t->Producer->Attrs["perm"] = perm;
      n->Inputs.resize(at + 1, nullptr);
      n->Inputs[at] = t;
      p.LaneWeightsInput = (int64_t)at;
      changed = true;
    } else if (p.GateRows && p.PackedInput < 0) {
      // W [D, G*H, I] and R [D, G*H, H] replaced by their transposes
      // (folded; the originals are left dead).
      for (size_t i = 0; i < 2; ++i) {
        ir::Value *t = addNode(g, nodes, n->Name, "Transpose", "", {n->Inputs[1 + i]}, {});
        ir::Attribute perm;
        perm.Kind = ir::AttrKind::Ints;
        perm.Ints = {0, 2, 1};
        t->Producer->Attrs["perm"] = perm;
        n->Inputs[1 + i] = t;
      }
      p.PackedInput = 1;
      changed = true;
    } else if (p.Fft && p.FftInput < 0) {
      // The FFT's twiddle table, a constant of its own.
      int64_t len = ops::transformLength(*n);
      DType t = kir::computeType(n->inDType(0));
      ir::Value *tw = g.addValue(g.uniqueValueName(n->Name + "/twiddles"), {t, {len, 2}});
      tw->Const = std::make_shared<Tensor>(ops::fftTwiddles(t, len));
      size_t at = std::max(n->Inputs.size(), ops::fftTwiddleInput(*n));
      n->Inputs.resize(at + 1, nullptr);
      n->Inputs[at] = tw;
      p.FftInput = (int64_t)at;
      changed = true;
    } else if (p.Wino && p.PackedInput < 0) {
      // The transformed kernel (folded), read as the broadcast operand of
      // the products: rows output channels, columns tiles.
      ir::Value *u = addNode(g, nodes, n->Name, "WinogradWeights", "mlcc", {n->Inputs[1]},
                             {{"tile", p.Wino->Tile}});
      if (n->Inputs.size() < 4)
        n->Inputs.resize(4, nullptr);
      n->Inputs[3] = u;
      p.PackedInput = 3;
      changed = true;
    } else if (wideHalfWeights && p.Register && !p.Register->HalfAccumulate &&
               p.PixelColumns && p.PackedInput < 0 && isNarrowFloat(n->inDType(1)) &&
               n->OpType == "Conv") {
      // Weights broadcast one at a time (pixels as the tile's columns): a
      // 16-bit float copy would cost a conversion and a shuffle per weight
      // per tile; the kernel reads an f32 copy (folded) at input 3.
      ir::Value *wide = addNode(g, nodes, n->Name, "Cast", "", {n->Inputs[1]}, {{"to", 1}});
      if (n->Inputs.size() < 4)
        n->Inputs.resize(4, nullptr);
      n->Inputs[3] = wide;
      p.PackedInput = 3;
      changed = true;
    } else if (p.Register && !p.PixelColumns && p.PackedInput < 0) {
      PanelLayout l = panelLayout(*n);
      auto pack = std::make_unique<ir::Node>();
      pack->Name = g.uniqueNodeName(n->Name + "/pack");
      pack->OpType = "PackPanels";
      pack->Domain = "mlcc";
      pack->Opset = 1;
      pack->Attrs["groups"] = ir::intAttr(l.Groups);
      pack->Attrs["cols"] = ir::intAttr(l.Cols);
      pack->Attrs["panel"] = ir::intAttr(p.Register->Panel);
      pack->Attrs["transposed"] = ir::intAttr(l.Transposed);
      pack->Inputs = {n->Inputs[1]};
      // 16-bit float weights under a tile of several rows are packed as f32:
      // each panel vector is then a plain load, where a conversion costs
      // two more uops on the FMA ports per vector (x86: 1.3-1.4x the time
      // of squeezenet's 3x3 and classifier convolutions). A one-row tile
      // (a matrix-vector product) streams its weights once and keeps them
      // 16-bit: half the bytes from memory; so does a float16 tile
      // (HalfAccumulate), whose vectors are float16.
      if (wideHalfWeights && isNarrowFloat(n->inDType(1)) && p.Register->Rows > 1 &&
          !p.Register->HalfAccumulate)
        pack->Inputs = {addNode(g, nodes, n->Name, "Cast", "", {n->Inputs[1]}, {{"to", 1}})};
      ir::Value *packed = g.addValue(g.uniqueValueName(n->Inputs[1]->Name + ".packed"));
      packed->Producer = pack.get();
      pack->Outputs = {packed};
      if (n->Inputs.size() < l.Input + 1)
        n->Inputs.resize(l.Input + 1, nullptr);
      n->Inputs[l.Input] = packed;
      p.PackedInput = (int64_t)l.Input;
      nodes.push_back(std::move(pack));
      changed = true;
    }
    // What packs a node's operands runs under its guard.
    for (size_t i = added; i < nodes.size(); ++i)
      nodes[i]->Guard = n->Guard;
    nodes.push_back(std::move(n));
  }
  g.Nodes = std::move(nodes);
  return changed;
}

} // namespace mlcc::passes
