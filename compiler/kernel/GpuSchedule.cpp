#include "compiler/kernel/GpuSchedule.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/kernel/Schedule.h"
#include "compiler/support/Error.h"

namespace mlcc::kir {

namespace {

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

/// `s` as a launch, or none when it has no iterations.
std::optional<Stmt> toLaunch(const Stmt &s, const GpuTarget &t) {
  if (s->Kind != StmtKind::For || !threadable(*s))
    return launch(1, 1, [&](const Expr &) { return s; });
  // The nest of threadable loops, outermost first.
  std::vector<const StmtNode *> nest{s.get()};
  Stmt inner = onlyStatement(s->Inner);
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
  int64_t threads =
      std::min<int64_t>(t.ThreadsPerBlock, (points + 31) / 32 * 32);
  int64_t blocks = (points + threads - 1) / threads;
  return launch(blocks, threads, [&](const Expr &flat) {
    Stmt body = inner;
    int64_t below = points;
    for (size_t i = 0; i < nest.size(); ++i) {
      below /= extents[i];
      Expr v = below > 1 ? flat / below : flat;
      if (i > 0)
        v = v % extents[i];
      body = substitute(body, nest[i]->LoopVar, nest[i]->Begin + v);
    }
    if (blocks * threads != points)
      body = ifThen(lt(flat, indexConst(points)), body);
    return body;
  });
}

} // namespace

Kernel mapToGpu(const Kernel &k, const GpuTarget &t) {
  MLCC_CHECK(t.ThreadsPerBlock % 32 == 0 && t.ThreadsPerBlock > 0,
             "threads per block must be a multiple of 32");
  std::vector<Stmt> top, launches;
  flatten(k.Body, top);
  for (const Stmt &s : top)
    if (auto l = toLaunch(s, t))
      launches.push_back(*l);
  Kernel r = k;
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
    Stmt thread = onlyStatement(s->Inner);
    MLCC_CHECK(thread && thread->Kind == StmtKind::For &&
                   thread->Loop == LoopKind::GpuThread && constantBounds(*thread) &&
                   thread->Begin->IntValue == 0,
               "kernel " << k.Name << ": a launch without its thread loop");
    out.push_back({s, s->End->IntValue, thread->End->IntValue});
  }
  return out;
}

void scheduleProgramForGpu(Program &p, const GpuTarget &t) {
  for (auto &k : p.Kernels)
    k = mapToGpu(collapse(k), t);
}

} // namespace mlcc::kir
