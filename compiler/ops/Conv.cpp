//===- Conv.cpp - Conv (N-D, grouped, dilated, padded) --------------------===//
//
// The geometry and the loop nest are shared with the integer convolutions
// (compiler/ops/Contraction.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/ops/Winograd.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferConv(ir::Node &n) {
  requireFloat(n, 0);
  // The ONNX inputs share one type; a packed operand added by pack-weights
  // (input 3) may differ: f32 for 16-bit float weights.
  requireSameDTypes(n, 3);
  ConvShape s = convShape(n, 0, 1);
  if (n.hasInput(2) && n.inShape(2) != Shape{s.M})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << ", expected ["
              << s.M << "]";
  n.setOutput(0, n.inDType(0), s.outShape());
}

/// The input of a 2-D convolution as the fast paths read it: when the
/// window reaches into the padding, a zero-bordered copy of one image in a
/// scratch buffer (so that the inner loops need no bounds), else x itself
/// (a 16-bit float x is copied too, into f32).
struct PaddedInput {
  TensorRef Src;
  int64_t C, H, W, Hp, Wp;
  int64_t PadTop, PadLeft;
  bool Padded;

  /// With `scratch` false only the geometry is computed (the caller pads
  /// into a buffer of its own). The padded image has at least `minHp` rows
  /// and `minWp` columns (zeros past the padding).
  PaddedInput(LowerCtx &c, const ConvShape &s, const TensorRef &x, bool scratch = true,
              int64_t minHp = 0, int64_t minWp = 0, bool halfTile = false) {
    const Window &w = s.W;
    C = s.C;
    H = s.InSpatial[0];
    W = s.InSpatial[1];
    PadTop = w.PadBegin[0];
    PadLeft = w.PadBegin[1];
    Hp = std::max({H + w.PadBegin[0] + w.PadEnd[0],
                   (w.Out[0] - 1) * w.Strides[0] + (w.Kernel[0] - 1) * w.Dilations[0] + 1,
                   minHp});
    Wp = std::max({W + w.PadBegin[1] + w.PadEnd[1],
                   (w.Out[1] - 1) * w.Strides[1] + (w.Kernel[1] - 1) * w.Dilations[1] + 1,
                   minWp});
    // A 16-bit float input is staged in f32 even without padding: the
    // tiles then read each element as a plain f32 (a broadcast from memory)
    // instead of converting it once for every tile that reads it. A tile
    // that accumulates in float16 (`halfTile`) reads float16: the copy, if
    // padded, keeps the type.
    Padded = Hp != H || Wp != W || (scratch && isNarrowFloat(x.dtype()) && !halfTile);
    Src = Padded && scratch
              ? c.scratch("xpad", halfTile ? x.dtype() : x.computeType(), {C, Hp, Wp})
              : x;
  }

  /// Copies image n into the scratch buffer (nothing when not padded),
  /// writing each element once: the rows above and below the image and the
  /// columns left and right of each of its rows are zeroed, the rest copied.
  void fill(KernelBuilder &b, const TensorRef &x, const Expr &n) const {
    if (!Padded)
      return;
    Expr zero = constant(Src.computeType(), 0);
    int64_t padBottom = Hp - H - PadTop, padRight = Wp - W - PadLeft;
    b.loop("c", C, [&](Expr ch) {
      Expr plane = ch * (Hp * Wp);
      if (PadTop > 0)
        b.loop("i", PadTop * Wp, [&](Expr i) { Src.storeFlat(plane + i, zero); });
      b.loop("ih", H, [&](Expr ih) {
        Expr row = plane + (ih + PadTop) * Wp;
        if (PadLeft > 0)
          b.loop("i", PadLeft, [&](Expr i) { Src.storeFlat(row + i, zero); });
        b.loop("iw", W, [&](Expr iw) {
          // (Flat: a 1-D convolution's [N, C, W] input is read as one row.)
          Src.storeFlat(row + PadLeft + iw,
                        x.loadFlat(n * (C * H * W) + ch * (H * W) + ih * W + iw));
        });
        if (padRight > 0)
          b.loop("i", padRight, [&](Expr i) { Src.storeFlat(row + PadLeft + W + i, zero); });
      });
      if (padBottom > 0)
        b.loop("i", padBottom * Wp, [&](Expr i) {
          Src.storeFlat(plane + (PadTop + H) * Wp + i, zero);
        });
    });
  }

  /// The flat offset of padded coordinates (row, col) of channel ch of
  /// image n in Src.
  Expr offset(const Expr &n, const Expr &ch, const Expr &row, const Expr &col) const {
    Expr image = Padded ? indexConst(0) : n * (C * H * W);
    return image + (ch * Hp + row) * Wp + col;
  }
  /// The element at padded coordinates (row, col) of channel ch of image n.
  Expr load(const Expr &n, const Expr &ch, const Expr &row, const Expr &col) const {
    return Src.loadFlat(offset(n, ch, row, col));
  }
};

/// A 2-D convolution through the register-tiled generator (weights packed
/// by plan-kernels): per image and group, the tile's rows are output pixels
/// (all of them, row-major, so that a small feature map still fills whole
/// tiles and every weight panel is read once per tile of pixels) and its
/// columns output channels.
void lowerConvTiled(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), y = c.out(0);
  const Window &w = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group;
  int64_t ow = w.Out[1], pixels = w.Out[0] * w.Out[1];
  PaddedInput in(c, s, x, true, 0, 0, po.Tile.HalfAccumulate);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  TensorRef packed = c.in(po.Input);
  int64_t panels = (mg + po.Tile.Panel - 1) / po.Tile.Panel;

  b.loop("n", s.N, [&](Expr n) {
    in.fill(b, x, n);
    b.loop("g", s.Group, [&](Expr g) {
      TiledContraction t;
      t.Rows = pixels;
      t.Cols = mg;
      t.Reduce = {cg, w.Kernel[0], w.Kernel[1]};
      t.Tile = po.Tile;
      t.Acc = y.computeType();
      t.PackedB = packed;
      t.FirstPanel = g * panels;
      t.Parallel = true;
      t.RowsContiguous = true;
      t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
        Expr oy = r / ow, ox = r % ow;
        return cast(t.Acc, in.load(n, g * cg + k[0], oy * w.Strides[0] + k[1] * w.Dilations[0],
                                   ox * w.Strides[1] + k[2] * w.Dilations[1]));
      };
      t.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
        Expr m = g * mg + col;
        y.storeFlat((n * s.M + m) * pixels + r, bias ? acc + bias->load({m}) : acc);
      };
      lowerTiledContraction(c, t);
    });
  });
}

/// A 2-D convolution through the register-tiled generator with output
/// pixels as the tile's columns (plan-kernels chooses this when the output
/// rows are wide): per image, group and output row, out[m, ox] = sum over
/// (input channel, kh, kw) of W[m, ..] x[.., oy * sh + kh * dh, ox * sw + kw *
/// dw]. The weights are broadcast, the input is read as vectors along the
/// row (strided for a strided convolution), and the output and the fused
/// epilogue are stored as contiguous vectors.
void lowerConvPixelColumns(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), wt = c.in(po.Input > 0 ? po.Input : 1), y = c.out(0);
  const Window &w = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group;
  int64_t oh = w.Out[0], ow = w.Out[1], taps = w.Kernel[0] * w.Kernel[1];
  PaddedInput in(c, s, x, true, 0, 0, po.Tile.HalfAccumulate);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  b.loop("n", s.N, [&](Expr n) {
    in.fill(b, x, n);
    b.loop("g", s.Group, [&](Expr g) {
      b.loop("oh", oh, [&](Expr oy) {
        TiledContraction t;
        t.Rows = mg;
        t.Cols = ow;
        t.Reduce = {cg, w.Kernel[0], w.Kernel[1]};
        t.Tile = po.Tile;
        t.Acc = y.computeType();
        t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
          return cast(t.Acc, wt.loadFlat(((g * mg + r) * cg + k[0]) * taps +
                                         k[1] * w.Kernel[1] + k[2]));
        };
        t.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
          Expr at = in.offset(n, g * cg + k[0], oy * w.Strides[0] + k[1] * w.Dilations[0],
                              col0 * w.Strides[1] + k[2] * w.Dilations[1]);
          return vload(in.Src.buffer(), at, (int)po.Tile.Lanes, w.Strides[1]);
        };
        t.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
          Expr m = g * mg + r;
          y.storeFlat(((n * s.M + m) * oh + oy) * ow + col, bias ? acc + bias->load({m}) : acc);
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
  TensorRef x = c.in(0), wt = c.in(po.Input > 0 ? po.Input : 1), y = c.out(0);
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

/// A stride-1 3x3 convolution as Winograd's F(m x m, 3 x 3) (see
/// Winograd.h; plan-kernels chooses it, pack-weights folds the kernel transform U,
/// [a*a, M, C]). Per image, the output's m x m tiles run in blocks of
/// `rows` rows of tiles, each row `pitch` tiles wide (tiles past the
/// output's width are computed on the zero padding and dropped, so that the
/// block's tile count fills whole vectors); the last block is shifted back
/// to overlap the one before (its tiles are computed twice, stored twice
/// with the same values). The blocks run in parallel, each with two stack
/// buffers: V [a*a, C, tiles], the transformed input tiles, and P [a*a, M,
/// tiles], their products with U. Per block:
///   - the input transform B^T d B of every tile and input channel (a loop
///     along a row of tiles: strided loads, contiguous stores);
///   - for each of the a*a positions, P = U x V, an M x tiles product over
///     C on the register-tiled generator (U broadcast, V read in place);
///   - the output transform A^T P A + bias of every tile and output
///     channel, stored (with the fused epilogue) as interleaved vectors
///     along the row; a partial tile at the right or bottom edge stores
///     only its outputs inside the image.
void lowerConvWinograd(LowerCtx &c, const ConvShape &s, const PackedOperand &po) {
  KernelBuilder &b = c.b();
  const ir::Node &node = c.node();
  const ir::KernelPlan::Winograd wp = node.Plan.Wino.value_or(ir::KernelPlan::Winograd{});
  const WinogradTransform *wt = winogradTransform(wp.Tile);
  const int64_t rows = wp.Rows, pitch = wp.Pitch;
  const Window &w = s.W;
  const int64_t OH = w.Out[0], OW = w.Out[1];
  const int64_t m = wt ? wt->M : 1, a = wt ? wt->Alpha : 1, pos = a * a;
  const int64_t tilesY = (OH + m - 1) / m, tilesX = (OW + m - 1) / m;
  if (!wt || s.Group != 1 || w.Kernel != std::vector<int64_t>{3, 3} || rows < 1 ||
      rows > tilesY || pitch < tilesX)
    node.error(ErrorKind::Internal) << "internal error: bad Winograd attributes";
  TensorRef x = c.in(0), y = c.out(0), u = c.in(po.Input);
  const int64_t C = s.C, M = s.M, T = rows * pitch;
  const DType t = y.computeType();
  PaddedInput in(c, s, x, true, tilesY * m + 2, pitch * m + 2);
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  const int64_t blocks = (tilesY + rows - 1) / rows;

  b.loop("n", s.N, [&](Expr n) {
    in.fill(b, x, n);
    b.loop("blk", blocks, [&](Expr blk) {
      Expr ty0 = min(blk * rows, indexConst(tilesY - rows));
      // The a*a slices of each buffer are a cache line more than their
      // size apart, so that the transforms' a*a streams (one per slice) do
      // not all map to the same cache sets.
      const int64_t vs = C * T + wp.Skew, ps = M * T + wp.Skew;
      Local v = b.local("wv", t, pos * vs);
      Local p = b.local("wp", t, pos * ps);
      // Input transform.
      b.loop("c", C, [&](Expr ch) {
        b.loop("r", rows, [&](Expr r) {
          b.loop("tx", pitch, [&](Expr tx) {
            Expr at = in.offset(n, ch, (ty0 + r) * m, tx * m);
            std::vector<std::vector<Expr>> d(a, std::vector<Expr>(a));
            for (int64_t i = 0; i < a; ++i)
              for (int64_t j = 0; j < a; ++j)
                d[i][j] = cast(t, in.Src.loadFlat(at + (i * in.Wp + j)));
            auto vt = transform2d(wt->BT, d);
            for (int64_t e = 0; e < pos; ++e)
              b.store(v.Buf, e * vs + ch * T + r * pitch + tx, vt[e / a][e % a]);
          });
        });
      });
      // The a*a products.
      b.loop("e", pos, [&](Expr e) {
        TiledContraction tc;
        tc.Rows = M;
        tc.Cols = T;
        tc.Reduce = {C};
        tc.Tile = po.Tile;
        tc.Acc = t;
        tc.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
          return cast(t, u.loadFlat((e * M + r) * C + k[0]));
        };
        tc.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
          return vload(v.Buf, e * vs + k[0] * T + col0, (int)po.Tile.Lanes);
        };
        tc.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
          b.store(p.Buf, e * ps + r * T + col, acc);
        };
        lowerTiledContraction(c, tc);
      });
      // Output transform: the tiles of row r from column tx0 to tx1, their
      // first `height` rows and `width` columns.
      auto outputs = [&](const Expr &mo, const Expr &r, int64_t tx0, int64_t tx1,
                         int64_t height, int64_t width) {
        if (tx0 >= tx1)
          return;
        b.loop("tx", indexConst(tx0), indexConst(tx1), [&](Expr tx) {
          std::vector<std::vector<Expr>> pv(a, std::vector<Expr>(a));
          for (int64_t e = 0; e < pos; ++e)
            pv[e / a][e % a] = p.get(e * ps + mo * T + r * pitch + tx);
          auto out = transform2d(wt->AT, pv);
          Expr top = ((n * M + mo) * OH + (ty0 + r) * m) * OW + tx * m;
          for (int64_t i = 0; i < height; ++i)
            for (int64_t j = 0; j < width; ++j)
              y.storeFlat(top + (i * OW + j), bias ? out[i][j] + bias->load({mo}) : out[i][j]);
        });
      };
      b.loop("mo", M, [&](Expr mo) {
        b.loop("r", rows, [&](Expr r) {
          auto row = [&](int64_t height) {
            outputs(mo, r, 0, OW / m, height, m);
            outputs(mo, r, OW / m, tilesX, height, OW % m);
          };
          if (OH % m == 0)
            row(m);
          else
            b.ifThen(lt(ty0 + r, indexConst(tilesY - 1)), [&] { row(m); },
                     [&] { row(OH % m); });
        });
      });
    }, LoopKind::Parallel);
  });
}

/// A 2-D convolution with one input channel per group (depthwise, with a
/// small channel multiplier). A small padded image is copied channel by
/// channel into a zero-bordered plane on the stack and every output row is
/// one loop of taps. A large one is read without a copy: in the interior of an
/// output row each output is the sum of its window's taps written out, in a
/// loop over the row that reads the input with the window's stride (and
/// vectorizes); in the rows whose window reaches the top or bottom padding
/// the taps of rows outside the image are selected away; the few outputs
/// whose window reaches the left or right padding sum their clipped window.
void lowerDepthwise(LowerCtx &c, const ConvShape &s) {
  KernelBuilder &b = c.b();
  TensorRef x = c.in(0), wt = c.in(1), y = c.out(0);
  const Window &w = s.W;
  int64_t mg = s.M / s.Group, H = s.InSpatial[0], W = s.InSpatial[1];
  DType t = y.computeType();
  std::optional<TensorRef> bias;
  if (c.hasIn(2))
    bias = c.in(2);
  auto init = [&](const Expr &m) { return bias ? bias->load({m}) : constant(t, 0); };
  auto inRow = [&](const Expr &oy, const Expr &kh) {
    return oy * w.Strides[0] + kh * w.Dilations[0] - w.PadBegin[0];
  };
  auto inCol = [&](const Expr &ox, const Expr &kw) {
    return ox * w.Strides[1] + kw * w.Dilations[1] - w.PadBegin[1];
  };
  auto tapWeight = [&](const Expr &m, const Expr &kh, const Expr &kw) {
    return wt.load({m, indexConst(0), kh, kw});
  };
  // Any output: the sum over its clipped window.
  auto clipped = [&](const Expr &n, const Expr &m, const Expr &oy, const Expr &ox) {
    Expr ch = m / mg;
    Local acc = b.local("acc", init(m));
    auto [khLo, khHi] = validKernelRange(oy, w.Strides[0], w.Dilations[0], w.PadBegin[0],
                                         w.Kernel[0], H);
    auto [kwLo, kwHi] = validKernelRange(ox, w.Strides[1], w.Dilations[1], w.PadBegin[1],
                                         w.Kernel[1], W);
    b.loop("kh", khLo, khHi, [&](Expr kh) {
      b.loop("kw", kwLo, kwHi, [&](Expr kw) {
        b.set(acc, acc.get() + tapWeight(m, kh, kw) * x.load({n, ch, inRow(oy, kh), inCol(ox, kw)}));
      });
    });
    y.store({n, m, oy, ox}, acc.get());
  };
  // An output whose columns are inside; rows outside the image are
  // selected away when `rowsClipped`.
  auto taps = [&](const Expr &n, const Expr &m, const Expr &oy, const Expr &ox,
                  bool rowsClipped) {
    Expr ch = m / mg, v = init(m);
    for (int64_t kh = 0; kh < w.Kernel[0]; ++kh) {
      Expr iy = inRow(oy, indexConst(kh)), valid;
      if (rowsClipped) {
        valid = land(ge(iy, indexConst(0)), lt(iy, indexConst(H)));
        iy = min(max(iy, indexConst(0)), indexConst(H - 1));
      }
      for (int64_t kw = 0; kw < w.Kernel[1]; ++kw) {
        Expr p = tapWeight(m, indexConst(kh), indexConst(kw)) * x.load({n, ch, iy, inCol(ox, indexConst(kw))});
        v = v + (rowsClipped ? select(valid, p, constant(t, 0)) : p);
      }
    }
    y.store({n, m, oy, ox}, v);
  };
  auto [rlo, rhi] = interiorRange(w, 0, H);
  auto [clo, chi] = interiorRange(w, 1, W);
  // A small image is copied into a zero-bordered plane on the stack, one
  // channel at a time. With equal strides, the outputs are computed over a
  // grid as wide as the plane, flattened: output (oy, ox) at grid index
  // q = oy * Wp + ox reads the plane at q * stride + the tap's offset, so one
  // loop over the whole grid vectorizes with full vectors however narrow
  // the image (the grid's columns past the output width are computed and
  // dropped); the outputs are then copied out row by row.
  // With a stride, the flat grid computes stride x more outputs than it
  // keeps (every row of the plane is a row of the grid): then, when that
  // takes fewer vectors, the grid's rows are output rows, each rounded up
  // to whole vectors (a loop per row).
  // (The plan's Depthwise: planes of at most MaxElements, the grid rounded
  // to GridRound; without a plan, no copy.)
  PaddedInput whole(c, s, x, /*scratch=*/false);
  const ir::KernelPlan::Plane planePlan = c.node().Plan.Depthwise.value_or(ir::KernelPlan::Plane{});
  if (whole.Padded && whole.Hp * whole.Wp <= planePlan.MaxElements) {
    const int64_t Wp = whole.Wp, OH = w.Out[0], OW = w.Out[1];
    const int64_t st = w.Strides[1], gridRound = planePlan.GridRound;
    const int64_t rowPitch = (OW + gridRound - 1) / gridRound * gridRound;
    const bool flat = w.Strides[0] == w.Strides[1] &&
                      (OH * Wp + gridRound - 1) / gridRound <= OH * (rowPitch / gridRound);
    const bool rows = !flat && w.Strides[0] == w.Strides[1];
    // The grid, rounded up to the plan's whole vectors (a few more dropped
    // outputs instead of narrower vectors for the remainder),
    // the furthest plane element it reads, and the plane's size.
    const int64_t gridSize = rows ? OH * rowPitch
                                  : (OH * Wp + gridRound - 1) / gridRound * gridRound;
    int64_t last = (rows ? (OH - 1) * st * Wp + (rowPitch - 1) * st : (gridSize - 1) * st) +
                   (w.Kernel[0] - 1) * w.Dilations[0] * Wp + (w.Kernel[1] - 1) * w.Dilations[1];
    int64_t planeSize = flat || rows ? std::max(whole.Hp * Wp, last + 1) : whole.Hp * Wp;
    b.loop("n", s.N, [&](Expr n) {
      b.loop("m", s.M, [&](Expr m) {
        Expr ch = m / mg;
        Local plane = b.local("plane", t, planeSize);
        b.loop("i", planeSize, [&](Expr i) { b.store(plane.Buf, i, constant(t, 0)); });
        b.loop("iy", H, [&](Expr iy) {
          b.loop("ix", W, [&](Expr ix) {
            b.store(plane.Buf, (iy + whole.PadTop) * Wp + ix + whole.PadLeft,
                    x.load({n, ch, iy, ix}));
          });
        });
        // The sum of the taps at plane offset `at` (the window's top left).
        auto window = [&](const Expr &at) {
          Expr v = init(m);
          for (int64_t kh = 0; kh < w.Kernel[0]; ++kh)
            for (int64_t kw = 0; kw < w.Kernel[1]; ++kw)
              v = v + tapWeight(m, indexConst(kh), indexConst(kw)) *
                          plane.get(at + kh * w.Dilations[0] * Wp + kw * w.Dilations[1]);
          return v;
        };
        if (flat) {
          Local grid = b.local("grid", t, gridSize);
          b.loop("q", gridSize, [&](Expr q) { b.store(grid.Buf, q, window(q * st)); });
          b.loop("oh", OH, [&](Expr oy) {
            b.loop("ow", OW, [&](Expr ox) { y.store({n, m, oy, ox}, grid.get(oy * Wp + ox)); });
          });
          return;
        }
        if (rows) {
          Local grid = b.local("grid", t, gridSize);
          b.loop("oh", OH, [&](Expr oy) {
            b.loop("ow", rowPitch, [&](Expr ox) {
              b.store(grid.Buf, oy * rowPitch + ox, window((oy * Wp + ox) * st));
            });
          });
          b.loop("oh", OH, [&](Expr oy) {
            b.loop("ow", OW, [&](Expr ox) { y.store({n, m, oy, ox}, grid.get(oy * rowPitch + ox)); });
          });
          return;
        }
        b.loop("oh", OH, [&](Expr oy) {
          b.loop("ow", OW, [&](Expr ox) {
            y.store({n, m, oy, ox}, window(oy * w.Strides[0] * Wp + ox * w.Strides[1]));
          });
        });
      }, LoopKind::Parallel);
    });
    return;
  }
  auto rows = [&](const Expr &n, const Expr &m, const Expr &from, const Expr &to,
                  bool rowsClipped) {
    b.loop("oh", from, to, [&](Expr oy) {
      b.loop("ow", indexConst(0), clo, [&](Expr ox) { clipped(n, m, oy, ox); });
      b.loop("ow", clo, chi, [&](Expr ox) { taps(n, m, oy, ox, rowsClipped); });
      b.loop("ow", chi, indexConst(w.Out[1]), [&](Expr ox) { clipped(n, m, oy, ox); });
    });
  };
  b.loop("n", s.N, [&](Expr n) {
    b.loop("m", s.M, [&](Expr m) {
      rows(n, m, indexConst(0), rlo, true);
      rows(n, m, rlo, rhi, false);
      rows(n, m, rhi, indexConst(w.Out[0]), true);
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

/// A 1-D convolution's geometry as a 2-D one over a single row: the same
/// element offsets, [N, C, W] data read as [N, C, 1, W] (the tiled
/// lowerings address the input, output and weights by flat offsets).
ConvShape asOneRow(const ConvShape &s) {
  if (s.W.rank() != 1)
    return s;
  ConvShape r = s;
  auto withRow = [](int64_t row, const std::vector<int64_t> &v) {
    return std::vector<int64_t>{row, v[0]};
  };
  r.InSpatial = withRow(1, s.InSpatial);
  r.W.Kernel = withRow(1, s.W.Kernel);
  r.W.Strides = withRow(1, s.W.Strides);
  r.W.Dilations = withRow(1, s.W.Dilations);
  r.W.PadBegin = withRow(0, s.W.PadBegin);
  r.W.PadEnd = withRow(0, s.W.PadEnd);
  r.W.Out = withRow(1, s.W.Out);
  return r;
}

void lowerConv(LowerCtx &c) {
  ConvShape s = convShape(c.node(), 0, 1);
  if (c.node().Plan.PerOutput) {
    lowerConvolutionPerOutput(c, s, c.out(0), plainConvSpec(c));
    return;
  }
  if (auto po = packedOperand(c.node())) {
    // plan-kernels plans 1-D convolutions as 2-D ones of one row.
    s = asOneRow(s);
    if (c.node().Plan.Wino) {
      lowerConvWinograd(c, s, *po);
      return;
    }
    bool pointwise = s.W.Kernel == std::vector<int64_t>{1, 1} && s.W.Out == s.InSpatial;
    if (po->PixelColumns && c.in(0).buffer())
      pointwise ? lowerPointwise(c, s, *po) : lowerConvPixelColumns(c, s, *po);
    else if (po->PixelColumns)
      lowerConvolution(c, s, c.out(0), plainConvSpec(c));
    else
      lowerConvTiled(c, s, *po);
    return;
  }
  if (s.W.rank() == 2 && s.C == s.Group && s.W.Kernel[0] * s.W.Kernel[1] <= 49 &&
      isF32Arithmetic(c.node().inDType(0))) {
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
