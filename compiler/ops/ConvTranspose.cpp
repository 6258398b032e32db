//===- ConvTranspose.cpp - Transposed convolution (N-D, grouped) ----------===//
//
// Computed in gather form: output position o (in padded coordinates
// a = o + padBegin) receives x[i] * w[k] for every kernel offset k and
// input position i with i * stride + k * dilation == a. For unit dilation
// the matching offsets are k = a mod stride + t * stride, so the kernel
// loop steps through them directly; with dilation each offset is tested.
//
// Output extents: stride * (in - 1) + output_padding + (kernel - 1) *
// dilation + 1 - pads, or output_shape (pads derived from it), or
// in * stride for SAME_UPPER/SAME_LOWER.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct TConvShape {
  int64_t N, C, M, Group;
  Shape InSpatial, Out;
  std::vector<int64_t> Kernel, Strides, Dilations, PadBegin;
};

int64_t pyFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

TConvShape tconvShape(const ir::Node &n) {
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more, got " << shapeToString(x);
  if (w.size() != x.size())
    n.error() << "weights " << shapeToString(w) << " do not match input "
              << shapeToString(x);
  TConvShape s;
  size_t r = x.size() - 2;
  s.N = x[0];
  s.C = x[1];
  s.Group = n.attrInt("group", 1);
  if (s.Group < 1 || s.C % s.Group || w[0] != s.C)
    n.error() << "weights " << shapeToString(w) << " do not fit " << s.C
              << " input channels in group " << s.Group;
  s.M = w[1] * s.Group;
  s.InSpatial.assign(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  s.Kernel = n.attrInts("kernel_shape", kernel);
  if (s.Kernel != kernel)
    n.error() << "kernel_shape " << shapeToString(s.Kernel)
              << " does not match the weights " << shapeToString(w);
  s.Strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  s.Dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> outPad =
      n.attrInts("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (s.Strides.size() != r || s.Dilations.size() != r || outPad.size() != r ||
      pads.size() != 2 * r)
    n.error() << "strides/dilations/output_padding need " << r
              << " entries and pads " << 2 * r;
  for (size_t i = 0; i < r; ++i)
    if (s.Strides[i] < 1 || s.Dilations[i] < 1 || outPad[i] < 0)
      n.error() << "strides and dilations must be positive, output_padding "
                   "non-negative";
  if (n.hasInput(2) && n.inShape(2) != Shape{s.M})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << ", expected ["
              << s.M << "]";
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    n.error() << "unknown auto_pad '" << autoPad << "'";
  std::vector<int64_t> outShape = n.attrInts("output_shape");
  if (outShape.size() == r + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty() && outShape.size() != r)
    n.error() << "output_shape needs " << r << " entries, has " << outShape.size();
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  s.PadBegin.resize(r);
  s.Out.resize(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t dk = (s.Kernel[i] - 1) * s.Dilations[i] + 1;
    int64_t full = s.Strides[i] * (s.InSpatial[i] - 1) + outPad[i] + dk;
    if (!outShape.empty() || same) {
      int64_t out = !outShape.empty() ? outShape[i] : s.InSpatial[i] * s.Strides[i];
      int64_t total = full - out;
      int64_t half = pyFloorDiv(total, 2);
      s.PadBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
      s.Out[i] = out;
    } else {
      int64_t pb = autoPad == "VALID" ? 0 : pads[i];
      int64_t pe = autoPad == "VALID" ? 0 : pads[i + r];
      if (pb < 0 || pe < 0)
        n.error() << "pads must not be negative";
      s.PadBegin[i] = pb;
      s.Out[i] = full - pb - pe;
    }
    if (s.Out[i] < 0)
      n.error() << "output extent " << s.Out[i] << " of spatial dimension " << i
                << " is negative";
  }
  return s;
}

void inferConvTranspose(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  TConvShape s = tconvShape(n);
  Shape out = {s.N, s.M};
  out.insert(out.end(), s.Out.begin(), s.Out.end());
  n.setOutput(0, n.inDType(0), out);
}

void lowerConvTranspose(LowerCtx &c) {
  TConvShape s = tconvShape(c.node());
  TensorRef x = c.in(0), w = c.in(1), y = c.out(0);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  if (y.numel() == 0)
    return;
  KernelBuilder &b = c.b();
  size_t r = s.Kernel.size();
  int64_t cPerGroup = s.C / s.Group, mPerGroup = s.M / s.Group;
  DType acc = y.computeType();
  b.loop("n", s.N, [&](Expr n) {
    b.loop("m", s.M, [&](Expr m) {
      Expr g = m / mPerGroup;
      Expr ml = m % mPerGroup;
      b.loops(s.Out, [&](const std::vector<Expr> &o) {
        Local sum = b.local("sum", acc);
        b.set(sum, bias ? bias->load({m}) : constant(acc, 0));
        std::vector<Expr> k(r), in(r);
        auto body = [&] {
          b.loop("ic", cPerGroup, [&](Expr ic) {
            Expr ch = g * cPerGroup + ic;
            std::vector<Expr> xi = {n, ch}, wi = {ch, ml};
            xi.insert(xi.end(), in.begin(), in.end());
            wi.insert(wi.end(), k.begin(), k.end());
            b.set(sum, sum.get() + x.load(xi) * w.load(wi));
          });
        };
        std::function<void(size_t)> rec = [&](size_t d) {
          if (d == r) {
            body();
            return;
          }
          int64_t st = s.Strides[d], dil = s.Dilations[d], K = s.Kernel[d],
                  extent = s.InSpatial[d];
          Expr a = o[d] + s.PadBegin[d];
          std::string kn = "k" + std::to_string(d);
          if (dil == 1) {
            // k = k0 + t*st, i = q - t with k0 = a mod st, q = a div st.
            Expr stE = indexConst(st);
            Local k0 = b.local(kn + "_0", floorMod(a, stE));
            Local q = b.local(kn + "_q", floorDiv(a, stE));
            Expr nk = floorDiv(indexConst(K + st - 1) - k0.get(), stE);
            Expr lo = max(q.get() - (extent - 1), indexConst(0));
            Expr hi = min(nk, q.get() + 1);
            b.loop("t" + std::to_string(d), lo, hi, [&](Expr t) {
              k[d] = k0.get() + t * st;
              in[d] = q.get() - t;
              rec(d + 1);
            });
            return;
          }
          b.loop(kn, K, [&](Expr kd) {
            Expr p = a - kd * dil;
            Expr i = floorDiv(p, indexConst(st));
            Expr ok = land(eq(floorMod(p, indexConst(st)), indexConst(0)),
                           land(ge(i, indexConst(0)), lt(i, indexConst(extent))));
            b.ifThen(ok, [&] {
              k[d] = kd;
              in[d] = floorDiv(p, indexConst(st));
              rec(d + 1);
            });
          });
        };
        rec(0);
        std::vector<Expr> yi = {n, m};
        yi.insert(yi.end(), o.begin(), o.end());
        y.store(yi, sum.get());
      }, "o");
    });
  });
}

} // namespace

MLCC_OPS(ConvTranspose) {
  R.add({.Name = "ConvTranspose", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferConvTranspose, .Lower = lowerConvTranspose});
}

} // namespace mlcc::ops
