#include "compiler/kernel/Equality.h"

#include "compiler/kernel/PrintNames.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace mlcc::kir {

namespace {

/// Walks two kernels, expressions or statements side by side and hands each
/// pair of corresponding tokens to `W`. The comparer orders the pair and
/// stops at the first difference; the hasher walks a node against itself and
/// mixes in one side. One walk defines both, so structurally equal things
/// hash alike, and the tokens follow print() field by field (the order of
/// first appearance, which names variables and buffers, included).
///
/// W provides: num(a, b) for integers, enums and flags (as uint64_t: any
/// injective mapping keeps the order total), text(a, b) for strings, and
/// var(a, b), buf(a, b) for the names of variables and buffers.
template <class W> class Walk {
public:
  explicit Walk(W &w) : Tok(w) {}

  int expr(const ExprNode &a, const ExprNode &b) {
    if (int c = num(a.Kind, b.Kind))
      return c;
    switch (a.Kind) {
    case ExprKind::Const:
      return constant(a, b);
    case ExprKind::VarRef:
      return Tok.var(a.V.get(), b.V.get());
    case ExprKind::Load:
      if (int c = Tok.buf(a.Buf.get(), b.Buf.get()))
        return c;
      if (int c = expr(*a.A, *b.A))
        return c;
      if (int c = num(a.Lanes, b.Lanes))
        return c;
      // The stride of a scalar load is not printed.
      return a.Lanes > 1 ? num(a.Stride, b.Stride) : 0;
    case ExprKind::Broadcast:
      if (int c = num(a.Lanes, b.Lanes))
        return c;
      if (int c = num(a.IntValue, b.IntValue))
        return c;
      return expr(*a.A, *b.A);
    case ExprKind::Unary:
      if (int c = num(a.Un, b.Un))
        return c;
      return expr(*a.A, *b.A);
    case ExprKind::Binary:
      if (int c = num(a.Bin, b.Bin))
        return c;
      if (int c = expr(*a.A, *b.A))
        return c;
      return expr(*a.B, *b.B);
    case ExprKind::Select:
      if (int c = expr(*a.A, *b.A))
        return c;
      if (int c = expr(*a.B, *b.B))
        return c;
      return expr(*a.C, *b.C);
    case ExprKind::BitCast:
      if (int c = num(a.Type, b.Type))
        return c;
      return expr(*a.A, *b.A);
    case ExprKind::Cast:
      if (int c = num(a.Type, b.Type))
        return c;
      if (int c = num(a.Lanes, b.Lanes))
        return c;
      return expr(*a.A, *b.A);
    }
    return 0;
  }

  /// The statements `a` and `b` print, Blocks flattened.
  int stmts(const Stmt &a, const Stmt &b) {
    std::vector<const StmtNode *> fa, fb;
    flatten(a, fa);
    if (b != a)
      flatten(b, fb);
    const std::vector<const StmtNode *> &sb = b != a ? fb : fa;
    if (int c = num(fa.size(), sb.size()))
      return c;
    for (size_t i = 0; i < fa.size(); ++i)
      if (int c = stmt(*fa[i], *sb[i]))
        return c;
    return 0;
  }

  int kernel(const Kernel &a, const Kernel &b) {
    if (int c = num(a.Params.size(), b.Params.size()))
      return c;
    for (size_t i = 0; i < a.Params.size(); ++i) {
      const BufferNode &pa = *a.Params[i], &pb = *b.Params[i];
      if (int c = Tok.buf(&pa, &pb))
        return c;
      if (int c = num(pa.Type, pb.Type))
        return c;
      if (int c = num(pa.Size, pb.Size))
        return c;
      bool outA = i < a.Written.size() && a.Written[i];
      bool outB = i < b.Written.size() && b.Written[i];
      if (int c = num(outA, outB))
        return c;
    }
    if (int c = num(a.Gemm != nullptr, b.Gemm != nullptr))
      return c;
    if (a.Gemm)
      if (int c = gemm(*a.Gemm, *b.Gemm))
        return c;
    return stmts(a.Body, b.Body);
  }

private:
  template <class T> int num(T a, T b) { return Tok.num((uint64_t)a, (uint64_t)b); }

  static void flatten(const Stmt &s, std::vector<const StmtNode *> &out) {
    if (s->Kind != StmtKind::Block) {
      out.push_back(s.get());
      return;
    }
    for (const Stmt &c : s->Body)
      flatten(c, out);
  }

  /// A float constant's bits, except that NaNs keep only their sign.
  static std::pair<bool, uint64_t> floatToken(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    if (std::isnan(v))
      return {true, bits >> 63};
    return {false, bits};
  }

  int constant(const ExprNode &a, const ExprNode &b) {
    // Every type prints its constants in a form of its own (a suffix, or
    // true/false, or a bare number for Index), so the type is a token.
    if (int c = num(a.Type, b.Type))
      return c;
    if (isFloat(a.Type)) {
      auto [nanA, bitsA] = floatToken(a.FloatValue);
      auto [nanB, bitsB] = floatToken(b.FloatValue);
      if (int c = num(nanA, nanB))
        return c;
      return num(bitsA, bitsB);
    }
    if (a.Type == DType::Bool)
      return num(a.IntValue != 0, b.IntValue != 0);
    return num(a.IntValue, b.IntValue);
  }

  int stmt(const StmtNode &a, const StmtNode &b) {
    if (int c = num(a.Kind, b.Kind))
      return c;
    switch (a.Kind) {
    case StmtKind::Block: // flattened by stmts()
      return 0;
    case StmtKind::For:
      if (int c = Tok.var(a.LoopVar.get(), b.LoopVar.get()))
        return c;
      if (int c = expr(*a.Begin, *b.Begin))
        return c;
      if (int c = expr(*a.End, *b.End))
        return c;
      if (int c = num(a.Loop, b.Loop))
        return c;
      return stmts(a.Inner, b.Inner);
    case StmtKind::Store:
      if (int c = Tok.buf(a.Buf.get(), b.Buf.get()))
        return c;
      if (int c = expr(*a.Index, *b.Index))
        return c;
      if (int c = num(a.Value->Lanes, b.Value->Lanes))
        return c;
      if (int c = num(a.Stride, b.Stride))
        return c;
      return expr(*a.Value, *b.Value);
    case StmtKind::If:
      if (int c = expr(*a.Cond, *b.Cond))
        return c;
      if (int c = stmts(a.Inner, b.Inner))
        return c;
      if (int c = num(a.Else != nullptr, b.Else != nullptr))
        return c;
      return a.Else ? stmts(a.Else, b.Else) : 0;
    case StmtKind::Alloc:
      // Printed as "alloc shared" or "alloc": a Local and a Param look alike
      // (and a Param is never allocated).
      if (int c = num(a.Buf->Kind == BufferKind::Shared, b.Buf->Kind == BufferKind::Shared))
        return c;
      if (int c = Tok.buf(a.Buf.get(), b.Buf.get()))
        return c;
      if (int c = num(a.Buf->Type, b.Buf->Type))
        return c;
      if (int c = num(a.Buf->Size, b.Buf->Size))
        return c;
      return stmts(a.Inner, b.Inner);
    case StmtKind::Barrier:
      return num(a.Warp, b.Warp);
    }
    return 0;
  }

  int gemm(const GemmCall &a, const GemmCall &b) {
    if (int c = Tok.buf(a.A.get(), b.A.get()))
      return c;
    if (int c = num(a.TransA, b.TransA))
      return c;
    if (int c = Tok.buf(a.B.get(), b.B.get()))
      return c;
    if (int c = num(a.TransB, b.TransB))
      return c;
    if (int c = Tok.buf(a.C.get(), b.C.get()))
      return c;
    for (auto field : {&GemmCall::Batch, &GemmCall::M, &GemmCall::N, &GemmCall::K,
                       &GemmCall::Lda, &GemmCall::Ldb, &GemmCall::Ldc, &GemmCall::StrideA,
                       &GemmCall::StrideB, &GemmCall::StrideC})
      if (int c = num(a.*field, b.*field))
        return c;
    // Alpha is compared as printed. (The kernel's body multiplies by it
    // too, so kernels of different alphas differ there anyway.)
    return Tok.text(gemmAlphaText(a.Alpha), gemmAlphaText(b.Alpha));
  }

  W &Tok;
};

int sign(int c) { return (c > 0) - (c < 0); }

/// Orders token pairs; each side names its variables and buffers in its own
/// table, as two separate print() calls would.
class Comparer {
public:
  explicit Comparer(bool canonical) : NamesA(canonical), NamesB(canonical) {}

  int num(uint64_t a, uint64_t b) { return (a > b) - (a < b); }
  int text(const std::string &a, const std::string &b) { return sign(a.compare(b)); }
  int var(const VarNode *a, const VarNode *b) { return text(NamesA.name(a), NamesB.name(b)); }
  int buf(const BufferNode *a, const BufferNode *b) {
    return text(NamesA.name(a), NamesB.name(b));
  }

private:
  PrintNames NamesA, NamesB;
};

/// Mixes in the first token of each pair (the walk passes a node with
/// itself).
class Hasher {
public:
  explicit Hasher(bool canonical) : Names(canonical) {}

  int num(uint64_t a, uint64_t) {
    mix(a);
    return 0;
  }
  int text(const std::string &a, const std::string &) {
    mix(std::hash<std::string>{}(a));
    return 0;
  }
  int var(const VarNode *a, const VarNode *) { return text(Names.name(a), {}); }
  int buf(const BufferNode *a, const BufferNode *) { return text(Names.name(a), {}); }

  size_t value() const { return (size_t)H; }

private:
  /// Combines like boost::hash_combine with a 64-bit constant; the tokens
  /// are many and small, so the order they come in matters to the result.
  void mix(uint64_t v) { H ^= v + 0x9e3779b97f4a7c15ull + (H << 6) + (H >> 2); }

  PrintNames Names;
  uint64_t H = 0;
};

// print(e) names by the nodes' own names, print(k, false) canonically.
constexpr bool kExprNames = false, kKernelNames = true;

} // namespace

int structuralCompare(const Expr &a, const Expr &b) {
  Comparer c(kExprNames);
  return Walk<Comparer>(c).expr(*a, *b);
}

bool structuralEqual(const Expr &a, const Expr &b) { return structuralCompare(a, b) == 0; }

size_t structuralHash(const Expr &e) {
  Hasher h(kExprNames);
  Walk<Hasher>(h).expr(*e, *e);
  return h.value();
}

int structuralCompare(const Kernel &a, const Kernel &b) {
  Comparer c(kKernelNames);
  return Walk<Comparer>(c).kernel(a, b);
}

bool structuralEqual(const Kernel &a, const Kernel &b) { return structuralCompare(a, b) == 0; }

size_t structuralHash(const Kernel &k) {
  Hasher h(kKernelNames);
  Walk<Hasher>(h).kernel(k, k);
  return h.value();
}

} // namespace mlcc::kir
