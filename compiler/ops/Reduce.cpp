//===- Reduce.cpp - ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/... ----------===//
//
// Axes come from the `axes` attribute before the op's input form (ReduceSum
// at opset 13, the others at 18), then from input 1. `keepdims` keeps the
// reduced axes as extent 1; with no axes everything is reduced unless
// `noop_with_empty_axes` is set.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

struct ReduceKind {
  const char *Name;
  int64_t AxesInputSince; ///< opset from which axes is an input
};

std::vector<int64_t> reduceAxes(const ir::Node &n, int64_t axesInputSince,
                                bool &noop) {
  int64_t r = (int64_t)n.inShape(0).size();
  std::vector<int64_t> axes;
  noop = false;
  if (n.Opset < axesInputSince) {
    axes = n.attrInts("axes");
  } else if (n.hasInput(1)) {
    axes = n.constInputInts(1, "the reduced axes determine the output shape");
  }
  if (axes.empty()) {
    if (n.Opset >= axesInputSince && n.attrInt("noop_with_empty_axes", 0)) {
      noop = true;
      return {};
    }
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  }
  for (int64_t &a : axes)
    a = normalizeAxis(n, a, r);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Shape reducedShape(const Shape &in, const std::vector<int64_t> &axes, bool keep) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), (int64_t)d) != axes.end();
    if (!red)
      out.push_back(in[d]);
    else if (keep)
      out.push_back(1);
  }
  return out;
}

Reduction reductionFor(const std::string &op, DType t) {
  DType acc = computeType(t);
  Reduction r;
  r.AccType = acc;
  auto add = [](Expr a, Expr x) { return a + x; };
  if (op == "ReduceSum") {
    r.Init = constant(acc, 0);
    r.Combine = add;
  } else if (op == "ReduceMean") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Finish = [](Expr a, Expr n) { return a / countAs(a->Type, n); };
  } else if (op == "ReduceMax" && t == DType::Bool) { // any
    r.Init = boolConst(false);
    r.Combine = [](Expr a, Expr x) { return lor(a, x); };
  } else if (op == "ReduceMin" && t == DType::Bool) { // all
    r.Init = boolConst(true);
    r.Combine = [](Expr a, Expr x) { return land(a, x); };
  } else if (op == "ReduceMax") {
    r.Init = lowestValue(t);
    r.Combine = [](Expr a, Expr x) { return max(a, x); };
  } else if (op == "ReduceMin") {
    r.Init = highestValue(t);
    r.Combine = [](Expr a, Expr x) { return min(a, x); };
  } else if (op == "ReduceProd") {
    r.Init = constant(acc, 1);
    r.Combine = [](Expr a, Expr x) { return a * x; };
  } else if (op == "ReduceL1") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Map = [](Expr x) { return abs(x); };
  } else if (op == "ReduceL2") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Map = [](Expr x) { return x * x; };
    r.Finish = [acc](Expr a, Expr) {
      if (isFloat(acc))
        return sqrt(a);
      return cast(acc, sqrt(cast(DType::F64, a)));
    };
  } else if (op == "ReduceSumSquare") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Map = [](Expr x) { return x * x; };
  } else if (op == "ReduceLogSum") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Finish = [](Expr a, Expr) { return log(a); };
  } else if (op == "ReduceLogSumExp") {
    r.Init = constant(acc, 0);
    r.Combine = add;
    r.Map = [](Expr x) { return exp(x); };
    r.Finish = [](Expr a, Expr) { return log(a); };
  }
  return r;
}

void inferReduce(ir::Node &n, int64_t since) {
  // Bool inputs: ReduceMax/ReduceMin from opset 20.
  bool boolOk = n.Opset >= 20 && (n.OpType == "ReduceMax" || n.OpType == "ReduceMin");
  if (!(boolOk && n.inDType(0) == DType::Bool))
    requireNumeric(n, 0);
  bool noop;
  std::vector<int64_t> axes = reduceAxes(n, since, noop);
  if (noop) {
    n.setOutput(0, n.inType(0));
    return;
  }
  bool keep = n.attrInt("keepdims", 1) != 0;
  n.setOutput(0, n.inDType(0), reducedShape(n.inShape(0), axes, keep));
}

void lowerReduce(LowerCtx &c, int64_t since) {
  const ir::Node &n = c.node();
  bool noop;
  std::vector<int64_t> axes = reduceAxes(n, since, noop);
  TensorRef x = c.in(0), y = c.out(0);
  if (noop) {
    Expr count = x.numelAtRunTime();
    if (!count)
      n.error(ErrorKind::Unsupported)
          << "copies a tensor whose axes that follow a bounded dimension do not lead";
    c.b().loopTo("i", count, [&](Expr i) { y.storeFlat(i, x.loadFlat(i)); });
    return;
  }
  DType t = x.dtype();
  if ((n.OpType == "ReduceLogSum" || n.OpType == "ReduceLogSumExp") && !isFloat(t))
    n.error(ErrorKind::Unsupported) << "integer inputs are not supported";
  lowerReduction(c, x, y, axes, reductionFor(n.OpType, t));
}

} // namespace

MLCC_OPS(Reduce) {
  const ReduceKind kinds[] = {
      {"ReduceSum", 13},   {"ReduceMean", 18},      {"ReduceMax", 18},
      {"ReduceMin", 18},   {"ReduceProd", 18},      {"ReduceL1", 18},
      {"ReduceL2", 18},    {"ReduceSumSquare", 18}, {"ReduceLogSum", 18},
      {"ReduceLogSumExp", 18}};
  for (const ReduceKind &k : kinds) {
    int64_t since = k.AxesInputSince;
    R.add({.Name = k.Name, .SinceVersion = 1, .Fusion = FusionClass::Reduction,
           .Infer = [since](ir::Node &n) { inferReduce(n, since); },
           .Lower = [since](LowerCtx &c) { lowerReduce(c, since); },
           .RunTimeExtents = true});
  }
}

} // namespace mlcc::ops
