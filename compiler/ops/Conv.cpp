//===- Conv.cpp - Conv (N-D, grouped, dilated, padded) --------------------===//
//
// The geometry and the loop nest are shared with the integer convolutions
// (compiler/ops/Contraction.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferConv(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  ConvShape s = convShape(n, 0, 1);
  if (n.hasInput(2) && n.inShape(2) != Shape{s.M})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << ", expected ["
              << s.M << "]";
  n.setOutput(0, n.inDType(0), s.outShape());
}

/// A 2-D convolution through the register-tiled generator (weights packed
/// by pack-weights): for each output row, rows of the tile are output
/// columns and its columns output channels. A padded input is first copied
/// into a zero-bordered scratch image so that the inner loop needs no bounds.
void lowerConvTiled(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), y = c.out(0);
  const Window &w = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group;
  int64_t h = s.InSpatial[0], wd = s.InSpatial[1];
  int64_t kh = w.Kernel[0], kw = w.Kernel[1], oh = w.Out[0], ow = w.Out[1];
  int64_t hp = std::max(h + w.PadBegin[0] + w.PadEnd[0],
                        (oh - 1) * w.Strides[0] + (kh - 1) * w.Dilations[0] + 1);
  int64_t wp = std::max(wd + w.PadBegin[1] + w.PadEnd[1],
                        (ow - 1) * w.Strides[1] + (kw - 1) * w.Dilations[1] + 1);
  bool padded = hp != h || wp != wd;
  TensorRef src = padded ? c.scratch("xpad", x.computeType(), {s.C, hp, wp}) : x;
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  TensorRef packed = c.in(po.Input);
  int64_t panels = (mg + po.Tile.Panel - 1) / po.Tile.Panel;

  b.loop("n", s.N, [&](Expr n) {
    Expr image = padded ? indexConst(0) : n * (s.C * h * wd);
    if (padded) {
      b.loop("i", s.C * hp * wp, [&](Expr i) {
        src.storeFlat(i, constant(src.computeType(), 0));
      });
      b.loops({s.C, h}, [&](const std::vector<Expr> &i) {
        b.loop("iw", wd, [&](Expr iw) {
          src.storeFlat((i[0] * hp + i[1] + w.PadBegin[0]) * wp + iw + w.PadBegin[1],
                        x.load({n, i[0], i[1], iw}));
        });
      }, "c");
    }
    b.loop("g", s.Group, [&](Expr g) {
      b.loop("oh", oh, [&](Expr oy) {
        TiledContraction t;
        t.Rows = ow;
        t.Cols = mg;
        t.Reduce = {cg, kh, kw};
        t.Tile = po.Tile;
        t.Acc = y.computeType();
        t.PackedB = packed;
        t.FirstPanel = g * panels;
        t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
          Expr row = oy * w.Strides[0] + k[1] * w.Dilations[0];
          Expr col = r * w.Strides[1] + k[2] * w.Dilations[1];
          return cast(t.Acc, src.loadFlat(image + ((g * cg + k[0]) * hp + row) * wp + col));
        };
        t.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
          Expr m = g * mg + col;
          y.store({n, m, oy, r}, bias ? acc + bias->load({m}) : acc);
        };
        lowerTiledContraction(c, t);
      }, LoopKind::Parallel);
    });
  });
}

void lowerConv(LowerCtx &c) {
  ConvShape s = convShape(c.node(), 0, 1);
  if (auto po = packedOperand(c.node())) {
    lowerConvTiled(c, s, *po);
    return;
  }
  TensorRef x = c.in(0), w = c.in(1), y = c.out(0);
  ConvSpec spec;
  spec.Acc = y.computeType();
  spec.LoadX = [&](const std::vector<Expr> &i) { return x.load(i); };
  spec.LoadW = [&](const std::vector<Expr> &i) { return w.load(i); };
  if (c.hasIn(2)) {
    TensorRef bias = c.in(2);
    spec.Init = [bias](const Expr &m) { return bias.load({m}); };
  }
  lowerConvolution(c, s, y, spec);
}

} // namespace

MLCC_OPS(Conv) {
  R.add({.Name = "Conv", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferConv, .Lower = lowerConv});
}

} // namespace mlcc::ops
