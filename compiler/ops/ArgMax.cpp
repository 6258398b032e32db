//===- ArgMax.cpp - ArgMax, ArgMin ----------------------------------------===//
//
// The int64 index of the largest (smallest) element along one axis; the
// first occurrence wins unless select_last_index (opset 12) is set. NaN
// counts as the extreme value, as in numpy.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t argAxis(const ir::Node &n) {
  return normalizeAxis(n, n.attrInt("axis", 0), (int64_t)n.inShape(0).size());
}

void inferArg(ir::Node &n) {
  requireNumeric(n, 0);
  if (n.inShape(0).empty())
    n.error() << "input must have rank 1 or more";
  int64_t axis = argAxis(n);
  if (n.inShape(0)[(size_t)axis] == 0)
    n.error() << "cannot reduce an empty axis";
  Shape out = n.inShape(0);
  if (n.attrInt("keepdims", 1))
    out[(size_t)axis] = 1;
  else
    out.erase(out.begin() + axis);
  n.setOutput(0, DType::I64, out);
}

void lowerArg(LowerCtx &c, bool isMax) {
  const ir::Node &n = c.node();
  int64_t axis = argAxis(n);
  bool last = n.Opset >= 12 && n.attrInt("select_last_index", 0) != 0;
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  Shape outer = x.shape();
  int64_t len = outer[(size_t)axis];
  outer.erase(outer.begin() + axis);
  bool keep = y.rank() == x.rank();
  bool fp = isFloat(x.computeType());
  b.loops(outer, [&](const std::vector<Expr> &o) {
    auto at = [&](Expr k) {
      std::vector<Expr> idx = o;
      idx.insert(idx.begin() + axis, k);
      return idx;
    };
    Local best = b.local("best", x.load(at(indexConst(0))));
    Local bi = b.local("bi", indexConst(0));
    b.loop("k", indexConst(1), indexConst(len), [&](Expr k) {
      Expr v = x.load(at(k));
      Expr cond = isMax ? (last ? ge(v, best.get()) : gt(v, best.get()))
                        : (last ? le(v, best.get()) : lt(v, best.get()));
      if (fp) {
        Expr vnan = unary(UnOp::IsNaN, v), bnan = unary(UnOp::IsNaN, best.get());
        // A NaN beats numbers; among NaNs the first (or last) wins.
        cond = last ? lor(vnan, land(lnot(bnan), cond))
                    : land(lnot(bnan), lor(vnan, cond));
      }
      b.ifThen(cond, [&] {
        b.set(best, v);
        b.set(bi, k);
      });
    });
    std::vector<Expr> oi = o;
    if (keep)
      oi.insert(oi.begin() + axis, indexConst(0));
    y.store(oi, cast(DType::I64, bi.get()));
  }, "o");
}

} // namespace

MLCC_OPS(ArgMax) {
  R.add({.Name = "ArgMax", .SinceVersion = 1, .Fusion = FusionClass::Reduction,
         .Infer = inferArg, .Lower = [](LowerCtx &c) { lowerArg(c, true); }});
  R.add({.Name = "ArgMin", .SinceVersion = 1, .Fusion = FusionClass::Reduction,
         .Infer = inferArg, .Lower = [](LowerCtx &c) { lowerArg(c, false); }});
}

} // namespace mlcc::ops
