//===- FuseQdq.cpp - DequantizeLinear -> op -> QuantizeLinear as one op ---===//
//
// fuse-qdq: a QDQ model (QuantizeLinear/DequantizeLinear around float ops,
// what ONNX Runtime's and PyTorch's quantization tools export, and what
// mlcc's own --quantize writes) says "this op runs on 8-bit data" by
// dequantizing its inputs and quantizing its output. The pass turns each
// such pattern into the integer op that computes it, so that it lowers to
// an integer kernel instead of a float one between two conversions:
//
//   DQ(x) DQ(w) [DQ(bias)] -> Conv      [-> act] -> Q   QLinearConv
//   DQ(a) DQ(b)            -> MatMul    [-> act] -> Q   QLinearMatMul
//   DQ(a) DQ(b) [DQ(c)]    -> Gemm      [-> act] -> Q   com.microsoft QGemm
//   DQ(a) DQ(b)            -> Add | Mul [-> act] -> Q   com.microsoft QLinearAdd | Mul
//   DQ(x)...               -> Concat             -> Q   com.microsoft QLinearConcat
//   DQ(x) -> AveragePool | GlobalAveragePool | Sigmoid | LeakyRelu -> Q
//                                                       com.microsoft QLinear...
//   DQ(x) -> MaxPool | Reshape | Flatten | Transpose | Squeeze | Unsqueeze |
//            Identity -> Q, with the same scale and zero point: the op itself
//            on the 8-bit data (it moves or selects values; it computes none)
//   DQ(x) -> Relu | Clip -> Q with the same scale and zero point: a Clip of
//            the 8-bit data
//
// `act` is a Relu or a Clip with constant bounds between the op and its
// QuantizeLinear. Quantization is monotonic, so clamping before quantizing
// equals clamping the quantized value to the quantized bounds: the act
// becomes an 8-bit Clip after the integer op (none when the bounds are the
// type's, as for a Relu whose output zero point is the type's minimum),
// which fuse-ops folds into the integer op's stores when it can.
//
// Only patterns whose scales and zero points are constants, per tensor
// (weights: per tensor or per output channel), f32, with 8-bit data, are
// fused; the others stay float ops between conversions (correct, slower).
// The bias of a convolution or Gemm becomes int32 at scale x_scale *
// w_scale: taken as it is when it is a DequantizeLinear of int32 at exactly
// that scale (what the tools write), else rounded from its float value.
//
// infer-and-fold keeps DequantizeLinear nodes of constants for this pass
// (FoldOptions::KeepDequantize); the ones it leaves are folded at its end.
//
// Weight-only quantization: a MatMul (or a Gemm, W or W^T, with a bias of
// N values) of float activations and a DequantizeLinear of constant 4- or
// 2-bit weights W [K, N] (int4, uint4,
// int2, uint2; per tensor, per output channel, or blocked along K with a
// block that is a multiple of 16) becomes com.microsoft MatMulNBits
// (compiler/ops/MatMulNBits.cpp), the weights repacked at compile time into
// its layout (row n of W^T block by block, codes offset to unsigned, the
// offset folded into the zero points): the weights stay packed in the
// library, not widened to f32 by constant folding.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "compiler/support/SubByte.h"

#include <cmath>
#include <functional>
#include <limits>
#include <set>

namespace mlcc::passes {

namespace {

bool isByte(DType t) { return t == DType::I8 || t == DType::U8; }

/// A DequantizeLinear's operands: data, constant f32 scale and zero point
/// (null when omitted), its axis (normalized), and whether it is per tensor.
struct Dq {
  ir::Value *Data = nullptr, *Scale = nullptr, *Zp = nullptr;
  int64_t Axis = 1;
  bool PerTensor = true;
};

std::optional<Dq> asDq(const ir::Value *v) {
  const ir::Node *n = v ? v->Producer : nullptr;
  if (!n || n->OpType != "DequantizeLinear" || n->Domain != "" ||
      n->attrInt("block_size", 0) != 0 || !n->hasInput(1) || !n->Inputs[1]->Const ||
      n->inDType(1) != DType::F32 || (n->hasInput(2) && !n->Inputs[2]->Const))
    return std::nullopt;
  Dq d;
  d.Data = n->Inputs[0];
  d.Scale = n->Inputs[1];
  d.Zp = n->hasInput(2) ? n->Inputs[2] : nullptr;
  d.PerTensor = d.Scale->Type.numel() == 1 && (!d.Zp || d.Zp->Type.numel() == 1);
  int64_t rank = (int64_t)d.Data->Type.rank();
  d.Axis = n->attrInt("axis", 1);
  if (d.Axis < 0)
    d.Axis += rank;
  return d;
}

/// A QuantizeLinear with a constant per-tensor f32 scale and zero point,
/// producing 8-bit data.
struct Qp {
  ir::Node *Node = nullptr;
  ir::Value *Scale = nullptr, *Zp = nullptr;
  DType Type = DType::U8;
};

std::optional<Qp> asQ(ir::Node *n) {
  if (n->OpType != "QuantizeLinear" || n->Domain != "" || !n->hasInput(1) ||
      !n->Inputs[1]->Const || n->inDType(1) != DType::F32 ||
      n->Inputs[1]->Type.numel() != 1 || (n->hasInput(2) && (!n->Inputs[2]->Const ||
                                                             n->Inputs[2]->Type.numel() != 1)) ||
      !isByte(n->Outputs[0]->Type.Type) || n->attrInt("block_size", 0) != 0)
    return std::nullopt;
  return Qp{n, n->Inputs[1], n->hasInput(2) ? n->Inputs[2] : nullptr,
            n->Outputs[0]->Type.Type};
}

double scalarOf(const ir::Value *v) { return v->Const->doubleAt(0); }
int64_t zpOf(const ir::Value *v) { return v ? v->Const->intAt(0) : 0; }

class Fuser {
public:
  explicit Fuser(ir::Graph &g) : G(g), Uses(g.useCounts()) {}

  void run() {
    for (auto &np : G.Nodes) {
      std::optional<Qp> q = asQ(np.get());
      if (!q || Removed.count(np.get()))
        continue;
      fuse(*q);
    }
    if (Inserted.empty())
      return;
    std::vector<std::unique_ptr<ir::Node>> nodes;
    for (auto &n : G.Nodes) {
      bool drop = Removed.count(n.get()) > 0;
      auto it = Inserted.find(n.get());
      if (it != Inserted.end())
        for (auto &a : it->second)
          nodes.push_back(std::move(a));
      if (!drop)
        nodes.push_back(std::move(n));
    }
    G.Nodes = std::move(nodes);
  }

private:
  /// The value `v` is read only by one node and is not a graph output.
  bool single(const ir::Value *v) { return Uses[v] == 1 && !G.isGraphOutput(v); }

  ir::Value *constant(TensorPtr t, const std::string &base) {
    ir::Value *v = G.addValue(G.uniqueValueName(base), {t->dtype(), t->shape()});
    v->Const = std::move(t);
    return v;
  }

  ir::Value *zeroOf(DType t, const std::string &base) {
    return constant(std::make_shared<Tensor>(Tensor::fromInts(t, {}, {0})), base + "/zp");
  }

  /// The zero point of a DQ or Q, made explicit (a constant 0 when omitted).
  ir::Value *zp(ir::Value *z, DType t, const std::string &base) {
    return z ? z : zeroOf(t, base);
  }

  /// A new node computing `out` (whose producer it becomes), inserted
  /// where the QuantizeLinear `at` stood, under its guard.
  ir::Node *add(ir::Node *at, const std::string &op, const std::string &domain,
                int64_t opset, std::vector<ir::Value *> inputs, ir::Value *out,
                const std::string &base) {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(base);
    n->OpType = op;
    n->Domain = domain;
    n->Opset = opset;
    n->Inputs = std::move(inputs);
    n->Outputs = {out};
    n->Guard = at->Guard;
    out->Producer = n.get();
    ir::Node *raw = n.get();
    Inserted[at].push_back(std::move(n));
    return raw;
  }

  /// The quantized bounds [lo, hi] of a Relu or Clip with constant bounds
  /// (in the output's scale and zero point), or nullopt for other nodes.
  std::optional<std::pair<int64_t, int64_t>> actBounds(const ir::Node &a, const Qp &q) {
    double lo = -INFINITY, hi = INFINITY;
    if (a.Domain != "")
      return std::nullopt;
    if (a.OpType == "Relu") {
      lo = 0;
    } else if (a.OpType == "Clip") {
      if (a.Opset < 11) {
        lo = a.attrFloat("min", -INFINITY);
        hi = a.attrFloat("max", INFINITY);
      } else {
        for (size_t i : {1, 2})
          if (a.hasInput(i) && (!a.Inputs[i]->Const || a.Inputs[i]->Type.numel() != 1))
            return std::nullopt;
        if (a.hasInput(1))
          lo = a.Inputs[1]->Const->doubleAt(0);
        if (a.hasInput(2))
          hi = a.Inputs[2]->Const->doubleAt(0);
      }
    } else {
      return std::nullopt;
    }
    double s = scalarOf(q.Scale);
    int64_t z = zpOf(q.Zp);
    int64_t tmin = q.Type == DType::I8 ? -128 : 0, tmax = q.Type == DType::I8 ? 127 : 255;
    auto quant = [&](double v) -> int64_t {
      if (std::isinf(v))
        return v < 0 ? tmin : tmax;
      double r = std::nearbyint(v / s) + (double)z;
      return (int64_t)std::clamp(r, (double)tmin, (double)tmax);
    };
    return std::make_pair(quant(lo), quant(hi));
  }

  /// Whether quantized bounds are narrower than the 8-bit type's range.
  static bool narrows(const Qp &q, const std::pair<int64_t, int64_t> &bounds) {
    int64_t tmin = q.Type == DType::I8 ? -128 : 0, tmax = q.Type == DType::I8 ? 127 : 255;
    return bounds.first > tmin || bounds.second < tmax;
  }

  /// A Clip of the 8-bit `in` to `bounds`, writing `out`, placed at `at`.
  void addClip(ir::Node *at, const Qp &q, ir::Value *in,
               const std::pair<int64_t, int64_t> &bounds, ir::Value *out,
               const std::string &base) {
    auto scalar = [&](int64_t v, const char *what) {
      return constant(std::make_shared<Tensor>(Tensor::fromInts(q.Type, {}, {v})), base + what);
    };
    add(at, "Clip", "", 13, {in, scalar(bounds.first, "/lo"), scalar(bounds.second, "/hi")}, out,
        base + "/clamp");
  }

  /// An int32 bias at scale x_scale * w_scale[m] for the `m` channels of a
  /// convolution or Gemm, from input `bias` (a DequantizeLinear of int32, or
  /// a float constant); null when it is neither.
  ir::Value *intBias(ir::Value *bias, double xs, const Tensor &ws, int64_t m,
                     const std::string &base, int64_t wFactor = 1) {
    std::vector<double> f(m);
    std::vector<int64_t> exact;
    if (std::optional<Dq> d = asDq(bias); d && d->Data->Const &&
                                          d->Data->Type.Type == DType::I32 &&
                                          d->Data->Type.numel() == m &&
                                          (d->Scale->Type.numel() == 1 ||
                                           d->Scale->Type.numel() == m) &&
                                          (!d->Zp || d->Zp->Type.numel() == 1 ||
                                           d->Zp->Type.numel() == m)) {
      bool same = d->Axis == 0 || d->PerTensor;
      for (int64_t c = 0; c < m; ++c) {
        double s = d->Scale->Const->doubleAt(d->Scale->Type.numel() == 1 ? 0 : c);
        int64_t z = d->Zp ? d->Zp->Const->intAt(d->Zp->Type.numel() == 1 ? 0 : c) : 0;
        int64_t v = d->Data->Const->intAt(c);
        f[c] = (double)(float)((double)(v - z) * s);
        // (At weights wFactor times their codes, a scale wFactor times
        // smaller, exactly: a power of two.)
        float want = (float)xs * (float)ws.doubleAt(ws.numel() == 1 ? 0 : c) * (float)wFactor;
        same = same && z == 0 && (float)s == want &&
               std::abs(v * wFactor) <= std::numeric_limits<int32_t>::max();
        exact.push_back(v * wFactor);
      }
      if (same)
        return constant(std::make_shared<Tensor>(Tensor::fromInts(DType::I32, {m}, exact)),
                        base + "/bias");
    } else if (bias->Const && isFloat(bias->Type.Type) && bias->Type.numel() == m) {
      for (int64_t c = 0; c < m; ++c)
        f[c] = bias->Const->doubleAt(c);
    } else {
      return nullptr;
    }
    std::vector<int64_t> q(m);
    for (int64_t c = 0; c < m; ++c) {
      double s = (double)((float)xs * (float)ws.doubleAt(ws.numel() == 1 ? 0 : c));
      double r = s > 0 ? std::nearbyint(f[c] / s) : 0.0;
      q[c] = (int64_t)std::clamp(r, -2147483648.0, 2147483647.0);
    }
    return constant(std::make_shared<Tensor>(Tensor::fromInts(DType::I32, {m}, q)),
                    base + "/bias");
  }

  static bool isFourBit(DType t) { return t == DType::I4 || t == DType::U4; }

  /// The constant 4-bit weights of `w` (int4 or uint4, zero points per
  /// tensor or along `axis`, the output channels) as int8 at zero point 0,
  /// so that the 8-bit integer kernels take them: when every code minus its
  /// zero point is in [-8, 7], 16 times that at a scale 16 times smaller
  /// (the same products; the weights then hold zero low nibbles, and
  /// lower-to-program stores them two a byte along `pairAxis`:
  /// FourBitAxis), else the
  /// differences themselves (up to +-15) at the same scale. Returns the
  /// factor (16 or 1) by which the weights' scale shrank.
  int64_t widenFourBit(Dq &w, int64_t axis, int64_t pairAxis, const std::string &base) {
    const Tensor &q = *w.Data->Const;
    const Shape &s = q.shape();
    int64_t inner = 1;
    for (size_t d = (size_t)axis + 1; d < s.size(); ++d)
      inner *= s[d];
    const int64_t channels = s[(size_t)axis], n = q.numel();
    std::vector<int64_t> diff(n);
    bool fits = true;
    for (int64_t i = 0; i < n; ++i) {
      int64_t z = 0;
      if (w.Zp)
        z = w.Zp->Const->intAt(w.Zp->Type.numel() == 1 ? 0 : (i / inner) % channels);
      diff[i] = q.intAt(i) - z;
      fits = fits && diff[i] >= -8 && diff[i] <= 7;
    }
    const int64_t factor = fits ? 16 : 1;
    for (int64_t &d : diff)
      d *= factor;
    ir::Value *data = constant(std::make_shared<Tensor>(Tensor::fromInts(DType::I8, s, diff)),
                               base + "/weights");
    if (fits)
      data->FourBitAxis = (int)pairAxis;
    const Tensor &sc = *w.Scale->Const;
    std::vector<double> scales(sc.numel());
    for (int64_t i = 0; i < sc.numel(); ++i)
      scales[i] = sc.doubleAt(i) / (double)factor;
    w.Data = data;
    w.Scale = constant(std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, sc.shape(), scales)),
                       base + "/weight_scale");
    w.Zp = nullptr;
    return factor;
  }

  /// Attributes copied from `from` to `to`.
  static void copyAttrs(const ir::Node &from, ir::Node &to) { to.Attrs = from.Attrs; }

  void fuse(const Qp &q) {
    ir::Node *at = q.Node;
    ir::Value *qin = at->Inputs[0];
    ir::Node *op = qin->Producer;
    if (!op || !single(qin) || Removed.count(op))
      return;
    // An activation between the op and the QuantizeLinear (a lone Relu or
    // Clip is handled as the op itself in rewrite()).
    ir::Node *act = nullptr;
    std::optional<std::pair<int64_t, int64_t>> bounds;
    if (op->OpType == "Relu" || op->OpType == "Clip") {
      ir::Value *ain = op->Inputs[0];
      if (ain->Producer && single(ain) && !Removed.count(ain->Producer) && !asDq(ain) &&
          (bounds = actBounds(*op, q))) {
        act = op;
        op = ain->Producer;
      }
    }
    // The integer op writes the output, or a value the activation's 8-bit
    // Clip then reads when its bounds are narrower than the type's.
    std::string base = at->Name;
    ir::Value *y = at->Outputs[0];
    bool clamp = act && narrows(q, *bounds);
    ir::Value *out = clamp ? G.addValue(G.uniqueValueName(base + "/unclamped"), {q.Type, y->Type.Dims})
                           : y;
    if (!rewrite(*op, q, act != nullptr, out, base))
      return;
    if (clamp)
      addClip(at, q, out, *bounds, y, base);
    Removed.insert(at);
    Removed.insert(op);
    if (act)
      Removed.insert(act);
  }

  /// The fused node for `op` (nullptr when its pattern does not fit).
  /// `out` is the value it writes; `act`: an activation follows, which only
  /// the contractions and Add/Mul absorb.
  ir::Node *rewrite(ir::Node &op, const Qp &q, bool act, ir::Value *out,
                    const std::string &base) {
    ir::Node *at = q.Node;
    if (op.Domain != "")
      return nullptr;
    const std::string &t = op.OpType;
    auto inputDq = [&](size_t i) -> std::optional<Dq> {
      if (!op.hasInput(i))
        return std::nullopt;
      std::optional<Dq> d = asDq(op.Inputs[i]);
      if (!d || !isByte(d->Data->Type.Type))
        return std::nullopt;
      return d;
    };
    ir::Value *yzp = zp(q.Zp, q.Type, base);

    if (t == "Conv" || t == "MatMul" || t == "Gemm") {
      std::optional<Dq> x = inputDq(0), w = inputDq(1);
      if (!w && op.hasInput(1))
        if (std::optional<Dq> d = asDq(op.Inputs[1]);
            d && d->Data->Const && isFourBit(d->Data->Type.Type))
          w = d;
      if (!x || !w || !x->PerTensor || !w->Data->Const)
        return nullptr;
      int64_t m = 0;
      const Shape &ws = w->Data->Type.Dims;
      bool transB = t == "Gemm" && op.attrInt("transB", 0);
      int64_t wFactor = 1; // the weights' codes times 16 (4-bit weights)
      if (t == "Conv") {
        m = ws[0];
        if (!w->PerTensor && w->Axis != 0)
          return nullptr;
      } else {
        if (ws.size() != 2)
          return nullptr;
        m = transB ? ws[0] : ws[1];
        if (!w->PerTensor && w->Axis != (transB ? 0 : 1))
          return nullptr;
        if (t == "Gemm" && (op.attrInt("transA", 0) || op.attrFloat("alpha", 1.0) != 1.0 ||
                            op.attrFloat("beta", 1.0) != 1.0))
          return nullptr;
      }
      if (!w->PerTensor && (w->Scale->Type.numel() != m ||
                            (w->Zp && w->Zp->Type.numel() != 1 && w->Zp->Type.numel() != m)))
        return nullptr;
      if (isFourBit(w->Data->Type.Type)) {
        // Stored in nibble pairs along the output channels, which register
        // tiles cover in pairs; a depthwise convolution's along its kernel
        // rows (the taps a tile writes out), as it runs a channel at a time.
        const int64_t channelAxis = t == "Conv" || transB ? 0 : 1;
        const bool depthwise = t == "Conv" && ws.size() >= 3 && ws[1] == 1 &&
                               op.attrInt("group", 1) > 1;
        wFactor = widenFourBit(*w, channelAxis,
                               depthwise ? (int64_t)ws.size() - 1 : channelAxis, base);
      }
      ir::Value *bias = nullptr;
      if (t != "MatMul" && op.hasInput(2)) {
        bias = intBias(op.Inputs[2], scalarOf(x->Scale), *w->Scale->Const, m, base, wFactor);
        if (!bias)
          return nullptr;
      }
      std::vector<ir::Value *> in = {x->Data,  x->Scale, zp(x->Zp, x->Data->Type.Type, base),
                                     w->Data,  w->Scale, zp(w->Zp, w->Data->Type.Type, base)};
      ir::Node *n;
      if (t == "Conv") {
        in.insert(in.end(), {q.Scale, yzp});
        if (bias)
          in.push_back(bias);
        n = add(at, "QLinearConv", "", 10, in, out, base + "/QLinearConv");
        copyAttrs(op, *n);
      } else if (t == "MatMul") {
        in.insert(in.end(), {q.Scale, yzp});
        n = add(at, "QLinearMatMul", "", 10, in, out, base + "/QLinearMatMul");
      } else {
        in.insert(in.end(), {bias, q.Scale, yzp});
        n = add(at, "QGemm", "com.microsoft", 1, in, out, base + "/QGemm");
        ir::Attribute tb;
        tb.I = transB;
        n->Attrs["transB"] = tb;
      }
      return n;
    }

    if (t == "Add" || t == "Mul") {
      std::optional<Dq> a = inputDq(0), b = inputDq(1);
      if (!a || !b || !a->PerTensor || !b->PerTensor ||
          a->Data->Type.Type != q.Type || b->Data->Type.Type != q.Type)
        return nullptr;
      return add(at, t == "Add" ? "QLinearAdd" : "QLinearMul", "com.microsoft", 1,
                 {a->Data, a->Scale, zp(a->Zp, q.Type, base), b->Data, b->Scale,
                  zp(b->Zp, q.Type, base), q.Scale, yzp},
                 out, base + "/QLinear" + t);
    }
    if (act)
      return nullptr; // the ops below absorb no activation

    if (t == "Concat") {
      std::vector<ir::Value *> in = {q.Scale, yzp};
      for (size_t i = 0; i < op.numInputs(); ++i) {
        std::optional<Dq> d = inputDq(i);
        if (!d || !d->PerTensor || d->Data->Type.Type != q.Type)
          return nullptr;
        in.insert(in.end(), {d->Data, d->Scale, zp(d->Zp, q.Type, base)});
      }
      ir::Node *n = add(at, "QLinearConcat", "com.microsoft", 1, in, at->Outputs[0],
                        base + "/QLinearConcat");
      n->Attrs["axis"] = op.Attrs.at("axis");
      return n;
    }

    std::optional<Dq> x = inputDq(0);
    if (!x || !x->PerTensor || x->Data->Type.Type != q.Type)
      return nullptr;
    for (size_t i = 1; i < op.numInputs(); ++i)
      if (op.hasInput(i) && !op.Inputs[i]->Const)
        return nullptr;
    std::vector<ir::Value *> unary = {x->Data, x->Scale, zp(x->Zp, q.Type, base), q.Scale,
                                      yzp};
    if (t == "AveragePool" || t == "GlobalAveragePool" || t == "Sigmoid" ||
        t == "LeakyRelu") {
      if (t == "AveragePool" && op.numInputs() != 1)
        return nullptr;
      ir::Node *n = add(at, "QLinear" + t, "com.microsoft", 1, unary, at->Outputs[0],
                        base + "/QLinear" + t);
      copyAttrs(op, *n);
      return n;
    }
    bool same = scalarOf(x->Scale) == scalarOf(q.Scale) && zpOf(x->Zp) == zpOf(q.Zp);
    if (!same)
      return nullptr;
    static const std::set<std::string> moves = {"MaxPool", "Reshape", "Flatten",
                                                "Transpose", "Squeeze", "Unsqueeze",
                                                "Identity"};
    if (moves.count(t)) {
      if (t == "MaxPool" && (op.Outputs.size() > 1 && op.hasOutput(1)))
        return nullptr;
      std::vector<ir::Value *> in = op.Inputs;
      in[0] = x->Data;
      ir::Node *n = add(at, t, "", t == "MaxPool" ? std::max<int64_t>(op.Opset, 12) : op.Opset, in,
                        at->Outputs[0], base + "/" + t);
      copyAttrs(op, *n);
      return n;
    }
    if (t == "Relu" || t == "Clip") {
      std::optional<std::pair<int64_t, int64_t>> b = actBounds(op, q);
      if (!b)
        return nullptr;
      addClip(at, q, x->Data, *b, at->Outputs[0], base);
      return at->Outputs[0]->Producer;
    }
    return nullptr;
  }

  ir::Graph &G;
  std::map<const ir::Value *, int> Uses;
  std::set<const ir::Node *> Removed;
  std::map<const ir::Node *, std::vector<std::unique_ptr<ir::Node>>> Inserted;
};

/// MatMul(A, DequantizeLinear(W)) or Gemm of constant 4- or 2-bit W -> MatMulNBits
/// (see the file comment). Returns the replacement, or null.
std::unique_ptr<ir::Node> weightOnlyMatMul(ir::Graph &g, const ir::Node &mm) {
  // MatMul(A, W), or Gemm(A, W[, bias]) with W or W^T and a bias of N values.
  const bool gemm = mm.OpType == "Gemm";
  if ((mm.OpType != "MatMul" && !gemm) || mm.Domain != "" || mm.Inputs.size() < 2 ||
      !mm.Inputs[0] || !mm.Inputs[1] || !mm.hasOutput(0))
    return nullptr;
  const bool transB = gemm && mm.attrInt("transB", 0) != 0;
  ir::Value *bias = gemm && mm.hasInput(2) ? mm.Inputs[2] : nullptr;
  if (gemm && (mm.Inputs.size() > 3 || mm.attrInt("transA", 0) != 0 ||
               mm.attrFloat("alpha", 1.0) != 1.0 || (bias && mm.attrFloat("beta", 1.0) != 1.0) ||
               mm.inShape(0).size() != 2))
    return nullptr;
  const ir::Node *dq = mm.Inputs[1]->Producer;
  if (!dq || dq->OpType != "DequantizeLinear" || dq->Domain != "" || !dq->hasInput(1))
    return nullptr;
  const ir::Value *w = dq->Inputs[0], *scale = dq->Inputs[1];
  const ir::Value *zp = dq->hasInput(2) ? dq->Inputs[2] : nullptr;
  const DType wt = w->Type.Type;
  if (!w->Const || !scale->Const || (zp && !zp->Const) || w->Type.rank() != 2 ||
      !(wt == DType::I4 || wt == DType::U4 || wt == DType::I2 || wt == DType::U2) ||
      scale->Type.Type != DType::F32 || mm.inDType(0) != DType::F32 ||
      mm.Outputs[0]->Type.Type != DType::F32 || mm.inShape(0).empty())
    return nullptr;
  // W is K x N, or N x K under transB: its K axis and its N axis.
  const int64_t kAxis = transB ? 1 : 0, nAxis = 1 - kAxis;
  const int64_t K = w->Type.Dims[(size_t)kAxis], N = w->Type.Dims[(size_t)nAxis];
  const int64_t bits = dtypeBits(wt);
  if (bias && (!bias->Const || bias->Type.Type != DType::F32 || bias->Type.numel() != N ||
               bias->Type.Dims.back() != N))
    return nullptr;
  const int64_t dqBlock = dq->Opset >= 21 ? dq->attrInt("block_size", 0) : 0;
  int64_t axis = dq->attrInt("axis", 1);
  if (axis < 0)
    axis += 2;
  // W's element (k, n), and where its scale and zero point are.
  auto wAt = [&](int64_t k, int64_t n) { return transB ? n * K + k : k * N + n; };
  std::function<int64_t(int64_t, int64_t)> at;
  int64_t block = 32; // MatMulNBits' block: any, for per-tensor and per-channel
  if (scale->Type.numel() == 1 && dqBlock == 0) {
    at = [](int64_t, int64_t) { return (int64_t)0; };
  } else if (dqBlock == 0 && axis == nAxis && scale->Type.numel() == N) {
    at = [](int64_t, int64_t n) { return n; };
  } else if (dqBlock > 0 && axis == kAxis && dqBlock % 16 == 0) {
    block = (dqBlock & (dqBlock - 1)) == 0 ? dqBlock : 16; // within one DQ block
    const int64_t kb = (K + dqBlock - 1) / dqBlock;
    at = [=](int64_t k, int64_t n) {
      return transB ? n * kb + k / dqBlock : (k / dqBlock) * N + n;
    };
  } else {
    return nullptr;
  }
  if (zp && zp->Type.numel() != scale->Type.numel())
    return nullptr;
  const int64_t kBlocks = (K + block - 1) / block, blob = block * bits / 8;
  const int64_t zpBytes = (kBlocks * bits + 7) / 8;
  const int64_t offset = isSignedInt(wt) ? int64_t(1) << (bits - 1) : 0;
  const Tensor &wv = *w->Const, &sv = *scale->Const;
  auto b = std::make_shared<Tensor>(DType::U8, Shape{N, kBlocks, blob});
  auto s = std::make_shared<Tensor>(DType::F32, Shape{N * kBlocks});
  auto z = std::make_shared<Tensor>(DType::U8, Shape{N * zpBytes});
  uint8_t *bp = b->mutableBytes().data(), *zpp = z->mutableBytes().data();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k)
      setSubByteCode(bp + n * kBlocks * blob, bits == 4 ? DType::U4 : DType::U2, k,
                     (uint8_t)(wv.intAt(wAt(k, n)) + offset));
    for (int64_t kb = 0; kb < kBlocks; ++kb) {
      int64_t i = at(kb * block, n);
      s->setDouble(n * kBlocks + kb, sv.doubleAt(i));
      setSubByteCode(zpp + n * zpBytes, bits == 4 ? DType::U4 : DType::U2, kb,
                     (uint8_t)((zp ? zp->Const->intAt(i) : 0) + offset));
    }
  }
  auto constant = [&](TensorPtr t, const std::string &base) {
    ir::Value *v = g.addValue(g.uniqueValueName(mm.Name + "/" + base), {t->dtype(), t->shape()});
    v->Const = std::move(t);
    return v;
  };
  auto n = std::make_unique<ir::Node>();
  n->Name = g.uniqueNodeName(mm.Name + "/MatMulNBits");
  n->OpType = "MatMulNBits";
  n->Domain = "com.microsoft";
  n->Opset = 1;
  n->Inputs = {mm.Inputs[0], constant(b, "B"), constant(s, "scales"), constant(z, "zero_points")};
  if (bias)
    n->Inputs.insert(n->Inputs.end(), {nullptr, bias});
  n->Outputs = mm.Outputs;
  n->Guard = mm.Guard;
  n->Attrs["K"] = ir::intAttr(K);
  n->Attrs["N"] = ir::intAttr(N);
  n->Attrs["bits"] = ir::intAttr(bits);
  n->Attrs["block_size"] = ir::intAttr(block);
  return n;
}

} // namespace

void fuseQdq(ir::Graph &g) {
  // What each 8-bit value stands for, before its QuantizeLinear is fused
  // away (mlcc check compares it with the float tensor).
  for (auto &n : g.Nodes)
    if (std::optional<Qp> q = asQ(n.get()); q && n->hasInput(0)) {
      ir::Value *out = n->Outputs[0];
      if (out->QuantizedFrom.empty()) // realize (--quantize) records the model's name
        out->QuantizedFrom = n->Inputs[0]->Name;
      out->DequantScale = scalarOf(q->Scale);
      out->DequantZeroPoint = zpOf(q->Zp);
    }
  Fuser(g).run();
  for (auto &n : g.Nodes)
    if (std::unique_ptr<ir::Node> r = weightOnlyMatMul(g, *n)) {
      for (ir::Value *out : r->Outputs)
        if (out)
          out->Producer = r.get();
      n = std::move(r);
    }
}

} // namespace mlcc::passes
