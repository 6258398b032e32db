//===- CumSum.cpp - CumSum, CumProd ---------------------------------------===//
//
// Running sum/product along one axis, optionally exclusive (the element
// itself is not included) and/or reversed. The axis (input 1) selects the
// loop structure, so it must be a compile-time constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t cumAxis(const ir::Node &n) {
  std::vector<int64_t> a = n.constInputInts(1, "the axis selects the scan direction");
  if (a.size() != 1)
    n.error() << "axis must be a scalar";
  return normalizeAxis(n, a[0], (int64_t)n.inShape(0).size());
}

void inferCum(ir::Node &n) {
  requireNumeric(n, 0);
  if (n.inShape(0).empty())
    n.error() << "input must have rank 1 or more";
  cumAxis(n);
  n.setOutput(0, n.inType(0));
}

void lowerCum(LowerCtx &c, bool product) {
  const ir::Node &n = c.node();
  int64_t axis = cumAxis(n);
  bool exclusive = n.attrInt("exclusive", 0) != 0;
  bool reverse = n.attrInt("reverse", 0) != 0;
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  DType ct = y.computeType();
  // Extents known when the kernel runs (an axis may follow a bounded
  // dimension, the summed one too).
  std::vector<Expr> outer = x.extents();
  Expr len = outer[(size_t)axis];
  outer.erase(outer.begin() + axis);
  b.loops(outer, [&](const std::vector<Expr> &o) {
    Local acc = b.local("acc", constant(ct, product ? 1 : 0));
    b.loopTo("k", len, [&](Expr k) {
      std::vector<Expr> idx = o;
      idx.insert(idx.begin() + axis, reverse ? len - indexConst(1) - k : k);
      Expr v = x.load(idx);
      Expr next = product ? acc.get() * v : acc.get() + v;
      if (exclusive) {
        y.store(idx, acc.get());
        b.set(acc, next);
      } else {
        b.set(acc, next);
        y.store(idx, acc.get());
      }
    });
  }, "o");
}

} // namespace

MLCC_OPS(CumSum) {
  R.add({.Name = "CumSum", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferCum, .Lower = [](LowerCtx &c) { lowerCum(c, false); },
         .RunTimeExtents = true});
  R.add({.Name = "CumProd", .SinceVersion = 26, .Fusion = FusionClass::Opaque,
         .Infer = inferCum, .Lower = [](LowerCtx &c) { lowerCum(c, true); },
         .RunTimeExtents = true});
}

} // namespace mlcc::ops
