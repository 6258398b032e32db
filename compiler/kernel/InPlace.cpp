//===- InPlace.cpp - Where a kernel's output may lie over its input -------===//
#include "compiler/kernel/InPlace.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

namespace mlcc::kir {

namespace {

/// Runs a kernel's control flow and the indices of two parameters.
class Runner {
public:
  Runner(const Buffer &in, const Buffer &out, bool ordered, int64_t &budget, std::vector<int64_t> &lastRead,
         std::vector<int64_t> &readIteration, std::vector<int64_t> &firstWrite,
         std::vector<int64_t> &writeIteration)
      : In(in.get()), Out(out.get()), Ordered(ordered), Budget(budget), LastRead(lastRead),
        ReadIteration(readIteration), FirstWrite(firstWrite), WriteIteration(writeIteration) {}

  bool Failed = false;

  void run(const Stmt &s) {
    if (Failed || !s || !touches(s))
      return;
    switch (s->Kind) {
    case StmtKind::Block:
      for (const Stmt &b : s->Body)
        run(b);
      return;
    case StmtKind::Alloc:
      run(s->Inner);
      return;
    case StmtKind::Barrier:
      return;
    case StmtKind::If: {
      reads(s->Cond);
      std::optional<int64_t> c = eval(s->Cond);
      if (!c)
        return fail();
      run(*c ? s->Inner : s->Else);
      return;
    }
    case StmtKind::For: {
      reads(s->Begin);
      reads(s->End);
      std::optional<int64_t> b = eval(s->Begin), e = eval(s->End);
      if (!b || !e)
        return fail();
      const bool unordered = !Ordered && (s->Loop == LoopKind::Parallel ||
                                          s->Loop == LoopKind::GpuBlock ||
                                          s->Loop == LoopKind::GpuThread);
      const int64_t outer = Iteration;
      for (int64_t v = *b; v < *e && !Failed; ++v) {
        if (--Budget < 0)
          return fail();
        Vars[s->LoopVar.get()] = v;
        if (unordered)
          Iteration = NextIteration++;
        run(s->Inner);
      }
      Iteration = outer;
      Vars.erase(s->LoopVar.get());
      return;
    }
    case StmtKind::Store: {
      // A vector store runs lane by lane where it is scalarized (the C
      // emitter, the interpreter): lane l's loads, then its store. Lane l
      // of a lane-wise operand reads at B + 2l and stores at B + 2l + 1;
      // an element that any lane may read (a broadcast, another lane
      // count) is read by the last lane. (Vector code loads every lane
      // first: this order is the stricter one.)
      const int64_t lanes = s->Value->Lanes, base = Time;
      reads(s->Index);
      if (Failed)
        return;
      Time = base + 1;
      reads(s->Value, lanes, true, base + 1);
      if (Failed)
        return;
      if (s->Buf.get() == In)
        return fail(); // the input is written
      if (s->Buf.get() == Out) {
        std::optional<int64_t> at = eval(s->Index);
        if (!at)
          return fail();
        for (int64_t l = 0; l < lanes; ++l) {
          int64_t j = *at + l * s->Stride;
          if (j < 0 || j >= (int64_t)FirstWrite.size())
            return fail();
          if (FirstWrite[(size_t)j] < 0) {
            FirstWrite[(size_t)j] = base + 2 * l + 2;
            WriteIteration[(size_t)j] = Iteration;
          } else if (WriteIteration[(size_t)j] != Iteration) {
            WriteIteration[(size_t)j] = -2;
          }
        }
        if ((Budget -= lanes) < 0)
          return fail();
      }
      Time = base + 2 * lanes + 2;
      return;
    }
    }
  }

private:
  void fail() { Failed = true; }

  /// Whether `e` loads the input or the output.
  bool loads(const Expr &e) const {
    if (!e)
      return false;
    if (e->Kind == ExprKind::Load && (e->Buf.get() == In || e->Buf.get() == Out))
      return true;
    return loads(e->A) || loads(e->B) || loads(e->C);
  }
  /// Whether running `s` accesses the input or the output (else it is
  /// skipped: it changes no order that matters).
  bool touches(const Stmt &s) {
    if (!s)
      return false;
    auto it = Touches.find(s.get());
    if (it != Touches.end())
      return it->second;
    bool t = false;
    switch (s->Kind) {
    case StmtKind::Block:
      for (const Stmt &b : s->Body)
        t = t || touches(b);
      break;
    case StmtKind::For:
      t = loads(s->Begin) || loads(s->End) || touches(s->Inner);
      break;
    case StmtKind::If:
      t = loads(s->Cond) || touches(s->Inner) || touches(s->Else);
      break;
    case StmtKind::Alloc:
      t = touches(s->Inner);
      break;
    case StmtKind::Store:
      t = s->Buf.get() == In || s->Buf.get() == Out || loads(s->Index) || loads(s->Value);
      break;
    case StmtKind::Barrier:
      break;
    }
    Touches[s.get()] = t;
    return t;
  }

  /// Records the reads of the input in `e`; fails on a read of the output.
  /// In the value of a store of `lanes` lanes whose lane 0 reads at `base`
  /// (see Store), lane l of a lane-wise operand (`laneWise`: lane l of `e`
  /// is computed from lane l of its operands) reads at base + 2l and any
  /// other read is the last lane's; elsewhere (lanes 1) everything reads at
  /// `base`, by default the current time.
  void reads(const Expr &e, int64_t lanes = 1, bool laneWise = false, int64_t base = -1) {
    if (Failed || !e)
      return;
    if (base < 0)
      base = Time;
    laneWise = laneWise && e->Lanes == lanes;
    if (e->Kind == ExprKind::Load) {
      if (e->Buf.get() == Out)
        return fail();
      if (e->Buf.get() == In) {
        std::optional<int64_t> at = eval(e->A);
        if (!at)
          return fail();
        for (int64_t l = 0; l < e->Lanes; ++l) {
          int64_t i = *at + l * e->Stride;
          if (i < 0 || i >= (int64_t)LastRead.size())
            return fail();
          int64_t t = laneWise ? base + 2 * l : base + 2 * (lanes - 1);
          LastRead[(size_t)i] = std::max(LastRead[(size_t)i], t);
          int64_t &it = ReadIteration[(size_t)i];
          it = it == -1 || it == Iteration ? Iteration : -2;
        }
        if ((Budget -= e->Lanes) < 0)
          return fail();
      }
      reads(e->A); // the index: before the lanes
      return;
    }
    const bool across = e->Kind == ExprKind::Broadcast;
    reads(e->A, lanes, laneWise && !across, base);
    reads(e->B, lanes, laneWise && !across, base);
    reads(e->C, lanes, laneWise && !across, base);
  }

  /// The value of an integer or boolean scalar expression of loop variables
  /// and constants; nullopt for anything else (a load, a float).
  std::optional<int64_t> eval(const Expr &e) {
    if (!e || e->Lanes != 1)
      return std::nullopt;
    switch (e->Kind) {
    case ExprKind::Const:
      if (isFloat(e->Type))
        return std::nullopt;
      return e->IntValue;
    case ExprKind::VarRef: {
      auto it = Vars.find(e->V.get());
      if (it == Vars.end())
        return std::nullopt;
      return it->second;
    }
    case ExprKind::Cast:
      if (isFloat(e->Type) || isFloat(e->A->Type))
        return std::nullopt;
      return eval(e->A); // index arithmetic: no wrap-around in range
    case ExprKind::Select: {
      std::optional<int64_t> c = eval(e->A);
      if (!c)
        return std::nullopt;
      return eval(*c ? e->B : e->C);
    }
    case ExprKind::Unary: {
      std::optional<int64_t> a = eval(e->A);
      if (!a)
        return std::nullopt;
      switch (e->Un) {
      case UnOp::Neg: return -*a;
      case UnOp::Not: return (int64_t)!*a;
      case UnOp::Abs: return *a < 0 ? -*a : *a;
      default: return std::nullopt;
      }
    }
    case ExprKind::Binary: {
      std::optional<int64_t> a = eval(e->A), b = eval(e->B);
      if (!a || !b)
        return std::nullopt;
      switch (e->Bin) {
      case BinOp::Add: return *a + *b;
      case BinOp::Sub: return *a - *b;
      case BinOp::Mul: return *a * *b;
      case BinOp::Div: return *b ? std::optional<int64_t>(*a / *b) : std::nullopt;
      case BinOp::Rem: return *b ? std::optional<int64_t>(*a % *b) : std::nullopt;
      case BinOp::Min: return std::min(*a, *b);
      case BinOp::Max: return std::max(*a, *b);
      case BinOp::And: return (int64_t)(*a && *b);
      case BinOp::Or: return (int64_t)(*a || *b);
      case BinOp::Eq: return (int64_t)(*a == *b);
      case BinOp::Ne: return (int64_t)(*a != *b);
      case BinOp::Lt: return (int64_t)(*a < *b);
      case BinOp::Le: return (int64_t)(*a <= *b);
      case BinOp::Gt: return (int64_t)(*a > *b);
      case BinOp::Ge: return (int64_t)(*a >= *b);
      default: return std::nullopt;
      }
    }
    default:
      return std::nullopt;
    }
  }

  const BufferNode *In, *Out;
  bool Ordered;
  int64_t &Budget;
  std::vector<int64_t> &LastRead, &ReadIteration, &FirstWrite, &WriteIteration;
  std::unordered_map<const VarNode *, int64_t> Vars;
  std::unordered_map<const StmtNode *, bool> Touches;
  int64_t Time = 0;
  int64_t Iteration = -1, NextIteration = 0;
};

} // namespace

AccessOrder::AccessOrder(const Kernel &k, size_t in, size_t out, bool ordered,
                         int64_t &budget) {
  if (k.Gemm || in >= k.Params.size() || out >= k.Params.size() || in == out)
    return;
  // A loop left to LLVM's loop vectorizer (LoopKind::Scalar: Helium's
  // vmladav) needs its parameters not to alias: no overlap there.
  std::function<bool(const Stmt &)> scalarLoop = [&](const Stmt &s) {
    if (!s)
      return false;
    if (s->Kind == StmtKind::For && s->Loop == LoopKind::Scalar)
      return true;
    for (const Stmt &b : s->Body)
      if (scalarLoop(b))
        return true;
    return scalarLoop(s->Inner) || scalarLoop(s->Else);
  };
  if (scalarLoop(k.Body))
    return;
  const Buffer &a = k.Params[in], &o = k.Params[out];
  if (isSubByte(a->Type) || isSubByte(o->Type) || !dtypeSize(a->Type) || !dtypeSize(o->Type))
    return;
  InElem = dtypeSize(a->Type);
  OutElem = dtypeSize(o->Type);
  LastRead.assign((size_t)a->Size, -1);
  ReadIteration.assign((size_t)a->Size, -1);
  FirstWrite.assign((size_t)o->Size, -1);
  WriteIteration.assign((size_t)o->Size, -1);
  Runner r(a, o, ordered, budget, LastRead, ReadIteration, FirstWrite, WriteIteration);
  r.run(k.Body);
  Ok = !r.Failed;
}

bool AccessOrder::allows(int64_t displacement) const {
  if (!Ok)
    return false;
  const int64_t inBytes = (int64_t)LastRead.size() * InElem;
  for (size_t j = 0; j < FirstWrite.size(); ++j) {
    // The input elements under output element j's bytes.
    int64_t lo = displacement + (int64_t)j * OutElem, hi = lo + OutElem; // [lo, hi) of the input
    if (hi <= 0 || lo >= inBytes)
      continue;
    if (FirstWrite[j] < 0)
      continue; // this kernel leaves it: the input's bytes stay
    for (int64_t i = std::max<int64_t>(lo, 0) / InElem; i * InElem < std::min(hi, inBytes); ++i) {
      int64_t r = LastRead[(size_t)i];
      if (r < 0)
        continue; // never read: free to overwrite
      int64_t ri = ReadIteration[(size_t)i], wi = WriteIteration[j];
      if (ri == -2 || wi == -2 || ri != wi)
        return false; // read and written in iterations that may run in any order
      if (FirstWrite[j] <= r)
        return false;
    }
  }
  return true;
}

} // namespace mlcc::kir
