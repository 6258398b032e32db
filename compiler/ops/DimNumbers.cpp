//===- DimNumbers.cpp - mlcc.DimAffine: numbers from bounded dimensions ---===//
#include "compiler/ops/DimNumbers.h"

#include "compiler/ops/Lowering.h"

#include <map>
#include <set>

namespace mlcc::ops {

using namespace kir;

bool isShapeOperand(const ir::Node &n, size_t i) {
  static const std::map<std::string, std::set<size_t>> operands = {
      {"Reshape", {1}},   {"Expand", {1}},     {"Tile", {1}},     {"Slice", {1, 2, 3, 4}},
      {"ConstantOfShape", {0}}, {"Squeeze", {1}}, {"Unsqueeze", {1}}, {"Pad", {1}},
      {"Resize", {1, 2, 3}}, {"Split", {1}},   {"TopK", {1}},     {"Range", {0, 1, 2}}};
  if (!n.Domain.empty())
    return false;
  auto it = operands.find(n.OpType);
  return it != operands.end() && it->second.count(i);
}

std::unique_ptr<ir::Node> numbersAtRunTime(ir::Graph &g, ir::Value &v, const ir::NumberRule &rule) {
  const int64_t count = v.Type.numel();
  if ((int64_t)rule.Offsets.size() != count || rule.Coeffs.size() % std::max<size_t>(1, rule.Offsets.size()))
    fail(ErrorKind::Internal) << "value '" << v.Name << "' has " << count
                              << " elements, its run-time rule " << rule.Offsets.size();
  ir::Value *twin = g.addValue(g.uniqueValueName(v.Name + "_at_run_time"), v.Type);
  auto n = std::make_unique<ir::Node>();
  n->Name = g.uniqueNodeName(v.Name + "_from_dims");
  n->OpType = "DimAffine";
  n->Domain = "mlcc";
  n->Opset = 1;
  ir::Attribute offsets, coeffs, dtype, shape;
  offsets.Kind = coeffs.Kind = shape.Kind = ir::AttrKind::Ints;
  dtype.Kind = ir::AttrKind::Int;
  offsets.Ints = rule.Offsets;
  coeffs.Ints = rule.Coeffs;
  dtype.I = (int64_t)v.Type.Type;
  shape.Ints = v.Type.Dims;
  n->Attrs["offsets"] = offsets;
  n->Attrs["coeffs"] = coeffs;
  n->Attrs["dtype"] = dtype;
  n->Attrs["shape"] = shape;
  n->Outputs.push_back(twin);
  twin->Producer = n.get();
  for (const auto &reader : g.Nodes)
    for (size_t i = 0; i < reader->Inputs.size(); ++i)
      if (reader->Inputs[i] == &v && !isShapeOperand(*reader, i))
        reader->Inputs[i] = twin;
  for (ir::Value *&o : g.Outputs)
    if (o == &v)
      o = twin;
  return n;
}

namespace {

void inferDimAffine(ir::Node &n) {
  n.setOutput(0, (DType)n.attrInt("dtype", (int64_t)DType::I64), n.attrInts("shape", {}));
}

void lowerDimAffine(LowerCtx &c) {
  const ir::Node &n = c.node();
  std::vector<int64_t> offsets = n.attrInts("offsets", {}), coeffs = n.attrInts("coeffs", {});
  const size_t dims = offsets.empty() ? 0 : coeffs.size() / offsets.size();
  TensorRef y = c.out(0);
  for (size_t e = 0; e < offsets.size(); ++e) {
    Expr v = indexConst(offsets[e]);
    for (size_t k = 0; k < dims; ++k)
      if (int64_t a = coeffs[e * dims + k])
        v = v + c.dimValue(k, dims) * a;
    y.storeFlat(indexConst((int64_t)e), cast(computeType(y.dtype()), v));
  }
}

} // namespace

MLCC_OPS(DimNumbers) {
  R.add({.Domain = "mlcc", .Name = "DimAffine", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferDimAffine, .Lower = lowerDimAffine, .Foldable = false,
         .RunTimeExtents = true});
}

} // namespace mlcc::ops
