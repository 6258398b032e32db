//===- CenterCropPad.cpp - CenterCropPad -----------------------------------===//
//
// The target shape input must be a compile-time constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <numeric>

namespace mlcc::ops {

using namespace kir;

namespace {

// --- CenterCropPad --------------------------------------------------------

struct CropPlan {
  std::vector<int64_t> Offset; ///< input index = output index + offset
  Shape Out;
};

CropPlan cropPlan(const ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> shape =
      n.constInputInts(1, "the target shape determines the output shape");
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  if (axes.size() != shape.size())
    n.error() << "shape has " << shape.size() << " entries for " << axes.size()
              << " axes";
  CropPlan p;
  p.Offset.assign((size_t)r, 0);
  p.Out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t d = (size_t)normalizeAxis(n, axes[i], r);
    int64_t target = shape[i];
    if (target < 0)
      n.error() << "negative target extent " << target;
    p.Out[d] = target;
    // Crop: start rounded down; pad: the odd pixel goes to the end.
    p.Offset[d] = in[d] >= target ? (in[d] - target) / 2 : -((target - in[d]) / 2);
  }
  return p;
}

void inferCenterCropPad(ir::Node &n) {
  CropPlan p = cropPlan(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerCenterCropPad(LowerCtx &c) {
  CropPlan p = cropPlan(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  DType ct = y.computeType();
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr inside = boolConst(true);
    std::vector<Expr> src(o.size());
    for (size_t d = 0; d < o.size(); ++d) {
      src[d] = o[d] + p.Offset[d];
      int64_t e = x.shape()[d];
      if (p.Offset[d] < 0 || p.Out[d] + p.Offset[d] > e) {
        inside = land(inside, land(ge(src[d], indexConst(0)), lt(src[d], indexConst(e))));
        src[d] = clamp(src[d], indexConst(0), indexConst(std::max<int64_t>(e - 1, 0)));
      }
    }
    if (x.numel() == 0) {
      y.store(o, constant(ct, 0));
      return;
    }
    y.store(o, select(inside, x.load(src), constant(ct, 0)));
  });
}

} // namespace

MLCC_OPS(CenterCropPad) {
  R.add({.Name = "CenterCropPad", .SinceVersion = 18,
         .Fusion = FusionClass::Injective, .Infer = inferCenterCropPad,
         .Lower = lowerCenterCropPad});
}

} // namespace mlcc::ops
