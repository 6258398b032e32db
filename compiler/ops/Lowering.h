//===- Lowering.h - Helpers for op inference and lowering -----------------===//
//
// The vocabulary of the op files: LowerCtx gives a node's operands as
// TensorRefs inside the kernel being built; the free functions implement the
// rules many ops share (broadcasting, axis normalization, elementwise
// lowering).
//
// Operand values are loaded in their compute type (f16/bf16 -> f32) and
// stored back with a conversion, so a lowering written for f32 also serves
// f16. Constant operands whose elements are all equal are not passed to the
// kernel at all: their loads become constants.
//
// Defined in LowerCtx.cpp (TensorRef, LowerCtx, fused epilogues),
// ShapeRules.cpp, InferenceRules.cpp and CommonLowerings.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"
#include "compiler/kernel/Builder.h"
#include "compiler/ops/OpRegistry.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>

namespace mlcc::ops {

using kir::Expr;

class Epilogue;

/// A node operand (or scratch buffer) inside the kernel being built.
///
/// An output may carry an epilogue (see LowerCtx::fuseEpilogue): its stores
/// then pass each element through the fused elementwise nodes and write the
/// last one's buffer. Such an output is write-only: a lowering that reads
/// back what it stored must check `writeOnly()` and accumulate elsewhere.
class TensorRef {
public:
  TensorRef() = default;
  TensorRef(kir::KernelBuilder *b, kir::Buffer buf, TensorPtr constant,
            ir::TensorType type);

  DType dtype() const { return Type.Type; }
  /// The type loads produce and stores expect.
  DType computeType() const { return kir::computeType(Type.Type); }
  const Shape &shape() const { return Type.Dims; }
  size_t rank() const { return Type.Dims.size(); }
  int64_t numel() const { return Type.numel(); }
  /// Extent of dimension `d` (negative counts from the end).
  int64_t dim(int64_t d) const;
  /// Row-major element strides.
  std::vector<int64_t> strides() const;

  // A tensor whose axes follow bounded dimensions (--dim NAME=MIN..MAX)
  // keeps the layout of shape(), every axis at its MAX extent, and is in
  // use only up to its extents when the kernel runs.
  /// True when some axis follows a bounded dimension.
  bool bounded() const { return !Bounded.empty(); }
  /// Whether axis `d` (negative counts from the end) follows one.
  bool boundedAxis(int64_t d) const;
  /// Extent of dimension `d` when the kernel runs: a constant, or for an
  /// axis that follows bounded dimensions an Index computed from the
  /// kernel's dims parameter.
  Expr extent(int64_t d) const;
  std::vector<Expr> extents() const;
  /// The elements in use when the kernel runs, when they are the leading
  /// elements of the buffer (each bounded axis has only axes of extent 1
  /// before it, so the layout at MAX is dense at every extent): a loop over
  /// [0, numelAtRunTime()) visits them in order. Null otherwise. With
  /// `per`, a divisor of the elements after the bounded axis: the count of
  /// runs of `per` elements (the rows of a matrix of `per` columns).
  Expr numelAtRunTime(int64_t per = 1) const;
  /// Whether the elements in use are laid out dense at the run-time
  /// extents (strides computed from them), not in the layout at MAX: a
  /// graph input or output in the caller's buffer (see
  /// OpSchema::DenseOperands).
  bool denseAtRunTime() const { return RunTimeDense && !Bounded.empty(); }
  /// Compile-time value, if known.
  const TensorPtr &constant() const { return Const; }
  /// The kernel buffer, for loads the lowering writes itself (vectors).
  /// Of a constant stored as nibble pairs (nibbleAxis() >= 0) it is not the
  /// tensor's layout: asking for it makes lower-to-program lower the node
  /// again with that constant stored plainly.
  const kir::Buffer &buffer() const;
  /// The axis along which the buffer pairs elements, two in the place of
  /// one (see nibblePairBytes); -1 for a plain buffer. load() and
  /// loadFlat() unpack.
  int nibbleAxis() const { return NibbleAxis; }

  /// Flat element offset of a full multi-index.
  Expr offset(const std::vector<Expr> &idx) const;
  /// Element at a multi-index / flat offset, in compute type.
  Expr load(const std::vector<Expr> &idx) const;
  Expr loadFlat(const Expr &off) const;
  /// The element that numpy broadcasting maps to output position `outIdx`
  /// (outIdx may have higher rank; leading dimensions are dropped and unit
  /// dimensions read index 0).
  Expr loadBroadcast(const std::vector<Expr> &outIdx) const;
  /// Stores a compute-type value (converted to the storage type).
  void store(const std::vector<Expr> &idx, const Expr &value) const;
  void storeFlat(const Expr &off, const Expr &value) const;
  /// True for an output with an epilogue: it cannot be loaded.
  bool writeOnly() const { return Epi != nullptr; }

private:
  friend class LowerCtx;
  /// load() of a buffer of nibble pairs.
  Expr loadNibbles(const std::vector<Expr> &idx) const;
  int NibbleAxis = -1;
  kir::KernelBuilder *B = nullptr;
  LowerCtx *Ctx = nullptr; ///< for the dims parameter of bounded extents
  std::vector<ir::AxisExtent> Bounded;
  bool RunTimeDense = false;
  std::shared_ptr<Epilogue> Epi;
  kir::Buffer Buf;
  TensorPtr Const; ///< Set when inlined (splat) or known.
  ir::TensorType Type;
};

/// Where a kernel parameter's storage comes from.
struct ParamBinding {
  /// Dims: the values of the bounded dimensions (i64, one per
  /// ir::Graph::BoundedDims entry), read by the extents of bounded axes.
  enum Kind { Input, Output, Scratch, Dims } K;
  size_t Index = 0;       ///< node input/output index (fused operands: none)
  ir::TensorType Type;    ///< scratch buffers: their type
  const ir::Value *V = nullptr; ///< Input/Output: the graph value
  /// Input: a constant stored as nibble pairs along this axis
  /// (nibblePairBytes); -1: as it is.
  int NibbleAxis = -1;
};

/// Whether constant `t` can be stored as nibble pairs: int8 or int32 data
/// whose every byte has a zero low nibble (4-bit weights in 8-bit form,
/// ir::Value::FourBitAxis), of two elements or more.
bool holdsNibblePairs(const Tensor &t);
/// The bytes of `t` stored as nibble pairs along `axis`: the elements at
/// positions 2j and 2j+1 of the axis (the others equal) share the element
/// at position j of a tensor whose axis is half as long (rounded up),
/// byte by byte: element 2j's byte in the low nibble, 2j+1's in the high
/// one. Loads unpack with a shift and a mask: an int32 of four 8-bit
/// weights each way, the layout the byte-quad kernels read.
std::vector<uint8_t> nibblePairBytes(const Tensor &t, int axis);

class LowerCtx {
public:
  LowerCtx(const ir::Node &node, kir::KernelBuilder &b);

  const ir::Node &node() const { return N; }
  kir::KernelBuilder &b() { return B; }

  bool hasIn(size_t i) const { return N.hasInput(i); }
  bool hasOut(size_t i) const { return N.hasOutput(i); }
  /// Input i (required: a clear error if the node omits it).
  TensorRef in(size_t i);
  TensorRef out(size_t i);
  /// A temporary buffer for this kernel only (in the arena).
  TensorRef scratch(const std::string &name, DType type, Shape dims);

  /// Fuses `chain` after output `i`: elementwise nodes with a Scalar
  /// function, each consuming the previous one's output (the first consumes
  /// output i), all of output i's shape. Must be called before out(i).
  /// `inlined`: elementwise nodes of output i's shape whose values the
  /// chain reads as operands, computed at each element from their own
  /// operands instead of loaded (each value read by one node only).
  void fuseEpilogue(size_t i, std::vector<const ir::Node *> chain,
                    std::vector<const ir::Node *> inlined = {});
  /// True when the lowering loaded from an output that has an epilogue
  /// (the fusion was not valid for this lowering).
  bool epilogueRead() const;

  /// Any graph value as a kernel input (operands of fused nodes).
  TensorRef operand(const ir::Value *v);

  /// One binding per kernel parameter, in parameter order.
  const std::vector<ParamBinding> &bindings() const { return Bindings; }

  /// Bounded dimension `k` of `count` (an Index read from the kernel's dims
  /// parameter, added on first use).
  Expr dimValue(size_t k, size_t count);
  /// True once a lowering read a run-time extent.
  bool readsDims() const { return Dims != nullptr; }
  /// The values laid out dense at their run-time extents (lower-to-kernels;
  /// see OpSchema::DenseOperands); none by default.
  void setDenseValues(const std::set<const ir::Value *> *values) { DenseValues = values; }
  /// The constants to pass as nibble pairs (holdsNibblePairs, along their
  /// FourBitAxis); none by default.
  void setNibbleValues(const std::set<const ir::Value *> *values) { NibbleValues = values; }
  /// True once the lowering asked for the buffer of a nibble-pair operand
  /// (TensorRef::buffer): it must be lowered again without them.
  bool nibbleBufferRead() const { return NibbleRead; }

private:
  friend class TensorRef;
  const std::set<const ir::Value *> *NibbleValues = nullptr;
  bool NibbleRead = false;
  const std::set<const ir::Value *> *DenseValues = nullptr;
  /// `ref` with the bounded axes of `v`.
  TensorRef withExtents(TensorRef ref, const ir::Value *v);
  kir::Buffer Dims;
  const ir::Node &N;
  kir::KernelBuilder &B;
  std::map<size_t, TensorRef> Ins, Outs;
  std::map<const ir::Value *, TensorRef> Operands;
  std::map<size_t, std::shared_ptr<Epilogue>> Epilogues;
  std::vector<ParamBinding> Bindings;
};

// ---------------------------------------------------------------------------
// Shape rules
// ---------------------------------------------------------------------------

/// Multidirectional (numpy) broadcasting of `shapes`; an error names the node.
Shape broadcastShapes(const ir::Node &n, const std::vector<Shape> &shapes);
/// The element offset of the box of extents `out` at `start` in a
/// row-major tensor of shape `in` when the box is one contiguous block of
/// it (only 1s before its last axis shorter than `in`'s, whole axes after
/// it), else nothing; nothing for an empty box.
std::optional<int64_t> contiguousBox(const Shape &in, const std::vector<int64_t> &start,
                                     const Shape &out);
/// Normalizes a possibly negative axis into [0, rank); error if outside.
int64_t normalizeAxis(const ir::Node &n, int64_t axis, int64_t rank,
                      const char *what = "axis");

// ---------------------------------------------------------------------------
// Common inference functions
// ---------------------------------------------------------------------------

/// Output 0 = input 0's type.
void inferSameAsInput(ir::Node &n);
/// inferSameAsInput for float inputs / numeric inputs / floats and signed
/// integers (a clear Unsupported error otherwise).
void inferFloatUnary(ir::Node &n);
void inferNumericUnary(ir::Node &n);
void inferSignedOrFloatUnary(ir::Node &n);
/// Output 0: input 0's dtype, shape = broadcast of all present inputs.
void inferBroadcast(ir::Node &n);
/// Same, but the output dtype is Bool (comparisons, logical ops).
void inferBroadcastBool(ir::Node &n);
/// Checks that the present inputs among the first `count` (all by default)
/// share input 0's dtype. Products whose pack-weights operand may differ
/// (16-bit float weights packed as f32) check only their ONNX inputs.
void requireSameDTypes(const ir::Node &n, size_t count = SIZE_MAX);
/// Checks that type `t` of `what` ("input 1", "the output", ...) is one of
/// `allowed`; an Unsupported error lists them otherwise.
void requireType(const ir::Node &n, DType t, const std::string &what,
                 std::initializer_list<DType> allowed);
/// Checks input i's dtype is one of `allowed`.
void requireDType(const ir::Node &n, size_t i, std::initializer_list<DType> allowed);
void requireFloat(const ir::Node &n, size_t i);
void requireNumeric(const ir::Node &n, size_t i);

// ---------------------------------------------------------------------------
// Common lowerings
// ---------------------------------------------------------------------------

using ScalarFn = std::function<Expr(const std::vector<Expr> &args)>;

/// out0[i...] = fn(in0[bcast i...], in1[...], ...) over all present inputs;
/// the values are in compute type and the result is stored with conversion.
void lowerElementwise(LowerCtx &c, const ScalarFn &fn);
/// y[i] = fn(x[i]) for `x` and `y` of one shape, over the elements in use
/// when the kernel runs (flat where they lead the buffers).
void lowerMap(LowerCtx &c, const TensorRef &x, const TensorRef &y,
              const std::function<Expr(Expr)> &fn);

/// A reduction: for every output element, acc = Init; then for each input
/// element of the reduced axes acc = Combine(acc, Map(x)); the output is
/// Finish(acc, count). Values are in the accumulator type `AccType`.
struct Reduction {
  DType AccType;
  Expr Init;
  std::function<Expr(Expr acc, Expr x)> Combine;
  std::function<Expr(Expr x)> Map; ///< default: identity
  /// Default: identity. `count`: the elements reduced (an Index, constant
  /// unless a reduced axis follows a bounded dimension; see countAs).
  std::function<Expr(Expr acc, Expr count)> Finish;
};

/// The extent of an axis that follows bounded dimensions: a.Offset + the
/// sum of a.Coeffs[k] * dim(k), dim(k) the value of dimension k (an Index).
Expr boundedExtent(const AxisExtent &a, const std::function<Expr(size_t)> &dim);

/// `count` (an Index) as a value of type `t`: a constant when it is one.
Expr countAs(DType t, const Expr &count);

/// Reduces `x` over `axes` (normalized, any order) into `y`, whose shape is
/// x's with the reduced axes removed or kept as 1 (both are accepted).
void lowerReduction(LowerCtx &c, const TensorRef &x, const TensorRef &y,
                    const std::vector<int64_t> &axes, const Reduction &r);


/// Registers an elementwise op computing `fn` over its inputs (lowered with
/// lowerElementwise), with `infer` defaulting to inferSameAsInput.
void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    NodeScalarFn fn,
                    std::function<void(ir::Node &)> infer = inferSameAsInput,
                    const std::string &domain = "");
void addElementwise(OpRegistry &R, const std::string &name, int64_t since,
                    ScalarFn fn,
                    std::function<void(ir::Node &)> infer = inferSameAsInput,
                    const std::string &domain = "");
/// The two-input form: fn(a, b).
void addBinaryElementwise(OpRegistry &R, const std::string &name, int64_t since,
                          std::function<void(ir::Node &)> infer,
                          std::function<Expr(Expr, Expr)> fn);

} // namespace mlcc::ops
