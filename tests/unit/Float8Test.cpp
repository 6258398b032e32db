// Host float8 conversions (compiler/support/Float8.h) against values derived
// from the format definitions in the ONNX spec, exhaustively over all codes.
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/support/Float8.h"
#include "compiler/support/Tensor.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace mlcc;

namespace {

struct Spec {
  DType T;
  int ManBits, Bias;
  bool Fnuz, HasInf;
  double Max;
  const char *Name;
};

const Spec Specs[] = {
    {DType::F8E4M3FN, 3, 7, false, false, 448.0, "E4M3FN"},
    {DType::F8E4M3FNUZ, 3, 8, true, false, 240.0, "E4M3FNUZ"},
    {DType::F8E5M2, 2, 15, false, true, 57344.0, "E5M2"},
    {DType::F8E5M2FNUZ, 2, 16, true, false, 57344.0, "E5M2FNUZ"},
};

bool isNaNCode(const Spec &s, unsigned c) {
  if (s.Fnuz)
    return c == 0x80;
  if (s.HasInf)
    return (c & 0x7c) == 0x7c && (c & 0x03) != 0;
  return (c & 0x7f) == 0x7f;
}

bool isInfCode(const Spec &s, unsigned c) { return s.HasInf && (c & 0x7f) == 0x7c; }

/// The value of a code straight from the definition, in double.
double reference(const Spec &s, unsigned c) {
  int expBits = 7 - s.ManBits;
  int e = (int)(c >> s.ManBits) & ((1 << expBits) - 1);
  int m = (int)c & ((1 << s.ManBits) - 1);
  double mag = e == 0 ? std::ldexp((double)m, 1 - s.Bias - s.ManBits)
                      : std::ldexp(1.0 + std::ldexp((double)m, -s.ManBits), e - s.Bias);
  return (c & 0x80) ? -mag : mag;
}

uint32_t bits(float f) { return floatBits(f); }

} // namespace

TEST_CASE("float8 decoding matches the format definitions", "[float8]") {
  for (const Spec &s : Specs) {
    INFO(s.Name);
    for (unsigned c = 0; c < 256; ++c) {
      INFO("code " << c);
      float v = float8ToFloat(s.T, (uint8_t)c);
      if (isNaNCode(s, c)) {
        CHECK(std::isnan(v));
      } else if (isInfCode(s, c)) {
        CHECK(std::isinf(v));
        CHECK((v < 0) == ((c & 0x80) != 0));
      } else {
        CHECK((double)v == reference(s, c));
        CHECK(std::signbit(v) == ((c & 0x80) != 0));
      }
    }
    CHECK(float8MaxValue(s.T) == s.Max);
  }
  // A few spelled-out values.
  CHECK(float8ToFloat(DType::F8E4M3FN, 0x38) == 1.0f);
  CHECK(float8ToFloat(DType::F8E4M3FN, 0x7e) == 448.0f);
  CHECK(float8ToFloat(DType::F8E4M3FN, 0x01) == std::ldexp(1.0f, -9));
  CHECK(float8ToFloat(DType::F8E4M3FN, 0xc0) == -2.0f);
  CHECK(float8ToFloat(DType::F8E4M3FNUZ, 0x40) == 1.0f);
  CHECK(float8ToFloat(DType::F8E4M3FNUZ, 0x7f) == 240.0f);
  CHECK(float8ToFloat(DType::F8E4M3FNUZ, 0x01) == std::ldexp(1.0f, -10));
  CHECK(float8ToFloat(DType::F8E5M2, 0x3c) == 1.0f);
  CHECK(float8ToFloat(DType::F8E5M2, 0x7b) == 57344.0f);
  CHECK(float8ToFloat(DType::F8E5M2, 0x01) == std::ldexp(1.0f, -16));
  CHECK(float8ToFloat(DType::F8E5M2, 0x7c) == std::numeric_limits<float>::infinity());
  CHECK(float8ToFloat(DType::F8E5M2, 0xfc) == -std::numeric_limits<float>::infinity());
  CHECK(float8ToFloat(DType::F8E5M2FNUZ, 0x40) == 1.0f);
  CHECK(float8ToFloat(DType::F8E5M2FNUZ, 0x7f) == 57344.0f);
  CHECK(float8ToFloat(DType::F8E5M2FNUZ, 0x01) == std::ldexp(1.0f, -17));
}

TEST_CASE("float8 decode then encode round-trips every code", "[float8]") {
  for (const Spec &s : Specs) {
    INFO(s.Name);
    unsigned nanCode = s.Fnuz ? 0x80 : s.HasInf ? 0x7e : 0x7f;
    for (unsigned c = 0; c < 256; ++c) {
      INFO("code " << c);
      float v = float8ToFloat(s.T, (uint8_t)c);
      uint8_t plain = floatToFloat8(s.T, v), sat = floatToFloat8Saturate(s.T, v);
      if (isNaNCode(s, c)) {
        // Any NaN encodes as the canonical NaN, keeping the sign if NaN has one.
        CHECK(plain == (s.Fnuz ? nanCode : (c & 0x80) | nanCode));
        CHECK(sat == plain);
      } else if (isInfCode(s, c)) {
        CHECK(plain == c); // the plain conversion keeps infinities
        CHECK(sat == ((c & 0x80) | 0x7b)); // saturation clamps them to +-max
      } else {
        CHECK(plain == c);
        CHECK(sat == c);
      }
    }
  }
}

TEST_CASE("float8 encoding rounds to nearest even at every midpoint", "[float8]") {
  for (const Spec &s : Specs) {
    INFO(s.Name);
    // Consecutive finite non-negative codes 0, 1, ..., MaxCode are increasing.
    unsigned maxCode = float8Format(s.T).MaxCode;
    for (unsigned c = 0; c < maxCode; ++c) {
      INFO("between codes " << c << " and " << c + 1);
      double lo = reference(s, c), hi = reference(s, c + 1);
      REQUIRE(lo < hi);
      float mid = (float)((lo + hi) / 2); // exact in f32
      REQUIRE((double)mid == (lo + hi) / 2);
      unsigned even = (c & 1) ? c + 1 : c;
      CHECK(floatToFloat8(s.T, mid) == even);
      CHECK(floatToFloat8(s.T, std::nextafter(mid, 0.0f)) == c);
      CHECK(floatToFloat8(s.T, std::nextafter(mid, 1e9f)) == c + 1);
      // Negative values mirror positive ones, except that -0 does not exist
      // in the FNUZ formats.
      unsigned negEven = s.Fnuz && even == 0 ? 0 : (0x80 | even);
      CHECK(floatToFloat8(s.T, -mid) == negEven);
    }
  }
}

TEST_CASE("float8 overflow, saturation and special values", "[float8]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // E4M3FN: max 448; 464 is the midpoint to the (nonexistent) 480 and rounds
  // to the even 448; beyond it is NaN without saturation (no infinity).
  DType t = DType::F8E4M3FN;
  CHECK(floatToFloat8(t, 464.0f) == 0x7e);
  CHECK(floatToFloat8(t, 464.01f) == 0x7f);
  CHECK(floatToFloat8(t, 1e6f) == 0x7f);
  CHECK(floatToFloat8(t, -1e6f) == 0xff);
  CHECK(floatToFloat8(t, inf) == 0x7f);
  CHECK(floatToFloat8(t, -inf) == 0xff);
  CHECK(floatToFloat8Saturate(t, 1e6f) == 0x7e);
  CHECK(floatToFloat8Saturate(t, -1e6f) == 0xfe);
  CHECK(floatToFloat8Saturate(t, inf) == 0x7e);
  CHECK(floatToFloat8Saturate(t, -inf) == 0xfe);
  CHECK(floatToFloat8(t, nan) == 0x7f);
  CHECK(floatToFloat8(t, -nan) == 0xff);
  CHECK(floatToFloat8Saturate(t, nan) == 0x7f);
  CHECK(floatToFloat8(t, -0.0f) == 0x80);
  CHECK(floatToFloat8(t, -1e-7f) == 0x80);
  CHECK(floatToFloat8(t, std::ldexp(1.0f, -10)) == 0x00); // half the smallest: tie to 0
  CHECK(floatToFloat8(t, std::ldexp(1.5f, -10)) == 0x01);
  CHECK(floatToFloat8(t, 0.47892547f) == 0x2f); // 0.46875 (0.5 is 0x30)

  // E4M3FNUZ: max 240; 248 ties between 240 (odd) and 256 (even, too big).
  t = DType::F8E4M3FNUZ;
  CHECK(floatToFloat8(t, 247.9f) == 0x7f);
  CHECK(floatToFloat8(t, 248.0f) == 0x80);
  CHECK(floatToFloat8(t, inf) == 0x80);
  CHECK(floatToFloat8(t, -inf) == 0x80);
  CHECK(floatToFloat8Saturate(t, inf) == 0x7f);
  CHECK(floatToFloat8Saturate(t, -inf) == 0xff);
  CHECK(floatToFloat8Saturate(t, -1e6f) == 0xff);
  CHECK(floatToFloat8(t, nan) == 0x80);
  CHECK(floatToFloat8(t, -nan) == 0x80);
  CHECK(floatToFloat8(t, -0.0f) == 0x00);
  CHECK(floatToFloat8(t, -1e-7f) == 0x00);

  // E5M2: max 57344; 61440 ties between 57344 (odd) and 65536 = infinity.
  t = DType::F8E5M2;
  CHECK(floatToFloat8(t, 61439.0f) == 0x7b);
  CHECK(floatToFloat8(t, 61440.0f) == 0x7c);
  CHECK(floatToFloat8(t, 1e6f) == 0x7c);
  CHECK(floatToFloat8(t, -1e6f) == 0xfc);
  CHECK(floatToFloat8(t, inf) == 0x7c);
  CHECK(floatToFloat8(t, -inf) == 0xfc);
  CHECK(floatToFloat8Saturate(t, 1e6f) == 0x7b);
  CHECK(floatToFloat8Saturate(t, -inf) == 0xfb);
  CHECK(floatToFloat8(t, nan) == 0x7e); // quiet NaN, as f16's 0x7e00
  CHECK(floatToFloat8(t, -nan) == 0xfe);
  CHECK(floatToFloat8(t, -0.0f) == 0x80);

  // E5M2FNUZ: max 57344; everything beyond (and infinity, NaN) is 0x80.
  t = DType::F8E5M2FNUZ;
  CHECK(floatToFloat8(t, 61440.0f) == 0x80);
  CHECK(floatToFloat8(t, -inf) == 0x80);
  CHECK(floatToFloat8Saturate(t, inf) == 0x7f);
  CHECK(floatToFloat8Saturate(t, -1e6f) == 0xff);
  CHECK(floatToFloat8(t, -0.0f) == 0x00);
  CHECK(floatToFloat8(t, std::ldexp(1.0f, -18)) == 0x00); // tie to even 0
  CHECK(floatToFloat8(t, std::ldexp(1.0f, -17)) == 0x01);
}

TEST_CASE("float8e8m0 conversions", "[float8]") {
  DType t = DType::F8E8M0;
  const float inf = std::numeric_limits<float>::infinity();
  for (unsigned c = 0; c < 256; ++c) {
    INFO("code " << c);
    float v = float8ToFloat(t, (uint8_t)c);
    if (c == 255) {
      CHECK(std::isnan(v));
      CHECK(floatToFloat8(t, v) == 255);
    } else {
      CHECK((double)v == std::ldexp(1.0, (int)c - 127));
      CHECK(floatToFloat8(t, v) == c);
      // Values between two powers of two round up.
      if (c < 254)
        CHECK(floatToFloat8(t, std::nextafter(v, inf)) == c + 1);
    }
  }
  CHECK(floatToFloat8(t, 0.0f) == 0);     // saturates to 2^-127
  CHECK(floatToFloat8(t, 0.124f) == 124); // 0.125
  CHECK(floatToFloat8(t, 1.1f) == 128);   // 2
  CHECK(floatToFloat8(t, 2.0f) == 128);
  CHECK(floatToFloat8(t, inf) == 254);
  CHECK(floatToFloat8(t, std::ldexp(1.5f, 127)) == 254);
  CHECK(floatToFloat8(t, std::numeric_limits<float>::quiet_NaN()) == 255);
  CHECK(floatToFloat8(t, std::ldexp(1.5f, -127)) == 1); // f32 subnormal
  CHECK(floatToFloat8(t, std::ldexp(1.0f, -130)) == 0);
  CHECK(float8MaxValue(t) == std::ldexp(1.0f, 127));
}

TEST_CASE("float8 tensors and interpreted kernels use the host conversions",
          "[float8]") {
  using namespace mlcc::kir;
  for (const Spec &s : Specs) {
    INFO(s.Name);
    Tensor t(s.T, {3});
    t.setDouble(0, 1.0);
    t.setDouble(1, -1e9);
    t.setDouble(2, 0.3);
    CHECK(dtypeSize(s.T) == 1);
    CHECK(t.doubleAt(0) == 1.0);
    CHECK(std::isinf(t.doubleAt(1)) == s.HasInf);
    CHECK(std::isnan(t.doubleAt(1)) == !s.HasInf);
    CHECK(t.doubleAt(2) == float8ToFloat(s.T, floatToFloat8(s.T, 0.3f)));

    // y = x loaded as f32 (kernel IR's compute type for float8) and stored
    // back: exact for every code, and the interpreter agrees with the host.
    KernelBuilder b("copy");
    Buffer x = b.param("x", s.T, 256), f = b.param("f", DType::F32, 256),
           y = b.param("y", s.T, 256);
    b.loop("i", 256, [&](Expr i) {
      Expr v = cast(DType::F32, load(x, i));
      b.store(f, i, v);
      b.store(y, i, cast(s.T, v));
    });
    Kernel k = b.finish();
    std::vector<uint8_t> in(256), out(256);
    std::vector<float> wide(256);
    for (unsigned c = 0; c < 256; ++c)
      in[c] = (uint8_t)c;
    interpret(k, {in.data(), wide.data(), out.data()});
    for (unsigned c = 0; c < 256; ++c) {
      INFO("code " << c);
      CHECK(bits(wide[c]) == bits(float8ToFloat(s.T, (uint8_t)c)));
      CHECK(out[c] == floatToFloat8(s.T, float8ToFloat(s.T, (uint8_t)c)));
      if (!isNaNCode(s, c))
        CHECK(out[c] == c);
    }
  }
}
