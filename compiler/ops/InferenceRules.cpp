//===- InferenceRules.cpp - Shared inference, type checks -----------------===//
//
// The inference functions many ops register (an output of input 0's type,
// of the broadcast of the inputs) and the element-type checks of Infer
// (Lowering.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

void inferSameAsInput(ir::Node &n) { n.setOutput(0, n.inType(0)); }

void inferFloatUnary(ir::Node &n) {
  requireFloat(n, 0);
  inferSameAsInput(n);
}

void inferNumericUnary(ir::Node &n) {
  requireNumeric(n, 0);
  inferSameAsInput(n);
}

void inferSignedOrFloatUnary(ir::Node &n) {
  DType t = n.inDType(0);
  if (!isFloat(t) && !isSignedInt(t))
    n.error(ErrorKind::Unsupported)
        << "input 0 has type " << dtypeOnnxName(t)
        << "; a floating-point or signed integer type is required";
  inferSameAsInput(n);
}

void requireSameDTypes(const ir::Node &n, size_t count) {
  DType t = n.inDType(0);
  for (size_t i = 1; i < std::min(count, n.Inputs.size()); ++i)
    if (n.hasInput(i) && n.inDType(i) != t)
      n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                << " but input 0 has " << dtypeOnnxName(t);
}

void inferBroadcast(ir::Node &n) {
  requireSameDTypes(n);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < n.Inputs.size(); ++i)
    if (n.hasInput(i))
      shapes.push_back(n.inShape(i));
  n.setOutput(0, n.inDType(0), broadcastShapes(n, shapes));
}

void inferBroadcastBool(ir::Node &n) {
  inferBroadcast(n);
  n.Outputs[0]->Type.Type = DType::Bool;
}

void requireType(const ir::Node &n, DType t, const std::string &what,
                 std::initializer_list<DType> allowed) {
  for (DType a : allowed)
    if (a == t)
      return;
  std::string list;
  for (DType a : allowed)
    list += (list.empty() ? "" : ", ") + std::string(dtypeOnnxName(a));
  n.error(ErrorKind::Unsupported) << what << " has type " << dtypeOnnxName(t)
                                  << "; supported: " << list;
}

void requireDType(const ir::Node &n, size_t i,
                  std::initializer_list<DType> allowed) {
  requireType(n, n.inDType(i), "input " + std::to_string(i), allowed);
}

void requireFloat(const ir::Node &n, size_t i) {
  if (!isFloat(n.inDType(i)))
    n.error(ErrorKind::Unsupported) << "input " << i << " has type "
                                    << dtypeOnnxName(n.inDType(i))
                                    << "; a floating-point type is required";
}

void requireNumeric(const ir::Node &n, size_t i) {
  DType t = n.inDType(i);
  if (!isFloat(t) && !isInteger(t))
    n.error(ErrorKind::Unsupported) << "input " << i << " has type "
                                    << dtypeOnnxName(t)
                                    << "; a numeric type is required";
}

} // namespace mlcc::ops
