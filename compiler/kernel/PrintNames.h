//===- PrintNames.h - The names print() gives variables and buffers -------===//
//
// print() names each variable and buffer where it first appears, in one of
// two ways (below). Structural equality (Equality.h) matches variables and
// buffers through these same names, so that it tells apart exactly what the
// printed text told apart when kernels and indices were compared as text.
// Internal to compiler/kernel; the rest of the printed form is in
// Printer.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

#include <map>
#include <set>
#include <string>

namespace mlcc::kir {

class PrintNames {
public:
  /// `canonical`: v0, v1, ... and b0, b1, ... in order of first appearance,
  /// the nodes' own names ignored (print(k, false), the key of identical
  /// kernels). Otherwise each node's own name ("t" when empty), with a
  /// suffix _1, _2, ... for a later node of a name already given.
  explicit PrintNames(bool canonical) : Canonical(canonical) {}

  /// The name of `v` (of `b`): chosen on the first call for the node, the
  /// same on later calls. Variables and buffers draw from one set of names.
  const std::string &name(const VarNode *v);
  const std::string &name(const BufferNode *b);

private:
  std::string unique(const std::string &base);

  bool Canonical;
  std::map<const VarNode *, std::string> VarNames;
  std::map<const BufferNode *, std::string> BufNames;
  std::map<std::string, int> Used;
  std::set<std::string> Taken;
};

/// A GemmCall's alpha as print() shows it: the stream's default form, six
/// significant digits.
std::string gemmAlphaText(double alpha);

} // namespace mlcc::kir
