//===- Passes.h - The compiler's passes -----------------------------------===//
//
// Each pass is one file and one function. Graph passes rewrite the graph in
// place; lowerToProgram turns the graph into kernel IR. The order in which
// they run is compiler/pipeline/Pipeline.cpp.
//
// No pass runs another: the clean-ups a rewrite needs (infer-and-fold,
// eliminate-dead-code) are steps of the pipeline after it, run when the
// rewrite says it changed the graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Program.h"
#include "compiler/kernel/Schedule.h"

namespace mlcc::passes {

struct FoldOptions {
  /// Results with more elements than this are computed at run time instead
  /// (unless all their elements are equal, which costs nothing to keep).
  int64_t MaxFoldElements = int64_t(1) << 22;
  /// A node whose evaluation runs more loop iterations than this (seconds
  /// in the interpreter) is computed at run time instead.
  int64_t MaxFoldIterations = int64_t(1) << 24;
  /// Check each node against its ONNX schema before inferring it
  /// (OpRegistry::validate). The pipeline's first run sets it: the nodes are
  /// the model's own; later runs see nodes that mlcc's passes extended.
  bool Validate = false;
  /// DequantizeLinear nodes are not folded (fuse-qdq reads the quantized
  /// constants of the weights and biases they dequantize).
  bool KeepDequantize = false;
};

/// infer-and-fold: in topological order, infers every node's output types
/// (which may read constant inputs) and evaluates nodes whose inputs are all
/// constant by interpreting the node's own lowering. Folded nodes are
/// removed; their outputs become constants.
void inferAndFold(ir::Graph &g, const FoldOptions &options = {});

/// eliminate-dead-code: removes nodes none of whose outputs is used.
void eliminateDeadCode(ir::Graph &g);

/// eliminate-common-subexpressions: a node that computes what an earlier
/// node computes (same op, attributes and inputs) is replaced by it (the
/// node is left dead). Returns whether it replaced any.
bool eliminateCommonSubexpressions(ir::Graph &g);

/// fold-batch-norm: BatchNormalization (inference form) after a Conv,
/// ConvTranspose, Gemm or MatMul with constant weights becomes a scale of the
/// weights and a new bias, computed by constant folding (the nodes it adds
/// are ordinary Mul/Add/... nodes that the infer-and-fold step after it
/// evaluates).
void foldBatchNorm(ir::Graph &g);

/// fuse-qdq: DequantizeLinear -> op -> QuantizeLinear patterns (QDQ models)
/// become the integer op that computes them (QLinearConv, QLinearMatMul,
/// the com.microsoft QLinear ops, or the op itself on 8-bit data); the
/// remaining DequantizeLinear nodes of constants fold in the infer-and-fold
/// step after it.
void fuseQdq(ir::Graph &g);

/// pack-weights: constant weights of float Conv/Gemm/MatMul are reordered
/// (by an mlcc.PackPanels node that constant folding evaluates) into the
/// panels of the register tile chosen for `target`; the node then lowers
/// through the register-tiled contraction generator. Returns whether it
/// packed any (the packing nodes fold in the infer-and-fold step after it).
bool packWeights(ir::Graph &g, const TargetDesc &target);

/// pack-weights for a GPU target: float convolutions and matrix products
/// lower one output per iteration (plan PerOutput), the form a GPU runs
/// one thread per output of (or in shared-memory tiles); nothing is packed.
void layoutForGpu(ir::Graph &g);

/// dispatch-library: float matrix products (MatMul, Gemm, 1x1 Conv)
/// become mlcc.Gemm nodes whose kernels a target hands to its library
/// (cuBLAS), their bias a separate Add (see DispatchLibrary.cpp). Returns
/// whether it rewrote any.
bool dispatchLibrary(ir::Graph &g);

/// fuse-ops: groups each loop-nest node with the chain of elementwise nodes
/// that consumes its output (Node::Group); lower-to-kernels makes one kernel
/// per group.
void fuseOps(ir::Graph &g);

/// lower-to-kernels: lowers every node to a kernel (sharing identical
/// kernels), binds storage (views share their input's storage; outputs that
/// alias inputs, constants or other outputs get a copy); kir::planMemory
/// lays out the arena afterwards. `name` is the C prefix of the model.
kir::Program lowerToProgram(const ir::Graph &g, const std::string &name);

} // namespace mlcc::passes
