//===- ReverseSequence.cpp - ReverseSequence ------------------------------===//
//
// For every batch entry b, reverses the first sequence_lens[b] elements along
// the time axis and copies the rest. The lengths are run-time data, clamped
// into [0, time extent].
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void axesOf(const ir::Node &n, int64_t &batch, int64_t &time) {
  const Shape &x = n.inShape(0);
  if (x.size() < 2)
    n.error() << "input must have rank 2 or more";
  batch = n.attrInt("batch_axis", 1);
  time = n.attrInt("time_axis", 0);
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    n.error() << "batch_axis and time_axis must be 0 and 1 in some order";
}

void inferReverseSequence(ir::Node &n) {
  int64_t batch, time;
  axesOf(n, batch, time);
  requireDType(n, 1, {DType::I64});
  if (n.inShape(1) != Shape{n.inShape(0)[(size_t)batch]})
    n.error() << "sequence_lens has shape " << shapeToString(n.inShape(1))
              << ", expected [" << n.inShape(0)[(size_t)batch] << "]";
  n.setOutput(0, n.inType(0));
}

void lowerReverseSequence(LowerCtx &c) {
  int64_t batch, time;
  axesOf(c.node(), batch, time);
  TensorRef x = c.in(0), lens = c.in(1), y = c.out(0);
  int64_t tlen = x.shape()[(size_t)time];
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr len = clamp(toIndex(lens.load({o[(size_t)batch]})), indexConst(0),
                     indexConst(tlen));
    Expr t = o[(size_t)time];
    std::vector<Expr> src = o;
    src[(size_t)time] = select(lt(t, len), len - 1 - t, t);
    y.store(o, x.load(src));
  });
}

} // namespace

MLCC_OPS(ReverseSequence) {
  R.add({.Name = "ReverseSequence", .SinceVersion = 10,
         .Fusion = FusionClass::Injective, .Infer = inferReverseSequence,
         .Lower = lowerReverseSequence});
}

} // namespace mlcc::ops
