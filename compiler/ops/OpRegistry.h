//===- OpRegistry.h - What mlcc knows about each operator -----------------===//
//
// Every op is described once, in its own file under compiler/ops/: its type
// and shape inference, its lowering to kernel IR and its fusion class. A file
// registers its ops in a function declared with MLCC_OPS(FileName); CMake
// collects the files into OpFamilies.inc, so adding an op file needs no edit
// anywhere else.
//
//   MLCC_OPS(Relu) {
//     R.add({.Name = "Relu", .Fusion = FusionClass::Elementwise,
//            .Infer = inferUnary, .Lower = lowerRelu});
//   }
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/kernel/KernelIR.h"

#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::ops {

class LowerCtx;

/// The value of one output element of an elementwise op from its present
/// inputs' elements (in compute type, in input order, omitted inputs
/// skipped); may read the node's attributes.
using NodeScalarFn = std::function<kir::Expr(const ir::Node &,
                                             const std::vector<kir::Expr> &args)>;

/// How an op combines with neighbours when kernels are fused.
enum class FusionClass : uint8_t {
  Elementwise, ///< out[i] = f(in[i]...) with broadcasting
  Injective,   ///< each output element reads a computed input element
  Reduction,   ///< reduces one or more axes
  Opaque,      ///< anything else (convolution, sorting, ...)
  View,        ///< output is input 0's data with another shape: no kernel
};
const char *fusionClassName(FusionClass c);

struct OpSchema {
  std::string Domain; ///< "" for ai.onnx
  std::string Name;
  /// The earliest version of the op (opset of its domain) this entry handles.
  /// Entries for one op cover [SinceVersion, next entry's SinceVersion).
  int64_t SinceVersion = 1;
  FusionClass Fusion = FusionClass::Opaque;
  /// Sets every present output's type from the inputs and attributes; may
  /// read constant inputs (node.constInput). Throws on invalid nodes.
  std::function<void(ir::Node &)> Infer;
  /// Builds the kernel computing the node (null for View ops).
  std::function<void(LowerCtx &)> Lower;
  /// Elementwise ops: the scalar function Lower computes for every element.
  /// Set for the ops that fusion may inline into a producer's epilogue.
  NodeScalarFn Scalar;
  /// False for ops whose result must not be computed at compile time
  /// (random numbers).
  bool Foldable = true;
  /// Optional: replaces the node by simpler nodes before inference (If,
  /// Loop and Scan are expanded this way). Returns the new nodes in order;
  /// they must produce the node's outputs (same Value objects). Inference
  /// then continues with the first new node.
  std::function<std::vector<std::unique_ptr<ir::Node>>(ir::Node &, ir::Graph &)> Expand;
  /// Optional, for ops whose output is their inputs laid side by side
  /// (Concat): the element offset of each input's data in the output when
  /// every input is one contiguous block of it, else nothing. The inputs'
  /// producers may then write into the output directly (lower-to-kernels).
  std::function<std::optional<std::vector<int64_t>>(const ir::Node &)> Placement;
  /// Optional, for ops whose outputs are parts of input 0 (Split, Slice,
  /// Gather of one index, a Transpose that keeps the order of the axes
  /// longer than 1): the element offset in input 0 of each output's data
  /// (-1 for an omitted output) when every present output is one
  /// contiguous block of it, else nothing. The outputs may then be views
  /// into the input's buffer, with no kernel (lower-to-kernels).
  std::function<std::optional<std::vector<int64_t>>(const ir::Node &)> Selection;
  /// True when Lower runs its loops to the extents known when the kernel
  /// runs (TensorRef::extents): the node may read and write values whose
  /// axes follow bounded dimensions (--dim NAME=MIN..MAX). Other ops stop
  /// with a clear error on such values.
  bool RunTimeExtents = false;
  /// With RunTimeExtents: Lower reads and writes its operands only through
  /// TensorRef's indices (load/store at a multi-index, extents), or flat
  /// over numelAtRunTime() where every operand has one, so an operand may
  /// be laid out dense at its run-time extents (a graph input or output
  /// whose bounded axis has longer axes before it, read and written in the
  /// caller's buffer: lower-to-kernels, TensorRef::denseAtRunTime).
  bool DenseOperands = false;
};

class OpRegistry {
public:
  /// The registry with every op file's registrations.
  static const OpRegistry &instance();

  void add(OpSchema schema);
  /// The schema for `node` (by domain, op type and the node's opset), or a
  /// CompileError naming the node and saying what is missing.
  const OpSchema &lookup(const ir::Node &node) const;
  /// Checks `node` against the ONNX schema of its op and opset (compiler/ops/
  /// Validate.cpp): input and output counts, required inputs and
  /// attributes, attribute types, element type constraints and the shared
  /// attribute value ranges. Runs before the node's Infer; throws a
  /// CompileError (Invalid) naming the node, the op and the problem.
  void validate(const ir::Node &node) const;
  /// Whether the ONNX schema of `node`'s op lets input `i` be of type `t`
  /// (its formal's type constraint allows it); true where there is no
  /// schema to say (mlcc's and contrib ops: their Infer decides).
  bool accepts(const ir::Node &node, size_t i, DType t) const;
  const OpSchema *find(const std::string &domain, const std::string &name,
                       int64_t version) const;
  /// All registered (domain, name) pairs with their versions, sorted.
  std::vector<const OpSchema *> all() const;

private:
  std::map<std::pair<std::string, std::string>, std::vector<OpSchema>> Ops;
};

} // namespace mlcc::ops

/// Defines the registration function of one op file; use it inside
/// namespace mlcc::ops.
#define MLCC_OPS(Family) void mlccRegisterOps_##Family(::mlcc::ops::OpRegistry &R)
