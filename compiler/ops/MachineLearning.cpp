//===- MachineLearning.cpp - ai.onnx.ml Binarizer, ArrayFeatureExtractor --===//
//
// Binarizer: Y = X > threshold ? 1 : 0 in X's type.
// ArrayFeatureExtractor: selects entries of X's last axis by the (flattened)
// int64 indices Y: Z has X's shape with the last extent replaced by the
// number of indices (a 1-D X gives [1, count]). Negative indices count from
// the end and indices are clamped into the axis so loads stay in range.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

const char *const Ml = "ai.onnx.ml";

void inferBinarizer(ir::Node &n) {
  requireDType(n, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
  n.setOutput(0, n.inType(0));
}

void lowerBinarizer(LowerCtx &c) {
  double thr = c.node().attrFloat("threshold", 0.0);
  lowerElementwise(c, [thr](const std::vector<Expr> &a) {
    DType t = a[0]->Type;
    // Compare in f64 so that integer inputs see the real threshold.
    Expr above = gt(cast(DType::F64, a[0]), constant(DType::F64, thr));
    return select(above, constant(t, 1.0), constant(t, 0.0));
  });
}

Shape featureShape(const ir::Node &n) {
  const Shape &x = n.inShape(0);
  if (x.empty())
    n.error() << "X must have rank 1 or more";
  int64_t count = numElements(n.inShape(1));
  if (x.back() == 0 && count > 0)
    n.error() << "cannot select from an empty last axis";
  Shape out = x;
  if (out.size() == 1)
    out.insert(out.begin(), 1);
  out.back() = count;
  return out;
}

void inferFeatureExtractor(ir::Node &n) {
  requireDType(n, 0, {DType::F32, DType::F64, DType::I64, DType::I32});
  requireDType(n, 1, {DType::I64});
  n.setOutput(0, n.inDType(0), featureShape(n));
}

void lowerFeatureExtractor(LowerCtx &c) {
  TensorRef x = c.in(0), ind = c.in(1), z = c.out(0);
  int64_t last = x.shape().back();
  size_t r = x.rank();
  c.b().loops(z.shape(), [&](const std::vector<Expr> &o) {
    Expr i = toIndex(ind.loadFlat(o.back()));
    i = select(lt(i, indexConst(0)), i + last, i);
    i = clamp(i, indexConst(0), indexConst(std::max<int64_t>(last - 1, 0)));
    std::vector<Expr> src(o.end() - (long)r, o.end());
    src.back() = i;
    z.store(o, x.load(src));
  });
}

} // namespace

MLCC_OPS(MachineLearning) {
  R.add({.Domain = Ml, .Name = "Binarizer", .SinceVersion = 1,
         .Fusion = FusionClass::Elementwise, .Infer = inferBinarizer,
         .Lower = lowerBinarizer});
  R.add({.Domain = Ml, .Name = "ArrayFeatureExtractor", .SinceVersion = 1,
         .Fusion = FusionClass::Injective, .Infer = inferFeatureExtractor,
         .Lower = lowerFeatureExtractor});
}

} // namespace mlcc::ops
