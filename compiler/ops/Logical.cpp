//===- Logical.cpp - And/Or/Xor/Not, comparisons, Where, bitwise ops ------===//
//
// Numpy-broadcasting logical and comparison ops (the legacy `broadcast`
// attribute of opsets 1-6 is handled when it needs no `axis`), Where
// (three-way broadcast), BitShift and the Bitwise* ops on integers.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

/// Before opset 7, `broadcast=1` broadcast B onto a suffix of A's shape,
/// which numpy broadcasting reproduces; an explicit `axis` does not.
void rejectLegacyBroadcast(const ir::Node &n) {
  if (n.Opset >= 7 || !n.attrInt("broadcast", 0))
    return;
  if (n.hasAttr("axis"))
    n.error(ErrorKind::Unsupported)
        << "legacy broadcasting with an 'axis' attribute (opset < 7) is not "
           "supported";
  if (n.inShape(1).size() > n.inShape(0).size())
    n.error() << "legacy broadcasting needs B's rank to be at most A's";
}

void requireBool(const ir::Node &n, size_t i) {
  if (n.inDType(i) != DType::Bool)
    n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
              << "; bool is required";
}

void requireInt(const ir::Node &n, size_t i) {
  if (!isInteger(n.inDType(i)))
    n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
              << "; an integer type is required";
}

void inferBoolBinary(ir::Node &n) {
  rejectLegacyBroadcast(n);
  requireBool(n, 0);
  requireBool(n, 1);
  inferBroadcastBool(n);
}

/// Comparisons: numeric operands (and bool for Equal), Bool result.
void inferCompare(ir::Node &n, bool allowBool) {
  rejectLegacyBroadcast(n);
  for (size_t i = 0; i < 2; ++i) {
    DType t = n.inDType(i);
    if (t == DType::Bool && allowBool)
      continue;
    requireNumeric(n, i);
  }
  inferBroadcastBool(n);
}

void addCompare(OpRegistry &R, const char *name, int64_t since, bool allowBool,
                std::function<Expr(Expr, Expr)> fn) {
  addBinaryElementwise(
      R, name, since, [allowBool](ir::Node &n) { inferCompare(n, allowBool); },
      std::move(fn));
}

void inferNot(ir::Node &n) {
  requireBool(n, 0);
  inferSameAsInput(n);
}

// --- Where -------------------------------------------------------------------

void inferWhere(ir::Node &n) {
  requireBool(n, 0);
  if (n.inDType(1) != n.inDType(2))
    n.error() << "X has type " << dtypeOnnxName(n.inDType(1)) << " but Y has "
              << dtypeOnnxName(n.inDType(2));
  if (!isStorable(n.inDType(1)))
    n.error(ErrorKind::Unsupported) << "type " << dtypeOnnxName(n.inDType(1))
                                    << " is not supported";
  n.setOutput(0, n.inDType(1),
              broadcastShapes(n, {n.inShape(0), n.inShape(1), n.inShape(2)}));
}

void lowerWhere(LowerCtx &c) {
  lowerElementwise(c, [](const std::vector<Expr> &a) {
    return select(a[0], a[1], a[2]);
  });
}

// --- Bitwise -------------------------------------------------------------------

void inferIntBinary(ir::Node &n) {
  requireInt(n, 0);
  requireInt(n, 1);
  inferBroadcast(n);
}

void inferBitShift(ir::Node &n) {
  if (!isUnsignedInt(n.inDType(0)))
    n.error() << "input 0 has type " << dtypeOnnxName(n.inDType(0))
              << "; an unsigned integer type is required";
  std::string dir = n.attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    n.error() << "direction must be 'LEFT' or 'RIGHT', got '" << dir << "'";
  inferBroadcast(n);
}

void lowerBitShift(LowerCtx &c) {
  bool left = c.node().attrString("direction", "") == "LEFT";
  lowerElementwise(c, [&](const std::vector<Expr> &a) {
    return binary(left ? BinOp::Shl : BinOp::Shr, a[0], a[1]);
  });
}

void inferBitwiseNot(ir::Node &n) {
  requireInt(n, 0);
  inferSameAsInput(n);
}

} // namespace

MLCC_OPS(Logical) {
  addBinaryElementwise(R, "And", 1, inferBoolBinary, [](Expr a, Expr b) { return land(a, b); });
  addBinaryElementwise(R, "Or", 1, inferBoolBinary, [](Expr a, Expr b) { return lor(a, b); });
  addBinaryElementwise(R, "Xor", 1, inferBoolBinary,
            [](Expr a, Expr b) { return binary(BinOp::Xor, a, b); });
  addElementwise(
      R, "Not", 1, [](const std::vector<Expr> &a) { return lnot(a[0]); }, inferNot);

  addCompare(R, "Equal", 1, true, [](Expr a, Expr b) { return eq(a, b); });
  addCompare(R, "Less", 1, false, [](Expr a, Expr b) { return lt(a, b); });
  addCompare(R, "Greater", 1, false, [](Expr a, Expr b) { return gt(a, b); });
  addCompare(R, "LessOrEqual", 12, false, [](Expr a, Expr b) { return le(a, b); });
  addCompare(R, "GreaterOrEqual", 12, false,
             [](Expr a, Expr b) { return ge(a, b); });

  R.add({.Name = "Where", .SinceVersion = 9, .Fusion = FusionClass::Elementwise,
         .Infer = inferWhere, .Lower = lowerWhere, .RunTimeExtents = true,
         .DenseOperands = true});

  R.add({.Name = "BitShift", .SinceVersion = 11, .Fusion = FusionClass::Elementwise,
         .Infer = inferBitShift, .Lower = lowerBitShift, .RunTimeExtents = true});
  addBinaryElementwise(R, "BitwiseAnd", 18, inferIntBinary,
            [](Expr a, Expr b) { return binary(BinOp::BitAnd, a, b); });
  addBinaryElementwise(R, "BitwiseOr", 18, inferIntBinary,
            [](Expr a, Expr b) { return binary(BinOp::BitOr, a, b); });
  addBinaryElementwise(R, "BitwiseXor", 18, inferIntBinary,
            [](Expr a, Expr b) { return binary(BinOp::BitXor, a, b); });
  addElementwise(
      R, "BitwiseNot", 18,
      [](const std::vector<Expr> &a) { return unary(UnOp::BitNot, a[0]); },
      inferBitwiseNot);
}

} // namespace mlcc::ops
