//===- Math.cpp - Unary math: Neg, Abs, Sqrt, Exp, trig, Round, IsNaN, ... -===//
//
// One-input elementwise functions. Float-only functions compute in the
// compute type (f16/bf16 in f32); Neg, Abs and Sign also accept integers.
// IsNaN and IsInf produce Bool. Round rounds half to even.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferFloatPredicate(ir::Node &n) {
  requireFloat(n, 0);
  n.setOutput(0, DType::Bool, n.inShape(0));
}

void addFloatUnary(OpRegistry &R, const char *name, UnOp op) {
  addElementwise(
      R, name, 1, [op](const std::vector<Expr> &a) { return unary(op, a[0]); },
      inferFloatUnary);
}

Expr signOf(const Expr &x) {
  Expr one = constLike(x, 1), minusOne = constLike(x, -1);
  if (isUnsignedInt(x->Type))
    return select(gt(x, 0.0), one, constLike(x, 0));
  // x itself for zero (and NaN, which propagates).
  return select(gt(x, 0.0), one, select(lt(x, 0.0), minusOne, x));
}

void lowerIsInf(LowerCtx &c) {
  const ir::Node &n = c.node();
  bool pos = n.attrInt("detect_positive", 1) != 0;
  bool neg = n.attrInt("detect_negative", 1) != 0;
  lowerElementwise(c, [&](const std::vector<Expr> &a) {
    Expr inf = unary(UnOp::IsInf, a[0]);
    if (pos && neg)
      return inf;
    if (!pos && !neg)
      return boolConst(false);
    return land(inf, pos ? gt(a[0], 0.0) : lt(a[0], 0.0));
  });
}

} // namespace

MLCC_OPS(Math) {
  addElementwise(
      R, "Neg", 1, [](const std::vector<Expr> &a) { return -a[0]; },
      inferSignedOrFloatUnary);
  addElementwise(
      R, "Abs", 1, [](const std::vector<Expr> &a) { return abs(a[0]); },
      inferNumericUnary);
  addElementwise(
      R, "Reciprocal", 1,
      [](const std::vector<Expr> &a) { return 1.0 / a[0]; }, inferFloatUnary);
  addElementwise(
      R, "Sign", 9, [](const std::vector<Expr> &a) { return signOf(a[0]); },
      inferNumericUnary);

  const std::pair<const char *, UnOp> floatOps[] = {
      {"Sqrt", UnOp::Sqrt},   {"Exp", UnOp::Exp},     {"Log", UnOp::Log},
      {"Sin", UnOp::Sin},     {"Cos", UnOp::Cos},     {"Tan", UnOp::Tan},
      {"Asin", UnOp::Asin},   {"Acos", UnOp::Acos},   {"Atan", UnOp::Atan},
      {"Sinh", UnOp::Sinh},   {"Cosh", UnOp::Cosh},   {"Tanh", UnOp::Tanh},
      {"Asinh", UnOp::Asinh}, {"Acosh", UnOp::Acosh}, {"Atanh", UnOp::Atanh},
      {"Erf", UnOp::Erf},     {"Floor", UnOp::Floor}, {"Ceil", UnOp::Ceil},
      {"Round", UnOp::Round}};
  for (auto &[name, op] : floatOps)
    addFloatUnary(R, name, op);

  addElementwise(
      R, "IsNaN", 9,
      [](const std::vector<Expr> &a) { return unary(UnOp::IsNaN, a[0]); },
      inferFloatPredicate);
  R.add({.Name = "IsInf", .SinceVersion = 10, .Fusion = FusionClass::Elementwise,
         .Infer = inferFloatPredicate, .Lower = lowerIsInf});
}

} // namespace mlcc::ops
