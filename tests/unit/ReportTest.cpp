// The operation count of kernels (compiler/kernel/Cost.h) and the report's
// byte sizes and budgets (compiler/output/Report.h).
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Cost.h"
#include "compiler/output/Report.h"
#include "compiler/support/Error.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using namespace mlcc::kir;

TEST_CASE("countOps: a multiply-add in a loop nest is two operations per trip", "[report]") {
  KernelBuilder b("axpy");
  Buffer x = b.param("x", DType::F32, 12), y = b.param("y", DType::F32, 12);
  b.loop("i", 3, [&](Expr i) {
    b.loop("j", 4, [&](Expr j) {
      Expr at = i * 4 + j; // index arithmetic is not counted
      b.store(y, at, load(x, at) * 2.0 + load(y, at));
    });
  });
  CHECK(countOps(b.finish()) == 3 * 4 * 2);
}

TEST_CASE("countOps: triangular loops count their mean trip", "[report]") {
  // for i in [0, 8): for j in [0, i): y[i] += x[j]  -> 28 additions
  KernelBuilder b("tri");
  Buffer x = b.param("x", DType::F32, 8), y = b.param("y", DType::F32, 8);
  b.loop("i", 8, [&](Expr i) {
    b.loop("j", indexConst(0), i, [&](Expr j) { b.store(y, i, load(y, i) + load(x, j)); });
  });
  // The middle of i's range is 3 (integer), so 8 * 3 = 24: an estimate
  // within one trip per iteration of the exact 28.
  int64_t n = countOps(b.finish());
  CHECK(n >= 24);
  CHECK(n <= 28);
}

TEST_CASE("countOps: an If counts the branch its condition takes", "[report]") {
  KernelBuilder b("pad");
  Buffer x = b.param("x", DType::F32, 10), y = b.param("y", DType::F32, 10);
  b.loop("i", 10, [&](Expr i) {
    b.ifThen(lt(i, indexConst(100)), [&] { b.store(y, i, exp(load(x, i)) * 3.0); },
             [&] { b.store(y, i, load(x, i)); });
  });
  CHECK(countOps(b.finish()) == 10 * 2);
}

TEST_CASE("countOps: vector lanes count each", "[report]") {
  KernelBuilder b("vec");
  Buffer x = b.param("x", DType::F32, 16), y = b.param("y", DType::F32, 16);
  b.store(y, indexConst(0), vload(x, indexConst(0), 16) + vload(y, indexConst(0), 16));
  CHECK(countOps(b.finish()) == 16);
}

TEST_CASE("movementOf: copies and fills into parameters, not computed values", "[report]") {
  KernelBuilder b("pad_copy");
  Buffer x = b.param("x", DType::F32, 8), y = b.param("y", DType::F32, 12);
  b.loop("i", 2, [&](Expr i) { b.store(y, i, constant(DType::F32, 0.0)); }); // fill 8 B
  b.loop("i", 8, [&](Expr i) { b.store(y, i + 2, load(x, i)); });          // copy 32 B
  b.loop("i", 2, [&](Expr i) { b.store(y, i + 10, load(x, i) * 2.0); });   // computed
  Local acc = b.local("acc", DType::F32, 4);
  b.loop("i", 4, [&](Expr i) { b.set(acc, i, load(x, i)); }); // into a local: not counted
  b.store(y, indexConst(0), vload(acc.Buf, indexConst(0), 4));  // a local's value: computed
  Movement m = movementOf(b.finish());
  CHECK(m.CopiedBytes == 32);
  CHECK(m.FilledBytes == 8);
}

TEST_CASE("parseByteSize: digits with k, M, G", "[report]") {
  CHECK(output::parseByteSize("4096", "--max-arena") == 4096);
  CHECK(output::parseByteSize("2k", "--max-arena") == 2048);
  CHECK(output::parseByteSize("2K", "--max-arena") == 2048);
  CHECK(output::parseByteSize("3M", "--max-arena") == 3 << 20);
  CHECK(output::parseByteSize("1G", "--max-arena") == int64_t(1) << 30);
  for (const char *bad : {"", "k", "-1", "1.5M", "12q", "1kk", "9999999999999999", "99999999999999G"})
    CHECK_THROWS_AS(output::parseByteSize(bad, "--max-arena"), CompileError);
}

TEST_CASE("checkBudgets: over by one byte fails, at the figure passes", "[report]") {
  output::ModelReport r;
  r.ArenaBytes = 1000;
  r.WeightBytes = 500;
  r.Calls.push_back({});
  r.Calls[0].ArenaEnd = 1000;
  r.Calls[0].Nodes = {{"conv", "Conv"}};
  r.Buffers.push_back({"act", 0, 1000, 0, 0});
  r.Calls[0].LiveBuffers = {0};
  output::Budgets ok;
  ok.MaxArena = 1000;
  ok.MaxWeights = 500;
  CHECK_NOTHROW(output::checkBudgets(r, ok));
  output::Budgets tight = ok;
  tight.MaxArena = 999;
  try {
    output::checkBudgets(r, tight);
    FAIL("no error");
  } catch (const CompileError &e) {
    CHECK(e.kind() == ErrorKind::OverBudget);
    std::string msg = e.what();
    CHECK(msg.find("1 byte over --max-arena 999") != std::string::npos);
    CHECK(msg.find("'act' 1000 B (calls 0-0)") != std::string::npos);
  }
  tight = ok;
  tight.MaxWeights = 499;
  CHECK_THROWS_AS(output::checkBudgets(r, tight), CompileError);
  // Without object code the code budget cannot be judged (the driver
  // refuses --max-code for such outputs).
  tight = ok;
  tight.MaxCode = 1;
  CHECK_NOTHROW(output::checkBudgets(r, tight));
}
