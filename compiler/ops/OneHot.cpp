//===- OneHot.cpp - OneHot ------------------------------------------------===//
//
// output[..., d, ...] = values[1] (on) where the index at that position
// equals d, values[0] (off) elsewhere. The depth determines the output shape
// and must be a compile-time constant; indices and values are run-time data.
// Negative indices count from the end (opset 11); out-of-range indices give
// a row of off values.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t oneHotDepth(const ir::Node &n) {
  TensorPtr t = n.constInput(1, "the depth determines the output shape");
  if (t->numel() != 1)
    n.error() << "depth must be a scalar";
  double d = t->doubleAt(0);
  if (!(d >= 1))
    n.error() << "depth must be positive, got " << d;
  return (int64_t)d;
}

int64_t oneHotAxis(const ir::Node &n) {
  int64_t r = (int64_t)n.inShape(0).size();
  int64_t axis = n.attrInt("axis", -1);
  if (axis < 0)
    axis += r + 1;
  if (axis < 0 || axis > r)
    n.error() << "axis " << n.attrInt("axis", -1) << " is out of range for rank "
              << r + 1;
  return axis;
}

void inferOneHot(ir::Node &n) {
  requireNumeric(n, 0);
  int64_t depth = oneHotDepth(n);
  int64_t axis = oneHotAxis(n);
  if (numElements(n.inShape(2)) != 2)
    n.error() << "values must have two elements [off, on]";
  Shape out = n.inShape(0);
  out.insert(out.begin() + axis, depth);
  n.setOutput(0, n.inDType(2), out);
}

void lowerOneHot(LowerCtx &c) {
  int64_t depth = oneHotDepth(c.node());
  int64_t axis = oneHotAxis(c.node());
  TensorRef ind = c.in(0), vals = c.in(2), y = c.out(0);
  Expr off = vals.loadFlat(indexConst(0)), on = vals.loadFlat(indexConst(1));
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> ii = o;
    ii.erase(ii.begin() + axis);
    Expr v = ind.load(ii);
    if (isFloat(v->Type))
      v = unary(UnOp::Trunc, v);
    Expr i = toIndex(v);
    if (c.node().Opset >= 11)
      i = select(lt(i, indexConst(0)), i + depth, i);
    y.store(o, select(eq(i, o[(size_t)axis]), on, off));
  });
}

} // namespace

MLCC_OPS(OneHot) {
  R.add({.Name = "OneHot", .SinceVersion = 9, .Fusion = FusionClass::Injective,
         .Infer = inferOneHot, .Lower = lowerOneHot});
}

} // namespace mlcc::ops
