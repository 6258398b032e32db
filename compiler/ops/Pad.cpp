//===- Pad.cpp - Pad ------------------------------------------------------===//
//
// Pads come from the `paddings` (opset 1) or `pads` (opset 2) attribute, then
// from input 1 (opset 11), optionally restricted to the axes of input 3
// (opset 18). They determine the output shape, so they must be compile-time
// constants; the constant value (input 2) is a run-time scalar.
//
// Negative pads crop: each axis is first cropped to [lo, hi) and the
// positive pads are then filled by the mode (constant, edge, reflect and,
// from opset 19, wrap) relative to the cropped extent.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

enum class PadMode { Constant, Edge, Reflect, Wrap };

struct PadParams {
  PadMode Mode = PadMode::Constant;
  std::vector<int64_t> Lo, Len, Before; ///< crop start, cropped extent, pad before
  Shape Out;
};

PadParams padParams(const ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> pads;
  if (n.Opset < 2)
    pads = n.requireInts("paddings");
  else if (n.Opset < 11)
    pads = n.requireInts("pads");
  else
    pads = n.constInputInts(1, "the pads determine the output shape");
  std::vector<int64_t> axes;
  if (n.Opset >= 18 && n.hasInput(3)) {
    axes = n.constInputInts(3, "the padded axes determine the output shape");
  } else {
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  size_t na = axes.size();
  if (pads.size() != 2 * na)
    n.error() << "pads has " << pads.size() << " entries, expected " << 2 * na;

  PadParams p;
  std::string mode = n.attrString("mode", "constant");
  if (mode == "constant")
    p.Mode = PadMode::Constant;
  else if (mode == "edge")
    p.Mode = PadMode::Edge;
  else if (mode == "reflect")
    p.Mode = PadMode::Reflect;
  else if (mode == "wrap" && n.Opset >= 19)
    p.Mode = PadMode::Wrap;
  else
    n.error() << "unknown mode '" << mode << "'";

  std::vector<int64_t> before((size_t)r, 0), after((size_t)r, 0);
  std::vector<bool> seen((size_t)r, false);
  for (size_t i = 0; i < na; ++i) {
    int64_t a = normalizeAxis(n, axes[i], r);
    if (seen[(size_t)a])
      n.error() << "axis " << axes[i] << " appears twice";
    seen[(size_t)a] = true;
    before[(size_t)a] = pads[i];
    after[(size_t)a] = pads[i + na];
  }
  for (int64_t d = 0; d < r; ++d) {
    int64_t b = before[(size_t)d], e = after[(size_t)d], dim = in[(size_t)d];
    int64_t lo = b < 0 ? -b : 0;
    int64_t len = dim - lo - (e < 0 ? -e : 0);
    if (len < 0)
      n.error() << "pads " << b << ", " << e << " crop more than the extent "
                << dim << " of axis " << d;
    int64_t out = len + (b > 0 ? b : 0) + (e > 0 ? e : 0);
    if (len == 0 && out > 0 && p.Mode != PadMode::Constant)
      n.error() << "cannot pad an empty axis in mode '" << mode << "'";
    p.Lo.push_back(lo);
    p.Len.push_back(len);
    p.Before.push_back(b > 0 ? b : 0);
    p.Out.push_back(out);
  }
  return p;
}

void inferPad(ir::Node &n) {
  PadParams p = padParams(n);
  if (n.Opset >= 11 && n.hasInput(2)) {
    if (n.inDType(2) != n.inDType(0))
      n.error() << "constant_value has type " << dtypeOnnxName(n.inDType(2))
                << " but data has " << dtypeOnnxName(n.inDType(0));
    if (numElements(n.inShape(2)) != 1 && numElements(n.inShape(2)) != 0)
      n.error() << "constant_value must be a scalar";
  }
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerPad(LowerCtx &c) {
  const ir::Node &n = c.node();
  // Pads computed from a bounded dimension hold their values at MAX: the
  // pads before an axis place the input, so they must not vary.
  if (n.hasInput(1) && n.Inputs[1]->FromDims)
    n.error(ErrorKind::Unsupported)
        << "its pads ('" << n.Inputs[1]->Name << "') are computed from a bounded dimension; "
        << "a Pad takes only pads that are the same at every value so far";
  PadParams p = padParams(n);
  TensorRef x = c.in(0), y = c.out(0);
  DType ct = y.computeType();
  Expr value;
  if (n.Opset < 11)
    value = isFloat(ct) ? constant(ct, n.attrFloat("value", 0.0))
                        : constantInt(ct, (int64_t)n.attrFloat("value", 0.0));
  else if (c.hasIn(2) && numElements(n.inShape(2)) == 1)
    value = c.in(2).loadFlat(indexConst(0));
  else
    value = constant(ct, 0);
  bool empty = x.numel() == 0;
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> src(o.size());
    Expr inside = boolConst(true);
    for (size_t d = 0; d < o.size(); ++d) {
      int64_t len = p.Len[d];
      Expr s = o[d] - p.Before[d]; // relative to the cropped axis
      if (p.Before[d] == 0 && p.Out[d] == len) {
        src[d] = s + p.Lo[d];
        continue;
      }
      // The cropped length when the kernel runs: the axis may follow a
      // bounded dimension (the pads and crops are fixed); a constant folds.
      Expr cropped = x.extent((int64_t)d) - indexConst(x.shape()[d] - len);
      Expr last = max(cropped - indexConst(1), indexConst(0));
      switch (p.Mode) {
      case PadMode::Constant:
        inside = land(inside, land(ge(s, indexConst(0)), lt(s, cropped)));
        s = clamp(s, indexConst(0), last);
        break;
      case PadMode::Edge:
        s = clamp(s, indexConst(0), last);
        break;
      case PadMode::Reflect:
        if (!x.boundedAxis((int64_t)d) && len == 1) {
          s = indexConst(0);
        } else { // a period of 2 (cropped - 1), at least 1
          Expr period = max(indexConst(2) * last, indexConst(1));
          Expr m = floorMod(s, period);
          s = select(lt(m, cropped), m, period - m);
        }
        break;
      case PadMode::Wrap:
        s = floorMod(s, max(cropped, indexConst(1)));
        break;
      }
      src[d] = s + p.Lo[d];
    }
    if (empty) {
      y.store(o, value);
      return;
    }
    Expr v = x.load(src);
    if (p.Mode == PadMode::Constant)
      v = select(inside, v, value);
    y.store(o, v);
  });
}

} // namespace

MLCC_OPS(Pad) {
  R.add({.Name = "Pad", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferPad, .Lower = lowerPad, .RunTimeExtents = true});
}

} // namespace mlcc::ops
