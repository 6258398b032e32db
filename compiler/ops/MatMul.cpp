//===- MatMul.cpp - MatMul and Gemm ---------------------------------------===//
//
// MatMul follows numpy: 1-D operands are promoted (and the added axis
// removed from the result), batch dimensions broadcast. Gemm computes
// alpha * op(A) * op(B) + beta * C with C broadcast to [M, N].
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct MatMulShape {
  Shape A, B;       ///< operands promoted to rank >= 2
  Shape Batch;      ///< broadcast batch dims
  int64_t M, K, N;
  Shape Out;        ///< final output shape (promoted axes removed)
};

MatMulShape matmulShape(const ir::Node &n, const Shape &a0, const Shape &b0) {
  MatMulShape s;
  if (a0.empty() || b0.empty())
    n.error() << "MatMul operands must have rank 1 or more";
  s.A = a0.size() == 1 ? Shape{1, a0[0]} : a0;
  s.B = b0.size() == 1 ? Shape{b0[0], 1} : b0;
  s.M = s.A[s.A.size() - 2];
  s.K = s.A.back();
  s.N = s.B.back();
  if (s.B[s.B.size() - 2] != s.K)
    n.error() << "cannot multiply " << shapeToString(a0) << " by " << shapeToString(b0);
  Shape ab(s.A.begin(), s.A.end() - 2), bb(s.B.begin(), s.B.end() - 2);
  s.Batch = broadcastShapes(n, {ab, bb});
  s.Out = s.Batch;
  if (a0.size() > 1)
    s.Out.push_back(s.M);
  if (b0.size() > 1)
    s.Out.push_back(s.N);
  return s;
}

void inferMatMul(ir::Node &n) {
  requireNumeric(n, 0);
  requireSameDTypes(n);
  n.setOutput(0, n.inDType(0), matmulShape(n, n.inShape(0), n.inShape(1)).Out);
}

/// Index into an operand of promoted shape `shape` at batch position `bi`
/// (broadcast) and matrix position (r, c); `orig` is the operand's real rank.
std::vector<Expr> operandIndex(const Shape &shape, size_t origRank,
                               const std::vector<Expr> &bi, Expr r, Expr c,
                               bool isA) {
  std::vector<Expr> idx;
  size_t batchRank = shape.size() - 2, lead = bi.size() - batchRank;
  for (size_t d = 0; d < batchRank; ++d)
    idx.push_back(shape[d] == 1 ? indexConst(0) : bi[lead + d]);
  if (origRank == 1) { // the promoted axis is not in the buffer
    idx.push_back(isA ? c : r);
    return idx;
  }
  idx.push_back(r);
  idx.push_back(c);
  return idx;
}

void lowerMatMul(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef a = c.in(0), bt = c.in(1), y = c.out(0);
  MatMulShape s = matmulShape(n, a.shape(), bt.shape());
  KernelBuilder &b = c.b();
  DType acc = y.computeType();
  b.loops(s.Batch, [&](const std::vector<Expr> &bi) {
    b.loop("i", s.M, [&](Expr i) {
      b.loop("j", s.N, [&](Expr j) {
        Local sum = b.local("sum", constant(acc, 0));
        b.loop("k", s.K, [&](Expr k) {
          Expr av = a.load(operandIndex(s.A, a.rank(), bi, i, k, true));
          Expr bv = bt.load(operandIndex(s.B, bt.rank(), bi, k, j, false));
          b.set(sum, sum.get() + av * bv);
        });
        std::vector<Expr> yi = bi;
        if (a.rank() > 1)
          yi.push_back(i);
        if (bt.rank() > 1)
          yi.push_back(j);
        y.store(yi, sum.get());
      });
    });
  }, "b");
}

void inferGemm(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  const Shape &a = n.inShape(0), &b = n.inShape(1);
  if (a.size() != 2 || b.size() != 2)
    n.error() << "A and B must be matrices, got " << shapeToString(a) << " and "
              << shapeToString(b);
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1];
  int64_t K2 = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
  if (K != K2)
    n.error() << "inner dimensions differ: " << K << " and " << K2;
  if (n.hasInput(2)) {
    Shape bc = broadcastShapes(n, {n.inShape(2), {M, N}});
    if (bc != Shape{M, N})
      n.error() << "C of shape " << shapeToString(n.inShape(2))
                << " does not broadcast to [" << M << "," << N << "]";
  }
  n.setOutput(0, n.inDType(0), {M, N});
}

void lowerGemm(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef a = c.in(0), bm = c.in(1), y = c.out(0);
  std::optional<TensorRef> cm;
  if (c.hasIn(2))
    cm = c.in(2);
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
  int64_t M = y.shape()[0], N = y.shape()[1], K = ta ? a.shape()[0] : a.shape()[1];
  KernelBuilder &b = c.b();
  DType acc = y.computeType();
  b.loop("i", M, [&](Expr i) {
    b.loop("j", N, [&](Expr j) {
      Local sum = b.local("sum", constant(acc, 0));
      b.loop("k", K, [&](Expr k) {
        Expr av = ta ? a.load({k, i}) : a.load({i, k});
        Expr bv = tb ? bm.load({j, k}) : bm.load({k, j});
        b.set(sum, sum.get() + av * bv);
      });
      Expr r = sum.get() * alpha;
      if (cm && beta != 0.0)
        r = r + cm->loadBroadcast({i, j}) * beta;
      y.store({i, j}, r);
    });
  });
}

} // namespace

MLCC_OPS(MatMul) {
  R.add({.Name = "MatMul", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferMatMul, .Lower = lowerMatMul});
  R.add({.Name = "Gemm", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferGemm, .Lower = lowerGemm});
}

} // namespace mlcc::ops
