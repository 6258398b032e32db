//===- Ops.cpp - Names of the kernel IR's scalar operations ---------------===//
#include "compiler/kernel/Ops.h"

namespace mlcc::kir {

const char *unOpName(UnOp op) {
  static const char *names[] = {
      "neg",   "not",   "bitnot", "abs",   "sqrt",  "exp",   "log",
      "sin",   "cos",   "tan",    "asin",  "acos",  "atan",  "sinh",
      "cosh",  "tanh",  "asinh",  "acosh", "atanh", "erf",   "floor",
      "ceil",  "round", "trunc",  "isnan", "isinf", "sext_bytes02", "sext_bytes13",
      "zext_bytes02", "zext_bytes13"};
  return names[(int)op];
}

const char *binOpName(BinOp op) {
  static const char *names[] = {"add", "sub",    "mul",   "div",    "rem",
                                "min", "max",    "pow",   "and",    "or",
                                "xor", "bitand", "bitor", "bitxor", "shl",
                                "shr", "eq",     "ne",    "lt",     "le",
                                "gt",  "ge",     "dot4",  "dot2",   "sdot4",
                                "sdot4_narrow", "mulhi"};
  return names[(int)op];
}

bool isComparison(BinOp op) {
  return op == BinOp::Eq || op == BinOp::Ne || op == BinOp::Lt ||
         op == BinOp::Le || op == BinOp::Gt || op == BinOp::Ge;
}

} // namespace mlcc::kir
