//===- Conv.cpp - Conv (N-D, grouped, dilated, padded) --------------------===//
//
// Direct convolution: each output element accumulates over its input
// channels and the kernel offsets whose input position is inside the image
// (the valid range is computed per output position, so the inner loops
// carry no bounds checks).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Window.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct ConvShape {
  int64_t N, C, M, Group;
  Shape InSpatial;
  Window W;
};

ConvShape convShape(const ir::Node &n) {
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more, got " << shapeToString(x);
  if (w.size() != x.size())
    n.error() << "weights " << shapeToString(w) << " do not match input "
              << shapeToString(x);
  ConvShape s;
  s.N = x[0];
  s.C = x[1];
  s.M = w[0];
  s.Group = n.attrInt("group", 1);
  if (s.Group < 1 || s.C % s.Group || s.M % s.Group || w[1] * s.Group != s.C)
    n.error() << "channels (" << s.C << " in, " << s.M << " out, weights "
              << shapeToString(w) << ") do not fit group " << s.Group;
  s.InSpatial.assign(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> ks = n.attrInts("kernel_shape", kernel);
  if (ks != kernel)
    n.error() << "kernel_shape " << shapeToString(ks)
              << " does not match the weights " << shapeToString(w);
  s.W = computeWindow(n, s.InSpatial, kernel);
  if (n.hasInput(2) && n.inShape(2) != Shape{s.M})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << ", expected ["
              << s.M << "]";
  return s;
}

void inferConv(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  ConvShape s = convShape(n);
  Shape out = {s.N, s.M};
  out.insert(out.end(), s.W.Out.begin(), s.W.Out.end());
  n.setOutput(0, n.inDType(0), out);
}

void lowerConv(LowerCtx &c) {
  ConvShape s = convShape(c.node());
  TensorRef x = c.in(0), w = c.in(1), y = c.out(0);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  KernelBuilder &b = c.b();
  size_t r = s.W.rank();
  int64_t cPerGroup = s.C / s.Group, mPerGroup = s.M / s.Group;
  DType acc = y.computeType();
  b.loop("n", s.N, [&](Expr n) {
    b.loop("m", s.M, [&](Expr m) {
      Expr g = m / mPerGroup;
      b.loops(s.W.Out, [&](const std::vector<Expr> &o) {
        Local sum = b.local("sum", acc);
        b.set(sum, bias ? bias->load({m}) : constant(acc, 0));
        b.loop("ic", cPerGroup, [&](Expr ic) {
          Expr ch = g * cPerGroup + ic;
          std::vector<Expr> k(r);
          std::function<void(size_t)> rec = [&](size_t d) {
            if (d == r) {
              std::vector<Expr> xi = {n, ch}, wi = {m, ic};
              for (size_t i = 0; i < r; ++i) {
                xi.push_back(o[i] * s.W.Strides[i] + k[i] * s.W.Dilations[i] -
                             s.W.PadBegin[i]);
                wi.push_back(k[i]);
              }
              b.set(sum, sum.get() + x.load(xi) * w.load(wi));
              return;
            }
            auto [lo, hi] = validKernelRange(o[d], s.W.Strides[d], s.W.Dilations[d],
                                             s.W.PadBegin[d], s.W.Kernel[d],
                                             s.InSpatial[d]);
            b.loop("k" + std::to_string(d), lo, hi, [&](Expr kd) {
              k[d] = kd;
              rec(d + 1);
            });
          };
          rec(0);
        });
        std::vector<Expr> yi = {n, m};
        yi.insert(yi.end(), o.begin(), o.end());
        y.store(yi, sum.get());
      }, "o");
    });
  });
}

} // namespace

MLCC_OPS(Conv) {
  R.add({.Name = "Conv", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferConv, .Lower = lowerConv});
}

} // namespace mlcc::ops
