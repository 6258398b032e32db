#include "compiler/kernel/Builder.h"

#include "compiler/kernel/Mutator.h"
#include "compiler/support/Error.h"

#include <cmath>
#include <limits>
#include <unordered_map>

namespace mlcc::kir {

Expr constLike(const Expr &like, double value) {
  return constant(like->Type, value);
}

namespace {
Expr lit(const Expr &like, int64_t v) { return constantInt(like->Type, v); }
Expr lit(const Expr &like, double v) { return constant(like->Type, v); }
} // namespace

Expr operator+(const Expr &a, const Expr &b) { return binary(BinOp::Add, a, b); }
Expr operator-(const Expr &a, const Expr &b) { return binary(BinOp::Sub, a, b); }
Expr operator*(const Expr &a, const Expr &b) { return binary(BinOp::Mul, a, b); }
Expr operator/(const Expr &a, const Expr &b) { return binary(BinOp::Div, a, b); }
Expr operator%(const Expr &a, const Expr &b) { return binary(BinOp::Rem, a, b); }
Expr operator-(const Expr &a) { return unary(UnOp::Neg, a); }
Expr operator+(const Expr &a, int64_t b) { return a + lit(a, b); }
Expr operator-(const Expr &a, int64_t b) { return a - lit(a, b); }
Expr operator*(const Expr &a, int64_t b) { return a * lit(a, b); }
Expr operator/(const Expr &a, int64_t b) { return a / lit(a, b); }
Expr operator%(const Expr &a, int64_t b) { return a % lit(a, b); }
Expr operator+(const Expr &a, int b) { return a + (int64_t)b; }
Expr operator-(const Expr &a, int b) { return a - (int64_t)b; }
Expr operator*(const Expr &a, int b) { return a * (int64_t)b; }
Expr operator/(const Expr &a, int b) { return a / (int64_t)b; }
Expr operator%(const Expr &a, int b) { return a % (int64_t)b; }
Expr operator+(const Expr &a, double b) { return a + lit(a, b); }
Expr operator-(const Expr &a, double b) { return a - lit(a, b); }
Expr operator*(const Expr &a, double b) { return a * lit(a, b); }
Expr operator/(const Expr &a, double b) { return a / lit(a, b); }
Expr operator+(int64_t a, const Expr &b) { return lit(b, a) + b; }
Expr operator-(int64_t a, const Expr &b) { return lit(b, a) - b; }
Expr operator*(int64_t a, const Expr &b) { return lit(b, a) * b; }
Expr operator+(double a, const Expr &b) { return lit(b, a) + b; }
Expr operator-(double a, const Expr &b) { return lit(b, a) - b; }
Expr operator*(double a, const Expr &b) { return lit(b, a) * b; }
Expr operator/(double a, const Expr &b) { return lit(b, a) / b; }

Expr lt(const Expr &a, const Expr &b) { return binary(BinOp::Lt, a, b); }
Expr le(const Expr &a, const Expr &b) { return binary(BinOp::Le, a, b); }
Expr gt(const Expr &a, const Expr &b) { return binary(BinOp::Gt, a, b); }
Expr ge(const Expr &a, const Expr &b) { return binary(BinOp::Ge, a, b); }
Expr eq(const Expr &a, const Expr &b) { return binary(BinOp::Eq, a, b); }
Expr ne(const Expr &a, const Expr &b) { return binary(BinOp::Ne, a, b); }
Expr lt(const Expr &a, double b) { return lt(a, lit(a, b)); }
Expr le(const Expr &a, double b) { return le(a, lit(a, b)); }
Expr gt(const Expr &a, double b) { return gt(a, lit(a, b)); }
Expr ge(const Expr &a, double b) { return ge(a, lit(a, b)); }
Expr eq(const Expr &a, double b) { return eq(a, lit(a, b)); }
Expr ne(const Expr &a, double b) { return ne(a, lit(a, b)); }
Expr land(const Expr &a, const Expr &b) { return binary(BinOp::And, a, b); }
Expr lor(const Expr &a, const Expr &b) { return binary(BinOp::Or, a, b); }
Expr lnot(const Expr &a) { return unary(UnOp::Not, a); }

Expr min(const Expr &a, const Expr &b) { return binary(BinOp::Min, a, b); }
Expr max(const Expr &a, const Expr &b) { return binary(BinOp::Max, a, b); }
Expr min(const Expr &a, double b) { return min(a, lit(a, b)); }
Expr max(const Expr &a, double b) { return max(a, lit(a, b)); }
Expr clamp(const Expr &x, const Expr &lo, const Expr &hi) {
  return min(max(x, lo), hi);
}
Expr abs(const Expr &a) { return unary(UnOp::Abs, a); }
Expr sqrt(const Expr &a) { return unary(UnOp::Sqrt, a); }
Expr exp(const Expr &a) { return unary(UnOp::Exp, a); }
Expr log(const Expr &a) { return unary(UnOp::Log, a); }
Expr tanh(const Expr &a) { return unary(UnOp::Tanh, a); }
Expr erf(const Expr &a) { return unary(UnOp::Erf, a); }
Expr floor(const Expr &a) { return unary(UnOp::Floor, a); }
Expr ceil(const Expr &a) { return unary(UnOp::Ceil, a); }
Expr pow(const Expr &a, const Expr &b) { return binary(BinOp::Pow, a, b); }

Expr floorDiv(const Expr &a, const Expr &b) {
  if (isFloat(a->Type))
    return floor(a / b);
  Expr q = a / b;
  if (isUnsignedInt(a->Type))
    return q;
  // Truncated quotient, minus one when the signs differ and it is inexact.
  Expr r = a % b;
  Expr adjust = land(ne(r, 0.0), ne(lt(r, 0.0), lt(b, 0.0)));
  return select(adjust, q - (int64_t)1, q);
}

Expr floorMod(const Expr &a, const Expr &b) {
  Expr r = a % b;
  if (isUnsignedInt(a->Type))
    return r;
  Expr adjust = land(ne(r, 0.0), ne(lt(r, 0.0), lt(b, 0.0)));
  return select(adjust, r + b, r);
}

Expr toIndex(const Expr &a) { return cast(DType::Index, a); }

Expr lowestValue(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
  case DType::F4E2M1:
    return constant(computeType(t), -std::numeric_limits<double>::infinity());
  case DType::I4: return constantInt(DType::I8, -8);
  case DType::I2: return constantInt(DType::I8, -2);
  case DType::U4:
  case DType::U2: return constantInt(DType::U8, 0);
  case DType::I8: return constantInt(t, INT8_MIN);
  case DType::I16: return constantInt(t, INT16_MIN);
  case DType::I32: return constantInt(t, INT32_MIN);
  case DType::I64: return constantInt(t, INT64_MIN);
  case DType::Bool: return constantInt(t, 0);
  default: return constantInt(t, 0); // unsigned
  }
}

Expr highestValue(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0:
  case DType::F4E2M1:
    return constant(computeType(t), std::numeric_limits<double>::infinity());
  case DType::I4: return constantInt(DType::I8, 7);
  case DType::I2: return constantInt(DType::I8, 1);
  case DType::U4: return constantInt(DType::U8, 15);
  case DType::U2: return constantInt(DType::U8, 3);
  case DType::I8: return constantInt(t, INT8_MAX);
  case DType::I16: return constantInt(t, INT16_MAX);
  case DType::I32: return constantInt(t, INT32_MAX);
  case DType::I64: return constantInt(t, INT64_MAX);
  case DType::U8: return constantInt(t, UINT8_MAX);
  case DType::U16: return constantInt(t, UINT16_MAX);
  case DType::U32: return constantInt(t, UINT32_MAX);
  case DType::U64: return constantInt(t, -1);
  case DType::Bool: return constantInt(t, 1);
  default: return constantInt(t, INT64_MAX);
  }
}

DType computeType(DType t) {
  if (t == DType::I4 || t == DType::I2)
    return DType::I8;
  if (t == DType::U4 || t == DType::U2)
    return DType::U8;
  return isNarrowFloat(t) ? DType::F32 : t;
}

// ---------------------------------------------------------------------------
// KernelBuilder
// ---------------------------------------------------------------------------

KernelBuilder::KernelBuilder(std::string name) : Name(std::move(name)) {
  push();
}

Buffer KernelBuilder::param(const std::string &name, DType type, int64_t size) {
  auto b = std::make_shared<BufferNode>();
  b->Name = name;
  b->Type = type;
  b->Size = size;
  b->Kind = BufferKind::Param;
  Params.push_back(b);
  return b;
}

void KernelBuilder::emit(Stmt s) {
  MLCC_CHECK(!Frames.empty(), "emit after finish");
  Frames.back().Stmts.push_back(std::move(s));
}

void KernelBuilder::store(const Buffer &buf, const Expr &index,
                          const Expr &value) {
  DeepestValue = std::max(DeepestValue, value->Depth);
  emit(kir::store(buf, index, value->Depth > kSplitDepth ? splitDeep(value) : value));
}

Expr KernelBuilder::splitDeep(const Expr &value) {
  // Bottom-up over the expression's DAG with an explicit stack (it may be
  // deeper than any recursion should go): each node is rebuilt on its
  // rebuilt operands, and one deeper than kSplitPiece is stored into a
  // scalar temporary of its own type and read back, which is exact.
  std::unordered_map<const ExprNode *, Expr> done;
  std::vector<std::pair<Expr, bool>> stack = {{value, false}};
  while (!stack.empty()) {
    auto [e, ready] = stack.back();
    if (done.count(e.get())) {
      stack.pop_back();
      continue;
    }
    if (!ready) {
      stack.back().second = true;
      for (const Expr *op : {&e->A, &e->B, &e->C})
        if (*op && !done.count(op->get()))
          stack.push_back({*op, false});
      continue;
    }
    stack.pop_back();
    auto get = [&](const Expr &x) { return x ? done.at(x.get()) : x; };
    Expr r = withOperands(e, get(e->A), get(e->B), get(e->C));
    if (r->Depth > kSplitPiece && r->Lanes == 1 && isStorable(r->Type)) {
      Local t = local("deep", r->Type);
      emit(kir::store(t.Buf, indexConst(0), r));
      r = t.get();
    }
    done.emplace(e.get(), r);
  }
  return done.at(value.get());
}

void KernelBuilder::push() { Frames.emplace_back(); }

Stmt KernelBuilder::pop() {
  Frame f = std::move(Frames.back());
  Frames.pop_back();
  Stmt body = block(std::move(f.Stmts));
  if (!body)
    body = block({});
  for (auto it = f.Locals.rbegin(); it != f.Locals.rend(); ++it)
    body = alloc(*it, body);
  return body;
}

void KernelBuilder::loop(const std::string &name, const Expr &begin,
                         const Expr &end, const std::function<void(Expr)> &body,
                         LoopKind kind) {
  if (begin->isConst() && end->isConst() && end->IntValue <= begin->IntValue)
    return; // empty range: nothing to emit
  auto v = std::make_shared<VarNode>();
  v->Name = name;
  push();
  body(varRef(v));
  Stmt inner = pop();
  if (inner->Kind == StmtKind::Block && inner->Body.empty())
    return;
  emit(forLoop(v, begin, end, inner, kind));
}

void KernelBuilder::loop(const std::string &name, int64_t extent,
                         const std::function<void(Expr)> &body, LoopKind kind) {
  if (extent == 1 && !KeepUnitLoops) {
    body(indexConst(0)); // a unit loop is just its body
    return;
  }
  loop(name, indexConst(0), indexConst(extent), body, kind);
}

void KernelBuilder::loopTo(const std::string &name, const Expr &extent,
                           const std::function<void(Expr)> &body, LoopKind kind) {
  if (extent->isConst())
    loop(name, extent->IntValue, body, kind);
  else
    loop(name, indexConst(0), extent, body, kind);
}

void KernelBuilder::loops(
    const std::vector<int64_t> &extents,
    const std::function<void(const std::vector<Expr> &)> &body,
    const std::string &prefix) {
  std::vector<Expr> e;
  for (int64_t x : extents)
    e.push_back(indexConst(x));
  loops(e, body, prefix);
}

void KernelBuilder::loops(
    const std::vector<Expr> &extents,
    const std::function<void(const std::vector<Expr> &)> &body,
    const std::string &prefix) {
  std::vector<Expr> idx;
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == extents.size()) {
      body(idx);
      return;
    }
    auto inner = [&](Expr i) {
      idx.push_back(i);
      rec(d + 1);
      idx.pop_back();
    };
    loopTo(prefix + std::to_string(d), extents[d], inner);
  };
  rec(0);
}

void KernelBuilder::ifThen(const Expr &cond, const std::function<void()> &thenBody,
                           const std::function<void()> &elseBody) {
  if (cond->isConst()) {
    if (cond->IntValue)
      thenBody();
    else if (elseBody)
      elseBody();
    return;
  }
  push();
  thenBody();
  Stmt t = pop();
  Stmt e;
  if (elseBody) {
    push();
    elseBody();
    e = pop();
  }
  emit(kir::ifThen(cond, t, e));
}

Local KernelBuilder::local(const std::string &name, DType type, int64_t size) {
  auto b = std::make_shared<BufferNode>();
  b->Name = name;
  b->Type = type;
  b->Size = size;
  b->Kind = BufferKind::Local;
  Frames.back().Locals.push_back(b);
  return Local{b};
}

Local KernelBuilder::local(const std::string &name, const Expr &init) {
  Local l = local(name, init->Type, 1);
  set(l, init);
  return l;
}

Kernel KernelBuilder::finish() {
  MLCC_CHECK(Frames.size() == 1, "unbalanced scopes in kernel " << Name);
  Kernel k;
  k.Name = Name;
  k.Params = Params;
  k.Body = pop();
  k.Gemm = Gemm;
  k.finalize();
  return k;
}

} // namespace mlcc::kir
