//===- TopK.cpp - TopK ----------------------------------------------------===//
//
// The k largest (or smallest, opset 11) elements along an axis and their
// int64 indices, always sorted; equal values are ordered by index. k comes
// from an attribute before opset 10 and from input 1 after; it determines
// the output shapes, so it must be a compile-time constant.
//
// Each output row is found by selection: the j-th element is the best one
// among those ordered after the (j-1)-th in the strict order (value, then
// index), which needs no scratch marks.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

int64_t topkAxis(const ir::Node &n) {
  return normalizeAxis(n, n.attrInt("axis", -1), (int64_t)n.inShape(0).size());
}

int64_t topkK(const ir::Node &n) {
  int64_t k;
  if (n.Opset < 10) {
    k = n.requireInt("k");
  } else {
    std::vector<int64_t> v = n.constInputInts(1, "k determines the output shapes");
    if (v.size() != 1)
      n.error() << "k must have one element";
    k = v[0];
  }
  int64_t dim = n.inShape(0)[(size_t)topkAxis(n)];
  if (k < 0 || k > dim)
    n.error() << "k = " << k << " is out of range for an axis of extent " << dim;
  return k;
}

void inferTopK(ir::Node &n) {
  requireNumeric(n, 0);
  if (n.inShape(0).empty())
    n.error() << "input must have rank 1 or more";
  int64_t axis = topkAxis(n);
  Shape out = n.inShape(0);
  out[(size_t)axis] = topkK(n);
  n.setOutput(0, n.inDType(0), out);
  n.setOutput(1, DType::I64, out);
}

void lowerTopK(LowerCtx &c) {
  const ir::Node &n = c.node();
  int64_t axis = topkAxis(n), k = topkK(n);
  bool largest = n.Opset < 11 || n.attrInt("largest", 1) != 0;
  TensorRef x = c.in(0);
  std::optional<TensorRef> vals, inds;
  if (c.hasOut(0))
    vals = c.out(0);
  if (c.hasOut(1))
    inds = c.out(1);
  KernelBuilder &b = c.b();
  Shape outer = x.shape();
  int64_t len = outer[(size_t)axis];
  outer.erase(outer.begin() + axis);
  DType ct = x.computeType();
  // (a, ia) comes before (b, ib) in the output order.
  auto before = [&](Expr a, Expr ia, Expr bv, Expr ib) {
    Expr strictly = largest ? gt(a, bv) : lt(a, bv);
    return lor(strictly, land(eq(a, bv), lt(ia, ib)));
  };
  b.loops(outer, [&](const std::vector<Expr> &o) {
    auto at = [&](Expr i) {
      std::vector<Expr> idx = o;
      idx.insert(idx.begin() + axis, i);
      return idx;
    };
    Local pv = b.local("prev", constant(ct, 0)), pi = b.local("previ", indexConst(-1));
    b.loop("j", k, [&](Expr j) {
      Local bv = b.local("best", constant(ct, 0));
      Local bi = b.local("besti", indexConst(-1));
      b.loop("i", len, [&](Expr i) {
        Expr v = x.load(at(i));
        Expr eligible = lor(lt(pi.get(), indexConst(0)),
                            before(pv.get(), pi.get(), v, i));
        Expr better = lor(lt(bi.get(), indexConst(0)),
                          before(v, i, bv.get(), bi.get()));
        b.ifThen(land(eligible, better), [&] {
          b.set(bv, v);
          b.set(bi, i);
        });
      });
      // Only NaNs can leave nothing selected; keep indices in range.
      Expr sel = max(bi.get(), indexConst(0));
      if (vals)
        vals->store(at(j), x.load(at(sel)));
      if (inds)
        inds->store(at(j), cast(DType::I64, sel));
      b.set(pv, x.load(at(sel)));
      b.set(pi, sel);
    });
  }, "o");
}

} // namespace

MLCC_OPS(TopK) {
  R.add({.Name = "TopK", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferTopK, .Lower = lowerTopK});
}

} // namespace mlcc::ops
