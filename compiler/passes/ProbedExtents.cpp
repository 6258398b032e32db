//===- ProbedExtents.cpp - A kernel's run-time extents from fixed lowerings ===//
#include "compiler/passes/ProbedExtents.h"

#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Equality.h"

#include <cmath>
#include <optional>

namespace mlcc::passes {

using namespace kir;

namespace {

/// Walks the kernel at MAX and the probes side by side (ProbedExtents.h).
class Merger {
public:
  Merger(const std::vector<int64_t> &deltas, Expr dim, int64_t max)
      : Deltas(deltas), Dim(std::move(dim)), Max(max) {}

  std::string Why;

  Expr expr(const Expr &e0, const std::vector<Expr> &ps) {
    if (!e0 || !Why.empty())
      return e0;
    bool same = true;
    for (const Expr &p : ps) {
      if (!p)
        return differ("an operand is missing");
      same &= structuralEqual(e0, p);
    }
    if (same)
      return e0;
    for (const Expr &p : ps)
      if (p->Kind != e0->Kind || p->Type != e0->Type || p->Lanes != e0->Lanes ||
          p->Stride != e0->Stride)
        return differ("the expression " + print(e0) + " at MAX is " + print(p) + " at " +
                      at(p, ps));
    auto sub = [&](Expr ExprNode::*field) {
      std::vector<Expr> xs;
      for (const Expr &p : ps)
        xs.push_back((*p).*field);
      return expr((*e0).*field, xs);
    };
    switch (e0->Kind) {
    case ExprKind::Const:
      return constantLine(e0, ps);
    case ExprKind::Load: {
      for (const Expr &p : ps)
        if (p->Buf->Name != e0->Buf->Name)
          return differ("loads from other buffers");
      Expr index = sub(&ExprNode::A);
      if (!Why.empty())
        return nullptr;
      return e0->Lanes > 1 ? vload(e0->Buf, index, e0->Lanes, e0->Stride) : load(e0->Buf, index);
    }
    case ExprKind::Unary:
      for (const Expr &p : ps)
        if (p->Un != e0->Un)
          return differ(print(e0) + " at MAX is " + print(p) + " at " + at(p, ps));
      {
        Expr a = sub(&ExprNode::A);
        return Why.empty() ? unary(e0->Un, a) : nullptr;
      }
    case ExprKind::Binary:
      for (const Expr &p : ps)
        if (p->Bin != e0->Bin)
          return differ(print(e0) + " at MAX is " + print(p) + " at " + at(p, ps));
      {
        Expr a = sub(&ExprNode::A), b = sub(&ExprNode::B);
        return Why.empty() ? binary(e0->Bin, a, b) : nullptr;
      }
    case ExprKind::Select:
      {
        Expr a = sub(&ExprNode::A), b = sub(&ExprNode::B), c = sub(&ExprNode::C);
        return Why.empty() ? select(a, b, c) : nullptr;
      }
    case ExprKind::Cast:
      {
        Expr a = sub(&ExprNode::A);
        return Why.empty() ? cast(e0->Type, a) : nullptr;
      }
    case ExprKind::BitCast:
      {
        Expr a = sub(&ExprNode::A);
        return Why.empty() ? bitcast(e0->Type, a) : nullptr;
      }
    case ExprKind::Broadcast: {
      for (const Expr &p : ps)
        if (p->IntValue != e0->IntValue || p->A->Lanes != e0->A->Lanes)
          return differ("another broadcast");
      Expr a = sub(&ExprNode::A);
      if (!Why.empty())
        return nullptr;
      return e0->A->Lanes > 1 ? broadcastLane(a, e0->IntValue, e0->Lanes) : broadcast(a, e0->Lanes);
    }
    case ExprKind::VarRef:
      return differ("reads another variable");
    }
    return differ("an unknown expression");
  }

  Stmt stmt(const Stmt &s0, const std::vector<Stmt> &ps) {
    if (!s0 || !Why.empty())
      return s0;
    for (const Stmt &p : ps)
      if (!p || p->Kind != s0->Kind)
        return differStmt("the statements differ");
    auto exprs = [&](Expr StmtNode::*field) {
      std::vector<Expr> xs;
      for (const Stmt &p : ps)
        xs.push_back((*p).*field);
      return expr((*s0).*field, xs);
    };
    auto stmts = [&](Stmt StmtNode::*field) {
      std::vector<Stmt> xs;
      for (const Stmt &p : ps) {
        if (!((*p).*field) != !((*s0).*field)) {
          differStmt("a branch is missing");
          return Stmt();
        }
        xs.push_back((*p).*field);
      }
      return stmt((*s0).*field, xs);
    };
    switch (s0->Kind) {
    case StmtKind::Block: {
      std::vector<Stmt> body;
      for (const Stmt &p : ps)
        if (p->Body.size() != s0->Body.size())
          return differStmt("a block has another number of statements");
      for (size_t i = 0; i < s0->Body.size(); ++i) {
        std::vector<Stmt> xs;
        for (const Stmt &p : ps)
          xs.push_back(p->Body[i]);
        body.push_back(stmt(s0->Body[i], xs));
      }
      return Why.empty() ? block(std::move(body)) : s0;
    }
    case StmtKind::For:
      for (const Stmt &p : ps)
        if (p->Loop != s0->Loop || p->LoopVar->Name != s0->LoopVar->Name)
          return differStmt("a loop of another kind");
      {
        Expr begin = exprs(&StmtNode::Begin), end = exprs(&StmtNode::End);
        Stmt inner = stmts(&StmtNode::Inner);
        return Why.empty() ? forLoop(s0->LoopVar, begin, end, inner, s0->Loop) : s0;
      }
    case StmtKind::Store:
      for (const Stmt &p : ps)
        if (p->Buf->Name != s0->Buf->Name || p->Stride != s0->Stride)
          return differStmt("stores to another buffer");
      {
        Expr index = exprs(&StmtNode::Index), value = exprs(&StmtNode::Value);
        return Why.empty() ? store(s0->Buf, index, value, s0->Stride) : s0;
      }
    case StmtKind::If: {
      Expr cond = exprs(&StmtNode::Cond);
      Stmt inner = stmts(&StmtNode::Inner), other = stmts(&StmtNode::Else);
      return Why.empty() ? ifThen(cond, inner, other) : s0;
    }
    case StmtKind::Alloc:
      for (const Stmt &p : ps)
        if (p->Buf->Name != s0->Buf->Name || p->Buf->Type != s0->Buf->Type ||
            p->Buf->Size > s0->Buf->Size)
          return differStmt("a local buffer of another kind");
      {
        Stmt inner = stmts(&StmtNode::Inner);
        return Why.empty() ? alloc(s0->Buf, inner) : s0;
      }
    case StmtKind::Barrier:
      return s0;
    }
    return differStmt("an unknown statement");
  }

private:
  /// The line (an Index expression of the dimension) through whole numbers
  /// `c0` at MAX and `cs[p]` at MAX - Deltas[p]; null where there is none.
  Expr line(int64_t c0, const std::vector<int64_t> &cs) {
    if ((c0 - cs[0]) % Deltas[0] != 0)
      return nullptr;
    const int64_t slope = (c0 - cs[0]) / Deltas[0];
    for (size_t p = 1; p < cs.size(); ++p)
      if (c0 - cs[p] != slope * Deltas[p])
        return nullptr;
    return indexConst(c0 - slope * Max) + Dim * indexConst(slope);
  }

  /// A whole number near `v` (within float rounding), if any.
  static std::optional<int64_t> whole(double v) {
    if (!std::isfinite(v) || std::fabs(v) > 1e15)
      return std::nullopt;
    double r = std::nearbyint(v);
    if (std::fabs(v - r) > 1e-6 * std::max(1.0, std::fabs(v)))
      return std::nullopt;
    return (int64_t)r;
  }

  /// A constant that follows the extent: an integer on a line in the
  /// dimension, or a float that is such a count (N) or its reciprocal (1/N,
  /// the scale of a mean), computed from the dimension when the kernel runs.
  Expr constantLine(const Expr &e0, const std::vector<Expr> &ps) {
    auto offLine = [&] {
      return differ("the constant " + print(e0) + " does not follow the extent on a line (" +
                    print(ps.back()) + " at " + std::to_string(Max - Deltas.back()) + ")");
    };
    if (isInteger(e0->Type) || e0->Type == DType::Index) {
      std::vector<int64_t> cs;
      for (const Expr &p : ps)
        cs.push_back(p->IntValue);
      Expr l = line(e0->IntValue, cs);
      if (!l)
        return offLine();
      return e0->Type == DType::Index ? l : cast(e0->Type, l);
    }
    if (!isFloat(e0->Type))
      return differ("the constant " + print(e0) + " follows the extent");
    for (bool reciprocal : {false, true}) {
      auto count = [&](const Expr &e) {
        return whole(reciprocal ? 1.0 / e->FloatValue : e->FloatValue);
      };
      std::optional<int64_t> c0 = count(e0);
      std::vector<int64_t> cs;
      for (const Expr &p : ps)
        if (std::optional<int64_t> c = count(p))
          cs.push_back(*c);
      if (!c0 || cs.size() != ps.size())
        continue;
      if (Expr l = line(*c0, cs)) {
        Expr n = cast(e0->Type, l);
        return reciprocal ? binary(BinOp::Div, constant(e0->Type, 1.0), n) : n;
      }
    }
    return differ("the constant " + print(e0) + " follows the extent, and neither it nor its "
                  "reciprocal is a whole number on a line in it");
  }

  std::string at(const Expr &p, const std::vector<Expr> &ps) {
    for (size_t i = 0; i < ps.size(); ++i)
      if (ps[i] == p)
        return std::to_string(Max - Deltas[i]);
    return "?";
  }

  Expr differ(const std::string &why) {
    if (Why.empty())
      Why = why;
    return nullptr;
  }
  Stmt differStmt(const std::string &why) {
    if (Why.empty())
      Why = why;
    return nullptr;
  }

  const std::vector<int64_t> &Deltas;
  Expr Dim;
  int64_t Max;
};

} // namespace

bool mergeProbedKernels(Kernel &atMax, const std::vector<Kernel> &probes,
                        const std::vector<int64_t> &deltas, const Expr &dim, int64_t max,
                        std::string &why) {
  if (atMax.Gemm) {
    why = "its kernel is described as a library's matrix product";
    return false;
  }
  std::vector<Stmt> bodies;
  for (const Kernel &p : probes) {
    // The dimension's parameter is the last of atMax's (added after it was
    // lowered); the probes have the others.
    if (p.Params.size() + 1 != atMax.Params.size()) {
      why = "its kernel has other parameters";
      return false;
    }
    for (size_t i = 0; i < p.Params.size(); ++i)
      if (p.Params[i]->Name != atMax.Params[i]->Name || p.Params[i]->Type != atMax.Params[i]->Type) {
        why = "its kernel has other parameters";
        return false;
      }
    bodies.push_back(p.Body);
  }
  Merger m(deltas, dim, max);
  Stmt body = m.stmt(atMax.Body, bodies);
  if (!m.Why.empty() || !body) {
    why = m.Why.empty() ? "the kernels differ" : m.Why;
    return false;
  }
  atMax.Body = body;
  atMax.finalize();
  return true;
}

} // namespace mlcc::passes
