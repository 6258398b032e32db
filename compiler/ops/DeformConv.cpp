//===- DeformConv.cpp - DeformConv (N-D, grouped, masked) -----------------===//
//
// DeformConv (opsets 19, 22) is a convolution whose kernel taps are moved by
// learned offsets: for output position o, kernel position k and input
// channel c (in offset group og), the tap reads X at the fractional
// position o*stride - pad_begin + k*dilation + offset[n, (og*K + k)*r + d,
// o] along each spatial axis d, by N-linear interpolation with zeros
// outside the input, and is weighted by W and by mask[n, og*K + k, o] (1
// when absent). Offsets list the coordinates in axis order (h before w).
// Every tap index is clamped before loading; out-of-range taps contribute 0.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Window.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct DeformShape {
  int64_t N, C, M, Group, OffsetGroup, K;
  Shape In;
  Window W;
};

DeformShape deformShape(const ir::Node &n) {
  const Shape &x = n.inShape(0), &w = n.inShape(1), &off = n.inShape(2);
  if (x.size() < 3)
    n.error() << "X must have rank 3 or more, got " << shapeToString(x);
  if (w.size() != x.size())
    n.error() << "W " << shapeToString(w) << " does not match X " << shapeToString(x);
  DeformShape s;
  size_t r = x.size() - 2;
  s.N = x[0];
  s.C = x[1];
  s.M = w[0];
  s.Group = n.attrInt("group", 1);
  s.OffsetGroup = n.attrInt("offset_group", 1);
  if (s.Group < 1 || s.C % s.Group || s.M % s.Group || w[1] * s.Group != s.C)
    n.error() << "channels (" << s.C << " in, " << s.M << " out, W "
              << shapeToString(w) << ") do not fit group " << s.Group;
  if (s.OffsetGroup < 1 || s.C % s.OffsetGroup)
    n.error() << "offset_group " << s.OffsetGroup << " does not divide the "
              << s.C << " input channels";
  s.In.assign(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  if (n.attrInts("kernel_shape", kernel) != kernel)
    n.error() << "kernel_shape does not match W " << shapeToString(w);
  s.W = computeWindow(n, s.In, kernel);
  s.K = numElements(kernel);
  Shape expect = {s.N, s.OffsetGroup * s.K * (int64_t)r};
  expect.insert(expect.end(), s.W.Out.begin(), s.W.Out.end());
  if (off != expect)
    n.error() << "offset has shape " << shapeToString(off) << ", expected "
              << shapeToString(expect);
  if (n.hasInput(3) && n.inShape(3) != Shape{s.M})
    n.error() << "B has shape " << shapeToString(n.inShape(3)) << ", expected ["
              << s.M << "]";
  if (n.hasInput(4)) {
    Shape m = {s.N, s.OffsetGroup * s.K};
    m.insert(m.end(), s.W.Out.begin(), s.W.Out.end());
    if (n.inShape(4) != m)
      n.error() << "mask has shape " << shapeToString(n.inShape(4))
                << ", expected " << shapeToString(m);
  }
  return s;
}

void inferDeformConv(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  DeformShape s = deformShape(n);
  Shape out = {s.N, s.M};
  out.insert(out.end(), s.W.Out.begin(), s.W.Out.end());
  n.setOutput(0, n.inDType(0), out);
}

void lowerDeformConv(LowerCtx &c) {
  DeformShape s = deformShape(c.node());
  TensorRef x = c.in(0), w = c.in(1), off = c.in(2), y = c.out(0);
  std::optional<TensorRef> bias, mask;
  if (c.hasIn(3))
    bias = c.in(3);
  if (c.hasIn(4))
    mask = c.in(4);
  if (y.numel() == 0)
    return;
  KernelBuilder &b = c.b();
  size_t r = s.W.rank();
  DType ct = y.computeType();
  int64_t cPerGroup = s.C / s.Group, mPerGroup = s.M / s.Group;
  int64_t cPerOffsetGroup = s.C / s.OffsetGroup;
  b.loop("n", s.N, [&](Expr ni) {
    b.loop("m", s.M, [&](Expr m) {
      Expr g = m / mPerGroup;
      b.loops(s.W.Out, [&](const std::vector<Expr> &o) {
        Local sum = b.local("sum", bias ? bias->load({m}) : constant(ct, 0.0));
        b.loop("ic", cPerGroup, [&](Expr ic) {
          Local ch = b.local("ch", g * cPerGroup + ic);
          Expr og = ch.get() / cPerOffsetGroup;
          b.loops(s.W.Kernel, [&](const std::vector<Expr> &k) {
            // Row-major kernel position index.
            Expr kidx = indexConst(0);
            for (size_t d = 0; d < r; ++d)
              kidx = kidx * s.W.Kernel[d] + k[d];
            Local kid = b.local("kidx", og * s.K + kidx);
            std::vector<Local> lo(r), frac(r);
            for (size_t d = 0; d < r; ++d) {
              std::vector<Expr> oi = {ni, kid.get() * (int64_t)r + (int64_t)d};
              oi.insert(oi.end(), o.begin(), o.end());
              Expr pos = cast(ct, o[d] * s.W.Strides[d] + k[d] * s.W.Dilations[d] -
                                      s.W.PadBegin[d]) +
                         off.load(oi);
              Local p = b.local("p" + std::to_string(d), pos);
              Expr fl = floor(p.get());
              lo[d] = b.local("lo" + std::to_string(d), toIndex(fl));
              frac[d] = b.local("t" + std::to_string(d), p.get() - fl);
            }
            // N-linear interpolation over the 2^r corners.
            Expr v = constant(ct, 0.0);
            for (int64_t corner = 0; corner < (int64_t(1) << r); ++corner) {
              std::vector<Expr> xi = {ni, ch.get()};
              Expr ok = boolConst(true), wt = constant(ct, 1.0);
              for (size_t d = 0; d < r; ++d) {
                bool up = (corner >> (r - 1 - d)) & 1;
                Expr i = lo[d].get() + (int64_t)(up ? 1 : 0);
                ok = land(ok, land(ge(i, indexConst(0)), lt(i, indexConst(s.In[d]))));
                xi.push_back(clamp(i, indexConst(0), indexConst(s.In[d] - 1)));
                wt = wt * (up ? frac[d].get() : 1.0 - frac[d].get());
              }
              v = v + select(ok, wt * x.load(xi), constant(ct, 0.0));
            }
            std::vector<Expr> wi = {m, ic};
            wi.insert(wi.end(), k.begin(), k.end());
            Expr tap = w.load(wi) * v;
            if (mask) {
              std::vector<Expr> mi = {ni, kid.get()};
              mi.insert(mi.end(), o.begin(), o.end());
              tap = tap * mask->load(mi);
            }
            b.set(sum, sum.get() + tap);
          }, "k");
        });
        std::vector<Expr> yi = {ni, m};
        yi.insert(yi.end(), o.begin(), o.end());
        y.store(yi, sum.get());
      }, "o");
    });
  });
}

} // namespace

MLCC_OPS(DeformConv) {
  R.add({.Name = "DeformConv", .SinceVersion = 19, .Fusion = FusionClass::Opaque,
         .Infer = inferDeformConv, .Lower = lowerDeformConv});
}

} // namespace mlcc::ops
