#include "compiler/kernel/Interpreter.h"

#include "compiler/kernel/ScalarEval.h"
#include "compiler/kernel/Schedule.h"
#include "compiler/support/Error.h"

#include <cstring>
#include <unordered_map>

namespace mlcc::kir {

namespace {

/// The kernel translated to a flat form with variables and buffers resolved
/// to slots, so evaluation does no map lookups.
class Machine {
public:
  Machine(const Kernel &k, const std::vector<void *> &args) : K(k) {
    MLCC_CHECK(args.size() == k.Params.size(),
               "interpret " << k.Name << ": " << args.size()
                            << " arguments for " << k.Params.size()
                            << " parameters");
    for (size_t i = 0; i < args.size(); ++i) {
      Slots.push_back({k.Params[i].get(), (int)Bufs.size()});
      Bufs.push_back({(uint8_t *)args[i], k.Params[i]->Type,
                      k.Params[i]->Size});
    }
  }

  void run() { exec(K.Body); }

  /// Loop iterations left before BudgetExceeded; -1: no limit.
  int64_t Budget = -1;

private:
  struct BufSlot {
    uint8_t *Data;
    DType Type;
    int64_t Size;
  };

  int64_t checkedIndex(int slot, int64_t idx) {
    const BufSlot &b = Bufs[(size_t)slot];
    if (idx < 0 || idx >= b.Size)
      fail(ErrorKind::Internal) << "internal error: kernel " << K.Name
                                << " accesses element " << idx
                                << " of a buffer of " << b.Size;
    return idx;
  }

  // Variables and buffers in scope are few (a loop nest's depth, a kernel's
  // parameters and locals): a linear search from the innermost beats a hash.
  int bufSlot(const BufferNode *b) {
    for (auto it = Slots.rbegin(); it != Slots.rend(); ++it)
      if (it->first == b)
        return it->second;
    MLCC_CHECK(false, "unknown buffer " << b->Name);
    return -1;
  }

  Scalar eval(const ExprNode &e) {
    switch (e.Kind) {
    case ExprKind::Const:
      return Scalar{e.IntValue, e.FloatValue};
    case ExprKind::VarRef: {
      for (auto it = VarValues.rbegin(); it != VarValues.rend(); ++it)
        if (it->first == e.V.get())
          return Scalar{it->second, 0};
      MLCC_CHECK(false, "unbound variable " << e.V->Name);
      return Scalar{};
    }
    case ExprKind::Load: {
      int slot = bufSlot(e.Buf.get());
      int64_t idx = checkedIndex(slot, eval(*e.A).I);
      const BufSlot &b = Bufs[(size_t)slot];
      return loadScalar(b.Type, b.Data + idx * (int64_t)dtypeSize(b.Type));
    }
    case ExprKind::Unary:
      return evalUnary(e.Un, e.A->Type, eval(*e.A));
    case ExprKind::Binary: {
      // Short-circuit Bool And/Or so guarded loads are never evaluated.
      if (e.Bin == BinOp::And) {
        Scalar a = eval(*e.A);
        return a.I ? Scalar{eval(*e.B).I ? 1 : 0, 0} : Scalar{0, 0};
      }
      if (e.Bin == BinOp::Or) {
        Scalar a = eval(*e.A);
        return a.I ? Scalar{1, 0} : Scalar{eval(*e.B).I ? 1 : 0, 0};
      }
      Scalar a = eval(*e.A);
      Scalar b = eval(*e.B);
      // The common cases without evalBinary's dispatch (the same
      // arithmetic: 64-bit integers wrap, f64 needs no rounding): index
      // arithmetic is most of what a folded kernel evaluates.
      if (e.A->Type == DType::Index || e.A->Type == DType::I64) {
        uint64_t x = (uint64_t)a.I, y = (uint64_t)b.I;
        switch (e.Bin) {
        case BinOp::Add: return Scalar{(int64_t)(x + y), 0};
        case BinOp::Sub: return Scalar{(int64_t)(x - y), 0};
        case BinOp::Mul: return Scalar{(int64_t)(x * y), 0};
        default: break;
        }
      } else if (e.A->Type == DType::F64) {
        switch (e.Bin) {
        case BinOp::Add: return Scalar{0, a.F + b.F};
        case BinOp::Sub: return Scalar{0, a.F - b.F};
        case BinOp::Mul: return Scalar{0, a.F * b.F};
        default: break;
        }
      }
      return evalBinary(e.Bin, e.A->Type, a, b);
    }
    case ExprKind::Select:
      // Only the chosen operand is evaluated (like the emitted code, which
      // may also evaluate both: lowerings keep both sides safe to evaluate).
      return eval(*e.A).I ? eval(*e.B) : eval(*e.C);
    case ExprKind::Cast:
      return evalCast(e.Type, e.A->Type, eval(*e.A));
    case ExprKind::BitCast:
      return evalBitCast(e.Type, e.A->Type, eval(*e.A));
    case ExprKind::Broadcast:
      MLCC_CHECK(false, "the interpreter runs scalarized kernels");
    }
    return Scalar{};
  }

  void exec(const Stmt &s) {
    switch (s->Kind) {
    case StmtKind::Block:
      for (auto &c : s->Body)
        exec(c);
      return;
    case StmtKind::For: {
      int64_t begin = eval(*s->Begin).I, end = eval(*s->End).I;
      size_t slot = VarValues.size();
      VarValues.push_back({s->LoopVar.get(), begin});
      if (end > begin && copyLoop(*s, slot, begin, end)) {
        VarValues.pop_back();
        return;
      }
      if (Budget >= 0 && end > begin && (Budget -= end - begin) < 0)
        throw BudgetExceeded{};
      for (int64_t i = begin; i < end; ++i) {
        VarValues[slot].second = i;
        exec(s->Inner);
      }
      VarValues.pop_back();
      return;
    }
    case StmtKind::Store: {
      int slot = bufSlot(s->Buf.get());
      int64_t idx = checkedIndex(slot, eval(*s->Index).I);
      Scalar v = eval(*s->Value);
      const BufSlot &b = Bufs[(size_t)slot];
      storeScalar(b.Type, b.Data + idx * (int64_t)dtypeSize(b.Type), v);
      return;
    }
    case StmtKind::If:
      if (eval(*s->Cond).I)
        exec(s->Inner);
      else if (s->Else)
        exec(s->Else);
      return;
    case StmtKind::Alloc: {
      // Zeroed storage, kept for the next run of the same allocation (a
      // local inside a loop).
      const BufferNode *b = s->Buf.get();
      std::vector<uint8_t> storage = std::move(Storage[b]);
      storage.assign((size_t)b->Size * dtypeSize(b->Type), 0);
      Slots.push_back({b, (int)Bufs.size()});
      Bufs.push_back({storage.data(), b->Type, b->Size});
      exec(s->Inner);
      Bufs.pop_back();
      Slots.pop_back();
      Storage[b] = std::move(storage);
      return;
    }
    case StmtKind::Barrier: // the thread loops around it run one after the other
      return;
    }
  }

  /// A loop whose body is one store of a load of the same type, both at
  /// indices affine in the loop variable (a copy, a transpose, a panel of
  /// packed weights): runs without evaluating the body per element. The
  /// bytes move as the load and store would move them (no narrow floats,
  /// whose values pass through f32), element by element in loop order.
  struct CopyShape {
    bool Copy = false;
    int64_t DstStride = 0, SrcStride = 0;
  };
  bool copyLoop(const StmtNode &loop, size_t slot, int64_t begin, int64_t end) {
    auto [it, fresh] = CopyShapes.try_emplace(&loop);
    CopyShape &c = it->second;
    const StmtNode *st = loop.Inner.get();
    if (st && st->Kind == StmtKind::Block && st->Body.size() == 1)
      st = st->Body[0].get();
    if (fresh && st && st->Kind == StmtKind::Store && st->Value->Kind == ExprKind::Load &&
        st->Value->Lanes == 1 && st->Buf->Type == st->Value->Buf->Type &&
        !isNarrowFloat(st->Buf->Type) && dtypeSize(st->Buf->Type) > 0) {
      auto ds = strideOf(st->Index, loop.LoopVar), ss = strideOf(st->Value->A, loop.LoopVar);
      if (ds && ss && *ds != 0)
        c = {true, *ds, *ss};
    }
    if (!c.Copy)
      return false;
    int dslot = bufSlot(st->Buf.get()), sslot = bufSlot(st->Value->Buf.get());
    int64_t d0 = eval(*st->Index).I, s0 = eval(*st->Value->A).I, n = end - begin;
    checkedIndex(dslot, d0);
    checkedIndex(dslot, d0 + (n - 1) * c.DstStride);
    checkedIndex(sslot, s0);
    checkedIndex(sslot, s0 + (n - 1) * c.SrcStride);
    const BufSlot &d = Bufs[(size_t)dslot], &src = Bufs[(size_t)sslot];
    int64_t size = dtypeSize(d.Type);
    for (int64_t i = 0; i < n; ++i)
      std::memmove(d.Data + (d0 + i * c.DstStride) * size,
                   src.Data + (s0 + i * c.SrcStride) * size, (size_t)size);
    VarValues[slot].second = end;
    return true;
  }

  const Kernel &K;
  std::unordered_map<const StmtNode *, CopyShape> CopyShapes;
  std::unordered_map<const BufferNode *, std::vector<uint8_t>> Storage;
  std::vector<BufSlot> Bufs;
  std::vector<std::pair<const BufferNode *, int>> Slots;
  std::vector<std::pair<const VarNode *, int64_t>> VarValues;
};

} // namespace

void interpret(const Kernel &k, const std::vector<void *> &args,
               int64_t maxIterations) {
  if (hasSubByte(k)) { // packed elements: as byte operations, like the targets
    Kernel bytes = expandSubByte(k);
    Machine m(bytes, args);
    m.Budget = maxIterations;
    m.run();
    return;
  }
  if (hasVectors(k.Body)) {
    Kernel scalar = scalarize(k);
    Machine m(scalar, args);
    m.Budget = maxIterations;
    m.run();
    return;
  }
  Machine m(k, args);
  m.Budget = maxIterations;
  m.run();
}

} // namespace mlcc::kir
