//===- LanguageModelOps.cpp - SwiGLU, CausalConvWithState, LinearAttention ===//
//
// Recent fused ops of LLM and state-space models:
//
//  - SwiGLU (opset 28): Y = A * sigmoid(alpha * A) * B, A and B of one shape.
//  - CausalConvWithState (27): depthwise causal 1-D convolution over the
//    concatenation of past_state (zeros when absent, k-1 positions) and the
//    input: out[b,c,t] = bias[c] + sum_j w[c,0,j] * padded[b,c,t+j], with an
//    optional fused SiLU (`silu` or `swish`); present_state is the last k-1
//    positions of the padded sequence.
//  - LinearAttention (27): the recurrent form of linear attention per batch
//    and KV head, token by token, over a d_k x d_v state S:
//      linear:      S = S + k v^T
//      gated:       S = exp(g) S + k v^T
//      delta:       S = S + beta k (v - S^T k)^T
//      gated_delta: S = exp(g) S, then the delta update on the decayed S
//    and o = scale * q^T S for each query head sharing the KV head (GQA:
//    query head h uses KV head h / (q_num_heads / kv_num_heads)). The decay
//    g is per key dimension ([B, T, H_kv*d_k]) or per head ([B, T, H_kv]);
//    beta is per head ([B, T, H_kv]) or shared ([B, T, 1]). The state is kept
//    in the compute type (f32 for f16/bf16) in a scratch buffer.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

using namespace kir;

namespace {

Expr sigmoid(const Expr &x) { return 1.0 / (1.0 + exp(-x)); }

// --- SwiGLU ---------------------------------------------------------------

void inferSwiGLU(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  if (n.inShape(0) != n.inShape(1))
    n.error() << "A " << shapeToString(n.inShape(0)) << " and B "
              << shapeToString(n.inShape(1)) << " must have the same shape";
  n.setOutput(0, n.inType(0));
}

void lowerSwiGLU(LowerCtx &c) {
  double alpha = c.node().attrFloat("alpha", 1.0);
  lowerElementwise(c, [alpha](const std::vector<Expr> &a) {
    return a[0] * sigmoid(a[0] * alpha) * a[1];
  });
}

// --- CausalConvWithState --------------------------------------------------

struct CausalConvShape {
  int64_t B, C, L, K;
  bool Silu;
};

CausalConvShape causalConvShape(const ir::Node &n) {
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  if (x.size() != 3)
    n.error() << "input must have shape (batch, channels, length), got "
              << shapeToString(x);
  CausalConvShape s{x[0], x[1], x[2], 0, false};
  if (w.size() != 3 || w[0] != s.C || w[1] != 1 || w[2] < 1)
    n.error() << "weight must have shape (" << s.C << ", 1, k), got "
              << shapeToString(w);
  s.K = w[2];
  if (n.hasInput(2) && n.inShape(2) != Shape{s.C})
    n.error() << "bias must have shape (" << s.C << "), got "
              << shapeToString(n.inShape(2));
  if (n.hasInput(3) && n.inShape(3) != Shape{s.B, s.C, s.K - 1})
    n.error() << "past_state must have shape (" << s.B << ", " << s.C << ", "
              << s.K - 1 << "), got " << shapeToString(n.inShape(3));
  std::string act = n.attrString("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    n.error() << "unknown activation '" << act << "'";
  s.Silu = act != "none";
  return s;
}

void inferCausalConv(ir::Node &n) {
  requireFloat(n, 0);
  requireSameDTypes(n);
  CausalConvShape s = causalConvShape(n);
  n.setOutput(0, n.inType(0));
  n.setOutput(1, n.inDType(0), {s.B, s.C, s.K - 1});
}

void lowerCausalConv(LowerCtx &c) {
  CausalConvShape s = causalConvShape(c.node());
  TensorRef x = c.in(0), w = c.in(1);
  std::optional<TensorRef> bias, past;
  if (c.hasIn(2))
    bias = c.in(2);
  if (c.hasIn(3))
    past = c.in(3);
  KernelBuilder &b = c.b();
  DType ct = x.computeType();
  int64_t P = s.K - 1;
  // Element p of the padded sequence [past (P), input (L)].
  auto padded = [&](const Expr &bi, const Expr &ci, const Expr &p) {
    Expr inPast = lt(p, indexConst(P));
    Expr fromX = x.load({bi, ci, clamp(p - P, indexConst(0), indexConst(s.L - 1))});
    Expr fromPast = past ? past->load({bi, ci, clamp(p, indexConst(0),
                                                     indexConst(std::max<int64_t>(P - 1, 0)))})
                         : constant(ct, 0.0);
    if (P == 0)
      return fromX;
    if (s.L == 0)
      return fromPast;
    return select(inPast, fromPast, fromX);
  };
  b.loop("b", s.B, [&](Expr bi) {
    b.loop("c", s.C, [&](Expr ci) {
      if (c.hasOut(0)) {
        TensorRef y = c.out(0);
        b.loop("t", s.L, [&](Expr t) {
          Local acc = b.local("acc", bias ? bias->load({ci}) : constant(ct, 0.0));
          b.loop("j", s.K, [&](Expr j) {
            b.set(acc, acc.get() + w.load({ci, indexConst(0), j}) *
                                       padded(bi, ci, t + j));
          });
          Expr v = acc.get();
          if (s.Silu)
            v = v * sigmoid(v);
          y.store({bi, ci, t}, v);
        });
      }
      if (c.hasOut(1)) {
        TensorRef st = c.out(1);
        b.loop("p", P, [&](Expr p) { st.store({bi, ci, p}, padded(bi, ci, p + s.L)); });
      }
    });
  });
}

// --- LinearAttention ------------------------------------------------------

enum class LaRule { Linear, Gated, Delta, GatedDelta };

struct LaShape {
  int64_t B, T, Hq, Hkv, Dk, Dv;
  LaRule Rule;
  bool DecayPerKey = false, BetaShared = false;
  double Scale;
  DType StateType;
};

LaShape linearAttentionShape(const ir::Node &n) {
  LaShape s;
  const Shape &q = n.inShape(0), &k = n.inShape(1), &v = n.inShape(2);
  if (q.size() != 3 || k.size() != 3 || v.size() != 3)
    n.error() << "query, key and value must have rank 3 (B, T, H*D)";
  s.Hq = n.requireInt("q_num_heads");
  s.Hkv = n.requireInt("kv_num_heads");
  if (s.Hq < 1 || s.Hkv < 1 || s.Hq % s.Hkv)
    n.error() << "q_num_heads (" << s.Hq << ") must be a positive multiple of "
              << "kv_num_heads (" << s.Hkv << ")";
  s.B = q[0];
  s.T = q[1];
  if (k[0] != s.B || v[0] != s.B || k[1] != s.T || v[1] != s.T)
    n.error() << "query " << shapeToString(q) << ", key " << shapeToString(k)
              << " and value " << shapeToString(v) << " differ in batch or length";
  if (q[2] % s.Hq || k[2] % s.Hkv || v[2] % s.Hkv)
    n.error() << "the last dimensions are not divisible by the head counts";
  s.Dk = q[2] / s.Hq;
  s.Dv = v[2] / s.Hkv;
  if (k[2] != s.Hkv * s.Dk)
    n.error() << "key " << shapeToString(k) << " does not have " << s.Hkv
              << " heads of size " << s.Dk;
  std::string rule = n.attrString("update_rule", "gated_delta");
  if (rule == "linear")
    s.Rule = LaRule::Linear;
  else if (rule == "gated")
    s.Rule = LaRule::Gated;
  else if (rule == "delta")
    s.Rule = LaRule::Delta;
  else if (rule == "gated_delta")
    s.Rule = LaRule::GatedDelta;
  else
    n.error() << "unknown update_rule '" << rule << "'";
  bool gated = s.Rule == LaRule::Gated || s.Rule == LaRule::GatedDelta;
  bool delta = s.Rule == LaRule::Delta || s.Rule == LaRule::GatedDelta;
  if (gated) {
    if (!n.hasInput(4))
      n.error() << "update_rule '" << rule << "' needs the decay input";
    const Shape &d = n.inShape(4);
    if (d.size() != 3 || d[0] != s.B || d[1] != s.T ||
        (d[2] != s.Hkv * s.Dk && d[2] != s.Hkv))
      n.error() << "decay must have shape (" << s.B << ", " << s.T << ", "
                << s.Hkv * s.Dk << " or " << s.Hkv << "), got " << shapeToString(d);
    s.DecayPerKey = d[2] == s.Hkv * s.Dk;
  }
  if (delta) {
    if (!n.hasInput(5))
      n.error() << "update_rule '" << rule << "' needs the beta input";
    const Shape &bt = n.inShape(5);
    if (bt.size() != 3 || bt[0] != s.B || bt[1] != s.T ||
        (bt[2] != s.Hkv && bt[2] != 1))
      n.error() << "beta must have shape (" << s.B << ", " << s.T << ", "
                << s.Hkv << " or 1), got " << shapeToString(bt);
    s.BetaShared = bt[2] == 1 && s.Hkv != 1;
  }
  s.StateType = n.inDType(0);
  if (n.hasInput(3)) {
    if (n.inShape(3) != Shape{s.B, s.Hkv, s.Dk, s.Dv})
      n.error() << "past_state must have shape (" << s.B << ", " << s.Hkv << ", "
                << s.Dk << ", " << s.Dv << "), got " << shapeToString(n.inShape(3));
    s.StateType = n.inDType(3);
  }
  s.Scale = n.attrFloat("scale", 0.0);
  if (s.Scale == 0.0)
    s.Scale = 1.0 / std::sqrt((double)s.Dk);
  return s;
}

void inferLinearAttention(ir::Node &n) {
  for (size_t i = 0; i < 6; ++i)
    if (n.hasInput(i))
      requireFloat(n, i);
  for (size_t i : {1, 2, 4, 5})
    if (n.hasInput(i) && n.inDType(i) != n.inDType(0))
      n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                << " but query has " << dtypeOnnxName(n.inDType(0));
  LaShape s = linearAttentionShape(n);
  n.setOutput(0, n.inDType(0), {s.B, s.T, s.Hq * s.Dv});
  n.setOutput(1, s.StateType, {s.B, s.Hkv, s.Dk, s.Dv});
}

void lowerLinearAttention(LowerCtx &c) {
  LaShape s = linearAttentionShape(c.node());
  TensorRef q = c.in(0), k = c.in(1), v = c.in(2);
  std::optional<TensorRef> past, decay, beta;
  if (c.hasIn(3))
    past = c.in(3);
  bool gated = s.Rule == LaRule::Gated || s.Rule == LaRule::GatedDelta;
  bool delta = s.Rule == LaRule::Delta || s.Rule == LaRule::GatedDelta;
  if (gated)
    decay = c.in(4);
  if (delta)
    beta = c.in(5);
  DType ct = q.computeType();
  TensorRef st = c.scratch("state", ct, {s.Dk, s.Dv});
  KernelBuilder &b = c.b();
  int64_t G = s.Hq / s.Hkv;
  b.loop("b", s.B, [&](Expr bi) {
    b.loop("h", s.Hkv, [&](Expr h) {
      b.loop("i", s.Dk, [&](Expr i) {
        b.loop("j", s.Dv, [&](Expr j) {
          st.store({i, j}, past ? cast(ct, past->load({bi, h, i, j}))
                                : constant(ct, 0.0));
        });
      });
      b.loop("t", s.T, [&](Expr t) {
        auto key = [&](const Expr &i) { return k.load({bi, t, h * s.Dk + i}); };
        auto val = [&](const Expr &j) { return v.load({bi, t, h * s.Dv + j}); };
        if (gated) {
          b.loop("i", s.Dk, [&](Expr i) {
            Expr g = decay->load({bi, t, s.DecayPerKey ? h * s.Dk + i : h});
            Local f = b.local("decay", exp(cast(ct, g)));
            b.loop("j", s.Dv, [&](Expr j) {
              st.store({i, j}, st.load({i, j}) * f.get());
            });
          });
        }
        if (delta) {
          Expr be = cast(ct, beta->load({bi, t, s.BetaShared ? indexConst(0) : h}));
          Local betaL = b.local("beta", be);
          b.loop("j", s.Dv, [&](Expr j) {
            Local r = b.local("retrieved", constant(ct, 0.0));
            b.loop("i", s.Dk, [&](Expr i) {
              b.set(r, r.get() + st.load({i, j}) * key(i));
            });
            Local d = b.local("delta", betaL.get() * (val(j) - r.get()));
            b.loop("i", s.Dk, [&](Expr i) {
              st.store({i, j}, st.load({i, j}) + key(i) * d.get());
            });
          });
        } else {
          b.loop("i", s.Dk, [&](Expr i) {
            Local ki = b.local("k", key(i));
            b.loop("j", s.Dv, [&](Expr j) {
              st.store({i, j}, st.load({i, j}) + ki.get() * val(j));
            });
          });
        }
        if (c.hasOut(0)) {
          TensorRef y = c.out(0);
          b.loop("g", G, [&](Expr g) {
            Expr hq = h * G + g;
            b.loop("j", s.Dv, [&](Expr j) {
              Local acc = b.local("acc", constant(ct, 0.0));
              b.loop("i", s.Dk, [&](Expr i) {
                b.set(acc, acc.get() + q.load({bi, t, hq * s.Dk + i}) *
                                           st.load({i, j}));
              });
              y.store({bi, t, hq * s.Dv + j}, acc.get() * s.Scale);
            });
          });
        }
      });
      if (c.hasOut(1)) {
        TensorRef ps = c.out(1);
        b.loop("i", s.Dk, [&](Expr i) {
          b.loop("j", s.Dv, [&](Expr j) {
            ps.store({bi, h, i, j}, cast(ps.computeType(), st.load({i, j})));
          });
        });
      }
    });
  });
}

} // namespace

MLCC_OPS(LanguageModelOps) {
  R.add({.Name = "SwiGLU", .SinceVersion = 28, .Fusion = FusionClass::Elementwise,
         .Infer = inferSwiGLU, .Lower = lowerSwiGLU});
  R.add({.Name = "CausalConvWithState", .SinceVersion = 27,
         .Fusion = FusionClass::Opaque, .Infer = inferCausalConv,
         .Lower = lowerCausalConv});
  R.add({.Name = "LinearAttention", .SinceVersion = 27,
         .Fusion = FusionClass::Opaque, .Infer = inferLinearAttention,
         .Lower = lowerLinearAttention});
}

} // namespace mlcc::ops
