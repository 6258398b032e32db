//===- GridSample.cpp - GridSample, AffineGrid -----------------------------===//
//
// GridSample (opsets 16, 20, 22) samples X (N, C, D1..Dr) at the normalized
// positions of `grid` (N, D1_out..Dr_out, r), whose last axis lists the
// coordinates innermost dimension first. Each coordinate is denormalized
// (align_corners: -1 and 1 are the centres of the corner pixels; otherwise
// their outer edges), moved back inside by the padding mode when it falls
// outside the border ([0, D-1] or [-0.5, D-0.5]): `border` clamps it to
// [0, D-1], `reflection` reflects it at the border until inside. Then the
// interpolation reads taps around it (nearest: 1, linear: 2, cubic: 4 with
// Keys' a = -0.75 per axis); taps outside the image read 0 (zeros), the edge
// (border) or the reflected pixel (reflection). Nearest rounds half to even.
// Opset 16 is 2-D only with modes bilinear/nearest/bicubic; 20 renamed them
// linear/nearest/cubic and allows any rank.
//
// All tap indices are clamped into the image before loading, so grid values
// of any size (or NaN) never read outside X.
//
// AffineGrid (opset 20) builds the grid for a batch of affine matrices:
// grid[n, ..., :] = theta[n] * [x, y, (z,) 1] over evenly spaced base
// positions in [-1, 1] (pixel centres; with align_corners the corner
// pixels' centres are -1 and 1).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

enum class GsMode { Nearest, Linear, Cubic };
enum class GsPad { Zeros, Border, Reflection };

struct GsParams {
  GsMode Mode = GsMode::Linear;
  GsPad Pad = GsPad::Zeros;
  bool Align = false;
  size_t R = 0; ///< spatial rank
  Shape Out;
};

GsParams gridSampleParams(const ir::Node &n) {
  GsParams p;
  const Shape &x = n.inShape(0), &g = n.inShape(1);
  std::string mode = n.attrString("mode", n.Opset >= 20 ? "linear" : "bilinear");
  if (mode == "nearest")
    p.Mode = GsMode::Nearest;
  else if (mode == (n.Opset >= 20 ? "linear" : "bilinear"))
    p.Mode = GsMode::Linear;
  else if (mode == (n.Opset >= 20 ? "cubic" : "bicubic"))
    p.Mode = GsMode::Cubic;
  else
    n.error() << "unknown mode '" << mode << "' (opset " << n.Opset << ")";
  std::string pad = n.attrString("padding_mode", "zeros");
  if (pad == "zeros")
    p.Pad = GsPad::Zeros;
  else if (pad == "border")
    p.Pad = GsPad::Border;
  else if (pad == "reflection")
    p.Pad = GsPad::Reflection;
  else
    n.error() << "unknown padding_mode '" << pad << "'";
  p.Align = n.attrInt("align_corners", 0) != 0;
  if (x.size() < 3)
    n.error() << "X must have rank 3 or more, got " << shapeToString(x);
  p.R = x.size() - 2;
  if (n.Opset < 20 && p.R != 2)
    n.error() << "X must have rank 4 before opset 20, got " << shapeToString(x);
  if (g.size() != x.size() || g.back() != (int64_t)p.R || g[0] != x[0])
    n.error() << "grid " << shapeToString(g) << " does not fit X "
              << shapeToString(x) << "; expected [" << x[0] << ", ..., " << p.R
              << "]";
  p.Out = {x[0], x[1]};
  p.Out.insert(p.Out.end(), g.begin() + 1, g.end() - 1);
  for (size_t d = 0; d < p.R; ++d)
    if (x[2 + d] == 0 && numElements(p.Out) > 0)
      n.error() << "cannot sample from an empty spatial axis";
  return p;
}

void inferGridSample(ir::Node &n) {
  DType t = n.inDType(0);
  if (!isFloat(t) && !isInteger(t))
    n.error(ErrorKind::Unsupported) << "X of type " << dtypeOnnxName(t)
                                    << " is not supported";
  requireFloat(n, 1);
  GsParams p = gridSampleParams(n);
  n.setOutput(0, t, p.Out);
}

/// Reflects `x` at the borders lo and hi until it lies in [lo, hi].
Expr reflect(const Expr &x, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0))
    return constLike(x, lo);
  Expr below = constLike(x, lo) - x, above = x - constLike(x, hi);
  auto fold = [&](const Expr &dx, bool fromLow) {
    Expr k = floor(dx / rng);
    Expr r = dx - k * rng;
    Expr odd = ne(floorMod(k, constLike(k, 2.0)), 0.0);
    Expr nearSide = fromLow ? constLike(x, lo) + r : constLike(x, hi) - r;
    Expr farSide = fromLow ? constLike(x, hi) - r : constLike(x, lo) + r;
    return select(odd, farSide, nearSide);
  };
  return select(lt(x, lo), fold(below, true),
                select(gt(x, hi), fold(above, false), x));
}

/// Keys' cubic convolution weight of tap k (0..3) for fraction t in [0, 1).
Expr cubicWeight(const Expr &t, int k) {
  const double A = -0.75;
  auto near = [&](const Expr &a) { return ((A + 2) * a - (A + 3)) * a * a + 1.0; };
  auto far = [&](const Expr &a) { return ((A * a - 5 * A) * a + 8 * A) * a - 4 * A; };
  switch (k) {
  case 0: return far(t + 1.0);
  case 1: return near(t);
  case 2: return near(1.0 - t);
  default: return far(2.0 - t);
  }
}

void lowerGridSample(LowerCtx &c) {
  const ir::Node &n = c.node();
  GsParams p = gridSampleParams(n);
  TensorRef x = c.in(0), grid = c.in(1), y = c.out(0);
  KernelBuilder &b = c.b();
  if (y.numel() == 0)
    return;
  size_t R = p.R;
  const Shape &xs = x.shape();
  DType acc = isFloat(x.dtype()) ? x.computeType() : DType::F64;
  int taps = p.Mode == GsMode::Nearest ? 1 : p.Mode == GsMode::Linear ? 2 : 4;
  Shape spatialOut(p.Out.begin() + 2, p.Out.end());

  b.loop("n", p.Out[0], [&](Expr ni) {
    b.loops(spatialOut, [&](const std::vector<Expr> &o) {
      // Per spatial axis d (X order): tap indices, validity and weights.
      std::vector<Local> idx(R), valid(R), wt(R);
      for (size_t d = 0; d < R; ++d) {
        std::string sd = std::to_string(d);
        int64_t L = xs[2 + d];
        double lo = p.Align ? 0.0 : -0.5;
        double hi = p.Align ? (double)(L - 1) : (double)L - 0.5;
        std::vector<Expr> gi = {ni};
        gi.insert(gi.end(), o.begin(), o.end());
        gi.push_back(indexConst((int64_t)(R - 1 - d)));
        Expr g = grid.load(gi);
        Expr pos = p.Align ? (g + 1.0) / 2.0 * (double)(L - 1)
                           : ((g + 1.0) * (double)L - 1.0) / 2.0;
        if (p.Mode == GsMode::Nearest)
          pos = unary(UnOp::Round, pos);
        Local posL = b.local("pos" + sd, pos);
        pos = posL.get();
        Expr outside = lor(lt(pos, lo), gt(pos, hi));
        if (p.Pad == GsPad::Border)
          b.set(posL, select(outside, clamp(pos, constLike(pos, 0.0),
                                            constLike(pos, (double)(L - 1))),
                             pos));
        else if (p.Pad == GsPad::Reflection)
          b.set(posL, select(outside, reflect(pos, lo, hi), pos));
        pos = posL.get();

        idx[d] = b.local("idx" + sd, DType::Index, taps);
        valid[d] = b.local("valid" + sd, DType::Bool, taps);
        wt[d] = b.local("w" + sd, acc, taps);
        Expr base, frac;
        if (p.Mode == GsMode::Nearest) {
          base = toIndex(unary(UnOp::Trunc, pos));
        } else {
          Expr fl = floor(pos);
          base = toIndex(fl);
          frac = cast(acc, pos - fl);
        }
        Local baseL = b.local("base" + sd, base);
        Local fracL;
        if (frac)
          fracL = b.local("frac" + sd, frac);
        int first = p.Mode == GsMode::Cubic ? -1 : 0;
        for (int k = 0; k < taps; ++k) {
          Expr i = baseL.get() + (int64_t)(first + k);
          Expr last = indexConst(L - 1);
          Expr inRange = land(ge(i, indexConst(0)), le(i, last));
          Expr safe;
          if (p.Pad == GsPad::Reflection) {
            Expr r = reflect(cast(DType::F64, i), lo, hi);
            safe = clamp(toIndex(unary(UnOp::Trunc, r)), indexConst(0), last);
          } else {
            safe = clamp(i, indexConst(0), last);
          }
          b.set(idx[d], indexConst(k), safe);
          b.set(valid[d], indexConst(k),
                p.Pad == GsPad::Zeros ? inRange : boolConst(true));
          Expr w;
          if (p.Mode == GsMode::Nearest)
            w = constant(acc, 1.0);
          else if (p.Mode == GsMode::Linear)
            w = k == 0 ? 1.0 - fracL.get() : fracL.get();
          else
            w = cubicWeight(fracL.get(), k);
          b.set(wt[d], indexConst(k), w);
        }
      }
      b.loop("c", p.Out[1], [&](Expr ci) {
        Local sum = b.local("sum", constant(acc, 0.0));
        std::vector<Expr> src(R + 2);
        src[0] = ni;
        src[1] = ci;
        std::function<void(size_t, Expr, Expr)> rec = [&](size_t d, Expr w,
                                                          Expr ok) {
          if (d == R) {
            Expr v = cast(acc, x.load(src));
            v = select(ok, v, constant(acc, 0.0));
            b.set(sum, sum.get() + (w ? w * v : v));
            return;
          }
          b.loop("t" + std::to_string(d), taps, [&](Expr k) {
            src[2 + d] = idx[d].get(k);
            Expr wd = wt[d].get(k);
            Expr okd = valid[d].get(k);
            rec(d + 1, w ? w * wd : wd, ok ? land(ok, okd) : okd);
          });
        };
        rec(0, nullptr, nullptr);
        std::vector<Expr> yi = {ni, ci};
        yi.insert(yi.end(), o.begin(), o.end());
        y.store(yi, cast(y.computeType(), sum.get()));
      });
    }, "o");
  });
}

// --- AffineGrid -------------------------------------------------------------

Shape affineGridShape(const ir::Node &n, size_t &r) {
  const Shape &th = n.inShape(0);
  if (th.size() != 3 || !((th[1] == 2 && th[2] == 3) || (th[1] == 3 && th[2] == 4)))
    n.error() << "theta must have shape (N, 2, 3) or (N, 3, 4), got "
              << shapeToString(th);
  r = (size_t)th[1];
  std::vector<int64_t> size = n.constInputInts(1, "the size determines the output shape");
  if (size.size() != r + 2)
    n.error() << "size has " << size.size() << " elements; " << r + 2
              << " expected for theta " << shapeToString(th);
  if (size[0] != th[0])
    n.error() << "size[0] = " << size[0] << " differs from theta's batch " << th[0];
  Shape out = {size[0]};
  for (size_t d = 0; d < r; ++d) {
    if (size[2 + d] < 0)
      n.error() << "negative size " << size[2 + d];
    out.push_back(size[2 + d]);
  }
  out.push_back((int64_t)r);
  return out;
}

void inferAffineGrid(ir::Node &n) {
  requireFloat(n, 0);
  requireDType(n, 1, {DType::I64});
  size_t r;
  n.setOutput(0, n.inDType(0), affineGridShape(n, r));
}

void lowerAffineGrid(LowerCtx &c) {
  size_t r;
  Shape out = affineGridShape(c.node(), r);
  bool align = c.node().attrInt("align_corners", 0) != 0;
  TensorRef th = c.in(0), y = c.out(0);
  DType ct = y.computeType();
  Shape spatial(out.begin() + 1, out.end() - 1);
  c.b().loop("n", out[0], [&](Expr ni) {
    c.b().loops(spatial, [&](const std::vector<Expr> &o) {
      // Base coordinates, innermost axis first: (x, y, z, 1).
      std::vector<Expr> base;
      for (size_t k = 0; k < r; ++k) {
        size_t d = r - 1 - k; // spatial axis of coordinate k
        int64_t L = spatial[d];
        Expr i = cast(ct, o[d]);
        Expr v;
        if (L <= 1)
          v = constant(ct, 0.0);
        else if (align)
          v = i * (2.0 / (double)(L - 1)) - 1.0;
        else
          v = (i * 2.0 + 1.0) / (double)L - 1.0;
        base.push_back(v);
      }
      for (size_t row = 0; row < r; ++row) {
        Expr s = th.load({ni, indexConst((int64_t)row), indexConst((int64_t)r)});
        for (size_t k = 0; k < r; ++k)
          s = s + th.load({ni, indexConst((int64_t)row), indexConst((int64_t)k)}) * base[k];
        std::vector<Expr> yi = {ni};
        yi.insert(yi.end(), o.begin(), o.end());
        yi.push_back(indexConst((int64_t)row));
        y.store(yi, s);
      }
    }, "o");
  });
}

} // namespace

MLCC_OPS(GridSample) {
  for (int64_t v : {16, 20})
    R.add({.Name = "GridSample", .SinceVersion = v, .Fusion = FusionClass::Opaque,
           .Infer = inferGridSample, .Lower = lowerGridSample});
  R.add({.Name = "AffineGrid", .SinceVersion = 20, .Fusion = FusionClass::Opaque,
         .Infer = inferAffineGrid, .Lower = lowerAffineGrid});
}

} // namespace mlcc::ops
