//===- Trilu.cpp - Trilu --------------------------------------------------===//
//
// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two
// axes and zeroes the rest. The diagonal offset k (optional input 1) does not
// change the output shape, so it is read at run time.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferTrilu(ir::Node &n) {
  if (n.inShape(0).size() < 2)
    n.error() << "input must have rank 2 or more, got "
              << shapeToString(n.inShape(0));
  if (n.hasInput(1)) {
    if (!isInteger(n.inDType(1)))
      n.error() << "k must be an integer tensor";
    if (numElements(n.inShape(1)) != 1)
      n.error() << "k must be a scalar";
  }
  n.setOutput(0, n.inType(0));
}

void lowerTrilu(LowerCtx &c) {
  bool upper = c.node().attrInt("upper", 1) != 0;
  TensorRef x = c.in(0), y = c.out(0);
  Expr k = indexConst(0);
  if (c.hasIn(1))
    k = toIndex(c.in(1).loadFlat(indexConst(0)));
  DType ct = y.computeType();
  Expr zero = isFloat(ct) ? constant(ct, 0) : constantInt(ct, 0);
  size_t r = y.rank();
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr diff = o[r - 1] - o[r - 2];
    Expr keep = upper ? ge(diff, k) : le(diff, k);
    y.store(o, select(keep, x.load(o), zero));
  });
}

} // namespace

MLCC_OPS(Trilu) {
  R.add({.Name = "Trilu", .SinceVersion = 14, .Fusion = FusionClass::Injective,
         .Infer = inferTrilu, .Lower = lowerTrilu});
}

} // namespace mlcc::ops
