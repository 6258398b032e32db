//===- Schedule.h - How a kernel's loops run on a target -------------------===//
//
// An op's lowering says what a kernel computes; a schedule says how its loops
// run on one target. Schedules are kernel-IR to kernel-IR rewrites (built on
// Mutator) that never change what is computed: the interpreter gives the same
// answer before and after.
//
//   vectorize   an innermost loop whose iterations are independent and whose
//               accesses are contiguous (or a few elements apart: strided
//               loads, interleaved stores) becomes a loop over vectors of
//               the target's width plus a scalar tail loop.
//   scalarize   the inverse: every vector store becomes a loop over lanes
//               (for the interpreter and the C emitter).
//   collapse    perfectly nested loops with contiguous accesses become one.
//   parallelize the outermost loops with independent iterations (outside
//               the lowering's own parallel loops) run on the caller's
//               workers.
//
// One rewrite per file: Vectorize.cpp, Scalarize.cpp, Collapse.cpp,
// Parallelize.cpp (MathExpansions.cpp holds the vector forms of exp and erf);
// Affine.cpp the index analyses they share; Schedule.cpp the order they run
// in for a CPU target.
//
// Register tiles and cache blocks are the plans' (compiler/schedule/
// CostModel.h chooses them, compiler/ir/KernelPlan.h holds them).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"
#include "compiler/target/TargetDesc.h"

#include <optional>

namespace mlcc::kir {

/// Loop `v`'s coefficient in the Index expression `e` (0 when e does not
/// depend on v), or nothing when e is not affine in v with a constant
/// coefficient.
std::optional<int64_t> strideOf(const Expr &e, const Var &v);

/// b - a when the two Index expressions differ by a constant (the same
/// sum of terms), else nothing.
std::optional<int64_t> constantDifference(const Expr &a, const Expr &b);

/// The largest element stride of a vector load or store that the emitters
/// read or write as a span (a few full vectors, shuffled); a larger stride
/// takes a group (see strideGroups), or else a gather/scatter.
constexpr int64_t kMaxStride = 4;

/// With `indices` the element indices of the first lanes of vector loads
/// (or stores) of one buffer whose lanes are `stride` elements apart: their
/// positions in groups, each the indices base + 0, ..., base + G - 1 with
/// G <= stride (positions in that order). A group of G >= 2 moves G
/// consecutive elements per lane, which the emitters do with G-element
/// runs and a transpose in registers (the stores of a tile whose columns
/// are the output's rows), or, when G == stride, with contiguous vectors
/// (the interleaved outputs of a strided window). An index with no such
/// neighbour (or a repeated one) is a group of its own.
std::vector<std::vector<size_t>> strideGroups(const std::vector<Expr> &indices, int64_t stride);

/// Whether the iterations of the loop `loop` (a For with constant bounds)
/// are independent: they store to distinct elements of parameters, at
/// indices affine in the loop variable, and read no element another
/// iteration stores.
bool iterationsIndependent(const StmtNode &loop);

/// Vectorizes every eligible innermost loop of `k` (see above).
Kernel vectorize(const Kernel &k, const TargetDesc &t);

/// Merges perfectly nested loops whose accesses are contiguous across them
/// into one loop (rows of a copy, the plane of a reduction), innermost
/// first: what is computed and its order are unchanged.
Kernel collapse(const Kernel &k);

/// Makes the outermost loops with independent iterations and enough work
/// that are outside any parallel loop and contain none parallel (split into
/// chunks of consecutive iterations).
Kernel parallelize(const Kernel &k);

/// Vector stores become loops over lanes; the result has no vector.
Stmt scalarize(const Stmt &s);
Kernel scalarize(const Kernel &k);

/// `k` with every float16 operation (halfArithmetic) computed in f32 and
/// rounded to f16, the same values (f32's 24 bits round a half-precision
/// add, subtract, multiply or divide correctly): for the emitters that
/// write C, which has no portable float16 arithmetic.
Kernel widenHalfArithmetic(const Kernel &k);
/// True when `s` holds a vector expression.
bool hasVectors(const Stmt &s);

/// Sub-byte types (compiler/kernel/SubByte.cpp). Lowerings treat int4,
/// uint4, float4e2m1, int2 and uint2 like float16: a
/// storage type that loads, stores and casts mention, with values computed in
/// kir::computeType (int8, uint8, f32). Buffers of these types are packed
/// (compiler/support/SubByte.h), so no target can load or store one element
/// of them. expandSubByte() rewrites a kernel, before the interpreter or an
/// emitter sees it, into byte operations any of them runs:
///
/// - a buffer of N such elements becomes a uint8 buffer of its packed bytes;
/// - a load reads the element's byte and extracts its bits; its value is
///   held in a *container*: int8 (int4, int2: sign-extended), uint8 (uint4,
///   uint2) or, for float4e2m1, the uint8 code itself;
/// - a cast from such a type converts the container (float4e2m1: its code
///   decoded into f32 with integer operations); a cast to one wraps an
///   integer to its low bits or rounds a float to the float4e2m1 code;
/// - a store reads the byte, replaces the element's bits and writes it back.
///
/// Stores of neighbouring elements share a byte, so a kernel that writes such
/// a buffer must run its iterations in order: the CPU schedule leaves these
/// kernels scalar and serial (their data are small: quantized weights are
/// constants, read only). Packed 4-bit weights in matrix products are read
/// as bytes by their own kernel (compiler/ops/MatMulNBits.cpp), vectorized.
///
/// Whether `k` has a buffer or a value of a sub-byte type.
bool hasSubByte(const Kernel &k);
/// `k` with every sub-byte buffer, load, store and cast in byte operations
/// (scalar: a kernel with vectors is scalarized first); `k` itself when it
/// has none.
Kernel expandSubByte(const Kernel &k);

/// Applies the target's schedule to every kernel of the program.
void scheduleProgram(Program &p, const TargetDesc &t);

} // namespace mlcc::kir
