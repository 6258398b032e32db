//===- IntegerConv.cpp - ConvInteger, QLinearConv -------------------------===//
//
// ConvInteger accumulates zero-point-corrected operands in int32;
// QLinearConv requantizes the accumulator as IntegerMatMul.cpp describes.
//
// sum_k (x - xz)(w - wz) = sum_k x (w - wz) - xz sum_k (w - wz) over the
// whole window, the padding included, whose x is xz. The weight factor
// (w - wz) is formed where the weight is loaded (outside the loop over
// output positions) and xz sum_k (w - wz), with the bias, is one int32
// initial value per output channel, computed once per call. When xz may be
// nonzero and the window reaches into the padding, the input is first
// copied into a scratch image bordered with xz, so that every window is
// whole and the per-channel initial value exact at the borders.
//
// Pointwise and 2-D convolutions run in the plan's Int register tiles of
// output channels x output positions (int32 vectors that stay in registers
// for the whole window sum; LLVM turns the widening multiply-adds into
// vpmaddwd/vpdpwssd on x86); others, images smaller than a tile, and nodes
// without a plan run the shared row-at-a-time loop nest
// (compiler/ops/Contraction.h). When the plan chose dot products of byte
// quads (Dot4Lanes with a Dot tile, Taps), lowerIntConv hands the
// convolution to DotConv.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/ops/Requantization.h"

namespace mlcc::ops {

using namespace kir;
using namespace requant;

namespace {

// ---------------------------------------------------------------------------
// Integer convolution
// ---------------------------------------------------------------------------

/// A scalar or per-output-channel ([M]) parameter.
void checkChannelParam(const ir::Node &n, size_t i, int64_t m, bool perChannel) {
  if (!n.hasInput(i))
    return;
  const Shape &p = n.inShape(i);
  if (numElements(p) == 1 && p.size() <= 1)
    return;
  if (!perChannel || p.size() != 1 || p[0] != m)
    n.error() << "input " << i << " has shape " << shapeToString(p)
              << "; expected a scalar" << (perChannel ? " or one value per output channel" : "");
}

Expr loadChannelParam(const TensorRef &t, const Expr &m) {
  if (t.numel() == 1)
    return t.loadFlat(indexConst(0));
  return t.load({m});
}


/// acc + the products of the input pairs x01 and x23 (vectors of int32,
/// each two 16-bit values) by the weight pairs of `quad`, an int32 of four
/// int8 weights packed by PackQuads with pairs = 1: two dot2 (smlad on Cortex-M).
Expr pairProducts(const Expr &acc, const Expr &x01, const Expr &x23, const Expr &quad) {
  int lanes = acc->Lanes;
  Expr w01 = broadcast(unary(UnOp::SextBytes02, quad), lanes);
  Expr w23 = broadcast(unary(UnOp::SextBytes13, quad), lanes);
  return acc + binary(BinOp::Dot2, x01, w01) + binary(BinOp::Dot2, x23, w23);
}

/// A pointwise convolution (one group, weights of zero point 0) on the
/// plan's ByteDot: per image, bands of pixels are copied channels-last as
/// signed bytes (x ^ 0x80 = x - 128 for uint8) into a stack buffer of at
/// most `bandBytes`, and each output is the sum along the channels of that
/// pixel's bytes times its channel's weights (a LoopKind::Scalar loop, which
/// LLVM vectorizes as Helium's vmladav.s8), plus the initial value and, for
/// uint8, 128 x the channel's weight sum. The last band is shifted back to
/// end at the last pixel (its first outputs are computed twice, the same).
void lowerIntPointwiseBytes(LowerCtx &c, const ConvShape &s, const TensorRef &x,
                            const TensorRef &w, const std::function<Expr(const Expr &)> &init,
                            const TensorRef &y, const std::function<Expr(Expr, Expr)> &finish,
                            int64_t bandBytes) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const bool u8 = x.dtype() == DType::U8;
  const int64_t channels = s.C, pixels = numElements(s.W.Out);
  const int64_t band = std::min(pixels, std::max<int64_t>(bandBytes / channels, 1));
  const int64_t bands = (pixels + band - 1) / band;
  b.loop("n", s.N, [&](Expr n) {
    b.loop("band", bands, [&](Expr bi) {
      Expr p0 = min(bi * band, indexConst(pixels - band));
      Local bytes = b.local("xbytes", DType::I8, band * channels);
      b.loop("ch", channels, [&](Expr ch) {
        b.loop("px", band, [&](Expr px) {
          Expr v = x.loadFlat((n * channels + ch) * pixels + p0 + px);
          if (u8)
            v = cast(DType::I8, binary(BinOp::BitXor, v, constantInt(DType::U8, 0x80)));
          b.set(bytes, px * channels + ch, v);
        });
      });
      b.loop("m", s.M, [&](Expr m) {
        Expr start = init ? init(m) : constantInt(acc, 0);
        if (u8) {
          Local wsum = b.local("wsum", constantInt(acc, 0));
          b.loop("k", channels, [&](Expr k) {
            b.set(wsum, wsum.get() + cast(acc, w.loadFlat(m * channels + k)));
          }, LoopKind::Scalar);
          start = start + constantInt(acc, 128) * wsum.get();
        }
        b.loop("px", band, [&](Expr px) {
          Local sum = b.local("sum", constantInt(acc, 0));
          b.loop("k", channels, [&](Expr k) {
            b.set(sum, sum.get() + cast(acc, bytes.get(px * channels + k)) *
                                       cast(acc, w.loadFlat(m * channels + k)));
          }, LoopKind::Scalar);
          Expr v = start + sum.get();
          y.storeFlat((n * s.M + m) * pixels + p0 + px, finish ? finish(v, m) : v);
        });
      });
    });
  });
}

/// Whether lowerIntPointwise handles a convolution: every kernel extent and
/// stride 1, no padding, at least a vector of pixels per image, and an
/// input in a buffer.
bool isIntPointwise(const ConvShape &s, const TensorRef &x, const ir::KernelPlan::IntTile *tile) {
  if (!tile || !x.buffer() || numElements(s.W.Out) < tile->Lanes || s.W.Out != s.InSpatial)
    return false;
  for (size_t d = 0; d < s.W.rank(); ++d)
    if (s.W.Kernel[d] != 1 || s.W.Strides[d] != 1 || s.W.PadBegin[d] != 0)
      return false;
  return true;
}

/// A pointwise convolution: per image and group
///   out[m, p] = init[m] + sum_c (w[m, c] - w_zp[m]) x[c, p],
/// in tiles of channels x pixels whose int32 accumulators stay in registers
/// for the whole sum (constant offsets into a local vector buffer). Edge
/// tiles are shifted back to overlap the previous one, so every tile is
/// full (overlapped outputs are computed and stored twice, with the same
/// value).
void lowerIntPointwise(LowerCtx &c, const ConvShape &s, const TensorRef &x,
                       const TensorRef &w, const std::function<Expr(const Expr &)> &wz,
                       const std::function<Expr(const Expr &)> &init,
                       const TensorRef &y, const std::function<Expr(Expr, Expr)> &finish,
                       const TensorRef *pairs) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const ir::KernelPlan::IntTile &tile = *c.node().Plan.Int;
  const int L = (int)tile.Lanes;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group, hw = numElements(s.W.Out);
  int64_t rows = std::min(tile.Rows, mg);
  int64_t rowTiles = (mg + rows - 1) / rows, colTiles = (hw + L - 1) / L;
  auto at = [&](int64_t r) { return indexConst(r * L); };
  // One tile: channels m0.. x pixels p0.., its sum accumulated by `sum`,
  // then finished and stored.
  auto runTile = [&](const Expr &n, const Expr &m0, const Expr &p0,
                  const std::function<void(const Local &)> &sum) {
    Local t = b.local("acc", acc, rows * L);
    for (int64_t r = 0; r < rows; ++r)
      b.store(t.Buf, at(r), broadcast(init ? init(m0 + r) : constantInt(acc, 0), L));
    sum(t);
    // Spill the tile (constant offsets keep it in registers above),
    // then finish and store each element.
    Local sums = b.local("sums", acc, rows * L);
    for (int64_t r = 0; r < rows; ++r)
      b.store(sums.Buf, at(r), vload(t.Buf, at(r), L));
    for (int64_t r = 0; r < rows; ++r) {
      Expr base = ((n * s.M) + m0 + r) * hw + p0;
      b.loop("j", L, [&](Expr j) {
        Expr v = sums.get(at(r) + j);
        y.storeFlat(base + j, finish ? finish(v, m0 + r) : v);
      });
    }
  };
  if (pairs && c.node().Plan.StagedPairs) {
    // The plan's StagedPairs: per tile of pixels (the parallel loop), the
    // input pairs of every channel quad are formed once on the stack
    // (staged[(2 kq + h) L + j]: channels 4 kq + 2h and 4 kq + 2h + 1 of
    // pixel p0 + j), then every tile of channels reads them with one load
    // each.
    int64_t cq = (cg + 3) / 4;
    b.loop("n", s.N, [&](Expr n) {
      b.loop("g", s.Group, [&](Expr g) {
        b.loop("pt", colTiles, [&](Expr pt) {
          Expr p0 = min(pt * L, indexConst(hw - L));
          Local staged = b.local("pairs", acc, cq * 2 * L);
          auto xload = [&](const Expr &k) {
            return cast(acc, vload(x.buffer(), ((n * s.C) + g * cg + min(k, indexConst(cg - 1))) * hw + p0, L));
          };
          b.loop("kq", cq, [&](Expr kq) {
            for (int64_t h = 0; h < 2; ++h)
              b.store(staged.Buf, (kq * 2 + h) * L,
                      requant::halfPair(xload(kq * 4 + 2 * h), xload(kq * 4 + 2 * h + 1)));
          });
          b.loop("rt", rowTiles, [&](Expr rt) {
            Expr m0 = g * mg + min(rt * rows, indexConst(mg - rows));
            runTile(n, m0, p0, [&](const Local &t) {
              b.loop("kq", cq, [&](Expr kq) {
                Expr x01 = vload(staged.Buf, kq * 2 * L, L);
                Expr x23 = vload(staged.Buf, (kq * 2 + 1) * L, L);
                for (int64_t r = 0; r < rows; ++r)
                  b.store(t.Buf, at(r),
                          pairProducts(vload(t.Buf, at(r), L), x01, x23,
                                       pairs->loadFlat((m0 + r) * cq + kq)));
              });
            });
          });
        }, LoopKind::Parallel);
      });
    });
    return;
  }
  b.loop("n", s.N, [&](Expr n) {
    b.loop("g", s.Group, [&](Expr g) {
      b.loop("rt", rowTiles, [&](Expr rt) {
        Expr m0 = g * mg + min(rt * rows, indexConst(mg - rows));
        b.loop("pt", colTiles, [&](Expr pt) {
          Expr p0 = min(pt * L, indexConst(hw - L));
          auto xload = [&](const Expr &k) {
            return cast(acc, vload(x.buffer(), ((n * s.C) + g * cg + k) * hw + p0, L));
          };
          runTile(n, m0, p0, [&](const Local &t) {
            if (pairs) {
              // Channels four at a time: their inputs as two pairs, times
              // the packed quad's weight pairs, on dot2 (see lowerIntWindow).
              int64_t cq = (cg + 3) / 4;
              b.loop("kq", cq, [&](Expr kq) {
                auto input = [&](int64_t j) { return xload(min(kq * 4 + j, indexConst(cg - 1))); };
                Expr x01 = requant::halfPair(input(0), input(1));
                Expr x23 = requant::halfPair(input(2), input(3));
                for (int64_t r = 0; r < rows; ++r)
                  b.store(t.Buf, at(r),
                          pairProducts(vload(t.Buf, at(r), L), x01, x23,
                                       pairs->loadFlat((m0 + r) * cq + kq)));
              });
              return;
            }
            b.loop("k", cg, [&](Expr k) {
              Expr xv = xload(k);
              for (int64_t r = 0; r < rows; ++r) {
                Expr a = cast(acc, w.loadFlat((m0 + r) * cg + k)) - wz(m0 + r);
                b.store(t.Buf, at(r), vload(t.Buf, at(r), L) + a * xv);
              }
            });
          });
        });
      }, LoopKind::Parallel);
    });
  });
}

/// Whether lowerIntWindow handles a 2-D convolution over an image of padded
/// extents Hp x Wp (see there).
bool isIntWindow(const ConvShape &s, int64_t Wp, const ir::KernelPlan::IntTile *tile) {
  if (!tile || s.W.rank() != 2 || numElements(s.W.Out) == 0)
    return false;
  int64_t sh = s.W.Strides[0], sw = s.W.Strides[1], L = tile->Lanes;
  if (s.W.Out[1] >= L)
    return true;
  return (sh * Wp) % sw == 0 && (s.W.Out[0] - 1) * (sh * Wp / sw) + s.W.Out[1] >= L;
}

/// A 2-D convolution over `src` ([N, C, Hp, Wp], every window inside it) in
/// register tiles of output channels x the plan's Int lanes of output positions, whose
/// int32 accumulators stay in registers for the whole window sum; each step
/// of the sum multiplies one (strided) vector of input bytes by one weight
/// per channel. The positions of a tile are consecutive outputs of one row
/// when a row holds a vector (edge tiles shifted back to overlap); else
/// consecutive positions q = oy * V + ox of a row-major grid V = Wp * sh / sw
/// wide, wider than the output rows, so that input offsets stay affine in q
/// (sw * q, plus the tap's offset): the positions with ox >= the output
/// width are computed on other rows' inputs and not stored (with the plan's
/// GridStageBytes, the tiles store whole vectors into a grid on the stack
/// and the output rows are copied out of it).
/// With `planes`, src is unused and the input is staged on the stack,
/// bordered with planes->Fill: each group (one input channel: depthwise)
/// first copies its channel of planes->X into a plane; or (Band, output
/// rows of at least a tile) each output row first copies the input rows
/// its windows read, of every channel of the group (kernel-height rows).
/// With Pairs (the plan's WindowPairs; with `pairs`, one group) the staged
/// image or band holds pair words instead of channels: word h of a
/// position is the 16-bit values of channels 2h and 2h + 1 (the last
/// channel again past the group's: its weights are 0), so each tap's
/// input pairs are two loads.
struct StackPlanes {
  const TensorRef *X;
  Expr Fill;
  int64_t Top = 0, Left = 0;
  bool Band = false, Pairs = false;
};

/// The pair words of cg channels: two per quad of channels.
int64_t pairWords(int64_t cg) { return (cg + 3) / 4 * 2; }

void lowerIntWindow(LowerCtx &c, const ConvShape &s, const kir::Buffer &src,
                    int64_t Hp, int64_t Wp, const TensorRef &w,
                    const std::function<Expr(const Expr &)> &wz,
                    const std::function<Expr(const Expr &)> &init, const TensorRef &y,
                    const std::function<Expr(Expr, Expr)> &finish, bool tapDot,
                    const TensorRef *pairs, const TensorRef *laneW,
                    const StackPlanes *planes = nullptr) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const ir::KernelPlan::IntTile &intTile = *c.node().Plan.Int;
  const int L = (int)intTile.Lanes;
  const Window &win = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group, oh = win.Out[0], ow = win.Out[1];
  int64_t sh = win.Strides[0], sw = win.Strides[1];
  int64_t rows = std::min(intTile.Rows, mg), rowTiles = (mg + rows - 1) / rows;
  bool rowMode = ow >= L;
  int64_t V = rowMode ? 0 : sh * Wp / sw, Q = rowMode ? 0 : (oh - 1) * V + ow;
  const bool stagedGrid =
      !rowMode && rows * Q * (int64_t)dtypeSize(y.dtype()) <= c.node().Plan.GridStageBytes;
  auto at = [&](int64_t r) { return indexConst(r * L); };
  auto fin = [&](const Expr &v, const Expr &m) { return finish ? finish(v, m) : v; };
  // The buffer the tiles read and where input plane k of group g of image n
  // starts in it (with stack planes: the group's own plane).
  kir::Buffer from = src;
  const bool band = planes && planes->Band;
  const bool stagedPairs = planes && planes->Pairs && pairs;
  MLCC_CHECK(!stagedPairs || s.Group == 1, "pair words staged for a grouped convolution");
  const int64_t bandRows = (win.Kernel[0] - 1) * win.Dilations[0] + 1;
  // Pair word h of image n at (iy, ix) of x (clamped into x), or fill
  // outside it when `inside` is given.
  auto pairWord = [&](const Expr &n, const Expr &h, const Expr &iy, const Expr &ix,
                      const Expr &inside) {
    const TensorRef &x = *planes->X;
    auto channel = [&](const Expr &k) {
      Expr v = x.load({n, min(k, indexConst(cg - 1)), iy, ix});
      return cast(acc, inside ? select(inside, v, planes->Fill) : v);
    };
    return requant::halfPair(channel(h * 2), channel(h * 2 + 1));
  };
  auto planeStart = [&](const Expr &n, const Expr &g, const Expr &k) {
    if (band)
      return k * (bandRows * Wp);
    return planes ? k * (Hp * Wp) : (n * s.C + g * cg + k) * (Hp * Wp);
  };
  // One tile: the finished sums of channels m0.. for the L positions whose
  // first window tap is at xoff0 + sw * j in each input plane, passed to
  // store(m, j, value) (an int32 in the output's range), or with storeRow
  // each row r's vector of L of them to storeRow(r, vector).
  using RowStore = std::function<void(int64_t r, const Expr &v)>;
  auto tile = [&](const Expr &n, const Expr &g, const Expr &m0, const Expr &xoff0,
                  const std::function<void(const Expr &m, const Expr &j, const Expr &v)> &store,
                  const RowStore &storeRow = nullptr) {
    Local t = b.local("acc", acc, rows * L);
    for (int64_t r = 0; r < rows; ++r)
      b.store(t.Buf, at(r), broadcast(init ? init(m0 + r) : constantInt(acc, 0), L));
    auto tap = [&](const Expr &plane, const Expr &kh, const Expr &kw) {
      return plane + kh * (win.Dilations[0] * Wp) + kw * win.Dilations[1];
    };
    // With pairs, input channels four at a time: each tap's inputs of
    // channels 4q..4q+3 (the last channel again, times a zero weight, past
    // cg) as two pairs, times the two weight pairs of the packed quad, on
    // dot2 (8-bit inputs; int8 weights of zero point 0).
    b.loop(pairs ? "icq" : "ic", pairs ? (cg + 3) / 4 : cg, [&](Expr ic) {
      auto plane = [&](const Expr &k) { return planeStart(n, g, k) + xoff0; };
      Expr plane0 = plane(stagedPairs ? ic * 2 : pairs ? ic * 4 : ic);
      std::vector<Expr> quad;
      if (stagedPairs)
        quad.push_back(plane(ic * 2 + 1));
      for (int64_t j = 1; pairs && !stagedPairs && j < 4; ++j)
        quad.push_back(plane(min(ic * 4 + j, indexConst(cg - 1))));
      b.loop("kh", win.Kernel[0], [&](Expr kh) {
        // A short kernel row's taps are written out (the plan's
        // UnrolledTaps: constant offsets, no loop of a few iterations around
        // the tile's steps).
        auto kwLoop = [&](const std::function<void(Expr)> &body) {
          if (win.Kernel[1] <= c.node().Plan.UnrolledTaps) {
            for (int64_t kw = 0; kw < win.Kernel[1]; ++kw)
              body(indexConst(kw));
            return;
          }
          b.loop("kw", win.Kernel[1], body);
        };
        kwLoop([&](Expr kw) {
          auto input = [&](const Expr &p) { return cast(acc, vload(from, tap(p, kh, kw), L, sw)); };
          Expr xv, xv23;
          if (stagedPairs) {
            xv = vload(from, tap(plane0, kh, kw), L, sw);
            xv23 = vload(from, tap(quad[0], kh, kw), L, sw);
          } else if (pairs) {
            xv = input(plane0);
            xv = requant::halfPair(xv, input(quad[0]));
            xv23 = requant::halfPair(input(quad[1]), input(quad[2]));
          } else {
            xv = input(plane0);
          }
          // The plan's LaneWeights: the rows' weights of this tap are one
          // vector of the transposed weights [C, kh, kw, M] (zero point 0),
          // row r's weight its lane r.
          Expr wv;
          if (laneW)
            wv = cast(acc, vload(laneW->buffer(),
                                 ((ic * win.Kernel[0] + kh) * win.Kernel[1] + kw) * s.M + m0,
                                 (int)rows));
          for (int64_t r = 0; r < rows; ++r) {
            if (pairs) {
              b.store(t.Buf, at(r),
                      pairProducts(vload(t.Buf, at(r), L), xv, xv23,
                                   pairs->load({m0 + r, ic, kh, kw})));
              continue;
            }
            if (wv) {
              b.store(t.Buf, at(r), vload(t.Buf, at(r), L) + broadcastLane(wv, r, L) * xv);
              continue;
            }
            if (tapDot) {
              // The weight as the low signed byte of a quad (the others 0),
              // the input byte as the low unsigned byte of its lane: one
              // dot4 (vpdpbusd) instead of a 32-bit multiply and an add.
              Expr wq = binary(BinOp::BitAnd, cast(acc, w.load({m0 + r, ic, kh, kw})),
                               constantInt(acc, 0xff));
              b.store(t.Buf, at(r),
                      vload(t.Buf, at(r), L) + binary(BinOp::Dot4, xv, broadcast(wq, L)));
              continue;
            }
            Expr a = cast(acc, w.load({m0 + r, ic, kh, kw})) - wz(m0 + r);
            b.store(t.Buf, at(r), vload(t.Buf, at(r), L) + a * xv);
          }
        });
      });
    });
    // Finish whole vectors (requantization in vector registers), then
    // store the elements (selectively on the grid).
    Local done = b.local("done", acc, rows * L);
    for (int64_t r = 0; r < rows; ++r)
      b.store(done.Buf, at(r), cast(acc, fin(vload(t.Buf, at(r), L), m0 + r)));
    if (storeRow) {
      for (int64_t r = 0; r < rows; ++r)
        storeRow(r, vload(done.Buf, at(r), L));
      return;
    }
    for (int64_t r = 0; r < rows; ++r)
      b.loop("j", L, [&](Expr j) { store(m0 + r, j, done.get(at(r) + j)); });
  };
  // Parallel over channel tiles, or over groups when a group has one tile
  // (depthwise).
  bool groupsParallel = rowTiles == 1 && s.Group > 1;
  if (band) {
    // Per output row (the parallel loop): the kernel-height input rows of
    // every channel of the group, bordered, then every tile of the row.
    const TensorRef &x = *planes->X;
    const int64_t H = s.InSpatial[0], W = s.InSpatial[1];
    b.loop("n", s.N, [&](Expr n) {
      b.loop("g", s.Group, [&](Expr g) {
        b.loop("oy", oh, [&](Expr oy) {
          // Channels, or pair words (the band's words then the int32 pairs).
          const int64_t planesPerBand = stagedPairs ? pairWords(cg) : cg;
          Local rowsBuf = b.local(stagedPairs ? "xbandpairs" : "xband", stagedPairs ? acc : x.dtype(),
                                  planesPerBand * bandRows * Wp);
          Expr fill = stagedPairs ? requant::halfPair(cast(acc, planes->Fill), cast(acc, planes->Fill))
                                : planes->Fill;
          b.loop("k", planesPerBand, [&](Expr k) {
            b.loop("r", bandRows, [&](Expr r) {
              Expr iy = oy * sh + r - indexConst(planes->Top);
              Expr inside = land(le(indexConst(0), iy), lt(iy, indexConst(H)));
              Expr clamped = max(min(iy, indexConst(H - 1)), indexConst(0));
              Expr row = (k * bandRows + r) * Wp;
              for (int64_t i = 0; i < planes->Left; ++i)
                b.store(rowsBuf.Buf, row + i, fill);
              for (int64_t i = planes->Left + W; i < Wp; ++i)
                b.store(rowsBuf.Buf, row + i, fill);
              b.loop("ix", W, [&](Expr ix) {
                b.store(rowsBuf.Buf, row + planes->Left + ix,
                        stagedPairs ? pairWord(n, k, clamped, ix, inside)
                                  : select(inside, x.load({n, g * cg + k, clamped, ix}),
                                           planes->Fill));
              });
            });
          });
          from = rowsBuf.Buf;
          b.loop("rt", rowTiles, [&](Expr rt) {
            Expr m0 = g * mg + min(rt * rows, indexConst(mg - rows));
            b.loop("pt", (ow + L - 1) / L, [&](Expr pt) {
              Expr ox0 = min(pt * L, indexConst(ow - L));
              tile(n, g, m0, ox0 * sw, [&](const Expr &m, const Expr &j, const Expr &v) {
                y.storeFlat(((n * s.M + m) * oh + oy) * ow + ox0 + j, v);
              });
            });
          });
        }, LoopKind::Parallel);
      });
    });
    return;
  }
  b.loop("n", s.N, [&](Expr n) {
    b.loop("g", s.Group, [&](Expr g) {
      if (stagedPairs) {
        // The whole bordered image as pair words (one group).
        const int64_t H = s.InSpatial[0], W = s.InSpatial[1], words = pairWords(cg);
        Local image = b.local("xpairs", acc, words * Hp * Wp);
        TensorRef pt(&b, image.Buf, nullptr, ir::TensorType{acc, Shape{words, Hp, Wp}});
        fillBorder(b, pt, words, Hp, Wp, planes->Top, planes->Left, H, W,
                   requant::halfPair(cast(acc, planes->Fill), cast(acc, planes->Fill)));
        b.loop("h", words, [&](Expr h) {
          b.loop("iy", H, [&](Expr iy) {
            b.loop("ix", W, [&](Expr ix) {
              pt.store({h, iy + planes->Top, ix + planes->Left}, pairWord(n, h, iy, ix, nullptr));
            });
          });
        });
        from = image.Buf;
      } else if (planes) {
        const TensorRef &x = *planes->X;
        int64_t H = s.InSpatial[0], W = s.InSpatial[1];
        Local plane = b.local("xplane", x.dtype(), Hp * Wp);
        TensorRef pt(&b, plane.Buf, nullptr, ir::TensorType{x.dtype(), Shape{1, Hp, Wp}});
        fillBorder(b, pt, 1, Hp, Wp, planes->Top, planes->Left, H, W, planes->Fill);
        b.loop("iy", H, [&](Expr iy) {
          b.loop("ix", W, [&](Expr ix) {
            pt.store({indexConst(0), iy + planes->Top, ix + planes->Left},
                     x.load({n, g, iy, ix}));
          });
        });
        from = plane.Buf;
      }
      b.loop("rt", rowTiles, [&](Expr rt) {
        Expr m0 = g * mg + min(rt * rows, indexConst(mg - rows));
        if (rowMode) {
          b.loop("oy", oh, [&](Expr oy) {
            b.loop("pt", (ow + L - 1) / L, [&](Expr pt) {
              Expr ox0 = min(pt * L, indexConst(ow - L));
              tile(n, g, m0, oy * (sh * Wp) + ox0 * sw,
                   [&](const Expr &m, const Expr &j, const Expr &v) {
                     y.storeFlat(((n * s.M + m) * oh + oy) * ow + ox0 + j, v);
                   });
            });
          });
          return;
        }
        if (stagedGrid) {
          // The plan's GridStageBytes: the tiles' rows stored whole into
          // the grid on the stack, then the output rows copied out of it.
          Local grid = b.local("ygrid", y.dtype(), rows * Q);
          b.loop("pt", (Q + L - 1) / L, [&](Expr pt) {
            Expr q0 = min(pt * L, indexConst(Q - L));
            tile(n, g, m0, q0 * sw, nullptr, [&](int64_t r, const Expr &v) {
              b.store(grid.Buf, indexConst(r * Q) + q0, cast(y.dtype(), v));
            });
          });
          for (int64_t r = 0; r < rows; ++r)
            b.loop("oy", oh, [&](Expr oy) {
              b.loop("ox", ow, [&](Expr ox) {
                y.storeFlat(((n * s.M + m0 + r) * oh + oy) * ow + ox,
                            grid.get(indexConst(r * Q) + oy * V + ox));
              });
            });
          return;
        }
        b.loop("pt", (Q + L - 1) / L, [&](Expr pt) {
          Expr q0 = min(pt * L, indexConst(Q - L));
          tile(n, g, m0, q0 * sw, [&](const Expr &m, const Expr &j, const Expr &v) {
            Expr q = q0 + j, oy = q / V, ox = q % V;
            b.ifThen(lt(ox, indexConst(ow)), [&] {
              y.storeFlat(((n * s.M + m) * oh + oy) * ow + ox, v);
            });
          });
        });
      }, groupsParallel ? LoopKind::Serial : LoopKind::Parallel);
    }, groupsParallel ? LoopKind::Parallel : LoopKind::Serial);
  });
}


/// Lowers the int32 convolution sum (x - x_zp)(w - w_zp) (+ bias) and stores
/// finish(acc, m) for every output element, as sum x (w - w_zp) from the
/// initial value bias - x_zp sum (w - w_zp) of channel m (see the top of
/// the file). The padding's x is x_zp: when x_zp may be nonzero and a
/// window reaches the padding, x is read from a copy bordered with x_zp;
/// otherwise the padding contributes 0 and is skipped like in a float
/// convolution (or read from a copy bordered with 0 by the tiled 2-D path).
/// Pointwise convolutions run lowerIntPointwise, 2-D ones lowerIntWindow,
/// the rest (other ranks, images smaller than a tile) the shared loop nest.
void lowerIntConv(LowerCtx &c, size_t xIdx, size_t xzpIdx, size_t wIdx,
                  size_t wzpIdx, size_t biasIdx,
                  const std::function<Expr(Expr, Expr)> &finish) {
  KernelBuilder &b = c.b();
  ConvShape s = convShape(c.node(), xIdx, wIdx);
  // The int8 dot-product path, when plan-kernels chose it and the image
  // fills a vector.
  size_t packedIdx = (size_t)std::max<int64_t>(c.node().Plan.Dot4Input, 0);
  if (c.node().Plan.Dot && c.node().Plan.Dot4Input >= 0 && c.hasIn(packedIdx)) {
    lowerIntDotConv(c, xIdx, xzpIdx, wIdx, biasIdx, packedIdx, finish);
    return;
  }
  // Products in pairs (the plan's Pairs) read the int8 weights packed in
  // quads for dot2, not the weights (so the library holds only the quads).
  const std::optional<size_t> pairsIdx = pairedWeightsInput(c.node());
  // The plan's LaneWeights: the weights transposed to [C, kh, kw, M], read
  // instead of the weights (so the library holds only those).
  const int64_t laneIdx = c.node().Plan.LaneWeightsInput;
  std::optional<TensorRef> laneW;
  if (c.node().Plan.LaneWeights && laneIdx >= 0 && c.hasIn((size_t)laneIdx))
    laneW = c.in((size_t)laneIdx);
  const TensorRef *laneRef = laneW ? &*laneW : nullptr;
  auto weights = [&] { return c.in(wIdx); };
  TensorRef x = c.in(xIdx), w = pairsIdx || laneW ? TensorRef() : weights(), y = c.out(0);
  // Weight (m, c, k...) wherever it is held.
  const Shape wShape = c.node().inShape(wIdx);
  auto weightAt = [&](const std::vector<Expr> &i) {
    if (!laneW)
      return w.load(i);
    Expr inner = i[1];
    for (size_t d = 2; d < i.size(); ++d)
      inner = inner * wShape[d] + i[d];
    return laneW->loadFlat(inner * wShape[0] + i[0]);
  };
  std::optional<TensorRef> pairs;
  if (pairsIdx)
    pairs = c.in(*pairsIdx);
  const TensorRef *pairsRef = pairs ? &*pairs : nullptr;
  std::optional<TensorRef> xzp = zeroPoint(c, xzpIdx), wzp = zeroPoint(c, wzpIdx), bias;
  if (biasIdx && c.hasIn(biasIdx))
    bias = c.in(biasIdx);
  const DType acc = DType::I32;
  auto wz = [&](const Expr &m) {
    return wzp ? cast(acc, loadChannelParam(*wzp, m)) : constantInt(acc, 0);
  };

  // The initial value of each output channel, when x_zp contributes.
  std::optional<TensorRef> init;
  if (xzp) {
    int64_t perChannel = numElements(c.node().inShape(wIdx)) / s.M;
    Expr xz = cast(acc, xzp->loadFlat(indexConst(0)));
    init = c.scratch("chinit", acc, {s.M});
    b.loop("m", s.M, [&](Expr m) {
      Local sum = b.local("wsum", constantInt(acc, 0));
      if (pairs) {
        // From the packed quads (so the library holds only those): each
        // weight pair times (1, 1).
        Expr ones = constantInt(acc, 0x10001);
        int64_t words = pairs->numel() / s.M;
        b.loop("k", words, [&](Expr k) {
          b.set(sum, pairProducts(sum.get(), ones, ones, pairs->loadFlat(m * words + k)));
        });
      } else {
        b.loop("k", perChannel, [&](Expr k) {
          Expr wk = laneW ? laneW->loadFlat(k * s.M + m) : w.loadFlat(m * perChannel + k);
          b.set(sum, sum.get() + cast(acc, wk));
        });
      }
      Expr v = constantInt(acc, 0) - xz * (sum.get() - wz(m) * perChannel);
      init->storeFlat(m, bias ? cast(acc, bias->load({m})) + v : v);
    });
  }

  // Whole windows over an x_zp-bordered copy when windows reach outside x.
  ConvShape geo = s;
  TensorRef src = x;
  size_t r = s.W.rank();
  bool outside = false;
  Shape padded = {s.N, s.C};
  for (size_t d = 0; d < r; ++d) {
    const Window &win = s.W;
    int64_t last = (win.Out[d] - 1) * win.Strides[d] + (win.Kernel[d] - 1) * win.Dilations[d];
    outside = outside || win.PadBegin[d] > 0 || last - win.PadBegin[d] >= s.InSpatial[d];
    padded.push_back(std::max(s.InSpatial[d] + win.PadBegin[d] + win.PadEnd[d], last + 1));
  }
  std::function<Expr(const Expr &)> first;
  if (init)
    first = [&](const Expr &m) { return init->load({m}); };
  else if (bias)
    first = [&](const Expr &m) { return cast(acc, bias->load({m})); };
  const ir::KernelPlan::IntTile *tile = c.node().Plan.Int ? &*c.node().Plan.Int : nullptr;
  // The plan's ByteDot (plan-kernels checked: pointwise, one group, int8
  // weights of zero point 0, one x zero point, held by `first`).
  if (c.node().Plan.ByteDot && c.node().Plan.Depthwise && !wzp && !pairsRef && !laneRef &&
      s.Group == 1 && x.buffer() && numElements(s.W.Out) > 0 && isIntPointwise(s, x, tile)) {
    lowerIntPointwiseBytes(c, s, x, w, first, y, finish, c.node().Plan.Depthwise->MaxElements);
    return;
  }
  if (isIntPointwise(s, x, tile)) {
    MLCC_CHECK(!laneW, "lane weights planned for a pointwise convolution");
    lowerIntPointwise(c, s, x, w, wz, first, y, finish, pairsRef);
    return;
  }
  // Taps on dot4 (the plan's Taps): uint8 data, int8 weights with a zero
  // point of 0; four taps per quad when the plan has a tile for them.
  const bool tapDot = c.node().Plan.Taps && !wzp &&
                      x.dtype() == DType::U8 && c.node().inDType(wIdx) == DType::I8;
  if (tapDot && c.node().Plan.Taps->Vectors > 0) {
    // Reads x directly: its tap-quad images hold x_zp in the padding.
    Expr xz = xzp ? cast(acc, xzp->loadFlat(indexConst(0))) : constantInt(acc, 0);
    lowerIntTapQuads(c, s, x, xz, w, first, y, finish);
    return;
  }
  // The register-tiled path reads whole windows: it needs the bordered
  // copy whenever a window reaches outside x (bordered with 0 without x_zp).
  bool window = isIntWindow(s, outside ? padded.back() : s.InSpatial.back(), tile) &&
                (outside || x.buffer());
  // A depthwise convolution with the plan's Depthwise plane pads each
  // channel on the stack in its own iteration (see lowerIntWindow), not the
  // whole image in the arena.
  const ir::KernelPlan::Plane planePlan =
      c.node().Plan.Depthwise.value_or(ir::KernelPlan::Plane{});
  const bool stackPlanes = window && outside && r == 2 && s.Group == s.C &&
                           numElements(s.W.Out) > 0 &&
                           padded[2] * padded[3] <= planePlan.MaxElements;
  // A dense one whose bordered image would not fit that bound stages, per
  // output row, the kernel-height rows of its group's channels (when output
  // rows hold a tile); a smaller image is copied whole (once, not once per
  // window row).
  const int64_t bandElements =
      r == 2 ? s.C / s.Group * ((s.W.Kernel[0] - 1) * s.W.Dilations[0] + 1) * padded[3] : 0;
  const bool stackBand = window && outside && r == 2 && !stackPlanes && tile &&
                         numElements(s.W.Out) > 0 && s.W.Out[1] >= tile->Lanes &&
                         bandElements <= planePlan.MaxElements &&
                         numElements(padded) > planePlan.MaxElements;
  // Pairs of a dense 2-D convolution (the plan's WindowPairs) read pair
  // words staged on the stack: the whole bordered image when its words fit
  // the plane bound, else per output row its windows' rows (as stackBand).
  const int64_t planeBytes = planePlan.MaxElements * (int64_t)dtypeSize(x.dtype());
  const bool windowPairs = window && pairsRef && c.node().Plan.WindowPairs && r == 2 &&
                           s.Group == 1 && numElements(s.W.Out) > 0;
  const int64_t pairBytes = windowPairs ? pairWords(s.C) * 4 : 0;
  const bool pairImage = windowPairs && pairBytes * padded[2] * padded[3] <= planeBytes;
  const bool pairBand = windowPairs && !pairImage && s.W.Out[1] >= tile->Lanes &&
                        pairBytes * (bandElements / std::max<int64_t>(s.C, 1)) <= planeBytes;
  if (pairImage || pairBand) {
    StackPlanes sp{&x,
                   xzp ? cast(x.computeType(), xzp->loadFlat(indexConst(0)))
                       : constantInt(x.computeType(), 0),
                   s.W.PadBegin[0], s.W.PadBegin[1], pairBand, true};
    lowerIntWindow(c, s, nullptr, padded[2], padded[3], w, wz, first, y, finish, tapDot,
                   pairsRef, laneRef, &sp);
    return;
  }
  if ((xzp || window) && outside && numElements(s.W.Out) > 0 && !stackPlanes && !stackBand) {
    src = c.scratch("xpad", x.dtype(), padded);
    Expr fill = xzp ? cast(src.computeType(), xzp->loadFlat(indexConst(0)))
                    : constantInt(src.computeType(), 0);
    if (r == 2)
      fillBorder(b, src, s.N * s.C, padded[2], padded[3], s.W.PadBegin[0], s.W.PadBegin[1],
                 s.InSpatial[0], s.InSpatial[1], fill);
    else
      b.loop("i", numElements(padded), [&](Expr i) { src.storeFlat(i, fill); });
    b.loops(x.shape(), [&](const std::vector<Expr> &i) {
      std::vector<Expr> to = i;
      for (size_t d = 0; d < r; ++d)
        to[2 + d] = i[2 + d] + s.W.PadBegin[d];
      src.store(to, x.load(i));
    }, "xp");
    geo.InSpatial.assign(padded.begin() + 2, padded.end());
    geo.W.PadBegin.assign(r, 0);
    geo.W.PadEnd.assign(r, 0);
  }
  if (window && (stackPlanes || stackBand)) {
    StackPlanes sp{&x,
                   xzp ? cast(x.computeType(), xzp->loadFlat(indexConst(0)))
                       : constantInt(x.computeType(), 0),
                   s.W.PadBegin[0], s.W.PadBegin[1], stackBand};
    lowerIntWindow(c, s, nullptr, padded[2], padded[3], w, wz, first, y, finish, tapDot,
                   pairsRef, laneRef, &sp);
    return;
  }
  if (window) {
    lowerIntWindow(c, s, src.buffer(), geo.InSpatial[0], geo.InSpatial[1], w, wz, first, y,
                   finish, tapDot, pairsRef, laneRef);
    return;
  }

  ConvSpec spec;
  spec.Acc = acc;
  spec.LoadX = [&](const std::vector<Expr> &i) { return cast(acc, src.load(i)); };
  spec.LoadW = [&](const std::vector<Expr> &i) {
    Expr v = cast(acc, laneW ? weightAt(i) : weights().load(i));
    return wzp ? v - wz(i[0]) : v;
  };
  spec.Init = first;
  if (finish)
    spec.Finish = [&](const Expr &v, const Expr &m) { return finish(v, m); };
  lowerConvolution(c, geo, y, spec);
}

void inferConvInteger(ir::Node &n) {
  requireInputType(n, 0, "x", {DType::I8, DType::U8});
  requireInputType(n, 1, "w", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 3, 1);
  ConvShape s = convShape(n, 0, 1);
  checkChannelParam(n, 2, s.M, false);
  checkChannelParam(n, 3, s.M, true);
  n.setOutput(0, DType::I32, s.outShape());
}

void lowerConvInteger(LowerCtx &c) {
  lowerIntConv(c, 0, 2, 1, 3, 0, nullptr);
}

void inferQLinearConv(ir::Node &n) {
  checkQLinearTypes(n, "x", "w");
  ConvShape s = convShape(n, 0, 3);
  checkChannelParam(n, 1, s.M, false);
  checkChannelParam(n, 2, s.M, false);
  checkChannelParam(n, 4, s.M, true);
  checkChannelParam(n, 5, s.M, true);
  checkChannelParam(n, 6, s.M, false);
  checkChannelParam(n, 7, s.M, false);
  if (n.hasInput(8)) {
    if (n.inDType(8) != DType::I32)
      n.error() << "bias has type " << dtypeOnnxName(n.inDType(8))
                << "; int32 is required";
    if (n.inShape(8) != Shape{s.M})
      n.error() << "bias has shape " << shapeToString(n.inShape(8))
                << ", expected [" << s.M << "]";
  }
  n.setOutput(0, n.inDType(7), s.outShape());
}

void lowerQLinearConv(LowerCtx &c) {
  KernelBuilder &b = c.b();
  if ((c.node().Plan.FixedRequantInput >= 0)) {
    TensorRef yzp = c.in(7);
    DType out = c.node().inDType(7);
    // Products that provably stay small: no 64-bit shift (the same result),
    // where the plan says (SmallFixedRequant).
    std::optional<std::vector<double>> bounds;
    if (c.node().Plan.SmallFixedRequant)
      bounds = accumulatorBounds(c.node(), 3, 5, 8, true);
    const bool small = bounds && fixedRequantSmall(c.node(), *bounds);
    lowerIntConv(c, 0, 2, 3, 5, 8, [&](Expr acc, Expr m) {
      auto [m0, s] = *fixedRequant(c, m);
      if (small)
        return requant::requantizeFixedSmall(out, acc, m0, s, yzp.loadFlat(indexConst(0)));
      return requantizeFixed(out, acc, m0, s, yzp.loadFlat(indexConst(0)));
    });
    return;
  }
  TensorRef xs = c.in(1), ws = c.in(4), ys = c.in(6), yzp = c.in(7);
  DType st = c.node().inDType(1);
  DType out = c.node().inDType(7);
  bool f32 = allConstant({&xs, &ws, &ys});
  // One multiplier per output channel: computed at compile time
  // (fixed-point-requant: the plan's MultiplierInput), else once per call.
  int64_t channels = c.node().inShape(3)[0];
  TensorRef mult;
  if (c.node().Plan.MultiplierInput >= 0) {
    mult = c.in((size_t)c.node().Plan.MultiplierInput);
  } else {
    mult = c.scratch("mult", DType::F32, {channels});
    b.loop("m", channels, [&](Expr m) {
      mult.storeFlat(m, requantMultiplierF32(st, xs.loadFlat(indexConst(0)),
                                             loadChannelParam(ws, m),
                                             ys.loadFlat(indexConst(0))));
    });
  }
  // Products that provably stay small saturate in int32 (the same result)
  // where the plan says (targets without one-instruction float min/max).
  bool small = false;
  const int64_t multIdx = c.node().Plan.MultiplierInput;
  if (f32 && c.node().Plan.IntSaturate && multIdx >= 0 && c.node().Inputs[(size_t)multIdx]->Const)
    if (std::optional<std::vector<double>> bounds = accumulatorBounds(c.node(), 3, 5, 8, true))
      small = productsSmall(*bounds, c.node().Inputs[(size_t)multIdx]->Const->toDoubles());
  lowerIntConv(c, 0, 2, 3, 5, 8, [&](Expr acc, Expr m) {
    if (small)
      return requant::requantizeF32Small(out, acc, mult.load({m}), yzp.loadFlat(indexConst(0)));
    return requantize(out, f32, acc, mult.load({m}), yzp.loadFlat(indexConst(0)));
  });
}


} // namespace

MLCC_OPS(IntegerConv) {
  R.add({.Name = "ConvInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferConvInteger, .Lower = lowerConvInteger});
  R.add({.Name = "QLinearConv", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearConv, .Lower = lowerQLinearConv});
}

} // namespace mlcc::ops
