//===- Loss.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------===//
//
// Scores/log-probabilities have shape [N, C, D1..Dk], labels [N, D1..Dk].
// Per sample (n, d...) with class c = label:
//   loss = -logp[n, c, d...] * w,   w = weight[c] (1 without weights),
// and loss = w = 0 where the label equals ignore_index. Reductions: "none"
// keeps the per-sample losses, "sum" adds them, "mean" divides the sum by
// the sum of the per-sample weights w.
//
// SoftmaxCrossEntropyLoss computes logp as the log-softmax of the scores
// over C (max-subtracted) and can return it as its second output.
//
// Labels outside [0, C) that are not ignore_index are clamped into range.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

std::string reductionOf(const ir::Node &n) {
  std::string red = n.attrString("reduction", "mean");
  if (red != "none" && red != "sum" && red != "mean")
    n.error() << "reduction must be none, sum or mean, got '" << red << "'";
  return red;
}

void inferLoss(ir::Node &n, bool softmax) {
  requireFloat(n, 0);
  requireDType(n, 1, {DType::I32, DType::I64});
  const Shape &x = n.inShape(0), &t = n.inShape(1);
  if (x.size() < 2)
    n.error() << "input must have rank 2 or more, got " << shapeToString(x);
  Shape expect = {x[0]};
  expect.insert(expect.end(), x.begin() + 2, x.end());
  if (t != expect)
    n.error() << "labels have shape " << shapeToString(t) << ", expected "
              << shapeToString(expect);
  if (n.hasInput(2)) {
    if (n.inDType(2) != n.inDType(0))
      n.error() << "weights must have the type of the input";
    if (n.inShape(2) != Shape{x[1]})
      n.error() << "weights have shape " << shapeToString(n.inShape(2))
                << ", expected [" << x[1] << "]";
  }
  std::string red = reductionOf(n);
  n.setOutput(0, n.inDType(0), red == "none" ? t : Shape{});
  if (n.Outputs.size() > 1) {
    if (!softmax)
      n.error() << "has " << n.Outputs.size() << " outputs, expected 1";
    n.setOutput(1, n.inDType(0), x);
  }
}

void lowerLoss(LowerCtx &c, bool softmax) {
  const ir::Node &node = c.node();
  TensorRef x = c.in(0), labels = c.in(1), y = c.out(0);
  std::optional<TensorRef> weight, logProb;
  if (c.hasIn(2))
    weight = c.in(2);
  if (softmax && c.hasOut(1))
    logProb = c.out(1);
  std::string red = reductionOf(node);
  bool hasIgnore = node.hasAttr("ignore_index");
  int64_t ignore = node.attrInt("ignore_index", 0);
  const Shape &xs = x.shape();
  int64_t C = xs[1];
  Shape samples = labels.shape();
  KernelBuilder &b = c.b();
  DType t = x.computeType();

  auto xIndex = [&](const std::vector<Expr> &s, Expr cls) {
    std::vector<Expr> xi = {s[0], cls};
    xi.insert(xi.end(), s.begin() + 1, s.end());
    return xi;
  };

  std::optional<Local> lossSum, weightSum;
  if (red != "none") {
    lossSum = b.local("loss_sum", constant(t, 0));
    weightSum = b.local("weight_sum", constant(t, 0));
  }
  b.loops(samples, [&](const std::vector<Expr> &s) {
    // Log-sum-exp over the classes for the softmax form.
    std::optional<Local> lse;
    if (softmax) {
      Local mx = b.local("mx", lowestValue(t));
      b.loop("k", C, [&](Expr k) { b.set(mx, max(mx.get(), x.load(xIndex(s, k)))); });
      Local sum = b.local("sum", constant(t, 0));
      b.loop("k", C, [&](Expr k) {
        b.set(sum, sum.get() + exp(x.load(xIndex(s, k)) - mx.get()));
      });
      lse = b.local("lse", mx.get() + log(sum.get()));
      if (logProb)
        b.loop("k", C, [&](Expr k) {
          logProb->store(xIndex(s, k), x.load(xIndex(s, k)) - lse->get());
        });
    }
    Local label = b.local("label", toIndex(labels.load(s)));
    Expr cls = clamp(label.get(), indexConst(0), indexConst(C - 1));
    Expr lp = x.load(xIndex(s, cls));
    if (softmax)
      lp = lp - lse->get();
    Expr w = weight ? weight->load({cls}) : constant(t, 1);
    if (hasIgnore)
      w = select(eq(label.get(), indexConst(ignore)), constant(t, 0), w);
    Local wl = b.local("w", w);
    // -lp * w, written so that an ignored sample gives +0.
    Expr loss = select(eq(wl.get(), 0.0), constant(t, 0), -(lp * wl.get()));
    if (red == "none") {
      y.store(s, loss);
    } else {
      b.set(*lossSum, lossSum->get() + loss);
      b.set(*weightSum, weightSum->get() + wl.get());
    }
  }, "s");
  if (red == "sum")
    y.storeFlat(indexConst(0), lossSum->get());
  else if (red == "mean")
    y.storeFlat(indexConst(0), lossSum->get() / weightSum->get());
}

} // namespace

MLCC_OPS(Loss) {
  R.add({.Name = "NegativeLogLikelihoodLoss", .SinceVersion = 12,
         .Fusion = FusionClass::Opaque,
         .Infer = [](ir::Node &n) { inferLoss(n, false); },
         .Lower = [](LowerCtx &c) { lowerLoss(c, false); }});
  R.add({.Name = "SoftmaxCrossEntropyLoss", .SinceVersion = 12,
         .Fusion = FusionClass::Opaque,
         .Infer = [](ir::Node &n) { inferLoss(n, true); },
         .Lower = [](LowerCtx &c) { lowerLoss(c, true); }});
}

} // namespace mlcc::ops
