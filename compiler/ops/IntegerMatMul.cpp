//===- IntegerMatMul.cpp - MatMulInteger, QLinearMatMul, QGemm ------------===//
//
// MatMulInteger accumulates zero-point-corrected operands in int32;
// QLinearMatMul and QGemm (com.microsoft) requantize the accumulator:
//
//   y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zp)
//
// sum_k (a - az)(b - bz) = sum_k (a - az) b - bz sum_k (a - az): (a - az) is
// formed where A's element is loaded (outside the loop over columns) and the
// row sums of (a - az) are computed once per call when bz may be nonzero;
// the innermost loop multiplies and adds the raw 8-bit values (widened to
// int32). With plan-kernels' plan (Dot4Lanes) the products run on dot
// products of byte quads (lowerIntDotMatMul).
//
// Requantization (shared with IntegerConv.cpp through IntegerOps.h): the
// multiplier is computed in the scales' precision (f16 scales round after
// every operation, like the reference), once per output channel
// (convolution) or once per call (per-tensor matrix scales). With constant
// scales (what quantization tools emit) the product and the rounding are in
// f32 like ONNX Runtime's x86 kernels, round_half_even(f32(acc) * f32
// multiplier); otherwise the product is in double like the ONNX reference.
// The f32 result is clamped, rounded and converted to int32 in vectors
// (requant::requantizeF32); with the plan's FixedRequantInput, in fixed
// point.
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
// Integer matrix multiplication
// ---------------------------------------------------------------------------

/// A per-tensor, per-row (of A: 1-D of M elements, or [..., M, 1]) or
/// per-column (of B: 1-D of N elements, or [..., 1, N]) parameter.
void checkMatParam(const ir::Node &n, size_t i, const MatMulShape &s, bool rows) {
  if (!n.hasInput(i))
    return;
  const Shape &p = n.inShape(i);
  if (numElements(p) == 1)
    return;
  int64_t len = rows ? s.M : s.N;
  if (p.size() == 1) {
    if (p[0] != len)
      n.error() << "input " << i << " of shape " << shapeToString(p)
                << " must have " << len << " elements (one per "
                << (rows ? "row" : "column") << ")";
    return;
  }
  Shape full = s.Batch;
  full.push_back(rows ? s.M : 1);
  full.push_back(rows ? 1 : s.N);
  if (p.size() > full.size() || broadcastShapes(n, {p, full}) != full)
    n.error() << "input " << i << " of shape " << shapeToString(p)
              << " does not broadcast to " << shapeToString(full);
}

/// Loads the parameter of batch `bi`, row `r`, column `c` of the output.
Expr loadMatParam(const TensorRef &t, bool rows, const std::vector<Expr> &bi,
                  const Expr &r, const Expr &c) {
  if (t.numel() == 1)
    return t.loadFlat(indexConst(0));
  if (t.rank() == 1)
    return t.load({rows ? r : c});
  std::vector<Expr> idx = bi;
  idx.push_back(rows ? r : indexConst(0));
  idx.push_back(rows ? indexConst(0) : c);
  return t.loadBroadcast(idx);
}

} // namespace

// Declared, and described, in IntegerOps.h.
std::optional<TensorRef> zeroPoint(LowerCtx &c, size_t i) {
  if (!c.hasIn(i))
    return std::nullopt;
  TensorRef t = c.in(i);
  if (isZeroConstant(t))
    return std::nullopt;
  return t;
}

std::optional<IntegerOperands> integerOperands(const ir::Node &n) {
  IntegerOperands o;
  if (n.Domain == "" && n.OpType == "QLinearConv")
    o = {true, 0, 3, 5, 9};
  else if (n.Domain == "" && n.OpType == "ConvInteger")
    o = {true, 0, 1, 3, 4};
  else if (n.Domain == "" && n.OpType == "QLinearMatMul")
    o = {false, 0, 3, 5, 8};
  else if (n.Domain == "" && n.OpType == "MatMulInteger")
    o = {false, 0, 1, 3, 4};
  else if (n.Domain == "com.microsoft" && n.OpType == "QGemm")
    o = {false, 0, 3, 5, 9, n.attrInt("transB", 0) != 0};
  else
    return std::nullopt;
  return o;
}

bool zeroOrAbsent(const ir::Node &n, size_t i) {
  if (!n.hasInput(i))
    return true;
  const ir::Value *z = n.Inputs[i];
  if (!z->Const)
    return false;
  for (int64_t k = 0; k < z->Type.numel(); ++k)
    if (z->Const->intAt(z->Const->isSplat() ? 0 : k) != 0)
      return false;
  return true;
}

namespace {

/// Lowers sum_k (a - a_zp)(b - b_zp) in int32 and stores finish(acc, bi, i, j):
/// the loop over columns multiplies (a - a_zp) by raw b, and b_zp's term,
/// -b_zp[j] * sum_k (a - a_zp), starts the accumulator from row sums
/// computed before the product.
/// The operand's shape with its last two axes swapped (a transposed operand
/// of QGemm seen as the matrix it stands for).
Shape swapLastTwo(Shape s) {
  if (s.size() >= 2)
    std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

/// The index of element (r, c) of operand A (isA) or B, stored transposed
/// when `trans`.
std::vector<Expr> operandIndex(const MatMulShape &s, bool isA, bool trans,
                               const std::vector<Expr> &bi, const Expr &r, const Expr &c) {
  std::vector<Expr> idx = matmulOperandIndex(s, isA, bi, r, c);
  if (trans)
    std::swap(idx[idx.size() - 1], idx[idx.size() - 2]);
  return idx;
}

/// sum_k (a - a_zp) b over constant int8 B on the int8 dot product (kernel
/// IR dot4), chosen by plan-kernels (plan Dot4Lanes = the vector
/// lanes) when B's zero point is 0: B comes packed as int32 quads of four
/// consecutive k per column, [ceil(K / 4), N] (mlcc.PackQuadsK), with its
/// column sums, both computed at compile time (the node's last two inputs).
/// Each reduction step broadcasts a quad of A's row (four bytes combined,
/// offset by 128 when A is int8, so that they are unsigned) and multiplies
/// it into 1, 2 or 4 vectors of B quads; rows run in tiles of up to 4, and
///   sum_k (a - a_zp) b = sum dot4(a', b) - a_zp' colsum(b)
/// with the bias is each column's initial value, computed once per call.
/// Returns false (nothing emitted) when the shape does not fit: B is not a
/// plain matrix, a_zp is not per tensor, fewer columns than lanes, or a
/// bias that varies along the rows.
bool lowerIntDotMatMul(LowerCtx &c, const MatMulShape &s, const TensorRef &a,
                       const std::optional<TensorRef> &azp, bool transA,
                       const std::function<Expr(Expr, const std::vector<Expr> &, Expr, Expr)> &finish,
                       const std::function<Expr(const Expr &, const Expr &)> &bias,
                       bool biasPerRow) {
  const ir::Node &node = c.node();
  if (!node.Plan.Dot || node.Plan.Dot4Input < 0)
    return false;
  const ir::KernelPlan::IntTile &tile = *node.Plan.Dot;
  const int64_t L = tile.Lanes;
  size_t packedIdx = (size_t)node.Plan.Dot4Input;
  const bool alongK = node.Plan.DotAlongK;
  if (!c.hasIn(packedIdx) || s.RankB != 2 || transA || (alongK ? s.M != 1 : s.N < L) ||
      s.M <= 0 || biasPerRow || (azp && azp->numel() != 1))
    return false;
  KernelBuilder &b = c.b();
  TensorRef bq = c.in(packedIdx), colsum = c.in(packedIdx + 1), y = c.out(0);
  const DType acc = DType::I32;
  const bool signedA = a.dtype() == DType::I8;
  const int64_t K = s.K, Kq = (K + 3) / 4, M = s.M, N = s.N;
  // The quads hold A's bytes in the dot product's domain: unsigned for
  // dot4, signed for sdot4 (the plan's DotSigned); int8 A is offset by
  // +128 for the one and uint8 A by -128 for the other, each a flip of the
  // bytes' top bits, and the zero point with them.
  const bool signedQuads = node.Plan.DotSigned, flip = signedQuads != signedA;
  const BinOp dot = quadDot(node.Plan);
  Expr az = azp ? cast(acc, azp->loadFlat(indexConst(0))) : constantInt(acc, 0);
  if (flip)
    az = az + constantInt(acc, signedA ? 128 : -128);
  // Each column's initial value.
  TensorRef colinit = c.scratch("colinit", acc, {N});
  b.loop("j", N, [&](Expr j) {
    Expr v = constantInt(acc, 0) - az * colsum.load({j});
    colinit.storeFlat(j, bias ? bias(indexConst(0), j) + v : v);
  });
  // A quad of A's row from k = 4 kq (a word loaded whole where A runs
  // along k), in the quads' domain.
  auto aQuad = [&](const std::vector<Expr> &bi, const Expr &r, const Expr &kq) {
    std::vector<Expr> bytes;
    for (int64_t j = 0; j < 4; ++j) {
      Expr k = K % 4 == 0 ? kq * 4 + j : min(kq * 4 + j, indexConst(K - 1));
      Expr v = a.load(matmulOperandIndex(s, true, bi, r, k));
      bytes.push_back(cast(acc, signedA ? cast(DType::U8, v) : v));
    }
    Expr quad = byteQuad(bytes);
    if (flip)
      quad = flipQuadBytes(quad);
    return quad;
  };
  auto storeY = [&](const std::vector<Expr> &bi, const Expr &r, const Expr &j, const Expr &v) {
    std::vector<Expr> idx = bi;
    if (s.RankA > 1)
      idx.push_back(r);
    idx.push_back(j);
    y.store(idx, finish ? finish(v, bi, r, j) : v);
  };
  if (alongK) {
    // The plan's DotAlongK: A's row staged as quads (zero past K, where
    // B's packed quads are zero too), then per tile of columns a vector
    // accumulator each, over Lanes quads of K a step, summed across.
    const int64_t Kp = bq.shape()[1], R = std::min(tile.Rows, N);
    const int64_t colTiles = (N + R - 1) / R;
    b.loops(s.Batch, [&](const std::vector<Expr> &bi) {
      TensorRef aq = c.scratch("aquads", acc, {Kp});
      b.loop("kq", Kq, [&](Expr kq) { aq.storeFlat(kq, aQuad(bi, indexConst(0), kq)); });
      if (Kp > Kq)
        b.loop("kq", indexConst(Kq), indexConst(Kp),
               [&](Expr kq) { aq.storeFlat(kq, constantInt(acc, 0)); });
      b.loop("jt", colTiles, [&](Expr jt) {
        Expr j0 = min(jt * R, indexConst(N - R));
        Local t = b.local("acc", acc, R * L);
        for (int64_t r = 0; r < R; ++r)
          b.store(t.Buf, indexConst(r * L), broadcast(constantInt(acc, 0), (int)L));
        b.loop("kv", Kp / L, [&](Expr kv) {
          Expr av = vload(aq.buffer(), kv * L, (int)L);
          for (int64_t r = 0; r < R; ++r) {
            Expr bv = vload(bq.buffer(), (j0 + r) * Kp + kv * L, (int)L);
            b.store(t.Buf, indexConst(r * L),
                    vload(t.Buf, indexConst(r * L), (int)L) + binary(dot, av, bv));
          }
        });
        for (int64_t r = 0; r < R; ++r) {
          Expr sum = colinit.loadFlat(j0 + r);
          for (int64_t l = 0; l < L; ++l)
            sum = sum + t.get(indexConst(r * L + l));
          storeY(bi, indexConst(0), j0 + r, sum);
        }
      }, LoopKind::Parallel);
    }, "bi");
    return true;
  }
  // The plan's tile, halved across until the columns fill it.
  int64_t NV = tile.Vectors;
  while (NV > 1 && N < NV * L)
    NV /= 2;
  const int64_t P = NV * L;
  const int64_t RW = std::min<int64_t>(tile.Rows, M), rowTiles = (M + RW - 1) / RW, colTiles = (N + P - 1) / P;
  auto at = [&](int64_t r, int64_t v) { return indexConst((r * NV + v) * L); };
  b.loops(s.Batch, [&](const std::vector<Expr> &bi) {
    auto body = [&](const Expr &rt, const Expr &jt) {
      Expr r0 = min(rt * RW, indexConst(M - RW)), j0 = min(jt * P, indexConst(N - P));
      Local t = b.local("acc", acc, RW * P);
      for (int64_t r = 0; r < RW; ++r)
        for (int64_t v = 0; v < NV; ++v)
          b.store(t.Buf, at(r, v), vload(colinit.buffer(), j0 + v * L, (int)L));
      b.loop("kq", Kq, [&](Expr kq) {
        std::vector<Expr> bv;
        for (int64_t v = 0; v < NV; ++v)
          bv.push_back(vload(bq.buffer(), kq * N + j0 + v * L, (int)L));
        for (int64_t r = 0; r < RW; ++r) {
          Expr aq = broadcast(aQuad(bi, r0 + r, kq), (int)L);
          for (int64_t v = 0; v < NV; ++v)
            b.store(t.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L) + binary(dot, aq, bv[v]));
        }
      });
      Local done = b.local("done", acc, RW * P);
      for (int64_t r = 0; r < RW; ++r)
        for (int64_t v = 0; v < NV; ++v)
          b.store(done.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L));
      for (int64_t r = 0; r < RW; ++r)
        b.loop("j", P, [&](Expr j) { storeY(bi, r0 + r, j0 + j, done.get(at(r, 0) + j)); });
    };
    if (rowTiles >= colTiles)
      b.loop("rt", rowTiles, [&](Expr rt) {
        b.loop("jt", colTiles, [&](Expr jt) { body(rt, jt); });
      }, LoopKind::Parallel);
    else
      b.loop("jt", colTiles, [&](Expr jt) {
        b.loop("rt", rowTiles, [&](Expr rt) { body(rt, jt); });
      }, LoopKind::Parallel);
  }, "bi");
  return true;
}

void lowerIntMatMul(LowerCtx &c, size_t aIdx, size_t bIdx, size_t azpIdx,
                    size_t bzpIdx,
                    const std::function<Expr(Expr, const std::vector<Expr> &,
                                             Expr, Expr)> &finish,
                    bool transA = false, bool transB = false,
                    const std::function<Expr(const Expr &, const Expr &)> &bias = nullptr) {
  KernelBuilder &b = c.b();
  // B is bound where read (its parameter after A's), not by products in
  // pairs, which read its packed quads (so the library holds only those).
  const std::optional<size_t> pairs = pairedWeightsInput(c.node());
  const ir::KernelPlan &plan = c.node().Plan;
  const bool byteDot = plan.ByteDot && plan.ByteDotInput >= 0 &&
                       c.node().hasInput((size_t)plan.ByteDotInput + 1);
  TensorRef a = c.in(aIdx);
  if (!pairs && !byteDot)
    c.in(bIdx);
  TensorRef y = c.out(0);
  const Shape &bShape = c.node().inShape(bIdx);
  std::optional<TensorRef> azp = zeroPoint(c, azpIdx), bzp = zeroPoint(c, bzpIdx);
  MatMulShape s = matmulShape(c.node(), transA ? swapLastTwo(a.shape()) : a.shape(),
                              transB ? swapLastTwo(bShape) : bShape);
  const DType acc = DType::I32;
  bool biasPerRow = c.node().OpType == "QGemm" && c.hasIn(6) && c.in(6).rank() == 2 &&
                    c.in(6).shape()[0] != 1;
  if (lowerIntDotMatMul(c, s, a, azp, transA, finish, bias, biasPerRow))
    return;
  if (byteDot) {
    // The plan's ByteDot (Helium vmladav.s8; plan-kernels checked the
    // shapes: plain matrices, A not transposed, one A zero point, B's zero
    // point 0): per output, sum_k a'[i, k] * bt[j, k] over signed bytes,
    // a' = a ^ 0x80 = a - 128 for uint8 A (a for int8), which LLVM
    // vectorizes as sixteen-byte multiply-accumulates across lanes; then
    //   sum_k (a - a_zp) b = sum_k a' b + (offset - a_zp) colsum(b)
    // with offset 128 (uint8) or 0.
    TensorRef bt = c.in((size_t)plan.ByteDotInput), sums = c.in((size_t)plan.ByteDotInput + 1);
    const bool u8 = a.dtype() == DType::U8;
    const std::vector<Expr> none;
    Expr shift = constantInt(acc, u8 ? 128 : 0);
    if (azp)
      shift = shift - cast(acc, azp->loadFlat(indexConst(0)));
    b.loop("i", s.M, [&](Expr i) {
      b.loop("j", s.N, [&](Expr j) {
        Local sum = b.local("sum", constantInt(acc, 0));
        b.loop("k", s.K, [&](Expr k) {
          Expr av = a.load({i, k});
          if (u8)
            av = cast(DType::I8, binary(BinOp::BitXor, av, constantInt(DType::U8, 0x80)));
          b.set(sum, sum.get() + cast(acc, av) * cast(acc, bt.load({j, k})));
        }, LoopKind::Scalar);
        Expr v = sum.get() + shift * sums.load({j});
        if (bias)
          v = bias(i, j) + v;
        y.store({i, j}, finish ? finish(v, none, i, j) : v);
      });
    });
    return;
  }
  auto loadA = [&](const std::vector<Expr> &bi, const Expr &i, const Expr &k) {
    Expr v = cast(acc, a.load(operandIndex(s, true, transA, bi, i, k)));
    return azp ? v - cast(acc, loadMatParam(*azp, true, bi, i, k)) : v;
  };
  auto batchFlat = [&](const std::vector<Expr> &bi) {
    Expr f = indexConst(0);
    for (size_t d = 0; d < bi.size(); ++d)
      f = f * s.Batch[d] + bi[d];
    return f;
  };
  std::optional<TensorRef> rowSum;
  if (bzp) {
    rowSum = c.scratch("rowsum", acc, {numElements(s.Batch) * s.M});
    b.loops(s.Batch, [&](const std::vector<Expr> &bi) {
      b.loop("i", s.M, [&](Expr i) {
        Local sum = b.local("rowsum", constantInt(acc, 0));
        b.loop("k", s.K, [&](Expr k) { b.set(sum, sum.get() + loadA(bi, i, k)); });
        rowSum->storeFlat(batchFlat(bi) * s.M + i, sum.get());
      });
    }, "rb");
  }
  MatMulSpec spec;
  spec.Acc = acc;
  spec.LoadA = loadA;
  spec.LoadB = [&](const std::vector<Expr> &bi, const Expr &k, const Expr &j) {
    return cast(acc, c.in(bIdx).load(operandIndex(s, false, transB, bi, k, j)));
  };
  if (bzp || bias)
    spec.Init = [&](const std::vector<Expr> &bi, const Expr &i, const Expr &j) {
      Expr start = bias ? bias(i, j) : constantInt(acc, 0);
      if (!bzp)
        return start;
      return start - cast(acc, loadMatParam(*bzp, false, bi, i, j)) *
                         rowSum->loadFlat(batchFlat(bi) * s.M + i);
    };
  if (finish)
    spec.Finish = [&](const Expr &v, const std::vector<Expr> &bi, const Expr &i,
                      const Expr &j) { return finish(v, bi, i, j); };
  // A plain matrix with the plan's Int tile (targets without vectors): the
  // register-tiled generator, B read in place one column per lane, the
  // initial value and the requantization applied as each sum is stored.
  const std::optional<ir::KernelPlan::IntTile> &tile = c.node().Plan.Int;
  if (tile && !c.node().Plan.PerOutput && s.Batch.empty() && s.RankA == 2 && s.RankB == 2 && s.M > 0 &&
      s.N >= tile->Vectors * tile->Lanes) {
    const std::vector<Expr> none;
    TiledContraction t;
    t.Rows = s.M;
    t.Cols = s.N;
    t.Reduce = {s.K};
    t.Tile = ir::KernelPlan::Tile{1, tile->Vectors * tile->Lanes, tile->Rows, 0, 0};
    t.Acc = acc;
    t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) { return loadA(none, r, k[0]); };
    t.LoadB = [&](const std::vector<Expr> &k, const Expr &col) { return spec.LoadB(none, k[0], col); };
    if (pairs) {
      // K two at a time (the plan's Pairs), over quads of K x their two
      // pairs: A(r, 4q + 2j) and A(r, 4q + 2j + 1) (A's last column again,
      // times a zero weight, past K) as the halves of a pair, times pair j
      // of B's packed quad, on dot2.
      TensorRef quads = c.in(*pairs);
      t.Reduce = {(s.K + 3) / 4, 2};
      t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
        auto at = [&](int64_t e) { return min(k[0] * 4 + k[1] * 2 + e, indexConst(s.K - 1)); };
        return requant::halfPair(loadA(none, r, at(0)), loadA(none, r, at(1)));
      };
      const bool words = c.node().Plan.PairWords;
      if (words) {
        // The plan's PairWords: A's quad (a0, a1, a2, a3) as one word (one
        // load where the target reads unaligned words), pair 0 (a0, a2) and
        // pair 1 (a1, a3) of its bytes (zext_bytes for uint8 A, sext_bytes
        // for int8), times B's quad packed in its own byte order, whose
        // sext_bytes02 and 13 are the same pairs.
        const bool sign = a.dtype() == DType::I8;
        t.LoadA = [&, sign](const Expr &r, const std::vector<Expr> &k) {
          std::vector<Expr> bytes;
          for (int64_t e = 0; e < 4; ++e)
            bytes.push_back(cast(acc, cast(DType::U8, a.load({r, k[0] * 4 + e}))));
          Expr q = requant::byteQuad(bytes);
          return select(eq(k[1], indexConst(0)),
                        unary(sign ? UnOp::SextBytes02 : UnOp::ZextBytes02, q),
                        unary(sign ? UnOp::SextBytes13 : UnOp::ZextBytes13, q));
        };
      }
      t.LoadB = [quads](const std::vector<Expr> &k, const Expr &col) {
        Expr q = quads.load({k[0], col});
        return select(eq(k[1], indexConst(0)), unary(UnOp::SextBytes02, q),
                      unary(UnOp::SextBytes13, q));
      };
      t.Product = [](const Expr &a, const Expr &bv) { return binary(BinOp::Dot2, a, bv); };
    }
    t.Store = [&](const Expr &r, const Expr &col, const Expr &v) {
      Expr sum = spec.Init ? spec.Init(none, r, col) + v : v;
      y.store({r, col}, spec.Finish ? spec.Finish(sum, none, r, col) : sum);
    };
    lowerTiledContraction(c, t);
    return;
  }
  lowerMatrixProduct(c, s, y, spec);
}

void inferMatMulInteger(ir::Node &n) {
  requireInputType(n, 0, "A", {DType::I8, DType::U8});
  requireInputType(n, 1, "B", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 3, 1);
  MatMulShape s = matmulShape(n, n.inShape(0), n.inShape(1));
  checkMatParam(n, 2, s, true);
  checkMatParam(n, 3, s, false);
  n.setOutput(0, DType::I32, s.Out);
}

void lowerMatMulInteger(LowerCtx &c) {
  lowerIntMatMul(c, 0, 1, 2, 3, nullptr);
}

} // namespace

// Declared, and described, in IntegerOps.h.
void checkQLinearTypes(const ir::Node &n, const char *a, const char *b) {
  requireInputType(n, 0, a, {DType::I8, DType::U8});
  requireInputType(n, 3, b, {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 5, 3);
  requireInputType(n, 7, "y_zero_point", {DType::I8, DType::U8});
  for (size_t i : {1, 4, 6}) {
    requireInputType(n, i, "a scale", {DType::F32, DType::F16, DType::BF16});
    if (n.inDType(i) != n.inDType(1))
      n.error() << "scales must share one type";
  }
}

namespace {

void inferQLinearMatMul(ir::Node &n) {
  checkQLinearTypes(n, "a", "b");
  MatMulShape s = matmulShape(n, n.inShape(0), n.inShape(3));
  checkMatParam(n, 1, s, true);
  checkMatParam(n, 2, s, true);
  checkMatParam(n, 4, s, false);
  checkMatParam(n, 5, s, false);
  checkMatParam(n, 6, s, true);
  checkMatParam(n, 7, s, true);
  n.setOutput(0, n.inDType(7), s.Out);
}

} // namespace

// Declared, and described, in IntegerOps.h.
Expr requantize(DType out, bool f32, const Expr &acc, const Expr &mult, const Expr &zp) {
  if (f32)
    return requantizeF32(out, acc, mult, zp);
  Expr v = saturateRound(out, cast(DType::F64, acc) * cast(DType::F64, mult),
                         cast(DType::F64, zp));
  return cast(DType::I32, cast(DType::F32, v));
}

namespace {

} // namespace

// Declared, and described, in IntegerOps.h.
std::optional<std::pair<Expr, Expr>> fixedRequant(LowerCtx &c, const Expr &m) {
  if (!(c.node().Plan.FixedRequantInput >= 0))
    return std::nullopt;
  size_t at = (size_t)c.node().Plan.FixedRequantInput;
  TensorRef mult = c.in(at), shift = c.in(at + 1);
  Expr i = mult.numel() == 1 ? indexConst(0) : m;
  return std::make_pair(mult.loadFlat(i), shift.loadFlat(i));
}

// Declared, and described, in IntegerOps.h.
std::optional<std::vector<double>> accumulatorBounds(const ir::Node &n, size_t wIdx,
                                                     size_t wzpIdx, size_t biasIdx,
                                                     bool channelsFirst) {
  auto constant = [&](size_t i) -> const Tensor * {
    return n.hasInput(i) && n.Inputs[i]->Const ? n.Inputs[i]->Const.get() : nullptr;
  };
  const Tensor *w = constant(wIdx), *wzp = constant(wzpIdx), *bias = constant(biasIdx);
  if (!w || w->rank() < 2 || (n.hasInput(wzpIdx) && !wzp) || (n.hasInput(biasIdx) && !bias))
    return std::nullopt;
  const int64_t channels = channelsFirst ? w->shape()[0] : w->shape().back();
  if (channels <= 0)
    return std::nullopt;
  const int64_t k = w->numel() / channels;
  auto perChannel = [&](const Tensor *t, int64_t ch) {
    return t->numel() == 1 ? t->doubleAt(0) : t->doubleAt(ch);
  };
  if ((wzp && wzp->numel() != 1 && wzp->numel() != channels) ||
      (bias && bias->numel() != 1 && bias->numel() != channels))
    return std::nullopt;
  std::vector<double> bounds((size_t)channels);
  for (int64_t ch = 0; ch < channels; ++ch) {
    const double zp = wzp ? perChannel(wzp, ch) : 0.0;
    double sum = 0;
    for (int64_t i = 0; i < k; ++i)
      sum += std::fabs(w->doubleAt(channelsFirst ? ch * k + i : i * channels + ch) - zp);
    bounds[(size_t)ch] = 255.0 * sum + (bias ? std::fabs(perChannel(bias, ch)) : 0.0);
  }
  return bounds;
}

// Declared, and described, in IntegerOps.h.
bool productsSmall(const std::vector<double> &bounds, const std::vector<double> &mult) {
  if (mult.empty() || (mult.size() != 1 && mult.size() != bounds.size()))
    return false;
  for (size_t ch = 0; ch < bounds.size(); ++ch)
    if (!(bounds[ch] * std::fabs(mult[mult.size() == 1 ? 0 : ch]) < kSmallProductBound))
      return false;
  return true;
}

// Declared, and described, in IntegerOps.h.
bool fixedRequantSmall(const ir::Node &n, const std::vector<double> &bounds) {
  const int64_t at = n.Plan.FixedRequantInput;
  if (at < 0 || !n.hasInput((size_t)at + 1) || !n.Inputs[(size_t)at]->Const ||
      !n.Inputs[(size_t)at + 1]->Const)
    return false;
  const Tensor &m0 = *n.Inputs[(size_t)at]->Const, &shift = *n.Inputs[(size_t)at + 1]->Const;
  if (m0.numel() != shift.numel())
    return false;
  std::vector<double> mult;
  for (int64_t i = 0; i < m0.numel(); ++i) {
    if (shift.intAt(i) < 33)
      return false;
    mult.push_back(std::ldexp(m0.doubleAt(i), -(int)shift.intAt(i)));
  }
  return productsSmall(bounds, mult);
}

namespace {

void lowerQLinearMatMul(LowerCtx &c) {
  KernelBuilder &b = c.b();
  if ((c.node().Plan.FixedRequantInput >= 0)) {
    TensorRef yzp = c.in(7);
    DType out = c.node().inDType(7);
    lowerIntMatMul(c, 0, 3, 2, 5, [&](Expr acc, const std::vector<Expr> &, Expr, Expr j) {
      auto [m0, s] = *fixedRequant(c, j);
      return requantizeFixed(out, acc, m0, s, yzp.loadFlat(indexConst(0)));
    });
    return;
  }
  TensorRef as = c.in(1), bs = c.in(4), ys = c.in(6), yzp = c.in(7);
  DType st = c.node().inDType(1);
  DType out = c.node().inDType(7);
  bool f32 = allConstant({&as, &bs, &ys});
  // Per-tensor scales (the usual case): one multiplier for the call.
  std::optional<Local> mult;
  if (as.numel() == 1 && bs.numel() == 1 && ys.numel() == 1)
    mult = b.local("mult", requantMultiplierF32(st, as.loadFlat(indexConst(0)),
                                                bs.loadFlat(indexConst(0)),
                                                ys.loadFlat(indexConst(0))));
  lowerIntMatMul(c, 0, 3, 2, 5,
                 [&](Expr acc, const std::vector<Expr> &bi, Expr i, Expr j) {
                   Expr m = mult ? mult->get()
                                 : requantMultiplierF32(
                                       st, loadMatParam(as, true, bi, i, j),
                                       loadMatParam(bs, false, bi, i, j),
                                       loadMatParam(ys, true, bi, i, j));
                   return requantize(out, f32, acc, m, loadMatParam(yzp, true, bi, i, j));
                 });
}

// ---------------------------------------------------------------------------
// QGemm (com.microsoft)
// ---------------------------------------------------------------------------
//
// Inputs: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C?, y_scale?,
// y_zero_point?; attributes alpha, transA, transB. The int32 accumulator
// sum_k (a - a_zp)(b - b_zp) + C (C is quantized with scale alpha * a_scale *
// b_scale and zero point 0) is requantized by alpha * a_scale * b_scale /
// y_scale to y_zero_point's type, or, without y_scale, dequantized to f32.

void inferQGemm(ir::Node &n) {
  requireInputType(n, 0, "A", {DType::I8, DType::U8});
  requireInputType(n, 3, "B", {DType::I8, DType::U8});
  requireZeroPointType(n, 2, 0);
  requireZeroPointType(n, 5, 3);
  requireInputType(n, 1, "a_scale", {DType::F32});
  requireInputType(n, 4, "b_scale", {DType::F32});
  const Shape &a = n.inShape(0), &bsh = n.inShape(3);
  if (a.size() != 2 || bsh.size() != 2)
    n.error() << "A and B must be matrices (rank 2), got " << shapeToString(a) << " and "
              << shapeToString(bsh);
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  MatMulShape s = matmulShape(n, ta ? swapLastTwo(a) : a, tb ? swapLastTwo(bsh) : bsh);
  requireScalarParam(n, 1, "a_scale");
  requireScalarParam(n, 2, "a_zero_point");
  checkMatParam(n, 4, s, false);
  checkMatParam(n, 5, s, false);
  if (n.hasInput(6)) {
    requireInputType(n, 6, "C", {DType::I32});
    const Shape &cs = n.inShape(6);
    if (cs.size() > 2 || broadcastShapes(n, {cs, s.Out}) != s.Out)
      n.error() << "C of shape " << shapeToString(cs) << " does not broadcast to "
                << shapeToString(s.Out);
  }
  if (n.hasInput(8) && !n.hasInput(7))
    n.error() << "y_zero_point is given without y_scale";
  if (!n.hasInput(7)) {
    n.setOutput(0, DType::F32, s.Out);
    return;
  }
  requireInputType(n, 7, "y_scale", {DType::F32});
  requireScalarParam(n, 7, "y_scale");
  requireScalarParam(n, 8, "y_zero_point");
  if (n.hasInput(8))
    requireInputType(n, 8, "y_zero_point", {DType::I8, DType::U8});
  n.setOutput(0, n.hasInput(8) ? n.inDType(8) : DType::U8, s.Out);
}

void lowerQGemm(LowerCtx &c) {
  KernelBuilder &b = c.b();
  const ir::Node &n = c.node();
  TensorRef as = c.in(1), bs = c.in(4);
  bool quantized = c.hasIn(7);
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  Expr alpha = constant(DType::F32, n.attrFloat("alpha", 1.0));
  bool f32 = allConstant({&as, &bs}) && (!quantized || c.in(7).constant());
  DType out = n.Outputs[0]->Type.Type;
  // alpha * a_scale * b_scale (/ y_scale) per column j.
  auto multiplier = [&](const Expr &j) {
    Expr bsj = bs.numel() == 1 ? bs.loadFlat(indexConst(0)) : bs.loadFlat(j);
    Expr m = alpha * as.loadFlat(indexConst(0)) * bsj;
    return quantized ? m / c.in(7).loadFlat(indexConst(0)) : m;
  };
  std::optional<Local> mult;
  if (bs.numel() == 1 && n.Plan.FixedRequantInput < 0)
    mult = b.local("mult", multiplier(indexConst(0)));
  std::function<Expr(const Expr &, const Expr &)> bias;
  std::optional<TensorRef> cIn;
  if (c.hasIn(6)) {
    cIn = c.in(6);
    bias = [&](const Expr &i, const Expr &j) {
      const Shape &cs = cIn->shape();
      std::vector<Expr> idx;
      if (cs.size() == 2)
        idx.push_back(cs[0] == 1 ? indexConst(0) : i);
      if (!cs.empty())
        idx.push_back(cs.back() == 1 ? indexConst(0) : j);
      return cast(DType::I32, cIn->load(idx));
    };
  }
  // Products that provably stay small requantize in fixed point without
  // 64-bit shifts where the plan says (SmallFixedRequant; the same result,
  // see requantizeFixedSmall). The f32 path keeps its clamps (plan-kernels
  // gives a QGemm no IntSaturate): its short form (requantizeF32Small) cost
  // the Cortex-M4's fully connected tiles more in register moves than it
  // saved (autoencoder 0.579 M -> 0.584 M instructions).
  bool smallFixed = false;
  if (quantized && n.Plan.FixedRequantInput >= 0 && n.Plan.SmallFixedRequant)
    if (std::optional<std::vector<double>> bounds = accumulatorBounds(n, 3, 5, 6, tb))
      smallFixed = fixedRequantSmall(n, *bounds);
  lowerIntMatMul(
      c, 0, 3, 2, 5,
      [&](Expr acc, const std::vector<Expr> &, Expr, Expr j) {
        Expr zp = c.hasIn(8) ? c.in(8).loadFlat(indexConst(0)) : constantInt(out, 0);
        if (auto fixed = fixedRequant(c, j))
          return smallFixed ? requantizeFixedSmall(out, acc, fixed->first, fixed->second, zp)
                            : requantizeFixed(out, acc, fixed->first, fixed->second, zp);
        Expr m = mult ? mult->get() : multiplier(j);
        if (!quantized)
          return cast(DType::F32, acc) * m;
        return requantize(out, f32, acc, m, zp);
      },
      ta, tb, bias);
}


} // namespace

MLCC_OPS(IntegerMatMul) {
  R.add({.Name = "MatMulInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferMatMulInteger, .Lower = lowerMatMulInteger});
  R.add({.Name = "QLinearMatMul", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearMatMul, .Lower = lowerQLinearMatMul});
  R.add({.Domain = "com.microsoft", .Name = "QGemm", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferQGemm, .Lower = lowerQGemm});
}

} // namespace mlcc::ops
