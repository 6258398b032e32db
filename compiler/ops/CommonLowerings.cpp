//===- CommonLowerings.cpp - Elementwise, reductions ----------------------===//
//
// The lowerings many ops share (Lowering.h): an elementwise loop nest over
// the broadcast inputs, a reduction over any axes (bounded extents counted at
// run time), and the registration of elementwise ops.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <functional>

namespace mlcc::ops {

using namespace kir;

void lowerElementwise(LowerCtx &c, const ScalarFn &fn) {
  std::vector<TensorRef> ins;
  for (size_t i = 0; i < c.node().Inputs.size(); ++i)
    if (c.hasIn(i))
      ins.push_back(c.in(i));
  TensorRef out = c.out(0);
  // Loop over the output flat when no input broadcasts (the common case),
  // otherwise over its full index space.
  bool flat = true;
  for (auto &t : ins)
    if (t.buffer() && (t.shape() != out.shape() || !t.numelAtRunTime()))
      flat = false;
  // Bounded axes: flat only over the leading elements in use.
  Expr count = out.numelAtRunTime();
  if (!count)
    flat = false;
  if (flat) {
    auto body = [&](Expr i) {
      std::vector<Expr> args;
      for (auto &t : ins)
        args.push_back(t.loadFlat(i));
      out.storeFlat(i, fn(args));
    };
    c.b().loopTo("i", count, body);
    return;
  }
  c.b().loops(out.extents(), [&](const std::vector<Expr> &idx) {
    std::vector<Expr> args;
    for (auto &t : ins)
      args.push_back(t.loadBroadcast(idx));
    out.store(idx, fn(args));
  });
}

void lowerMap(LowerCtx &c, const TensorRef &x, const TensorRef &y,
              const std::function<Expr(Expr)> &fn) {
  if (Expr count = x.numelAtRunTime() ? y.numelAtRunTime() : nullptr) {
    c.b().loopTo("i", count, [&](Expr i) { y.storeFlat(i, fn(x.loadFlat(i))); });
    return;
  }
  c.b().loops(y.extents(), [&](const std::vector<Expr> &idx) { y.store(idx, fn(x.load(idx))); });
}

Expr boundedExtent(const AxisExtent &a, const std::function<Expr(size_t)> &dim) {
  Expr e = indexConst(a.Offset);
  for (size_t k = 0; k < a.Coeffs.size(); ++k)
    if (a.Coeffs[k])
      e = e + dim(k) * a.Coeffs[k];
  return e;
}

Expr countAs(DType t, const Expr &count) {
  return count->isConst() ? kir::constant(t, (double)count->IntValue) : cast(t, count);
}

void lowerReduction(LowerCtx &c, const TensorRef &x, const TensorRef &y,
                    const std::vector<int64_t> &axes, const Reduction &r) {
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : axes)
    reduced[(size_t)a] = true;
  // The extents when the kernel runs (constants unless an axis follows a
  // bounded dimension).
  Expr count = indexConst(1);
  std::vector<Expr> outer, inner;
  for (size_t d = 0; d < x.rank(); ++d) {
    Expr e = x.extent((int64_t)d);
    (reduced[d] ? inner : outer).push_back(e);
    if (reduced[d])
      count = count * e;
  }
  KernelBuilder &b = c.b();
  b.loops(outer, [&](const std::vector<Expr> &o) {
    Local acc = b.local("acc", r.AccType);
    b.set(acc, r.Init);
    b.loops(inner, [&](const std::vector<Expr> &in) {
      std::vector<Expr> idx;
      size_t io = 0, ii = 0;
      for (size_t d = 0; d < x.rank(); ++d)
        idx.push_back(reduced[d] ? in[ii++] : o[io++]);
      Expr v = cast(r.AccType, x.load(idx));
      if (r.Map)
        v = r.Map(v);
      b.set(acc, r.Combine(acc.get(), v));
    }, "r");
    Expr result = r.Finish ? r.Finish(acc.get(), count) : acc.get();
    // Output index: outer indices, with 0 for kept reduced axes.
    std::vector<Expr> oidx;
    size_t io = 0;
    bool kept = y.rank() == x.rank();
    for (size_t d = 0; d < x.rank(); ++d) {
      if (!reduced[d])
        oidx.push_back(o[io++]);
      else if (kept)
        oidx.push_back(indexConst(0));
    }
    y.store(oidx, cast(y.computeType(), result));
  }, "o");
}

void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    NodeScalarFn fn, std::function<void(ir::Node &)> infer,
                    const std::string &domain) {
  OpSchema s;
  s.Domain = domain;
  s.Name = name;
  s.SinceVersion = since;
  s.Fusion = FusionClass::Elementwise;
  s.RunTimeExtents = true;
  s.DenseOperands = true;
  s.Infer = std::move(infer);
  s.Scalar = fn;
  s.Lower = [fn](LowerCtx &c) {
    const ir::Node &n = c.node();
    lowerElementwise(c, [&](const std::vector<Expr> &a) { return fn(n, a); });
  };
  R.add(std::move(s));
}

void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    ScalarFn fn, std::function<void(ir::Node &)> infer,
                    const std::string &domain) {
  addElementwise(
      R, name, since,
      NodeScalarFn([fn](const ir::Node &, const std::vector<Expr> &a) { return fn(a); }),
      std::move(infer), domain);
}

void addBinaryElementwise(OpRegistry &R, const std::string &name, int64_t since,
                          std::function<void(ir::Node &)> infer,
                          std::function<Expr(Expr, Expr)> fn) {
  addElementwise(
      R, name, since,
      ScalarFn([fn](const std::vector<Expr> &a) { return fn(a[0], a[1]); }),
      std::move(infer));
}

} // namespace mlcc::ops
