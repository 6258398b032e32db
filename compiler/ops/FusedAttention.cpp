//===- FusedAttention.cpp - mlcc.Attention: attention in one kernel -------===//
//
// mlcc.Attention is what fuse-attention (compiler/passes/FuseAttention.cpp)
// makes of the chain MatMul(Q, K^T) -> elementwise steps -> Softmax over the
// keys -> MatMul(., V), as exporters write it:
//
//   inputs   0 Q, 1 K, 2 V as stored (before the Transposes that split the
//            heads), 3... the steps' operands in order
//   q_perm, k_perm, v_perm
//            the logical operands are Transpose(view, perm): Q [batch...,
//            Lq, dk], K [batch..., Lk, dk] (the keys as rows), V [batch...,
//            Lk, dv]; a lower rank broadcasts its batch axes like MatMul
//   q_tail, k_tail, v_tail, q_offset, k_offset, v_offset
//            the view: the input itself, or with a tail (the heads split
//            from a projection: [.., W] read as [.., tail...]) its last
//            axis from the offset on split into the tail's axes, so that a
//            Split of a fused QKV projection and the Reshape of each part
//            are read in place
//   out_perm the output is Transpose([batch..., Lq, dv], out_perm)
//   steps    one code per step applied to each score s, in order, with its
//            operand(s) x broadcast to the scores: 0 s + x, 1 x + s, 2 s - x,
//            3 x - s, 4 s * x, 5 x * s, 6 s / x, 7 x / s, 8 Where(c, s, x),
//            9 Where(c, x, s) (Where reads two operands: c then x), 10
//            causal: s where key j <= query i + causal_offset, else -inf
//            (no operand), 11 softcap * tanh(s / softcap) (no operand)
//   k_group, v_group
//            grouped-query attention: the operand's head axis (the batch
//            axis before its rows) holds one head per `group` query heads,
//            read at h / group
//   zero_empty_rows
//            1: a row whose every score is -inf (or that has no key) gives
//            zeros, as the ONNX Attention op defines it (a Softmax gives
//            NaN there)
//
// With the plan's AttentionBlocks (KernelPlan::Attention) the kernel runs
// each block of query rows against the keys block by block with a running
// maximum m and sum l per row (online softmax): a block's scores S = Q K^T
// go through the steps into a stack buffer, m' = max(m, max S), P =
// exp(S - m'), l = l exp(m - m') + sum P, O = O exp(m - m') + P V, and
// finally y = O / l. Both products are register-tiled contractions
// (lowerTiledContraction): with KeysAsRows S^T = K Q^T, the keys as rows
// read in place and the query block transposed on the stack once (its rows
// past the last zero), stored transposed; else (fewer query rows than a
// vector: a decode step) S = Q K^T with each key block transposed on the
// stack; P V with the block's values copied to the stack, zero past the
// last key (a key past it scores -inf). The score
// matrix is never stored: scratch is a few blocks, not Lq x Lk. Without a
// plan (the `mlcc check` reference, a target without room on its stack) it
// is a loop nest over the query rows with one row of scores in the arena.
//
// Lq and Lk may follow bounded dimensions: the loops run to their extents
// when the kernel runs.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"

#include <algorithm>
#include <limits>

namespace mlcc::ops {

using namespace kir;

namespace {

/// How input i (0 Q, 1 K, 2 V) is read: see the file comment.
struct View {
  std::vector<int64_t> Perm, Tail;
  int64_t Offset = 0;
  int64_t Group = 1; ///< query heads per head of this operand
  size_t Lead = 0; ///< with a tail, the input's axes before its last
  Shape Logical;
};

struct Geometry {
  View QV, KV, VV;
  std::vector<int64_t> OutPerm, Steps;
  int64_t CausalOffset = 0;
  double Softcap = 0;
  bool ZeroEmptyRows = false;
  Shape Q, K, V; ///< logical shapes
  Shape Batch;   ///< the output's batch axes (broadcast)
  int64_t Lq = 0, Lk = 0, Dk = 0, Dv = 0;
};

Shape permuted(const Shape &s, const std::vector<int64_t> &perm) {
  Shape out;
  for (int64_t p : perm)
    out.push_back(s[(size_t)p]);
  return out;
}

std::vector<int64_t> checkedPerm(const ir::Node &n, const char *name, size_t rank) {
  std::vector<int64_t> p = n.attrInts(name);
  std::vector<bool> seen(rank, false);
  if (p.size() != rank)
    n.error(ErrorKind::Internal) << "internal error: " << name << " of " << p.size()
                                 << " axes for a rank-" << rank << " operand";
  for (int64_t a : p) {
    if (a < 0 || a >= (int64_t)rank || seen[(size_t)a])
      n.error(ErrorKind::Internal) << "internal error: " << name << " is not a permutation";
    seen[(size_t)a] = true;
  }
  return p;
}

using attention::operandsOf;

View viewOf(const ir::Node &n, size_t i) {
  static const char *names[] = {"q", "k", "v"};
  const std::string x = names[i];
  View v;
  Shape shape = n.inShape(i);
  v.Tail = n.attrInts(x + "_tail");
  v.Offset = n.attrInt(x + "_offset", 0);
  if (!v.Tail.empty()) {
    int64_t width = 1;
    for (int64_t t : v.Tail)
      width *= t;
    if (shape.empty() || v.Offset < 0 || v.Offset + width > shape.back())
      n.error(ErrorKind::Internal) << "internal error: " << x << "_tail does not fit input " << i;
    v.Lead = shape.size() - 1;
    shape.pop_back();
    shape.insert(shape.end(), v.Tail.begin(), v.Tail.end());
  }
  v.Perm = checkedPerm(n, (x + "_perm").c_str(), shape.size());
  v.Logical = permuted(shape, v.Perm);
  v.Group = n.attrInt(x + "_group", 1);
  if (v.Group < 1 || (v.Group > 1 && v.Logical.size() < 3))
    n.error(ErrorKind::Internal) << "internal error: " << x << "_group " << v.Group;
  if (v.Group > 1) // as many heads as the query's, each read at h / Group
    v.Logical[v.Logical.size() - 3] *= v.Group;
  return v;
}

Geometry geometry(const ir::Node &n) {
  Geometry g;
  g.QV = viewOf(n, 0);
  g.KV = viewOf(n, 1);
  g.VV = viewOf(n, 2);
  g.Steps = n.attrInts("steps");
  g.CausalOffset = n.attrInt("causal_offset", 0);
  g.Softcap = n.attrFloat("softcap", 0.0);
  g.ZeroEmptyRows = n.attrInt("zero_empty_rows", 0) != 0;
  g.Q = g.QV.Logical;
  g.K = g.KV.Logical;
  g.V = g.VV.Logical;
  if (g.Q.size() < 2 || g.K.size() < 2 || g.V.size() < 2)
    n.error(ErrorKind::Internal) << "internal error: attention operands below rank 2";
  g.Lq = g.Q[g.Q.size() - 2];
  g.Dk = g.Q.back();
  g.Lk = g.K[g.K.size() - 2];
  g.Dv = g.V.back();
  if (g.K.back() != g.Dk || g.V[g.V.size() - 2] != g.Lk)
    n.error(ErrorKind::Internal) << "internal error: attention operands "
                                 << shapeToString(g.Q) << ", " << shapeToString(g.K) << ", "
                                 << shapeToString(g.V) << " do not agree";
  Shape qb(g.Q.begin(), g.Q.end() - 2), kb(g.K.begin(), g.K.end() - 2),
      vb(g.V.begin(), g.V.end() - 2);
  g.Batch = broadcastShapes(n, {qb, kb, vb});
  size_t operands = 0;
  for (int64_t s : g.Steps) {
    if (s < 0 || s > attention::Softcap || (s == attention::Softcap && !(g.Softcap > 0)))
      n.error(ErrorKind::Internal) << "internal error: attention step " << s;
    operands += operandsOf(s);
  }
  if (n.numInputs() != 3 + operands)
    n.error(ErrorKind::Internal) << "internal error: attention with " << n.numInputs()
                                 << " inputs for " << operands << " step operands";
  Shape out = g.Batch;
  out.push_back(g.Lq);
  out.push_back(g.Dv);
  g.OutPerm = checkedPerm(n, "out_perm", out.size());
  return g;
}

void inferAttention(ir::Node &n) {
  for (size_t i = 0; i < 3; ++i)
    requireDType(n, i, {DType::F32});
  Geometry g = geometry(n);
  Shape out = g.Batch;
  out.push_back(g.Lq);
  out.push_back(g.Dv);
  n.setOutput(0, DType::F32, permuted(out, g.OutPerm));
}

/// The kernel's view of the node: logical loads, extents and the steps.
struct Operands {
  const Geometry &G;
  TensorRef Q, K, V, Y;
  std::vector<TensorRef> Steps;
  Expr LqAt, LkAt;
  std::vector<Expr> BatchAt; ///< the output's batch extents

  Operands(LowerCtx &c, const Geometry &g) : G(g) {
    Q = c.in(0);
    K = c.in(1);
    V = c.in(2);
    Y = c.out(0);
    for (size_t i = 3; i < c.node().numInputs(); ++i)
      Steps.push_back(c.in(i));
    LqAt = extent(Q, g.QV, g.Q.size() - 2);
    LkAt = extent(K, g.KV, g.K.size() - 2);
    // The batch axes' extents from the output (the broadcast shape).
    std::vector<Expr> out(g.Batch.size() + 2);
    for (size_t a = 0; a < g.OutPerm.size(); ++a)
      out[(size_t)g.OutPerm[a]] = Y.extent((int64_t)a);
    BatchAt.assign(out.begin(), out.begin() + (long)g.Batch.size());
  }

  /// The run-time extent of logical axis `axis` of an operand stored as
  /// `t` and read through `view` (a tail axis is fixed).
  static Expr extent(const TensorRef &t, const View &view, size_t axis) {
    const size_t a = (size_t)view.Perm[axis];
    if (!view.Tail.empty() && a >= view.Lead)
      return indexConst(view.Tail[a - view.Lead]);
    return t.extent((int64_t)a);
  }
  /// Element (batch bi, row, col) of a logical operand stored as `t` and
  /// read through `view`.
  static Expr at(const TensorRef &t, const View &view, const std::vector<Expr> &bi,
                 const Expr &row, const Expr &col) {
    const size_t rank = view.Logical.size();
    std::vector<Expr> idx(rank);
    const size_t lead = bi.size() - (rank - 2);
    for (size_t a = 0; a + 2 < rank; ++a)
      idx[a] = view.Logical[a] == 1 ? indexConst(0)
               : view.Group > 1 && a + 3 == rank ? bi[lead + a] / view.Group
                                                 : bi[lead + a];
    idx[rank - 2] = row;
    idx[rank - 1] = col;
    std::vector<Expr> src(rank);
    for (size_t a = 0; a < rank; ++a)
      src[(size_t)view.Perm[a]] = idx[a];
    if (!view.Tail.empty()) {
      // The tail's axes back into one position of the input's last axis.
      Expr last = indexConst(view.Offset), scale = indexConst(1);
      for (size_t a = rank; a-- > view.Lead;) {
        last = last + src[a] * scale;
        scale = scale * view.Tail[a - view.Lead];
      }
      src.resize(view.Lead);
      src.push_back(last);
    }
    return t.load(src);
  }
  /// Whether a logical operand's rows (its last axis) are contiguous f32
  /// elements of `t`'s buffer, so that a vector load reads them in place:
  /// the logical last axis is the stored last one (or the last axis of the
  /// tail), and an element is a plain load.
  bool rowsContiguous(const TensorRef &t, const View &view) const {
    if (view.Perm.empty() || view.Perm.back() != (int64_t)view.Perm.size() - 1 ||
        t.dtype() != DType::F32)
      return false;
    std::vector<Expr> bi(BatchAt.size(), indexConst(0));
    Expr e = at(t, view, bi, indexConst(0), indexConst(0));
    return e->Kind == ExprKind::Load && e->Buf == t.buffer();
  }
  Expr q(const std::vector<Expr> &bi, const Expr &i, const Expr &c) const {
    return at(Q, G.QV, bi, i, c);
  }
  Expr k(const std::vector<Expr> &bi, const Expr &j, const Expr &c) const {
    return at(K, G.KV, bi, j, c);
  }
  Expr v(const std::vector<Expr> &bi, const Expr &j, const Expr &c) const {
    return at(V, G.VV, bi, j, c);
  }
  void store(const std::vector<Expr> &bi, const Expr &i, const Expr &c, const Expr &value) const {
    std::vector<Expr> logical = bi;
    logical.push_back(i);
    logical.push_back(c);
    std::vector<Expr> idx(logical.size());
    for (size_t a = 0; a < idx.size(); ++a)
      idx[a] = logical[(size_t)G.OutPerm[a]];
    Y.store(idx, value);
  }
  /// 1 / `sum` of a row's exponentials: 0 when there is no key, and with
  /// ZeroEmptyRows when every score was -inf (the sum is 0).
  Expr reciprocal(const Expr &sum) const {
    Expr zero = constant(DType::F32, 0);
    Expr r = select(gt(LkAt, indexConst(0)), 1.0 / sum, zero);
    return G.ZeroEmptyRows ? select(gt(sum, zero), r, zero) : r;
  }
  /// Score `s` of (bi, i, j) through the steps.
  Expr steps(Expr s, const std::vector<Expr> &bi, const Expr &i, const Expr &j) const {
    std::vector<Expr> full = bi;
    full.push_back(i);
    full.push_back(j);
    size_t next = 0;
    for (int64_t code : G.Steps) {
      if (code == attention::Causal) {
        s = select(le(j, i + G.CausalOffset), s,
                   constant(DType::F32, -std::numeric_limits<double>::infinity()));
        continue;
      }
      if (code == attention::Softcap) {
        s = tanh(s / G.Softcap) * G.Softcap;
        continue;
      }
      Expr x = Steps[next].loadBroadcast(full);
      Expr cond;
      if (code >= attention::WhereKeep) {
        cond = x;
        x = Steps[next + 1].loadBroadcast(full);
      }
      next += operandsOf(code);
      switch (code) {
      case attention::Add: s = s + x; break;
      case attention::Add + 1: s = x + s; break;
      case attention::Sub: s = s - x; break;
      case attention::Sub + 1: s = x - s; break;
      case attention::Mul: s = s * x; break;
      case attention::Mul + 1: s = x * s; break;
      case attention::Div: s = s / x; break;
      case attention::Div + 1: s = x / s; break;
      case attention::WhereKeep: s = select(cond, s, x); break;
      default: s = select(cond, x, s); break;
      }
    }
    return s;
  }
};

/// The running maximum's start: the lowest finite float, not -inf, so that
/// a score of -inf (masked) gives e^(-inf - m) = 0, not NaN.
Expr lowestFinite() {
  return constant(DType::F32, -(double)std::numeric_limits<float>::max());
}

/// The batch multi-index of flat batch number `flat`.
std::vector<Expr> batchIndex(const std::vector<Expr> &extents, Expr flat) {
  std::vector<Expr> bi(extents.size());
  for (size_t a = extents.size(); a-- > 0;) {
    bi[a] = a == 0 ? flat : flat % extents[a];
    flat = flat / extents[a];
  }
  return bi;
}

Expr product(const std::vector<Expr> &extents) {
  Expr p = indexConst(1);
  for (const Expr &e : extents)
    p = p * e;
  return p;
}

/// Without a plan: each query row's scores in one arena row, a softmax and
/// the weighted sum of the values.
void lowerRows(LowerCtx &c, const Operands &o) {
  KernelBuilder &b = c.b();
  const Geometry &g = o.G;
  TensorRef row = c.scratch("scores", DType::F32, {std::max<int64_t>(g.Lk, 1)});
  const kir::Buffer &s = row.buffer();
  std::vector<Expr> loops = o.BatchAt;
  loops.push_back(o.LqAt);
  b.loops(loops, [&](const std::vector<Expr> &idx) {
    std::vector<Expr> bi(idx.begin(), idx.end() - 1);
    Expr i = idx.back();
    Local mx = b.local("mx", lowestFinite());
    b.loopTo("j", o.LkAt, [&](Expr j) {
      Local acc = b.local("acc", constant(DType::F32, 0));
      b.loop("c", g.Dk, [&](Expr cc) { b.set(acc, acc.get() + o.q(bi, i, cc) * o.k(bi, j, cc)); });
      Expr v = o.steps(acc.get(), bi, i, j);
      b.store(s, j, v);
      b.set(mx, max(mx.get(), load(s, j)));
    });
    Local sum = b.local("sum", constant(DType::F32, 0));
    b.loopTo("j", o.LkAt, [&](Expr j) {
      b.store(s, j, exp(load(s, j) - mx.get()));
      b.set(sum, sum.get() + load(s, j));
    });
    Local rcp = b.local("rcp", o.reciprocal(sum.get()));
    b.loop("c", g.Dv, [&](Expr cc) {
      Local acc = b.local("acc", constant(DType::F32, 0));
      b.loopTo("j", o.LkAt, [&](Expr j) {
        b.set(acc, acc.get() + load(s, j) * rcp.get() * o.v(bi, j, cc));
      });
      o.store(bi, i, cc, acc.get());
    });
  }, "b");
}

/// The running maximum of the scores: the larger of `m` and the score `x`,
/// `m` when x is NaN (one max instruction where the IR's Max, which
/// propagates NaN, takes three; a NaN score still makes its row NaN,
/// through exp(x - m) and the sum).
Expr runningMax(const Expr &m, const Expr &x) { return select(gt(x, m), x, m); }

/// One form of the blocked kernel: see the file comment. `keysAsRows`: the
/// score tile `scores` has the keys as rows; else the query rows (all of
/// them in one block of `queryBlock`), the keys in blocks of `keyBlock`.
void lowerBlocks(LowerCtx &c, const Operands &o, const ir::KernelPlan::AttentionBlocks &p,
                 bool keysAsRows, int64_t queryBlock, int64_t keyBlock,
                 const ir::KernelPlan::Tile &scoreTile, const ir::KernelPlan::Tile &valueTile,
                 const Expr &qFirst, const Expr &qCount) {
  KernelBuilder &b = c.b();
  const Geometry &g = o.G;
  const int64_t QB = queryBlock, KB = keyBlock, dk = g.Dk, dv = g.Dv;
  const int64_t SL = scoreTile.Lanes, VL = valueTile.Lanes;
  const Expr zero = constant(DType::F32, 0);
  const Expr blocks = (qCount + (QB - 1)) / QB;
  b.loopTo("bq", product(o.BatchAt) * blocks, [&](Expr bq) {
    // The block's batch index and first row, computed once (not in the
    // loops below, where a division might not be hoisted).
    std::vector<Expr> bi;
    for (const Expr &e : batchIndex(o.BatchAt, bq / blocks))
      bi.push_back(b.local("b", e).get());
    Expr q0 = b.local("q0", qFirst + (bq % blocks) * QB).get();
    Local rowsAt = b.local("rows", min(indexConst(QB), qFirst + qCount - q0));
    Local m = b.local("m", DType::F32, QB), l = b.local("l", DType::F32, QB),
          alpha = b.local("alpha", DType::F32, QB);
    Local acc = b.local("o", DType::F32, QB * dv), s = b.local("s", DType::F32, QB * KB);
    // V read in place by P V when its rows are contiguous f32 (the value
    // width is the stored last axis: a head of a projection), else each
    // key block's values copied to the stack.
    const bool vInPlace = o.rowsContiguous(o.V, g.VV);
    Local vb = b.local("vb", DType::F32, vInPlace ? 1 : KB * dv);
    // Score (r, j) of the block: s[j][r] with keys as rows (the score
    // tile's layout, query rows contiguous), else s[r][j].
    auto at = [&](const Expr &r, const Expr &j) { return keysAsRows ? j * QB + r : r * KB + j; };
    b.loop("r", QB, [&](Expr r) {
      b.set(m, r, lowestFinite());
      b.set(l, r, zero);
    });
    b.loopTo("r", rowsAt.get(), [&](Expr r) {
      b.loop("c", dv, [&](Expr cc) { b.set(acc, r * dv + cc, zero); });
    });
    // dst[c][r] = src(r, c) for the rows r below `count` (dst's rows `pitch`
    // apart): in groups of SL rows, SL stores SL elements apart along c,
    // which the vectorizer keeps as one group (the emitters transpose it in
    // registers: rows of the source in, rows of dst out) rather than a
    // scatter per vector; the rows past the last whole group one by one.
    auto transposed = [&](const Local &dst, int64_t pitch, const Expr &count,
                          const std::function<Expr(const Expr &, const Expr &)> &src) {
      if (SL > 1)
        b.loopTo("rg", count / SL, [&](Expr rg) {
          b.loop("c", dk, [&](Expr cc) {
            for (int64_t i = 0; i < SL; ++i)
              b.set(dst, cc * pitch + rg * SL + i, src(rg * SL + i, cc));
          });
        });
      b.loop("r", SL > 1 ? count / SL * SL : indexConst(0), count, [&](Expr r) {
        b.loop("c", dk, [&](Expr cc) { b.set(dst, cc * pitch + r, src(r, cc)); });
      });
    };
    // Keys as rows: the block's queries transposed (qt[c][r]), zero past
    // the last row, read as the columns of every key block's S^T.
    Local qt = keysAsRows ? b.local("qt", DType::F32, dk * QB) : Local{};
    if (keysAsRows) {
      b.loop("c", dk, [&](Expr cc) {
        b.loop("r", rowsAt.get(), indexConst(QB), [&](Expr r) { b.set(qt, cc * QB + r, zero); });
      });
      transposed(qt, QB, rowsAt.get(),
                 [&](const Expr &r, const Expr &cc) { return o.q(bi, q0 + r, cc); });
      // The scores of the rows past the last: zeros, which the softmax
      // passes (over all QB rows) keep finite; the score tiles store only
      // the rows that exist.
      b.loop("j", KB, [&](Expr j) {
        b.loop("r", rowsAt.get(), indexConst(QB), [&](Expr r) { b.set(s, at(r, j), zero); });
      });
    }
    Local kt = keysAsRows ? Local{} : b.local("kt", DType::F32, dk * KB);
    // With a causal step, the keys past the block's last row (+ offset)
    // are hidden from every row: the blocks stop there.
    Expr keys = o.LkAt;
    if (std::count(g.Steps.begin(), g.Steps.end(), attention::Causal))
      keys = b.local("keys", max(indexConst(0), min(o.LkAt, q0 + rowsAt.get() + g.CausalOffset)))
                 .get();
    b.loopTo("kb", (keys + (KB - 1)) / KB, [&](Expr kb) {
      Expr k0 = kb * KB;
      Local nk = b.local("nk", min(indexConst(KB), keys - k0));
      TiledContraction scores;
      scores.Reduce = {dk};
      scores.Tile = scoreTile;
      if (keysAsRows) {
        // S^T = K Q^T over the block's keys (its rows, read in place),
        // stored as s[j][r] through the steps.
        scores.Rows = KB;
        scores.RowsAt = nk.get();
        // The last key block's rows in whole tiles, the last clamped (a few
        // keys computed again), not in smaller tiles of their own.
        scores.ClampAll = true;
        scores.Cols = QB;
        scores.ColsAt = rowsAt.get();
        scores.LoadA = [&](const Expr &j, const std::vector<Expr> &k) {
          return o.k(bi, k0 + j, k[0]);
        };
        scores.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
          return vload(qt.Buf, k[0] * QB + col0, (int)SL);
        };
        scores.Store = [&](const Expr &j, const Expr &r, const Expr &sum) {
          b.set(s, at(r, j), o.steps(sum, bi, q0 + r, k0 + j));
        };
      } else {
        // S = Q K^T with the block's keys transposed (kt[c][j]) as the
        // columns. Past the last key, up to the end of its panel (the
        // columns the score tiles read): zeros, in whole vectors from the
        // last key's vector on, which the keys then overwrite.
        const int64_t panel = scoreTile.Panel;
        MLCC_CHECK(KB % panel == 0, "attention key block " << KB << " for panels of " << panel);
        Expr z0 = nk.get() / SL * SL;
        Local vectors = b.local("zv", ((nk.get() + (panel - 1)) / panel * panel - z0) / SL);
        b.loop("c", dk, [&](Expr cc) {
          b.loopTo("v", vectors.get(), [&](Expr v) {
            b.store(kt.Buf, cc * KB + z0 + v * SL, broadcast(zero, (int)SL));
          });
        });
        transposed(kt, KB, nk.get(),
                   [&](const Expr &j, const Expr &cc) { return o.k(bi, k0 + j, cc); });
        scores.Rows = QB;
        scores.RowsAt = rowsAt.get();
        scores.Cols = KB;
        scores.ColsAt = nk.get();
        scores.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
          return o.q(bi, q0 + r, k[0]);
        };
        scores.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
          return vload(kt.Buf, k[0] * KB + col0, (int)SL);
        };
        scores.Store = [&](const Expr &r, const Expr &j, const Expr &sum) {
          b.set(s, at(r, j), o.steps(sum, bi, q0 + r, k0 + j));
        };
      }
      lowerTiledContraction(c, scores);
      // The block's values; P V reads the keys up to the last only.
      if (!vInPlace)
        b.loopTo("j", nk.get(), [&](Expr j) {
          b.loop("c", dv, [&](Expr cc) { b.set(vb, j * dv + cc, o.v(bi, k0 + j, cc)); });
        });
      // The running maximum and sum; S becomes P (the scores of the keys
      // up to the last).
      if (keysAsRows) {
        // Along the query rows: every row of the block at once, no sum
        // across lanes.
        // Over all QB rows (a constant count: the vectors of mx and sum stay
        // in registers along j); the rows past the block's last hold finite
        // values (zeros, then their exponentials), unused.
        // A block of fewer rows (the last, when the length is not a
        // multiple of QB) runs them over the vectors that hold its rows.
        Local mx = b.local("mx", DType::F32, QB), sum = b.local("sum", DType::F32, QB);
        auto passes = [&](const Expr &count) {
          b.loopTo("r", count, [&](Expr r) {
            b.set(mx, r, m.get(r));
            b.set(sum, r, zero);
          });
          b.loopTo("j", nk.get(), [&](Expr j) {
            b.loopTo("r", count,
                     [&](Expr r) { b.set(mx, r, runningMax(mx.get(r), s.get(at(r, j)))); });
          });
          b.loopTo("j", nk.get(), [&](Expr j) {
            b.loopTo("r", count, [&](Expr r) {
              b.set(s, at(r, j), exp(s.get(at(r, j)) - mx.get(r)));
              b.set(sum, r, sum.get(r) + s.get(at(r, j)));
            });
          });
        };
        const bool whole = qCount->isConst() && qCount->IntValue % QB == 0;
        if (whole || SL <= 1)
          passes(indexConst(QB));
        else
          b.ifThen(eq(rowsAt.get(), indexConst(QB)), [&] { passes(indexConst(QB)); },
                   [&] { passes(min(indexConst(QB), (rowsAt.get() + (SL - 1)) / SL * SL)); });
        b.loopTo("r", rowsAt.get(), [&](Expr r) {
          b.set(alpha, r, exp(m.get(r) - mx.get(r)));
          b.set(l, r, l.get(r) * alpha.get(r) + sum.get(r));
          b.set(m, r, mx.get(r));
        });
      } else {
        b.loopTo("r", rowsAt.get(), [&](Expr r) {
          Local mx = b.local("mx", m.get(r));
          b.loopTo("j", nk.get(), [&](Expr j) { b.set(mx, runningMax(mx.get(), s.get(at(r, j)))); });
          Local sum = b.local("sum", zero);
          b.loopTo("j", nk.get(), [&](Expr j) {
            b.set(s, at(r, j), exp(s.get(at(r, j)) - mx.get()));
            b.set(sum, sum.get() + s.get(at(r, j)));
          });
          Local a = b.local("a", exp(m.get(r) - mx.get()));
          b.set(alpha, r, a.get());
          b.set(l, r, l.get(r) * a.get() + sum.get());
          b.set(m, r, mx.get());
        });
      }
      // O = O alpha + P V.
      TiledContraction values;
      values.Rows = QB;
      values.RowsAt = rowsAt.get();
      values.Cols = dv;
      values.Reduce = {KB};
      values.ReduceAt = nk.get();
      values.Tile = valueTile;
      // At least a vector of query rows in this form: whole tiles, the
      // last clamped; the few-rows form keeps its smaller tiles (one row
      // of a decode step is not computed as a tile of several).
      values.ClampAll = keysAsRows;
      values.LoadA = [&](const Expr &r, const std::vector<Expr> &k) {
        return s.get(at(r, k[0]));
      };
      values.LoadB = [&](const std::vector<Expr> &k, const Expr &col0) {
        if (vInPlace) {
          Expr e = o.v(bi, k0 + k[0], col0);
          return vload(e->Buf, e->A, (int)VL);
        }
        return vload(vb.Buf, k[0] * dv + col0, (int)VL);
      };
      values.Store = [&](const Expr &r, const Expr &col, const Expr &sum) {
        b.set(acc, r * dv + col, acc.get(r * dv + col) * alpha.get(r) + sum);
      };
      lowerTiledContraction(c, values);
    });
    // No key at all (a length of 0): the sum over none, zeros.
    b.loopTo("r", rowsAt.get(), [&](Expr r) {
      Local rcp = b.local("rcp", o.reciprocal(l.get(r)));
      b.loop("c", dv, [&](Expr cc) { o.store(bi, q0 + r, cc, acc.get(r * dv + cc) * rcp.get()); });
    });
  }, LoopKind::Parallel);
}

/// The blocked kernel. With keys as rows, the query rows past the last
/// whole query block, when they are fewer than the score tile's lanes (a
/// prompt of a few tokens, a length just past a multiple of the block),
/// take the other form with the plan's FewRows and FewValues tiles: as
/// columns of the keys-as-rows tile they would fill a vector's panel with
/// a few rows, a few multiply-add chains each (ViT's 197 tokens: the last 5
/// query rows of 64-row blocks).
void lowerBlocks(LowerCtx &c, const Operands &o, const ir::KernelPlan::AttentionBlocks &p) {
  const Expr zero = indexConst(0);
  if (!p.KeysAsRows || !p.FewRows) {
    lowerBlocks(c, o, p, p.KeysAsRows, p.QueryBlock, p.KeyBlock, p.Scores, p.Values, zero,
                o.LqAt);
    return;
  }
  // The few rows' key block: whole panels of their tile, so that a short
  // run of keys computes the panels it has (see lowerTiledContraction).
  const int64_t few = p.Scores.Lanes - 1, panel = p.FewRows->Panel;
  const int64_t keyBlock = (p.KeyBlock + panel - 1) / panel * panel;
  const ir::KernelPlan::Tile &fewValues = p.FewValues ? *p.FewValues : p.Values;
  KernelBuilder &b = c.b();
  auto fewRows = [&](const Expr &first, const Expr &count) {
    lowerBlocks(c, o, p, false, few, keyBlock, *p.FewRows, fewValues, first, count);
  };
  auto keysAsRows = [&](const Expr &count) {
    lowerBlocks(c, o, p, true, p.QueryBlock, p.KeyBlock, p.Scores, p.Values, zero, count);
  };
  if (o.LqAt->isConst()) {
    const int64_t lq = o.LqAt->IntValue, tail = lq % p.QueryBlock;
    if (tail == 0 || tail > few) {
      keysAsRows(o.LqAt);
    } else {
      if (lq > tail)
        keysAsRows(indexConst(lq - tail));
      fewRows(indexConst(lq - tail), indexConst(tail));
    }
    return;
  }
  Expr tail = o.LqAt % p.QueryBlock;
  Local main = b.local("main", select(le(tail, indexConst(few)), o.LqAt - tail, o.LqAt));
  b.ifThen(gt(main.get(), zero), [&] { keysAsRows(main.get()); });
  b.ifThen(gt(o.LqAt, main.get()), [&] { fewRows(main.get(), o.LqAt - main.get()); });
}

void lowerAttention(LowerCtx &c) {
  Geometry g = geometry(c.node());
  Operands o(c, g);
  if (o.Y.numel() == 0)
    return;
  if (const auto &p = c.node().Plan.Attention)
    lowerBlocks(c, o, *p);
  else
    lowerRows(c, o);
}

} // namespace

// Declared, and described, in Contraction.h.
Shape attentionOperandShape(const ir::Node &n, size_t i) { return viewOf(n, i).Logical; }

// Declared, and described, in Contraction.h.
bool attentionBlocksFit(const ir::KernelPlan::AttentionBlocks &p, int64_t dv) {
  auto ok = [](const ir::KernelPlan::Tile &t) {
    return t.Lanes >= 1 && t.Rows >= 1 && t.Panel >= t.Lanes && t.Panel % t.Lanes == 0;
  };
  const bool scores = p.KeysAsRows ? p.QueryBlock >= p.Scores.Panel && p.KeyBlock >= p.Scores.Rows
                                    : p.KeyBlock >= p.Scores.Panel;
  const bool few = !p.FewRows || (ok(*p.FewRows) && p.KeyBlock >= p.FewRows->Panel &&
                                  p.FewRows->Lanes == p.Scores.Lanes);
  auto values = [&](const ir::KernelPlan::Tile &t) {
    return ok(t) && dv >= t.Panel && dv % t.Panel == 0;
  };
  return ok(p.Scores) && values(p.Values) && scores && few && p.QueryBlock >= 1 &&
         (!p.FewValues || (p.FewRows && values(*p.FewValues)));
}

MLCC_OPS(FusedAttention) {
  R.add({.Domain = "mlcc", .Name = "Attention", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferAttention, .Lower = lowerAttention,
         .RunTimeExtents = true, .DenseOperands = true});
}

} // namespace mlcc::ops
