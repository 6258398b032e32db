//===- Resize.cpp - Resize, Upsample --------------------------------------===//
//
// Resize is separable: along every resized axis, output coordinate x maps to
// a position x_original in the input (coordinate_transformation_mode), and
// the output element is the weighted sum over the input taps near that
// position (nearest: one tap; linear: 2; cubic: 4; antialiased downscaling
// stretches the filter by 1/scale). The kernel first builds, per resized
// axis, a table of tap indices and weights (computed in f64 at run time from
// compile-time constants and, for tf_crop_and_resize, the roi input), then
// accumulates over the taps of all axes for each output element.
//
// The output shape depends on `scales`/`sizes`, so they must be compile-time
// constants. Taps outside the input are clamped to the edge (or get weight 0
// with exclude_outside).
//
// Upsample (opsets 1-9) and Resize-10 use the asymmetric transformation with
// nearest = floor.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

enum class Interp { Nearest, Linear, Cubic };

struct ResizeParams {
  Interp Mode = Interp::Nearest;
  std::string Coord = "half_pixel";
  std::string NearestMode = "round_prefer_floor";
  double CubicA = -0.75;
  bool Exclude = false;
  double Extrap = 0;
  bool Antialias = false;
  Shape In, Out;
  std::vector<double> Scale;
  /// tf_crop_and_resize: element of the roi input holding each axis's start
  /// and end (-1: the axis is not in `axes`, roi is [0, 1]).
  std::vector<int64_t> RoiStart, RoiEnd;
};

bool validCoord(const std::string &c, int64_t opset) {
  return c == "half_pixel" || c == "pytorch_half_pixel" || c == "align_corners" ||
         c == "asymmetric" || c == "tf_crop_and_resize" ||
         c == "tf_half_pixel_for_nn" || (c == "half_pixel_symmetric" && opset >= 18);
}

ResizeParams resizeParams(const ir::Node &n) {
  ResizeParams p;
  p.In = n.inShape(0);
  int64_t r = (int64_t)p.In.size();
  bool legacy = n.OpType == "Upsample" || n.Opset < 11;
  std::string mode = n.attrString("mode", "nearest");
  if (mode == "nearest")
    p.Mode = Interp::Nearest;
  else if (mode == "linear" || (legacy && mode == "bilinear"))
    p.Mode = Interp::Linear;
  else if (mode == "cubic" && !legacy)
    p.Mode = Interp::Cubic;
  else
    n.error() << "unknown mode '" << mode << "'";

  std::vector<double> scales;
  std::vector<int64_t> sizes;
  std::vector<int64_t> axes;
  std::string policy = "stretch";
  if (legacy) {
    p.Coord = "asymmetric";
    p.NearestMode = "floor";
    if (n.OpType == "Upsample" && n.Opset < 7) {
      if (r != 4)
        n.error() << "input must have rank 4";
      scales = {1.0, 1.0, n.attrFloat("height_scale", 1.0),
                n.attrFloat("width_scale", 1.0)};
    } else if (n.OpType == "Upsample" && n.Opset < 9) {
      scales = n.attrFloats("scales");
      if (scales.empty())
        n.error() << "attribute 'scales' is required";
    } else {
      scales = n.constInput(1, "the scales determine the output shape")->toDoubles();
    }
  } else {
    p.Coord = n.attrString("coordinate_transformation_mode", "half_pixel");
    if (!validCoord(p.Coord, n.Opset))
      n.error() << "unknown coordinate_transformation_mode '" << p.Coord << "'";
    p.NearestMode = n.attrString("nearest_mode", "round_prefer_floor");
    if (p.NearestMode != "round_prefer_floor" && p.NearestMode != "round_prefer_ceil" &&
        p.NearestMode != "floor" && p.NearestMode != "ceil")
      n.error() << "unknown nearest_mode '" << p.NearestMode << "'";
    p.CubicA = n.attrFloat("cubic_coeff_a", -0.75);
    p.Exclude = n.attrInt("exclude_outside", 0) != 0;
    p.Extrap = n.attrFloat("extrapolation_value", 0.0);
    if (n.Opset >= 18) {
      p.Antialias = n.attrInt("antialias", 0) != 0;
      axes = n.attrInts("axes");
      policy = n.attrString("keep_aspect_ratio_policy", "stretch");
      if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
        n.error() << "unknown keep_aspect_ratio_policy '" << policy << "'";
    }
    bool haveScales = n.hasInput(2) && numElements(n.inShape(2)) > 0;
    bool haveSizes = n.hasInput(3) && numElements(n.inShape(3)) > 0;
    if (haveScales && haveSizes)
      n.error() << "only one of scales and sizes may be given";
    if (!haveScales && !haveSizes)
      n.error() << "one of scales and sizes must be given";
    if (haveScales)
      scales = n.constInput(2, "the scales determine the output shape")->toDoubles();
    else
      sizes = n.constInputInts(3, "the sizes determine the output shape");
  }
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  std::vector<bool> seen((size_t)r, false);
  for (int64_t &a : axes) {
    a = normalizeAxis(n, a, r);
    if (seen[(size_t)a])
      n.error() << "axis " << a << " is repeated";
    seen[(size_t)a] = true;
  }
  size_t na = axes.size();
  p.Scale.assign((size_t)r, 1.0);
  p.Out = p.In;
  p.RoiStart.assign((size_t)r, -1);
  p.RoiEnd.assign((size_t)r, -1);
  if (!scales.empty()) {
    if (scales.size() != na)
      n.error() << "scales has " << scales.size() << " entries, expected " << na;
    for (size_t i = 0; i < na; ++i) {
      size_t d = (size_t)axes[i];
      if (!(scales[i] > 0))
        n.error() << "scale " << scales[i] << " must be positive";
      p.Scale[d] = scales[i];
      double out = std::floor(scales[i] * (double)p.In[d]);
      if (out > 1e15)
        n.error() << "scale " << scales[i] << " gives an output extent too large";
      p.Out[d] = (int64_t)out;
    }
  } else {
    if (sizes.size() != na)
      n.error() << "sizes has " << sizes.size() << " entries, expected " << na;
    for (size_t i = 0; i < na; ++i)
      if (sizes[i] < 0)
        n.error() << "negative size " << sizes[i];
    if (policy == "stretch") {
      for (size_t i = 0; i < na; ++i) {
        size_t d = (size_t)axes[i];
        p.Out[d] = sizes[i];
        p.Scale[d] = p.In[d] ? (double)sizes[i] / (double)p.In[d] : 1.0;
      }
    } else {
      double s = policy == "not_larger" ? INFINITY : -INFINITY;
      for (size_t i = 0; i < na; ++i) {
        double v = (double)sizes[i] / (double)p.In[(size_t)axes[i]];
        s = policy == "not_larger" ? std::min(s, v) : std::max(s, v);
      }
      for (size_t i = 0; i < na; ++i) {
        size_t d = (size_t)axes[i];
        p.Scale[d] = s;
        double out = std::floor(s * (double)p.In[d] + 0.5);
        if (!(out >= 0 && out <= 1e15))
          n.error() << "sizes give an invalid output extent on axis " << d;
        p.Out[d] = (int64_t)out;
      }
    }
  }
  if (p.Coord == "tf_crop_and_resize") {
    if (!n.hasInput(1) || numElements(n.inShape(1)) != (int64_t)(2 * na))
      n.error() << "tf_crop_and_resize needs a roi of " << 2 * na << " elements";
    if (!isFloat(n.inDType(1)))
      n.error() << "roi must be a floating-point tensor";
    for (size_t i = 0; i < na; ++i) {
      p.RoiStart[(size_t)axes[i]] = (int64_t)i;
      p.RoiEnd[(size_t)axes[i]] = (int64_t)(i + na);
    }
  }
  for (int64_t d = 0; d < r; ++d)
    if (p.In[(size_t)d] == 0 && p.Out[(size_t)d] > 0)
      n.error() << "cannot resize an empty axis " << d;
  return p;
}

void inferResize(ir::Node &n) {
  ResizeParams p = resizeParams(n);
  DType t = n.inDType(0);
  if (!isStorable(t))
    n.error(ErrorKind::Unsupported) << "type " << dtypeOnnxName(t) << " is not supported";
  if (p.Mode != Interp::Nearest && !isFloat(t) && !isInteger(t))
    n.error(ErrorKind::Unsupported) << "linear/cubic resize of " << dtypeOnnxName(t);
  n.setOutput(0, t, p.Out);
}

Expr f64(double v) { return constant(DType::F64, v); }

/// The resampling filter at (absolute) distance `a`, in filter units.
Expr filterWeight(const ResizeParams &p, const Expr &a) {
  if (p.Mode == Interp::Linear)
    return max(f64(1.0) - a, f64(0.0));
  double A = p.CubicA;
  Expr a2 = a * a, a3 = a2 * a;
  Expr near = (A + 2) * a3 - (A + 3) * a2 + 1.0;
  Expr far = A * a3 - (5 * A) * a2 + (8 * A) * a - 4 * A;
  return select(le(a, 1.0), near, select(lt(a, 2.0), far, f64(0.0)));
}

/// Per-axis sampling tables.
struct AxisTable {
  bool Identity = true;
  int64_t Taps = 1, TapBegin = 0; ///< tap offsets [TapBegin, TapBegin+Taps) from floor(x)
  double FilterScale = 1.0;
  TensorRef Index, Weight, Valid;
};

/// x_original for output coordinate `x` along axis d, in f64.
Expr originalCoord(const ResizeParams &p, size_t d, const Expr &x,
                   std::optional<TensorRef> &roi) {
  double s = p.Scale[d];
  int64_t in = p.In[d];
  double ow = s * (double)in; // the (possibly fractional) output width
  Expr xf = cast(DType::F64, x);
  const std::string &c = p.Coord;
  if (c == "half_pixel")
    return (xf + 0.5) / f64(s) - 0.5;
  if (c == "half_pixel_symmetric") {
    double adjustment = (double)p.Out[d] / ow;
    double center = (double)in / 2;
    double offset = center * (1 - adjustment);
    return f64(offset) + ((xf + 0.5) / f64(s) - 0.5);
  }
  if (c == "pytorch_half_pixel")
    return ow == 1 ? f64(-0.5) : (xf + 0.5) / f64(s) - 0.5;
  if (c == "align_corners")
    return ow == 1 ? f64(0.0)
                   : cast(DType::F64, x * (in - 1)) / f64(ow - 1);
  if (c == "asymmetric")
    return xf / f64(s);
  if (c == "tf_half_pixel_for_nn")
    return (xf + 0.5) / f64(s);
  // tf_crop_and_resize
  Expr start = f64(0.0), end = f64(1.0);
  if (p.RoiStart[d] >= 0) {
    start = cast(DType::F64, roi->loadFlat(indexConst(p.RoiStart[d])));
    end = cast(DType::F64, roi->loadFlat(indexConst(p.RoiEnd[d])));
  }
  Expr span = end - start;
  Expr xo = ow == 1 ? span * (double)(in - 1) / 2.0
                    : xf * span * (double)(in - 1) / f64(ow - 1);
  return xo + start * (double)(in - 1);
}

void lowerResize(LowerCtx &c) {
  const ir::Node &n = c.node();
  ResizeParams p = resizeParams(n);
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  size_t r = p.In.size();
  bool crop = p.Coord == "tf_crop_and_resize";
  std::optional<TensorRef> roi;
  if (crop)
    roi = c.in(1);
  if (y.numel() == 0)
    return;

  std::vector<AxisTable> tabs(r);
  for (size_t d = 0; d < r; ++d) {
    AxisTable &t = tabs[d];
    int64_t in = p.In[d], out = p.Out[d];
    // Unit scale maps x to x in every mode but these two.
    t.Identity = !crop && p.Coord != "tf_half_pixel_for_nn" &&
                 p.Scale[d] == 1.0 && in == out;
    if (t.Identity)
      continue;
    std::string sd = std::to_string(d);
    if (p.Mode != Interp::Nearest) {
      double support = p.Mode == Interp::Linear ? 1.0 : 2.0;
      if (p.Antialias && p.Scale[d] < 1.0)
        t.FilterScale = p.Scale[d];
      double reach = std::ceil(support / t.FilterScale);
      t.TapBegin = 1 - (int64_t)reach;
      t.Taps = 2 * (int64_t)reach;
    }
    t.Index = c.scratch("idx" + sd, DType::Index, {out, t.Taps});
    if (p.Mode != Interp::Nearest)
      t.Weight = c.scratch("w" + sd, DType::F64, {out, t.Taps});
    if (crop)
      t.Valid = c.scratch("valid" + sd, DType::Bool, {out});
    b.loop("x" + sd, out, [&](Expr xo) {
      Expr pos = originalCoord(p, d, xo, roi);
      Local posL = b.local("pos", pos);
      pos = posL.get();
      if (crop)
        t.Valid.store({xo}, land(ge(pos, 0.0), le(pos, (double)(in - 1))));
      Expr last = indexConst(in - 1);
      if (p.Mode == Interp::Nearest) {
        Expr k;
        if (p.NearestMode == "round_prefer_floor")
          k = ceil(pos - 0.5);
        else if (p.NearestMode == "round_prefer_ceil")
          k = floor(pos + 0.5);
        else if (p.NearestMode == "floor")
          k = floor(pos);
        else
          k = ceil(pos);
        t.Index.store({xo, indexConst(0)}, clamp(toIndex(k), indexConst(0), last));
        return;
      }
      Expr base = floor(pos);
      Local frac = b.local("frac", pos - base);
      Local baseI = b.local("base", toIndex(base));
      bool normalize = p.Exclude || t.FilterScale != 1.0;
      Local w = b.local("w", DType::F64, t.Taps);
      Local sum = b.local("sum", f64(0.0));
      b.loop("t", t.Taps, [&](Expr k) {
        Expr off = k + t.TapBegin;
        Expr dist = cast(DType::F64, off) - frac.get();
        Local a = b.local("a", abs(dist * t.FilterScale));
        Expr wt = filterWeight(p, a.get());
        Expr at = baseI.get() + off;
        if (p.Exclude)
          wt = select(land(ge(at, indexConst(0)), le(at, last)), wt, f64(0.0));
        b.set(w, k, wt);
        b.set(sum, sum.get() + w.get(k));
        t.Index.store({xo, k}, clamp(at, indexConst(0), last));
      });
      b.loop("t", t.Taps, [&](Expr k) {
        Expr wt = w.get(k);
        if (normalize)
          wt = select(ne(sum.get(), 0.0), wt / sum.get(), f64(0.0));
        t.Weight.store({xo, k}, wt);
      });
    });
  }

  DType ct = y.computeType();
  b.loops(p.Out, [&](const std::vector<Expr> &o) {
    Expr valid = boolConst(true);
    if (crop)
      for (size_t d = 0; d < r; ++d)
        if (!tabs[d].Identity)
          valid = land(valid, tabs[d].Valid.load({o[d]}));
    if (p.Mode == Interp::Nearest) {
      std::vector<Expr> src(r);
      for (size_t d = 0; d < r; ++d)
        src[d] = tabs[d].Identity ? o[d] : tabs[d].Index.load({o[d], indexConst(0)});
      Expr v = x.load(src);
      if (crop)
        v = select(valid, v, isFloat(ct) ? constant(ct, p.Extrap)
                                         : constantInt(ct, (int64_t)p.Extrap));
      y.store(o, v);
      return;
    }
    Local acc = b.local("acc", f64(0.0));
    std::vector<Expr> src(r), tap(r);
    std::function<void(size_t, Expr)> rec = [&](size_t d, Expr w) {
      if (d == r) {
        Expr v = cast(DType::F64, x.load(src));
        b.set(acc, acc.get() + (w ? w * v : v));
        return;
      }
      if (tabs[d].Identity) {
        src[d] = o[d];
        rec(d + 1, w);
        return;
      }
      b.loop("t" + std::to_string(d), tabs[d].Taps, [&](Expr k) {
        src[d] = tabs[d].Index.load({o[d], k});
        Expr wd = tabs[d].Weight.load({o[d], k});
        rec(d + 1, w ? w * wd : wd);
      });
    };
    rec(0, nullptr);
    Expr v = acc.get();
    if (crop)
      v = select(valid, v, f64(p.Extrap));
    y.store(o, cast(ct, v));
  }, "o");
}

} // namespace

MLCC_OPS(Resize) {
  R.add({.Name = "Resize", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferResize, .Lower = lowerResize});
  R.add({.Name = "Upsample", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferResize, .Lower = lowerResize});
}

} // namespace mlcc::ops
