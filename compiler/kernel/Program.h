//===- Program.h - A compiled model in kernel IR --------------------------===//
//
// Everything an emitter needs to write the library: the kernels, the constant
// data, the sequence of kernel calls with the storage bound to each parameter,
// the model's inputs and outputs and the arena layout. It holds no graph
// concepts (no op names), only kernels and storage.
//
// Storage is one of: the caller's input or output buffer, a region of the
// caller-provided arena, or constant data compiled into the library. Arena
// regions are "logical buffers" whose byte offsets the memory planner assigns
// from their lifetimes (the first and last call that touches them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"
#include "compiler/support/Tensor.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace mlcc::kir {

/// Dims: the values of the run-time dimensions (Program::Dims, one int64
/// each, in order), which the caller gives with the inputs.
enum class StorageKind : uint8_t { Input, Output, Arena, Constant, Dims };

struct Storage {
  StorageKind Kind = StorageKind::Arena;
  /// Input/output index, arena logical-buffer id, or constant index.
  size_t Index = 0;
  bool operator==(const Storage &o) const {
    return Kind == o.Kind && Index == o.Index;
  }
};

/// A graph node a call computes (for reports): its name and op type.
struct NodeRef {
  std::string Name, Op;
};

/// A graph value a call writes, for `mlcc check`: which parameter holds it,
/// its ONNX name, type and shape (dense, row-major), and for 8-bit data the
/// real value it stands for.
struct CallOutput {
  size_t Arg = 0; ///< Index into Call::Args.
  std::string Value;
  DType Type = DType::F32;
  Shape Dims;
  /// Quantized data: real = Scale * (q - ZeroPoint); Scale 0 when not.
  double Scale = 0;
  int64_t ZeroPoint = 0;
  /// The float tensor this one quantizes (its QuantizeLinear's input), when
  /// it is one; empty otherwise.
  std::string QuantizedFrom;
};

struct Call {
  size_t KernelIndex = 0;
  std::vector<Storage> Args; ///< One per kernel parameter.
  std::string Label;         ///< What it computes, for comments ("node 'x' (Conv)").
  std::vector<NodeRef> Nodes; ///< The fused nodes, root first (empty for copies).
  std::vector<CallOutput> Produces; ///< The graph values it writes.
  /// The plan its kernel was lowered by (ir::KernelPlan::str() of the
  /// root node; empty: the op's own loop nest).
  std::string Plan;
  /// The call runs only when this boolean scalar (its first byte) is
  /// non-zero: a node of an If's branch or of a Loop's iteration whose
  /// condition is known only at run time (ir::Node::Guard). Unset: always.
  /// A skipped call leaves what it writes as it was.
  std::optional<Storage> Guard;
};

struct ConstantData {
  std::string Name; ///< C identifier (unique in the program).
  DType Type = DType::F32;
  int64_t Count = 0; ///< Elements.
  std::vector<uint8_t> Bytes;
};

struct ArenaBuffer {
  std::string Name;   ///< For comments and reports.
  int64_t Bytes = 0;
  int64_t Offset = -1; ///< Assigned by planMemory.
  /// A part of another buffer (index; -1: none), at AliasOffset bytes from
  /// its start: a Concat's input written in place into its output. It is
  /// placed with that buffer, which lives as long as all its parts.
  int64_t AliasOf = -1;
  int64_t AliasOffset = 0;
  /// The buffer whose bytes this one may take in the call that writes it
  /// first (planMemory: an output laid over an input that dies there), or
  /// -1: the two share bytes while both are live in that call.
  int64_t LaidOver = -1;
};

struct IoTensor {
  std::string Name;  ///< ONNX name
  std::string CName; ///< Sanitized C identifier (struct field)
  DType Type = DType::F32;
  Shape Dims;
  /// Quantized data (--quantize-io): real = Scale * (q - ZeroPoint); Scale
  /// 0 when the tensor is not quantized.
  double Scale = 0;
  int64_t ZeroPoint = 0;
  /// The axes whose extents follow run-time dimensions (Program::Dims);
  /// Dims holds their extents at every dimension's Max, and the caller's
  /// data is dense at the extents the run gives.
  std::vector<AxisExtent> Bounded;
  /// An input of one integer element whose value must lie in [first,
  /// second] (--input-range): NAME_run returns MLCC_ERR_DIM_RANGE, writing
  /// nothing, for another.
  std::optional<std::pair<int64_t, int64_t>> Range;
  /// --kv-cache: the output whose buffer this input is (the caller passes
  /// the same pointer; NAME_run returns MLCC_ERR_CACHE_BUFFER otherwise),
  /// and for that output the input: the output is kept in its layout at
  /// MAX (every bounded axis at its largest extent), not dense.
  std::optional<size_t> CachePair;
  int64_t bytes() const { return storageBytes(Type, numElements(Dims)); }
};

/// A dimension known only when the library runs (--dim NAME=MIN..MAX): an
/// int64_t member of the inputs struct, checked against [Min, Max].
struct RunTimeDim {
  std::string Name;  ///< as the model names it
  std::string CName; ///< the C identifier of its member
  int64_t Min = 0, Max = 0;
};

struct Program {
  std::string Name; ///< Model prefix: a C identifier.
  std::vector<Kernel> Kernels;
  std::vector<ConstantData> Constants;
  std::vector<ArenaBuffer> ArenaBuffers;
  std::vector<Call> Calls;
  std::vector<IoTensor> Inputs;
  std::vector<IoTensor> Outputs;
  /// Dimensions known only at run time; kernels that read them take a Dims
  /// parameter. Empty for a model of fixed shapes.
  std::vector<RunTimeDim> Dims;
  int64_t ArenaSize = 0;
  int64_t ArenaAlign = 64;

  int64_t weightBytes() const;
};

/// Where each constant lies in one weights buffer when every constant
/// starts at a multiple of `align` bytes (the CUDA target's device
/// weights); `total` receives the buffer's size.
std::vector<int64_t> weightsLayout(const Program &p, int64_t align, int64_t &total);

/// Bytes an arena buffer of `bytes` occupies: at least one, rounded up to
/// the arena's alignment (so that the next buffer starts aligned).
inline int64_t alignedArenaBytes(int64_t bytes, int64_t align) {
  return (std::max<int64_t>(bytes, 1) + align - 1) / align * align;
}

/// The first and last call that touches each arena buffer (-1, -1 when no
/// call does), indexed like Program::ArenaBuffers. A buffer with parts
/// (ArenaBuffer::AliasOf) lives from the first to the last call that touches
/// it or any of its parts.
struct Lifetime {
  int64_t First = -1, Last = -1;
};
std::vector<Lifetime> bufferLifetimes(const Program &p);

/// The arena buffer that buffer `i` is a part of, at the top (itself when it
/// is none's: ArenaBuffer::AliasOf).
size_t aliasRoot(const Program &p, size_t i);

/// Whether planMemory lays outputs over dying inputs (kir::AccessOrder;
/// the pipeline does on bare-metal targets, where RAM is what is short):
/// not at all; where any order of a Parallel loop's iterations allows it;
/// or where their serial order does (the kernel then Kernel::InOrder:
/// targets that run one thread).
enum class InPlace { Off, Unordered, Ordered };

/// Assigns arena offsets (aligned to ArenaAlign) so that buffers whose
/// lifetimes overlap never share bytes, except an output laid over an
/// input that dies with its call where the kernel's access order allows it
/// (`inPlace`; the kernel's params are then marked Overlapping), and sets
/// ArenaSize. Greedy: each buffer in turn at the lowest offset that fits,
/// in several orders (largest first, earliest first, longest-lived first,
/// largest bytes x lifetime first), keeping the smallest arena (the first
/// order on ties), with and without the outputs laid in place. A part of a
/// buffer gets that buffer's offset plus its own.
void planMemory(Program &p, InPlace inPlace = InPlace::Off);

/// Human-readable listing of a program (--emit kernels).
std::string printProgram(const Program &p);

} // namespace mlcc::kir
