// Kernels at run-time extents merged from fixed lowerings (compiler/passes/
// ProbedExtents.h): constants on a line in the dimension become its
// expression; anything else that differs is refused with the difference.
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/passes/ProbedExtents.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using namespace mlcc::kir;
using mlcc::passes::mergeProbedKernels;

namespace {

/// y[r, c] = x[r, c] * scale for r < rows, c < 8: rows the extent that
/// follows the dimension, `scale` a constant that may follow it too; with
/// `dims`, the dimension's parameter after the others.
Kernel rowsKernel(int64_t rows, double scale, bool dims, Expr *dim = nullptr) {
  KernelBuilder b("rows");
  b.keepUnitLoops();
  Buffer x = b.param("x", DType::F32, 8 * 16), y = b.param("y", DType::F32, 8 * 16);
  b.loop("r", rows, [&](Expr r) {
    b.loop("c", 8, [&](Expr c) {
      Expr at = r * indexConst(8) + c;
      b.store(y, at, load(x, at) * constant(DType::F32, scale));
    });
  });
  if (dims) {
    Buffer d = b.param("dims", DType::I64, 1);
    if (dim)
      *dim = cast(DType::Index, load(d, indexConst(0)));
  }
  return b.finish();
}

} // namespace

TEST_CASE("probed kernels: loop bounds on a line in the dimension become its expression",
          "[probed]") {
  Expr dim;
  Kernel atMax = rowsKernel(16, 2.0, true, &dim);
  std::vector<Kernel> probes = {rowsKernel(15, 2.0, false), rowsKernel(14, 2.0, false),
                                rowsKernel(3, 2.0, false)};
  std::string why;
  REQUIRE(mergeProbedKernels(atMax, probes, {1, 2, 13}, dim, 16, why));
  CHECK(why.empty());
  // The merged kernel runs 5 rows at dims = 5 and leaves the rest alone.
  std::vector<float> x(128), y(128, -1.0f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (float)i;
  int64_t five = 5;
  std::vector<void *> args = {x.data(), y.data(), &five};
  interpret(atMax, args);
  CHECK(y[0] == 0.0f);
  CHECK(y[5 * 8 - 1] == 2.0f * (5 * 8 - 1));
  CHECK(y[5 * 8] == -1.0f);
  CHECK(print(atMax).find("dims") != std::string::npos);
}

TEST_CASE("probed kernels: a float 1/N (a mean's scale) is computed from the dimension",
          "[probed]") {
  Expr dim;
  Kernel atMax = rowsKernel(16, 1.0 / 16, true, &dim);
  std::vector<Kernel> probes = {rowsKernel(15, 1.0 / 15, false), rowsKernel(14, 1.0 / 14, false)};
  std::string why;
  REQUIRE(mergeProbedKernels(atMax, probes, {1, 2}, dim, 16, why));
  std::vector<float> x(128, 10.0f), y(128, -1.0f);
  int64_t five = 5;
  std::vector<void *> args = {x.data(), y.data(), &five};
  interpret(atMax, args);
  CHECK(y[0] == Approx(2.0f)); // 10 * 1/5
  CHECK(y[5 * 8] == -1.0f);
}

TEST_CASE("probed kernels: a float that is no count on a line is refused", "[probed]") {
  Expr dim;
  // 1/N^2: its reciprocal 256, 225, 196 is no line in N.
  Kernel atMax = rowsKernel(16, 1.0 / 256, true, &dim);
  std::vector<Kernel> probes = {rowsKernel(15, 1.0 / 225, false), rowsKernel(14, 1.0 / 196, false)};
  std::string why;
  CHECK_FALSE(mergeProbedKernels(atMax, probes, {1, 2}, dim, 16, why));
  CHECK(why.find("neither it nor its reciprocal") != std::string::npos);
}

TEST_CASE("probed kernels: a constant off the line through the probes is refused", "[probed]") {
  Expr dim;
  Kernel atMax = rowsKernel(16, 2.0, true, &dim);
  // 16, 15, 14 lie on a line; 9 at 3 does not (a rounded extent).
  std::vector<Kernel> probes = {rowsKernel(15, 2.0, false), rowsKernel(14, 2.0, false),
                                rowsKernel(9, 2.0, false)};
  std::string why;
  CHECK_FALSE(mergeProbedKernels(atMax, probes, {1, 2, 13}, dim, 16, why));
  CHECK(why.find("does not follow the extent on a line") != std::string::npos);
}
