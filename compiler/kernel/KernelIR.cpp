//===- KernelIR.cpp - The kernel IR's nodes and their checked constructors ===//
//
// Names of loop kinds, and the Expr and Stmt constructors: each checks its
// operands' types and lanes and folds constant operands through ScalarEval
// (the one reference semantics). The verifier is Verify.cpp, the printer
// Printer.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/kernel/KernelIR.h"

#include "compiler/kernel/ScalarEval.h"
#include "compiler/support/Error.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace mlcc::kir {

const char *loopKindName(LoopKind kind) {
  switch (kind) {
  case LoopKind::Serial:
    return "serial";
  case LoopKind::Parallel:
    return "parallel";
  case LoopKind::GpuBlock:
    return "gpu_block";
  case LoopKind::GpuThread:
    return "gpu_thread";
  case LoopKind::Scalar:
    return "scalar";
  }
  return "?";
}

bool ExprNode::isConstValue(double v) const {
  if (Kind != ExprKind::Const)
    return false;
  return isFloat(Type) ? FloatValue == v : (double)IntValue == v;
}

// ---------------------------------------------------------------------------
// Expression constructors
// ---------------------------------------------------------------------------

namespace {

std::shared_ptr<ExprNode> make(ExprKind kind, DType type) {
  auto e = std::make_shared<ExprNode>();
  e->Kind = kind;
  e->Type = type;
  return e;
}

Scalar scalarOf(const Expr &e) { return Scalar{e->IntValue, e->FloatValue}; }

/// Sets `e`'s Depth from its operands (all set).
Expr withDepth(std::shared_ptr<ExprNode> e) {
  int d = 0;
  for (const Expr *op : {&e->A, &e->B, &e->C})
    if (*op)
      d = std::max(d, (*op)->Depth);
  e->Depth = d + 1;
  return e;
}

Expr fromScalar(DType type, Scalar s) {
  auto e = make(ExprKind::Const, type);
  s = normalize(type, s);
  e->IntValue = isFloat(type) ? 0 : s.I;
  e->FloatValue = isFloat(type) ? s.F : 0;
  return e;
}

bool isArithType(DType t) {
  return t == DType::F32 || t == DType::F64 || isInteger(t) || t == DType::Bool;
}

/// The float16 operations of the kernel IR (halfArithmetic).
bool halfUnary(UnOp op) { return op == UnOp::Neg || op == UnOp::Abs; }
bool halfBinary(BinOp op) {
  return op == BinOp::Add || op == BinOp::Sub || op == BinOp::Mul || op == BinOp::Div ||
         op == BinOp::Min || op == BinOp::Max || isComparison(op);
}

bool unaryIsFloatOnly(UnOp op) {
  return op != UnOp::Neg && op != UnOp::Not && op != UnOp::BitNot &&
         op != UnOp::Abs && !isBytePairs(op);
}

} // namespace

Expr constant(DType type, double value) {
  Scalar s;
  if (isFloat(type))
    s.F = value;
  else if (type == DType::U64 && value >= 9.2233720368547758e18)
    s.I = (int64_t)(uint64_t)value;
  else
    s = evalCast(type, DType::F64, Scalar{0, value});
  return fromScalar(type, s);
}

Expr constantInt(DType type, int64_t value) {
  if (isFloat(type))
    return fromScalar(type, Scalar{0, (double)value});
  return fromScalar(type, Scalar{value, 0});
}

Expr indexConst(int64_t value) { return constantInt(DType::Index, value); }
Expr boolConst(bool value) { return constantInt(DType::Bool, value ? 1 : 0); }

Expr varRef(const Var &v) {
  MLCC_CHECK(v, "null variable");
  auto e = make(ExprKind::VarRef, DType::Index);
  e->V = v;
  return e;
}

Expr load(const Buffer &buf, Expr index) {
  MLCC_CHECK(buf && index, "load of null");
  MLCC_CHECK(index->Type == DType::Index,
             "load index of " << buf->Name << " has type "
                              << dtypeName(index->Type));
  auto e = make(ExprKind::Load, buf->Type);
  e->Buf = buf;
  e->A = std::move(index);
  return withDepth(std::move(e));
}

Expr vload(const Buffer &buf, Expr index, int lanes, int64_t stride) {
  Expr e = load(buf, std::move(index));
  if (lanes == 1)
    return e;
  MLCC_CHECK(lanes > 1 && buf->Type != DType::Bool && stride >= 1,
             "vector load of " << lanes << " " << dtypeName(buf->Type) << " with stride "
                               << stride);
  auto v = std::make_shared<ExprNode>(*e);
  v->Lanes = lanes;
  v->Stride = stride;
  return v;
}

Expr broadcast(Expr a, int lanes) {
  MLCC_CHECK(a && a->Lanes == 1, "broadcast of a vector");
  if (lanes == 1)
    return a;
  auto e = make(ExprKind::Broadcast, a->Type);
  e->Lanes = lanes;
  e->A = std::move(a);
  return withDepth(std::move(e));
}

Expr broadcastLane(Expr v, int64_t lane, int lanes) {
  MLCC_CHECK(v && lanes > 1 && lane >= 0 && lane < v->Lanes,
             "lane " << lane << " of a vector of " << (v ? v->Lanes : 0));
  if (v->Lanes == 1)
    return broadcast(std::move(v), lanes);
  auto e = make(ExprKind::Broadcast, v->Type);
  e->Lanes = lanes;
  e->IntValue = lane;
  e->A = std::move(v);
  return withDepth(std::move(e));
}

namespace {
/// Broadcasts scalar operands to the widest operand's lanes.
void matchLanes(std::initializer_list<Expr *> ops) {
  int lanes = 1;
  for (Expr *e : ops)
    lanes = std::max(lanes, (*e)->Lanes);
  for (Expr *e : ops) {
    if ((*e)->Lanes == 1 && lanes > 1)
      *e = broadcast(*e, lanes);
    MLCC_CHECK((*e)->Lanes == lanes, "operands of " << (*e)->Lanes << " and "
                                                    << lanes << " lanes");
  }
}
} // namespace

Expr unary(UnOp op, Expr a) {
  MLCC_CHECK(a, "unary on null");
  DType t = a->Type;
  MLCC_CHECK(isArithType(t) || (t == DType::F16 && halfUnary(op)), "unary " << unOpName(op) << " on "
                                      << dtypeName(t));
  if (unaryIsFloatOnly(op))
    MLCC_CHECK(isFloat(t), "unary " << unOpName(op) << " needs a float, got "
                                    << dtypeName(t));
  if (op == UnOp::Not)
    MLCC_CHECK(t == DType::Bool, "not on " << dtypeName(t));
  if (op == UnOp::BitNot)
    MLCC_CHECK(isInteger(t), "bitnot on " << dtypeName(t));
  if (isBytePairs(op))
    MLCC_CHECK(t == DType::I32, unOpName(op) << " on " << dtypeName(t));
  DType rt = (op == UnOp::IsNaN || op == UnOp::IsInf) ? DType::Bool : t;
  if (a->isConst())
    return fromScalar(rt, evalUnary(op, t, scalarOf(a)));
  if (op == UnOp::Neg && a->Kind == ExprKind::Unary && a->Un == UnOp::Neg)
    return a->A;
  auto e = make(ExprKind::Unary, rt);
  e->Un = op;
  e->Lanes = a->Lanes;
  e->A = std::move(a);
  return withDepth(std::move(e));
}

Expr binary(BinOp op, Expr a, Expr b) {
  MLCC_CHECK(a && b, "binary on null");
  matchLanes({&a, &b});
  DType t = a->Type;
  MLCC_CHECK(t == b->Type, "binary " << binOpName(op) << " mixes "
                                     << dtypeName(t) << " and "
                                     << dtypeName(b->Type));
  MLCC_CHECK(isArithType(t) || (t == DType::F16 && halfBinary(op)),
             "binary " << binOpName(op) << " on "
                                       << dtypeName(t));
  bool boolOp = op == BinOp::And || op == BinOp::Or || op == BinOp::Xor;
  if (boolOp)
    MLCC_CHECK(t == DType::Bool, binOpName(op) << " on " << dtypeName(t));
  if (op == BinOp::Pow)
    MLCC_CHECK(isFloat(t), "pow on " << dtypeName(t));
  if (op == BinOp::Dot4 || op == BinOp::Dot2 || op == BinOp::SDot4 || op == BinOp::SDot4Narrow ||
      op == BinOp::MulHigh)
    MLCC_CHECK(t == DType::I32, binOpName(op) << " on " << dtypeName(t));
  if (op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor ||
      op == BinOp::Shl || op == BinOp::Shr)
    MLCC_CHECK(isInteger(t), binOpName(op) << " on " << dtypeName(t));
  DType rt = isComparison(op) ? DType::Bool : t;
  if (a->isConst() && b->isConst())
    return fromScalar(rt, evalBinary(op, t, scalarOf(a), scalarOf(b)));
  // Identities that are exact for every value of the type.
  bool exactInt = isInteger(t);
  switch (op) {
  case BinOp::Add:
    if (exactInt && b->isConstValue(0))
      return a;
    if (exactInt && a->isConstValue(0))
      return b;
    // (x + c1) + c2 -> x + (c1 + c2), to keep offsets folded.
    if (t == DType::Index && b->isConst() && a->Kind == ExprKind::Binary &&
        a->Bin == BinOp::Add && a->B->isConst())
      return binary(BinOp::Add, a->A, binary(BinOp::Add, a->B, b));
    if (t == DType::Index && a->isConst() && !b->isConst())
      return binary(BinOp::Add, b, a);
    break;
  case BinOp::Sub:
    if (exactInt && b->isConstValue(0))
      return a;
    if (t == DType::Index && b->isConst())
      return binary(BinOp::Add, a, constantInt(t, -b->IntValue));
    break;
  case BinOp::Mul:
    if (b->isConstValue(1) && (exactInt || isFloat(t)))
      return a;
    if (a->isConstValue(1) && (exactInt || isFloat(t)))
      return b;
    if (exactInt && (a->isConstValue(0) || b->isConstValue(0)))
      return constantInt(t, 0);
    if (t == DType::Index && a->isConst() && !b->isConst())
      return binary(BinOp::Mul, b, a);
    break;
  case BinOp::Div:
    if (b->isConstValue(1))
      return a;
    break;
  case BinOp::And:
    if (a->isConst())
      return a->IntValue ? b : a;
    if (b->isConst())
      return b->IntValue ? a : b;
    break;
  case BinOp::Or:
    if (a->isConst())
      return a->IntValue ? a : b;
    if (b->isConst())
      return b->IntValue ? b : a;
    break;
  default:
    break;
  }
  auto e = make(ExprKind::Binary, rt);
  e->Bin = op;
  e->Lanes = a->Lanes;
  e->A = std::move(a);
  e->B = std::move(b);
  return withDepth(std::move(e));
}

Expr select(Expr cond, Expr ifTrue, Expr ifFalse) {
  MLCC_CHECK(cond && ifTrue && ifFalse, "select on null");
  matchLanes({&cond, &ifTrue, &ifFalse});
  MLCC_CHECK(cond->Type == DType::Bool, "select condition of type "
                                            << dtypeName(cond->Type));
  MLCC_CHECK(ifTrue->Type == ifFalse->Type,
             "select mixes " << dtypeName(ifTrue->Type) << " and "
                             << dtypeName(ifFalse->Type));
  if (cond->isConst())
    return cond->IntValue ? ifTrue : ifFalse;
  if (ifTrue == ifFalse)
    return ifTrue;
  auto e = make(ExprKind::Select, ifTrue->Type);
  e->Lanes = ifTrue->Lanes;
  e->A = std::move(cond);
  e->B = std::move(ifTrue);
  e->C = std::move(ifFalse);
  return withDepth(std::move(e));
}

namespace {

/// Whether `e` (of f32) holds a value of the 16-bit float type `n` exactly:
/// a constant that `n` represents, or a value widened from `n`.
bool exactIn(DType n, const Expr &e) {
  if (e->isConst())
    return evalCast(DType::F32, n, evalCast(n, DType::F32, scalarOf(e))).F == e->FloatValue;
  return e->Kind == ExprKind::Cast && e->A->Type == n;
}

/// `e`, a tree of f32 Max and Min about to be rounded to `n` (f16 or bf16),
/// with each leaf `f32(n(x))` replaced by x: rounding is monotone, so when
/// every other leaf is exact in `n` (exactIn), rounding the tree once gives
/// what rounding each leaf first and the tree again gives (a Relu or Clip
/// epilogue of a 16-bit float convolution rounds once, not twice). Null
/// when `e` is not such a tree or nothing is replaced.
Expr withoutInnerRounding(DType n, const Expr &e, bool &replaced) {
  if (e->Kind == ExprKind::Cast && e->Type == DType::F32 && e->A->Kind == ExprKind::Cast &&
      e->A->Type == n && e->A->A->Type == DType::F32) {
    replaced = true;
    return e->A->A;
  }
  if (e->Kind == ExprKind::Binary && (e->Bin == BinOp::Max || e->Bin == BinOp::Min) &&
      e->Type == DType::F32) {
    Expr a = withoutInnerRounding(n, e->A, replaced), b = withoutInnerRounding(n, e->B, replaced);
    return a && b ? binary(e->Bin, a, b) : nullptr;
  }
  return exactIn(n, e) ? e : nullptr;
}

} // namespace

bool halfArithmetic(const ExprNode &e) {
  if (!e.A || e.A->Type != DType::F16)
    return false;
  return (e.Kind == ExprKind::Unary && halfUnary(e.Un)) ||
         (e.Kind == ExprKind::Binary && halfBinary(e.Bin));
}

Expr cast(DType type, Expr a) {
  MLCC_CHECK(a, "cast of null");
  MLCC_CHECK(isStorable(type), "cast to " << dtypeName(type));
  if (a->Type == type)
    return a;
  // A narrow float widened to f32 and narrowed back is itself (the
  // widening is exact).
  if (isNarrowFloat(type) && a->Kind == ExprKind::Cast && a->Type == DType::F32 &&
      a->A->Type == type)
    return a->A;
  if (a->isConst() && !isNarrowFloat(type) && !isNarrowFloat(a->Type) && !isSubByte(type) &&
      !isSubByte(a->Type))
    return fromScalar(type, evalCast(type, a->Type, scalarOf(a)));
  if ((type == DType::F16 || type == DType::BF16) && a->Type == DType::F32 &&
      a->Kind == ExprKind::Binary && (a->Bin == BinOp::Max || a->Bin == BinOp::Min)) {
    bool replaced = false;
    if (Expr inner = withoutInnerRounding(type, a, replaced); inner && replaced)
      a = inner;
  }
  auto e = make(ExprKind::Cast, type);
  e->Lanes = a->Lanes;
  e->A = std::move(a);
  return withDepth(std::move(e));
}

Expr bitcast(DType type, Expr a) {
  MLCC_CHECK(a, "bitcast of null");
  auto is32 = [](DType t) { return t == DType::F32 || t == DType::I32 || t == DType::U32; };
  MLCC_CHECK(is32(type) && is32(a->Type), "bitcast " << dtypeName(a->Type) << " to "
                                                     << dtypeName(type));
  if (a->Type == type)
    return a;
  if (a->isConst())
    return fromScalar(type, evalBitCast(type, a->Type, scalarOf(a)));
  auto e = make(ExprKind::BitCast, type);
  e->Lanes = a->Lanes;
  e->A = std::move(a);
  return withDepth(std::move(e));
}

// ---------------------------------------------------------------------------
// Statement constructors
// ---------------------------------------------------------------------------

namespace {
std::shared_ptr<StmtNode> makeStmt(StmtKind kind) {
  auto s = std::make_shared<StmtNode>();
  s->Kind = kind;
  return s;
}
} // namespace

Stmt block(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (auto &s : stmts) {
    if (!s)
      continue;
    if (s->Kind == StmtKind::Block)
      flat.insert(flat.end(), s->Body.begin(), s->Body.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1)
    return flat[0];
  auto s = makeStmt(StmtKind::Block);
  s->Body = std::move(flat);
  return s;
}

Stmt forLoop(Var v, Expr begin, Expr end, Stmt body, LoopKind kind) {
  MLCC_CHECK(v && begin && end && body, "for loop with null part");
  MLCC_CHECK(begin->Type == DType::Index && end->Type == DType::Index,
             "loop bounds must be index-typed");
  auto s = makeStmt(StmtKind::For);
  s->LoopVar = std::move(v);
  s->Begin = std::move(begin);
  s->End = std::move(end);
  s->Inner = std::move(body);
  s->Loop = kind;
  return s;
}

Stmt store(const Buffer &buf, Expr index, Expr value, int64_t stride) {
  MLCC_CHECK(buf && index && value, "store with null part");
  MLCC_CHECK(stride >= 1, "store stride " << stride);
  MLCC_CHECK(index->Type == DType::Index, "store index of " << buf->Name
                                                            << " not index");
  MLCC_CHECK(value->Type == buf->Type,
             "store of " << dtypeName(value->Type) << " into "
                         << dtypeName(buf->Type) << " buffer " << buf->Name);
  auto s = makeStmt(StmtKind::Store);
  s->Buf = buf;
  s->Index = std::move(index);
  s->Value = std::move(value);
  s->Stride = s->Value->Lanes > 1 ? stride : 1;
  return s;
}

Stmt ifThen(Expr cond, Stmt thenStmt, Stmt elseStmt) {
  MLCC_CHECK(cond && thenStmt, "if with null part");
  MLCC_CHECK(cond->Type == DType::Bool, "if condition not bool");
  auto s = makeStmt(StmtKind::If);
  s->Cond = std::move(cond);
  s->Inner = std::move(thenStmt);
  s->Else = std::move(elseStmt);
  return s;
}

Stmt alloc(const Buffer &buf, Stmt body) {
  MLCC_CHECK(buf && body && buf->Kind != BufferKind::Param, "alloc of a parameter");
  auto s = makeStmt(StmtKind::Alloc);
  s->Buf = buf;
  s->Inner = std::move(body);
  return s;
}

Stmt barrier(bool warp) {
  auto s = makeStmt(StmtKind::Barrier);
  s->Warp = warp;
  return s;
}

} // namespace mlcc::kir
