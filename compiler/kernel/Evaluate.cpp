//===- Evaluate.cpp - A kernel run at compile time, interpreted or compiled ---===//
//
// Constant folding evaluates each node's lowering. The interpreter is the
// reference; a large kernel whose every operation is exactly rounded and
// whose every access provably stays within its buffer runs instead as code
// compiled for this machine (the runner targets/llvm/HostJit.cpp installs),
// which gives the same bytes: additions, products, divisions, square roots
// and conversions are correctly rounded in both, no operation is reordered
// (no fast-math), and integer division is only by positive constants.
// Anything else (transcendental functions, float8, sub-byte elements, an
// index the interval analysis below cannot bound, data-dependent indices)
// stays with the interpreter, whose bounds checks are the safety net.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/Interpreter.h"

#include "compiler/kernel/Schedule.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <limits>

namespace mlcc::kir {

namespace {

CompiledRun gCompiledRun = nullptr;
std::atomic<bool> gCompiledRunFailed{false};

constexpr int64_t kHuge = int64_t(1) << 62;

/// An interval of integer values; Known false: no bound.
struct Range {
  int64_t Lo = 0, Hi = 0;
  bool Known = false;
};

Range known(int64_t lo, int64_t hi) {
  if (lo < -kHuge || hi > kHuge || lo > hi)
    return {};
  return {lo, hi, true};
}

int64_t saturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (a > kHuge / b)
    return kHuge;
  return a * b;
}

/// Walks a kernel: the interval of every index, the operations it uses,
/// its loop iterations (as interpret() counts them, at most) and the
/// expression nodes it evaluates.
class Fit {
public:
  CompiledFit Result;

  void stmt(const Stmt &s, int64_t mult) {
    if (!Result.Exact || !s)
      return;
    switch (s->Kind) {
    case StmtKind::Block:
      for (const Stmt &c : s->Body)
        stmt(c, mult);
      return;
    case StmtKind::For: {
      expr(s->Begin, mult);
      expr(s->End, mult);
      Range b = range(s->Begin), e = range(s->End);
      if (!b.Known || !e.Known)
        return refuse();
      int64_t trips = e.Hi - b.Lo;
      if (trips <= 0)
        return;
      int64_t inner = saturatingMul(mult, trips);
      Result.Iterations = std::min(kHuge, Result.Iterations + inner);
      Vars.push_back({s->LoopVar.get(), known(b.Lo, e.Hi - 1)});
      stmt(s->Inner, inner);
      Vars.pop_back();
      return;
    }
    case StmtKind::Store:
      access(s->Buf.get(), s->Index, s->Value->Lanes, s->Stride);
      expr(s->Index, mult);
      expr(s->Value, mult);
      return;
    case StmtKind::If:
      expr(s->Cond, mult);
      stmt(s->Inner, mult);
      stmt(s->Else, mult);
      return;
    case StmtKind::Alloc:
      if (!exactType(s->Buf->Type))
        return refuse();
      stmt(s->Inner, mult);
      return;
    case StmtKind::Barrier:
      return;
    }
  }

  void expr(const Expr &e, int64_t mult) {
    if (!Result.Exact || !e)
      return;
    Result.Work = std::min(kHuge, Result.Work + mult);
    if (!exactType(e->Type))
      return refuse();
    switch (e->Kind) {
    case ExprKind::Load:
      access(e->Buf.get(), e->A, e->Lanes, e->Stride);
      break;
    case ExprKind::Unary:
      if (e->Un >= UnOp::Exp && e->Un <= UnOp::Erf) // libm: not correctly rounded
        return refuse();
      break;
    case ExprKind::Binary:
      if (e->Bin == BinOp::Pow)
        return refuse();
      // Integer division only by a positive constant: the interpreter's
      // x / 0 = 0 and INT_MIN / -1 are traps in compiled code.
      if ((e->Bin == BinOp::Div || e->Bin == BinOp::Rem) && isInteger(e->A->Type) &&
          !(e->B->isConst() && e->B->Lanes == 1 && e->B->IntValue > 0))
        return refuse();
      break;
    default:
      break;
    }
    expr(e->A, mult);
    expr(e->B, mult);
    expr(e->C, mult);
  }

private:
  std::vector<std::pair<const VarNode *, Range>> Vars;

  void refuse() { Result.Exact = false; }

  static bool exactType(DType t) { return !isFloat8(t) && !isSubByte(t); }

  /// `lanes` elements `stride` apart from `index` must lie in `buf`.
  void access(const BufferNode *buf, const Expr &index, int lanes, int64_t stride) {
    Range r = range(index);
    if (!r.Known)
      return refuse();
    int64_t span = saturatingMul(lanes - 1, std::abs(stride));
    int64_t lo = stride < 0 ? r.Lo - span : r.Lo, hi = stride < 0 ? r.Hi : r.Hi + span;
    if (lo < 0 || hi >= buf->Size)
      refuse();
  }

  Range range(const Expr &e) {
    if (!e || e->Lanes != 1 || !isInteger(e->Type))
      return {};
    switch (e->Kind) {
    case ExprKind::Const:
      return known(e->IntValue, e->IntValue);
    case ExprKind::VarRef:
      for (auto it = Vars.rbegin(); it != Vars.rend(); ++it)
        if (it->first == e->V.get())
          return it->second;
      return {};
    case ExprKind::Select: {
      Range b = range(e->B), c = range(e->C);
      if (!b.Known || !c.Known)
        return {};
      return known(std::min(b.Lo, c.Lo), std::max(b.Hi, c.Hi));
    }
    case ExprKind::Cast: {
      Range a = range(e->A);
      if (!a.Known)
        return {};
      // Only where every value of the range is one of the new type.
      int bits = (int)dtypeSize(e->Type) * 8;
      if (e->Type == DType::Index || bits >= 64)
        return a;
      int64_t lo = isSignedInt(e->Type) ? -(int64_t(1) << (bits - 1)) : 0;
      int64_t hi = isSignedInt(e->Type) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
      return a.Lo >= lo && a.Hi <= hi ? a : Range{};
    }
    case ExprKind::Binary:
      return binary(e);
    default:
      return {};
    }
  }

  Range binary(const Expr &e) {
    Range a = range(e->A), b = range(e->B);
    if (!a.Known || !b.Known)
      return {};
    switch (e->Bin) {
    case BinOp::Add: return known(a.Lo + b.Lo, a.Hi + b.Hi);
    case BinOp::Sub: return known(a.Lo - b.Hi, a.Hi - b.Lo);
    case BinOp::Mul: {
      if (std::max({std::abs(a.Lo), std::abs(a.Hi), std::abs(b.Lo), std::abs(b.Hi)}) >
          (int64_t(1) << 31))
        return {};
      int64_t p[4] = {a.Lo * b.Lo, a.Lo * b.Hi, a.Hi * b.Lo, a.Hi * b.Hi};
      return known(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
    }
    case BinOp::Min: return known(std::min(a.Lo, b.Lo), std::min(a.Hi, b.Hi));
    case BinOp::Max: return known(std::max(a.Lo, b.Lo), std::max(a.Hi, b.Hi));
    case BinOp::Div: // truncation toward zero is monotone for a positive divisor
      if (b.Lo != b.Hi || b.Lo <= 0)
        return {};
      return known(a.Lo / b.Lo, a.Hi / b.Lo);
    case BinOp::Rem:
      if (b.Lo != b.Hi || b.Lo <= 0)
        return {};
      if (a.Lo >= 0)
        return a.Hi < b.Lo ? a : known(0, b.Lo - 1);
      return known(-(b.Lo - 1), b.Lo - 1);
    default:
      return {};
    }
  }
};

} // namespace

CompiledFit compiledFit(const Kernel &k) {
  Fit f;
  f.Result.Exact = !hasSubByte(k);
  for (const Buffer &p : k.Params)
    if (isFloat8(p->Type) || isSubByte(p->Type))
      f.Result.Exact = false;
  f.stmt(k.Body, 1);
  return f.Result;
}

void setCompiledRun(CompiledRun run) { gCompiledRun = run; }

void evaluate(const Kernel &k, const std::vector<void *> &args, int64_t maxIterations) {
  static const bool interpretAll = [] {
    const char *e = std::getenv("MLCC_FOLD_INTERPRET");
    return e && *e && std::string(e) != "0";
  }();
  if (gCompiledRun && !interpretAll) {
    CompiledFit f = compiledFit(k);
    // The compiled run costs a few milliseconds to compile: for kernels the
    // interpreter would take longer over.
    if (f.Exact && f.Work >= kCompiledWork && (maxIterations < 0 || f.Iterations <= maxIterations) &&
        !gCompiledRunFailed) {
      try {
        gCompiledRun(k, args);
        return;
      } catch (const CompileError &) {
        // A process that cannot run what it compiles (no executable
        // memory): the interpreter, now and from here on. It overwrites
        // every output the compiled run may have begun.
        gCompiledRunFailed = true;
      }
    }
  }
  interpret(k, args, maxIterations);
}

} // namespace mlcc::kir
