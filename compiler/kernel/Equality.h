//===- Equality.h - Structural equality and hashing of kernel IR ----------===//
//
// Kernels and expressions compared and hashed by structure, without printing
// them. Two kernels are equal exactly when print(k, false) shows them the
// same, and two expressions exactly when print(e) does: the kernel key that
// shares identical kernels between nodes (compiler/passes/LowerToProgram.cpp)
// and the index comparisons of the schedule (compiler/kernel/Schedule.cpp)
// used to be that text, and what they decide must not change with the key.
//
// What is compared, as the printed form shows it:
// - kinds, operations, the types of constants, casts and buffers, lanes and
//   strides where they are printed; an operation's type and lanes follow
//   from its operands (the constructors set them), so they are compared
//   through the operands;
// - constants by value: integers exactly, floats by bit pattern, except that
//   all NaNs of one sign are one value ("%a" prints them as nan or -nan);
// - statements as the sequence they print, a Block being the statements it
//   holds (a Block of one statement is that statement);
// - variables and buffers through the names print() gives them
//   (PrintNames.h). A kernel names them by first appearance, so kernels are
//   equal up to a consistent renaming of their variables and buffers, and
//   the kernel's own name is ignored. An expression shows its variables'
//   and buffers' own names, told apart by a suffix when distinct nodes share
//   a name (i, i_1): two expressions are equal when they read variables and
//   buffers of the same names in the same pattern.
//
// Beyond print(): where an expression's text would be ambiguous (a buffer
// whose own name contains brackets or operators), the structures still
// differ; names come from the compiler and from sanitized value names, so
// this does not arise in practice.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <cstddef>
#include <functional>

namespace mlcc::kir {

/// A total order of expressions: negative, zero or positive; zero exactly
/// when print(a) == print(b). Deterministic (no addresses are compared).
int structuralCompare(const Expr &a, const Expr &b);
bool structuralEqual(const Expr &a, const Expr &b);
/// Equal for structurally equal expressions.
size_t structuralHash(const Expr &e);

/// A total order of kernels, zero exactly when print(a, false) ==
/// print(b, false): the kernels' names are ignored.
int structuralCompare(const Kernel &a, const Kernel &b);
bool structuralEqual(const Kernel &a, const Kernel &b);
/// Equal for structurally equal kernels.
size_t structuralHash(const Kernel &k);

/// An expression or a kernel as a key of std::map (structural order) or
/// std::unordered_map (structural hash, computed once). A kernel key holds
/// a copy of the kernel (its nodes are shared), so it outlives the kernel
/// it was made from.
template <typename T> class StructuralKey {
public:
  explicit StructuralKey(T v) : V(std::move(v)), Hash(structuralHash(V)) {}
  const T &value() const { return V; }
  size_t hash() const { return Hash; }

  friend bool operator==(const StructuralKey &a, const StructuralKey &b) {
    return a.Hash == b.Hash && structuralEqual(a.V, b.V);
  }
  friend bool operator<(const StructuralKey &a, const StructuralKey &b) {
    return structuralCompare(a.V, b.V) < 0;
  }

private:
  T V;
  size_t Hash;
};
using ExprKey = StructuralKey<Expr>;
using KernelKey = StructuralKey<Kernel>;

} // namespace mlcc::kir

template <typename T> struct std::hash<mlcc::kir::StructuralKey<T>> {
  size_t operator()(const mlcc::kir::StructuralKey<T> &k) const noexcept { return k.hash(); }
};
