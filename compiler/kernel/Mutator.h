//===- Mutator.h - Rewriting kernel IR --------------------------------------===//
//
// The base of every kernel-IR transformation (schedules, scalarization,
// substitution). A Mutator walks a statement or expression bottom-up; a
// subclass overrides `mutate` for the nodes it changes and calls the base
// version to recurse. Nodes whose children did not change are returned as
// they are (the IR is immutable and shared), and changed nodes are rebuilt
// through the checked constructors of KernelIR.h.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <functional>

namespace mlcc::kir {

class Mutator {
public:
  virtual ~Mutator() = default;
  virtual Expr mutate(const Expr &e);
  virtual Stmt mutate(const Stmt &s);
};

/// `e` with operands `a`, `b`, `c` in place of its A, B, C (null where it
/// has none), rebuilt through the checked constructors; `e` itself when
/// they are its own.
Expr withOperands(const Expr &e, const Expr &a, const Expr &b, const Expr &c);

/// Calls `fn` on every expression of `s` (loads' indices, stored values,
/// loop bounds, conditions), parents before children.
void visitExprs(const Stmt &s, const std::function<void(const Expr &)> &fn);
/// Calls `fn` on `s` and every statement nested in it, outermost first.
void visitStmts(const Stmt &s, const std::function<void(const Stmt &)> &fn);
void visitExprs(const Expr &e, const std::function<void(const Expr &)> &fn);

/// Replaces every reference to `v` by `value`.
Stmt substitute(const Stmt &s, const Var &v, const Expr &value);
Expr substitute(const Expr &e, const Var &v, const Expr &value);

/// True when `e` refers to `v`.
bool dependsOn(const Expr &e, const Var &v);

/// A fresh loop variable.
Var newVar(const std::string &name);

/// `k` with its body rewritten by `m` (finalized again when it changed).
Kernel rewrite(const Kernel &k, Mutator &m);

} // namespace mlcc::kir
