// Packed 4- and 2-bit elements: the host codes (compiler/support/SubByte.h)
// against the format definitions, the packed layout of tensors against
// ONNX's (low bits first), and kernels whose packed loads, stores and casts
// are expanded into byte operations (kir::expandSubByte) against the
// host codes, for every type.
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/kernel/Schedule.h"
#include "compiler/support/SubByte.h"
#include "compiler/support/Tensor.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace mlcc;

namespace {

const DType SubByteTypes[] = {DType::I4, DType::U4, DType::F4E2M1, DType::I2, DType::U2};

/// float4e2m1 from its definition: 1 sign, 2 exponent (bias 1), 1 mantissa
/// bit; exponent 0 is subnormal.
double float4Reference(unsigned c) {
  int e = (int)(c >> 1) & 3, m = (int)c & 1;
  double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return (c & 8) ? -mag : mag;
}

} // namespace

TEST_CASE("float4e2m1 codes follow the format definition", "[subbyte]") {
  for (unsigned c = 0; c < 16; ++c) {
    INFO("code " << c);
    CHECK(float4e2m1Value((uint8_t)c) == float4Reference(c));
    CHECK(std::signbit(float4e2m1Value((uint8_t)c)) == ((c & 8) != 0));
    CHECK(float4e2m1Code(float4Reference(c)) == c); // every code round-trips
  }
  // Midpoints go to the even code (mantissa bit 0); beyond 6 saturates.
  CHECK(float4e2m1Code(0.25) == 0x0);
  CHECK(float4e2m1Code(0.2500001) == 0x1);
  CHECK(float4e2m1Code(0.75) == 0x2);
  CHECK(float4e2m1Code(1.25) == 0x2);
  CHECK(float4e2m1Code(1.75) == 0x4);
  CHECK(float4e2m1Code(2.5) == 0x4);
  CHECK(float4e2m1Code(3.5) == 0x6);
  CHECK(float4e2m1Code(5.0) == 0x6);
  CHECK(float4e2m1Code(5.0001) == 0x7);
  CHECK(float4e2m1Code(-3.5) == 0xE);
  CHECK(float4e2m1Code(1e9) == 0x7);
  CHECK(float4e2m1Code(-std::numeric_limits<double>::infinity()) == 0xF);
  CHECK(float4e2m1Code(-0.0) == 0x8);
  CHECK(float4e2m1Code(std::nan("")) == 0x8);
}

TEST_CASE("integer sub-byte codes wrap to their low bits", "[subbyte]") {
  CHECK(subByteFromInt(DType::I4, -9) == 0x7);
  CHECK(subByteValue(DType::I4, subByteFromInt(DType::I4, -9)) == 7);
  CHECK(subByteValue(DType::I4, subByteFromInt(DType::I4, 8)) == -8);
  CHECK(subByteValue(DType::I4, subByteFromInt(DType::I4, 15)) == -1);
  CHECK(subByteValue(DType::U4, subByteFromInt(DType::U4, -1)) == 15);
  CHECK(subByteValue(DType::I2, subByteFromInt(DType::I2, 2)) == -2);
  CHECK(subByteValue(DType::U2, subByteFromInt(DType::U2, -3)) == 1);
  CHECK(subByteValue(DType::I4, subByteFromDouble(DType::I4, -2.7)) == -2);
}

TEST_CASE("sub-byte tensors are packed as ONNX packs them", "[subbyte]") {
  // The elements of the DequantizeLinear int4 case: 0, 1, 7, -4, -8.
  Tensor t = Tensor::fromInts(DType::I4, {5}, {0, 1, 7, -4, -8});
  CHECK(t.bytes() == std::vector<uint8_t>{0x10, 0xC7, 0x08});
  CHECK(t.toInts() == std::vector<int64_t>{0, 1, 7, -4, -8});
  // uint2: four a byte, the first in the lowest bits.
  Tensor u = Tensor::fromInts(DType::U2, {7}, {1, 2, 3, 0, 1, 2, 3});
  CHECK(u.bytes() == std::vector<uint8_t>{0x39, 0x39});
  CHECK(storageBytes(DType::U2, 7) == 2);
  CHECK(storageBytes(DType::F4E2M1, 15) == 8);
  // A splat expands to packed bytes.
  Tensor s = Tensor::splat(DType::I4, {3}, {0xE});
  CHECK(s.denseBytes() == std::vector<uint8_t>{0xEE, 0x0E});
  CHECK(s.intAt(2) == -2);
  CHECK(Tensor(DType::I4, {2, 2}, {0x21, 0x43}).allElementsEqual() == false);
}

TEST_CASE("packed loads, stores and casts expand to byte operations", "[subbyte]") {
  using namespace mlcc::kir;
  // Inputs that cross every rounding edge of float4e2m1 and wrap every
  // integer type; an odd count leaves the last byte partly unused.
  const std::vector<float> xs = {-9, -8, -7, -3.5f, -2.5f, -2, -1.75f, -1, -0.75f, -0.25f,
                                 -0.0f, 0, 0.25f, 0.3f, 0.75f, 1, 1.25f, 1.3f, 1.75f, 2.5f,
                                 3, 3.5f, 4, 5, 5.5f, 6, 7, 8, 9, 15, 16, 17, 100, -100,
                                 std::numeric_limits<float>::infinity()};
  const int64_t n = (int64_t)xs.size();
  for (DType t : SubByteTypes) {
    INFO(dtypeName(t));
    // q = T(x); y = f32(q): a cast to the packed type, a store, a load and a
    // cast back, and z = the packed input copied through int8 or f32.
    KernelBuilder b("packed");
    Buffer x = b.param("x", DType::F32, n), q = b.param("q", t, n),
           y = b.param("y", DType::F32, n), in = b.param("in", t, n),
           z = b.param("z", t, n);
    b.loop("i", n, [&](Expr i) { b.store(q, i, cast(t, load(x, i))); });
    b.loop("i", n, [&](Expr i) {
      b.store(y, i, cast(DType::F32, load(q, i)));
      b.store(z, i, cast(t, cast(computeType(t), load(in, i))));
    });
    Kernel k = b.finish();
    CHECK(hasSubByte(k));
    Kernel e = expandSubByte(k);
    CHECK_FALSE(hasSubByte(e));
    CHECK(e.Params[1]->Type == DType::U8);
    CHECK(e.Params[1]->Size == storageBytes(t, n));

    const int64_t bytes = storageBytes(t, n);
    std::vector<uint8_t> qb((size_t)bytes, 0xFF), inb((size_t)bytes), zb((size_t)bytes, 0xFF);
    for (int64_t i = 0; i < bytes; ++i)
      inb[(size_t)i] = (uint8_t)(37 * i + 11);
    std::vector<float> ys((size_t)n);
    interpret(k, {(void *)xs.data(), qb.data(), ys.data(), inb.data(), zb.data()});
    for (int64_t i = 0; i < n; ++i) {
      INFO("x = " << xs[(size_t)i]);
      uint8_t want = subByteFromDouble(t, xs[(size_t)i]);
      CHECK(subByteCode(qb.data(), t, i) == want);
      CHECK(ys[(size_t)i] == (float)subByteValue(t, want));
      CHECK(subByteCode(zb.data(), t, i) == subByteCode(inb.data(), t, i));
    }
    // The unused bits of the last byte are left as they were.
    int64_t per = subBytePerByte(t);
    if (n % per) {
      uint8_t unused = (uint8_t)(0xFF << ((n % per) * dtypeBits(t)));
      CHECK((qb.back() & unused) == unused);
    }
  }
}
