//===- Activations.cpp - Relu, Elu, Sigmoid, Gelu, Clip, ... --------------===//
//
// Elementwise activation functions. Attributes are read at lowering time
// and become constants of the compute type. PRelu broadcasts its slope to
// the input's shape (unidirectionally); Clip takes its bounds from
// attributes before opset 11 and from optional scalar inputs afterwards.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>
#include <limits>

namespace mlcc::ops {

using namespace kir;

namespace {

using AttrFn = std::function<Expr(const ir::Node &, const Expr &)>;

/// A one-input float activation whose function reads node attributes.
void addActivation(OpRegistry &R, const char *name, int64_t since, AttrFn fn,
                   std::function<void(ir::Node &)> infer = inferFloatUnary) {
  addElementwise(
      R, name, since,
      NodeScalarFn([fn](const ir::Node &n, const std::vector<Expr> &a) { return fn(n, a[0]); }),
      std::move(infer));
}

Expr sigmoid(const Expr &x) { return 1.0 / (1.0 + exp(-x)); }

/// log(1 + exp(x)), returning x where exp(x) would overflow.
Expr softplus(const Expr &x) {
  return select(gt(x, 30.0), x, log(exp(x) + 1.0));
}

// --- PRelu -----------------------------------------------------------------

/// Before opset 7 a 1-D slope with one value per channel applies along
/// axis 1 (Caffe-style); from 7 the slope broadcasts unidirectionally.
bool preluPerChannel(const ir::Node &n) {
  const Shape &x = n.inShape(0), &slope = n.inShape(1);
  return n.Opset < 7 && x.size() >= 2 && slope.size() == 1 && slope[0] == x[1] &&
         slope[0] != 1;
}

void inferPRelu(ir::Node &n) {
  DType t = n.inDType(0);
  if (!isFloat(t) && !isSignedInt(t))
    n.error(ErrorKind::Unsupported)
        << "input 0 has type " << dtypeOnnxName(t)
        << "; a floating-point or signed integer type is required";
  requireSameDTypes(n);
  const Shape &x = n.inShape(0), &slope = n.inShape(1);
  if (!preluPerChannel(n) && broadcastShapes(n, {x, slope}) != x)
    n.error() << "slope of shape " << shapeToString(slope)
              << " does not broadcast to the input shape " << shapeToString(x);
  inferSameAsInput(n);
}

void lowerPRelu(LowerCtx &c) {
  if (!preluPerChannel(c.node())) {
    lowerElementwise(c, [](const std::vector<Expr> &a) {
      return select(lt(a[0], 0.0), a[0] * a[1], a[0]);
    });
    return;
  }
  TensorRef x = c.in(0), slope = c.in(1), y = c.out(0);
  c.b().loops(x.shape(), [&](const std::vector<Expr> &i) {
    Expr v = x.load(i);
    y.store(i, select(lt(v, 0.0), v * slope.load({i[1]}), v));
  });
}

// --- Clip ------------------------------------------------------------------

void inferClip(ir::Node &n) {
  if (n.Opset < 12)
    requireFloat(n, 0);
  else
    requireNumeric(n, 0);
  if (n.Opset >= 11) {
    for (size_t i = 1; i < 3; ++i) {
      if (!n.hasInput(i))
        continue;
      if (n.inDType(i) != n.inDType(0))
        n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                  << " but input 0 has " << dtypeOnnxName(n.inDType(0));
      if (n.inType(i).numel() != 1)
        n.error() << (i == 1 ? "min" : "max") << " must be a scalar, got shape "
                  << shapeToString(n.inShape(i));
    }
  }
  inferSameAsInput(n);
}

/// Clip of x = args[0] by the bounds: attributes before opset 11, then the
/// optional inputs min and max (args holds the present inputs in order).
Expr clip(const ir::Node &n, const std::vector<Expr> &args) {
  Expr v = args[0], lo, hi;
  DType ct = v->Type;
  if (n.Opset < 11) {
    double fmax = std::numeric_limits<float>::max();
    if (n.hasAttr("min"))
      lo = constant(ct, n.attrFloat("min", -fmax));
    if (n.hasAttr("max"))
      hi = constant(ct, n.attrFloat("max", fmax));
  } else {
    size_t next = 1;
    if (n.hasInput(1))
      lo = args[next++];
    if (n.hasInput(2))
      hi = args[next++];
  }
  if (lo)
    v = max(v, lo);
  if (hi)
    v = min(v, hi);
  return v;
}

void lowerClip(LowerCtx &c) {
  const ir::Node &n = c.node();
  TensorRef x = c.in(0), y = c.out(0);
  std::vector<Expr> bounds;
  for (size_t i = 1; i < 3; ++i)
    if (n.Opset >= 11 && c.hasIn(i))
      bounds.push_back(c.in(i).loadFlat(indexConst(0)));
  lowerMap(c, x, y, [&](Expr v) {
    std::vector<Expr> args = {v};
    args.insert(args.end(), bounds.begin(), bounds.end());
    return clip(n, args);
  });
}

// --- Shrink ----------------------------------------------------------------

void inferShrink(ir::Node &n) {
  requireNumeric(n, 0);
  inferSameAsInput(n);
}

Expr shrink(const ir::Node &n, const Expr &x0) {
  double bias = n.attrFloat("bias", 0.0), lambd = n.attrFloat("lambd", 0.5);
  // Integers compute in double (the attributes are floats).
  Expr x = isFloat(x0->Type) ? x0 : cast(DType::F64, x0);
  Expr r = select(lt(x, -lambd), x + bias,
                  select(gt(x, lambd), x - bias, constLike(x, 0)));
  return cast(x0->Type, r);
}

// --- Gelu ------------------------------------------------------------------

void inferGelu(ir::Node &n) {
  requireFloat(n, 0);
  std::string approx = n.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    n.error() << "approximate must be 'none' or 'tanh', got '" << approx << "'";
  inferSameAsInput(n);
}

Expr gelu(const ir::Node &n, const Expr &x) {
  if (n.attrString("approximate", "none") == "tanh") {
    double k = std::sqrt(2.0 / M_PI);
    Expr inner = (x + x * x * x * 0.044715) * k;
    return x * 0.5 * (tanh(inner) + 1.0);
  }
  return x * 0.5 * (erf(x * M_SQRT1_2) + 1.0);
}

} // namespace

MLCC_OPS(Activations) {
  addActivation(
      R, "Relu", 1, [](const ir::Node &, const Expr &x) { return max(x, 0.0); },
      inferSignedOrFloatUnary);
  addActivation(R, "LeakyRelu", 1, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 0.01);
    return select(lt(x, 0.0), x * alpha, x);
  });
  R.add({.Name = "PRelu", .SinceVersion = 1, .Fusion = FusionClass::Elementwise,
         .Infer = inferPRelu, .Lower = lowerPRelu});
  addActivation(R, "Elu", 1, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 1.0);
    return select(lt(x, 0.0), (exp(x) - 1.0) * alpha, x);
  });
  addActivation(R, "Selu", 1, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 1.67326319217681884765625);
    double gamma = n.attrFloat("gamma", 1.05070102214813232421875);
    return select(le(x, 0.0), (exp(x) * alpha - alpha) * gamma, x * gamma);
  });
  addActivation(R, "Celu", 12, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 1.0);
    Expr neg = (exp(x / alpha) - 1.0) * alpha;
    return max(x, 0.0) + min(neg, 0.0);
  });
  addActivation(R, "Sigmoid", 1,
                [](const ir::Node &, const Expr &x) { return sigmoid(x); });
  addActivation(R, "HardSigmoid", 1, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 0.2), beta = n.attrFloat("beta", 0.5);
    return max(min(x * alpha + beta, 1.0), 0.0);
  });
  addActivation(R, "HardSwish", 14, [](const ir::Node &, const Expr &x) {
    return x * max(min(x * (1.0 / 6.0) + 0.5, 1.0), 0.0);
  });
  addActivation(R, "Softplus", 1,
                [](const ir::Node &, const Expr &x) { return softplus(x); });
  addActivation(R, "Softsign", 1, [](const ir::Node &, const Expr &x) {
    return x / (abs(x) + 1.0);
  });
  addActivation(R, "Mish", 18, [](const ir::Node &, const Expr &x) {
    return x * tanh(softplus(x));
  });
  addActivation(R, "Gelu", 20, gelu, inferGelu);
  addActivation(R, "ThresholdedRelu", 10, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 1.0);
    return select(gt(x, alpha), x, constLike(x, 0));
  });
  addActivation(R, "Shrink", 9, shrink, inferShrink);
  addActivation(R, "Swish", 24, [](const ir::Node &n, const Expr &x) {
    double alpha = n.attrFloat("alpha", 1.0);
    return x * sigmoid(x * alpha);
  });
  R.add({.Name = "Clip", .SinceVersion = 1, .Fusion = FusionClass::Elementwise,
         .Infer = inferClip, .Lower = lowerClip, .Scalar = clip, .RunTimeExtents = true});
}

} // namespace mlcc::ops
