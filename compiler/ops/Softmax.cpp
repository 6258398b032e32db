//===- Softmax.cpp - Softmax, LogSoftmax, Hardmax -------------------------===//
//
// Before opset 13 the input is coerced to a matrix [prod(d0..d(axis-1)),
// prod(d(axis)..)] (default axis 1) and the op works on its rows; from 13
// on it works along one axis (default -1). Both forms are "rows of `Extent`
// elements, `Inner` apart": the old one has Inner = 1 and Extent = the
// product of the trailing dimensions.
//
// Softmax and LogSoftmax subtract the row maximum before exponentiating.
// Hardmax sets the first maximal element of a row to 1, the others to 0.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct RowShape {
  int64_t Outer = 1, Extent = 1, Inner = 1;
};

RowShape rowShape(const ir::Node &n, const Shape &s) {
  int64_t r = (int64_t)s.size();
  RowShape rs;
  bool coerce = n.Opset < 13;
  int64_t axis = n.attrInt("axis", coerce ? 1 : -1);
  if (r == 0) {
    // A scalar is a single one-element row.
    if (axis != 0 && axis != -1 && !(coerce && axis == 1))
      n.error() << "axis " << axis << " is out of range for a scalar";
    return rs;
  }
  if (coerce) {
    // axis may equal the rank (everything is one row... of the outer block).
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a > r)
      n.error() << "axis " << axis << " is out of range for rank " << r;
    for (int64_t d = 0; d < a; ++d)
      rs.Outer *= s[(size_t)d];
    for (int64_t d = a; d < r; ++d)
      rs.Extent *= s[(size_t)d];
    return rs;
  }
  int64_t a = normalizeAxis(n, axis, r);
  for (int64_t d = 0; d < a; ++d)
    rs.Outer *= s[(size_t)d];
  rs.Extent = s[(size_t)a];
  for (int64_t d = a + 1; d < r; ++d)
    rs.Inner *= s[(size_t)d];
  return rs;
}

void inferSoftmax(ir::Node &n) {
  requireFloat(n, 0);
  rowShape(n, n.inShape(0));
  inferSameAsInput(n);
}

enum class Kind { Softmax, LogSoftmax, Hardmax };

void lowerSoftmax(LowerCtx &c, Kind kind) {
  TensorRef x = c.in(0), y = c.out(0);
  RowShape rs = rowShape(c.node(), x.shape());
  if (x.numel() == 0)
    return;
  KernelBuilder &b = c.b();
  DType t = x.computeType();
  // Each row's first element, `rs.Inner` apart: the rows of a tensor whose
  // axes follow bounded dimensions are those within the run-time extents.
  Expr extent = indexConst(rs.Extent);
  std::function<void(const std::function<void(Expr)> &)> rows =
      [&](const std::function<void(Expr)> &row) {
        b.loop("o", rs.Outer, [&](Expr o) {
          b.loop("i", rs.Inner, [&](Expr i) { row(o * (rs.Extent * rs.Inner) + i); });
        });
      };
  if (x.bounded()) {
    if (c.node().Opset < 13)
      c.node().error(ErrorKind::Unsupported)
          << "its input has axes that follow a bounded dimension; Softmax before opset 13 "
             "(rows of a flattened input) does not take them so far";
    const int64_t a = normalizeAxis(c.node(), c.node().attrInt("axis", -1), (int64_t)x.rank());
    extent = x.extent(a);
    rows = [&, a](const std::function<void(Expr)> &row) {
      std::vector<Expr> e = x.extents();
      e[(size_t)a] = indexConst(1);
      b.loops(e, [&](const std::vector<Expr> &idx) { row(x.offset(idx)); }, "o");
    };
  }
  rows([&](Expr base) {
    {
      auto at = [&](Expr k) { return base + k * rs.Inner; };
      Local mx = b.local("mx", lowestValue(t));
      if (kind == Kind::Hardmax) {
        Local arg = b.local("arg", indexConst(0));
        b.loopTo("k", extent, [&](Expr k) {
          Expr v = x.loadFlat(at(k));
          b.ifThen(gt(v, mx.get()), [&] {
            b.set(mx, v);
            b.set(arg, k);
          });
        });
        b.loopTo("k", extent, [&](Expr k) {
          y.storeFlat(at(k), select(eq(k, arg.get()), constant(t, 1), constant(t, 0)));
        });
        return;
      }
      // NaN-propagating maximum: max() propagates NaN, so a NaN row stays NaN.
      b.loopTo("k", extent, [&](Expr k) { b.set(mx, max(mx.get(), x.loadFlat(at(k)))); });
      Local sum = b.local("sum", constant(t, 0));
      b.loopTo("k", extent, [&](Expr k) {
        Expr e = exp(x.loadFlat(at(k)) - mx.get());
        if (kind == Kind::Softmax)
          y.storeFlat(at(k), e);
        b.set(sum, sum.get() + e);
      });
      if (kind == Kind::Softmax) {
        Expr inv = 1.0 / sum.get();
        Local r = b.local("rcp", inv);
        // Re-read the exponentials in compute precision when the output
        // type is narrower than the compute type.
        if (y.dtype() == t) {
          b.loopTo("k", extent, [&](Expr k) {
            y.storeFlat(at(k), y.loadFlat(at(k)) * r.get());
          });
        } else {
          b.loopTo("k", extent, [&](Expr k) {
            y.storeFlat(at(k), exp(x.loadFlat(at(k)) - mx.get()) * r.get());
          });
        }
      } else {
        Local lse = b.local("lse", mx.get() + log(sum.get()));
        b.loopTo("k", extent, [&](Expr k) {
          y.storeFlat(at(k), x.loadFlat(at(k)) - lse.get());
        });
      }
    }
  });
}

} // namespace

MLCC_OPS(Softmax) {
  const std::pair<const char *, Kind> ops[] = {{"Softmax", Kind::Softmax},
                                               {"LogSoftmax", Kind::LogSoftmax},
                                               {"Hardmax", Kind::Hardmax}};
  for (auto [name, kind] : ops)
    R.add({.Name = name, .SinceVersion = 1, .Fusion = FusionClass::Opaque,
           .Infer = inferSoftmax,
           .Lower = [kind](LowerCtx &c) { lowerSoftmax(c, kind); },
           .RunTimeExtents = true});
}

} // namespace mlcc::ops
