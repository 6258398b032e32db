//===- DotConv.cpp - int8 convolutions on dot products of byte quads ------===//
//
// The paths of IntegerConv.cpp that plan-kernels' plan selects on targets
// with an int8 dot product (kernel IR dot4: x86 VNNI vpdpbusd, AArch64
// usdot; x86 pmaddwd as the emitter's pairs): dense convolutions over packed
// weight quads in register tiles (the plan's Dot tile, lowerIntDotConv;
// DotPairs: the quads as two dot2 of 16-bit pairs) and depthwise ones with
// four taps of a kernel row per quad (lowerIntTapQuads); DotSigned runs
// either on sdot4 over quads offset to signed bytes (AArch64 sdot). Their
// entry points are declared in IntegerOps.h.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/ops/Requantization.h"

namespace mlcc::ops {

using namespace kir;
using namespace requant;

namespace {

/// [lo, hi) of i in [0, n) with lo <= a * i + o < lim (a > 0): the
/// outputs whose input a * i + o lies inside an image of lim.
std::pair<int64_t, int64_t> insideRange(int64_t n, int64_t a, int64_t o, int64_t lim) {
  int64_t lo = o >= 0 ? 0 : (-o + a - 1) / a;
  int64_t hi = lim - o <= 0 ? 0 : (lim - o - 1) / a + 1;
  lo = std::min(lo, n);
  return {lo, std::max(lo, std::min(hi, n))};
}

/// An input value (int32, already in the quads' domain) as a byte of a quad:
/// as it is for dot4's unsigned bytes, its low byte for sdot4's signed ones
/// (the plan's DotSigned).
Expr quadByte(const Expr &v, bool signedQuads) {
  return signedQuads ? binary(BinOp::BitAnd, v, constantInt(DType::I32, 0xff)) : v;
}

/// Vectors of the one tail tile that covers the outputs past the last whole
/// tile of P outputs (as schedule::tileCost counts them).
int64_t tailVectors(int64_t Q, int64_t P, int64_t lanes) {
  return (Q % P + lanes - 1) / lanes;
}

/// Writes a plane of int32 at `plane` of `buf`, `rows` x `cols`, whose
/// rows [r.first, r.second) are read from the input: their columns
/// [c.first, c.second) as value(i, ox, false) (every read inside it: the
/// loop reads whole vectors), their other columns as value(i, ox, true);
/// the other rows hold `border`. The splits are compile-time constants
/// (from insideRange), so no interior element tests a bound.
void writeSplitPlane(KernelBuilder &b, const TensorRef &buf, const Expr &plane, int64_t rows,
                     int64_t cols, std::pair<int64_t, int64_t> r, std::pair<int64_t, int64_t> c,
                     const Expr &border,
                     const std::function<Expr(const Expr &i, const Expr &ox, bool edge)> &value) {
  auto [r0, r1] = r;
  auto [c0, c1] = c;
  auto fill = [&](int64_t from, int64_t to) {
    if (to > from)
      b.loop("i", to - from, [&](Expr i) { buf.storeFlat(plane + from + i, border); });
  };
  auto columns = [&](const Expr &i, int64_t from, int64_t to, bool edge) {
    if (to > from)
      b.loop("ox", to - from, [&](Expr ox) {
        buf.storeFlat(plane + i * cols + from + ox, value(i, ox + from, edge));
      });
  };
  fill(0, r0 * cols);
  if (r1 > r0)
    b.loop("i", r1 - r0, [&](Expr i) {
      columns(i + r0, 0, c0, true);
      columns(i + r0, c0, c1, false);
      columns(i + r0, c1, cols, true);
    });
  fill(r1 * cols, rows * cols);
}

} // namespace

// Declared, and described, in IntegerOps.h.
std::optional<DotGeometry> tapQuadsGeometry(const ConvShape &s, int64_t lanes) {
  if (s.W.rank() != 2 || s.Group != s.C || s.M != s.C || s.N <= 0 ||
      numElements(s.W.Out) < lanes)
    return std::nullopt;
  return DotGeometry{1, numElements(s.W.Out), s.W.Kernel[0] * ((s.W.Kernel[1] + 3) / 4), 0};
}


// Declared, and described, in IntegerOps.h.
void lowerIntTapQuads(LowerCtx &c, const ConvShape &s, const TensorRef &x, const Expr &xz,
                      const TensorRef &w, const std::function<Expr(const Expr &)> &init,
                      const TensorRef &y, const std::function<Expr(Expr, Expr)> &finish) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const ir::KernelPlan::IntTile &tile = *c.node().Plan.Taps;
  const int64_t L = tile.Lanes;
  const Window &win = s.W;
  const int64_t C = s.C, KH = win.Kernel[0], KW = win.Kernel[1], oh = win.Out[0],
                ow = win.Out[1], sh = win.Strides[0], sw = win.Strides[1],
                dh = win.Dilations[0], dw = win.Dilations[1];
  const int64_t H = s.InSpatial[0], W = s.InSpatial[1], top = win.PadBegin[0],
                left = win.PadBegin[1];
  const int64_t U = (KW + 3) / 4, Hq = oh + (KH - 1) * dh / sh, Q = oh * ow;
  const int64_t NV = tile.Vectors, P = NV * L, wholeTiles = Q / P,
                tail = tailVectors(Q, P, L);
  TensorRef T = c.scratch("tapquads", acc, {C, U, sh, Hq, ow});
  auto fin = [&](const Expr &v, const Expr &m) { return finish ? finish(v, m) : v; };
  // The plan's DotSigned: the quads hold x - 128 as signed bytes (sdot4),
  // and each channel's sums start 128 x its weights' sum higher.
  const bool signedQuads = c.node().Plan.DotSigned;
  const BinOp dot = quadDot(c.node().Plan);
  auto quadByte = [&](const Expr &v) {
    return ops::quadByte(signedQuads ? v - constantInt(acc, 128) : v, signedQuads);
  };
  const Expr zq = quadByte(xz) * constantInt(acc, 0x01010101);
  b.loop("n", s.N, [&](Expr n) {
    b.loop("c", C, [&](Expr ch) {
      // The channel's tap quads, x_zp in the padding.
      for (int64_t u = 0; u < U; ++u) {
        const int64_t taps = std::min<int64_t>(4, KW - 4 * u);
        // The columns where every tap of the quad is inside x.
        std::pair<int64_t, int64_t> cols{0, ow};
        for (int64_t t = 0; t < taps; ++t) {
          auto [lo, hi] = insideRange(ow, sw, (4 * u + t) * dw - left, W);
          cols = {std::max(cols.first, lo), std::min(cols.second, hi)};
        }
        cols.second = std::max(cols.first, cols.second);
        for (int64_t py = 0; py < sh; ++py)
          writeSplitPlane(
              b, T, ((ch * U + u) * sh + py) * (Hq * ow), Hq, ow,
              insideRange(Hq, sh, py - top, H), cols, zq,
              [&](const Expr &i, const Expr &ox, bool edge) {
                Expr iy = i * sh + (py - top);
                // The bytes as stored (uint8), then (DotSigned) less 128
                // all four at once: a flip of each top bit (the bytes past
                // the taps meet zero weights).
                std::vector<Expr> bytes;
                for (int64_t t = 0; t < taps; ++t) {
                  Expr ix = ox * sw + ((4 * u + t) * dw - left);
                  if (!edge) {
                    bytes.push_back(cast(acc, x.load({n, ch, iy, ix})));
                    continue;
                  }
                  Expr in = binary(BinOp::And, ge(ix, indexConst(0)), lt(ix, indexConst(W)));
                  Expr at = min(max(ix, indexConst(0)), indexConst(W - 1));
                  bytes.push_back(select(in, cast(acc, x.load({n, ch, iy, at})), xz));
                }
                Expr q = byteQuad(bytes);
                return signedQuads ? flipQuadBytes(q) : q;
              });
      }
      // The weight quads of the channel's kernel rows.
      Local wq = b.local("wquads", acc, KH * U);
      Expr wsum = constantInt(acc, 0);
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t u = 0; u < U; ++u) {
          std::vector<Expr> bytes;
          for (int64_t t = 0; t < std::min<int64_t>(4, KW - 4 * u); ++t) {
            Expr wt = w.load({ch, indexConst(0), indexConst(kh), indexConst(4 * u + t)});
            bytes.push_back(cast(acc, cast(DType::U8, wt)));
            wsum = wsum + cast(acc, wt);
          }
          b.set(wq, indexConst(kh * U + u), byteQuad(bytes));
        }
      Expr first = init ? init(ch) : constantInt(acc, 0);
      if (signedQuads)
        first = first + wsum * constantInt(acc, 128);
      // One tile of nv vectors of outputs from q0.
      auto tile = [&](const Expr &q0, int64_t nv) {
        Local t = b.local("acc", acc, nv * L);
        for (int64_t v = 0; v < nv; ++v)
          b.store(t.Buf, indexConst(v * L), broadcast(first, (int)L));
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t u = 0; u < U; ++u) {
            Expr plane = (((ch * U + u) * sh + (kh * dh) % sh) * Hq + (kh * dh) / sh) * ow;
            Expr wv = broadcast(wq.get(indexConst(kh * U + u)), (int)L);
            for (int64_t v = 0; v < nv; ++v) {
              Expr at = indexConst(v * L);
              b.store(t.Buf, at,
                      vload(t.Buf, at, (int)L) +
                          binary(dot,
                                 vload(T.buffer(), plane + q0 + v * L, (int)L), wv));
            }
          }
        Local done = b.local("done", acc, nv * L);
        for (int64_t v = 0; v < nv; ++v)
          b.store(done.Buf, indexConst(v * L),
                  cast(acc, fin(vload(t.Buf, indexConst(v * L), (int)L), ch)));
        b.loop("j", nv * L, [&](Expr j) { y.storeFlat((n * C + ch) * Q + q0 + j, done.get(j)); });
      };
      if (wholeTiles > 0)
        b.loop("pt", wholeTiles, [&](Expr pt) { tile(pt * P, NV); });
      if (tail > 0)
        tile(indexConst(Q - tail * L), tail);
    }, LoopKind::Parallel);
  });
}


// Declared, and described, in IntegerOps.h.
void fillBorder(KernelBuilder &b, const TensorRef &buf, int64_t planes, int64_t Hp, int64_t Wp,
                int64_t top, int64_t left, int64_t H, int64_t W, const Expr &value) {
  int64_t bottom = Hp - H - top, right = Wp - W - left;
  b.loop("pl", planes, [&](Expr pl) {
    Expr plane = pl * (Hp * Wp);
    if (top > 0)
      b.loop("i", top * Wp, [&](Expr i) { buf.storeFlat(plane + i, value); });
    if (left > 0 || right > 0)
      b.loop("ih", H, [&](Expr ih) {
        Expr row = plane + (ih + top) * Wp;
        if (left > 0)
          b.loop("i", left, [&](Expr i) { buf.storeFlat(row + i, value); });
        if (right > 0)
          b.loop("i", right, [&](Expr i) { buf.storeFlat(row + left + W + i, value); });
      });
    if (bottom > 0)
      b.loop("i", bottom * Wp, [&](Expr i) { buf.storeFlat(plane + (top + H) * Wp + i, value); });
  });
}

namespace {

/// The reduction steps of a dense dot-product convolution: input channel
/// quads x taps.
int64_t dotConvSteps(const ConvShape &s) {
  return (s.C + 3) / 4 * numElements(s.W.Kernel);
}

/// The rows of a dense dot-product convolution's quad images: the output
/// rows plus those the kernel's extra rows reach, per row phase.
int64_t dotConvQuadRows(const ConvShape &s) {
  return s.W.Out[0] + (s.W.Kernel[0] - 1) * s.W.Dilations[0] / s.W.Strides[0];
}

/// Whether its row tiles run outside the output tiles: when the weights
/// outweigh the quad images of an image (every output tile's panel is then
/// packed once into the arena; otherwise each output tile packs its panel
/// on the stack).
bool dotConvRowsOuter(const ConvShape &s) {
  return s.M * dotConvSteps(s) >=
         (s.C + 3) / 4 * s.W.Kernel[1] * s.W.Strides[0] * dotConvQuadRows(s) * s.W.Out[1];
}

} // namespace

// Declared, and described, in IntegerOps.h.
std::optional<DotGeometry> dotConvGeometry(const ConvShape &s, int64_t lanes, int64_t stackBytes) {
  if (s.W.rank() != 2 || s.Group != 1 || s.M <= 0 || s.N <= 0 || numElements(s.W.Out) < lanes)
    return std::nullopt;
  // A pointwise convolution reads its quad image in place, and row tiles
  // outside the output tiles pack their panels in the arena; otherwise a
  // panel of one vector per step must fit the stack, and the tile's vectors
  // are bounded by it.
  const int64_t steps = dotConvSteps(s);
  const bool inPlace = numElements(s.W.Kernel) == 1 || dotConvRowsOuter(s);
  if (!inPlace && steps * lanes * 4 > stackBytes)
    return std::nullopt;
  return DotGeometry{s.M, numElements(s.W.Out), steps,
                     inPlace ? 0 : stackBytes / (steps * lanes * 4)};
}


// Declared, and described, in IntegerOps.h.
BinOp quadDot(const ir::KernelPlan &p) {
  if (!p.DotSigned)
    return BinOp::Dot4;
  return p.DotNarrow ? BinOp::SDot4Narrow : BinOp::SDot4;
}

// Declared, and described, in IntegerOps.h.
void lowerIntDotConv(LowerCtx &c, size_t xIdx, size_t xzpIdx, size_t wIdx, size_t biasIdx,
                     size_t packedIdx, const std::function<Expr(Expr, Expr)> &finish) {
  KernelBuilder &b = c.b();
  const ir::Node &node = c.node();
  ConvShape s = convShape(node, xIdx, wIdx);
  TensorRef x = c.in(xIdx), w4 = c.in(packedIdx), wsum = c.in(packedIdx + 1), y = c.out(0);
  std::optional<TensorRef> xzp = zeroPoint(c, xzpIdx), bias;
  if (biasIdx && c.hasIn(biasIdx))
    bias = c.in(biasIdx);
  const DType acc = DType::I32;
  const ir::KernelPlan::IntTile &dotTile = *node.Plan.Dot;
  const int64_t L = dotTile.Lanes;
  const bool pairs = node.Plan.DotPairs, signedQuads = node.Plan.DotSigned;
  const bool signedX = x.dtype() == DType::I8;
  const Window &win = s.W;
  const int64_t H = s.InSpatial[0], W = s.InSpatial[1], C = s.C, Cq = (C + 3) / 4;
  const int64_t KH = win.Kernel[0], KW = win.Kernel[1], oh = win.Out[0], ow = win.Out[1];
  const int64_t sh = win.Strides[0], sw = win.Strides[1], dh = win.Dilations[0],
                dw = win.Dilations[1], top = win.PadBegin[0], left = win.PadBegin[1];
  const int64_t Hq = dotConvQuadRows(s), Q = oh * ow;

  // The zero point in the quads' domain (unsigned for dot4, signed for
  // sdot4: the input offset by `shift`), as a value and as a quad.
  const int64_t shift = signedQuads ? (signedX ? 0 : -128) : (signedX ? 128 : 0);
  auto quadByte = [&](const Expr &v) { return ops::quadByte(v, signedQuads); };
  Expr xz = xzp ? cast(acc, xzp->loadFlat(indexConst(0))) : constantInt(acc, 0);
  // The zero point's byte as stored (the padding channels of a quad).
  const Expr xzByte = signedX ? binary(BinOp::BitAnd, xz, constantInt(acc, 0xff)) : xz;
  if (shift)
    xz = xz + constantInt(acc, shift);
  Local zq = b.local("zquad", quadByte(xz) * constantInt(acc, 0x01010101));

  // Initial values: bias - x_zp' * sum_k w.
  TensorRef init = c.scratch("chinit", acc, {s.M});
  b.loop("m", s.M, [&](Expr m) {
    Expr v = constantInt(acc, 0) - xz * wsum.load({m});
    init.storeFlat(m, bias ? cast(acc, bias->load({m})) + v : v);
  });

  // The quad images, one per kernel column and used row phase. Rows and
  // columns in the padding are split off at compile time, so that the
  // copy of the interior reads whole vectors of x.
  TensorRef X = c.scratch("xquads", acc, {s.N, Cq, KW, sh, Hq, ow});
  std::vector<bool> phaseUsed((size_t)sh, false);
  for (int64_t kh = 0; kh < KH; ++kh)
    phaseUsed[(size_t)((kh * dh) % sh)] = true;
  // The input's bytes as stored, combined, then offset by `shift` all
  // four at once: +-128 on a byte is a flip of its top bit.
  auto quad = [&](const Expr &n, const Expr &cq, const Expr &iy, const Expr &ix) {
    std::vector<Expr> bytes;
    for (int64_t j = 0; j < 4; ++j) {
      Expr ch = cq * 4 + j;
      Expr v = x.load({n, min(ch, indexConst(C - 1)), iy, ix});
      Expr byte = cast(acc, signedX ? cast(DType::U8, v) : v);
      bytes.push_back(C % 4 != 0 ? select(lt(ch, indexConst(C)), byte, xzByte) : byte);
    }
    Expr q = byteQuad(bytes);
    return shift ? flipQuadBytes(q) : q;
  };
  b.loop("n", s.N, [&](Expr n) {
    b.loop("cq", Cq, [&](Expr cq) {
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t py = 0; py < sh; ++py) {
          if (!phaseUsed[(size_t)py])
            continue;
          writeSplitPlane(b, X, (((n * Cq + cq) * KW + kw) * sh + py) * (Hq * ow), Hq, ow,
                          insideRange(Hq, sh, py - top, H),
                          insideRange(ow, sw, kw * dw - left, W), zq.get(),
                          [&](const Expr &i, const Expr &ox, bool edge) {
                            // All four channels share a column: an edge
                            // column is all padding.
                            return edge ? zq.get()
                                        : quad(n, cq, i * sh + (py - top),
                                               ox * sw + (kw * dw - left));
                          });
        }
    });
  });

  // A pointwise convolution's quad image is its own panel: the plane of
  // each quad holds consecutive outputs (copying them into panels made
  // mobilenet_v2 about 10% slower).
  const bool direct = KH * KW == 1, rowsOuter = dotConvRowsOuter(s);
  const int64_t steps = dotConvSteps(s), R = dotTile.Rows, NV = dotTile.Vectors;
  const int64_t P = NV * L, rowTiles = (s.M + R - 1) / R, wholeTiles = Q / P,
                tail = tailVectors(Q, P, L), tailStart = Q - tail * L;
  auto fin = [&](const Expr &v, const Expr &m) { return finish ? finish(v, m) : v; };
  // Where a tile reads its quads: vector v of step st at
  // Base + st * StepStride + v * L of Buf.
  struct QuadSource {
    Buffer Buf;
    Expr Base;
    int64_t StepStride;
  };
  const int64_t plane = sh * Hq * ow;
  auto directSource = [&](const Expr &n, const Expr &q0) {
    return QuadSource{X.buffer(), n * (Cq * plane) + q0, plane};
  };
  // Packs the panel of the output tile of nv vectors from q0 at `at` of
  // `panel`: step st = (cq KH + kh) KW + kw holds the nv vectors of quads
  // that tap (kh, kw) of quad cq multiplies, contiguous.
  auto pack = [&](const Buffer &panel, const Expr &at, const Expr &n, const Expr &q0,
                  int64_t nv) {
    b.loop("cq", Cq, [&](Expr cq) {
      b.loop("kh", KH, [&](Expr kh) {
        b.loop("kw", KW, [&](Expr kw) {
          Expr khd = kh * dh;
          Expr row = sh == 1 ? khd : khd / indexConst(sh);
          Expr py = sh == 1 ? indexConst(0) : khd % indexConst(sh);
          Expr base = ((((n * Cq + cq) * KW + kw) * sh + py) * Hq + row) * ow + q0;
          Expr st = (cq * KH + kh) * KW + kw;
          for (int64_t v = 0; v < nv; ++v)
            b.store(panel, at + (st * nv + v) * L, vload(X.buffer(), base + v * L, (int)L));
        });
      });
    });
    return QuadSource{panel, at, nv * L};
  };
  // One tile: rows from m0, nv vectors of outputs from q0 read from `x`.
  auto tile = [&](const QuadSource &x, const Expr &n, const Expr &m0, const Expr &q0,
                  int64_t nv) {
    auto at = [&](int64_t r, int64_t v) { return indexConst((r * nv + v) * L); };
    Local t = b.local("acc", acc, R * nv * L);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t v = 0; v < nv; ++v)
        b.store(t.Buf, at(r, v), broadcast(init.load({m0 + r}), (int)L));
    b.loop("st", steps, [&](Expr st) {
      std::vector<Expr> xv, xodd;
      for (int64_t v = 0; v < nv; ++v)
        xv.push_back(vload(x.Buf, x.Base + st * x.StepStride + v * L, (int)L));
      if (pairs) // each quad's bytes (0, 2) and (1, 3) as 16-bit pairs
        for (Expr &q : xv) {
          xodd.push_back(unary(UnOp::ZextBytes13, q));
          q = unary(UnOp::ZextBytes02, q);
        }
      for (int64_t r = 0; r < R; ++r) {
        Expr wstep = (m0 + r) * steps + st;
        if (pairs) {
          Expr we = broadcast(w4.loadFlat(wstep * 2), (int)L),
               wo = broadcast(w4.loadFlat(wstep * 2 + 1), (int)L);
          for (int64_t v = 0; v < nv; ++v)
            b.store(t.Buf, at(r, v),
                    vload(t.Buf, at(r, v), (int)L) + binary(BinOp::Dot2, xv[v], we) +
                        binary(BinOp::Dot2, xodd[v], wo));
          continue;
        }
        Expr wq = broadcast(w4.loadFlat(wstep), (int)L);
        const BinOp dot = quadDot(node.Plan);
        for (int64_t v = 0; v < nv; ++v)
          b.store(t.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L) + binary(dot, xv[v], wq));
      }
    });
    Local done = b.local("done", acc, R * nv * L);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t v = 0; v < nv; ++v)
        b.store(done.Buf, at(r, v), cast(acc, fin(vload(t.Buf, at(r, v), (int)L), m0 + r)));
    for (int64_t r = 0; r < R; ++r)
      b.loop("j", nv * L, [&](Expr j) {
        y.storeFlat((n * s.M + m0 + r) * Q + q0 + j, done.get(at(r, 0) + j));
      });
  };
  auto rowStart = [&](const Expr &rt) { return min(rt * R, indexConst(s.M - R)); };
  // When the weights outweigh the quad images, the panels of every output
  // tile are packed once per image (whole tiles, then the tail tile) and
  // the row tiles run outside (in parallel), each row tile's weights
  // staying cached while it sweeps the panels. Otherwise the output tiles
  // run outside, each packing its panel on the stack and sweeping every
  // row tile (whose weights stay in the L2 cache); the tail tile's row
  // tiles run in groups, each packing its own panel, so that it too runs
  // in parallel.
  const int64_t tiles = wholeTiles + (tail > 0 ? 1 : 0);
  b.loop("n", s.N, [&](Expr n) {
    if (rowsOuter) {
      std::optional<TensorRef> panels;
      if (!direct)
        panels = c.scratch("xpanels", acc, {steps * (wholeTiles * P + tail * L)});
      const Expr tailAt = indexConst(steps * wholeTiles * P), tailQ = indexConst(tailStart);
      auto whole = [&](const Expr &pt) {
        return direct ? directSource(n, pt * P)
                      : QuadSource{panels->buffer(), pt * (steps * P), NV * L};
      };
      auto last = [&] {
        return direct ? directSource(n, tailQ) : QuadSource{panels->buffer(), tailAt, tail * L};
      };
      if (!direct)
        b.loop("pt", tiles, [&](Expr pt) {
          auto packWhole = [&] { pack(panels->buffer(), pt * (steps * P), n, pt * P, NV); };
          if (tail == 0)
            return packWhole();
          b.ifThen(lt(pt, indexConst(wholeTiles)), packWhole,
                   [&] { pack(panels->buffer(), tailAt, n, tailQ, tail); });
        }, LoopKind::Parallel);
      b.loop("rt", rowTiles, [&](Expr rt) {
        if (wholeTiles > 0)
          b.loop("pt", wholeTiles, [&](Expr pt) { tile(whole(pt), n, rowStart(rt), pt * P, NV); });
        if (tail > 0)
          tile(last(), n, rowStart(rt), tailQ, tail);
      }, LoopKind::Parallel);
      return;
    }
    auto sweep = [&](const Expr &q0, int64_t nv, const Expr &rt0, const Expr &rt1) {
      QuadSource x = directSource(n, q0);
      if (!direct)
        x = pack(b.local("xpanel", acc, steps * nv * L).Buf, indexConst(0), n, q0, nv);
      b.loop("rt", rt0, rt1, [&](Expr rt) { tile(x, n, rowStart(rt), q0, nv); });
    };
    if (wholeTiles > 0)
      b.loop("pt", wholeTiles, [&](Expr pt) {
        sweep(pt * P, NV, indexConst(0), indexConst(rowTiles));
      }, LoopKind::Parallel);
    if (tail > 0) {
      const int64_t per = (rowTiles + dotTile.TailGroups - 1) / dotTile.TailGroups,
                    groups = (rowTiles + per - 1) / per;
      b.loop("g", groups, [&](Expr g) {
        sweep(indexConst(tailStart), tail, g * per, min(g * per + per, indexConst(rowTiles)));
      }, LoopKind::Parallel);
    }
  });
}

} // namespace mlcc::ops
