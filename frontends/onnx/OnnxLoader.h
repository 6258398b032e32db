//===- OnnxLoader.h - ONNX protobuf to graph IR ---------------------------===//
//
// Reads an ONNX model file into a Graph: initializers and Constant nodes
// (as constants), calls of model-local functions (expanded), node attributes (with subgraphs), opset imports, every
// TensorProto storage form (raw_data, the typed fields, external files).
// Symbolic input dimensions are bound from LoadOptions::Dims; inputs listed
// in LoadOptions::Frozen become compile-time constants.
//
// The loader does no type inference and knows no op semantics.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::onnx {

/// Oldest and newest versions the loader accepts.
constexpr int64_t MinIrVersion = 3;
constexpr int64_t MaxIrVersion = 13;
constexpr int64_t MaxDefaultOpset = 28;

struct LoadOptions {
  /// Values for symbolic dimensions (dim_param), by name.
  std::map<std::string, int64_t> Dims;
  /// Whole shapes of graph inputs, by input name (`--shape`): they give
  /// every dimension, named, unnamed or absent; a dimension the model fixes
  /// must agree, and a named one binds that name for the other inputs.
  std::map<std::string, Shape> Shapes;
  /// Graph inputs to turn into constants, by input name.
  std::map<std::string, TensorPtr> Frozen;
  /// The values integer scalar graph inputs take (`--input-range`), by
  /// input name: ir::Value::Range.
  std::map<std::string, std::pair<int64_t, int64_t>> Ranges;
};

/// Loads a model; throws CompileError (Io/Invalid/Unsupported) with a
/// one-line message on any problem.
std::unique_ptr<ir::Graph> loadModel(const std::string &path,
                                     const LoadOptions &options);

/// Loads a model from its serialized bytes; `path` names it in messages
/// and `baseDir` is where external data lives ("" forbids external data).
std::unique_ptr<ir::Graph> loadModelBytes(const std::string &bytes,
                                          const std::string &path,
                                          const std::string &baseDir,
                                          const LoadOptions &options);

/// A graph input as written in the model file (before any binding).
struct GraphInputDesc {
  std::string Name;
  /// Each dimension: a number, the symbolic name (dim_param), or "".
  std::vector<std::string> Dims;
};

/// The graph inputs that are not initializers, in order (for tools that
/// feed test data: the conformance harness).
std::vector<GraphInputDesc> describeGraphInputs(const std::string &path);

/// A graph input's axis, for withNamedAxes.
struct NamedAxis {
  std::string Input; ///< a graph input (not an initializer)
  size_t Axis = 0;
  std::string Dim;   ///< the dimension's name (dim_param)
};

/// The serialized model of `path` with each of `axes` declared as the
/// named (symbolic) dimension instead of its number: the conformance
/// harness's rerun with an axis bound at run time (--dim NAME=MIN..MAX).
/// An Invalid error names an input or axis the model does not have.
std::string withNamedAxes(const std::string &path, const std::vector<NamedAxis> &axes);

/// The op types of the main graph's nodes, in the file's order.
std::vector<std::string> describeNodeOps(const std::string &path);

/// Reads a serialized TensorProto file (the backend tests' input_N.pb).
TensorPtr loadTensorFile(const std::string &path);

/// Serializes a tensor as a TensorProto (raw_data form).
std::string serializeTensor(const Tensor &t, const std::string &name);

} // namespace mlcc::onnx
