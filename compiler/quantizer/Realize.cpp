//===- Realize.cpp - The quantized model in QDQ form -----------------------===//
//
// From the annotation and the calibrated ranges:
//
//  - each quantized tensor t gets QuantizeLinear -> DequantizeLinear right
//    after its producer, and every reader of t (graph outputs included)
//    reads the dequantized value. Activations are uint8, asymmetric:
//    scale = (hi - lo) / 255, zero point = round(-lo / scale), over the
//    calibrated range widened to contain 0 (so 0 is exact). Tensors that
//    take their parameters from another (Annotation::SameAs) reuse its
//    scale and zero point exactly.
//  - the weights of each int8 Conv, MatMul and Gemm become int8, symmetric
//    per output channel (scale = max |w| / 127 of the channel, zero point
//    0, values in [-127, 127]; 63 and [-63, 63] with --reduce-range),
//    dequantized by a per-axis DequantizeLinear;
//    With --weight-bits 4: int4, scale = max |w| / 7, values in [-7, 7]
//    (fuse-qdq gives the integer kernels them as int8, 16 times the code,
//    and lower-to-program stores them two a byte);
//  - their bias becomes int32 at scale x_scale * w_scale of each channel
//    (zero point 0), dequantized the same way.
//
// The result is an ordinary QDQ model: fuse-qdq turns it into integer ops,
// with the requantization multipliers (x_scale * w_scale / y_scale per
// channel) folded to constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/quantizer/Quantize.h"

#include <algorithm>
#include <cmath>

namespace mlcc::quantizer {

namespace {

struct Params {
  float Scale = 1.0f;
  int64_t Zp = 0;
};

Params uint8Params(const Range &r) {
  double lo = std::min(r.Lo, 0.0), hi = std::max(r.Hi, 0.0);
  Params p;
  double span = hi - lo;
  p.Scale = span > 0 ? (float)(span / 255.0) : 1.0f;
  p.Zp = (int64_t)std::clamp(std::nearbyint(-lo / p.Scale), 0.0, 255.0);
  return p;
}

class Writer {
public:
  explicit Writer(ir::Graph &g) : G(g) {}

  ir::Value *constant(Tensor t, const std::string &base) {
    ir::Value *v = G.addValue(G.uniqueValueName(base), {t.dtype(), t.shape()});
    v->Const = std::make_shared<Tensor>(std::move(t));
    return v;
  }

  /// A new node with one output of type `type`, to be placed by the caller.
  std::unique_ptr<ir::Node> node(const std::string &op, std::vector<ir::Value *> inputs,
                                 const std::string &base, ir::TensorType type) {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(base);
    n->OpType = op;
    n->Opset = 13;
    n->Inputs = std::move(inputs);
    ir::Value *out = G.addValue(G.uniqueValueName(base), std::move(type));
    out->Producer = n.get();
    n->Outputs = {out};
    return n;
  }

  ir::Graph &G;
};

/// Per-channel symmetric int8 weights along `axis`: the DequantizeLinear
/// node that gives them back as float, and the scales.
std::unique_ptr<ir::Node> quantizeWeights(Writer &w, const ir::Value *weights, int64_t axis,
                                          int weightMax, int bits, std::vector<float> &scales) {
  const DType type = bits == 4 ? DType::I4 : DType::I8;
  if (bits == 4)
    weightMax = 7;
  const Tensor &t = *weights->Const;
  const Shape &s = t.shape();
  int64_t channels = s[(size_t)axis], inner = 1;
  for (size_t d = (size_t)axis + 1; d < s.size(); ++d)
    inner *= s[d];
  int64_t n = t.numel();
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };
  std::vector<double> maxAbs(channels, 0.0);
  for (int64_t i = 0; i < n; ++i)
    maxAbs[channelOf(i)] = std::max(maxAbs[channelOf(i)], std::fabs(t.doubleAt(i)));
  scales.assign(channels, 1.0f);
  for (int64_t c = 0; c < channels; ++c)
    if (maxAbs[c] > 0)
      scales[c] = (float)(maxAbs[c] / weightMax);
  std::vector<int64_t> q(n);
  for (int64_t i = 0; i < n; ++i)
    q[i] = (int64_t)std::clamp(std::nearbyint(t.doubleAt(i) / scales[channelOf(i)]),
                               -(double)weightMax, (double)weightMax);
  std::vector<double> sv(scales.begin(), scales.end());
  ir::Value *data = w.constant(Tensor::fromInts(type, s, q),
                               weights->Name + (bits == 4 ? "_int4" : "_int8"));
  ir::Value *scale =
      w.constant(Tensor::fromDoubles(DType::F32, {channels}, sv), weights->Name + "_scale");
  ir::Value *zp = w.constant(Tensor::fromInts(type, {channels}, std::vector<int64_t>(channels, 0)),
                             weights->Name + "_zero_point");
  auto dq = w.node("DequantizeLinear", {data, scale, zp}, weights->Name + "_dequantized",
                   {DType::F32, s});
  if (bits == 4)
    dq->Opset = 21; // int4 data
  ir::Attribute ax;
  ax.I = axis;
  dq->Attrs["axis"] = ax;
  return dq;
}

/// The bias as int32 at scale x_scale * w_scale[c], dequantized.
std::unique_ptr<ir::Node> quantizeBias(Writer &w, const ir::Value *bias, float xs,
                                       const std::vector<float> &ws) {
  const Tensor &t = *bias->Const;
  int64_t m = t.numel();
  std::vector<int64_t> q(m);
  std::vector<double> sv(m);
  for (int64_t c = 0; c < m; ++c) {
    float s = xs * ws[(size_t)c];
    sv[c] = s;
    q[c] = (int64_t)std::clamp(s > 0 ? std::nearbyint(t.doubleAt(c) / s) : 0.0, -2147483647.0,
                               2147483647.0);
  }
  ir::Value *data = w.constant(Tensor::fromInts(DType::I32, {m}, q), bias->Name + "_int32");
  ir::Value *scale = w.constant(Tensor::fromDoubles(DType::F32, {m}, sv), bias->Name + "_scale");
  auto dq = w.node("DequantizeLinear", {data, scale}, bias->Name + "_dequantized",
                   {DType::F32, {m}});
  ir::Attribute ax;
  ax.I = 0;
  dq->Attrs["axis"] = ax;
  return dq;
}

} // namespace

void realize(ir::Graph &g, const Annotation &a, const std::map<std::string, Range> &ranges,
             const QuantizeOptions &options) {
  Writer w(g);
  std::map<std::string, Params> params;
  for (const std::string &t : a.Tensors) {
    std::string root = t;
    while (a.SameAs.count(root))
      root = a.SameAs.at(root);
    auto r = ranges.find(root);
    MLCC_CHECK(r != ranges.end(), "no calibrated range for tensor '" << root << "'");
    params[t] = uint8Params(r->second);
  }

  // New nodes go before (weights) or after (activations) existing ones.
  std::map<const ir::Node *, std::vector<std::unique_ptr<ir::Node>>> before, after;
  std::vector<std::unique_ptr<ir::Node>> atStart;

  for (auto &np : g.Nodes) {
    ir::Node &n = *np;
    if (!a.Nodes.count(n.Name) || n.Domain != "" ||
        (n.OpType != "Conv" && n.OpType != "MatMul" && n.OpType != "Gemm") ||
        !n.hasInput(1) || !n.Inputs[1]->Const)
      continue;
    int64_t axis = n.OpType == "Conv" ? 0 : (n.OpType == "Gemm" && n.attrInt("transB", 0)) ? 0 : 1;
    std::vector<float> ws;
    auto wdq = quantizeWeights(w, n.Inputs[1], axis, options.WeightMax, options.WeightBits, ws);
    n.Inputs[1] = wdq->Outputs[0];
    before[&n].push_back(std::move(wdq));
    if (n.OpType != "MatMul" && n.hasInput(2)) {
      auto bdq = quantizeBias(w, n.Inputs[2], params.at(n.Inputs[0]->Name).Scale, ws);
      n.Inputs[2] = bdq->Outputs[0];
      before[&n].push_back(std::move(bdq));
    }
  }

  for (const std::string &t : a.Tensors) {
    ir::Value *v = g.findValue(t);
    MLCC_CHECK(v, "quantized tensor '" << t << "' is not in the graph");
    const Params &p = params.at(t);
    ir::Value *scale = w.constant(Tensor::fromDoubles(DType::F32, {}, {p.Scale}), t + "_scale");
    ir::Value *zp = w.constant(Tensor::fromInts(DType::U8, {}, {p.Zp}), t + "_zero_point");
    if (options.QuantizeIo && g.isGraphInput(v)) {
      // The caller passes uint8 data: only the DequantizeLinear remains.
      auto dq = w.node("DequantizeLinear", {v, scale, zp}, t + "_dequantized",
                       {DType::F32, v->Type.Dims});
      g.replaceAllUses(v, dq->Outputs[0]);
      v->Type.Type = DType::U8;
      v->QuantScale = p.Scale;
      v->QuantZeroPoint = p.Zp;
      atStart.push_back(std::move(dq));
      continue;
    }
    auto q = w.node("QuantizeLinear", {v, scale, zp}, t + "_quantized", {DType::U8, v->Type.Dims});
    auto dq = w.node("DequantizeLinear", {q->Outputs[0], scale, zp}, t + "_dequantized",
                     {DType::F32, v->Type.Dims});
    q->Outputs[0]->QuantizedFrom = t; // the model's name, kept when v is renamed below
    bool output = g.isGraphOutput(v);
    g.replaceAllUses(v, dq->Outputs[0]);
    if (output && options.QuantizeIo) {
      // The model writes the uint8 data (under the output's name).
      ir::Value *qv = q->Outputs[0];
      std::replace(g.Outputs.begin(), g.Outputs.end(), dq->Outputs[0], qv);
      g.swapNames(v, qv);
      qv->QuantScale = p.Scale;
      qv->QuantZeroPoint = p.Zp;
    } else if (output) { // the model's output keeps its name
      g.swapNames(v, dq->Outputs[0]);
    }
    auto &slot = v->Producer ? after[v->Producer] : atStart;
    slot.push_back(std::move(q));
    slot.push_back(std::move(dq));
  }

  std::vector<std::unique_ptr<ir::Node>> nodes;
  for (auto &n : atStart)
    nodes.push_back(std::move(n));
  // What is inserted before or after a node runs under its guard (a node
  // of an If's branch: ir::Node::Guard).
  for (auto &n : g.Nodes) {
    ir::Node *raw = n.get();
    for (auto &b : before[raw]) {
      b->Guard = raw->Guard;
      nodes.push_back(std::move(b));
    }
    nodes.push_back(std::move(n));
    for (auto &b : after[raw]) {
      b->Guard = raw->Guard;
      nodes.push_back(std::move(b));
    }
  }
  g.Nodes = std::move(nodes);
}

} // namespace mlcc::quantizer
