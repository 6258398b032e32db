//===- Training.cpp - Adagrad, Adam, Momentum (preview.training) ----------===//
//
// One optimizer step of the ai.onnx.preview.training domain (version 1).
// Inputs are R (learning rate), T (update count), then n tensors X, their
// gradients G and the optimizer's state tensors (Adagrad: H; Adam: V, H;
// Momentum: V), each group of n in order; the outputs are the new X and the
// new state tensors in the same grouping. Every element is updated
// independently following the spec's pseudo code, in f64:
//
//   Adagrad:  g = norm_coefficient*X + G; H' = H + g*g;
//             X' = X - R/(1 + T*decay_factor) * g / (sqrt(H') + epsilon)
//   Adam:     g = norm_coefficient*X + G; V' = alpha*V + (1-alpha)*g;
//             H' = beta*H + (1-beta)*g*g;
//             r = T > 0 ? R*sqrt(1-beta^T)/(1-alpha^T) : R;
//             X' = (1 - norm_coefficient_post) * (X - r*V'/(sqrt(H') + epsilon))
//   Momentum: g = norm_coefficient*X + G; b = T > 0 ? beta : 1;
//             V' = alpha*V + b*g; X' = X - R*V' (standard) or
//             X' = X - R*(g + alpha*V') (nesterov)
//
// A tensor and its gradient and state tensors must have one shape.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

enum class Optimizer { Adagrad, Adam, Momentum };

/// Number of per-tensor input groups after R and T (X, G and the states).
size_t inputGroups(Optimizer o) { return o == Optimizer::Adam ? 4 : 3; }

size_t tensorCount(const ir::Node &n, Optimizer o) {
  size_t groups = inputGroups(o);
  if (n.Inputs.size() < 2 + groups || (n.Inputs.size() - 2) % groups)
    n.error() << "expected R, T and " << groups
              << " equally long groups of tensors, got " << n.Inputs.size()
              << " inputs";
  size_t count = (n.Inputs.size() - 2) / groups;
  if (n.Outputs.size() != count * (groups - 1))
    n.error() << "expected " << count * (groups - 1) << " outputs, got "
              << n.Outputs.size();
  return count;
}

void inferOptimizer(ir::Node &n, Optimizer o) {
  size_t count = tensorCount(n, o), groups = inputGroups(o);
  for (size_t i = 0; i < n.Inputs.size(); ++i)
    if (!n.hasInput(i))
      n.error() << "input " << i << " is required";
  requireDType(n, 0, {DType::F32, DType::F64});
  requireDType(n, 1, {DType::I64});
  if (numElements(n.inShape(0)) != 1 || numElements(n.inShape(1)) != 1)
    n.error() << "R and T must be scalars";
  if (o == Optimizer::Momentum) {
    std::string mode = n.attrString("mode", "");
    if (mode != "standard" && mode != "nesterov")
      n.error() << "mode must be 'standard' or 'nesterov', got '" << mode << "'";
  }
  for (size_t t = 0; t < count; ++t) {
    size_t x = 2 + t;
    requireDType(n, x, {DType::F32, DType::F64});
    for (size_t g = 1; g < groups; ++g) {
      size_t i = 2 + g * count + t;
      if (n.inType(i) != n.inType(x))
        n.error() << "input " << i << " (" << n.inType(i).str()
                  << ") does not match the optimized tensor " << x << " ("
                  << n.inType(x).str() << ")";
    }
    for (size_t g = 0; g + 1 < groups; ++g)
      n.setOutput(g * count + t, n.inType(x));
  }
}

void lowerOptimizer(LowerCtx &c, Optimizer o) {
  const ir::Node &n = c.node();
  size_t count = tensorCount(n, o);
  const DType F = DType::F64;
  KernelBuilder &b = c.b();
  Local R = b.local("R", cast(F, c.in(0).loadFlat(indexConst(0))));
  Local T = b.local("T", cast(F, c.in(1).loadFlat(indexConst(0))));
  double norm = n.attrFloat("norm_coefficient", 0.0);
  double eps = n.attrFloat("epsilon", 0.0);
  Local rate = b.local("rate", R.get());
  double alpha = 0, beta = 0;
  if (o == Optimizer::Adagrad) {
    b.set(rate, R.get() / (1.0 + T.get() * n.attrFloat("decay_factor", 0.0)));
  } else if (o == Optimizer::Adam) {
    alpha = n.attrFloat("alpha", 0.9);
    beta = n.attrFloat("beta", 0.999);
    Expr adj = R.get() * sqrt(1.0 - pow(constant(F, beta), T.get())) /
               (1.0 - pow(constant(F, alpha), T.get()));
    b.set(rate, select(gt(T.get(), 0.0), adj, R.get()));
  } else {
    alpha = n.attrFloat("alpha", 0.0);
    beta = n.attrFloat("beta", 0.0);
  }
  Local betaAdj = b.local("beta_adj", select(gt(T.get(), 0.0), constant(F, beta),
                                             constant(F, 1.0)));
  bool nesterov = n.attrString("mode", "") == "nesterov";
  double post = n.attrFloat("norm_coefficient_post", 0.0);
  for (size_t t = 0; t < count; ++t) {
    TensorRef x = c.in(2 + t), g = c.in(2 + count + t);
    TensorRef s1 = c.in(2 + 2 * count + t);
    std::optional<TensorRef> s2;
    if (o == Optimizer::Adam)
      s2 = c.in(2 + 3 * count + t);
    TensorRef xo = c.out(t), s1o = c.out(count + t);
    std::optional<TensorRef> s2o;
    if (o == Optimizer::Adam)
      s2o = c.out(2 * count + t);
    b.loop("i" + std::to_string(t), x.numel(), [&](Expr i) {
      Local xv = b.local("x", cast(F, x.loadFlat(i)));
      Local gr = b.local("g", xv.get() * norm + cast(F, g.loadFlat(i)));
      Expr xn;
      if (o == Optimizer::Adagrad) {
        Local h = b.local("h", cast(F, s1.loadFlat(i)) + gr.get() * gr.get());
        xn = xv.get() - rate.get() * gr.get() / (sqrt(h.get()) + eps);
        s1o.storeFlat(i, h.get());
      } else if (o == Optimizer::Adam) {
        Local v = b.local("v", cast(F, s1.loadFlat(i)) * alpha +
                                   gr.get() * (1.0 - alpha));
        Local h = b.local("h", cast(F, s2->loadFlat(i)) * beta +
                                   gr.get() * gr.get() * (1.0 - beta));
        xn = (xv.get() - rate.get() * v.get() / (sqrt(h.get()) + eps)) *
             (1.0 - post);
        s1o.storeFlat(i, v.get());
        s2o->storeFlat(i, h.get());
      } else {
        Local v = b.local("v", cast(F, s1.loadFlat(i)) * alpha +
                                   betaAdj.get() * gr.get());
        xn = nesterov ? xv.get() - R.get() * (gr.get() + v.get() * alpha)
                      : xv.get() - R.get() * v.get();
        s1o.storeFlat(i, v.get());
      }
      xo.storeFlat(i, xn);
    });
  }
}

void add(OpRegistry &R, const char *name, Optimizer o) {
  R.add({.Domain = "ai.onnx.preview.training", .Name = name, .SinceVersion = 1,
         .Fusion = FusionClass::Opaque,
         .Infer = [o](ir::Node &n) { inferOptimizer(n, o); },
         .Lower = [o](LowerCtx &c) { lowerOptimizer(c, o); }});
}

} // namespace

MLCC_OPS(Training) {
  add(R, "Adagrad", Optimizer::Adagrad);
  add(R, "Adam", Optimizer::Adam);
  add(R, "Momentum", Optimizer::Momentum);
}

} // namespace mlcc::ops
