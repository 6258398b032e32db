//===- MatMul.cpp - MatMul and Gemm ---------------------------------------===//
//
// MatMul follows numpy: 1-D operands are promoted (and the added axis
// removed from the result), batch dimensions broadcast. Gemm computes
// alpha * op(A) * op(B) + beta * C with C broadcast to [M, N].
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferMatMul(ir::Node &n) {
  requireNumeric(n, 0);
  requireSameDTypes(n, 2); // a packed B (input 2) may be f32 for 16-bit A
  n.setOutput(0, n.inDType(0), matmulShape(n, n.inShape(0), n.inShape(1)).Out);
}

void lowerMatMul(LowerCtx &c) {
  TensorRef a = c.in(0), y = c.out(0);
  MatMulShape s = matmulShape(c.node(), a.shape(), c.node().inShape(1));
  const bool bounded = a.bounded() || y.bounded();
  if (auto po = packedOperand(c.node())) { // B: a constant matrix
    TiledContraction t;
    t.Rows = a.numel() / s.K;
    if (bounded) {
      // The rows in use are A's and Y's leading elements.
      Expr ra = a.numelAtRunTime(s.K), ry = y.numelAtRunTime();
      if (!ra || !ry || a.boundedAxis(-1))
        c.node().error(ErrorKind::Unsupported)
            << "its rows follow a bounded dimension with other axes before it; a product "
               "with constant weights takes such rows only where they lead so far";
      t.RowsAt = ra;
    }
    t.Cols = s.N;
    t.Reduce = {s.K};
    t.Tile = po->Tile;
    t.Acc = y.computeType();
    t.PackedB = c.in(po->Input);
    t.Parallel = true;
    t.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
      return a.loadFlat(r * s.K + k[0]);
    };
    t.StageABytes = c.node().Plan.StagedABytes;
    t.Store = [&](const Expr &r, const Expr &col, const Expr &acc) {
      // The output index: the row's batch indices and row, then the column
      // (so that fused operands broadcast without dividing the offset).
      std::vector<Expr> idx(y.rank());
      Expr rest = r;
      for (size_t d = y.rank() - 1; d-- > 0;) {
        idx[d] = d == 0 ? rest : rest % y.shape()[d];
        rest = rest / y.shape()[d];
      }
      idx.back() = col;
      y.store(idx, acc);
    };
    lowerTiledContraction(c, t);
    return;
  }
  TensorRef bm = c.in(1);
  if (bounded || bm.bounded()) {
    std::vector<Expr> out = y.extents();
    s.BatchAt.assign(out.begin(), out.begin() + (long)s.Batch.size());
    if (s.RankA > 1)
      s.MAt = out[s.Batch.size()];
    if (s.RankB > 1)
      s.NAt = out.back();
    s.KAt = a.extent(-1);
  }
  MatMulSpec spec;
  spec.Acc = y.computeType();
  spec.LoadA = [&](const std::vector<Expr> &bi, const Expr &i, const Expr &k) {
    return a.load(matmulOperandIndex(s, true, bi, i, k));
  };
  spec.LoadB = [&](const std::vector<Expr> &bi, const Expr &k, const Expr &j) {
    return bm.load(matmulOperandIndex(s, false, bi, k, j));
  };
  lowerMatrixProduct(c, s, y, spec);
}

void inferGemm(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n, 3); // a packed B (input 3) may be f32 for 16-bit A
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
  TensorRef a = c.in(0), y = c.out(0);
  bool ta = n.attrInt("transA", 0), tb = n.attrInt("transB", 0);
  double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
  MatMulShape s;
  s.M = y.shape()[0];
  s.N = y.shape()[1];
  s.K = ta ? a.shape()[0] : a.shape()[1];
  s.A = {s.M, s.K};
  s.B = {s.K, s.N};
  s.Out = {s.M, s.N};
  s.RankA = s.RankB = 2;
  if (a.bounded() || y.bounded() || !n.Inputs[1]->Bounded.empty()) {
    s.MAt = y.extent(0);
    s.NAt = y.extent(1);
    s.KAt = a.extent(ta ? 0 : 1);
  }
  MatMulSpec spec;
  spec.Acc = y.computeType();
  spec.LoadA = [&](const std::vector<Expr> &, const Expr &i, const Expr &k) {
    return ta ? a.load({k, i}) : a.load({i, k});
  };
  std::optional<TensorRef> cm;
  if (c.hasIn(2) && beta != 0.0)
    cm = c.in(2);
  auto term = [&](const Expr &i, const Expr &j) {
    return cm->loadBroadcast({i, j}) * beta;
  };
  if (auto po = packedOperand(n)) { // B: a constant matrix
    TiledContraction t;
    t.Rows = s.M;
    t.Cols = s.N;
    t.Reduce = {s.K};
    t.Tile = po->Tile;
    t.Acc = y.computeType();
    t.PackedB = c.in(po->Input);
    t.Parallel = true;
    if (s.MAt)
      t.RowsAt = s.MAt;
    t.LoadA = [&](const Expr &i, const std::vector<Expr> &k) {
      return ta ? a.load({k[0], i}) : a.load({i, k[0]});
    };
    t.StageABytes = c.node().Plan.StagedABytes;
    t.Store = [&](const Expr &i, const Expr &j, const Expr &acc) {
      Expr v = alpha == 1.0 ? acc : acc * alpha;
      y.store({i, j}, cm ? v + term(i, j) : v);
    };
    lowerTiledContraction(c, t);
    return;
  }
  TensorRef bm = c.in(1);
  spec.LoadB = [&](const std::vector<Expr> &, const Expr &k, const Expr &j) {
    return tb ? bm.load({j, k}) : bm.load({k, j});
  };
  if (alpha == 1.0) { // start from beta * C: no finishing pass
    if (cm)
      spec.Init = [&](const std::vector<Expr> &, const Expr &i, const Expr &j) {
        return term(i, j);
      };
  } else {
    spec.Finish = [&](const Expr &acc, const std::vector<Expr> &, const Expr &i,
                      const Expr &j) { return cm ? acc * alpha + term(i, j) : acc * alpha; };
  }
  lowerMatrixProduct(c, s, y, spec);
}

} // namespace

MLCC_OPS(MatMul) {
  R.add({.Name = "MatMul", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferMatMul, .Lower = lowerMatMul, .RunTimeExtents = true});
  R.add({.Name = "Gemm", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferGemm, .Lower = lowerGemm, .RunTimeExtents = true});
}

} // namespace mlcc::ops
