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

#include <functional>
#include <vector>

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
  /// Keep what folding computed for small values (ir::Graph::Folds): the
  /// bounded-dimension analysis traces numbers back through it (set by
  /// compileWithDims only).
  bool RecordFolds = false;
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

/// scale-into-weights: Conv(Mul(x, s), W) with s a per-channel scale known
/// at run time (squeeze-and-excitation) and a pointwise convolution that
/// reads its weights in place becomes Conv(x, Mul(W, s)): M x C products
/// instead of a pass over the tensor. True when it rewrote something.
bool scaleIntoWeights(ir::Graph &g);

/// fuse-qdq: DequantizeLinear -> op -> QuantizeLinear patterns (QDQ models)
/// become the integer op that computes them (QLinearConv, QLinearMatMul,
/// the com.microsoft QLinear ops, or the op itself on 8-bit data); the
/// remaining DequantizeLinear nodes of constants fold in the infer-and-fold
/// step after it.
void fuseQdq(ir::Graph &g);

/// plan-kernels: decides every node's kernel plan (ir::KernelPlan) for
/// `target` with the cost model of compiler/schedule/CostModel.h (see
/// PlanKernels.cpp); on a GPU (target.gpu()) only one output per thread and the
/// integer tiles. It only decides: the operands a plan reads are added by
/// pack-weights and fixed-point-requant. With `integerRequant` (--quantize-io)
/// the integer products requantize in integers on every target (no float
/// instruction in the model), not only on those without floating point.
/// Returns whether it planned any.
/// With `choose` (schedule search, --tune; not on a GPU), each node with
/// more than one candidate plan (planCandidates) takes the one `choose`
/// returns the index of.
using PlanChooser =
    std::function<size_t(const ir::Node &n, const std::vector<ir::KernelPlan> &candidates)>;
/// `fixed`: plans by node name, taken as they are.
bool planKernels(ir::Graph &g, const TargetDesc &target, bool integerRequant = false,
                 const PlanChooser &choose = {},
                 const std::map<std::string, ir::KernelPlan> *fixed = nullptr);
/// The plans schedule search measures for `n`: planKernel's first, then
/// the other forms and register tiles the target allows (f32 contractions:
/// Winograd or direct, pixels or rows as the tile's rows, the tiles the
/// cost model ranks first for each; int8 convolutions on dot products:
/// their tiles; integer tiles of scalars on a target without vectors;
/// recurrent cells: the gate rows summed in registers at once; f32
/// depthwise convolutions: the stack plane bound and the grid's rounding).
/// Every register tile without cache blocks comes again with each loop
/// knob set (KernelPlan::Tile: the row tiles outermost, the reduction
/// unrolled by 2 or 4, both); and every node comes with the plan the
/// target would get without each of its integer multiply-accumulate forms
/// (VNNI -> pmaddwd, sdot -> smlal, smlad -> one product), with that
/// form's tiles.
/// Every one computes the same values (integer kernels exactly; f32 ones
/// in another order of the sums).
std::vector<ir::KernelPlan> planCandidates(const ir::Node &n, const TargetDesc &target,
                                           bool integerRequant = false);
/// `p` with its loop knobs at their defaults: the form and tile that
/// schedule search measures first, the knobs then on the best of those.
ir::KernelPlan withoutKnobs(ir::KernelPlan p);
/// The plan of one node (shapes inferred); empty: the op's own loop nest.
ir::KernelPlan planKernel(const ir::Node &n, const TargetDesc &target,
                          bool integerRequant = false);

/// pack-weights: adds the weights the plans read, in their layout, as
/// nodes that constant folding evaluates: f32 panels of the register
/// tile's width (mlcc.PackPanels), the Winograd-domain kernel
/// (mlcc.WinogradWeights), int8 quads (mlcc.PackQuads, mlcc.PackQuadsK)
/// with their int32 sums; the plan records the input. Returns whether it
/// added any (they fold in the infer-and-fold step after it).
/// `wideHalfWeights`: 16-bit float weights that a tile broadcasts, or that
/// a tile of several rows reads, are folded to f32 (targets with vector FMA
/// units, where a conversion per vector competes with the FMAs); false keeps
/// them 16-bit (scalar microcontrollers: flash is what is scarce there).
bool packWeights(ir::Graph &g, bool wideHalfWeights = true);

/// fixed-point-requant: for nodes whose plan requantizes in fixed point
/// (targets without floating point), appends each output channel's Q31
/// multiplier and shift (constants) and records where. Returns whether it
/// added any.
bool fixedPointRequant(ir::Graph &g);

/// The per-channel fixed-point requantization of an integer convolution or
/// matrix product with constant f32 scales (x, w per channel, y per tensor):
/// the real multiplier x_scale * w_scale[c] (* alpha) / y_scale as an int32
/// Q31 multiplier M0 in [2^30, 2^31) and a right shift S in [1, 62]
/// (m = M0 * 2^-S), or nothing when a scale is not such a constant or a
/// multiplier falls outside that range.
struct FixedPointScales {
  std::vector<int64_t> Multipliers, Shifts;
};
std::optional<FixedPointScales> fixedPointScales(const ir::Node &n);

/// dispatch-library: float matrix products (MatMul, Gemm, 1x1 Conv)
/// become mlcc.Gemm nodes whose kernels a target hands to its library
/// (cuBLAS), their bias a separate Add (see DispatchLibrary.cpp). Returns
/// whether it rewrote any.
bool dispatchLibrary(ir::Graph &g);

/// fuse-attention: MatMul(Q, K^T) -> scale/mask steps -> Softmax ->
/// MatMul(., V) chains (and the Transposes around their heads) become one
/// mlcc.Attention node (see FuseAttention.cpp). Returns whether it fused any.
bool fuseAttention(ir::Graph &g);

/// fuse-normalization: LayerNorm and RMSNorm written out in tensor ops
/// (ReduceMean, Sub, Pow, Sqrt, Div, ...) become LayerNormalization and
/// RMSNormalization nodes (see FuseNormalization.cpp). Returns whether it
/// rewrote any.
bool fuseNormalization(ir::Graph &g);

/// kv-cache (--kv-cache): each (past input, present output) pair, named or
/// found (`automatic`), whose present is Concat(past, new) along the past's
/// run-time axis is kept in one caller buffer: the Concat becomes
/// mlcc.CacheAppend (the new rows only) and the pair is recorded in
/// Graph::KvCaches. Throws a clear error for a pair without that form.
bool kvCache(ir::Graph &g, const std::vector<std::pair<std::string, std::string>> &pairs,
             bool automatic);

/// reduce-precision (--precision float16|bfloat16): the float32 weights and
/// activations of `g` in `to` (F16 or BF16) wherever each node's schema and
/// inference take it, the graph's inputs and outputs still float32
/// (compiler/passes/ReducePrecision.cpp).
bool reducePrecision(ir::Graph &g, DType to);

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
