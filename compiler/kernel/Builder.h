//===- Builder.h - Writing kernel IR by hand ------------------------------===//
//
// What op lowerings use to produce kernels:
//
//   KernelBuilder b("relu");
//   Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, n);
//   b.loop("i", n, [&](Expr i) { b.store(y, i, max(load(x, i), 0.0)); });
//   Kernel k = b.finish();
//
// Expression operators: `a + b`, `a * 3`, `a / 2.0` etc. on Expr; an integer
// or double literal takes the type of the other operand. Comparisons and
// math functions are named functions (lt, eq, exp, ...), since Expr is a
// shared_ptr whose own comparison operators must keep their meaning.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <functional>
#include <string>
#include <vector>

namespace mlcc::kir {

// --- arithmetic operators (found by ADL on Expr) -------------------------
Expr operator+(const Expr &a, const Expr &b);
Expr operator-(const Expr &a, const Expr &b);
Expr operator*(const Expr &a, const Expr &b);
Expr operator/(const Expr &a, const Expr &b);
Expr operator%(const Expr &a, const Expr &b);
Expr operator-(const Expr &a);
Expr operator+(const Expr &a, int64_t b);
Expr operator-(const Expr &a, int64_t b);
Expr operator*(const Expr &a, int64_t b);
Expr operator/(const Expr &a, int64_t b);
Expr operator%(const Expr &a, int64_t b);
Expr operator+(const Expr &a, int b);
Expr operator-(const Expr &a, int b);
Expr operator*(const Expr &a, int b);
Expr operator/(const Expr &a, int b);
Expr operator%(const Expr &a, int b);
Expr operator+(const Expr &a, double b);
Expr operator-(const Expr &a, double b);
Expr operator*(const Expr &a, double b);
Expr operator/(const Expr &a, double b);
Expr operator+(int64_t a, const Expr &b);
Expr operator-(int64_t a, const Expr &b);
Expr operator*(int64_t a, const Expr &b);
Expr operator+(double a, const Expr &b);
Expr operator-(double a, const Expr &b);
Expr operator*(double a, const Expr &b);
Expr operator/(double a, const Expr &b);

/// A constant of `like`'s type.
Expr constLike(const Expr &like, double value);

Expr lt(const Expr &a, const Expr &b);
Expr le(const Expr &a, const Expr &b);
Expr gt(const Expr &a, const Expr &b);
Expr ge(const Expr &a, const Expr &b);
Expr eq(const Expr &a, const Expr &b);
Expr ne(const Expr &a, const Expr &b);
Expr lt(const Expr &a, double b);
Expr le(const Expr &a, double b);
Expr gt(const Expr &a, double b);
Expr ge(const Expr &a, double b);
Expr eq(const Expr &a, double b);
Expr ne(const Expr &a, double b);
Expr land(const Expr &a, const Expr &b);
Expr lor(const Expr &a, const Expr &b);
Expr lnot(const Expr &a);

Expr min(const Expr &a, const Expr &b);
Expr max(const Expr &a, const Expr &b);
Expr min(const Expr &a, double b);
Expr max(const Expr &a, double b);
Expr clamp(const Expr &x, const Expr &lo, const Expr &hi);
Expr abs(const Expr &a);
Expr sqrt(const Expr &a);
Expr exp(const Expr &a);
Expr log(const Expr &a);
Expr tanh(const Expr &a);
Expr erf(const Expr &a);
Expr floor(const Expr &a);
Expr ceil(const Expr &a);
Expr pow(const Expr &a, const Expr &b);
/// Floor division and modulo with the sign of the divisor (Python style),
/// for integer or float operands.
Expr floorDiv(const Expr &a, const Expr &b);
Expr floorMod(const Expr &a, const Expr &b);
/// Converts to Index (for computed offsets from tensor data).
Expr toIndex(const Expr &a);

/// The smallest and largest finite values of a type, and its "infinity"
/// for reductions (+inf for floats, the max value for integers); of
/// computeType(t) for the sub-byte types.
Expr lowestValue(DType t);
Expr highestValue(DType t);

/// Type used for arithmetic on values of storage type `t`: f16, bf16, the
/// float8 types and float4e2m1 compute in f32, int4/int2 in int8, uint4/uint2
/// in uint8; everything else in itself.
DType computeType(DType t);

/// A small stack buffer (often a single accumulator) scoped to the block in
/// which it was created.
struct Local {
  Buffer Buf;
  Expr get(const Expr &index) const { return load(Buf, index); }
  Expr get() const { return load(Buf, indexConst(0)); }
  DType type() const { return Buf->Type; }
};

class KernelBuilder {
public:
  explicit KernelBuilder(std::string name);

  /// Declares a parameter buffer of `size` elements.
  Buffer param(const std::string &name, DType type, int64_t size);

  /// Appends a statement at the current position.
  void emit(Stmt s);
  /// Stores `value`; one more than kSplitDepth levels deep is computed in
  /// pieces first (splitDeep), so that no kernel nears kMaxExprDepth.
  void store(const Buffer &buf, const Expr &index, const Expr &value);

  /// for (i = begin; i < end; ++i) body(i)
  void loop(const std::string &name, const Expr &begin, const Expr &end,
            const std::function<void(Expr)> &body,
            LoopKind kind = LoopKind::Serial);
  void loop(const std::string &name, int64_t extent,
            const std::function<void(Expr)> &body,
            LoopKind kind = LoopKind::Serial);
  /// for (i = 0; i < extent; ++i) body(i): the loop(name, int64_t, ...)
  /// above for a constant extent, a loop to a run-time extent otherwise.
  void loopTo(const std::string &name, const Expr &extent,
              const std::function<void(Expr)> &body, LoopKind kind = LoopKind::Serial);
  /// A nest of loops over `extents` (outermost first); zero loops for a
  /// rank-0 shape. Loop variables are named prefix0, prefix1, ...
  void loops(const std::vector<int64_t> &extents,
             const std::function<void(const std::vector<Expr> &)> &body,
             const std::string &prefix = "i");
  /// The same over extents that may be known only at run time (an axis
  /// that follows a bounded dimension: TensorRef::extents).
  void loops(const std::vector<Expr> &extents,
             const std::function<void(const std::vector<Expr> &)> &body,
             const std::string &prefix = "i");
  void ifThen(const Expr &cond, const std::function<void()> &thenBody,
              const std::function<void()> &elseBody = nullptr);

  /// A local buffer in the current scope, initialized to `init` if given.
  Local local(const std::string &name, DType type, int64_t size = 1);
  Local local(const std::string &name, const Expr &init);
  void set(const Local &l, const Expr &value) { store(l.Buf, indexConst(0), value); }
  void set(const Local &l, const Expr &index, const Expr &value) {
    store(l.Buf, index, value);
  }

  /// Describes the kernel as a matrix product (see kir::GemmCall).
  void setGemm(std::shared_ptr<const GemmCall> g) { Gemm = std::move(g); }

  /// Ends the kernel: closes scopes, finalizes and verifies it.
  Kernel finish();

  /// Loops of one iteration stay loops (else their body is emitted with
  /// the index 0): lower-to-kernels compares a node's kernels at several
  /// extents (compiler/passes/ProbedExtents.h), where 1 is one of them.
  void keepUnitLoops() { KeepUnitLoops = true; }

  /// The depth of the deepest value given to store() (before splitting).
  int deepestValue() const { return DeepestValue; }

  /// Values deeper than this are split by store().
  static constexpr int kSplitDepth = kMaxExprDepth / 2;
  /// The depth of each piece of a split value.
  static constexpr int kSplitPiece = 32;

private:
  /// `value` with every subexpression more than kSplitPiece levels deep
  /// stored into a scalar temporary first (emitted before the caller's
  /// store, in the current scope).
  Expr splitDeep(const Expr &value);

  struct Frame {
    std::vector<Stmt> Stmts;
    std::vector<Buffer> Locals;
  };
  void push();
  Stmt pop();

  std::string Name;
  std::vector<Buffer> Params;
  std::vector<Frame> Frames;
  std::shared_ptr<const GemmCall> Gemm;
  int DeepestValue = 0;
  bool KeepUnitLoops = false;
};

} // namespace mlcc::kir
