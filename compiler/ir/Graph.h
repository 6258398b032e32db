//===- Graph.h - The graph IR ---------------------------------------------===//
//
// A model as the compiler sees it after the frontend: values (tensors with a
// dtype and a static shape, possibly a known constant), nodes (an op type of
// a domain at an opset version, attributes, inputs and outputs) in
// topological order, and the graph inputs and outputs.
//
// Shapes are fully static inside the compiler: symbolic dimensions of the
// model's inputs are bound (--dim) before type inference runs.
//
// Ownership: the Graph owns its nodes and values; everything else refers to
// them by raw pointer. Optional inputs/outputs that a node omits are nullptr.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/KernelPlan.h"
#include "compiler/support/DType.h"
#include "compiler/support/Error.h"
#include "compiler/support/Tensor.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlcc::ir {

class Graph;
class Node;

struct TensorType {
  DType Type = DType::Undefined;
  Shape Dims;

  bool known() const { return Type != DType::Undefined; }
  int64_t numel() const { return numElements(Dims); }
  size_t rank() const { return Dims.size(); }
  bool operator==(const TensorType &o) const {
    return Type == o.Type && Dims == o.Dims;
  }
  /// "f32[1,3,224,224]"
  std::string str() const;
};

/// A dimension bound by `--dim NAME=MIN..MAX`: one library for every value
/// in the range, the value known only at run time.
struct BoundedDim {
  std::string Name;
  int64_t Min = 0, Max = 0;
};

/// A Loop or Scan whose number of iterations follows the bounded
/// dimensions (found by compiler/driver/BoundedDims.cpp, which compiles the
/// model at several values): Coeffs[k] * dimension k summed, plus Offset.
/// It unrolls to Most iterations, iteration t guarded by "t is below that
/// count", computed when the library runs.
struct TripRule {
  std::vector<int64_t> Coeffs;
  int64_t Offset = 0;
  int64_t Most = 0;
};

/// Numbers computed from bounded dimensions that a node reads as data (a
/// position Range(past, past + 1) into an embedding's Gather): the value's
/// elements, each an affine function of the dimensions, computed when the
/// library runs (the node mlcc.DimAffine) instead of folded at MAX.
/// Element e is Offsets[e] + sum over k of Coeffs[e * dims + k] * dim k.
struct NumberRule {
  std::vector<int64_t> Offsets;
  std::vector<int64_t> Coeffs;
};

/// What infer-and-fold computed for a small folded value (ir::Graph::
/// Folds): the tensor and the names of the folded node's inputs, for the
/// bounded-dimension analysis to trace a number back to where it follows a
/// dimension.
struct FoldRecord {
  TensorPtr Value;
  std::vector<std::string> Inputs;
};

/// An axis whose extent follows the bounded dimensions (compiler/support/
/// Tensor.h); the value's TensorType holds the extent at every dimension's
/// Max.
using mlcc::AxisExtent;

class Value {
public:
  std::string Name;
  TensorType Type;
  Node *Producer = nullptr;  ///< Null for graph inputs and constants.
  TensorPtr Const;           ///< Set when the value is known at compile time.
  /// For a quantized graph input or output (--quantize-io): real value =
  /// QuantScale * (q - QuantZeroPoint); 0 when not quantized.
  double QuantScale = 0;
  int64_t QuantZeroPoint = 0;
  /// For an 8-bit value made by a QuantizeLinear of constant per-tensor
  /// parameters (recorded by fuse-qdq before it fuses the node away): the
  /// float tensor it quantizes and how (real = DequantScale * (q -
  /// DequantZeroPoint)). Only `mlcc check` reads it.
  std::string QuantizedFrom;
  double DequantScale = 0;
  int64_t DequantZeroPoint = 0;
  /// The axes whose extents follow bounded dimensions (Graph::BoundedDims),
  /// in axis order; empty: every extent is fixed.
  std::vector<AxisExtent> Bounded;
  /// A constant whose elements depend on bounded dimensions (computed from
  /// them: a Slice end from Shape(x)); it holds their value at MAX.
  bool FromDims = false;
  /// A graph input of one integer element whose value the caller promises
  /// in [first, second] (--input-range); NAME_run checks it. A Loop whose
  /// trip count it is unrolls to the most it allows.
  std::optional<std::pair<int64_t, int64_t>> Range;
  /// A constant of 4-bit weights in 8-bit form: int8 weights that are the
  /// 4-bit codes times 16 (fuse-qdq; the integer kernels compute them
  /// unchanged, at a scale 16 times smaller), or a layout of such weights
  /// (pack-weights): the axis of its output channels, along which
  /// lower-to-program pairs elements to store two in one (the high nibbles
  /// of each byte pair; see ops::nibblePairBytes); -1 otherwise. A hint: the
  /// constant's data decides whether it is so stored.
  int FourBitAxis = -1;

  bool isConstant() const { return Const != nullptr; }
};

enum class AttrKind : uint8_t {
  Float,
  Int,
  String,
  Tensor,
  Graph,
  Floats,
  Ints,
  Strings,
  Tensors,
  Graphs,
  TypeProto,
  SparseTensor,
};
const char *attrKindName(AttrKind kind);

struct Attribute {
  AttrKind Kind = AttrKind::Int;
  double F = 0;
  int64_t I = 0;
  std::string S;
  TensorPtr T;
  std::shared_ptr<Graph> G;
  std::vector<double> Floats;
  std::vector<int64_t> Ints;
  std::vector<std::string> Strings;
  std::vector<TensorPtr> Tensors;
  std::vector<std::shared_ptr<Graph>> Graphs;
};

/// An Int attribute of value `v`.
inline Attribute intAttr(int64_t v) {
  Attribute a;
  a.Kind = AttrKind::Int;
  a.I = v;
  return a;
}

/// An Ints attribute of values `v`.
inline Attribute floatAttr(double v) {
  Attribute a;
  a.Kind = AttrKind::Float;
  a.F = v;
  return a;
}

inline Attribute intsAttr(std::vector<int64_t> v) {
  Attribute a;
  a.Kind = AttrKind::Ints;
  a.Ints = std::move(v);
  return a;
}

class Node {
public:
  std::string Name; ///< ONNX node name, or a generated one ("Conv_3").
  std::string OpType;
  std::string Domain; ///< "" for the default ai.onnx domain.
  int64_t Opset = 0;  ///< Version of Domain that the model imports.
  std::map<std::string, Attribute> Attrs;
  std::vector<Value *> Inputs;  ///< nullptr: omitted optional input
  std::vector<Value *> Outputs; ///< nullptr: omitted optional output
  /// For nodes with subgraph attributes that were copied by inlining: the
  /// values that names captured by the subgraphs now refer to (the copy's
  /// surroundings were renamed). Looked up before the graph's own names.
  std::map<std::string, Value *> Captured;
  /// The node runs only when this boolean scalar, computed at run time, is
  /// true (null: always). Set on the nodes of an If's branches and of a
  /// Loop's iterations when the condition is known only at run time; the
  /// values such a node writes are read only by nodes under the same guard
  /// and by the Where nodes that choose between branches (which read a
  /// skipped branch's values but never select them). A use like an input:
  /// replaceAllUses, useCounts and dead-code elimination count it.
  Value *Guard = nullptr;
  /// Fusion group (set by fuse-ops): nodes with the same non-negative id are
  /// computed by one kernel. The group's first node builds the loop nest;
  /// the others are elementwise nodes applied to each element it stores.
  int Group = -1;
  /// A member of a fusion group whose value the group computes where a
  /// chain node reads it (an operand's producer inlined: fuse-ops), not
  /// at the root's stores.
  bool Inlined = false;
  /// How its kernel runs (set by plan-kernels; empty: the op's own loop
  /// nest). Not an attribute: no ONNX meaning, never written to a model.
  KernelPlan Plan;

  /// "node 'conv1' (Conv)": the prefix of every message about this node.
  std::string where() const;
  /// Starts an error about this node: node.error(kind) << "what is wrong".
  ErrorBuilder error(ErrorKind kind = ErrorKind::Invalid) const;

  // --- attributes -------------------------------------------------------
  bool hasAttr(const std::string &name) const { return Attrs.count(name) > 0; }
  const Attribute *attr(const std::string &name) const;
  int64_t attrInt(const std::string &name, int64_t dflt) const;
  double attrFloat(const std::string &name, double dflt) const;
  std::string attrString(const std::string &name,
                         const std::string &dflt) const;
  std::vector<int64_t> attrInts(const std::string &name,
                                std::vector<int64_t> dflt = {}) const;
  std::vector<double> attrFloats(const std::string &name,
                                 std::vector<double> dflt = {}) const;
  /// Requires the attribute; a clear error names it when missing.
  int64_t requireInt(const std::string &name) const;
  std::vector<int64_t> requireInts(const std::string &name) const;
  TensorPtr requireTensor(const std::string &name) const;

  // --- inputs -----------------------------------------------------------
  size_t numInputs() const { return Inputs.size(); }
  bool hasInput(size_t i) const { return i < Inputs.size() && Inputs[i]; }
  bool hasOutput(size_t i) const { return i < Outputs.size() && Outputs[i]; }
  /// Input i's type (the input must be present).
  const TensorType &inType(size_t i) const;
  const Shape &inShape(size_t i) const { return inType(i).Dims; }
  DType inDType(size_t i) const { return inType(i).Type; }
  /// Input i's compile-time value. Throws a DataDependent error naming the
  /// input when it is not a constant (`why` says what needs it).
  TensorPtr constInput(size_t i, const char *why = nullptr) const;
  /// Same as constInput, as int64 values.
  std::vector<int64_t> constInputInts(size_t i, const char *why = nullptr) const;
  /// Sets output i's type (ignored when the output is omitted).
  void setOutput(size_t i, DType type, Shape dims);
  void setOutput(size_t i, const TensorType &t) { setOutput(i, t.Type, t.Dims); }
};

class Graph {
public:
  std::string Name;
  /// Imported opset version per domain ("" = ai.onnx).
  std::map<std::string, int64_t> Opsets;
  std::vector<std::unique_ptr<Node>> Nodes; ///< Topological order.
  std::vector<std::unique_ptr<Value>> Values;
  std::vector<Value *> Inputs;
  std::vector<Value *> Outputs;
  /// Values of this (sub)graph that stand for values of enclosing graphs,
  /// referred to by name.
  std::vector<Value *> Captures;
  /// The dimensions bound to a range (--dim NAME=MIN..MAX), which
  /// Value::Bounded refers to by index.
  std::vector<BoundedDim> BoundedDims;
  /// Key/value caches kept in one caller buffer (--kv-cache): each graph
  /// input (the past) and the graph output (the present) whose buffer it
  /// is, the present in its layout at MAX; the step writes only the new
  /// rows (mlcc.CacheAppend, see passes::kvCache).
  std::vector<std::pair<const Value *, const Value *>> KvCaches;
  /// What the compile decided from constants that control flow reads: each
  /// If's branch ("node 'If_0' (If): the then branch"), each Loop's trip
  /// count and whether each iteration runs, when known at compile time. A
  /// bounded dimension compares them between values (compiler/driver/
  /// BoundedDims.cpp): a decision computed from the dimension must not
  /// change in its range.
  struct Decision {
    std::string Node; ///< the node that decided (its name)
    std::string Text; ///< what, for messages
    bool operator==(const Decision &o) const { return Text == o.Text; }
  };
  std::vector<Decision> Decisions;
  /// Each Loop's and Scan's number of iterations at this compile's values,
  /// by node name, where known at compile time (the bounded-dimension
  /// analysis finds those that follow a dimension, and checks its rules).
  std::map<std::string, int64_t> TripCounts;
  /// Loops and Scans (by node name) to unroll to the most iterations of a
  /// bounded dimension's range, their count known at run time.
  std::map<std::string, TripRule> TripRules;
  /// Values (by name) computed at run time from the bounded dimensions
  /// where nodes read them as data; infer-and-fold adds the nodes that
  /// compute them (NumberRule).
  std::map<std::string, NumberRule> RunTimeNumbers;
  /// The small values infer-and-fold computed, by name (FoldRecord), where
  /// FoldOptions::RecordFolds asks (compiles with bounded dimensions).
  std::map<std::string, FoldRecord> Folds;
  /// Name prefixes of the values of iterations that a TripRule's loop has
  /// beyond its count at this compile's dimension values: copies of its last
  /// iteration, there so that the graph has the same nodes at every value;
  /// the bounded-dimension analysis ignores their extents.
  std::vector<std::string> SpareIterations;

  /// The value named `name`, or null.
  Value *findValue(const std::string &name) const;

  Value *addValue(const std::string &name, TensorType type = {});
  /// Exchanges the names of two values (a graph output that a pass
  /// replaces keeps its name on the replacement).
  void swapNames(Value *a, Value *b);
  /// Appends a node (the caller wires inputs/outputs and sets Producer).
  Node *addNode(std::unique_ptr<Node> node);
  /// A value name not used yet, derived from `base`.
  std::string uniqueValueName(const std::string &base);
  std::string uniqueNodeName(const std::string &base);

  /// Replaces every use of `from` (node inputs, graph outputs) with `to`.
  void replaceAllUses(Value *from, Value *to);
  /// Number of node inputs and graph outputs that refer to each value.
  std::map<const Value *, int> useCounts() const;
  /// Removes nodes for which `dead(node)` is true; values stay owned.
  template <typename Pred> void removeNodesIf(Pred dead) {
    std::vector<std::unique_ptr<Node>> kept;
    for (auto &n : Nodes)
      if (!dead(*n))
        kept.push_back(std::move(n));
    Nodes = std::move(kept);
  }
  bool isGraphInput(const Value *v) const;
  bool isGraphOutput(const Value *v) const;

private:
  std::map<std::string, int> NameCounters;
  std::map<std::string, Value *> ValueByName;
  std::map<std::string, int> NodeNameCounters;
};

/// Deterministic text form (--emit graph).
std::string printGraph(const Graph &g);
/// "f32[1,seq,256]": `v`'s type, each bounded axis written as its extent
/// over the bounded dimensions of `g`.
std::string typeText(const Graph &g, const Value &v);

/// Graphviz text of the graph (--dump-dot): nodes as boxes, values as edges
/// labelled with their types, constants as notes.
std::string printDot(const Graph &g);

/// Checks structural invariants: inputs defined before use, each value
/// produced once, known types on every value, graph outputs defined.
/// Throws an Internal CompileError describing the first violation.
void verifyGraph(const Graph &g);

} // namespace mlcc::ir
