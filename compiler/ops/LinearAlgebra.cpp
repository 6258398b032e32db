//===- LinearAlgebra.cpp - Det --------------------------------------------===//
//
// Det (opsets 11, 22): the determinant of each [M, M] matrix of a [*, M, M]
// input, by Gaussian elimination with partial pivoting in f64 (a scratch
// copy of one matrix at a time). A zero pivot column makes the determinant
// 0; the elimination is then skipped for that column, so no division by
// zero occurs. The determinant of a 0x0 matrix is 1.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

void inferDet(ir::Node &n) {
  requireFloat(n, 0);
  const Shape &x = n.inShape(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    n.error() << "input must have shape [*, M, M], got " << shapeToString(x);
  n.setOutput(0, n.inDType(0), Shape(x.begin(), x.end() - 2));
}

void lowerDet(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  int64_t M = x.shape().back();
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  if (numElements(batch) == 0)
    return;
  TensorRef a = c.scratch("lu", DType::F64, {std::max<int64_t>(M, 1),
                                             std::max<int64_t>(M, 1)});
  const DType F = DType::F64;
  b.loops(batch, [&](const std::vector<Expr> &bi) {
    auto at = [&](const Expr &i, const Expr &j) {
      std::vector<Expr> idx = bi;
      idx.push_back(i);
      idx.push_back(j);
      return idx;
    };
    b.loop("i", M, [&](Expr i) {
      b.loop("j", M, [&](Expr j) { a.store({i, j}, cast(F, x.load(at(i, j)))); });
    });
    Local det = b.local("det", constant(F, 1.0));
    b.loop("k", M, [&](Expr k) {
      // Pivot: the largest magnitude in column k at or below row k.
      Local piv = b.local("piv", k);
      Local best = b.local("best", abs(a.load({k, k})));
      b.loop("i", k + 1, indexConst(M), [&](Expr i) {
        Expr v = abs(a.load({i, k}));
        b.ifThen(gt(v, best.get()), [&] {
          b.set(piv, i);
          b.set(best, v);
        });
      });
      b.ifThen(ne(piv.get(), k), [&] {
        b.loop("j", M, [&](Expr j) {
          Local t = b.local("t", a.load({k, j}));
          a.store({k, j}, a.load({piv.get(), j}));
          a.store({piv.get(), j}, t.get());
        });
        b.set(det, -det.get());
      });
      Local pv = b.local("pivot", a.load({k, k}));
      b.set(det, det.get() * pv.get());
      b.ifThen(ne(pv.get(), 0.0), [&] {
        b.loop("i", k + 1, indexConst(M), [&](Expr i) {
          Local f = b.local("f", a.load({i, k}) / pv.get());
          b.loop("j", k, indexConst(M), [&](Expr j) {
            a.store({i, j}, a.load({i, j}) - f.get() * a.load({k, j}));
          });
        });
      });
    });
    y.store(bi, cast(y.computeType(), det.get()));
  }, "b");
}

} // namespace

MLCC_OPS(LinearAlgebra) {
  R.add({.Name = "Det", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferDet, .Lower = lowerDet});
}

} // namespace mlcc::ops
