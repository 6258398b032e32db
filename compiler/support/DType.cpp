#include "compiler/support/DType.h"

#include <iterator>

namespace mlcc {

namespace {
struct DTypeRow {
  DType type;
  const char *name;
  const char *onnxName;
  unsigned size;
  unsigned bits;
};

constexpr DTypeRow Rows[] = {
    {DType::Undefined, "undef", "undefined", 0, 0},
    {DType::F32, "f32", "float", 4, 32},
    {DType::U8, "u8", "uint8", 1, 8},
    {DType::I8, "i8", "int8", 1, 8},
    {DType::U16, "u16", "uint16", 2, 16},
    {DType::I16, "i16", "int16", 2, 16},
    {DType::I32, "i32", "int32", 4, 32},
    {DType::I64, "i64", "int64", 8, 64},
    {DType::String, "string", "string", 0, 0},
    {DType::Bool, "bool", "bool", 1, 1},
    {DType::F16, "f16", "float16", 2, 16},
    {DType::F64, "f64", "double", 8, 64},
    {DType::U32, "u32", "uint32", 4, 32},
    {DType::U64, "u64", "uint64", 8, 64},
    {DType::C64, "c64", "complex64", 0, 64},
    {DType::C128, "c128", "complex128", 0, 128},
    {DType::BF16, "bf16", "bfloat16", 2, 16},
    {DType::F8E4M3FN, "f8e4m3fn", "float8e4m3fn", 1, 8},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", "float8e4m3fnuz", 1, 8},
    {DType::F8E5M2, "f8e5m2", "float8e5m2", 1, 8},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", "float8e5m2fnuz", 1, 8},
    {DType::U4, "u4", "uint4", 0, 4},
    {DType::I4, "i4", "int4", 0, 4},
    {DType::F4E2M1, "f4e2m1", "float4e2m1", 0, 4},
    {DType::F8E8M0, "f8e8m0", "float8e8m0", 1, 8},
    {DType::U2, "u2", "uint2", 0, 2},
    {DType::I2, "i2", "int2", 0, 2},
    {DType::Index, "index", "index", 8, 64},
};

// Rows[i] is the type with code i (the ONNX codes 0..26), then Index: a
// direct lookup, as the interpreter asks for sizes per element.
constexpr bool rowsByCode() {
  for (unsigned i = 0; i + 1 < std::size(Rows); ++i)
    if ((unsigned)Rows[i].type != i)
      return false;
  return Rows[std::size(Rows) - 1].type == DType::Index;
}
static_assert(rowsByCode());

const DTypeRow *row(DType t) {
  unsigned i = (unsigned)t;
  if (i + 1 < std::size(Rows))
    return &Rows[i];
  return t == DType::Index ? &Rows[std::size(Rows) - 1] : nullptr;
}
} // namespace

const char *dtypeName(DType t) {
  const DTypeRow *r = row(t);
  return r ? r->name : "?";
}

const char *dtypeOnnxName(DType t) {
  const DTypeRow *r = row(t);
  return r ? r->onnxName : "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto &r : Rows)
    if (name == r.name)
      return r.type;
  return std::nullopt;
}

std::optional<DType> dtypeFromOnnx(int64_t code) {
  if (code >= 1 && code <= 26)
    return static_cast<DType>(code);
  return std::nullopt;
}

unsigned dtypeSize(DType t) {
  const DTypeRow *r = row(t);
  return r ? r->size : 0;
}

unsigned dtypeBits(DType t) {
  const DTypeRow *r = row(t);
  return r ? r->bits : 0;
}

bool isFloat8(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ ||
         t == DType::F8E5M2 || t == DType::F8E5M2FNUZ || t == DType::F8E8M0;
}

bool isNarrowFloat(DType t) {
  return t == DType::F16 || t == DType::BF16 || isFloat8(t) || t == DType::F4E2M1;
}

bool isSubByte(DType t) {
  return t == DType::I4 || t == DType::U4 || t == DType::F4E2M1 ||
         t == DType::I2 || t == DType::U2;
}

int64_t storageBytes(DType t, int64_t n) {
  if (isSubByte(t)) {
    int64_t per = 8 / (int64_t)dtypeBits(t);
    return (n + per - 1) / per;
  }
  return n * (int64_t)dtypeSize(t);
}

bool isF32Arithmetic(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || isNarrowFloat(t);
}

bool isSignedInt(DType t) {
  return t == DType::I4 || t == DType::I2 || t == DType::I8 || t == DType::I16 || t == DType::I32 ||
         t == DType::I64 || t == DType::Index;
}

bool isUnsignedInt(DType t) {
  return t == DType::U4 || t == DType::U2 || t == DType::U8 || t == DType::U16 || t == DType::U32 ||
         t == DType::U64;
}

bool isInteger(DType t) { return isSignedInt(t) || isUnsignedInt(t); }

bool isStorable(DType t) {
  return isFloat(t) || isInteger(t) || t == DType::Bool;
}

} // namespace mlcc
