//===- Annotate.cpp - Which nodes run in int8 ------------------------------===//
//
// The anchors are the contractions with constant weights (Conv; MatMul and
// Gemm with a constant matrix B, no transposed A, alpha = beta = 1): they
// always run in int8, which is where the speed and the 4x smaller weights
// come from. In graph order, the ops between them join when every run-time
// input is already an int8 tensor, so that no float round trip is added for
// them:
//
//  - Add, Mul (of two int8 tensors), Concat, AveragePool,
//    GlobalAveragePool, Sigmoid, LeakyRelu: requantizing integer ops, with
//    an output range of their own;
//  - MaxPool, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity,
//    and a lone Relu or Clip: they move, select or clamp values, so their
//    output keeps the input's scale and zero point (SameAs) and they run on
//    the bytes themselves.
//
// A Relu or Clip right after a Conv, MatMul, Gemm or Add (its only reader)
// belongs to it: the pair's output is the quantized tensor, and fuse-qdq
// clamps in the integer epilogue.
//
// Nodes the user keeps in float (--keep-float) are neither anchors nor
// joiners.
//
// Every input and output of an int8 node is a quantized tensor; tensors
// from float nodes and graph inputs get their QuantizeLinear at that
// boundary, graph outputs and float readers their DequantizeLinear.
//
//===----------------------------------------------------------------------===//
#include "compiler/quantizer/Quantize.h"

namespace mlcc::quantizer {

namespace {

bool isF32(const ir::Value *v) { return v && v->Type.Type == DType::F32; }

bool constantBounds(const ir::Node &n) {
  if (n.OpType == "Relu")
    return true;
  if (n.OpType != "Clip")
    return false;
  for (size_t i : {1, 2})
    if (n.hasInput(i) && !n.Inputs[i]->Const)
      return false;
  return true;
}

bool isAnchor(const ir::Node &n) {
  if (n.Domain != "" || !isF32(n.Inputs.empty() ? nullptr : n.Inputs[0]) ||
      !n.hasInput(1) || !n.Inputs[1]->Const || !isF32(n.Inputs[1]) ||
      n.Outputs.size() != 1)
    return false;
  if (n.OpType == "Conv")
    return n.inShape(1).size() >= 3 && (!n.hasInput(2) || n.Inputs[2]->Const);
  if (n.OpType == "MatMul")
    return n.inShape(1).size() == 2 && n.inShape(0).size() >= 2;
  if (n.OpType == "Gemm") {
    if (n.attrInt("transA", 0) || n.attrFloat("alpha", 1.0) != 1.0 ||
        n.attrFloat("beta", 1.0) != 1.0)
      return false;
    int64_t cols = n.inShape(1)[n.attrInt("transB", 0) ? 0 : 1];
    return !n.hasInput(2) || (n.Inputs[2]->Const && n.inShape(2) == Shape{cols});
  }
  return false;
}

} // namespace

Annotation annotate(const ir::Graph &g, const std::set<std::string> &keepFloat) {
  Annotation a;
  std::set<std::string> nodeNames;
  for (auto &n : g.Nodes)
    nodeNames.insert(n->Name);
  for (const std::string &k : keepFloat)
    if (!nodeNames.count(k))
      fail(ErrorKind::Usage) << "--keep-float: the model has no node named '" << k
                             << "' (node names are those of mlcc check's table)";
  std::set<const ir::Value *> quantized, listed;
  std::map<const ir::Value *, int> uses = g.useCounts();
  auto list = [&](const ir::Value *v) {
    if (listed.insert(v).second)
      a.Tensors.push_back(v->Name);
  };
  // Readers of each value, to find an activation that belongs to its op.
  std::map<const ir::Value *, const ir::Node *> onlyReader;
  for (auto &n : g.Nodes)
    for (const ir::Value *in : n->Inputs)
      if (in)
        onlyReader[in] = n.get();
  std::set<const ir::Node *> absorbed;
  static const std::set<std::string> requantizing = {
      "Add", "Mul", "Concat", "AveragePool", "GlobalAveragePool", "Sigmoid", "LeakyRelu"};
  static const std::set<std::string> sameScale = {
      "MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity",
      "Relu", "Clip"};

  for (auto &np : g.Nodes) {
    const ir::Node &n = *np;
    if (absorbed.count(&n) || n.Domain != "" || n.Outputs.size() < 1 ||
        !isF32(n.Outputs[0]) || keepFloat.count(n.Name))
      continue;
    bool anchor = isAnchor(n);
    bool joins = false;
    std::vector<const ir::Value *> runtime;
    for (const ir::Value *in : n.Inputs)
      if (in && !in->Const)
        runtime.push_back(in);
    if (!anchor && !runtime.empty()) {
      joins = true;
      for (const ir::Value *in : runtime)
        joins = joins && quantized.count(in) && isF32(in);
      if (n.OpType == "Add" || n.OpType == "Mul")
        joins = joins && runtime.size() == 2;
      else if (n.OpType != "Concat")
        joins = joins && runtime.size() == 1 && n.Inputs[0] == runtime[0];
      if (n.OpType == "AveragePool" && n.numInputs() != 1)
        joins = false;
      if (n.OpType == "MaxPool" && n.hasOutput(1))
        joins = false;
      if ((n.OpType == "Relu" || n.OpType == "Clip") && !constantBounds(n))
        joins = false;
      joins = joins && (requantizing.count(n.OpType) || sameScale.count(n.OpType));
    }
    if (!anchor && !joins)
      continue;
    a.Nodes.insert(n.Name);
    for (const ir::Value *in : runtime)
      list(in);
    const ir::Value *out = n.Outputs[0];
    if (!anchor && sameScale.count(n.OpType)) {
      a.SameAs[out->Name] = n.Inputs[0]->Name;
    } else if (anchor || n.OpType == "Add") {
      // An activation that belongs to the op.
      auto r = onlyReader.find(out);
      if (r != onlyReader.end() && uses[out] == 1 && !g.isGraphOutput(out) &&
          r->second->Domain == "" && constantBounds(*r->second) &&
          r->second->Inputs[0] == out && isF32(r->second->Outputs[0]) &&
          !keepFloat.count(r->second->Name)) {
        absorbed.insert(r->second);
        a.Nodes.insert(r->second->Name);
        out = r->second->Outputs[0];
      }
    }
    quantized.insert(out);
    list(out);
  }
  if (a.Nodes.empty())
    fail(ErrorKind::Usage) << "--quantize: the model has no node that can run in int8 "
                              "(a Conv, or a MatMul or Gemm with constant float weights)";
  for (const std::string &t : a.Tensors)
    if (!a.SameAs.count(t))
      a.Observed.push_back(t);
  return a;
}

std::vector<std::string> floatFallbacks(const ir::Graph &g) {
  static const std::set<std::string> integerOps = {
      "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "QGemm", "QLinearAdd",
      "QLinearMul", "QLinearGlobalAveragePool", "QLinearAveragePool", "QLinearConcat",
      "QLinearSigmoid", "QLinearLeakyRelu"};
  auto isFloat = [](DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
  };
  bool quantized = false;
  for (auto &n : g.Nodes)
    quantized = quantized || integerOps.count(n->OpType);
  std::vector<std::string> nodes;
  if (!quantized)
    return nodes;
  for (auto &n : g.Nodes) {
    if (n->Domain.empty() && (n->OpType == "QuantizeLinear" || n->OpType == "DequantizeLinear"))
      continue;
    bool computesFloat = false;
    for (const ir::Value *out : n->Outputs)
      computesFloat = computesFloat || (out && isFloat(out->Type.Type));
    if (computesFloat)
      nodes.push_back(n->Name + " (" + n->OpType + ")");
  }
  return nodes;
}

} // namespace mlcc::quantizer
