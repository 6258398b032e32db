//===- Pool.cpp - Max/Average/Lp pooling, global pooling, unpooling -------===//
//
// Windowed pooling over the spatial dimensions of an [N, C, D1..Dn] input.
// The window geometry (kernel_shape, strides, dilations, pads, auto_pad,
// ceil_mode) comes from computeWindow; each output element visits only the
// kernel offsets whose input position lies inside the input, so padding is
// never read:
//
// - MaxPool: maximum of the visited elements; the optional Indices output
//   is the flat position of the (first) maximum in the input, row-major
//   (storage_order 0) or with the spatial dimensions column-major (1).
// - AveragePool: sum / count, where count is the number of visited
//   elements, or with count_include_pad the number of window positions
//   inside the explicitly padded input (the extra positions a ceil_mode
//   window hangs past the end padding never count).
// - LpPool: (sum |x|^p)^(1/p); padding contributes zeros.
// - Global*Pool: the same over the whole spatial extent.
// - MaxUnpool scatters X to Y at the flat positions I, zeros elsewhere.
// - MaxRoiPool: max over the bins of each region of interest.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Window.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

enum class PoolKind { Max, Average, Lp };

struct PoolShape {
  int64_t N, C;
  Shape InSpatial;
  Window W;
  Shape Out;
};

PoolShape poolShape(const ir::Node &n) {
  const Shape &x = n.inShape(0);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more (N, C, spatial...), got "
              << shapeToString(x);
  PoolShape s;
  s.N = x[0];
  s.C = x[1];
  s.InSpatial.assign(x.begin() + 2, x.end());
  std::vector<int64_t> kernel = n.requireInts("kernel_shape");
  if (kernel.size() != s.InSpatial.size())
    n.error() << "kernel_shape has " << kernel.size()
              << " entries but the input has " << s.InSpatial.size()
              << " spatial dimensions";
  for (int64_t p : n.attrInts("pads"))
    if (p < 0)
      n.error() << "pads must not be negative";
  bool ceilMode = n.attrInt("ceil_mode", 0) != 0;
  s.W = computeWindow(n, s.InSpatial, kernel, ceilMode);
  s.Out = {s.N, s.C};
  s.Out.insert(s.Out.end(), s.W.Out.begin(), s.W.Out.end());
  return s;
}

/// The p of LpPool / GlobalLpPool (a float attribute in version 1, an int
/// afterwards).
double lpNorm(const ir::Node &n) {
  const ir::Attribute *a = n.attr("p");
  double p = 2.0;
  if (a)
    p = a->Kind == ir::AttrKind::Float ? a->F : (double)a->I;
  if (!(p > 0) || !std::isfinite(p))
    n.error() << "p must be positive, got " << p;
  return p;
}

/// |x|^p for the Lp pools.
Expr lpPower(const Expr &x, double p) {
  if (p == 1.0)
    return abs(x);
  if (p == 2.0)
    return x * x;
  return pow(abs(x), constLike(x, p));
}

Expr lpRoot(const Expr &s, double p) {
  if (p == 1.0)
    return s;
  if (p == 2.0)
    return sqrt(s);
  return pow(s, constLike(s, 1.0 / p));
}

void inferPool(ir::Node &n, PoolKind kind) {
  if (kind == PoolKind::Max)
    requireDType(n, 0, {DType::F16, DType::BF16, DType::F32, DType::F64,
                        DType::I8, DType::U8});
  else
    requireFloat(n, 0);
  PoolShape s = poolShape(n);
  if (kind == PoolKind::Max) {
    int64_t order = n.attrInt("storage_order", 0);
    if (order != 0 && order != 1)
      n.error() << "storage_order must be 0 or 1, got " << order;
  }
  if (kind == PoolKind::Average) {
    int64_t cip = n.attrInt("count_include_pad", 0);
    if (cip != 0 && cip != 1)
      n.error() << "count_include_pad must be 0 or 1, got " << cip;
  }
  if (kind == PoolKind::Lp)
    lpNorm(n);
  n.setOutput(0, n.inDType(0), s.Out);
  if (n.Outputs.size() > 1) {
    if (kind != PoolKind::Max)
      n.error() << "has " << n.Outputs.size() << " outputs, expected 1";
    n.setOutput(1, DType::I64, s.Out);
  }
}

void lowerPool(LowerCtx &c, PoolKind kind) {
  const ir::Node &node = c.node();
  PoolShape s = poolShape(node);
  TensorRef x = c.in(0), y = c.out(0);
  std::optional<TensorRef> indices;
  if (kind == PoolKind::Max && c.hasOut(1))
    indices = c.out(1);
  if (y.numel() == 0)
    return;
  bool colMajor = node.attrInt("storage_order", 0) == 1;
  bool countPad = node.attrInt("count_include_pad", 0) != 0;
  double p = kind == PoolKind::Lp ? lpNorm(node) : 2.0;
  KernelBuilder &b = c.b();
  const Window &w = s.W;
  size_t r = w.rank();
  DType t = x.computeType();
  int64_t spatialSize = numElements(s.InSpatial);
  // Flat spatial strides used by the Indices output.
  std::vector<int64_t> idxStride(r, 1);
  if (colMajor) {
    for (size_t d = 1; d < r; ++d)
      idxStride[d] = idxStride[d - 1] * s.InSpatial[d - 1];
  } else {
    for (size_t d = r - 1; d-- > 0;)
      idxStride[d] = idxStride[d + 1] * s.InSpatial[d + 1];
  }

  // One output element, any position: the window clipped to the input.
  auto element = [&](const Expr &n, const Expr &ch, const std::vector<Expr> &o) {
    std::vector<Expr> lo(r), hi(r);
    for (size_t d = 0; d < r; ++d)
      std::tie(lo[d], hi[d]) =
          validKernelRange(o[d], w.Strides[d], w.Dilations[d], w.PadBegin[d],
                           w.Kernel[d], s.InSpatial[d]);
    Local acc = b.local("acc", kind == PoolKind::Max ? lowestValue(t)
                                                      : constant(t, 0));
    std::optional<Local> arg;
    if (indices)
      arg = b.local("arg", indexConst(-1));
    std::vector<Expr> pos(r);
    std::function<void(size_t)> rec = [&](size_t d) {
      if (d == r) {
        std::vector<Expr> xi = {n, ch};
        xi.insert(xi.end(), pos.begin(), pos.end());
        Expr v = x.load(xi);
        if (kind == PoolKind::Max) {
          if (indices) {
            b.ifThen(lor(gt(v, acc.get()), lt(arg->get(), indexConst(0))), [&] {
              b.set(acc, v);
              Expr flat = indexConst(0);
              for (size_t i = 0; i < r; ++i)
                flat = flat + pos[i] * idxStride[i];
              b.set(*arg, flat);
            });
          } else {
            b.set(acc, max(acc.get(), v));
          }
        } else if (kind == PoolKind::Average) {
          b.set(acc, acc.get() + v);
        } else {
          b.set(acc, acc.get() + lpPower(v, p));
        }
        return;
      }
      b.loop("k" + std::to_string(d), lo[d], hi[d], [&](Expr k) {
        pos[d] = o[d] * w.Strides[d] + k * w.Dilations[d] - w.PadBegin[d];
        rec(d + 1);
      });
    };
    rec(0);
    std::vector<Expr> yi = {n, ch};
    yi.insert(yi.end(), o.begin(), o.end());
    Expr result = acc.get();
    if (kind == PoolKind::Average) {
      Expr count = indexConst(1);
      for (size_t d = 0; d < r; ++d) {
        if (countPad) {
          // Window positions inside [-padBegin, extent + padEnd).
          auto [plo, phi] = validKernelRange(
              o[d], w.Strides[d], w.Dilations[d], 0, w.Kernel[d],
              s.InSpatial[d] + w.PadBegin[d] + w.PadEnd[d]);
          count = count * max(phi - plo, indexConst(0));
        } else {
          count = count * max(hi[d] - lo[d], indexConst(0));
        }
      }
      result = result / cast(t, max(count, indexConst(1)));
    } else if (kind == PoolKind::Lp) {
      result = lpRoot(result, p);
    }
    y.store(yi, result);
    if (indices) {
      Expr base = (n * s.C + ch) * spatialSize;
      indices->store(yi, cast(DType::I64, base + max(arg->get(), indexConst(0))));
    }
  };

  // 2-D max and average pooling without indices: the outputs whose whole
  // window lies inside the input sum or take the maximum of the taps
  // in a loop over the output row that reads the input with the window's
  // stride (and vectorizes); the border outputs take the clipped path.
  // A window of at most kMaxUnrolledTerms taps is written out, in order,
  // as one expression per output; a larger one loops over its taps around
  // a loop over a block of the row's outputs that accumulates in a local
  // row (the expression stays shallow, the code small, the outputs still
  // vectors).
  // (Integer data too for the maximum, int8 models' MaxPool: no rounding.)
  bool interiorPath = r == 2 && !indices && kind != PoolKind::Lp &&
                      (isFloat(t) || kind == PoolKind::Max);
  if (!interiorPath) {
    b.loop("n", s.N, [&](Expr n) {
      b.loop("c", s.C, [&](Expr ch) {
        b.loops(w.Out, [&](const std::vector<Expr> &o) { element(n, ch, o); }, "o");
      });
    });
    return;
  }
  int64_t taps = w.Kernel[0] * w.Kernel[1];
  auto tap = [&](const Expr &n, const Expr &ch, const Expr &oy, const Expr &ox, const Expr &kh,
                 const Expr &kw) {
    return x.load({n, ch, oy * w.Strides[0] + kh * w.Dilations[0] - w.PadBegin[0],
                   ox * w.Strides[1] + kw * w.Dilations[1] - w.PadBegin[1]});
  };
  auto combine = [&](const Expr &acc, const Expr &v) {
    return kind == PoolKind::Max ? max(acc, v) : acc + v;
  };
  auto finish = [&](const Expr &v) {
    return kind == PoolKind::Average ? v / constant(t, (double)taps) : v;
  };
  auto interior = [&](const Expr &n, const Expr &ch, const Expr &oy, const Expr &ox) {
    Expr v;
    for (int64_t kh = 0; kh < w.Kernel[0]; ++kh)
      for (int64_t kw = 0; kw < w.Kernel[1]; ++kw) {
        Expr in = tap(n, ch, oy, ox, indexConst(kh), indexConst(kw));
        v = v ? combine(v, in) : in;
      }
    y.store({n, ch, oy, ox}, finish(v));
  };
  // The interior of row oy, [from, to), for a window of many taps.
  auto interiorLoops = [&](const Expr &n, const Expr &ch, const Expr &oy, int64_t from,
                           int64_t to) {
    int64_t width = to - from, blockWidth = std::min(width, kLoopedRowBlock);
    int64_t blocks = (width + blockWidth - 1) / blockWidth;
    b.loop("ob", blocks, [&](Expr ob) {
      // The last block is shifted back to end at `to` (its first outputs
      // are computed twice, to the same values).
      Expr offset = ob * blockWidth;
      if (width % blockWidth)
        offset = min(offset, indexConst(width - blockWidth));
      Expr start = indexConst(from) + offset;
      Local acc = b.local("acc", t, blockWidth);
      Expr init = kind == PoolKind::Max ? lowestValue(t) : constant(t, 0);
      b.loop("j", blockWidth, [&](Expr j) { b.set(acc, j, init); });
      b.loop("kh", w.Kernel[0], [&](Expr kh) {
        b.loop("kw", w.Kernel[1], [&](Expr kw) {
          b.loop("j", blockWidth, [&](Expr j) {
            b.set(acc, j, combine(acc.get(j), tap(n, ch, oy, start + j, kh, kw)));
          });
        });
      });
      b.loop("j", blockWidth,
             [&](Expr j) { y.store({n, ch, oy, start + j}, finish(acc.get(j))); });
    });
  };
  auto borderRows = [&](const Expr &n, const Expr &ch, const Expr &from, const Expr &to) {
    b.loop("oh", from, to, [&](Expr oy) {
      b.loop("ow", indexConst(0), indexConst(w.Out[1]), [&](Expr ox) { element(n, ch, {oy, ox}); });
    });
  };
  auto [rlo, rhi] = interiorRange(w, 0, s.InSpatial[0]);
  auto [clo, chi] = interiorRange(w, 1, s.InSpatial[1]);
  b.loop("n", s.N, [&](Expr n) {
    b.loop("c", s.C, [&](Expr ch) {
      borderRows(n, ch, indexConst(0), rlo);
      b.loop("oh", rlo, rhi, [&](Expr oy) {
        b.loop("ow", indexConst(0), clo, [&](Expr ox) { element(n, ch, {oy, ox}); });
        if (taps <= kMaxUnrolledTerms)
          b.loop("ow", clo, chi, [&](Expr ox) { interior(n, ch, oy, ox); });
        else if (chi->IntValue > clo->IntValue)
          interiorLoops(n, ch, oy, clo->IntValue, chi->IntValue);
        b.loop("ow", chi, indexConst(w.Out[1]), [&](Expr ox) { element(n, ch, {oy, ox}); });
      });
      borderRows(n, ch, rhi, indexConst(w.Out[0]));
    });
  });
}

// --- Global pooling ----------------------------------------------------------

void inferGlobalPool(ir::Node &n, PoolKind kind) {
  if (kind == PoolKind::Max)
    requireDType(n, 0, {DType::F16, DType::BF16, DType::F32, DType::F64,
                        DType::I8, DType::U8});
  else
    requireFloat(n, 0);
  Shape x = n.inShape(0);
  if (x.size() < 2)
    n.error() << "input must have rank 2 or more (N, C, spatial...), got "
              << shapeToString(x);
  if (kind == PoolKind::Lp)
    lpNorm(n);
  for (size_t d = 2; d < x.size(); ++d)
    x[d] = 1;
  n.setOutput(0, n.inDType(0), x);
}

void lowerGlobalPool(LowerCtx &c, PoolKind kind) {
  TensorRef x = c.in(0), y = c.out(0);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.rank(); ++d)
    axes.push_back((int64_t)d);
  DType t = x.computeType();
  Reduction r;
  r.AccType = t;
  if (kind == PoolKind::Max) {
    r.Init = lowestValue(t);
    r.Combine = [](Expr a, Expr v) { return max(a, v); };
  } else {
    r.Init = constant(t, 0);
    r.Combine = [](Expr a, Expr v) { return a + v; };
  }
  if (kind == PoolKind::Average) {
    r.Finish = [](Expr a, Expr n) {
      return a / countAs(a->Type, n->isConst() ? indexConst(std::max<int64_t>(n->IntValue, 1)) : n);
    };
  } else if (kind == PoolKind::Lp) {
    double p = lpNorm(c.node());
    r.Map = [p](Expr v) { return lpPower(v, p); };
    r.Finish = [p](Expr a, Expr) { return lpRoot(a, p); };
  }
  lowerReduction(c, x, y, axes, r);
}

// --- MaxUnpool -----------------------------------------------------------------

/// The unpooled shape implied by kernel_shape, strides and pads.
Shape inferredUnpoolShape(const ir::Node &n) {
  const Shape &x = n.inShape(0);
  size_t r = x.size() - 2;
  std::vector<int64_t> kernel = n.requireInts("kernel_shape");
  std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (kernel.size() != r || strides.size() != r || pads.size() != 2 * r)
    n.error() << "kernel_shape/strides/pads do not match " << r
              << " spatial dimensions";
  Shape out = {x[0], x[1]};
  for (size_t d = 0; d < r; ++d) {
    int64_t e = (x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + r];
    if (e < 0)
      n.error() << "the unpooled extent of dimension " << d + 2 << " is negative";
    out.push_back(e);
  }
  return out;
}

Shape unpoolShape(const ir::Node &n) {
  const Shape &x = n.inShape(0);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more, got " << shapeToString(x);
  if (n.inShape(1) != x)
    n.error() << "indices " << shapeToString(n.inShape(1))
              << " must have the shape of X " << shapeToString(x);
  Shape inferred = inferredUnpoolShape(n);
  if (n.hasInput(2)) {
    std::vector<int64_t> shape =
        n.constInputInts(2, "output_shape determines the output shape");
    if (shape.size() != x.size())
      n.error() << "output_shape has " << shape.size() << " entries, expected "
                << x.size();
    if (shape[0] != x[0] || shape[1] != x[1])
      n.error() << "output_shape " << shapeToString(shape)
                << " must keep the batch and channel extents of X";
    for (int64_t d : shape)
      if (d < 0)
        n.error() << "output_shape has a negative extent";
    return shape;
  }
  return inferred;
}

void inferMaxUnpool(ir::Node &n) {
  requireFloat(n, 0);
  requireDType(n, 1, {DType::I64});
  n.setOutput(0, n.inDType(0), unpoolShape(n));
}

void lowerMaxUnpool(LowerCtx &c) {
  TensorRef x = c.in(0), idx = c.in(1), y = c.out(0);
  KernelBuilder &b = c.b();
  int64_t total = y.numel();
  if (total == 0)
    return;
  // The indices are flat positions in the inferred unpooled shape; an
  // explicit output_shape places each element at the same coordinates of
  // the (possibly larger) output.
  Shape inferred = inferredUnpoolShape(c.node());
  int64_t inferredTotal = numElements(inferred);
  DType t = y.computeType();
  b.loop("i", total, [&](Expr i) { y.storeFlat(i, constant(t, 0)); });
  b.loop("j", x.numel(), [&](Expr j) {
    Local k = b.local("k", toIndex(idx.loadFlat(j)));
    Expr inRange = land(ge(k.get(), indexConst(0)), lt(k.get(), indexConst(inferredTotal)));
    if (inferred == y.shape()) {
      b.ifThen(inRange, [&] { y.storeFlat(k.get(), x.loadFlat(j)); });
      return;
    }
    std::vector<Expr> coord(inferred.size());
    Expr rest = k.get(), ok = inRange;
    for (size_t d = inferred.size(); d-- > 0;) {
      int64_t e = std::max<int64_t>(inferred[d], 1);
      coord[d] = floorMod(rest, indexConst(e));
      rest = floorDiv(rest, indexConst(e));
      ok = land(ok, lt(coord[d], indexConst(y.shape()[d])));
    }
    b.ifThen(ok, [&] { y.store(coord, x.loadFlat(j)); });
  });
}

// --- MaxRoiPool ------------------------------------------------------------------

void inferMaxRoiPool(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  const Shape &x = n.inShape(0), &rois = n.inShape(1);
  if (x.size() != 4)
    n.error() << "X must have rank 4, got " << shapeToString(x);
  if (rois.size() != 2 || rois[1] != 5)
    n.error() << "rois must have shape [num_rois, 5], got " << shapeToString(rois);
  std::vector<int64_t> pooled = n.requireInts("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1)
    n.error() << "pooled_shape must have two positive entries";
  n.setOutput(0, n.inDType(0), {rois[0], x[1], pooled[0], pooled[1]});
}

void lowerMaxRoiPool(LowerCtx &c) {
  const ir::Node &node = c.node();
  TensorRef x = c.in(0), rois = c.in(1), y = c.out(0);
  std::vector<int64_t> pooled = node.requireInts("pooled_shape");
  double scale = node.attrFloat("spatial_scale", 1.0);
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t PH = pooled[0], PW = pooled[1];
  KernelBuilder &b = c.b();
  DType t = x.computeType();
  if (y.numel() == 0)
    return;
  // Rounds half away from zero, as the reference (C round) does.
  auto roundIdx = [&](Expr v) {
    return toIndex(select(ge(v, 0.0), floor(v + 0.5), ceil(v - 0.5)));
  };
  b.loop("r", rois.dim(0), [&](Expr r) {
    Expr batch = clamp(toIndex(rois.load({r, indexConst(0)})), indexConst(0),
                       indexConst(N - 1));
    Local x1 = b.local("x1", roundIdx(rois.load({r, indexConst(1)}) * scale));
    Local y1 = b.local("y1", roundIdx(rois.load({r, indexConst(2)}) * scale));
    Local x2 = b.local("x2", roundIdx(rois.load({r, indexConst(3)}) * scale));
    Local y2 = b.local("y2", roundIdx(rois.load({r, indexConst(4)}) * scale));
    Expr rh = max(y2.get() - y1.get() + 1, indexConst(1));
    Expr rw = max(x2.get() - x1.get() + 1, indexConst(1));
    Local binH = b.local("bin_h", cast(t, rh) / (double)PH);
    Local binW = b.local("bin_w", cast(t, rw) / (double)PW);
    b.loop("c", C, [&](Expr ch) {
      b.loop("ph", PH, [&](Expr ph) {
        Expr hs = toIndex(floor(cast(t, ph) * binH.get())) + y1.get();
        Expr he = toIndex(ceil(cast(t, ph + 1) * binH.get())) + y1.get();
        Local h0 = b.local("h0", clamp(hs, indexConst(0), indexConst(H)));
        Local h1 = b.local("h1", clamp(he, indexConst(0), indexConst(H)));
        b.loop("pw", PW, [&](Expr pw) {
          Expr ws = toIndex(floor(cast(t, pw) * binW.get())) + x1.get();
          Expr we = toIndex(ceil(cast(t, pw + 1) * binW.get())) + x1.get();
          Local w0 = b.local("w0", clamp(ws, indexConst(0), indexConst(W)));
          Local w1 = b.local("w1", clamp(we, indexConst(0), indexConst(W)));
          Local acc = b.local("acc", lowestValue(t));
          b.loop("h", h0.get(), h1.get(), [&](Expr h) {
            b.loop("w", w0.get(), w1.get(), [&](Expr wv) {
              b.set(acc, max(acc.get(), x.load({batch, ch, h, wv})));
            });
          });
          Expr empty = lor(le(h1.get(), h0.get()), le(w1.get(), w0.get()));
          y.store({r, ch, ph, pw}, select(empty, constant(t, 0), acc.get()));
        });
      });
    });
  });
}

} // namespace

MLCC_OPS(Pool) {
  const std::pair<const char *, PoolKind> pools[] = {
      {"MaxPool", PoolKind::Max},
      {"AveragePool", PoolKind::Average},
      {"LpPool", PoolKind::Lp}};
  for (auto [name, kind] : pools)
    R.add({.Name = name, .SinceVersion = 1, .Fusion = FusionClass::Opaque,
           .Infer = [kind](ir::Node &n) { inferPool(n, kind); },
           .Lower = [kind](LowerCtx &c) { lowerPool(c, kind); }});
  const std::pair<const char *, PoolKind> globals[] = {
      {"GlobalMaxPool", PoolKind::Max},
      {"GlobalAveragePool", PoolKind::Average},
      {"GlobalLpPool", PoolKind::Lp}};
  for (auto [name, kind] : globals)
    R.add({.Name = name, .SinceVersion = 1, .Fusion = FusionClass::Reduction,
           .Infer = [kind](ir::Node &n) { inferGlobalPool(n, kind); },
           .Lower = [kind](LowerCtx &c) { lowerGlobalPool(c, kind); },
           .RunTimeExtents = true}); // lowerReduction's loops and count
  R.add({.Name = "MaxUnpool", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferMaxUnpool, .Lower = lowerMaxUnpool});
  R.add({.Name = "MaxRoiPool", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferMaxRoiPool, .Lower = lowerMaxRoiPool});
}

} // namespace mlcc::ops
