//===- QLinear.cpp - MatMulInteger, ConvInteger, QLinearMatMul/Conv -------===//
//
// MatMulInteger and ConvInteger accumulate zero-point-corrected operands in
// int32; QLinearMatMul and QLinearConv requantize the accumulator:
//
//   y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zp)
//
// Integer kernels: the zero points never reach the innermost loop, which
// multiplies and adds the raw 8-bit values (widened to int32).
//  - Convolution: sum_k (x - xz)(w - wz) = sum_k x (w - wz) - xz sum_k (w - wz)
//    over the whole window, the padding included, whose x is xz. The weight
//    factor (w - wz) is formed where the weight is loaded (outside the loop
//    over output positions) and xz sum_k (w - wz), with the bias, is one
//    int32 initial value per output channel, computed once per call. When
//    xz may be nonzero and the window reaches into the padding, the input is
//    first copied into a scratch image bordered with xz, so that every
//    window is whole and the per-channel initial value exact at the borders.
//    Pointwise and 2-D convolutions run in register tiles of 4 output
//    channels x 16 output positions (int32 vectors that stay in registers
//    for the whole window sum; LLVM turns the widening multiply-adds into
//    vpmaddwd/vpdpwssd on x86); others, and images smaller than a tile, run
//    the shared row-at-a-time loop nest (compiler/ops/Contraction.h).
//  - Matrix product: sum_k (a - az)(b - bz) = sum_k (a - az) b - bz sum_k
//    (a - az): (a - az) is formed where A's element is loaded (outside the
//    loop over columns) and the row sums of (a - az) are computed once per
//    call when bz may be nonzero.
//
// Requantization: the multiplier is computed in the scales' precision (f16
// scales round after every operation, like the reference), once per output
// channel (convolution) or once per call (per-tensor matrix scales). With
// constant scales (what quantization tools emit) the product and the
// rounding are in f32 like ONNX Runtime's x86 kernels,
// round_half_even(f32(acc) * f32 multiplier); otherwise the product is in
// double like the ONNX reference. The f32 result is clamped, rounded and
// converted to int32 in vectors (requant::requantizeF32).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
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

/// The zero point at input `i`, unless it is omitted or a constant 0.
std::optional<TensorRef> zeroPoint(LowerCtx &c, size_t i) {
  if (!c.hasIn(i))
    return std::nullopt;
  TensorRef t = c.in(i);
  if (isZeroConstant(t))
    return std::nullopt;
  return t;
}

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
/// IR dot4), chosen by pack-weights (plan Dot4Lanes = the vector
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
  const int64_t L = (node.Plan.Dot4Lanes ? node.Plan.Dot4Lanes : 16);
  size_t packedIdx = (size_t)std::max<int64_t>(node.Plan.Dot4Input, 0);
  if (!node.Plan.Dot4Lanes || !c.hasIn(packedIdx) || s.RankB != 2 || transA ||
      s.N < L || s.M <= 0 || biasPerRow || (azp && azp->numel() != 1))
    return false;
  KernelBuilder &b = c.b();
  TensorRef bq = c.in(packedIdx), colsum = c.in(packedIdx + 1), y = c.out(0);
  const DType acc = DType::I32;
  const bool signedA = a.dtype() == DType::I8;
  const int64_t K = s.K, Kq = (K + 3) / 4, M = s.M, N = s.N;
  Expr az = azp ? cast(acc, azp->loadFlat(indexConst(0))) : constantInt(acc, 0);
  if (signedA)
    az = az + constantInt(acc, 128);
  // Each column's initial value.
  TensorRef colinit = c.scratch("colinit", acc, {N});
  b.loop("j", N, [&](Expr j) {
    Expr v = constantInt(acc, 0) - az * colsum.load({j});
    colinit.storeFlat(j, bias ? bias(indexConst(0), j) + v : v);
  });
  const int64_t NV = N >= 4 * L ? 4 : N >= 2 * L ? 2 : 1, P = NV * L;
  const int64_t RW = std::min<int64_t>(4, M), rowTiles = (M + RW - 1) / RW, colTiles = (N + P - 1) / P;
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
          Expr quad = constantInt(acc, 0);
          for (int64_t j = 0; j < 4; ++j) {
            Expr k = min(kq * 4 + j, indexConst(K - 1));
            Expr byte = cast(acc, a.load(matmulOperandIndex(s, true, bi, r0 + r, k)));
            if (signedA)
              byte = byte + constantInt(acc, 128);
            quad = binary(BinOp::BitOr, quad, binary(BinOp::Shl, byte, constantInt(acc, 8 * j)));
          }
          Expr aq = broadcast(quad, (int)L);
          for (int64_t v = 0; v < NV; ++v)
            b.store(t.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L) + binary(BinOp::Dot4, aq, bv[v]));
        }
      });
      Local done = b.local("done", acc, RW * P);
      for (int64_t r = 0; r < RW; ++r)
        for (int64_t v = 0; v < NV; ++v)
          b.store(done.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L));
      for (int64_t r = 0; r < RW; ++r)
        b.loop("j", P, [&](Expr j) {
          Expr v = done.get(at(r, 0) + j);
          std::vector<Expr> idx = bi;
          if (s.RankA > 1)
            idx.push_back(r0 + r);
          idx.push_back(j0 + j);
          y.store(idx, finish ? finish(v, bi, r0 + r, j0 + j) : v);
        });
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
  TensorRef a = c.in(aIdx), bm = c.in(bIdx), y = c.out(0);
  std::optional<TensorRef> azp = zeroPoint(c, azpIdx), bzp = zeroPoint(c, bzpIdx);
  MatMulShape s = matmulShape(c.node(), transA ? swapLastTwo(a.shape()) : a.shape(),
                              transB ? swapLastTwo(bm.shape()) : bm.shape());
  const DType acc = DType::I32;
  bool biasPerRow = c.node().OpType == "QGemm" && c.hasIn(6) && c.in(6).rank() == 2 &&
                    c.in(6).shape()[0] != 1;
  if (lowerIntDotMatMul(c, s, a, azp, transA, finish, bias, biasPerRow))
    return;
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
    return cast(acc, bm.load(operandIndex(s, false, transB, bi, k, j)));
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

/// QLinearMatMul and QLinearConv share their operand layout: (a, a_scale,
/// a_zp, b, b_scale, b_zp, y_scale, y_zp, ...) with 8-bit data, zero points
/// of their data's type and scales of one float type.
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

/// Requantizes an int32 accumulator by `mult` (f32) to `out` with zero
/// point `zp`: in f32 like ONNX Runtime when `f32`, else in double like the
/// ONNX reference. The result is an int32 in `out`'s range (the double one
/// is converted through f32, where it is exact: vector conversions that do
/// not narrow the element width, which every target has).
Expr requantize(DType out, bool f32, const Expr &acc, const Expr &mult, const Expr &zp) {
  if (f32)
    return requantizeF32(out, acc, mult, zp);
  Expr v = saturateRound(out, cast(DType::F64, acc) * cast(DType::F64, mult),
                         cast(DType::F64, zp));
  return cast(DType::I32, cast(DType::F32, v));
}

/// The fixed-point multiplier and shift of output channel (column) `m`
/// when pack-weights chose integer-only requantization, else nullopt.
std::optional<std::pair<Expr, Expr>> fixedRequant(LowerCtx &c, const Expr &m) {
  if (!(c.node().Plan.FixedRequantInput >= 0))
    return std::nullopt;
  size_t at = (size_t)c.node().Plan.FixedRequantInput;
  TensorRef mult = c.in(at), shift = c.in(at + 1);
  Expr i = mult.numel() == 1 ? indexConst(0) : m;
  return std::make_pair(mult.loadFlat(i), shift.loadFlat(i));
}

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
  lowerIntMatMul(
      c, 0, 3, 2, 5,
      [&](Expr acc, const std::vector<Expr> &, Expr, Expr j) {
        Expr zp = c.hasIn(8) ? c.in(8).loadFlat(indexConst(0)) : constantInt(out, 0);
        if (auto fixed = fixedRequant(c, j))
          return requantizeFixed(out, acc, fixed->first, fixed->second, zp);
        Expr m = mult ? mult->get() : multiplier(j);
        if (!quantized)
          return cast(DType::F32, acc) * m;
        return requantize(out, f32, acc, m, zp);
      },
      ta, tb, bias);
}

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

/// The register tile of a pointwise integer convolution: output channels
/// by pixels, one int32 vector of kTilePixels lanes per channel (one
/// AVX-512 register, two AVX2 or four NEON ones; a target without vectors
/// runs the lanes as scalars).
constexpr int64_t kTileChannels = 4, kTilePixels = 16;

/// Whether lowerIntPointwise handles a convolution: every kernel extent and
/// stride 1, no padding, at least a vector of pixels per image, and an
/// input in a buffer.
bool isIntPointwise(const ConvShape &s, const TensorRef &x) {
  if (!x.buffer() || numElements(s.W.Out) < kTilePixels || s.W.Out != s.InSpatial)
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
                       const TensorRef &y, const std::function<Expr(Expr, Expr)> &finish) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const int L = (int)kTilePixels;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group, hw = numElements(s.W.Out);
  int64_t rows = std::min(kTileChannels, mg);
  int64_t rowTiles = (mg + rows - 1) / rows, colTiles = (hw + L - 1) / L;
  auto at = [&](int64_t r) { return indexConst(r * L); };
  b.loop("n", s.N, [&](Expr n) {
    b.loop("g", s.Group, [&](Expr g) {
      b.loop("rt", rowTiles, [&](Expr rt) {
        Expr m0 = g * mg + min(rt * rows, indexConst(mg - rows));
        b.loop("pt", colTiles, [&](Expr pt) {
          Expr p0 = min(pt * L, indexConst(hw - L));
          Local tile = b.local("acc", acc, rows * L);
          for (int64_t r = 0; r < rows; ++r)
            b.store(tile.Buf, at(r), broadcast(init ? init(m0 + r) : constantInt(acc, 0), L));
          b.loop("k", cg, [&](Expr k) {
            Expr xv = cast(acc, vload(x.buffer(), ((n * s.C) + g * cg + k) * hw + p0, L));
            for (int64_t r = 0; r < rows; ++r) {
              Expr a = cast(acc, w.loadFlat((m0 + r) * cg + k)) - wz(m0 + r);
              b.store(tile.Buf, at(r), vload(tile.Buf, at(r), L) + a * xv);
            }
          });
          // Spill the tile (constant offsets keep it in registers above),
          // then finish and store each element.
          Local sums = b.local("sums", acc, rows * L);
          for (int64_t r = 0; r < rows; ++r)
            b.store(sums.Buf, at(r), vload(tile.Buf, at(r), L));
          for (int64_t r = 0; r < rows; ++r) {
            Expr base = ((n * s.M) + m0 + r) * hw + p0;
            b.loop("j", L, [&](Expr j) {
              Expr v = sums.get(at(r) + j);
              y.storeFlat(base + j, finish ? finish(v, m0 + r) : v);
            });
          }
        });
      }, LoopKind::Parallel);
    });
  });
}

/// Whether lowerIntWindow handles a 2-D convolution over an image of padded
/// extents Hp x Wp (see there).
bool isIntWindow(const ConvShape &s, int64_t Wp) {
  if (s.W.rank() != 2 || numElements(s.W.Out) == 0)
    return false;
  int64_t sh = s.W.Strides[0], sw = s.W.Strides[1];
  if (s.W.Out[1] >= kTilePixels)
    return true;
  return (sh * Wp) % sw == 0 && (s.W.Out[0] - 1) * (sh * Wp / sw) + s.W.Out[1] >= kTilePixels;
}

/// A 2-D convolution over `src` ([N, C, Hp, Wp], every window inside it) in
/// register tiles of output channels x kTilePixels output positions, whose
/// int32 accumulators stay in registers for the whole window sum; each step
/// of the sum multiplies one (strided) vector of input bytes by one weight
/// per channel. The positions of a tile are consecutive outputs of one row
/// when a row holds a vector (edge tiles shifted back to overlap); else
/// consecutive positions q = oy * V + ox of a row-major grid V = Wp * sh / sw
/// wide, wider than the output rows, so that input offsets stay affine in q
/// (sw * q, plus the tap's offset): the positions with ox >= the output
/// width are computed on other rows' inputs and not stored.
void lowerIntWindow(LowerCtx &c, const ConvShape &s, const kir::Buffer &src,
                    int64_t Hp, int64_t Wp, const TensorRef &w,
                    const std::function<Expr(const Expr &)> &wz,
                    const std::function<Expr(const Expr &)> &init, const TensorRef &y,
                    const std::function<Expr(Expr, Expr)> &finish, bool tapDot = false) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const int L = (int)kTilePixels;
  const Window &win = s.W;
  int64_t cg = s.C / s.Group, mg = s.M / s.Group, oh = win.Out[0], ow = win.Out[1];
  int64_t sh = win.Strides[0], sw = win.Strides[1];
  int64_t rows = std::min(kTileChannels, mg), rowTiles = (mg + rows - 1) / rows;
  bool rowMode = ow >= L;
  int64_t V = rowMode ? 0 : sh * Wp / sw, Q = rowMode ? 0 : (oh - 1) * V + ow;
  auto at = [&](int64_t r) { return indexConst(r * L); };
  auto fin = [&](const Expr &v, const Expr &m) { return finish ? finish(v, m) : v; };
  // One tile: the finished sums of channels m0.. for the L positions whose
  // first window tap is at xoff0 + sw * j in each input plane, passed to
  // store(m, j, value) (an int32 in the output's range).
  auto tile = [&](const Expr &n, const Expr &g, const Expr &m0, const Expr &xoff0,
                  const std::function<void(const Expr &m, const Expr &j, const Expr &v)> &store) {
    Local t = b.local("acc", acc, rows * L);
    for (int64_t r = 0; r < rows; ++r)
      b.store(t.Buf, at(r), broadcast(init ? init(m0 + r) : constantInt(acc, 0), L));
    b.loop("ic", cg, [&](Expr ic) {
      Expr plane = (n * s.C + g * cg + ic) * (Hp * Wp) + xoff0;
      b.loop("kh", win.Kernel[0], [&](Expr kh) {
        b.loop("kw", win.Kernel[1], [&](Expr kw) {
          Expr xv = cast(acc, vload(src, plane + kh * (win.Dilations[0] * Wp) + kw * win.Dilations[1],
                                    L, sw));
          for (int64_t r = 0; r < rows; ++r) {
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
    for (int64_t r = 0; r < rows; ++r)
      b.loop("j", L, [&](Expr j) { store(m0 + r, j, done.get(at(r) + j)); });
  };
  // Parallel over channel tiles, or over groups when a group has one tile
  // (depthwise).
  bool groupsParallel = rowTiles == 1 && s.Group > 1;
  b.loop("n", s.N, [&](Expr n) {
    b.loop("g", s.Group, [&](Expr g) {
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

/// [lo, hi) of i in [0, n) with lo <= a * i + o < lim (a > 0): the
/// outputs whose input a * i + o lies inside an image of lim.
std::pair<int64_t, int64_t> insideRange(int64_t n, int64_t a, int64_t o, int64_t lim) {
  int64_t lo = o >= 0 ? 0 : (-o + a - 1) / a;
  int64_t hi = lim - o <= 0 ? 0 : (lim - o - 1) / a + 1;
  lo = std::min(lo, n);
  return {lo, std::max(lo, std::min(hi, n))};
}

/// The register tile of the dot-product convolutions: R output channels (1
/// for depthwise) x NV vectors of `lanes` outputs, for M channels, Q
/// outputs per channel and `steps` reduction steps (quads x taps); the
/// outputs past the last whole tile run in one tail tile of as few vectors
/// as cover them (tailVectors). Estimated cycles per tile step: the dot
/// products (two per cycle) plus a quarter cycle per load (NV vectors and R
/// broadcasts: loads issue beside the dot products, but not for free), or
/// the dot product's latency (one per accumulator per step), whichever is
/// more; plus the epilogue per tile; times the tiles, edge tiles computed
/// whole. (A stand-alone probe of the tile loop over packed panels on Ice
/// Lake: 6 x 4 tiles reach about 93% of the dot-product peak, 4 x 4 about
/// 90%, 8 x 2 about 83%, which the quarter cycle per load reproduces.)
struct DotTile {
  int64_t R = 1, NV = 1;
};

/// The largest panel that a dense dot-product convolution packs on the
/// stack of the thread that runs an output tile (a step's vectors for
/// every reduction step; see lowerIntDotConv).
constexpr int64_t kMaxPanelBytes = 256 * 1024;

/// The parallel groups of row tiles that the tail tile of a dense
/// dot-product convolution runs in (each group packs its own panel).
constexpr int64_t kTailGroups = 8;

int64_t tailVectors(int64_t Q, int64_t P, int64_t lanes) {
  return (Q % P + lanes - 1) / lanes;
}

DotTile chooseDotTile(int64_t M, int64_t Q, int64_t steps, int64_t lanes, int64_t maxNV = 4) {
  auto tileCost = [&](int64_t r, int64_t nv) {
    double step = std::max((double)(r * nv) / 2 + (double)(r + nv) * 0.25, 5.0);
    return (double)steps * step + 3.0 * (double)(r * nv);
  };
  DotTile best;
  double bestCost = -1;
  for (int64_t nv = 1; nv <= maxNV && nv * lanes <= Q; ++nv)
    for (int64_t r = 1; r <= std::min<int64_t>(M, 24) && r * nv <= 24; ++r) {
      int64_t tail = tailVectors(Q, nv * lanes, lanes);
      double perRows = (double)(Q / (nv * lanes)) * tileCost(r, nv) + (tail ? tileCost(r, tail) : 0);
      double cost = (double)((M + r - 1) / r) * perRows;
      if (bestCost < 0 || cost < bestCost)
        bestCost = cost, best = {r, nv};
    }
  return best;
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

/// Whether lowerIntTapQuads computes convolution `s`: 2-D, depthwise (one
/// input and one output channel per group) and at least a vector of
/// outputs per channel.
bool tapQuadsFit(const ConvShape &s) {
  return s.W.rank() == 2 && s.Group == s.C && s.M == s.C && s.N > 0 &&
         numElements(s.W.Out) >= kTilePixels;
}

/// A 2-D depthwise convolution of uint8 data x by int8 weights (zero point
/// 0) on the int8 dot product. Per channel (the parallel loop), x is first
/// rewritten as tap quads: T[u, py, i, ox] holds, as the four bytes of an
/// int32, the inputs that taps 4u..4u+3 of one kernel row multiply for
/// output column ox on padded input row iy = sh * i + py,
///   T[u, py, i, ox] = sum_t xp[iy, sw * ox + (4u + t) dw] << 8t  (t < KW),
/// xp being x bordered by the padding, whose bytes are the zero point `xz`
/// (the rows and columns that reach it are split off at compile time, so
/// the interior is read in whole vectors), so that one dot4 with the quad
/// of those taps' weights does four of a row's multiply-adds. The rows are split by phase py = iy % sh, which
/// makes the input of output q = oy * ow + ox for kernel row kh the affine
///   T[u, (kh dh) % sh, oy + (kh dh) / sh, ox] = plane + q + (kh dh / sh) ow,
/// so that tiles of consecutive outputs of the dense output (any width, no
/// grid columns to skip) read whole vectors and store whole vectors. Tiles
/// of NV vectors of outputs (chooseDotTile with one row) keep their int32
/// sums in registers; the outputs past the last whole tile run in one
/// narrower tail tile.
void lowerIntTapQuads(LowerCtx &c, const ConvShape &s, const TensorRef &x, const Expr &xz,
                      const TensorRef &w, const std::function<Expr(const Expr &)> &init,
                      const TensorRef &y, const std::function<Expr(Expr, Expr)> &finish) {
  KernelBuilder &b = c.b();
  const DType acc = DType::I32;
  const int64_t L = kTilePixels;
  const Window &win = s.W;
  const int64_t C = s.C, KH = win.Kernel[0], KW = win.Kernel[1], oh = win.Out[0],
                ow = win.Out[1], sh = win.Strides[0], sw = win.Strides[1],
                dh = win.Dilations[0], dw = win.Dilations[1];
  const int64_t H = s.InSpatial[0], W = s.InSpatial[1], top = win.PadBegin[0],
                left = win.PadBegin[1];
  const int64_t U = (KW + 3) / 4, Hq = oh + (KH - 1) * dh / sh, Q = oh * ow;
  const int64_t NV = chooseDotTile(1, Q, KH * U, L).NV, P = NV * L, wholeTiles = Q / P,
                tail = tailVectors(Q, P, L);
  TensorRef T = c.scratch("tapquads", acc, {C, U, sh, Hq, ow});
  auto fin = [&](const Expr &v, const Expr &m) { return finish ? finish(v, m) : v; };
  const Expr zq = xz * constantInt(acc, 0x01010101);
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
                return byteQuad(bytes);
              });
      }
      // The weight quads of the channel's kernel rows.
      Local wq = b.local("wquads", acc, KH * U);
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t u = 0; u < U; ++u) {
          std::vector<Expr> bytes;
          for (int64_t t = 0; t < std::min<int64_t>(4, KW - 4 * u); ++t)
            bytes.push_back(cast(acc, cast(DType::U8, w.load({ch, indexConst(0), indexConst(kh),
                                                              indexConst(4 * u + t)}))));
          b.set(wq, indexConst(kh * U + u), byteQuad(bytes));
        }
      Expr first = init ? init(ch) : constantInt(acc, 0);
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
                          binary(BinOp::Dot4, vload(T.buffer(), plane + q0 + v * L, (int)L), wv));
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

/// Stores `value` into the border of `planes` planes of Hp x Wp elements
/// (flat in `buf`) around an image of H x W whose first element is at
/// (top, left): the rows above and below, and the columns left and right of
/// each image row. The image itself is written by the caller.
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

/// Whether lowerIntDotConv handles convolution `s` with vectors of `lanes`:
/// 2-D, one group, a vector of outputs per channel, and a stack panel (a
/// convolution that is not pointwise and whose output tiles run outside)
/// of one vector per step within kMaxPanelBytes.
bool dotConvFits(const ConvShape &s, int64_t lanes) {
  if (s.W.rank() != 2 || s.Group != 1 || s.M <= 0 || s.N <= 0 || numElements(s.W.Out) < lanes)
    return false;
  return numElements(s.W.Kernel) == 1 || dotConvRowsOuter(s) ||
         dotConvSteps(s) * lanes * 4 <= kMaxPanelBytes;
}

/// A 2-D convolution on the int8 dot product (kernel IR dot4, x86 VNNI
/// vpdpbusd: 4 bytes x 4 bytes summed into each int32 lane), chosen by
/// pack-weights (plan Dot4Lanes = the vector lanes) for int8 weights
/// with a zero point of 0 and one group. The weights come packed as int32
/// quads of four consecutive input channels (mlcc.PackQuads, input
/// `packed`: [M, C/4, KH, KW]), with their per-channel sums (input
/// `packed` + 1), both computed at compile time.
///
/// The input is rewritten once per call as an int32 image of channel quads,
/// one copy per kernel column kw and row phase py = iy % sh:
///   X[n, c/4, kw, py, i, ox] = the bytes of channels 4(c/4)..+3 at input
///   row sh * i + py - pad_top, column sw * ox + kw dw - pad_left,
/// as unsigned values (int8 data offset by 128, and its zero point too, so
/// that vpdpbusd's unsigned x signed product applies); the padding and the
/// channels past C hold the zero point. The input of output q = oy * ow + ox
/// for tap (kh, kw) is then
///   X[n, c/4, kw, (kh dh) % sh, oy + (kh dh) / sh, ox] = plane + q,
/// affine in q over the whole dense output: register tiles of R output
/// channels x NV vectors of consecutive outputs (rows of any width, any
/// stride) load whole vectors of quads, broadcast one weight quad per
/// channel and store whole vectors, with
///   sum_k (x - x_zp) w = sum over quads dot4(X, w4) - x_zp' sum_k w,
/// the second term (with the bias) the accumulators' initial value. R and
/// NV come from chooseDotTile; the last row tile is shifted back to
/// overlap, and the outputs past the last whole tile run in one narrower
/// tail tile ending at the last output. The quads of an output tile are
/// first packed into a panel, each step's NV vectors contiguous, so that
/// the tile loop reads one aligned sequential stream (the images' rows
/// are scattered over the kernel columns and quads, and misaligned): on
/// the 3x3 convolutions of resnet18's second stage this lifts the tiles
/// from about 64% of the dot-product peak to about 81%. A pointwise
/// convolution reads its quad image directly (see `direct`).
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
  const int64_t L = (node.Plan.Dot4Lanes ? node.Plan.Dot4Lanes : 16);
  const bool signedX = x.dtype() == DType::I8;
  const Window &win = s.W;
  const int64_t H = s.InSpatial[0], W = s.InSpatial[1], C = s.C, Cq = (C + 3) / 4;
  const int64_t KH = win.Kernel[0], KW = win.Kernel[1], oh = win.Out[0], ow = win.Out[1];
  const int64_t sh = win.Strides[0], sw = win.Strides[1], dh = win.Dilations[0],
                dw = win.Dilations[1], top = win.PadBegin[0], left = win.PadBegin[1];
  const int64_t Hq = dotConvQuadRows(s), Q = oh * ow;

  // The zero point in the unsigned domain, as a byte and as a quad.
  Expr xz = xzp ? cast(acc, xzp->loadFlat(indexConst(0))) : constantInt(acc, 0);
  if (signedX)
    xz = xz + constantInt(acc, 128);
  Local zq = b.local("zquad", xz * constantInt(acc, 0x01010101));

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
  auto quad = [&](const Expr &n, const Expr &cq, const Expr &iy, const Expr &ix) {
    std::vector<Expr> bytes;
    for (int64_t j = 0; j < 4; ++j) {
      Expr ch = cq * 4 + j;
      Expr byte = cast(acc, x.load({n, min(ch, indexConst(C - 1)), iy, ix}));
      if (signedX)
        byte = byte + constantInt(acc, 128);
      bytes.push_back(C % 4 != 0 ? select(lt(ch, indexConst(C)), byte, xz) : byte);
    }
    return byteQuad(bytes);
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
  const int64_t steps = dotConvSteps(s);
  const auto [R, NV] = chooseDotTile(s.M, Q, steps, L,
                                     direct || rowsOuter ? 4 : kMaxPanelBytes / (steps * L * 4));
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
      std::vector<Expr> xv;
      for (int64_t v = 0; v < nv; ++v)
        xv.push_back(vload(x.Buf, x.Base + st * x.StepStride + v * L, (int)L));
      for (int64_t r = 0; r < R; ++r) {
        Expr wq = broadcast(w4.loadFlat((m0 + r) * steps + st), (int)L);
        for (int64_t v = 0; v < nv; ++v)
          b.store(t.Buf, at(r, v), vload(t.Buf, at(r, v), (int)L) + binary(BinOp::Dot4, xv[v], wq));
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
      const int64_t per = (rowTiles + kTailGroups - 1) / kTailGroups,
                    groups = (rowTiles + per - 1) / per;
      b.loop("g", groups, [&](Expr g) {
        sweep(indexConst(tailStart), tail, g * per, min(g * per + per, indexConst(rowTiles)));
      }, LoopKind::Parallel);
    }
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
  // The int8 dot-product path, when pack-weights chose it and the image
  // fills a vector.
  size_t packedIdx = (size_t)std::max<int64_t>(c.node().Plan.Dot4Input, 0);
  if (c.node().Plan.Dot4Lanes && c.hasIn(packedIdx) &&
      dotConvFits(s, (c.node().Plan.Dot4Lanes ? c.node().Plan.Dot4Lanes : 16))) {
    lowerIntDotConv(c, xIdx, xzpIdx, wIdx, biasIdx, packedIdx, finish);
    return;
  }
  TensorRef x = c.in(xIdx), w = c.in(wIdx), y = c.out(0);
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
    int64_t perChannel = w.numel() / s.M;
    Expr xz = cast(acc, xzp->loadFlat(indexConst(0)));
    init = c.scratch("chinit", acc, {s.M});
    b.loop("m", s.M, [&](Expr m) {
      Local sum = b.local("wsum", constantInt(acc, 0));
      b.loop("k", perChannel, [&](Expr k) {
        b.set(sum, sum.get() + cast(acc, w.loadFlat(m * perChannel + k)));
      });
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
  if (isIntPointwise(s, x)) {
    lowerIntPointwise(c, s, x, w, wz, first, y, finish);
    return;
  }
  // Taps on dot4 (pack-weights' plan: Dot4Taps): uint8 data, int8 weights
  // with a zero point of 0.
  const bool tapDot = c.node().Plan.Dot4Taps && !wzp &&
                      x.dtype() == DType::U8 && w.dtype() == DType::I8;
  if (tapDot && tapQuadsFit(s)) {
    // Reads x directly: its tap-quad images hold x_zp in the padding.
    Expr xz = xzp ? cast(acc, xzp->loadFlat(indexConst(0))) : constantInt(acc, 0);
    lowerIntTapQuads(c, s, x, xz, w, first, y, finish);
    return;
  }
  // The register-tiled path reads whole windows: it needs the bordered
  // copy whenever a window reaches outside x (bordered with 0 without x_zp).
  bool window = isIntWindow(s, outside ? padded.back() : s.InSpatial.back()) &&
                (outside || x.buffer());
  if ((xzp || window) && outside && numElements(s.W.Out) > 0) {
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
  if (window) {
    lowerIntWindow(c, s, src.buffer(), geo.InSpatial[0], geo.InSpatial[1], w, wz, first, y,
                   finish, tapDot);
    return;
  }

  ConvSpec spec;
  spec.Acc = acc;
  spec.LoadX = [&](const std::vector<Expr> &i) { return cast(acc, src.load(i)); };
  spec.LoadW = [&](const std::vector<Expr> &i) {
    Expr v = cast(acc, w.load(i));
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
    lowerIntConv(c, 0, 2, 3, 5, 8, [&](Expr acc, Expr m) {
      auto [m0, s] = *fixedRequant(c, m);
      return requantizeFixed(out, acc, m0, s, yzp.loadFlat(indexConst(0)));
    });
    return;
  }
  TensorRef xs = c.in(1), ws = c.in(4), ys = c.in(6), yzp = c.in(7);
  DType st = c.node().inDType(1);
  DType out = c.node().inDType(7);
  bool f32 = allConstant({&xs, &ws, &ys});
  // One multiplier per output channel, computed once per call.
  int64_t channels = c.node().inShape(3)[0];
  TensorRef mult = c.scratch("mult", DType::F32, {channels});
  b.loop("m", channels, [&](Expr m) {
    mult.storeFlat(m, requantMultiplierF32(st, xs.loadFlat(indexConst(0)),
                                           loadChannelParam(ws, m),
                                           ys.loadFlat(indexConst(0))));
  });
  lowerIntConv(c, 0, 2, 3, 5, 8, [&](Expr acc, Expr m) {
    return requantize(out, f32, acc, mult.load({m}), yzp.loadFlat(indexConst(0)));
  });
}

} // namespace

MLCC_OPS(QLinear) {
  R.add({.Name = "MatMulInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferMatMulInteger, .Lower = lowerMatMulInteger});
  R.add({.Name = "QLinearMatMul", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearMatMul, .Lower = lowerQLinearMatMul});
  R.add({.Domain = "com.microsoft", .Name = "QGemm", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferQGemm, .Lower = lowerQGemm});
  R.add({.Name = "ConvInteger", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferConvInteger, .Lower = lowerConvInteger});
  R.add({.Name = "QLinearConv", .SinceVersion = 10, .Fusion = FusionClass::Opaque,
         .Infer = inferQLinearConv, .Lower = lowerQLinearConv});
}

} // namespace mlcc::ops
