//===- Arithmetic.cpp - Add, Sub, Mul, Div, Mod, Pow, Min, Max, Sum, Mean -===//
//
// Numpy-broadcasting arithmetic (opset 7 and later; the legacy `broadcast`
// attribute of opsets 1-6 is not supported). Integer division truncates
// toward zero as in C; Mod follows the sign of the divisor unless fmod=1.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferNumericBroadcast(ir::Node &n) {
  for (size_t i = 0; i < n.Inputs.size(); ++i)
    if (n.hasInput(i))
      requireNumeric(n, i);
  inferBroadcast(n);
}

/// Pow: the exponent may have another type than the base (opset 12+).
void inferPow(ir::Node &n) {
  requireNumeric(n, 0);
  requireNumeric(n, 1);
  n.setOutput(0, n.inDType(0),
              broadcastShapes(n, {n.inShape(0), n.inShape(1)}));
}

void lowerPow(LowerCtx &c) {
  DType baseType = c.in(0).computeType();
  lowerElementwise(c, [&](const std::vector<Expr> &a) {
    // Compute in double for integers (exact for the small results ONNX
    // tests use), in the base's float type otherwise.
    DType ft = isFloat(baseType) ? baseType : DType::F64;
    Expr r = pow(cast(ft, a[0]), cast(ft, a[1]));
    return cast(baseType, r);
  });
}

void lowerMod(LowerCtx &c) {
  bool fmod = c.node().attrInt("fmod", 0) != 0;
  bool isF = isFloat(c.node().inDType(0));
  if (isF && !fmod)
    c.node().error() << "fmod must be 1 for floating-point inputs";
  lowerElementwise(c, [&](const std::vector<Expr> &a) {
    return fmod ? a[0] % a[1] : floorMod(a[0], a[1]);
  });
}

void lowerVariadic(LowerCtx &c, BinOp op, bool mean) {
  size_t count = 0;
  for (size_t i = 0; i < c.node().Inputs.size(); ++i)
    if (c.hasIn(i))
      ++count;
  lowerElementwise(c, [&](const std::vector<Expr> &a) {
    Expr acc = a[0];
    for (size_t i = 1; i < a.size(); ++i)
      acc = binary(op, acc, a[i]);
    if (mean)
      acc = acc / (double)count;
    return acc;
  });
}

void addBinary(OpRegistry &R, const char *name, int64_t since,
               std::function<Expr(Expr, Expr)> fn) {
  OpSchema s;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::Elementwise;
  s.Infer = inferNumericBroadcast;
  s.Lower = [fn](LowerCtx &c) {
    lowerElementwise(c, [&](const std::vector<Expr> &a) { return fn(a[0], a[1]); });
  };
  R.add(s);
}

void addVariadic(OpRegistry &R, const char *name, int64_t since, BinOp op,
                 bool mean) {
  OpSchema s;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::Elementwise;
  s.Infer = inferNumericBroadcast;
  s.Lower = [op, mean](LowerCtx &c) { lowerVariadic(c, op, mean); };
  R.add(s);
}

} // namespace

MLCC_OPS(Arithmetic) {
  addBinary(R, "Add", 7, [](Expr a, Expr b) { return a + b; });
  addBinary(R, "Sub", 7, [](Expr a, Expr b) { return a - b; });
  addBinary(R, "Mul", 7, [](Expr a, Expr b) { return a * b; });
  addBinary(R, "Div", 7, [](Expr a, Expr b) { return a / b; });
  R.add({.Name = "Mod", .SinceVersion = 10, .Fusion = FusionClass::Elementwise,
         .Infer = inferNumericBroadcast, .Lower = lowerMod});
  R.add({.Name = "Pow", .SinceVersion = 7, .Fusion = FusionClass::Elementwise,
         .Infer = inferPow, .Lower = lowerPow});
  // Max/Min/Sum/Mean take 1..N inputs with broadcasting from opset 8.
  addVariadic(R, "Max", 8, BinOp::Max, false);
  addVariadic(R, "Min", 8, BinOp::Min, false);
  addVariadic(R, "Sum", 8, BinOp::Add, false);
  addVariadic(R, "Mean", 8, BinOp::Add, true);
}

} // namespace mlcc::ops
