//===- Reference.h - The model before optimization, in double -------------===//
//
// `mlcc check` compares the code that ships with an independent path: the
// model as loaded, each node its own kernel (no fusion, no weight packing,
// no schedule), float32 arithmetic carried out in float64 wherever the op's
// ONNX schema admits double (casts at the edges of the ops that do not:
// QuantizeLinear, DequantizeLinear, ...), and every value the graph computes
// a model output, so that each can be read back by its ONNX name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Program.h"
#include "compiler/passes/Passes.h"

#include <map>
#include <string>

namespace mlcc::check {

struct Reference {
  kir::Program Program; ///< Its outputs are every value the graph computes.
  /// Nodes computed in float64, and those left in their own types (float32
  /// ops whose schema does not admit double, integer ops).
  size_t DoubleNodes = 0, OtherNodes = 0;
  /// Empty, or why nothing was promoted (the model has control flow whose
  /// subgraphs read outer values by name).
  std::string NoDoubleReason;
  /// Every value's type in the model itself (before promotion), by name.
  std::map<std::string, ir::TensorType> ModelTypes;
};

/// Builds the reference program of `g`, a graph just loaded (its symbolic
/// dimensions bound); `g` is rewritten.
Reference buildReference(ir::Graph &g, const passes::FoldOptions &fold);

} // namespace mlcc::check
