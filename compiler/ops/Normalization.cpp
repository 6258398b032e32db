//===- Normalization.cpp - Batch/Instance/Layer/Group/RMS norms, LRN, ... -===//
//
// Most normalizations here share one shape: the input is split into
// "groups" (an outer index space) whose elements (an inner index space) are
// standardized together. For each group a kernel pass computes the mean,
// a second the variance (sum of squared deviations, which is more accurate
// than E[x^2] - E[x]^2), and a third writes
//   y = affine(x index, (x - mean) * invStd).
//
//   BatchNormalization (training)  groups: C            elements: N, D1..Dn
//   InstanceNormalization          groups: N, C         elements: D1..Dn
//   GroupNormalization             groups: N, G         elements: C/G, D1..Dn
//   LayerNormalization             groups: d0..d(a-1)   elements: d(a)..
//   RMSNormalization               same, with no mean subtraction
//   MeanVarianceNormalization      groups: other axes   elements: `axes`
//
// Statistics are accumulated in the compute type (f32 for f16/bf16), or in
// the type `stash_type` names when that is wider.
//
// BatchNormalization in inference form and LRN / LpNormalization are
// separate, simpler loops.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

using Index = std::vector<Expr>;

enum class NormMode {
  Standard, ///< (x - mean) / sqrt(var + eps)
  Rms,      ///< x / sqrt(mean(x^2) + eps)
  Mvn,      ///< (x - mean) / (sqrt(var) + eps)
};

struct NormPlan {
  Shape Outer, Inner;
  /// Outer's extents when the kernel runs, when some follow bounded
  /// dimensions (empty: Outer).
  std::vector<Expr> OuterAt;
  /// X's multi-index for group index o and element index i.
  std::function<Index(const Index &o, const Index &i)> XIndex;
  NormMode Mode = NormMode::Standard;
  double Eps = 1e-5;
  DType Acc = DType::F32;
  /// y at X index `xi` from the standardized value (already in Acc).
  std::function<void(const Index &xi, Expr normalized)> Write;
  /// Optional: called once per group after the statistics are known.
  std::function<void(const Index &o, Expr mean, Expr var, Expr invStd)> Stats;
};

void lowerNormPlan(LowerCtx &c, const TensorRef &x, const NormPlan &p) {
  KernelBuilder &b = c.b();
  int64_t count = numElements(p.Inner);
  DType acc = p.Acc;
  auto ld = [&](const Index &o, const Index &i) {
    return cast(acc, x.load(p.XIndex(o, i)));
  };
  std::vector<Expr> outer = p.OuterAt;
  if (outer.empty())
    for (int64_t e : p.Outer)
      outer.push_back(indexConst(e));
  b.loops(outer, [&](const Index &o) {
    Local mean = b.local("mean", constant(acc, 0));
    Local var = b.local("var", constant(acc, 0));
    double inv = count > 0 ? 1.0 / (double)count : 0.0;
    if (p.Mode == NormMode::Rms) {
      b.loops(p.Inner, [&](const Index &i) {
        Expr v = ld(o, i);
        b.set(var, var.get() + v * v);
      }, "r");
      b.set(var, var.get() * inv);
    } else {
      b.loops(p.Inner, [&](const Index &i) { b.set(mean, mean.get() + ld(o, i)); }, "r");
      b.set(mean, mean.get() * inv);
      b.loops(p.Inner, [&](const Index &i) {
        Expr d = ld(o, i) - mean.get();
        b.set(var, var.get() + d * d);
      }, "r");
      b.set(var, var.get() * inv);
    }
    Expr invStd = p.Mode == NormMode::Mvn
                      ? 1.0 / (sqrt(var.get()) + p.Eps)
                      : 1.0 / sqrt(var.get() + p.Eps);
    Local is = b.local("inv_std", invStd);
    if (p.Stats)
      p.Stats(o, mean.get(), var.get(), is.get());
    b.loops(p.Inner, [&](const Index &i) {
      Expr v = ld(o, i);
      Expr nv = p.Mode == NormMode::Rms ? v * is.get() : (v - mean.get()) * is.get();
      p.Write(p.XIndex(o, i), nv);
    }, "j");
  }, "g");
}

/// The accumulation type: the compute type of `t`, widened to `stash_type`.
DType accType(const ir::Node &n, DType t) {
  DType acc = computeType(t);
  int64_t stash = n.attrInt("stash_type", 1);
  std::optional<DType> st = dtypeFromOnnx(stash);
  if (!st || !isFloat(*st))
    n.error() << "stash_type " << stash << " is not a floating-point type";
  if (computeType(*st) == DType::F64)
    acc = DType::F64;
  return acc;
}

/// Converts between compute types (a no-op when equal).
Expr conv(DType t, const Expr &e) { return e->Type == t ? e : cast(t, e); }

// --- BatchNormalization --------------------------------------------------------

bool bnTraining(const ir::Node &n) {
  if (n.Opset >= 14)
    return n.attrInt("training_mode", 0) != 0;
  return false;
}

void inferBatchNorm(ir::Node &n) {
  requireFloat(n, 0);
  const Shape &x = n.inShape(0);
  if (x.empty())
    n.error() << "input must have rank 1 or more";
  int64_t C = x.size() >= 2 ? x[1] : 1;
  Shape spatialParam(x.begin() + std::min<size_t>(1, x.size()), x.end());
  for (size_t i = 1; i < 5; ++i) {
    if (!n.hasInput(i))
      n.error() << "input " << i << " is required";
    requireFloat(n, i);
    const Shape &s = n.inShape(i);
    bool ok = s == Shape{C} || (n.Opset < 9 && s == spatialParam && !x.empty());
    if (!ok)
      n.error() << "input " << i << " has shape " << shapeToString(s)
                << ", expected [" << C << "]";
  }
  if (n.Opset < 14) {
    if (n.inDType(1) != n.inDType(0))
      n.error() << "scale, B, mean and var must have the type of X";
  } else {
    if (n.inDType(2) != n.inDType(1))
      n.error() << "scale and B must have the same type";
    if (n.inDType(4) != n.inDType(3))
      n.error() << "input_mean and input_var must have the same type";
  }
  bool training = bnTraining(n);
  for (size_t i = 1; i < n.Outputs.size(); ++i) {
    if (!n.hasOutput(i))
      continue;
    if (!training) {
      if (n.Opset >= 14)
        n.error() << "output " << i << " is only valid with training_mode=1";
      n.error(ErrorKind::Unsupported)
          << "the training-mode outputs of BatchNormalization-" << n.Opset
          << " are not supported";
    }
    if (i > 2)
      n.error() << "has " << n.Outputs.size() << " outputs, at most 3 allowed";
    n.setOutput(i, n.inDType(3), {C});
  }
  n.setOutput(0, n.inType(0));
}

void lowerBatchNorm(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), scale = c.in(1), bias = c.in(2), mean = c.in(3),
            var = c.in(4), y = c.out(0);
  double eps = n.attrFloat("epsilon", 1e-5);
  KernelBuilder &b = c.b();
  DType t = x.computeType();
  const Shape &xs = x.shape();
  int64_t N = xs[0], C = xs.size() >= 2 ? xs[1] : 1;
  Shape spatial(xs.begin() + std::min<size_t>(2, xs.size()), xs.end());
  if (x.numel() == 0)
    return;
  auto xIndex = [&](Expr nn, Expr cc, const Index &s) {
    if (xs.size() == 1)
      return Index{nn};
    Index xi = {nn, cc};
    xi.insert(xi.end(), s.begin(), s.end());
    return xi;
  };

  if (bnTraining(n)) {
    double momentum = n.attrFloat("momentum", 0.9);
    std::optional<TensorRef> runMean, runVar;
    if (c.hasOut(1))
      runMean = c.out(1);
    if (c.hasOut(2))
      runVar = c.out(2);
    NormPlan p;
    p.Outer = {C};
    p.Inner = {N};
    p.Inner.insert(p.Inner.end(), spatial.begin(), spatial.end());
    p.XIndex = [&](const Index &o, const Index &i) {
      return xIndex(i[0], o[0], Index(i.begin() + 1, i.end()));
    };
    p.Eps = eps;
    p.Acc = t;
    p.Write = [&](const Index &xi, Expr v) {
      Expr ch = xs.size() == 1 ? indexConst(0) : xi[1];
      y.store(xi, conv(t, v) * conv(t, scale.load({ch})) + conv(t, bias.load({ch})));
    };
    p.Stats = [&](const Index &o, Expr m, Expr v, Expr) {
      if (runMean)
        runMean->store({o[0]}, conv(runMean->computeType(),
                                    conv(t, mean.load({o[0]})) * momentum +
                                        m * (1.0 - momentum)));
      if (runVar)
        runVar->store({o[0]}, conv(runVar->computeType(),
                                   conv(t, var.load({o[0]})) * momentum +
                                       v * (1.0 - momentum)));
    };
    lowerNormPlan(c, x, p);
    return;
  }

  // Inference: y = (x - mean) * (scale / sqrt(var + eps)) + B.
  bool perChannel = scale.shape() == Shape{C};
  auto param = [&](const TensorRef &pr, Expr ch, const Index &s) {
    if (perChannel || xs.size() == 1)
      return conv(t, pr.load({xs.size() == 1 ? indexConst(0) : ch}));
    Index pi = {ch};
    pi.insert(pi.end(), s.begin(), s.end());
    return conv(t, pr.load(pi));
  };
  b.loop("n", N, [&](Expr nn) {
    b.loop("c", C, [&](Expr ch) {
      if (perChannel) {
        Index none;
        Local k = b.local("k", param(scale, ch, none) /
                                   sqrt(param(var, ch, none) + eps));
        Local m = b.local("m", param(mean, ch, none));
        Local bb = b.local("b", param(bias, ch, none));
        b.loops(spatial, [&](const Index &s) {
          Index xi = xIndex(nn, ch, s);
          y.store(xi, (x.load(xi) - m.get()) * k.get() + bb.get());
        }, "s");
      } else {
        b.loops(spatial, [&](const Index &s) {
          Index xi = xIndex(nn, ch, s);
          y.store(xi, (x.load(xi) - param(mean, ch, s)) * param(scale, ch, s) /
                              sqrt(param(var, ch, s) + eps) +
                          param(bias, ch, s));
        }, "s");
      }
    });
  });
}

// --- InstanceNormalization -------------------------------------------------------

void inferInstanceNorm(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  const Shape &x = n.inShape(0);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more, got " << shapeToString(x);
  for (size_t i = 1; i < 3; ++i)
    if (n.inShape(i) != Shape{x[1]})
      n.error() << "input " << i << " has shape " << shapeToString(n.inShape(i))
                << ", expected [" << x[1] << "]";
  n.setOutput(0, n.inType(0));
}

void lowerInstanceNorm(LowerCtx &c) {
  TensorRef x = c.in(0), scale = c.in(1), bias = c.in(2), y = c.out(0);
  const Shape &xs = x.shape();
  DType t = x.computeType();
  NormPlan p;
  p.Outer = {xs[0], xs[1]};
  p.Inner.assign(xs.begin() + 2, xs.end());
  p.XIndex = [](const Index &o, const Index &i) {
    Index xi = o;
    xi.insert(xi.end(), i.begin(), i.end());
    return xi;
  };
  p.Eps = c.node().attrFloat("epsilon", 1e-5);
  p.Acc = t;
  p.Write = [&](const Index &xi, Expr v) {
    y.store(xi, v * scale.load({xi[1]}) + bias.load({xi[1]}));
  };
  lowerNormPlan(c, x, p);
}

// --- GroupNormalization ------------------------------------------------------------

void inferGroupNorm(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  const Shape &x = n.inShape(0);
  if (x.size() < 2)
    n.error() << "input must have rank 2 or more, got " << shapeToString(x);
  int64_t g = n.requireInt("num_groups");
  if (g < 1 || x[1] % g)
    n.error() << "num_groups " << g << " does not divide the " << x[1] << " channels";
  // Before opset 21 scale and bias have one entry per group.
  int64_t pe = n.Opset < 21 ? g : x[1];
  for (size_t i = 1; i < 3; ++i)
    if (n.inShape(i) != Shape{pe})
      n.error() << "input " << i << " has shape " << shapeToString(n.inShape(i))
                << ", expected [" << pe << "]";
  accType(n, n.inDType(0));
  n.setOutput(0, n.inType(0));
}

void lowerGroupNorm(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), scale = c.in(1), bias = c.in(2), y = c.out(0);
  const Shape &xs = x.shape();
  int64_t G = n.requireInt("num_groups"), cpg = xs[1] / G;
  bool perGroup = n.Opset < 21;
  DType t = x.computeType();
  NormPlan p;
  p.Outer = {xs[0], G};
  p.Inner = {cpg};
  p.Inner.insert(p.Inner.end(), xs.begin() + 2, xs.end());
  p.XIndex = [cpg](const Index &o, const Index &i) {
    Index xi = {o[0], o[1] * cpg + i[0]};
    xi.insert(xi.end(), i.begin() + 1, i.end());
    return xi;
  };
  p.Eps = n.attrFloat("epsilon", 1e-5);
  p.Acc = accType(n, x.dtype());
  p.Write = [&](const Index &xi, Expr v) {
    Expr pi = perGroup ? xi[1] / cpg : xi[1];
    // Stage one's result is cast back to X's type before the affine stage.
    y.store(xi, conv(t, v) * scale.load({pi}) + bias.load({pi}));
  };
  lowerNormPlan(c, x, p);
}

// --- LayerNormalization / RMSNormalization -------------------------------------------

void inferLayerNorm(ir::Node &n, bool rms) {
  requireFloat(n, 0);
  requireFloat(n, 1);
  const Shape &x = n.inShape(0);
  if (x.empty())
    n.error() << "input must have rank 1 or more";
  int64_t axis = normalizeAxis(n, n.attrInt("axis", -1), (int64_t)x.size());
  if (!rms && n.inDType(1) != n.inDType(0))
    n.error() << "Scale has type " << dtypeOnnxName(n.inDType(1)) << ", X has "
              << dtypeOnnxName(n.inDType(0));
  for (size_t i = 1; i < (rms ? 2u : 3u); ++i) {
    if (!n.hasInput(i))
      continue;
    if (i == 2 && n.inDType(2) != n.inDType(1))
      n.error() << "B must have the type of Scale";
    const Shape &s = n.inShape(i);
    if (broadcastShapes(n, {x, s}) != x)
      n.error() << "input " << i << " of shape " << shapeToString(s)
                << " does not broadcast to X " << shapeToString(x);
  }
  DType acc = accType(n, n.inDType(0));
  (void)acc;
  n.setOutput(0, n.inDType(rms ? 1 : 0), x);
  if (!rms) {
    Shape stat = x;
    for (size_t d = (size_t)axis; d < x.size(); ++d)
      stat[d] = 1;
    DType st = *dtypeFromOnnx(n.attrInt("stash_type", 1));
    for (size_t i = 1; i < 3; ++i)
      n.setOutput(i, st, stat);
  } else if (n.Outputs.size() > 1) {
    n.error() << "has " << n.Outputs.size() << " outputs, expected 1";
  }
}

void lowerLayerNorm(LowerCtx &c, bool rms) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), scale = c.in(1), y = c.out(0);
  std::optional<TensorRef> bias, meanOut, invOut;
  if (!rms && c.hasIn(2))
    bias = c.in(2);
  if (!rms && c.hasOut(1))
    meanOut = c.out(1);
  if (!rms && c.hasOut(2))
    invOut = c.out(2);
  const Shape &xs = x.shape();
  size_t axis = (size_t)normalizeAxis(n, n.attrInt("axis", -1), (int64_t)xs.size());
  DType t = x.computeType(), yt = y.computeType();
  NormPlan p;
  p.Outer.assign(xs.begin(), xs.begin() + (long)axis);
  p.Inner.assign(xs.begin() + (long)axis, xs.end());
  for (size_t d = 0; d < xs.size() && x.bounded(); ++d) {
    if (d < axis)
      p.OuterAt.push_back(x.extent((int64_t)d));
    else if (x.boundedAxis((int64_t)d))
      n.error(ErrorKind::Unsupported)
          << "normalizes over axis " << d
          << ", which follows a bounded dimension; only axes of fixed extent are normalized "
             "so far";
  }
  p.XIndex = [](const Index &o, const Index &i) {
    Index xi = o;
    xi.insert(xi.end(), i.begin(), i.end());
    return xi;
  };
  p.Mode = rms ? NormMode::Rms : NormMode::Standard;
  p.Eps = n.attrFloat("epsilon", 1e-5);
  p.Acc = accType(n, x.dtype());
  p.Write = [&](const Index &xi, Expr v) {
    // Stage one's result is cast back to X's type before the affine stage.
    Expr r = conv(yt, conv(t, v)) * conv(yt, scale.loadBroadcast(xi));
    if (bias)
      r = r + conv(yt, bias->loadBroadcast(xi));
    y.store(xi, r);
  };
  if (meanOut || invOut) {
    p.Stats = [&](const Index &o, Expr mean, Expr, Expr invStd) {
      Index si = o;
      si.resize(xs.size(), indexConst(0));
      if (meanOut)
        meanOut->store(si, conv(meanOut->computeType(), mean));
      if (invOut)
        invOut->store(si, conv(invOut->computeType(), invStd));
    };
  }
  lowerNormPlan(c, x, p);
}

// --- MeanVarianceNormalization ------------------------------------------------------

std::vector<int64_t> mvnAxes(const ir::Node &n) {
  int64_t r = (int64_t)n.inShape(0).size();
  std::vector<int64_t> axes = n.attrInts("axes", {0, 2, 3});
  for (int64_t &a : axes)
    a = normalizeAxis(n, a, r, "axes entry");
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

void inferMvn(ir::Node &n) {
  requireFloat(n, 0);
  mvnAxes(n);
  n.setOutput(0, n.inType(0));
}

void lowerMvn(LowerCtx &c) {
  TensorRef x = c.in(0), y = c.out(0);
  std::vector<int64_t> axes = mvnAxes(c.node());
  const Shape &xs = x.shape();
  std::vector<bool> red(xs.size(), false);
  for (int64_t a : axes)
    red[(size_t)a] = true;
  NormPlan p;
  for (size_t d = 0; d < xs.size(); ++d)
    (red[d] ? p.Inner : p.Outer).push_back(xs[d]);
  p.XIndex = [red](const Index &o, const Index &i) {
    Index xi;
    size_t io = 0, ii = 0;
    for (size_t d = 0; d < red.size(); ++d)
      xi.push_back(red[d] ? i[ii++] : o[io++]);
    return xi;
  };
  p.Mode = NormMode::Mvn;
  p.Eps = 1e-9;
  p.Acc = x.computeType();
  p.Write = [&](const Index &xi, Expr v) { y.store(xi, v); };
  lowerNormPlan(c, x, p);
}

// --- LRN ------------------------------------------------------------------------------

void inferLrn(ir::Node &n) {
  requireFloat(n, 0);
  if (n.inShape(0).size() < 2)
    n.error() << "input must have rank 2 or more";
  if (n.requireInt("size") < 1)
    n.error() << "size must be positive";
  n.setOutput(0, n.inType(0));
}

void lowerLrn(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), y = c.out(0);
  int64_t size = n.requireInt("size");
  double alpha = n.attrFloat("alpha", 1e-4), beta = n.attrFloat("beta", 0.75),
         bias = n.attrFloat("bias", 1.0);
  const Shape &xs = x.shape();
  int64_t C = xs[1];
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Shape spatial(xs.begin() + 2, xs.end());
  KernelBuilder &b = c.b();
  DType t = x.computeType();
  b.loop("n", xs[0], [&](Expr nn) {
    b.loop("c", C, [&](Expr ch) {
      Expr lo = max(ch - before, indexConst(0));
      Expr hi = min(ch + (after + 1), indexConst(C));
      b.loops(spatial, [&](const Index &s) {
        Local sum = b.local("sum", constant(t, 0));
        b.loop("k", lo, hi, [&](Expr k) {
          Index xi = {nn, k};
          xi.insert(xi.end(), s.begin(), s.end());
          Expr v = x.load(xi);
          b.set(sum, sum.get() + v * v);
        });
        Index xi = {nn, ch};
        xi.insert(xi.end(), s.begin(), s.end());
        Expr den = sum.get() * (alpha / (double)size) + bias;
        Expr scaleBy = beta == 0.75 ? 1.0 / (sqrt(den) * sqrt(sqrt(den)))
                       : beta == 0.5 ? 1.0 / sqrt(den)
                                     : 1.0 / pow(den, constant(t, beta));
        y.store(xi, x.load(xi) * scaleBy);
      }, "s");
    });
  });
}

// --- LpNormalization ----------------------------------------------------------------

void inferLpNorm(ir::Node &n) {
  requireFloat(n, 0);
  int64_t r = (int64_t)n.inShape(0).size();
  if (r == 0)
    n.error() << "input must have rank 1 or more";
  normalizeAxis(n, n.attrInt("axis", -1), r);
  int64_t p = n.attrInt("p", 2);
  if (p != 1 && p != 2)
    n.error() << "p must be 1 or 2, got " << p;
  n.setOutput(0, n.inType(0));
}

void lowerLpNorm(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), y = c.out(0);
  const Shape &xs = x.shape();
  int64_t axis = normalizeAxis(n, n.attrInt("axis", -1), (int64_t)xs.size());
  int64_t p = n.attrInt("p", 2);
  int64_t outer = 1, inner = 1, extent = xs[(size_t)axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= xs[(size_t)d];
  for (size_t d = (size_t)axis + 1; d < xs.size(); ++d)
    inner *= xs[d];
  KernelBuilder &b = c.b();
  DType t = x.computeType();
  if (x.numel() == 0)
    return;
  b.loop("o", outer, [&](Expr o) {
    b.loop("i", inner, [&](Expr i) {
      Expr base = o * (extent * inner) + i;
      Local sum = b.local("sum", constant(t, 0));
      b.loop("k", extent, [&](Expr k) {
        Expr v = x.loadFlat(base + k * inner);
        b.set(sum, sum.get() + (p == 1 ? abs(v) : v * v));
      });
      Local norm = b.local("norm", p == 1 ? sum.get() : sqrt(sum.get()));
      b.loop("k", extent, [&](Expr k) {
        Expr off = base + k * inner;
        y.storeFlat(off, select(eq(norm.get(), 0.0), constant(t, 0),
                                x.loadFlat(off) / norm.get()));
      });
    });
  });
}

} // namespace

MLCC_OPS(Normalization) {
  R.add({.Name = "BatchNormalization", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferBatchNorm,
         .Lower = lowerBatchNorm});
  R.add({.Name = "InstanceNormalization", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferInstanceNorm,
         .Lower = lowerInstanceNorm});
  R.add({.Name = "GroupNormalization", .SinceVersion = 18,
         .Fusion = FusionClass::Opaque, .Infer = inferGroupNorm,
         .Lower = lowerGroupNorm});
  // LayerNormalization is standard from opset 17 (older models spell it out
  // with ReduceMean/Sub/Pow/Sqrt/Div, which compile as they are).
  R.add({.Name = "LayerNormalization", .SinceVersion = 17,
         .Fusion = FusionClass::Opaque,
         .Infer = [](ir::Node &n) { inferLayerNorm(n, false); },
         .Lower = [](LowerCtx &c) { lowerLayerNorm(c, false); },
         .RunTimeExtents = true});
  R.add({.Name = "RMSNormalization", .SinceVersion = 23,
         .Fusion = FusionClass::Opaque,
         .Infer = [](ir::Node &n) { inferLayerNorm(n, true); },
         .Lower = [](LowerCtx &c) { lowerLayerNorm(c, true); },
         .RunTimeExtents = true});
  R.add({.Name = "MeanVarianceNormalization", .SinceVersion = 9,
         .Fusion = FusionClass::Opaque, .Infer = inferMvn, .Lower = lowerMvn});
  R.add({.Name = "LRN", .SinceVersion = 1, .Fusion = FusionClass::Opaque,
         .Infer = inferLrn, .Lower = lowerLrn});
  R.add({.Name = "LpNormalization", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferLpNorm,
         .Lower = lowerLpNorm});
}

} // namespace mlcc::ops
