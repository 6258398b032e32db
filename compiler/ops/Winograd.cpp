//===- Winograd.cpp - Winograd transforms and mlcc.WinogradWeights --------===//
//
//   mlcc.WinogradWeights {tile=m}(W)
//     W: f32 [M, C, 3, 3]. Output [a*a, M, C] (a = m + 2): for each
//     position (p, q) of the a x a tile, the kernel transform G g G^T of
//     every (output channel, input channel) pair at [p * a + q, m, c],
//     computed in f64. pack-weights inserts it in front of a convolution
//     it runs as F(m x m, 3 x 3); infer-and-fold evaluates it, so the
//     library holds only the transformed weights.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Winograd.h"

#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

const WinogradTransform *winogradTransform(int64_t m) {
  // The interpolation points 0, 1, -1 (and the point at infinity).
  static const WinogradTransform f2{
      2, 4,
      {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}},
      {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
      {{1, 1, 1, 0}, {0, 1, -1, -1}}};
  return m == 2 ? &f2 : nullptr;
}

Expr linearCombination(const std::vector<double> &coef, const std::vector<Expr> &v) {
  Expr sum;
  for (size_t i = 0; i < coef.size(); ++i) {
    double c = coef[i];
    if (c == 0)
      continue;
    DType t = v[i]->Type;
    Expr term = std::fabs(c) == 1 ? v[i] : v[i] * constant(t, std::fabs(c));
    if (!sum)
      sum = c > 0 ? term : unary(UnOp::Neg, term);
    else
      sum = c > 0 ? sum + term : sum - term;
  }
  MLCC_CHECK(sum, "a transform row of zeros");
  return sum;
}

std::vector<std::vector<Expr>> transform2d(const std::vector<std::vector<double>> &T,
                                           const std::vector<std::vector<Expr>> &x) {
  size_t rows = T.size(), n = x.size();
  // Rows first: t[a][j] = sum_i T[a][i] x[i][j].
  std::vector<std::vector<Expr>> t(rows, std::vector<Expr>(n));
  for (size_t a = 0; a < rows; ++a)
    for (size_t j = 0; j < n; ++j) {
      std::vector<Expr> col;
      for (size_t i = 0; i < n; ++i)
        col.push_back(x[i][j]);
      t[a][j] = linearCombination(T[a], col);
    }
  std::vector<std::vector<Expr>> r(rows, std::vector<Expr>(rows));
  for (size_t a = 0; a < rows; ++a)
    for (size_t b = 0; b < rows; ++b)
      r[a][b] = linearCombination(T[b], t[a]);
  return r;
}

namespace {

const WinogradTransform &transformOf(const ir::Node &n) {
  const WinogradTransform *t = winogradTransform(n.attrInt("tile", 2));
  if (!t)
    n.error(ErrorKind::Internal) << "no Winograd transform for tile " << n.attrInt("tile", 2);
  return *t;
}

void inferWinogradWeights(ir::Node &n) {
  const WinogradTransform &t = transformOf(n);
  const Shape &w = n.inShape(0);
  if (!isF32Arithmetic(n.inDType(0)) || w.size() != 4 || w[2] != 3 || w[3] != 3)
    n.error(ErrorKind::Internal) << "WinogradWeights needs f32, f16 or bf16 weights [M, C, 3, 3]";
  // In f32 whatever the weights' type: the inverse transform multiplies
  // the products' errors (by up to a few tens for 6x6 tiles), which a
  // 16-bit U would bring to the output's own precision.
  n.setOutput(0, DType::F32, {t.Alpha * t.Alpha, w[0], w[1]});
}

void lowerWinogradWeights(LowerCtx &c) {
  const WinogradTransform &t = transformOf(c.node());
  TensorRef w = c.in(0), u = c.out(0);
  int64_t M = w.dim(0), C = w.dim(1), a = t.Alpha;
  KernelBuilder &b = c.b();
  b.loops({M, C}, [&](const std::vector<Expr> &i) {
    // G g G^T in f64: g's columns by G into a local (each intermediate
    // computed once, also when the interpreter folds this), then its rows.
    std::vector<Expr> g;
    for (int64_t k = 0; k < 9; ++k)
      g.push_back(cast(DType::F64, w.load({i[0], i[1], indexConst(k / 3), indexConst(k % 3)})));
    Local gg = b.local("gg", DType::F64, a * 3); // G g, a x 3
    for (int64_t p = 0; p < a; ++p)
      for (int64_t l = 0; l < 3; ++l)
        b.set(gg, indexConst(p * 3 + l), linearCombination(t.G[p], {g[l], g[3 + l], g[6 + l]}));
    for (int64_t p = 0; p < a; ++p) {
      std::vector<Expr> row;
      for (int64_t l = 0; l < 3; ++l)
        row.push_back(gg.get(indexConst(p * 3 + l)));
      for (int64_t q = 0; q < a; ++q)
        u.store({indexConst(p * a + q), i[0], i[1]}, cast(DType::F32, linearCombination(t.G[q], row)));
    }
  }, "i");
}

} // namespace

MLCC_OPS(Winograd) {
  R.add({.Domain = "mlcc", .Name = "WinogradWeights", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferWinogradWeights,
         .Lower = lowerWinogradWeights});
}

} // namespace mlcc::ops
