//===- DType.h - Element types of tensors and kernel scalars --------------===//
//
// One enumeration for both levels of the compiler. The numeric values of the
// tensor types are ONNX's TensorProto.DataType codes, so the frontend converts
// by a range check. `Index` exists only in kernel IR: the signed integer type
// of loop variables and buffer offsets, which emitters map to the target's
// pointer width (64-bit in the interpreter).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mlcc {

enum class DType : uint8_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  C64 = 14,
  C128 = 15,
  BF16 = 16,
  F8E4M3FN = 17,
  F8E4M3FNUZ = 18,
  F8E5M2 = 19,
  F8E5M2FNUZ = 20,
  U4 = 21,
  I4 = 22,
  F4E2M1 = 23,
  F8E8M0 = 24,
  U2 = 25,
  I2 = 26,
  Index = 64, ///< Kernel IR only: loop counters and offsets.
};

/// Short name used in IR text and messages: f32, i64, bool, index, ...
const char *dtypeName(DType t);
/// The ONNX spelling (float, int64, bool, ...), for user-facing messages.
const char *dtypeOnnxName(DType t);
/// Parses a short name as printed by dtypeName().
std::optional<DType> parseDType(std::string_view name);
/// Maps an ONNX TensorProto.DataType code; nullopt for unknown codes.
std::optional<DType> dtypeFromOnnx(int64_t code);

/// Bytes of one element in memory (Bool is one byte, Index is 8 in constants).
/// Zero for types mlcc cannot store (strings) and for the sub-byte types,
/// whose elements share bytes: storageBytes() counts those.
unsigned dtypeSize(DType t);
/// The sub-byte types: int4, uint4, float4e2m1, int2, uint2. They are stored
/// packed as ONNX stores them, 8 / bits elements a byte, element i in the
/// bits from (i % (8 / bits)) * bits of byte i / (8 / bits), low bits first
/// (compiler/support/SubByte.h reads and writes them on the host). In kernel
/// IR they are storage types like float16: loads, stores and casts, values
/// computed in computeType (int8, uint8, f32), and
/// kir::expandSubByte (compiler/kernel/SubByte.cpp) expands their accesses into byte operations.
bool isSubByte(DType t);
/// Bytes that `n` elements of `t` take in memory: n * dtypeSize(t), or the
/// packed bytes (rounded up) of a sub-byte type.
int64_t storageBytes(DType t, int64_t n);

bool isFloat(DType t);       ///< f16, bf16, f32, f64 and the float8 types
/// The 8-bit float types: f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0.
bool isFloat8(DType t);
/// Floats narrower than f32 (f16, bf16, float8, float4e2m1): storage-only
/// types whose values are computed in f32 (kir::computeType) and never in
/// their own type.
bool isNarrowFloat(DType t);
/// Float types whose arithmetic is f32: f32 itself, f16 and bf16 (stored in
/// 16 bits, converted on load and rounded once on store). The float kernels'
/// plans (register tiles, Winograd, depthwise planes) take all three.
bool isF32Arithmetic(DType t);
bool isInteger(DType t);     ///< signed or unsigned integers and Index (not bool)
bool isSignedInt(DType t);   ///< i8..i64 and Index
bool isUnsignedInt(DType t); ///< u8..u64
/// Types that kernels can load, store and compute with.
bool isStorable(DType t);
/// Width in bits of an integer or float type (Bool: 1, Index: 64).
unsigned dtypeBits(DType t);

} // namespace mlcc
