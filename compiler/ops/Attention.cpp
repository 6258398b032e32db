//===- Attention.cpp - Attention (opset 23/24), RotaryEmbedding -----------===//
//
// Attention: for every batch b, query head h and query position i
//   s_j = scale * q . k_j              (qk_matmul_output mode 0)
//   s_j = softcap * tanh(s_j / softcap) (mode 1; only when softcap > 0)
//   s_j += bias_j                       (mode 2)
//   p = softmax(s)                      (mode 3)
//   y = sum_j p_j v_j
// Keys/values are past_key/past_value followed by K/V (present_* is their
// concatenation). Query head h reads key/value head h / (q_heads /
// kv_heads) (grouped-query attention). The bias is the float attn_mask, or
// -inf where a boolean attn_mask is false, where the mask's (shorter) last
// axis does not reach, past nonpad_kv_seqlen[b], and with is_causal where
// j > i + offset (offset = past length, or nonpad_kv_seqlen[b] - q length,
// else 0). A row with no attendable key (maximum -inf) outputs zeros.
// 3-D Q/K/V are [batch, seq, heads * head_size] (q_num_heads/kv_num_heads).
//
// RotaryEmbedding rotates pairs (x1, x2) of each head by the angle whose
// cos/sin come from the caches (indexed by position_ids when given): the
// two halves of the first rotary_embedding_dim elements, or adjacent
// elements when interleaved.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <cmath>
#include <limits>

namespace mlcc::ops {

using namespace kir;

namespace {

struct AttnShape {
  int64_t B, QH, KVH, Sq, Skv, P, T, HS, VHS;
  bool Q3, K3, V3;
};

AttnShape attnShape(const ir::Node &n) {
  const Shape &q = n.inShape(0), &k = n.inShape(1), &v = n.inShape(2);
  AttnShape s{};
  for (const Shape *t : {&q, &k, &v})
    if (t->size() != 3 && t->size() != 4)
      n.error() << "Q, K and V must be 3-D or 4-D, got " << shapeToString(q)
                << ", " << shapeToString(k) << ", " << shapeToString(v);
  s.Q3 = q.size() == 3;
  s.K3 = k.size() == 3;
  s.V3 = v.size() == 3;
  s.B = q[0];
  if (k[0] != s.B || v[0] != s.B)
    n.error() << "Q, K and V have different batch sizes";
  // A 3-D tensor is [batch, seq, heads * head_size].
  auto heads = [&](const char *attr) {
    int64_t h = n.attrInt(attr, 0);
    if (h < 1)
      n.error() << "3-D inputs need the " << attr << " attribute";
    return h;
  };
  auto split = [&](const Shape &t, int64_t h, const char *what) {
    if (t[2] % h)
      n.error() << what << " hidden size " << t[2] << " is not a multiple of "
                << h << " heads";
    return t[2] / h;
  };
  if (s.Q3) {
    s.QH = heads("q_num_heads");
    s.Sq = q[1];
    s.HS = split(q, s.QH, "Q");
  } else {
    s.QH = q[1];
    s.Sq = q[2];
    s.HS = q[3];
  }
  int64_t kHS;
  if (s.K3) {
    s.KVH = heads("kv_num_heads");
    s.Skv = k[1];
    kHS = split(k, s.KVH, "K");
  } else {
    s.KVH = k[1];
    s.Skv = k[2];
    kHS = k[3];
  }
  if (kHS != s.HS)
    n.error() << "Q and K head sizes differ (" << s.HS << " and " << kHS << ")";
  int64_t vHeads, vSeq;
  if (s.V3) {
    vHeads = heads("kv_num_heads");
    vSeq = v[1];
    s.VHS = split(v, vHeads, "V");
  } else {
    vHeads = v[1];
    vSeq = v[2];
    s.VHS = v[3];
  }
  if (vHeads != s.KVH || vSeq != s.Skv)
    n.error() << "V " << shapeToString(v) << " does not match K " << shapeToString(k);
  if (s.KVH < 1 || s.QH % s.KVH)
    n.error() << "q_num_heads " << s.QH << " is not a multiple of kv_num_heads "
              << s.KVH;
  s.P = 0;
  bool pk = n.hasInput(4), pv = n.hasInput(5);
  if (pk != pv)
    n.error() << "past_key and past_value must be given together";
  if (pk) {
    const Shape &a = n.inShape(4), &b = n.inShape(5);
    if (a.size() != 4 || a[0] != s.B || a[1] != s.KVH || a[3] != s.HS)
      n.error() << "past_key has shape " << shapeToString(a);
    if (b.size() != 4 || b[0] != s.B || b[1] != s.KVH || b[2] != a[2] ||
        b[3] != s.VHS)
      n.error() << "past_value has shape " << shapeToString(b);
    s.P = a[2];
  }
  s.T = s.P + s.Skv;
  if (n.hasInput(3)) {
    const Shape &m = n.inShape(3);
    if (m.empty() || m.size() > 4)
      n.error() << "attn_mask must have rank 1 to 4, got " << shapeToString(m);
    Shape full = {s.B, s.QH, s.Sq, s.T};
    for (size_t d = 0; d + 1 < m.size(); ++d) {
      int64_t e = full[4 - m.size() + d];
      if (m[d] != 1 && m[d] != e)
        n.error() << "attn_mask " << shapeToString(m) << " does not broadcast to "
                  << shapeToString(full);
    }
    if (m.back() > s.T)
      n.error() << "attn_mask's last axis (" << m.back()
                << ") is longer than the total sequence length " << s.T;
  }
  if (n.hasInput(6)) {
    if (n.inDType(6) != DType::I64)
      n.error() << "nonpad_kv_seqlen must be int64";
    if (n.inShape(6) != Shape{s.B})
      n.error() << "nonpad_kv_seqlen has shape " << shapeToString(n.inShape(6))
                << ", expected [" << s.B << "]";
    if (pk)
      n.error() << "nonpad_kv_seqlen cannot be used with past_key/past_value";
  }
  return s;
}

void inferAttention(ir::Node &n) {
  requireFloat(n, 0);
  requireFloat(n, 2);
  if (n.inDType(1) != n.inDType(0))
    n.error() << "Q and K must have the same type";
  if (n.hasInput(4) && n.inDType(4) != n.inDType(0))
    n.error() << "past_key must have the type of K";
  if (n.hasInput(5) && n.inDType(5) != n.inDType(2))
    n.error() << "past_value must have the type of V";
  if (n.hasInput(3)) {
    DType m = n.inDType(3);
    if (m != DType::Bool && m != n.inDType(0))
      n.error(ErrorKind::Unsupported)
          << "attn_mask of type " << dtypeOnnxName(m)
          << " (only bool or the type of Q are supported)";
  }
  int64_t mode = n.attrInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    n.error() << "qk_matmul_output_mode must be 0 to 3, got " << mode;
  AttnShape s = attnShape(n);
  DType t = n.inDType(0);
  n.setOutput(0, t, s.Q3 ? Shape{s.B, s.Sq, s.QH * s.VHS} : Shape{s.B, s.QH, s.Sq, s.VHS});
  n.setOutput(1, t, {s.B, s.KVH, s.T, s.HS});
  n.setOutput(2, n.inDType(2), {s.B, s.KVH, s.T, s.VHS});
  n.setOutput(3, t, {s.B, s.QH, s.Sq, s.T});
}

void lowerAttention(LowerCtx &c) {
  const ir::Node &node = c.node();
  AttnShape s = attnShape(node);
  TensorRef q = c.in(0), k = c.in(1), v = c.in(2), y = c.out(0);
  std::optional<TensorRef> mask, pastK, pastV, nonpad, presK, presV, qkOut;
  if (c.hasIn(3))
    mask = c.in(3);
  if (c.hasIn(4)) {
    pastK = c.in(4);
    pastV = c.in(5);
  }
  if (c.hasIn(6))
    nonpad = c.in(6);
  if (c.hasOut(1))
    presK = c.out(1);
  if (c.hasOut(2))
    presV = c.out(2);
  if (c.hasOut(3))
    qkOut = c.out(3);
  int64_t mode = node.attrInt("qk_matmul_output_mode", 0);
  bool causal = node.attrInt("is_causal", 0) != 0;
  double scale = node.hasAttr("scale") ? node.attrFloat("scale", 1.0)
                                       : 1.0 / std::sqrt((double)s.HS);
  double softcap = node.attrFloat("softcap", 0.0);
  KernelBuilder &b = c.b();
  DType t = q.computeType();
  auto cv = [&](Expr e) { return e->Type == t ? e : cast(t, e); };
  int64_t groups = s.QH / s.KVH;
  Expr negInf = constant(t, -std::numeric_limits<double>::infinity());

  // Element accessors (head-major logical indices).
  auto qAt = [&](Expr bb, Expr h, Expr i, Expr d) {
    return s.Q3 ? q.load({bb, i, h * s.HS + d}) : q.load({bb, h, i, d});
  };
  auto newK = [&](Expr bb, Expr h, Expr j, Expr d) {
    return s.K3 ? k.load({bb, j, h * s.HS + d}) : k.load({bb, h, j, d});
  };
  auto newV = [&](Expr bb, Expr h, Expr j, Expr d) {
    return s.V3 ? v.load({bb, j, h * s.VHS + d}) : v.load({bb, h, j, d});
  };

  // present_key / present_value.
  auto writePresent = [&](std::optional<TensorRef> &pres, std::optional<TensorRef> &past,
                          int64_t hs, bool isKey) {
    if (!pres)
      return;
    b.loops({s.B, s.KVH, s.T, hs}, [&](const std::vector<Expr> &ix) {
      if (s.P == 0) {
        pres->store(ix, isKey ? newK(ix[0], ix[1], ix[2], ix[3])
                              : newV(ix[0], ix[1], ix[2], ix[3]));
        return;
      }
      b.ifThen(lt(ix[2], indexConst(s.P)), [&] { pres->store(ix, past->load(ix)); },
               [&] {
                 Expr j = ix[2] - s.P;
                 pres->store(ix, isKey ? newK(ix[0], ix[1], j, ix[3])
                                       : newV(ix[0], ix[1], j, ix[3]));
               });
    }, "p");
  };
  writePresent(presK, pastK, s.HS, true);
  writePresent(presV, pastV, s.VHS, false);

  if (s.B == 0 || s.QH == 0 || s.Sq == 0)
    return;
  TensorRef scores = c.scratch("scores", t, {std::max<int64_t>(s.T, 1)});

  b.loop("b", s.B, [&](Expr bb) {
    std::optional<Local> valid;
    if (nonpad)
      valid = b.local("valid", toIndex(nonpad->load({bb})));
    b.loop("h", s.QH, [&](Expr h) {
      Expr kh = h / groups;
      b.loop("i", s.Sq, [&](Expr i) {
        Local mx = b.local("mx", negInf);
        b.loop("j", s.T, [&](Expr j) {
          Local dot = b.local("dot", constant(t, 0));
          auto accumulate = [&](const std::function<Expr(Expr)> &kd) {
            b.loop("d", s.HS, [&](Expr d) {
              b.set(dot, dot.get() + cv(qAt(bb, h, i, d)) * cv(kd(d)));
            });
          };
          if (s.P == 0) {
            accumulate([&](Expr d) { return newK(bb, kh, j, d); });
          } else {
            b.ifThen(lt(j, indexConst(s.P)),
                     [&] { accumulate([&](Expr d) { return pastK->load({bb, kh, j, d}); }); },
                     [&] { accumulate([&](Expr d) { return newK(bb, kh, j - s.P, d); }); });
          }
          Local sc = b.local("s", dot.get() * scale);
          std::vector<Expr> qi = {bb, h, i, j};
          if (qkOut && mode == 0)
            qkOut->store(qi, sc.get());
          if (softcap > 0)
            b.set(sc, tanh(sc.get() / softcap) * softcap);
          if (qkOut && mode == 1)
            qkOut->store(qi, sc.get());
          // Bias.
          Expr allowed = boolConst(true);
          if (mask) {
            const Shape &ms = mask->shape();
            std::vector<Expr> full = {bb, h, i, j};
            std::vector<Expr> mi;
            for (size_t d = 0; d < ms.size(); ++d) {
              size_t fd = 4 - ms.size() + d;
              mi.push_back(ms[d] == 1 && fd != 3 ? indexConst(0) : full[fd]);
            }
            int64_t mlen = ms.back();
            Expr inMask = lt(j, indexConst(mlen));
            // Clamp the index so the load stays in range where it is unused.
            mi.back() = min(j, indexConst(std::max<int64_t>(mlen - 1, 0)));
            if (mask->dtype() == DType::Bool) {
              Expr mv = mask->load(mi);
              allowed = land(allowed, land(inMask, mv));
            } else {
              b.set(sc, sc.get() + select(inMask, cv(mask->load(mi)), negInf));
            }
          }
          if (nonpad)
            allowed = land(allowed, lt(j, valid->get()));
          if (causal) {
            Expr offset = nonpad ? valid->get() - s.Sq : indexConst(s.P);
            allowed = land(allowed, le(j, i + offset));
          }
          if (!allowed->isConst())
            b.set(sc, select(allowed, sc.get(), negInf));
          if (qkOut && mode == 2)
            qkOut->store(qi, sc.get());
          scores.store({j}, sc.get());
          b.set(mx, max(mx.get(), sc.get()));
        });
        // Softmax; a row without any attendable key gives zeros.
        Local sum = b.local("sum", constant(t, 0));
        Local masked = b.local("masked", eq(mx.get(), negInf));
        b.loop("j", s.T, [&](Expr j) {
          Local e = b.local("e", select(masked.get(), constant(t, 0),
                                        exp(scores.load({j}) - mx.get())));
          scores.store({j}, e.get());
          b.set(sum, sum.get() + e.get());
        });
        Local inv = b.local("inv", select(masked.get(), constant(t, 0), 1.0 / sum.get()));
        if (qkOut && mode == 3)
          b.loop("j", s.T, [&](Expr j) {
            qkOut->store({bb, h, i, j}, scores.load({j}) * inv.get());
          });
        b.loop("d", s.VHS, [&](Expr d) {
          Local acc = b.local("acc", constant(t, 0));
          auto accumulate = [&](Expr j0, Expr j1, const std::function<Expr(Expr)> &vj) {
            b.loop("j", j0, j1, [&](Expr j) {
              b.set(acc, acc.get() + scores.load({j}) * cv(vj(j)));
            });
          };
          if (s.P > 0)
            accumulate(indexConst(0), indexConst(s.P),
                       [&](Expr j) { return pastV->load({bb, kh, j, d}); });
          accumulate(indexConst(s.P), indexConst(s.T),
                     [&](Expr j) { return newV(bb, kh, j - s.P, d); });
          Expr r = acc.get() * inv.get();
          if (s.Q3)
            y.store({bb, i, h * s.VHS + d}, r);
          else
            y.store({bb, h, i, d}, r);
        });
      });
    });
  });
}

// --- RotaryEmbedding ---------------------------------------------------------------

struct RopeShape {
  int64_t B, S, NH, HS, RD;
  bool X3;
};

RopeShape ropeShape(const ir::Node &n) {
  const Shape &x = n.inShape(0);
  RopeShape s{};
  if (x.size() == 4) {
    s.X3 = false;
    s.B = x[0];
    s.NH = x[1];
    s.S = x[2];
    s.HS = x[3];
  } else if (x.size() == 3) {
    s.X3 = true;
    s.B = x[0];
    s.S = x[1];
    s.NH = n.attrInt("num_heads", 0);
    if (s.NH < 1 || x[2] % s.NH)
      n.error() << "3-D input needs num_heads dividing the hidden size " << x[2];
    s.HS = x[2] / s.NH;
  } else {
    n.error() << "X must be 3-D or 4-D, got " << shapeToString(x);
  }
  s.RD = n.attrInt("rotary_embedding_dim", 0);
  if (s.RD == 0)
    s.RD = s.HS;
  if (s.RD < 0 || s.RD > s.HS || s.RD % 2)
    n.error() << "rotary_embedding_dim " << s.RD << " must be even and at most "
              << s.HS;
  const Shape &cs = n.inShape(1), &ss = n.inShape(2);
  if (cs != ss)
    n.error() << "cos_cache and sin_cache shapes differ";
  if (n.hasInput(3)) {
    if (cs.size() != 2 || cs[1] != s.RD / 2)
      n.error() << "caches must be [max_position, " << s.RD / 2 << "], got "
                << shapeToString(cs);
    if (n.inShape(3) != Shape{s.B, s.S})
      n.error() << "position_ids has shape " << shapeToString(n.inShape(3))
                << ", expected [" << s.B << ", " << s.S << "]";
  } else if (cs != Shape{s.B, s.S, s.RD / 2}) {
    n.error() << "caches must be [" << s.B << ", " << s.S << ", " << s.RD / 2
              << "] without position_ids, got " << shapeToString(cs);
  }
  return s;
}

void inferRope(ir::Node &n) {
  requireFloat(n, 0);
  if (n.inDType(1) != n.inDType(0) || n.inDType(2) != n.inDType(0))
    n.error() << "cos_cache and sin_cache must have the type of X";
  if (n.hasInput(3))
    requireDType(n, 3, {DType::I64, DType::I32});
  ropeShape(n);
  n.setOutput(0, n.inType(0));
}

void lowerRope(LowerCtx &c) {
  const ir::Node &node = c.node();
  RopeShape s = ropeShape(node);
  TensorRef x = c.in(0), cosC = c.in(1), sinC = c.in(2), y = c.out(0);
  std::optional<TensorRef> pos;
  if (c.hasIn(3))
    pos = c.in(3);
  bool interleaved = node.attrInt("interleaved", 0) != 0;
  KernelBuilder &b = c.b();
  int64_t half = s.RD / 2;
  if (x.numel() == 0)
    return;
  auto xi = [&](Expr bb, Expr h, Expr sq, Expr d) {
    return s.X3 ? std::vector<Expr>{bb, sq, h * s.HS + d}
                : std::vector<Expr>{bb, h, sq, d};
  };
  b.loop("b", s.B, [&](Expr bb) {
    b.loop("s", s.S, [&](Expr sq) {
      std::optional<Local> p;
      if (pos)
        p = b.local("pos", clamp(toIndex(pos->load({bb, sq})), indexConst(0),
                                 indexConst(cosC.dim(0) - 1)));
      b.loop("h", s.NH, [&](Expr h) {
        b.loop("k", half, [&](Expr k) {
          Expr cv = pos ? cosC.load({p->get(), k}) : cosC.load({bb, sq, k});
          Expr sv = pos ? sinC.load({p->get(), k}) : sinC.load({bb, sq, k});
          Local co = b.local("cos", cv), si = b.local("sin", sv);
          Expr i1 = interleaved ? k * 2 : k;
          Expr i2 = interleaved ? k * 2 + 1 : k + half;
          Local x1 = b.local("x1", x.load(xi(bb, h, sq, i1)));
          Local x2 = b.local("x2", x.load(xi(bb, h, sq, i2)));
          y.store(xi(bb, h, sq, i1), co.get() * x1.get() - si.get() * x2.get());
          y.store(xi(bb, h, sq, i2), si.get() * x1.get() + co.get() * x2.get());
        });
        if (s.RD < s.HS)
          b.loop("d", indexConst(s.RD), indexConst(s.HS), [&](Expr d) {
            y.store(xi(bb, h, sq, d), x.load(xi(bb, h, sq, d)));
          });
      });
    });
  });
}

} // namespace

MLCC_OPS(Attention) {
  R.add({.Name = "Attention", .SinceVersion = 23, .Fusion = FusionClass::Opaque,
         .Infer = inferAttention, .Lower = lowerAttention});
  R.add({.Name = "RotaryEmbedding", .SinceVersion = 23,
         .Fusion = FusionClass::Opaque, .Infer = inferRope, .Lower = lowerRope});
}

} // namespace mlcc::ops
