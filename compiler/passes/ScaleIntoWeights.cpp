//===- ScaleIntoWeights.cpp - A per-channel scale moved onto the weights ---===//
//
// scale-into-weights: a pointwise convolution (1x1, one group, the plan's
// pixels-as-columns tile reading its weights in place) whose input is
// Mul(x, s), s a per-channel scale computed at run time ([1, C, 1, 1] or
// [C, 1, 1]: the squeeze-and-excitation block of EfficientNet, MnasNet,
// MobileNetV3), reads x and the weights scaled by s instead:
//
//   Conv(Mul(x, s), W)  ==  Conv(x, Mul(W, s))     (W [M, C, 1, 1])
//
// The product over C x H x W elements (a pass over the whole tensor) becomes
// one over M x C weights; the sums are the same up to rounding (each term
// is x*s*w, in another order). The Mul must have no other reader.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include <algorithm>

namespace mlcc::passes {

namespace {

/// Whether `s` is a scale per channel of a [N, C, H, W] tensor with C
/// channels: [1, C, 1, 1] or [C, 1, 1].
bool perChannel(const Shape &s, int64_t c) {
  if (s.size() == 3)
    return s[0] == c && s[1] == 1 && s[2] == 1;
  return s.size() == 4 && s[0] == 1 && s[1] == c && s[2] == 1 && s[3] == 1;
}

bool unbounded(const ir::Value *v) { return v && v->Bounded.empty(); }

} // namespace

bool scaleIntoWeights(ir::Graph &g) {
  std::map<const ir::Value *, int> uses = g.useCounts();
  std::vector<std::pair<ir::Node *, std::unique_ptr<ir::Node>>> added; // before which node
  for (auto &np : g.Nodes) {
    ir::Node &n = *np;
    if (n.OpType != "Conv" || !n.Domain.empty() || !n.Plan.Register || !n.Plan.PixelColumns ||
        n.Plan.PackedInput >= 0 || n.attrInt("group", 1) != 1 || n.Inputs.size() < 2)
      continue;
    ir::Value *x = n.Inputs[0], *w = n.Inputs[1];
    if (!x || !w || !w->Const || w->Type.Type != DType::F32 || x->Type.Type != DType::F32)
      continue;
    const Shape &ws = w->Type.Dims, &xs = x->Type.Dims;
    if (ws.size() != 4 || ws[2] != 1 || ws[3] != 1 || xs.size() != 4 || xs[1] != ws[1])
      continue;
    ir::Node *mul = x->Producer;
    if (!mul || mul->OpType != "Mul" || !mul->Domain.empty() || mul->Guard != n.Guard ||
        uses[x] != 1 || g.isGraphOutput(x) || mul->Inputs.size() != 2 || !unbounded(x))
      continue;
    ir::Value *d = nullptr, *s = nullptr;
    for (int i = 0; i < 2; ++i) {
      ir::Value *a = mul->Inputs[(size_t)i], *b = mul->Inputs[(size_t)(1 - i)];
      if (a && b && a->Type.Dims == xs && perChannel(b->Type.Dims, xs[1]) &&
          a->Type.Type == DType::F32 && b->Type.Type == DType::F32 && unbounded(a) &&
          unbounded(b))
        d = a, s = b;
    }
    if (!d)
      continue;
    auto scale = std::make_unique<ir::Node>();
    scale->Name = g.uniqueNodeName(n.Name + "/scale_weights");
    scale->OpType = "Mul";
    scale->Opset = 13;
    scale->Inputs = {w, s};
    scale->Guard = n.Guard;
    ir::Value *scaled = g.addValue(g.uniqueValueName(scale->Name), {DType::F32, ws});
    scaled->Producer = scale.get();
    scale->Outputs = {scaled};
    n.Inputs[0] = d;
    n.Inputs[1] = scaled;
    --uses[x];
    added.push_back({&n, std::move(scale)});
  }
  if (added.empty())
    return false;
  // Each scale right before its convolution (after its scale's producer,
  // which came before the Mul it replaces).
  std::vector<std::unique_ptr<ir::Node>> nodes;
  size_t next = 0;
  for (auto &np : g.Nodes) {
    if (next < added.size() && np.get() == added[next].first)
      nodes.push_back(std::move(added[next++].second));
    nodes.push_back(std::move(np));
  }
  g.Nodes = std::move(nodes);
  return true;
}

} // namespace mlcc::passes
