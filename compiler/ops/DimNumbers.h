//===- DimNumbers.h - Numbers computed from bounded dimensions -----------===//
//
// A model computes numbers from its shapes (Shape, Gather, Range, Add, ...).
// With a bounded dimension (--dim NAME=MIN..MAX) those numbers fold at MAX;
// a node that reads them as a shape or bounds gets its extents from the
// dimension, but a node that reads them as data (a position index into an
// embedding) needs them when the library runs: mlcc.DimAffine computes such
// a value, each element an affine function of the dimensions
// (ir::NumberRule).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <cstddef>

namespace mlcc::ops {

/// Whether node `n` reads its input `i` as a shape, sizes, axes or bounds
/// (its output's extents say what it makes of them), not as data.
bool isShapeOperand(const ir::Node &n, size_t i);

/// After infer-and-fold folded `v` (a constant named in g.RunTimeNumbers):
/// a new value computed by an mlcc.DimAffine node (returned, for the caller
/// to insert) by `rule`, which the nodes that read `v` as data now read.
/// Nodes that read `v` as a shape keep the constant.
std::unique_ptr<ir::Node> numbersAtRunTime(ir::Graph &g, ir::Value &v, const ir::NumberRule &rule);

} // namespace mlcc::ops
