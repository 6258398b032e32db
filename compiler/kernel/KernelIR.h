//===- KernelIR.h - Loop nests over flat buffers --------------------------===//
//
// The kernel IR is what every op lowers to and the only thing the emitters
// (targets/c, targets/llvm) and the interpreter understand. It is a small
// imperative language in the style of Halide's lowered IR:
//
//   Kernel   := name, parameter buffers, body
//   Stmt     := Block | For | Store | If | Alloc | Barrier
//   Expr     := Const | Var | Load | Unary | Binary | Select | Cast | Broadcast
//
// - Buffers are flat arrays of one element type; a Load/Store takes a single
//   Index-typed element offset. Multi-dimensional indexing is built by the
//   lowering helpers, so emitters never see shapes.
// - `Alloc` scopes a small local buffer (accumulators, temporaries); the
//   emitters place it on the stack, where LLVM promotes it to registers.
// - Loops run over [begin, end) with unit step and carry a LoopKind, the hook
//   for schedules: vectorize, unroll and parallel are properties of a loop,
//   not separate IR.
// - Vectors: an Expr has `Lanes` (1 for a scalar). A vector Load reads
//   Lanes elements from its (scalar) index, consecutive or `Stride` apart
//   (a strided window's inputs), a Store of a vector
//   value writes Lanes elements from its index, consecutive or `Stride`
//   apart (the interleaved outputs of a tile), Broadcast repeats a scalar (or
//   one lane of a vector: a tile's weights loaded as one vector), and
//   arithmetic works lane by lane. Schedules (compiler/kernel/Schedule.h)
//   create vectors; `scalarize` turns them back into lane loops for the
//   emitters and the interpreter that want scalars.
// - Types: every Expr has a DType. Arithmetic is on f32/f64, integers,
//   Index and Bool, and the few f16 operations of halfArithmetic (the
//   float16 tiles of targets with float16 arithmetic; each rounds to f16,
//   as IEEE half precision does); other f16 and all bf16/float8 values
//   exist only as loads, stores and casts (the helpers compute in f32;
//   casts to float8 do not saturate, see compiler/support/Float8.h).
//   Comparisons produce Bool.
//
// Nodes are immutable and shared (Expr/Stmt are shared_ptr to const), so
// transformations rebuild only what they change.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Ops.h"
#include "compiler/support/DType.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::kir {


// ---------------------------------------------------------------------------
// Variables and buffers
// ---------------------------------------------------------------------------

/// A scalar variable: a loop counter. Identity is the node's address; the
/// name is for printing only (printers disambiguate duplicates).
struct VarNode {
  std::string Name;
};
using Var = std::shared_ptr<const VarNode>;

enum class BufferKind : uint8_t {
  Param, ///< A kernel parameter, bound by the caller.
  Local, ///< Scoped by an Alloc statement; lives on the stack.
  /// Scoped by an Alloc directly in a GpuBlock loop: one copy per block,
  /// which the block's threads share (CUDA `__shared__`). Serial emitters
  /// and the interpreter treat it as a Local: they run a block's threads
  /// one after the other, phase by phase (see Barrier).
  Shared,
};

/// A flat array of `Size` elements of type `Type`.
struct BufferNode {
  std::string Name;
  DType Type = DType::F32;
  int64_t Size = 0;
  BufferKind Kind = BufferKind::Param;
};
using Buffer = std::shared_ptr<const BufferNode>;

// ---------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------

enum class ExprKind : uint8_t { Const, VarRef, Load, Unary, Binary, Select, Cast, Broadcast, BitCast };

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  ExprKind Kind;
  DType Type;
  int Lanes = 1; ///< 1: a scalar; more: a vector of Type elements
  /// Vector Load: elements between consecutive lanes (1: contiguous).
  int64_t Stride = 1;
  /// Const: integer and Bool values live in IntValue, floats in FloatValue.
  int64_t IntValue = 0;
  double FloatValue = 0;
  UnOp Un = UnOp::Neg;
  BinOp Bin = BinOp::Add;
  Var V;        ///< VarRef
  Buffer Buf;   ///< Load
  Expr A, B, C; ///< operands: Load index in A; Select cond/true/false in A/B/C;
                ///< Broadcast: the scalar in A, or lane IntValue of
                ///< the vector A (broadcastLane)
  /// Nodes on the longest path from this one to a leaf (1 for a leaf), set
  /// by the constructors. Every walk over an expression (emitters, printer,
  /// interpreter, mutators) recurses once per level, so a kernel's depth is
  /// bounded (kMaxExprDepth) and read here without walking the tree.
  int Depth = 1;

  bool isConst() const { return Kind == ExprKind::Const; }
  /// True for a Const equal to `v` (any numeric type).
  bool isConstValue(double v) const;
};

/// The deepest expression a kernel may hold (verify() rejects deeper ones).
/// Walks over expressions recurse once per level, a few hundred bytes of
/// stack each (a few KiB in sanitized builds), so this bound keeps every
/// walk within a small part of a default 8 MiB stack. Lowerings stay well
/// under it: unrolled windows are bounded by kMaxUnrolledTerms, fused chains
/// by fuse-ops, and KernelBuilder::store computes a deeper value in pieces
/// (KernelBuilder::splitDeep).
constexpr int kMaxExprDepth = 256;
/// The most terms a lowering combines in one unrolled expression (a
/// pooling window's taps): beyond it, it loops over them.
constexpr int64_t kMaxUnrolledTerms = 64;
/// When it loops over the terms of many outputs in a row, the outputs it
/// keeps partial results of at once (a local array of this many elements,
/// an inner loop that vectorizes at any lane count up to 64).
constexpr int64_t kLoopedRowBlock = 64;

// Constructors. They fold constants and trivial identities (x+0, x*1, ...)
// so that index arithmetic stays readable; they check operand types. Binary
// and select broadcast a scalar operand to the other operands' lanes.
Expr constant(DType type, double value);
Expr constantInt(DType type, int64_t value);
Expr indexConst(int64_t value);
Expr boolConst(bool value);
Expr varRef(const Var &v);
Expr load(const Buffer &buf, Expr index);
/// `lanes` elements from `index` (a scalar Index), `stride` apart (1:
/// consecutive; for example 2 for the inputs of a stride-2 window).
Expr vload(const Buffer &buf, Expr index, int lanes, int64_t stride = 1);
/// A vector of `lanes` copies of the scalar `a`.
Expr broadcast(Expr a, int lanes);
/// A vector of `lanes` copies of lane `lane` of the vector `v` (Arm's
/// multiply-accumulate by element reads it from a register: a tile's
/// weights for its rows loaded as one vector, each row's a lane).
Expr broadcastLane(Expr v, int64_t lane, int lanes);
Expr unary(UnOp op, Expr a);
Expr binary(BinOp op, Expr a, Expr b);
Expr select(Expr cond, Expr ifTrue, Expr ifFalse);
Expr cast(DType type, Expr a);
/// The bits of `a` read as `type` (f32 <-> i32/u32): the exponent tricks of
/// the vectorizable math expansions.
Expr bitcast(DType type, Expr a);

// ---------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------

/// Barrier: the threads of a GPU block wait for each other, and what each
/// stored before it is visible to all after it (CUDA `__syncthreads()`). It
/// stands only between GpuThread loops of one block (in the block loop's
/// body, possibly inside serial loops there, never inside a thread loop
/// or an If), so a block's body is a sequence of phases, each a thread loop:
/// running the thread loops one after the other, as serial emitters and
/// the interpreter do, gives the same result, and they ignore the barrier.
/// State that lives across phases is in Shared buffers.
enum class StmtKind : uint8_t { Block, For, Store, If, Alloc, Barrier };

enum class LoopKind : uint8_t {
  Serial,
  Parallel,   ///< Iterations are independent; may run on several threads.
  /// GPU bindings (compiler/kernel/GpuSchedule.h): the loop's iterations
  /// are the blocks of a launch (GpuBlock, outermost: each such loop at
  /// the top of a kernel is one launch) or a block's threads (GpuThread,
  /// inside a GpuBlock loop; a block may run several thread loops, phases
  /// separated by Barriers). Iterations are independent, so any other
  /// emitter and the interpreter run them as serial loops.
  GpuBlock,
  GpuThread,
  /// Serial, and left as it is by the kernel vectorizer (vectorize), so
  /// that LLVM's loop vectorizer sees the scalar reduction: a sum of 8-bit
  /// products becomes Helium's vmladav.s8 (sixteen a instruction), where
  /// the kernel vectorizer's int32 lanes would give four.
  Scalar,
};
const char *loopKindName(LoopKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind Kind;
  std::vector<Stmt> Body; ///< Block: statements in order.
  Var LoopVar;            ///< For: runs LoopVar over [Begin, End).
  Expr Begin, End;
  LoopKind Loop = LoopKind::Serial;
  Stmt Inner;  ///< For body, If then-branch, Alloc scope.
  Stmt Else;   ///< If else-branch (may be null).
  Buffer Buf;  ///< Store target, Alloc buffer.
  Expr Index;  ///< Store offset.
  Expr Value;  ///< Store value.
  /// Vector Store: elements between consecutive lanes (1: contiguous).
  int64_t Stride = 1;
  Expr Cond;   ///< If condition.
  bool Warp = false; ///< Barrier: of a warp's threads only.
};

Stmt block(std::vector<Stmt> stmts);
Stmt forLoop(Var v, Expr begin, Expr end, Stmt body,
             LoopKind kind = LoopKind::Serial);
/// Stores `value` at `index` (value->Lanes elements, `stride` apart).
Stmt store(const Buffer &buf, Expr index, Expr value, int64_t stride = 1);
Stmt ifThen(Expr cond, Stmt thenStmt, Stmt elseStmt = nullptr);
/// Scopes a Local or Shared buffer over `body`.
Stmt alloc(const Buffer &buf, Stmt body);
/// `warp`: only the threads of each warp wait for each other (enough when
/// the threads that wrote what the next phase reads, and those that read
/// it, are all in the first warp).
Stmt barrier(bool warp = false);

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

/// What a matrix-product kernel computes, for targets that hand it to a
/// library (the CUDA target calls cuBLAS): for each batch b < Batch,
///   C[b] (M x N, row-major, leading dimension Ldc)
///     = Alpha * op(A[b]) (M x K) * op(B[b]) (K x N)
/// with A[b] at A + b * StrideA, stored M x K (Lda) or, with TransA, K x M;
/// B[b] at B + b * StrideB, stored K x N (Ldb) or, with TransB, N x K.
/// The kernel's body computes exactly this (see ops mlcc.Gemm), so every
/// other emitter and the interpreter ignore the description.
struct GemmCall {
  Buffer A, B, C; ///< kernel parameters
  int64_t Batch = 1, M = 0, N = 0, K = 0;
  bool TransA = false, TransB = false;
  int64_t Lda = 0, Ldb = 0, Ldc = 0;
  int64_t StrideA = 0, StrideB = 0, StrideC = 0;
  double Alpha = 1;
};

/// One function of the generated code. Parameters are distinct, non-
/// overlapping buffers (emitters may mark them restrict/noalias), except
/// those marked Overlapping.
struct Kernel {
  std::string Name;
  std::vector<Buffer> Params;
  Stmt Body;
  /// Set for a matrix product a target may dispatch to a library.
  std::shared_ptr<const GemmCall> Gemm;
  /// Params stored to by the body (computed by `finalize`).
  std::vector<bool> Written;
  /// Params whose buffers a call lays over another param's (planMemory's
  /// outputs written in place over a dying input; empty: none): emitters
  /// must not assume they do not alias.
  std::vector<bool> Overlapping;
  /// Its Parallel loops run their iterations in order, never through the
  /// caller's parallel_for (an output laid over an input that only their
  /// order allows; planMemory on a one-thread target).
  bool InOrder = false;

  /// Computes Written and checks the kernel (see verify()).
  void finalize();
};

/// The deepest expression of `k` (ExprNode::Depth; at most kMaxExprDepth in
/// a verified kernel).
int maxExprDepth(const Kernel &k);

/// Whether `e` (a Unary or Binary expression) is one of the float16
/// operations the kernel IR has: add, subtract, multiply, divide, min, max,
/// the comparisons, negation and absolute value of f16 operands.
bool halfArithmetic(const ExprNode &e);

/// Checks types and scoping; throws an Internal CompileError naming the
/// kernel on violation. Emitters may assume a verified kernel.
void verify(const Kernel &k);

/// Deterministic text of a kernel ("--emit kernels"); without its name when
/// `withName` is false, and then with its variables and buffers named in
/// order of first appearance. Structural equality (Equality.h) tells kernels
/// and expressions apart exactly as this text does, without printing.
std::string print(const Kernel &k, bool withName = true);
std::string print(const Expr &e);

} // namespace mlcc::kir
