#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
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
