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

/// The input of a 2-D convolution as the fast paths read it: when the
/// window reaches into the padding, a zero-bordered copy of one image in a
/// scratch buffer (so that the inner loops need no bounds), else x itself.
struct PaddedInput {
  TensorRef Src;
  int64_t C, H, W, Hp, Wp;
  int64_t PadTop, PadLeft;
  bool Padded;

  PaddedInput(LowerCtx &c, const ConvShape &s, const TensorRef &x) {
    const Window &w = s.W;
    C = s.C;
    H = s.InSpatial[0];
    W = s.InSpatial[1];
    PadTop = w.PadBegin[0];
    PadLeft = w.PadBegin[1];
    Hp = std::max(H + w.PadBegin[0] + w.PadEnd[0],
                  (w.Out[0] - 1) * w.Strides[0] + (w.Kernel[0] - 1) * w.Dilations[0] + 1);
    Wp = std::max(W + w.PadBegin[1] + w.PadEnd[1],
                  (w.Out[1] - 1) * w.Strides[1] + (w.Kernel[1] - 1) * w.Dilations[1] + 1);
    Padded = Hp != H || Wp != W;
    Src = Padded ? c.scratch("xpad", x.computeType(), {C, Hp, Wp}) : x;
  }

  /// Copies image n into the scratch buffer (nothing when not padded).
  void fill(KernelBuilder &b, const TensorRef &x, const Expr &n) const {
    if (!Padded)
      return;
    b.loop("i", C * Hp * Wp, [&](Expr i) { Src.storeFlat(i, constant(Src.computeType(), 0)); });
    b.loops({C, H}, [&](const std::vector<Expr> &i) {
      b.loop("iw", W, [&](Expr iw) {
        Src.storeFlat((i[0] * Hp + i[1] + PadTop) * Wp + iw + PadLeft,
                      x.load({n, i[0], i[1], iw}));
      });
    }, "c");
  }

  /// The element at padded coordinates (row, col) of channel ch of image n.
  Expr load(const Expr &n, const Expr &ch, const Expr &row, const Expr &col) const {
    Expr image = Padded ? indexConst(0) : n * (C * H * W);
    return Src.loadFlat(image + (ch * Hp + row) * Wp + col);
  }
};

/// A 2-D convolution through the register-tiled generator (weights packed
/// by pack-weights): for each output row, rows of the tile are output
/// columns and its columns output channels.
void lowerConvTiled(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), y = c.out(0);
  const Window &w = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group;
  PaddedInput in(c, s, x);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  TensorRef packed = c.in(po.Input);
  int64_t panels = (mg + po.Tile.Panel - 1) / po.Tile.Panel;

  b.loop("n", s.N, [&](Expr n) {
    in.fill(b, x, n);
    b.loop("g", s.Group, [&](Expr g) {
      b.loop("oh", w.Out[0], [&](Expr oy) {
        TiledContraction t;
        t.Rows = w.Out[1];
        t.Cols = mg;
        t.Reduce = {cg, w.Kernel[0], w.Kernel[1]};
        t.Tile = po.Tile;
        t.Acc = y.computeType();
        t.PackedB = packed;
        t.FirstPanel = g * panels;
        t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
          return cast(t.Acc, in.load(n, g * cg + k[0], oy * w.Strides[0] + k[1] * w.Dilations[0],
                                     r * w.Strides[1] + k[2] * w.Dilations[1]));
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

/// A pointwise convolution (1x1, stride 1, no padding) as out[m, p] =
/// sum_c W[m, c] x[c, p] per group and image: the tile's rows are output
/// channels (weights broadcast), its columns pixels, read and written as
/// contiguous vectors.
void lowerPointwise(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), wt = c.in(1), y = c.out(0);
  int64_t cg = s.C / s.Group, mg = s.M / s.Group;
  int64_t hw = numElements(s.W.Out);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  b.loop("n", s.N, [&](Expr n) {
    b.loop("g", s.Group, [&](Expr g) {
      TiledContraction t;
      t.Rows = mg;
      t.Cols = hw;
      t.Reduce = {cg};
      t.Tile = po.Tile;
      t.Acc = y.computeType();
      t.Parallel = true;
      t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
        return cast(t.Acc, wt.loadFlat((g * mg + r) * cg + k[0]));
      };
      t.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
        return vload(x.buffer(), (n * s.C + g * cg + k[0]) * hw + col0, (int)po.Tile.Lanes);
      };
      t.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
        Expr m = g * mg + r;
        y.storeFlat((n * s.M + m) * hw + col, bias ? acc + bias->load({m}) : acc);
      };
      lowerTiledContraction(c, t);
    });
  });
}

/// A 2-D convolution with one input channel per group (depthwise, with a
/// small channel multiplier): each output element is the sum of its window's
/// taps, written out as one expression, so that the loop over an output row
/// reads the padded input contiguously (stride 1) and vectorizes.
void lowerDepthwise(LowerCtx &c, const ConvShape &s) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), wt = c.in(1), y = c.out(0);
  const Window &w = s.W;
  int64_t mg = s.M / s.Group;
  PaddedInput in(c, s, x);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  b.loop("n", s.N, [&](Expr n) {
    in.fill(b, x, n);
    b.loop("m", s.M, [&](Expr m) {
      Expr ch = m / mg;
      b.loop("oh", w.Out[0], [&](Expr oy) {
        b.loop("ow", w.Out[1], [&](Expr ox) {
          Expr v = bias ? bias->load({m}) : constant(y.computeType(), 0);
          for (int64_t kh = 0; kh < w.Kernel[0]; ++kh)
            for (int64_t kw = 0; kw < w.Kernel[1]; ++kw)
              v = v + wt.load({m, indexConst(0), indexConst(kh), indexConst(kw)}) *
                          in.load(n, ch, oy * w.Strides[0] + kh * w.Dilations[0],
                                  ox * w.Strides[1] + kw * w.Dilations[1]);
          y.store({n, m, oy, ox}, v);
        });
      });
    }, LoopKind::Parallel);
  });
}

/// The plain loop nest's description of a float convolution.
ConvSpec plainConvSpec(LowerCtx &c) {
  TensorRef x = c.in(0), w = c.in(1);
  ConvSpec spec;
  spec.Acc = c.out(0).computeType();
  spec.LoadX = [x](const std::vector<Expr> &i) { return x.load(i); };
  spec.LoadW = [w](const std::vector<Expr> &i) { return w.load(i); };
  if (c.hasIn(2)) {
    TensorRef bias = c.in(2);
    spec.Init = [bias](const Expr &m) { return bias.load({m}); };
  }
  return spec;
}

void lowerConv(LowerCtx &c) {
  ConvShape s = convShape(c.node(), 0, 1);
  if (auto po = packedOperand(c.node())) {
    if (po->PixelColumns && c.in(0).buffer())
      lowerPointwise(c, s, *po);
    else if (po->PixelColumns)
      lowerConvolution(c, s, c.out(0), plainConvSpec(c));
    else
      lowerConvTiled(c, s, *po);
    return;
  }
  if (s.W.rank() == 2 && s.C == s.Group && s.W.Kernel[0] * s.W.Kernel[1] <= 49 &&
      c.node().inDType(0) == DType::F32) {
    lowerDepthwise(c, s);
    return;
  }
  lowerConvolution(c, s, c.out(0), plainConvSpec(c));
}

} // namespace

MLCC_OPS(Conv) {
  R.add({.Name = "Conv", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferConv, .Lower = lowerConv});
}

} // namespace mlcc::ops
