#include "compiler/kernel/GpuSchedule.h"


#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Cost.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/kernel/Schedule.h"
#include "compiler/support/Error.h"

#include <cmath>
#include <map>
#include <set>

namespace mlcc::kir {

namespace {

/// Static shared memory a launch may use (CUDA's limit without opting in).
constexpr int64_t kSharedBytesLimit = 48 * 1024;
/// Below this many rows, one thread per row leaves most of a large GPU
/// idle (an H100 runs 132 SMs x 2048 threads), and a block per row pays;
/// above it one thread per row has parallelism enough (a contraction's
/// outputs, with its inputs read by neighbouring threads).
constexpr int64_t kFewRows = 8192;
constexpr int64_t kWarp = 32;
/// The side of a contraction's output tile (kTile x kTile threads).
constexpr int64_t kTile = 16;

/// The top-level statements of `s` in order (nested blocks opened).
void flatten(const Stmt &s, std::vector<Stmt> &out) {
  if (!s)
    return;
  if (s->Kind == StmtKind::Block) {
    for (auto &c : s->Body)
      flatten(c, out);
    return;
  }
  out.push_back(s);
}

bool constantBounds(const StmtNode &s) {
  return s.Kind == StmtKind::For && s.Begin->isConst() && s.End->isConst();
}

/// Whether loop `s` may run one iteration per thread.
bool threadable(const StmtNode &s) {
  return constantBounds(s) && (s.Loop == LoopKind::Parallel || iterationsIndependent(s));
}

/// The body of `s` with a single statement unwrapped from its block.
Stmt onlyStatement(const Stmt &s) {
  if (s && s->Kind == StmtKind::Block && s->Body.size() == 1)
    return onlyStatement(s->Body[0]);
  return s;
}

Stmt launch(int64_t blocks, int64_t threads,
            const std::function<Stmt(const Expr &flat)> &body) {
  Var b = newVar("block"), t = newVar("thread");
  Expr flat = varRef(b) * threads + varRef(t);
  return forLoop(b, indexConst(0), indexConst(blocks),
                 forLoop(t, indexConst(0), indexConst(threads), body(flat),
                         LoopKind::GpuThread),
                 LoopKind::GpuBlock);
}

/// `s` with the variables of the loops `nest` (outermost first, extents
/// `extents`) bound to the point `flat` of their flattened iteration space.
Stmt bindNest(Stmt s, const std::vector<const StmtNode *> &nest,
              const std::vector<int64_t> &extents, const Expr &flat) {
  int64_t below = 1;
  for (size_t i = 0; i < nest.size(); ++i)
    below *= extents[i];
  for (size_t i = 0; i < nest.size(); ++i) {
    below /= extents[i];
    Expr v = below > 1 ? flat / below : flat;
    if (i > 0)
      v = v % extents[i];
    s = substitute(s, nest[i]->LoopVar, nest[i]->Begin + v);
  }
  return s;
}

/// Where a load or store of element `index` of `buf` moves to (another
/// buffer and index), or none to leave it.
using Relocation =
    std::function<std::optional<std::pair<Buffer, Expr>>(const Buffer &buf, const Expr &index)>;

/// `s` with its loads and stores moved as `where` says: the row's locals to
/// their shared copies, accumulators to a thread's partial or its slot.
Stmt relocate(const Stmt &s, const Relocation &where) {
  class Relocator : public Mutator {
  public:
    explicit Relocator(const Relocation &w) : Where(w) {}
    using Mutator::mutate;
    Expr mutate(const Expr &e0) override {
      Expr e = Mutator::mutate(e0);
      if (e && e->Kind == ExprKind::Load)
        if (auto to = Where(e->Buf, e->A))
          return vload(to->first, to->second, e->Lanes, e->Stride);
      return e;
    }
    Stmt mutate(const Stmt &s0) override {
      Stmt st = Mutator::mutate(s0);
      if (st && st->Kind == StmtKind::Store)
        if (auto to = Where(st->Buf, st->Index))
          return store(to->first, to->second, st->Value);
      return st;
    }
    const Relocation &Where;
  } r(where);
  return r.mutate(s);
}

Buffer newBuffer(const std::string &name, DType type, int64_t size, BufferKind kind) {
  return std::make_shared<const BufferNode>(BufferNode{name, type, size, kind});
}

/// The value `op` leaves unchanged, for the partial result of a thread
/// that has nothing to combine; none for operations or types not reduced
/// in parallel.
std::optional<Expr> identityOf(BinOp op, DType t) {
  bool flt = t == DType::F32 || t == DType::F64;
  bool integer = isInteger(t) && t != DType::Index && dtypeBits(t) <= 32;
  if (!flt && !integer && t != DType::I64)
    return std::nullopt;
  switch (op) {
  case BinOp::Add: return constant(t, 0);
  case BinOp::Mul: return constant(t, 1);
  case BinOp::Max:
  case BinOp::Min: {
    bool max = op == BinOp::Max;
    if (flt)
      return constant(t, max ? -INFINITY : INFINITY);
    if (isUnsignedInt(t))
      return constantInt(t, max ? 0 : (int64_t)((uint64_t(1) << dtypeBits(t)) - 1));
    int64_t hi = t == DType::I64 ? INT64_MAX : (int64_t(1) << (dtypeBits(t) - 1)) - 1;
    return constantInt(t, max ? -hi - 1 : hi);
  }
  default: return std::nullopt;
  }
}

/// A reduction's accumulator element: `Acc[Index] = Acc[Index] Op value`.
struct Slot {
  Buffer Acc;
  int64_t Index;
  BinOp Op;
  Buffer Partial, Tree; ///< a thread's partial result; the block's partials
};

/// The row body of a block: the statements every block runs for its row
/// (the outer independent loops bound to the block index), rewritten so
/// that the block's threads share its work (see GpuSchedule.h, `block`).
class Cooperation {
public:
  Cooperation(int64_t threads) : Threads(threads) {}

  /// The phases of `row`, or none when no loop of it is shared out.
  std::optional<Stmt> build(const Stmt &row) {
    spine(row);
    if (!Shares)
      return std::nullopt;
    std::vector<Stmt> seq;
    std::vector<Stmt> uniform;
    auto flushUniform = [&] {
      if (uniform.empty())
        return;
      Stmt body = block(std::move(uniform));
      uniform.clear();
      phase(seq, [&](const Expr &t) { return ifThen(eq(t, indexConst(0)), body); });
    };
    for (const Item &it : Items) {
      if (it.Uniform) {
        uniform.push_back(it.S);
        continue;
      }
      flushUniform();
      if (!it.Slots.empty()) {
        uniform.push_back(reduction(seq, it));
        continue;
      }
      phase(seq, [&](const Expr &t) { return sharedLoop(*it.S, t, it.S->Inner); });
    }
    flushUniform();
    Stmt body = block(std::move(seq));
    for (auto it = Allocs.rbegin(); it != Allocs.rend(); ++it)
      body = alloc(*it, body);
    return body;
  }

  /// Bytes of shared memory the phases use.
  int64_t sharedBytes() const {
    int64_t n = 0;
    for (auto &b : Allocs)
      n += storageBytes(b->Type, b->Size);
    return n;
  }
  /// The longest loop shared out; the work of the shared loops and of the
  /// statements left to thread 0.
  int64_t LongestShared = 0, SharedWork = 0, UniformWork = 0;

private:
  struct Item {
    Stmt S;
    bool Uniform = true;
    std::vector<Slot> Slots; ///< a reduction's accumulators
  };

  /// Walks the row's statement sequence: its locals become shared, its
  /// loops are shared out where they can be, the rest runs on thread 0.
  void spine(const Stmt &s0) {
    if (s0->Kind == StmtKind::Block) {
      for (auto &c : s0->Body)
        spine(c);
      return;
    }
    if (s0->Kind == StmtKind::Alloc) {
      const BufferNode &l = *s0->Buf;
      Buffer b = newBuffer(l.Name, l.Type, l.Size, BufferKind::Shared);
      Replaced[&l] = b;
      Allocs.push_back(b);
      spine(s0->Inner);
      return;
    }
    Stmt s = relocate(s0, [&](const Buffer &buf, const Expr &i)
                              -> std::optional<std::pair<Buffer, Expr>> {
      if (auto it = Replaced.find(buf.get()); it != Replaced.end())
        return std::pair{it->second, i};
      return std::nullopt;
    });
    switch (s->Kind) {
    case StmtKind::For:
      if (constantBounds(*s) && s->End->IntValue - s->Begin->IntValue >= 2) {
        int64_t n = s->End->IntValue - s->Begin->IntValue;
        if (iterationsIndependent(*s)) {
          Items.push_back({s, false, {}});
          noteShared(s, n);
          return;
        }
        if (auto slots = reductionSlots(s)) {
          Items.push_back({s, false, *slots});
          noteShared(s, n);
          return;
        }
      }
      break;
    default:
      break;
    }
    Items.push_back({s, true, {}});
    UniformWork += workOf(s);
  }

  void noteShared(const Stmt &s, int64_t n) {
    Shares = true;
    LongestShared = std::max(LongestShared, n);
    SharedWork += workOf(s);
  }

  bool isShared(const BufferNode *b) const { return b->Kind == BufferKind::Shared; }

  /// The accumulators of loop `s` when its only stores to the row's
  /// (shared) locals are reductions `acc[c] = acc[c] op value` of an
  /// associative, commutative op, its value reading none of them, and its
  /// other stores leave the iterations independent.
  std::optional<std::vector<Slot>> reductionSlots(const Stmt &s) {
    std::vector<Slot> slots;
    std::set<const BufferNode *> accs;
    std::map<const StmtNode *, Expr> values; // reduction store -> its value
    bool ok = true;
    visitStmts(s->Inner, [&](const Stmt &st) {
      if (!ok || st->Kind != StmtKind::Store || !isShared(st->Buf.get()))
        return;
      const Expr &v = st->Value;
      ok = st->Index->isConst() && v->Lanes == 1 && v->Kind == ExprKind::Binary &&
           identityOf(v->Bin, v->Type).has_value();
      if (!ok)
        return;
      auto self = [&](const Expr &e) {
        return e->Kind == ExprKind::Load && e->Buf == st->Buf && e->A->isConst() &&
               e->A->IntValue == st->Index->IntValue && e->Lanes == 1;
      };
      Expr value = self(v->A) ? v->B : self(v->B) ? v->A : nullptr;
      if (!value) {
        ok = false;
        return;
      }
      values[st.get()] = value;
      accs.insert(st->Buf.get());
      for (auto &sl : slots)
        if (sl.Acc == st->Buf && sl.Index == st->Index->IntValue) {
          ok = sl.Op == v->Bin;
          return;
        }
      std::string n = st->Buf->Name;
      slots.push_back({st->Buf, st->Index->IntValue, v->Bin,
                       newBuffer(n + "_part", v->Type, 1, BufferKind::Local),
                       newBuffer(n + "_tree", v->Type, Threads, BufferKind::Shared)});
    });
    if (!ok || slots.empty())
      return std::nullopt;
    // The accumulators are read only by their own reductions: the loop
    // with each reduction replaced by a store of its value to a local of
    // the iteration must have independent iterations.
    class Detach : public Mutator {
    public:
      Detach(const std::map<const StmtNode *, Expr> &v) : V(v) {}
      using Mutator::mutate;
      Stmt mutate(const Stmt &st) override {
        if (st && st->Kind == StmtKind::Store)
          if (auto it = V.find(st.get()); it != V.end()) {
            Buffer t = newBuffer("value", it->second->Type, 1, BufferKind::Local);
            return alloc(t, store(t, indexConst(0), it->second));
          }
        return Mutator::mutate(st);
      }
      const std::map<const StmtNode *, Expr> &V;
    } detach(values);
    Stmt detached = forLoop(s->LoopVar, s->Begin, s->End, detach.mutate(s->Inner));
    bool readsAcc = false;
    visitExprs(detached, [&](const Expr &e) {
      readsAcc |= e->Kind == ExprKind::Load && accs.count(e->Buf.get());
    });
    if (readsAcc || !iterationsIndependent(*detached))
      return std::nullopt;
    return slots;
  }

  /// A thread loop (the phase) after a barrier when one came before (a
  /// warp's when only the first warp's threads wrote what it reads).
  void phase(std::vector<Stmt> &seq, const std::function<Stmt(const Expr &t)> &body,
             bool warp = false) {
    if (!seq.empty())
      seq.push_back(barrier(warp));
    Var t = newVar("thread");
    seq.push_back(forLoop(t, indexConst(0), indexConst(Threads), body(varRef(t)),
                          LoopKind::GpuThread));
  }

  /// Loop `l` with body `body` shared out: thread t runs iterations t,
  /// t + Threads, ... (consecutive iterations on consecutive threads).
  Stmt sharedLoop(const StmtNode &l, const Expr &t, const Stmt &body) {
    int64_t b = l.Begin->IntValue, n = l.End->IntValue - b;
    int64_t rounds = (n + Threads - 1) / Threads;
    Var r = newVar(l.LoopVar->Name + "_round");
    Expr i = rounds > 1 ? varRef(r) * Threads + t : t;
    Stmt inner = substitute(body, l.LoopVar, i + b);
    if (rounds * Threads != n)
      inner = ifThen(lt(i, indexConst(n)), inner);
    return rounds > 1 ? forLoop(r, indexConst(0), indexConst(rounds), inner) : inner;
  }

  /// A reduction loop: each thread reduces its share of the iterations
  /// into its partials, the block combines the partials in a tree (half
  /// the threads at each level), and thread 0 folds the block's result
  /// into the accumulator, which keeps its value from before the loop:
  /// returns that fold, a statement for thread 0.
  Stmt reduction(std::vector<Stmt> &seq, const Item &it) {
    // Accumulator elements become the thread's partials.
    Stmt body = relocate(it.S->Inner, [&](const Buffer &buf, const Expr &i)
                                          -> std::optional<std::pair<Buffer, Expr>> {
      for (auto &sl : it.Slots)
        if (sl.Acc == buf && i->isConst() && i->IntValue == sl.Index)
          return std::pair{sl.Partial, indexConst(0)};
      return std::nullopt;
    });
    for (auto &sl : it.Slots)
      Allocs.push_back(sl.Tree);
    phase(seq, [&](const Expr &t) {
      std::vector<Stmt> st;
      for (auto &sl : it.Slots)
        st.push_back(store(sl.Partial, indexConst(0), *identityOf(sl.Op, sl.Partial->Type)));
      st.push_back(sharedLoop(*it.S, t, body));
      for (auto &sl : it.Slots)
        st.push_back(store(sl.Tree, t, load(sl.Partial, indexConst(0))));
      Stmt s = block(std::move(st));
      for (auto &sl : it.Slots)
        s = alloc(sl.Partial, s);
      return s;
    });
    for (int64_t half = Threads / 2; half >= 1; half /= 2)
      phase(
          seq,
          [&](const Expr &t) {
            std::vector<Stmt> st;
            for (auto &sl : it.Slots)
              st.push_back(store(sl.Tree, t,
                                 binary(sl.Op, load(sl.Tree, t), load(sl.Tree, t + half))));
            return ifThen(lt(t, indexConst(half)), block(std::move(st)));
          },
          /*warp=*/half * 2 <= kWarp && half * 2 < Threads);
    std::vector<Stmt> fold;
    for (auto &sl : it.Slots) {
      Expr i = indexConst(sl.Index);
      fold.push_back(
          store(sl.Acc, i, binary(sl.Op, load(sl.Acc, i), load(sl.Tree, indexConst(0)))));
    }
    return block(std::move(fold));
  }

  int64_t Threads;
  bool Shares = false;
  std::map<const BufferNode *, Buffer> Replaced;
  std::vector<Buffer> Allocs; ///< shared buffers, outermost first
  std::vector<Item> Items;
};

/// Threads per block of a cooperative row: a power of two from 32 up to
/// the target's block size, no more than the longest shared loop needs.
int64_t cooperativeThreads(int64_t longest, const TargetDesc &t) {
  int64_t n = t.WarpSize;
  while (n < longest && n * 2 <= t.ThreadsPerBlock)
    n *= 2;
  return n;
}

/// The nest `nest` (loops bound to the block index, outermost first) around
/// `row` as a block-per-row launch, when sharing the row's loops between a
/// block's threads pays: loops of at least a warp's length, too few rows to
/// fill the GPU with one thread each, and little left to thread 0 (else
/// each row on a thread of its own is faster).
std::optional<Stmt> toBlockLaunch(const std::vector<const StmtNode *> &nest,
                                  const std::vector<int64_t> &extents, int64_t rows,
                                  const Stmt &row, const TargetDesc &t) {
  Cooperation probe(t.ThreadsPerBlock);
  if (!probe.build(row))
    return std::nullopt;
  bool pays = probe.LongestShared >= kWarp &&
              (nest.empty() || (rows < kFewRows && probe.UniformWork * 4 <= probe.SharedWork));
  if (!pays)
    return std::nullopt;
  Cooperation c(cooperativeThreads(probe.LongestShared, t));
  std::optional<Stmt> body = c.build(row);
  if (!body || c.sharedBytes() > kSharedBytesLimit)
    return std::nullopt;
  Var b = newVar("block");
  return forLoop(b, indexConst(0), indexConst(rows), bindNest(*body, nest, extents, varRef(b)),
                 LoopKind::GpuBlock);
}

/// A contraction nest: outputs (i, j), each `acc = init; for k: acc = acc +
/// a(i, k) * b(k, j); the rest`.
struct Contraction {
  const StmtNode *I, *J, *K;
  Buffer Acc;
  std::vector<Stmt> Pre, Post; ///< the statements before and after the k loop
  Expr A, B;                   ///< the factors: A reads no j, B no i
};

std::optional<Contraction> matchContraction(const std::vector<const StmtNode *> &nest,
                                            const Stmt &row) {
  if (nest.size() < 2 || !row || row->Kind != StmtKind::Alloc || row->Buf->Size != 1)
    return std::nullopt;
  Contraction c;
  c.I = nest[nest.size() - 2];
  c.J = nest.back();
  c.Acc = row->Buf;
  std::vector<Stmt> body;
  flatten(row->Inner, body);
  size_t at = 0;
  for (; at < body.size() && body[at]->Kind == StmtKind::Store && body[at]->Buf == c.Acc; ++at)
    c.Pre.push_back(body[at]);
  if (at == body.size() || !constantBounds(*body[at]))
    return std::nullopt;
  c.K = body[at].get();
  c.Post.assign(body.begin() + (long)at + 1, body.end());
  Stmt upd = onlyStatement(c.K->Inner);
  if (!upd || upd->Kind != StmtKind::Store || upd->Buf != c.Acc || !upd->Index->isConstValue(0))
    return std::nullopt;
  const Expr &v = upd->Value;
  auto isAcc = [&](const Expr &e) {
    return e->Kind == ExprKind::Load && e->Buf == c.Acc && e->A->isConstValue(0);
  };
  if (v->Kind != ExprKind::Binary || v->Bin != BinOp::Add || v->Lanes != 1)
    return std::nullopt;
  Expr x = isAcc(v->A) ? v->B : isAcc(v->B) ? v->A : nullptr;
  if (!x || x->Kind != ExprKind::Binary || x->Bin != BinOp::Mul)
    return std::nullopt;
  bool paramsOnly = true;
  visitExprs(x, [&](const Expr &e) {
    paramsOnly &= e->Kind != ExprKind::Load || e->Buf->Kind == BufferKind::Param;
  });
  const Var &i = c.I->LoopVar, &j = c.J->LoopVar;
  if (!paramsOnly)
    return std::nullopt;
  if (!dependsOn(x->A, j) && !dependsOn(x->B, i)) {
    c.A = x->A;
    c.B = x->B;
  } else if (!dependsOn(x->B, j) && !dependsOn(x->A, i)) {
    c.A = x->B;
    c.B = x->A;
  } else {
    return std::nullopt;
  }
  return c;
}

/// A contraction nest in shared-memory tiles: a block of kTile x kTile
/// threads computes a tile of outputs, one each; for each step of kTile
/// along k, the block stages the tile's factors (kTile rows of a, kTile
/// columns of b) in shared memory, each thread one element of each, and
/// every thread adds kTile products from there. The accumulators live in
/// shared memory too (state across barriers, see StmtKind::Barrier), read
/// into a local once per step. Sums run in the order of the serial loop.
std::optional<Stmt> toTiledLaunch(const std::vector<const StmtNode *> &nest,
                                  const std::vector<int64_t> &extents, const Stmt &row) {
  std::optional<Contraction> m = matchContraction(nest, row);
  if (!m)
    return std::nullopt;
  constexpr int64_t T = kTile;
  int64_t M = extents[nest.size() - 2], N = extents.back();
  int64_t K = m->K->End->IntValue - m->K->Begin->IntValue;
  if (M < T / 2 || N < T / 2 || K < T)
    return std::nullopt; // too thin to stage: a thread per output
  int64_t tilesI = (M + T - 1) / T, tilesJ = (N + T - 1) / T, tilesK = (K + T - 1) / T;
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < nest.size(); ++d)
    batch *= extents[d];
  Buffer as = newBuffer("a_tile", m->A->Type, T * T, BufferKind::Shared);
  Buffer bs = newBuffer("b_tile", m->B->Type, T * T, BufferKind::Shared);
  Buffer accs = newBuffer(m->Acc->Name + "_tile", m->Acc->Type, T * T, BufferKind::Shared);

  Var blk = newVar("block");
  Expr bq = varRef(blk);
  Expr ti = (bq / tilesJ) % tilesI, tj = bq % tilesJ;
  std::vector<Stmt> seq;
  // A thread loop of the block appended to `to`: thread t at (r, q) of the tile.
  auto phase = [&](std::vector<Stmt> &to,
                   const std::function<Stmt(const Expr &t, const Expr &r, const Expr &q)> &f) {
    Var t = newVar("thread");
    Expr tv = varRef(t);
    to.push_back(forLoop(t, indexConst(0), indexConst(T * T), f(tv, tv / T, tv % T),
                         LoopKind::GpuThread));
  };
  // The thread's output, its position in the tile (r, q), and whether it
  // lies inside the matrix.
  auto output = [&](const Stmt &s, const Expr &t, const Expr &r, const Expr &q) {
    Expr row = ti * T + r, col = tj * T + q;
    // The accumulator is the thread's slot of the shared sums.
    Stmt b = relocate(s, [&](const Buffer &buf, const Expr &i)
                             -> std::optional<std::pair<Buffer, Expr>> {
      if (buf == m->Acc)
        return std::pair{accs, t + i};
      return std::nullopt;
    });
    b = substitute(b, m->I->LoopVar, m->I->Begin + row);
    b = substitute(b, m->J->LoopVar, m->J->Begin + col);
    Expr inside = boolConst(true);
    if (M % T)
      inside = lt(row, indexConst(M));
    if (N % T)
      inside = land(inside, lt(col, indexConst(N)));
    return inside->isConst() ? b : ifThen(inside, b);
  };
  phase(seq, [&](const Expr &t, const Expr &r, const Expr &q) {
    return output(block(m->Pre), t, r, q);
  });
  Var kt = newVar("k_tile");
  std::vector<Stmt> step;
  Expr k0 = m->K->Begin + varRef(kt) * T;
  step.push_back(barrier());
  phase(step, [&](const Expr &t, const Expr &r, const Expr &q) {
    // a(i0 + r, k0 + q) and b(k0 + r, j0 + q), zero outside the matrices.
    auto stage = [&](const Buffer &dst, const Expr &f, const StmtNode &outer,
                     const Expr &outerOffset, int64_t outerN, const Expr &kAt) {
      Expr v = substitute(substitute(f, outer.LoopVar, outer.Begin + outerOffset),
                          m->K->LoopVar, kAt);
      Expr inside = boolConst(true);
      if (outerN % T)
        inside = lt(outerOffset, indexConst(outerN));
      if (K % T)
        inside = land(inside, lt(kAt, m->K->End));
      Stmt st = store(dst, t, v);
      return inside->isConst() ? st : ifThen(inside, st, store(dst, t, constant(f->Type, 0)));
    };
    return block({stage(as, m->A, *m->I, ti * T + r, M, k0 + q),
                  stage(bs, m->B, *m->J, tj * T + q, N, k0 + r)});
  });
  step.push_back(barrier());
  phase(step, [&](const Expr &t, const Expr &r, const Expr &q) {
    Var kk = newVar("kk");
    Buffer part = newBuffer(m->Acc->Name, m->Acc->Type, 1, BufferKind::Local);
    Expr p = load(part, indexConst(0));
    Stmt sum = forLoop(kk, indexConst(0), indexConst(T),
                       store(part, indexConst(0),
                             p + load(as, r * T + varRef(kk)) * load(bs, varRef(kk) * T + q)));
    return alloc(part, block({store(part, indexConst(0), load(accs, t)), sum, store(accs, t, p)}));
  });
  seq.push_back(forLoop(kt, indexConst(0), indexConst(tilesK), block(std::move(step))));
  seq.push_back(barrier());
  phase(seq, [&](const Expr &t, const Expr &r, const Expr &q) {
    return output(block(m->Post), t, r, q);
  });
  Stmt s = alloc(as, alloc(bs, alloc(accs, block(std::move(seq)))));
  // The batch loops from the block index.
  std::vector<const StmtNode *> batchLoops(nest.begin(), nest.end() - 2);
  s = bindNest(s, batchLoops, extents, bq / (tilesI * tilesJ));
  return forLoop(blk, indexConst(0), indexConst(batch * tilesI * tilesJ), s,
                 LoopKind::GpuBlock);
}

/// `s` as a launch, or none when it has no iterations.
std::optional<Stmt> toLaunch(const Stmt &s, const TargetDesc &t) {
  // The nest of threadable loops, outermost first, and the row inside.
  std::vector<const StmtNode *> nest;
  Stmt inner = s;
  while (inner && inner->Kind == StmtKind::For && threadable(*inner)) {
    nest.push_back(inner.get());
    inner = onlyStatement(inner->Inner);
  }
  int64_t points = 1;
  std::vector<int64_t> extents;
  for (const StmtNode *l : nest) {
    int64_t n = std::max<int64_t>(l->End->IntValue - l->Begin->IntValue, 0);
    extents.push_back(n);
    points *= n;
  }
  if (points == 0)
    return std::nullopt;
  if (auto c = toTiledLaunch(nest, extents, inner))
    return c;
  if (auto b = toBlockLaunch(nest, extents, points, inner, t))
    return b;
  if (nest.empty())
    return launch(1, 1, [&](const Expr &) { return s; });
  int64_t threads =
      std::min<int64_t>(t.ThreadsPerBlock, (points + t.WarpSize - 1) / t.WarpSize * t.WarpSize);
  int64_t blocks = (points + threads - 1) / threads;
  return launch(blocks, threads, [&](const Expr &flat) {
    Stmt body = bindNest(inner, nest, extents, flat);
    if (blocks * threads != points)
      body = ifThen(lt(flat, indexConst(points)), body);
    return body;
  });
}

} // namespace

Kernel mapToGpu(const Kernel &k, const TargetDesc &t) {
  // The cooperative rows' barriers take warps of kWarp threads.
  MLCC_CHECK(t.gpu() && t.WarpSize == kWarp && t.ThreadsPerBlock % t.WarpSize == 0 &&
                 t.ThreadsPerBlock > 0,
             "a GPU with warps of " << kWarp << " and blocks of a multiple of them");
  std::vector<Stmt> top, launches;
  // Packed 4- and 2-bit stores share bytes: such a kernel runs its byte
  // operations in order, on one thread (expandSubByte).
  const bool packed = hasSubByte(k);
  Kernel r = packed ? expandSubByte(k) : k;
  flatten(r.Body, top);
  for (const Stmt &s : top)
    if (packed)
      launches.push_back(launch(1, 1, [&](const Expr &) { return s; }));
    else if (auto l = toLaunch(s, t))
      launches.push_back(*l);
  r.Body = block(std::move(launches));
  r.finalize();
  return r;
}

std::vector<Launch> launchesOf(const Kernel &k) {
  std::vector<Stmt> top;
  flatten(k.Body, top);
  std::vector<Launch> out;
  for (const Stmt &s : top) {
    MLCC_CHECK(s->Kind == StmtKind::For && s->Loop == LoopKind::GpuBlock &&
                   constantBounds(*s) && s->Begin->IntValue == 0,
               "kernel " << k.Name << " is not scheduled for a GPU");
    // The block's thread loops (its phases) all have the block's size.
    int64_t threads = 0;
    visitStmts(s->Inner, [&](const Stmt &st) {
      if (st->Kind != StmtKind::For || st->Loop != LoopKind::GpuThread)
        return;
      MLCC_CHECK(constantBounds(*st) && st->Begin->IntValue == 0 &&
                     (threads == 0 || threads == st->End->IntValue),
                 "kernel " << k.Name << ": thread loops of different sizes in a launch");
      threads = st->End->IntValue;
    });
    MLCC_CHECK(threads > 0, "kernel " << k.Name << ": a launch without its thread loop");
    out.push_back({s, s->End->IntValue, threads});
  }
  return out;
}

void scheduleProgramForGpu(Program &p, const TargetDesc &t) {
  for (auto &k : p.Kernels)
    k = mapToGpu(collapse(k), t);
}

} // namespace mlcc::kir
