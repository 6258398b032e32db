//===- Detection.cpp - NonMaxSuppression, RoiAlign ------------------------===//
//
// NonMaxSuppression (opsets 10, 11): per batch and class, boxes whose score
// exceeds score_threshold (when given) are visited by decreasing score (ties:
// lower index first); a box is selected unless its IoU with an already
// selected box of the class is greater than iou_threshold, until
// max_output_boxes_per_class are selected. The number of selected boxes is
// the output's first dimension, so every input must be a compile-time
// constant: inference runs the algorithm to size the output, and the
// lowering (the same algorithm in kernel IR, in f32 like inference) then
// folds. Coordinates are [y1, x1, y2, x2] (any diagonal corners) or, with
// center_point_box=1, [x_center, y_center, width, height].
//
// RoiAlign (opsets 10, 16): each output bin of a region averages (or takes
// the maximum of) bilinearly interpolated samples on a regular grid of
// sampling_ratio^2 points (adaptive: ceil(roi size / bin count) per axis,
// computed at run time). Opset 16 adds coordinate_transformation_mode
// (half_pixel shifts the region by -0.5 and allows regions smaller than a
// pixel); opset 10 behaves as output_half_pixel. The max mode takes the
// maximum over samples of the largest weighted corner value, as the
// reference does. Batch indices are clamped into [0, N).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>

namespace mlcc::ops {

using namespace kir;

namespace {

// --- NonMaxSuppression ----------------------------------------------------

struct NmsInputs {
  int64_t B = 0, S = 0, C = 0;
  bool Center = false;
  int64_t MaxOut = 0;
  bool HaveIou = false, HaveScore = false;
};

/// Whether an optional scalar input is given (present and non-empty).
bool haveScalar(const ir::Node &n, size_t i) {
  return n.hasInput(i) && numElements(n.inShape(i)) > 0;
}

NmsInputs nmsInputs(const ir::Node &n) {
  NmsInputs p;
  const Shape &bx = n.inShape(0), &sc = n.inShape(1);
  if (bx.size() != 3 || bx[2] != 4)
    n.error() << "boxes must have shape [batches, boxes, 4], got "
              << shapeToString(bx);
  if (sc.size() != 3 || sc[0] != bx[0] || sc[2] != bx[1])
    n.error() << "scores " << shapeToString(sc) << " do not match boxes "
              << shapeToString(bx) << " ([batches, classes, boxes] expected)";
  p.B = bx[0];
  p.S = bx[1];
  p.C = sc[1];
  int64_t cpb = n.attrInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1)
    n.error() << "center_point_box must be 0 or 1, got " << cpb;
  p.Center = cpb == 1;
  p.HaveIou = haveScalar(n, 3);
  p.HaveScore = haveScalar(n, 4);
  if (haveScalar(n, 2)) {
    requireDType(n, 2, {DType::I64});
    std::vector<int64_t> m = n.constInputInts(
        2, "max_output_boxes_per_class determines the output shape");
    p.MaxOut = std::max<int64_t>(m[0], 0);
  }
  return p;
}

/// The suppression test of two boxes, for float values or kernel
/// expressions (the operations and their order are the same in both).
template <typename V, typename Ops>
auto nmsSuppress(const V b1[4], const V b2[4], bool center, const V &thr,
                 const Ops &o) {
  V x1min, x1max, x2min, x2max, y1min, y1max, y2min, y2max;
  if (!center) {
    x1min = o.min(b1[1], b1[3]);
    x1max = o.max(b1[1], b1[3]);
    x2min = o.min(b2[1], b2[3]);
    x2max = o.max(b2[1], b2[3]);
    y1min = o.min(b1[0], b1[2]);
    y1max = o.max(b1[0], b1[2]);
    y2min = o.min(b2[0], b2[2]);
    y2max = o.max(b2[0], b2[2]);
  } else {
    V w1 = o.half(b1[2]), h1 = o.half(b1[3]);
    V w2 = o.half(b2[2]), h2 = o.half(b2[3]);
    x1min = o.sub(b1[0], w1);
    x1max = o.add(b1[0], w1);
    x2min = o.sub(b2[0], w2);
    x2max = o.add(b2[0], w2);
    y1min = o.sub(b1[1], h1);
    y1max = o.add(b1[1], h1);
    y2min = o.sub(b2[1], h2);
    y2max = o.add(b2[1], h2);
  }
  V ixmin = o.max(x1min, x2min), ixmax = o.min(x1max, x2max);
  V iymin = o.max(y1min, y2min), iymax = o.min(y1max, y2max);
  V inter = o.mul(o.sub(ixmax, ixmin), o.sub(iymax, iymin));
  V area1 = o.mul(o.sub(x1max, x1min), o.sub(y1max, y1min));
  V area2 = o.mul(o.sub(x2max, x2min), o.sub(y2max, y2min));
  V uni = o.sub(o.add(area1, area2), inter);
  return o.all({o.gt(ixmax, ixmin), o.gt(iymax, iymin), o.gtZero(inter),
                o.gtZero(area1), o.gtZero(area2), o.gtZero(uni),
                o.gt(o.div(inter, uni), thr)});
}

struct FloatOps {
  float min(float a, float b) const { return a >= b ? b : a; }
  float max(float a, float b) const { return a >= b ? a : b; }
  float half(float a) const { return a / 2.0f; }
  float add(float a, float b) const { return a + b; }
  float sub(float a, float b) const { return a - b; }
  float mul(float a, float b) const { return a * b; }
  float div(float a, float b) const { return a / b; }
  bool gt(float a, float b) const { return a > b; }
  bool gtZero(float a) const { return a > 0.0f; }
  bool all(std::initializer_list<bool> c) const {
    for (bool b : c)
      if (!b)
        return false;
    return true;
  }
};

struct ExprOps {
  Expr min(const Expr &a, const Expr &b) const { return select(ge(a, b), b, a); }
  Expr max(const Expr &a, const Expr &b) const { return select(ge(a, b), a, b); }
  Expr half(const Expr &a) const { return a / 2.0; }
  Expr add(const Expr &a, const Expr &b) const { return a + b; }
  Expr sub(const Expr &a, const Expr &b) const { return a - b; }
  Expr mul(const Expr &a, const Expr &b) const { return a * b; }
  Expr div(const Expr &a, const Expr &b) const { return a / b; }
  Expr gt(const Expr &a, const Expr &b) const { return kir::gt(a, b); }
  Expr gtZero(const Expr &a) const { return kir::gt(a, 0.0); }
  Expr all(std::initializer_list<Expr> c) const {
    Expr r;
    for (const Expr &e : c)
      r = r ? land(r, e) : e;
    return r;
  }
};

/// Runs NMS on the constant inputs: the number of selected boxes.
int64_t nmsCount(const ir::Node &n, const NmsInputs &p) {
  if (p.MaxOut == 0)
    return 0;
  const char *why = "NonMaxSuppression's output size depends on its inputs";
  TensorPtr boxes = n.constInput(0, why), scores = n.constInput(1, why);
  float iou = p.HaveIou ? (float)n.constInput(3, why)->doubleAt(0) : 0.0f;
  float sthr = p.HaveScore ? (float)n.constInput(4, why)->doubleAt(0) : 0.0f;
  int64_t total = 0;
  std::vector<int64_t> order, selected;
  for (int64_t b = 0; b < p.B; ++b) {
    for (int64_t c = 0; c < p.C; ++c) {
      auto score = [&](int64_t s) {
        return (float)scores->doubleAt((b * p.C + c) * p.S + s);
      };
      order.clear();
      for (int64_t s = 0; s < p.S; ++s)
        if (!p.HaveScore || score(s) > sthr)
          order.push_back(s);
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
        return score(x) > score(y);
      });
      selected.clear();
      for (int64_t s : order) {
        if ((int64_t)selected.size() >= p.MaxOut)
          break;
        float b1[4];
        for (int k = 0; k < 4; ++k)
          b1[k] = (float)boxes->doubleAt((b * p.S + s) * 4 + k);
        bool keep = true;
        for (int64_t t : selected) {
          float b2[4];
          for (int k = 0; k < 4; ++k)
            b2[k] = (float)boxes->doubleAt((b * p.S + t) * 4 + k);
          if (nmsSuppress<float>(b1, b2, p.Center, iou, FloatOps())) {
            keep = false;
            break;
          }
        }
        if (keep)
          selected.push_back(s);
      }
      total += (int64_t)selected.size();
    }
  }
  return total;
}

void inferNms(ir::Node &n) {
  requireDType(n, 0, {DType::F32});
  requireDType(n, 1, {DType::F32});
  for (size_t i : {3, 4})
    if (haveScalar(n, i))
      requireDType(n, i, {DType::F32});
  NmsInputs p = nmsInputs(n);
  n.setOutput(0, DType::I64, {nmsCount(n, p), 3});
}

void lowerNms(LowerCtx &c) {
  const ir::Node &n = c.node();
  NmsInputs p = nmsInputs(n);
  TensorRef y = c.out(0);
  KernelBuilder &b = c.b();
  int64_t rows = y.shape()[0];
  b.loop("i", y.numel(), [&](Expr i) { y.storeFlat(i, constantInt(DType::I64, 0)); });
  if (rows == 0 || p.MaxOut == 0 || p.S == 0)
    return;
  TensorRef boxes = c.in(0), scores = c.in(1);
  DType ct = boxes.computeType();
  Expr iou = p.HaveIou ? c.in(3).loadFlat(indexConst(0)) : constant(ct, 0.0);
  Expr sthr = p.HaveScore ? c.in(4).loadFlat(indexConst(0)) : constant(ct, 0.0);
  TensorRef cand = c.scratch("cand", DType::Bool, {p.S});
  TensorRef sel = c.scratch("sel", DType::Index, {p.S});
  Local row = b.local("row", indexConst(0));
  Local thrL = b.local("iou", iou);
  auto box = [&](const Expr &bi, const Expr &s, Expr out[4]) {
    for (int k = 0; k < 4; ++k)
      out[k] = boxes.load({bi, s, indexConst(k)});
  };
  b.loop("b", p.B, [&](Expr bi) {
    b.loop("c", p.C, [&](Expr ci) {
      b.loop("s", p.S, [&](Expr s) {
        Expr ok = p.HaveScore ? gt(scores.load({bi, ci, s}), sthr) : boolConst(true);
        cand.store({s}, ok);
      });
      Local nsel = b.local("nsel", indexConst(0));
      b.loop("it", p.S, [&](Expr) {
        b.ifThen(lt(nsel.get(), indexConst(p.MaxOut)), [&] {
          Local best = b.local("best", indexConst(-1));
          Local bestScore = b.local("best_score", constant(ct, 0.0));
          b.loop("s", p.S, [&](Expr s) {
            Expr sc = scores.load({bi, ci, s});
            Expr better = land(cand.load({s}),
                               lor(lt(best.get(), indexConst(0)),
                                   gt(sc, bestScore.get())));
            b.ifThen(better, [&] {
              b.set(best, s);
              b.set(bestScore, sc);
            });
          });
          b.ifThen(ge(best.get(), indexConst(0)), [&] {
            Expr cur = best.get();
            cand.store({cur}, boolConst(false));
            Local keep = b.local("keep", boolConst(true));
            b.loop("j", indexConst(0), nsel.get(), [&](Expr j) {
              Expr b1[4], b2[4];
              box(bi, cur, b1);
              box(bi, sel.load({j}), b2);
              Expr sup = nmsSuppress<Expr>(b1, b2, p.Center, thrL.get(), ExprOps());
              b.set(keep, land(keep.get(), lnot(sup)));
            });
            b.ifThen(keep.get(), [&] {
              sel.store({min(nsel.get(), indexConst(p.S - 1))}, cur);
              b.set(nsel, nsel.get() + 1);
              b.ifThen(lt(row.get(), indexConst(rows)), [&] {
                y.store({row.get(), indexConst(0)}, cast(DType::I64, bi));
                y.store({row.get(), indexConst(1)}, cast(DType::I64, ci));
                y.store({row.get(), indexConst(2)}, cast(DType::I64, cur));
              });
              b.set(row, row.get() + 1);
            });
          });
        });
      });
    });
  });
}

// --- RoiAlign -------------------------------------------------------------

struct RoiParams {
  int64_t OutH = 1, OutW = 1, Sampling = 0;
  double Scale = 1.0;
  bool HalfPixel = false, Max = false;
};

RoiParams roiParams(const ir::Node &n) {
  RoiParams p;
  const Shape &x = n.inShape(0), &rois = n.inShape(1), &bi = n.inShape(2);
  if (x.size() != 4)
    n.error() << "X must have rank 4, got " << shapeToString(x);
  if (rois.size() != 2 || rois[1] != 4)
    n.error() << "rois must have shape [num_rois, 4], got " << shapeToString(rois);
  if (bi.size() != 1 || bi[0] != rois[0])
    n.error() << "batch_indices " << shapeToString(bi) << " do not match rois "
              << shapeToString(rois);
  std::string mode = n.attrString("mode", "avg");
  if (mode != "avg" && mode != "max")
    n.error() << "unknown mode '" << mode << "'";
  p.Max = mode == "max";
  p.OutH = n.attrInt("output_height", 1);
  p.OutW = n.attrInt("output_width", 1);
  if (p.OutH < 1 || p.OutW < 1)
    n.error() << "output_height and output_width must be positive";
  p.Sampling = n.attrInt("sampling_ratio", 0);
  if (p.Sampling < 0)
    n.error() << "sampling_ratio must not be negative";
  p.Scale = n.attrFloat("spatial_scale", 1.0);
  if (n.Opset >= 16) {
    std::string ctm = n.attrString("coordinate_transformation_mode", "half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      n.error() << "unknown coordinate_transformation_mode '" << ctm << "'";
    p.HalfPixel = ctm == "half_pixel";
  }
  if ((x[2] == 0 || x[3] == 0 || x[0] == 0) && rois[0] > 0 && x[1] > 0)
    n.error() << "cannot pool from an empty X " << shapeToString(x);
  return p;
}

void inferRoiAlign(ir::Node &n) {
  requireFloat(n, 0);
  if (n.inDType(1) != n.inDType(0))
    n.error() << "rois have type " << dtypeOnnxName(n.inDType(1))
              << " but X has " << dtypeOnnxName(n.inDType(0));
  requireDType(n, 2, {DType::I64});
  RoiParams p = roiParams(n);
  n.setOutput(0, n.inDType(0),
              {n.inShape(1)[0], n.inShape(0)[1], p.OutH, p.OutW});
}

void lowerRoiAlign(LowerCtx &c) {
  RoiParams p = roiParams(c.node());
  TensorRef x = c.in(0), rois = c.in(1), bidx = c.in(2), y = c.out(0);
  if (y.numel() == 0)
    return;
  KernelBuilder &b = c.b();
  DType ct = y.computeType();
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  double off = p.HalfPixel ? 0.5 : 0.0;
  b.loop("r", y.shape()[0], [&](Expr r) {
    Local bn = b.local("batch", clamp(toIndex(bidx.load({r})), indexConst(0),
                                      indexConst(N - 1)));
    auto coord = [&](int k) {
      return rois.load({r, indexConst(k)}) * p.Scale - off;
    };
    Local sw = b.local("start_w", coord(0)), sh = b.local("start_h", coord(1));
    Expr rw = coord(2) - sw.get(), rh = coord(3) - sh.get();
    if (!p.HalfPixel) {
      rw = max(rw, 1.0);
      rh = max(rh, 1.0);
    }
    Local rwL = b.local("roi_w", rw), rhL = b.local("roi_h", rh);
    Local bh = b.local("bin_h", rhL.get() / (double)p.OutH);
    Local bw = b.local("bin_w", rwL.get() / (double)p.OutW);
    Expr gh = p.Sampling > 0 ? indexConst(p.Sampling)
                             : toIndex(ceil(rhL.get() / (double)p.OutH));
    Expr gw = p.Sampling > 0 ? indexConst(p.Sampling)
                             : toIndex(ceil(rwL.get() / (double)p.OutW));
    Local ghL = b.local("grid_h", gh), gwL = b.local("grid_w", gw);
    Local count = b.local("count", max(ghL.get() * gwL.get(), indexConst(1)));
    b.loop("c", C, [&](Expr ci) {
      b.loop("ph", p.OutH, [&](Expr ph) {
        b.loop("pw", p.OutW, [&](Expr pw) {
          Local acc = b.local("acc", constant(ct, 0.0));
          Local first = b.local("first", boolConst(true));
          b.loop("iy", indexConst(0), ghL.get(), [&](Expr iy) {
            Local yy = b.local("yy", sh.get() + cast(ct, ph) * bh.get() +
                                         (cast(ct, iy) + 0.5) * bh.get() /
                                             cast(ct, ghL.get()));
            b.loop("ix", indexConst(0), gwL.get(), [&](Expr ix) {
              Expr xx = sw.get() + cast(ct, pw) * bw.get() +
                        (cast(ct, ix) + 0.5) * bw.get() / cast(ct, gwL.get());
              Local xL = b.local("x", xx);
              Expr yv = yy.get(), xv = xL.get();
              Expr outside = lor(lor(lt(yv, -1.0), gt(yv, (double)H)),
                                 lor(lt(xv, -1.0), gt(xv, (double)W)));
              Local ys = b.local("ys", max(yv, 0.0));
              Local xs = b.local("xs", max(xv, 0.0));
              Local yl = b.local("y_low", clamp(toIndex(ys.get()), indexConst(0),
                                                indexConst(H - 1)));
              Local xl = b.local("x_low", clamp(toIndex(xs.get()), indexConst(0),
                                                indexConst(W - 1)));
              Expr yEdge = ge(toIndex(ys.get()), indexConst(H - 1));
              Expr xEdge = ge(toIndex(xs.get()), indexConst(W - 1));
              Expr yh = select(yEdge, indexConst(H - 1), min(yl.get() + 1, indexConst(H - 1)));
              Expr xh = select(xEdge, indexConst(W - 1), min(xl.get() + 1, indexConst(W - 1)));
              Expr ly = select(yEdge, constant(ct, 0.0), ys.get() - cast(ct, yl.get()));
              Expr lx = select(xEdge, constant(ct, 0.0), xs.get() - cast(ct, xl.get()));
              Local lyL = b.local("ly", ly), lxL = b.local("lx", lx);
              Expr hy = 1.0 - lyL.get(), hx = 1.0 - lxL.get();
              Expr zero = constant(ct, 0.0);
              auto at = [&](const Expr &yi, const Expr &xi) {
                return x.load({bn.get(), ci, yi, xi});
              };
              Expr t1 = hy * hx * at(yl.get(), xl.get());
              Expr t2 = hy * lxL.get() * at(yl.get(), xh);
              Expr t3 = lyL.get() * hx * at(yh, xl.get());
              Expr t4 = lyL.get() * lxL.get() * at(yh, xh);
              if (p.Max) {
                Expr v = select(outside, zero, max(max(max(t1, t2), t3), t4));
                b.set(acc, select(first.get(), v, max(acc.get(), v)));
                b.set(first, boolConst(false));
              } else {
                Expr v = select(outside, zero, t1 + t2 + t3 + t4);
                b.set(acc, acc.get() + v);
              }
            });
          });
          Expr out = p.Max ? acc.get() : acc.get() / cast(ct, count.get());
          y.store({r, ci, ph, pw}, out);
        });
      });
    });
  });
}

} // namespace

MLCC_OPS(Detection) {
  R.add({.Name = "NonMaxSuppression", .SinceVersion = 10,
         .Fusion = FusionClass::Opaque, .Infer = inferNms, .Lower = lowerNms});
  for (int64_t v : {10, 16})
    R.add({.Name = "RoiAlign", .SinceVersion = v, .Fusion = FusionClass::Opaque,
           .Infer = inferRoiAlign, .Lower = lowerRoiAlign});
}

} // namespace mlcc::ops
