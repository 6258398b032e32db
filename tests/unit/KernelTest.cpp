#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/ops/Requantization.h"
#include "compiler/support/Error.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using namespace mlcc::kir;

TEST_CASE("interpreter runs a relu kernel", "[kernel]") {
  KernelBuilder b("relu");
  Buffer x = b.param("x", DType::F32, 4), y = b.param("y", DType::F32, 4);
  b.loop("i", 4, [&](Expr i) { b.store(y, i, max(load(x, i), 0.0)); });
  Kernel k = b.finish();
  float in[4] = {-1, 2, -3, 4}, out[4] = {};
  interpret(k, {in, out});
  CHECK(out[0] == 0);
  CHECK(out[1] == 2);
  CHECK(out[2] == 0);
  CHECK(out[3] == 4);
}

TEST_CASE("constants fold in expression constructors", "[kernel]") {
  Expr e = indexConst(3) * 4 + 2;
  REQUIRE(e->isConst());
  CHECK(e->IntValue == 14);
  Expr f = constant(DType::F32, 1.5) * 2.0;
  CHECK(f->FloatValue == 3.0);
}

TEST_CASE("a Max/Min of a 16-bit float value rounds once", "[kernel]") {
  // round(clip(round(x))) == round(clip(x)) when the bounds are exact in
  // the type (rounding is monotone): the inner rounding goes.
  Buffer x = std::make_shared<BufferNode>(BufferNode{"x", DType::F32, 4, BufferKind::Param});
  Buffer h = std::make_shared<BufferNode>(BufferNode{"h", DType::F16, 4, BufferKind::Param});
  Expr v = load(x, indexConst(0));
  Expr rounded = cast(DType::F32, cast(DType::F16, v));
  for (DType t : {DType::F16, DType::BF16}) {
    Expr inner = cast(DType::F32, cast(t, v));
    // Clip to [0, 6]: both bounds exact.
    Expr e = cast(t, min(max(inner, 0.0), 6.0));
    REQUIRE(e->Kind == ExprKind::Cast);
    CHECK(e->A->A->A == v); // min(max(v, 0), 6): no inner cast
    // A bound the type does not hold (0.1) keeps the inner rounding.
    Expr kept = cast(t, max(inner, 0.1));
    CHECK(kept->A->A == inner);
  }
  // Another operand widened from float16 is exact too; an f32 load is not.
  Expr both = cast(DType::F16, max(rounded, cast(DType::F32, load(h, indexConst(1)))));
  CHECK(both->A->A == v);
  Expr notExact = cast(DType::F16, max(rounded, load(x, indexConst(1))));
  CHECK(notExact->A->A == rounded);
}

TEST_CASE("out-of-bounds access is an internal error, not a crash", "[kernel]") {
  KernelBuilder b("oob");
  Buffer x = b.param("x", DType::F32, 2);
  b.loop("i", 3, [&](Expr i) { b.store(x, i, constant(DType::F32, 0)); });
  Kernel k = b.finish();
  float buf[2];
  CHECK_THROWS_AS(interpret(k, {buf}), CompileError);
}

TEST_CASE("integer semantics: floor modulo, truncating division", "[kernel]") {
  Expr a = constantInt(DType::I32, -7), b = constantInt(DType::I32, 3);
  CHECK((a / b)->IntValue == -2);
  CHECK(floorMod(a, b)->IntValue == 2);
  CHECK(floorDiv(a, b)->IntValue == -3);
  // Division by zero folds to 0 instead of trapping.
  CHECK((a / constantInt(DType::I32, 0))->IntValue == 0);
}

TEST_CASE("interpreter copy loops: strided, in loop order, bounds-checked", "[kernel]") {
  // y[j*4 + i] = x[i*3 + j]: a transpose whose inner loop the interpreter
  // runs as a strided copy; then an in-place shift whose order matters.
  KernelBuilder b("copies");
  Buffer x = b.param("x", DType::I32, 12), y = b.param("y", DType::I32, 12);
  b.loop("i", 4, [&](Expr i) {
    b.loop("j", 3, [&](Expr j) { b.store(y, j * 4 + i, load(x, i * 3 + j)); });
  });
  b.loop("k", indexConst(1), indexConst(12), [&](Expr k) { b.store(x, k, load(x, k - 1)); });
  Kernel k = b.finish();
  std::vector<int32_t> xs(12), ys(12, -1);
  for (int32_t i = 0; i < 12; ++i)
    xs[(size_t)i] = 100 + i;
  interpret(k, {xs.data(), ys.data()});
  for (int32_t i = 0; i < 4; ++i)
    for (int32_t j = 0; j < 3; ++j)
      CHECK(ys[(size_t)(j * 4 + i)] == 100 + i * 3 + j);
  for (int32_t i = 0; i < 12; ++i)
    CHECK(xs[(size_t)i] == 100); // each element copies the one just written

  KernelBuilder bad("overrun");
  Buffer p = bad.param("p", DType::F32, 8), q = bad.param("q", DType::F32, 8);
  bad.loop("i", 5, [&](Expr i) { bad.store(q, i, load(p, i * 2)); });
  Kernel o = bad.finish();
  std::vector<float> ps(8), qs(8);
  CHECK_THROWS_AS(interpret(o, {ps.data(), qs.data()}), CompileError);
}

TEST_CASE("expressions know their depth; deep values are stored in pieces", "[kernel]") {
  Expr x = constant(DType::F32, 1.0);
  CHECK(x->Depth == 1);
  KernelBuilder b("deep");
  Buffer in = b.param("x", DType::F32, 4), out = b.param("y", DType::F32, 4);
  // y[i] = ((x[i] * 0.5 + 1) * 0.5 + 1) ... 1000 times: 2001 levels, far
  // beyond kMaxExprDepth, as an unrolled window once made.
  b.loop("i", 4, [&](Expr i) {
    Expr v = load(in, i);
    CHECK(v->Depth == 2);
    for (int k = 0; k < 1000; ++k)
      v = v * 0.5 + 1.0;
    CHECK(v->Depth == 2002);
    b.store(out, i, v);
  });
  CHECK(b.deepestValue() == 2002);
  Kernel k = b.finish(); // verified: within the bound
  CHECK(maxExprDepth(k) <= KernelBuilder::kSplitDepth);
  float xs[4] = {0, 1, -3, 100}, ys[4] = {};
  interpret(k, {xs, ys});
  for (int i = 0; i < 4; ++i) {
    float want = xs[i]; // the same f32 operations in the same order
    for (int r = 0; r < 1000; ++r)
      want = want * 0.5f + 1.0f;
    CHECK(ys[i] == want);
  }
}

TEST_CASE("verify refuses an expression deeper than kMaxExprDepth", "[kernel]") {
  auto y = std::make_shared<BufferNode>(BufferNode{"y", DType::F32, 1, BufferKind::Param});
  Expr v = load(y, indexConst(0));
  for (int k = 0; k < kMaxExprDepth; ++k)
    v = unary(UnOp::Neg, unary(UnOp::Abs, v)); // neg(neg(..)) would fold
  Kernel k;
  k.Name = "too_deep";
  k.Params = {y};
  k.Body = store(y, indexConst(0), v);
  CHECK_THROWS_AS(k.finalize(), CompileError);
}

TEST_CASE("requantization of small products: the short forms equal the general ones",
          "[kernel][quantization]") {
  // requantizeFixedSmall (shifts >= 33) against requantizeFixed, and
  // requantizeF32Small against requantizeF32, for accumulators whose
  // product with the multiplier stays below kSmallProductBound: random
  // ones, both signs, exact ties (multipliers 2^-4 and 2^-9 with odd
  // accumulators) and the largest allowed; uint8 and int8 outputs with
  // nonzero zero points.
  using namespace mlcc::ops::requant;
  const int n = 4096;
  std::vector<int32_t> acc(n), m0(n), shift(n);
  std::vector<float> mult(n);
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(state >> 33);
  };
  for (int i = 0; i < n; ++i) {
    double m = i % 8 == 0 ? 0.0625 : i % 8 == 1 ? 1.0 / 512 : 1e-4 + (next() % 100000) * 2e-6;
    auto q = q31Multiplier(m);
    REQUIRE(q);
    m0[i] = (int32_t)q->first;
    shift[i] = (int32_t)q->second;
    mult[i] = (float)m;
    double limit = kSmallProductBound / m - 1;
    double a = i % 8 < 2 ? (double)(2 * (int64_t)(next() % 4096) + 1)
                         : (double)(next() % 2000001) / 2000000.0 * limit;
    if (i % 16 == 15)
      a = std::floor(limit);
    acc[i] = (int32_t)(next() % 2 ? a : -a);
  }
  for (DType out : {DType::U8, DType::I8}) {
    const int64_t zp = out == DType::U8 ? 3 : -5;
    KernelBuilder b("requant");
    Buffer A = b.param("acc", DType::I32, n), M0 = b.param("m0", DType::I32, n),
           S = b.param("shift", DType::I32, n), M = b.param("mult", DType::F32, n);
    std::vector<Buffer> ys;
    for (const char *name : {"fixed", "fixed_small", "f32", "f32_small"})
      ys.push_back(b.param(name, DType::I32, n));
    b.loop("i", n, [&](Expr i) {
      Expr a = load(A, i), z = constantInt(DType::I32, zp);
      b.store(ys[0], i, requantizeFixed(out, a, load(M0, i), load(S, i), z));
      b.store(ys[1], i, requantizeFixedSmall(out, a, load(M0, i), load(S, i), z));
      b.store(ys[2], i, requantizeF32(out, a, load(M, i), z));
      b.store(ys[3], i, requantizeF32Small(out, a, load(M, i), z));
    });
    Kernel k = b.finish();
    std::vector<std::vector<int32_t>> got(4, std::vector<int32_t>(n));
    interpret(k, {acc.data(), m0.data(), shift.data(), mult.data(), got[0].data(),
                  got[1].data(), got[2].data(), got[3].data()});
    int saturated = 0;
    for (int i = 0; i < n; ++i) {
      INFO("acc " << acc[i] << " m0 " << m0[i] << " shift " << shift[i] << " mult " << mult[i]);
      REQUIRE(shift[i] >= 33);
      CHECK(got[1][i] == got[0][i]);
      CHECK(got[3][i] == got[2][i]);
      saturated += got[0][i] == (out == DType::U8 ? 255 : 127);
    }
    CHECK(saturated > 0);        // the clamps are exercised
    CHECK(saturated < n * 3 / 4); // and so are the values inside
  }
}
