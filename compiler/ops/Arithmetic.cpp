//===- Arithmetic.cpp - Add, Sub, Mul, Div, Mod, Pow, Min, Max, Sum, Mean -===//
//
// Numpy-broadcasting arithmetic from opset 7. Before that (opsets 1-6), Add,
// Sub, Mul, Div and Pow broadcast only B onto A, and only with broadcast=1:
// B is a single element or matches a contiguous run of A's dimensions
// starting at `axis` (suffix matching by default), with unit dimensions
// repeated; Max, Min, Sum and Mean require equal shapes. Integer division
// truncates toward zero as in C; Mod follows the sign of the divisor unless
// fmod=1.
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

/// Sum/Max/Min/Mean of the present inputs' elements.
Expr variadic(const std::vector<Expr> &a, BinOp op, bool mean) {
  Expr acc = a[0];
  for (size_t i = 1; i < a.size(); ++i)
    acc = binary(op, acc, a[i]);
  if (mean)
    acc = acc / (double)a.size();
  return acc;
}

void lowerVariadic(LowerCtx &c, BinOp op, bool mean) {
  lowerElementwise(c, [&](const std::vector<Expr> &a) { return variadic(a, op, mean); });
}

void addVariadic(OpRegistry &R, const char *name, int64_t since, BinOp op,
                 bool mean) {
  OpSchema s;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::Elementwise;
  s.Infer = inferNumericBroadcast;
  s.Lower = [op, mean](LowerCtx &c) { lowerVariadic(c, op, mean); };
  s.Scalar = [op, mean](const ir::Node &, const std::vector<Expr> &a) {
    return variadic(a, op, mean);
  };
  s.RunTimeExtents = true;
  R.add(s);
}

// --- Legacy broadcasting (opsets 1-6) -------------------------------------

/// Where B's dimensions start within A's under the legacy rule, or -1 when B
/// is a single element (read at offset 0).
int64_t legacyAxis(const ir::Node &n) {
  const Shape &a = n.inShape(0), &b = n.inShape(1);
  bool bcast = n.attrInt("broadcast", 0) != 0;
  if (!bcast) {
    if (a != b)
      n.error() << "shapes " << shapeToString(a) << " and " << shapeToString(b)
                << " differ and broadcast is not set (opset " << n.Opset << ")";
    return 0;
  }
  int64_t ra = (int64_t)a.size(), rb = (int64_t)b.size();
  if (rb > ra)
    n.error() << "B " << shapeToString(b) << " has a higher rank than A "
              << shapeToString(a);
  if (numElements(b) == 1)
    return -1;
  int64_t axis = ra - rb;
  if (n.hasAttr("axis")) {
    axis = n.attrInt("axis", 0);
    if (axis < 0)
      axis += ra;
  }
  if (axis < 0 || axis + rb > ra)
    n.error() << "axis " << n.attrInt("axis", 0) << " does not place B "
              << shapeToString(b) << " within A " << shapeToString(a);
  for (int64_t j = 0; j < rb; ++j)
    if (b[(size_t)j] != 1 && b[(size_t)j] != a[(size_t)(axis + j)])
      n.error() << "B " << shapeToString(b) << " does not broadcast to A "
                << shapeToString(a) << " at axis " << axis;
  return axis;
}

void inferLegacyBinary(ir::Node &n) {
  requireNumeric(n, 0);
  requireSameDTypes(n);
  legacyAxis(n);
  n.setOutput(0, n.inType(0));
}

void lowerLegacyBinary(LowerCtx &c, const std::function<Expr(Expr, Expr)> &fn) {
  int64_t axis = legacyAxis(c.node());
  TensorRef a = c.in(0), b = c.in(1), y = c.out(0);
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr bv;
    if (axis < 0) {
      bv = b.loadFlat(indexConst(0));
    } else {
      std::vector<Expr> bi;
      for (size_t j = 0; j < b.rank(); ++j)
        bi.push_back(b.shape()[j] == 1 ? indexConst(0) : o[(size_t)axis + j]);
      bv = b.load(bi);
    }
    y.store(o, fn(a.load(o), bv));
  });
}

void addLegacyBinary(OpRegistry &R, const char *name,
                     std::function<Expr(Expr, Expr)> fn) {
  OpSchema s;
  s.Name = name;
  s.SinceVersion = 1;
  s.Fusion = FusionClass::Injective;
  s.Infer = inferLegacyBinary;
  s.Lower = [fn](LowerCtx &c) { lowerLegacyBinary(c, fn); };
  R.add(s);
}

/// Max, Min, Sum, Mean before opset 8: all inputs have one shape.
void inferLegacyVariadic(ir::Node &n) {
  for (size_t i = 0; i < n.Inputs.size(); ++i) {
    if (!n.hasInput(i))
      continue;
    requireNumeric(n, i);
    if (n.inShape(i) != n.inShape(0))
      n.error() << "input " << i << " has shape " << shapeToString(n.inShape(i))
                << " but input 0 has " << shapeToString(n.inShape(0))
                << " (no broadcasting before opset 8)";
  }
  inferBroadcast(n);
}

} // namespace

MLCC_OPS(Arithmetic) {
  addLegacyBinary(R, "Add", [](Expr a, Expr b) { return a + b; });
  addLegacyBinary(R, "Sub", [](Expr a, Expr b) { return a - b; });
  addLegacyBinary(R, "Mul", [](Expr a, Expr b) { return a * b; });
  addLegacyBinary(R, "Div", [](Expr a, Expr b) { return a / b; });
  addLegacyBinary(R, "Pow", [](Expr a, Expr b) {
    DType t = a->Type;
    DType ft = isFloat(t) ? t : DType::F64;
    return cast(t, pow(cast(ft, a), cast(ft, b)));
  });
  for (const char *name : {"Max", "Min", "Sum", "Mean"}) {
    std::string op = name;
    BinOp bop = op == "Max" ? BinOp::Max : op == "Min" ? BinOp::Min : BinOp::Add;
    bool mean = op == "Mean";
    R.add({.Name = name, .SinceVersion = 1, .Fusion = FusionClass::Elementwise,
           .Infer = inferLegacyVariadic,
           .Lower = [bop, mean](LowerCtx &c) { lowerVariadic(c, bop, mean); },
           .RunTimeExtents = true});
  }

  addBinaryElementwise(R, "Add", 7, inferNumericBroadcast, [](Expr a, Expr b) { return a + b; });
  addBinaryElementwise(R, "Sub", 7, inferNumericBroadcast, [](Expr a, Expr b) { return a - b; });
  addBinaryElementwise(R, "Mul", 7, inferNumericBroadcast, [](Expr a, Expr b) { return a * b; });
  addBinaryElementwise(R, "Div", 7, inferNumericBroadcast, [](Expr a, Expr b) { return a / b; });
  R.add({.Name = "Mod", .SinceVersion = 10, .Fusion = FusionClass::Elementwise,
         .Infer = inferNumericBroadcast, .Lower = lowerMod, .RunTimeExtents = true});
  R.add({.Name = "Pow", .SinceVersion = 7, .Fusion = FusionClass::Elementwise,
         .Infer = inferPow, .Lower = lowerPow, .RunTimeExtents = true});
  // Max/Min/Sum/Mean take 1..N inputs with broadcasting from opset 8.
  addVariadic(R, "Max", 8, BinOp::Max, false);
  addVariadic(R, "Min", 8, BinOp::Min, false);
  addVariadic(R, "Sum", 8, BinOp::Add, false);
  addVariadic(R, "Mean", 8, BinOp::Add, true);
}

} // namespace mlcc::ops
