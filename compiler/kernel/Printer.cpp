//===- Printer.cpp - The kernel IR as text --------------------------------===//
//
// kir::print: a kernel or an expression in the textual form of --emit
// kernels, the IR dumps and the tests' expected outputs.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/KernelIR.h"

#include "compiler/kernel/PrintNames.h"
#include "compiler/kernel/ScalarEval.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace mlcc::kir {

namespace {

class Printer {
public:
  explicit Printer(bool canonical) : Names(canonical) {}

  const std::string &name(const VarNode *v) { return Names.name(v); }
  const std::string &name(const BufferNode *b) { return Names.name(b); }

  static std::string constText(const ExprNode &e) {
    char buf[64];
    if (isFloat(e.Type)) {
      std::snprintf(buf, sizeof buf, "%a", e.FloatValue);
      return std::string(buf) + ":" + dtypeName(e.Type);
    }
    if (e.Type == DType::Bool)
      return e.IntValue ? "true" : "false";
    if (e.Type == DType::Index)
      return std::to_string(e.IntValue);
    if (e.Type == DType::U64)
      std::snprintf(buf, sizeof buf, "%" PRIu64, (uint64_t)e.IntValue);
    else
      std::snprintf(buf, sizeof buf, "%" PRId64, e.IntValue);
    return std::string(buf) + ":" + dtypeName(e.Type);
  }

  void expr(std::ostream &os, const Expr &e) {
    switch (e->Kind) {
    case ExprKind::Const:
      os << constText(*e);
      return;
    case ExprKind::VarRef:
      os << name(e->V.get());
      return;
    case ExprKind::Load:
      os << name(e->Buf.get()) << "[";
      expr(os, e->A);
      if (e->Lanes > 1)
        os << " +" << e->Lanes;
      if (e->Lanes > 1 && e->Stride != 1)
        os << " step " << e->Stride;
      os << "]";
      return;
    case ExprKind::Broadcast:
      os << "x" << e->Lanes << "(";
      expr(os, e->A);
      if (e->A->Lanes > 1)
        os << "[" << e->IntValue << "]";
      os << ")";
      return;
    case ExprKind::Unary:
      os << unOpName(e->Un) << "(";
      expr(os, e->A);
      os << ")";
      return;
    case ExprKind::Binary: {
      const char *sym = nullptr;
      switch (e->Bin) {
      case BinOp::Add: sym = " + "; break;
      case BinOp::Sub: sym = " - "; break;
      case BinOp::Mul: sym = " * "; break;
      case BinOp::Div: sym = " / "; break;
      case BinOp::Rem: sym = " % "; break;
      case BinOp::Eq: sym = " == "; break;
      case BinOp::Ne: sym = " != "; break;
      case BinOp::Lt: sym = " < "; break;
      case BinOp::Le: sym = " <= "; break;
      case BinOp::Gt: sym = " > "; break;
      case BinOp::Ge: sym = " >= "; break;
      case BinOp::And: sym = " && "; break;
      case BinOp::Or: sym = " || "; break;
      default: break;
      }
      if (sym) {
        os << "(";
        expr(os, e->A);
        os << sym;
        expr(os, e->B);
        os << ")";
      } else {
        os << binOpName(e->Bin) << "(";
        expr(os, e->A);
        os << ", ";
        expr(os, e->B);
        os << ")";
      }
      return;
    }
    case ExprKind::Select:
      os << "select(";
      expr(os, e->A);
      os << ", ";
      expr(os, e->B);
      os << ", ";
      expr(os, e->C);
      os << ")";
      return;
    case ExprKind::BitCast:
      os << "bitcast<" << dtypeName(e->Type) << ">(";
      expr(os, e->A);
      os << ")";
      return;
    case ExprKind::Cast:
      os << dtypeName(e->Type);
      if (e->Lanes > 1)
        os << "x" << e->Lanes;
      os << "(";
      expr(os, e->A);
      os << ")";
      return;
    }
  }

  void stmt(std::ostream &os, const Stmt &s, int depth) {
    std::string ind((size_t)depth * 2, ' ');
    switch (s->Kind) {
    case StmtKind::Block:
      for (auto &c : s->Body)
        stmt(os, c, depth);
      return;
    case StmtKind::For:
      os << ind << "for " << name(s->LoopVar.get()) << " in [";
      expr(os, s->Begin);
      os << ", ";
      expr(os, s->End);
      os << ")";
      if (s->Loop != LoopKind::Serial)
        os << " " << loopKindName(s->Loop);
      os << ":\n";
      stmt(os, s->Inner, depth + 1);
      return;
    case StmtKind::Store:
      os << ind << name(s->Buf.get()) << "[";
      expr(os, s->Index);
      if (s->Value->Lanes > 1)
        os << " +" << s->Value->Lanes;
      if (s->Stride > 1)
        os << " stride " << s->Stride;
      os << "] = ";
      expr(os, s->Value);
      os << "\n";
      return;
    case StmtKind::If:
      os << ind << "if ";
      expr(os, s->Cond);
      os << ":\n";
      stmt(os, s->Inner, depth + 1);
      if (s->Else) {
        os << ind << "else:\n";
        stmt(os, s->Else, depth + 1);
      }
      return;
    case StmtKind::Alloc:
      os << ind << (s->Buf->Kind == BufferKind::Shared ? "alloc shared " : "alloc ")
         << name(s->Buf.get()) << ": " << dtypeName(s->Buf->Type) << "[" << s->Buf->Size
         << "]\n";
      stmt(os, s->Inner, depth + 1);
      return;
    case StmtKind::Barrier:
      os << ind << (s->Warp ? "barrier warp\n" : "barrier\n");
      return;
    }
  }

private:
  PrintNames Names;
};

} // namespace

std::string print(const Kernel &k, bool withName) {
  Printer p(!withName);
  std::ostringstream os;
  os << "kernel";
  if (withName)
    os << " " << k.Name;
  os << "(";
  for (size_t i = 0; i < k.Params.size(); ++i) {
    const auto &b = k.Params[i];
    os << (i ? ", " : "") << p.name(b.get()) << ": " << dtypeName(b->Type)
       << "[" << b->Size << "]";
    if (i < k.Written.size() && k.Written[i])
      os << " out";
  }
  os << ")\n";
  if (const GemmCall *g = k.Gemm.get())
    os << "  // gemm " << p.name(g->A.get()) << (g->TransA ? "^T" : "") << " x "
       << p.name(g->B.get()) << (g->TransB ? "^T" : "") << " -> " << p.name(g->C.get())
       << ": batch " << g->Batch << ", " << g->M << "x" << g->N << "x" << g->K << ", ld "
       << g->Lda << "/" << g->Ldb << "/" << g->Ldc << ", strides " << g->StrideA << "/"
       << g->StrideB << "/" << g->StrideC << ", alpha " << gemmAlphaText(g->Alpha) << "\n";
  p.stmt(os, k.Body, 1);
  return os.str();
}

std::string print(const Expr &e) {
  Printer p(false);
  std::ostringstream os;
  p.expr(os, e);
  return os.str();
}

} // namespace mlcc::kir
