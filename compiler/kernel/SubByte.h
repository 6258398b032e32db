//===- SubByte.h - 4- and 2-bit elements as byte operations ---------------===//
//
// Lowerings treat int4, uint4, float4e2m1, int2 and uint2 like float16: a
// storage type that loads, stores and casts mention, with values computed in
// kir::computeType (int8, uint8, f32). Buffers of these types are packed
// (compiler/support/SubByte.h), so no target can load or store one element
// of them. expandSubByte() rewrites a kernel, before the interpreter or an
// emitter sees it, into byte operations any of them runs:
//
// - a buffer of N such elements becomes a uint8 buffer of its packed bytes;
// - a load reads the element's byte and extracts its bits; its value is
//   held in a *container*: int8 (int4, int2: sign-extended), uint8 (uint4,
//   uint2) or, for float4e2m1, the uint8 code itself;
// - a cast from such a type converts the container (float4e2m1: its code
//   decoded into f32 with integer operations); a cast to one wraps an
//   integer to its low bits or rounds a float to the float4e2m1 code;
// - a store reads the byte, replaces the element's bits and writes it back.
//
// Stores of neighbouring elements share a byte, so a kernel that writes such
// a buffer must run its iterations in order: the CPU schedule leaves these
// kernels scalar and serial (their data are small: quantized weights are
// constants, read only). Loads of packed weights in vectorized matrix
// products are a later, separate form.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/KernelIR.h"

namespace mlcc::kir {

/// Whether `k` has a buffer or a value of a sub-byte type.
bool hasSubByte(const Kernel &k);

/// `k` with every sub-byte buffer, load, store and cast in byte operations;
/// `k` itself when it has none. Its sub-byte accesses must be scalars
/// (callers scalarize a kernel with vectors first).
Kernel expandSubByte(const Kernel &k);

} // namespace mlcc::kir
