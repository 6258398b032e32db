#include "compiler/kernel/Builder.h"
#include "compiler/kernel/GpuSchedule.h"
#include "compiler/kernel/Interpreter.h"
#include "compiler/kernel/Mutator.h"
#include "compiler/kernel/Schedule.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace mlcc;
using namespace mlcc::kir;

namespace {

TargetDesc avx2() {
  TargetDesc t;
  t.VectorBytes = 32;
  t.VectorRegisters = 16;
  t.Fma = true;
  return t;
}

std::vector<float> run(const Kernel &k, std::vector<float> x, size_t n) {
  std::vector<float> y(n, -1.0f);
  interpret(k, {x.data(), y.data()});
  return y;
}

/// y[i] = fn(x[i]) over `in`, vectorized for AVX2 (the math expansion) and
/// interpreted.
std::vector<float> vectorizedMath(const char *name, Expr (*fn)(const Expr &),
                                  const std::vector<float> &in) {
  const int64_t n = (int64_t)in.size();
  KernelBuilder b(name);
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, n);
  b.loop("i", n, [&](Expr i) { b.store(y, i, fn(load(x, i))); });
  Kernel v = vectorize(b.finish(), avx2());
  REQUIRE(hasVectors(v.Body));
  return run(v, in, (size_t)n);
}

} // namespace

TEST_CASE("vectorize: a contiguous loop becomes vectors and a scalar tail", "[schedule]") {
  const int64_t n = 37; // 4 vectors of 8 and a tail of 5
  KernelBuilder b("axpb");
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, n);
  b.loop("i", n, [&](Expr i) { b.store(y, i, max(load(x, i) * 3.0 - 1.0, 0.0)); });
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  REQUIRE(hasVectors(v.Body));
  CHECK_FALSE(hasVectors(scalarize(v).Body));
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i)
    in[(size_t)i] = (float)i / 7.0f - 2.0f;
  CHECK(run(k, in, n) == run(v, in, n)); // the same values, exactly
}

TEST_CASE("vectorize takes the lanes from the values, not from index loads", "[schedule]") {
  // y[i] = x[q0 + i] * 2 with q0 an index local (8 bytes): the index is a
  // scalar, the vector's first element; f32 values give AVX2 8 lanes, not 4.
  const int64_t n = 32;
  KernelBuilder b("offset");
  Buffer x = b.param("x", DType::F32, n + 3), y = b.param("y", DType::F32, n);
  Local q0 = b.local("q0", indexConst(3));
  b.loop("i", n, [&](Expr i) { b.store(y, i, load(x, q0.get() + i) * 2.0); });
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  int lanes = 0;
  visitStmts(v.Body, [&](const Stmt &st) {
    if (st->Kind == StmtKind::Store && st->Buf == y)
      lanes = std::max(lanes, st->Value->Lanes);
  });
  CHECK(lanes == 8);
  std::vector<float> in(n + 3), a(n, -1.0f), bv(n, -1.0f);
  for (int64_t i = 0; i < n + 3; ++i)
    in[(size_t)i] = (float)i * 0.25f - 1.0f;
  interpret(k, {in.data(), a.data()});
  interpret(v, {in.data(), bv.data()});
  CHECK(a == bv);
  CHECK(a[0] == in[3] * 2.0f);
}

TEST_CASE("vectorize leaves loop-carried dependences scalar", "[schedule]") {
  const int64_t n = 32;
  KernelBuilder b("prefix");
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, n);
  b.store(y, indexConst(0), load(x, indexConst(0)));
  b.loop("i", indexConst(1), indexConst(n),
         [&](Expr i) { b.store(y, i, load(y, i - 1) + load(x, i)); });
  Kernel k = b.finish();
  CHECK_FALSE(hasVectors(vectorize(k, avx2()).Body));
}

TEST_CASE("vectorize reads small strides as strided vector loads", "[schedule]") {
  KernelBuilder b("stride2");
  Buffer x = b.param("x", DType::F32, 64), y = b.param("y", DType::F32, 64);
  b.loop("i", 31, [&](Expr i) { b.store(y, i, load(x, i * 2 + 1)); });
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  bool strided = false;
  visitExprs(v.Body, [&](const Expr &e) {
    strided |= e->Kind == ExprKind::Load && e->Lanes == 8 && e->Stride == 2;
  });
  CHECK(strided);
  std::vector<float> in(64);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = (float)i * 0.5f;
  CHECK(run(k, in, 64) == run(v, in, 64)); // 3 vectors and a scalar tail
}

TEST_CASE("vectorize leaves large strides and gathers scalar", "[schedule]") {
  KernelBuilder b("gather");
  Buffer x = b.param("x", DType::F32, 256), y = b.param("y", DType::F32, 32);
  b.loop("i", 32, [&](Expr i) { b.store(y, i, load(x, i * 7)); });
  b.loop("i", 16, [&](Expr i) { b.store(y, i, load(x, i * i)); });
  Kernel k = b.finish();
  CHECK_FALSE(hasVectors(vectorize(k, avx2()).Body));
}

TEST_CASE("vectorize stores and loads transposed groups", "[schedule]") {
  // A 6 x 20 tile stored column by column into rows of a 20 x 13 output
  // (each column's 6 values contiguous, columns 13 apart) plus a residual
  // read the same way: the loop over columns vectorizes, with stride-13
  // stores and loads that form complete groups of offsets 0..5.
  KernelBuilder b("transposed");
  Buffer tile = b.param("tile", DType::F32, 120), res = b.param("res", DType::F32, 260),
         y = b.param("y", DType::F32, 260);
  b.loop("j", 20, [&](Expr j) {
    for (int64_t r = 0; r < 6; ++r)
      b.store(y, j * 13 + 4 + r, load(tile, j + r * 20) + load(res, j * 13 + 4 + r));
  });
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  int wideStores = 0, wideLoads = 0;
  visitStmts(v.Body, [&](const Stmt &s) {
    wideStores += s->Kind == StmtKind::Store && s->Stride == 13 && s->Value->Lanes > 1;
  });
  visitExprs(v.Body, [&](const Expr &e) {
    wideLoads += e->Kind == ExprKind::Load && e->Stride == 13 && e->Lanes > 1;
  });
  CHECK(wideStores == 12); // a loop over vectors of 8 columns, then one of 4
  CHECK(wideLoads == 12);
  std::vector<float> t(120), r(260), y0(260, -1.0f), y1(260, -1.0f);
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = (float)i * 0.25f;
  for (size_t i = 0; i < r.size(); ++i)
    r[i] = (float)i * -0.5f;
  interpret(k, {t.data(), r.data(), y0.data()});
  interpret(v, {t.data(), r.data(), y1.data()});
  CHECK(y0 == y1);

  // Offsets 0, 1 and 3: not a group, the loop stays scalar.
  KernelBuilder g("gap");
  Buffer a = g.param("a", DType::F32, 64), z = g.param("z", DType::F32, 256);
  g.loop("j", 16, [&](Expr j) {
    for (int64_t r : {0, 1, 3})
      g.store(z, j * 13 + r, load(a, j + r * 16));
  });
  CHECK_FALSE(hasVectors(vectorize(g.finish(), avx2()).Body));
}

TEST_CASE("vectorized erf stays within a few ulp of libm", "[schedule]") {
  const int64_t n = 4096;
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i)
    in[(size_t)i] = -6.0f + 12.0f * (float)i / (float)n;
  std::vector<float> out = vectorizedMath("erf", erf, in);
  for (int64_t i = 0; i < n; ++i) {
    double want = std::erf((double)in[(size_t)i]);
    INFO("x = " << in[(size_t)i]);
    CHECK(std::fabs(out[(size_t)i] - want) <= 6e-7 * std::fabs(want) + 1e-30);
  }
}

TEST_CASE("vectorized exp stays within a few ulp of libm", "[schedule]") {
  // The normal range densely (the rounding of x / ln2 to n at every seam
  // between two n), its ends, the flush to 0 below it, +inf above it and the
  // special values.
  std::vector<float> in;
  for (int i = -87000; i <= 88300; i += 7)
    in.push_back((float)i * 1e-3f);
  for (int k = -126; k <= 127; ++k) // the seams: x = (k + 1/2) ln2, and near them
    for (float d : {-1e-5f, 0.0f, 1e-5f})
      in.push_back((float)(((double)k + 0.5) * 0.6931471805599453) + d);
  const std::vector<float> special = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -87.5f, 89.0f,
                                      -1e30f, 1e30f};
  in.insert(in.end(), special.begin(), special.end());
  std::vector<float> out = vectorizedMath("exp", exp, in);
  size_t s = in.size() - special.size();
  CHECK(out[s] == 1.0f);
  CHECK(out[s + 1] == 1.0f);
  CHECK(out[s + 2] == INFINITY);
  CHECK(out[s + 3] == 0.0f);
  CHECK(std::isnan(out[s + 4]));
  CHECK(out[s + 5] == 0.0f); // below the normal range: flushed
  CHECK(out[s + 6] == INFINITY);
  CHECK(out[s + 7] == 0.0f);
  CHECK(out[s + 8] == INFINITY);
  for (size_t i = 0; i < s; ++i) {
    double want = std::exp((double)in[i]);
    // Past the ends: below -87 the result is flushed to 0 (checked above);
    // from 127.5 ln2 = 88.3763 on, n = 128 and the result is +inf, short of
    // the largest floats (e^88.72); as documented in MathExpansions.h.
    if (in[i] < -87.0f || in[i] >= 88.376f)
      continue;
    INFO("x = " << in[i]);
    CHECK(std::fabs(out[i] - want) <= 2.5e-7 * want);
  }
}

TEST_CASE("vectorized log stays within a few ulp of libm", "[schedule]") {
  // Subnormal to huge inputs (a geometric sweep), the neighbourhood of 1
  // (where log is near 0 and only a relative bound means anything) and the
  // special values.
  std::vector<float> in;
  for (double v = 1e-44; v < 3e38; v *= 1.0173)
    in.push_back((float)v);
  for (int i = -2000; i <= 2000; ++i)
    in.push_back(1.0f + (float)i * 1e-5f);
  const std::vector<float> special = {0.0f, -0.0f, INFINITY, -1.0f, -INFINITY, NAN, 1.0f};
  in.insert(in.end(), special.begin(), special.end());
  std::vector<float> out = vectorizedMath("log", log, in);
  size_t s = in.size() - special.size();
  CHECK(out[s] == -INFINITY);
  CHECK(out[s + 1] == -INFINITY);
  CHECK(out[s + 2] == INFINITY);
  CHECK(std::isnan(out[s + 3]));
  CHECK(std::isnan(out[s + 4]));
  CHECK(std::isnan(out[s + 5]));
  CHECK(out[s + 6] == 0.0f);
  for (size_t i = 0; i < s; ++i) {
    double want = std::log((double)in[i]);
    INFO("x = " << in[i]);
    CHECK(std::fabs(out[i] - want) <= 2.5e-7 * std::fabs(want) + 1e-45);
  }
}

TEST_CASE("vectorized tanh stays within a few ulp of libm", "[schedule]") {
  // Both branches and their seam at 0.625, tiny values (relative accuracy),
  // saturation, and the special values.
  std::vector<float> in;
  for (int i = -6000; i <= 6000; ++i)
    in.push_back((float)i * 2e-3f);
  for (double v = 1e-30; v < 1.0; v *= 1.37)
    in.push_back((float)v), in.push_back((float)-v);
  const std::vector<float> special = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 30.0f, -30.0f};
  in.insert(in.end(), special.begin(), special.end());
  std::vector<float> out = vectorizedMath("tanh", tanh, in);
  size_t s = in.size() - special.size();
  CHECK((out[s] == 0.0f && !std::signbit(out[s])));
  CHECK((out[s + 1] == 0.0f && std::signbit(out[s + 1])));
  CHECK(out[s + 2] == 1.0f);
  CHECK(out[s + 3] == -1.0f);
  CHECK(std::isnan(out[s + 4]));
  CHECK(out[s + 5] == 1.0f);
  CHECK(out[s + 6] == -1.0f);
  for (size_t i = 0; i < s; ++i) {
    double want = std::tanh((double)in[i]);
    INFO("x = " << in[i]);
    CHECK(std::fabs(out[i] - want) <= 3.6e-7 * std::fabs(want) + 1e-45);
  }
}

TEST_CASE("strideOf reads affine index expressions", "[schedule]") {
  Var i = newVar("i"), j = newVar("j");
  Expr e = varRef(j) * 10 + varRef(i) * 3 + 7;
  CHECK(strideOf(e, i) == std::optional<int64_t>(3));
  CHECK(strideOf(e, j) == std::optional<int64_t>(10));
  CHECK_FALSE(strideOf(varRef(i) / 2, i).has_value());
}

TEST_CASE("vectorize: reductions into a scalar combine their lanes", "[schedule]") {
  const int64_t n = 45;
  KernelBuilder b("rowstats");
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, 2);
  Local mx = b.local("mx", constant(DType::F32, -INFINITY));
  b.loop("i", n, [&](Expr i) { b.set(mx, max(mx.get(), load(x, i))); });
  Local sum = b.local("sum", constant(DType::F32, 0));
  b.loop("i", n, [&](Expr i) { b.set(sum, sum.get() + load(x, i)); });
  b.store(y, indexConst(0), mx.get());
  b.store(y, indexConst(1), sum.get());
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  REQUIRE(hasVectors(v.Body));
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i)
    in[(size_t)i] = std::sin((float)i) * 10.0f;
  std::vector<float> a(2), c(2);
  interpret(k, {in.data(), a.data()});
  interpret(v, {in.data(), c.data()});
  CHECK(a[0] == c[0]);                              // max: exact
  CHECK(std::fabs(a[1] - c[1]) <= 1e-5f * 450.0f); // sum: reassociated
}

TEST_CASE("vectorize: a trip count read at run time takes whole vectors and a remainder",
          "[schedule]") {
  // y[i] = 2 x[i] + 1 for i < n and the sum of x[0..n), n read from a
  // parameter (a dimension known only at run time, at most 64).
  const int64_t cap = 64;
  KernelBuilder b("runtime_n");
  Buffer dims = b.param("dims", DType::Index, 1);
  Buffer x = b.param("x", DType::F32, cap), y = b.param("y", DType::F32, cap + 1);
  Expr n = load(dims, indexConst(0));
  b.loop("i", indexConst(0), n, [&](Expr i) { b.store(y, i, load(x, i) * 2.0 + 1.0); });
  Local sum = b.local("sum", constant(DType::F32, 0));
  b.loop("i", indexConst(0), n, [&](Expr i) { b.set(sum, sum.get() + load(x, i)); });
  b.store(y, indexConst(cap), sum.get());
  Kernel k = b.finish();
  Kernel v = vectorize(k, avx2());
  REQUIRE(hasVectors(v.Body));
  std::vector<float> in(cap);
  for (int64_t i = 0; i < cap; ++i)
    in[(size_t)i] = std::cos((float)i) * 3.0f;
  for (int64_t count : {0, 1, 7, 8, 9, 23, 37, 64}) {
    std::vector<int64_t> d = {count};
    std::vector<float> a(cap + 1, -5.0f), c(cap + 1, -5.0f);
    interpret(k, {d.data(), in.data(), a.data()});
    interpret(v, {d.data(), in.data(), c.data()});
    INFO("n = " << count);
    for (int64_t i = 0; i < cap; ++i)
      CHECK(a[(size_t)i] == c[(size_t)i]); // the n computed, the rest untouched
    CHECK(std::fabs(a[cap] - c[cap]) <= 1e-5f * 200.0f); // sum: reassociated
  }
  // A loop whose bounds come from an outer loop (a clipped window) stays
  // scalar.
  KernelBuilder t("triangle");
  Buffer tx = t.param("x", DType::F32, cap), ty = t.param("y", DType::F32, cap * cap);
  t.loop("r", cap, [&](Expr r) {
    t.loop("i", indexConst(0), r, [&](Expr i) { t.store(ty, r * cap + i, load(tx, i)); });
  });
  CHECK_FALSE(hasVectors(vectorize(t.finish(), avx2()).Body));
}

namespace {

/// The loops of `s`, outermost first, with their kinds and trip counts.
void loopsOf(const Stmt &s, std::vector<const StmtNode *> &out) {
  if (!s)
    return;
  if (s->Kind == StmtKind::For)
    out.push_back(s.get());
  if (s->Kind == StmtKind::Block)
    for (auto &c : s->Body)
      loopsOf(c, out);
  loopsOf(s->Inner, out);
  loopsOf(s->Else, out);
}

} // namespace

TEST_CASE("collapse merges contiguous loop nests and keeps the result", "[schedule]") {
  // y[c, h, w] = x[c, h, w] * 2 over [3, 5, 7], and a sum over each [5, 7]
  // plane: both nests are contiguous across h and w (and c for the copy).
  KernelBuilder b("copy_and_sum");
  Buffer x = b.param("x", DType::F32, 105), y = b.param("y", DType::F32, 105 + 3);
  b.loop("c", 3, [&](Expr c) {
    b.loop("h", 5, [&](Expr h) {
      b.loop("w", 7, [&](Expr w) { b.store(y, (c * 5 + h) * 7 + w, load(x, (c * 5 + h) * 7 + w) * 2.0); });
    });
  });
  b.loop("c", 3, [&](Expr c) {
    Local acc = b.local("acc", constant(DType::F32, 0));
    b.loop("h", 5, [&](Expr h) {
      b.loop("w", 7, [&](Expr w) { b.set(acc, acc.get() + load(x, c * 35 + h * 7 + w)); });
    });
    b.store(y, c + 105, acc.get());
  });
  Kernel k = b.finish();
  Kernel m = collapse(k);
  std::vector<const StmtNode *> loops;
  loopsOf(m.Body, loops);
  REQUIRE(loops.size() == 3); // the copy: 1 loop; the sums: c and one plane loop
  CHECK(loops[0]->End->IntValue == 105);
  CHECK(loops[2]->End->IntValue == 35);
  std::vector<float> in(105);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = (float)i * 0.25f - 3.0f;
  CHECK(run(k, in, 108) == run(m, in, 108)); // same order of operations: exact
}

TEST_CASE("collapse leaves loops whose variables are used as values or strided apart",
          "[schedule]") {
  KernelBuilder b("iota_and_transpose");
  Buffer x = b.param("x", DType::F32, 12), y = b.param("y", DType::F32, 24);
  b.loop("i", 3, [&](Expr i) {
    b.loop("j", 4, [&](Expr j) { b.store(y, i * 4 + j, cast(DType::F32, j)); }); // j as a value
  });
  b.loop("i", 3, [&](Expr i) {
    b.loop("j", 4, [&](Expr j) { b.store(y, j * 3 + i + 12, load(x, i * 4 + j)); }); // transpose
  });
  Kernel k = b.finish();
  std::vector<const StmtNode *> loops;
  loopsOf(collapse(k).Body, loops);
  CHECK(loops.size() == 4);
}

TEST_CASE("parallelize takes independent top-level loops only", "[schedule]") {
  const int64_t n = 1 << 16;
  KernelBuilder b("par");
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, n);
  b.loop("i", n, [&](Expr i) { b.store(y, i, load(x, i) + 1.0); }); // independent
  b.loop("i", indexConst(1), indexConst(n),
         [&](Expr i) { b.store(y, i, load(y, i - 1) + load(x, i)); }); // a scan
  Kernel k = b.finish();
  Kernel p = parallelize(k);
  std::vector<const StmtNode *> loops;
  loopsOf(p.Body, loops);
  REQUIRE(loops.size() == 3); // chunks, the chunk's iterations, the scan
  CHECK(loops[0]->Loop == LoopKind::Parallel);
  CHECK(loops[1]->Loop == LoopKind::Serial);
  CHECK(loops[2]->Loop == LoopKind::Serial);
  std::vector<float> in(n);
  for (int64_t i = 0; i < n; ++i)
    in[(size_t)i] = (float)(i % 13) - 6.0f;
  CHECK(run(k, in, n) == run(p, in, n));
  // A loop whose iterations write overlapping elements stays serial.
  KernelBuilder b2("overlap");
  Buffer x2 = b2.param("x", DType::F32, n), y2 = b2.param("y", DType::F32, n + 1);
  b2.loop("i", n, [&](Expr i) {
    b2.loop("j", 2, [&](Expr j) { b2.store(y2, i + j, load(x2, i)); });
  });
  std::vector<const StmtNode *> loops2;
  loopsOf(parallelize(b2.finish()).Body, loops2);
  CHECK(loops2[0]->Loop == LoopKind::Serial);
}

TEST_CASE("iterationsIndependent accepts interleaved stores that cannot meet", "[schedule]") {
  // y[i + 5k], k < 4: iterations i < 5 write disjoint elements; i < 6
  // would meet (i = 5, k = 0 and i = 0, k = 1).
  for (int64_t n : {5, 6}) {
    KernelBuilder b("interleaved");
    Buffer x = b.param("x", DType::F32, 32), y = b.param("y", DType::F32, 32);
    b.loop("i", n, [&](Expr i) {
      b.loop("k", 4, [&](Expr k) { b.store(y, i + k * 5, load(x, i + k * 5) * 2.0); });
    });
    Kernel k = b.finish();
    std::vector<const StmtNode *> loops;
    loopsOf(k.Body, loops);
    CHECK(iterationsIndependent(*loops[0]) == (n == 5));
  }
}

namespace {

/// The statements of kind `kind` in `s`, and the shared buffers allocated.
int countStmts(const Stmt &s, StmtKind kind, bool sharedAllocs = false) {
  int n = 0;
  visitStmts(s, [&](const Stmt &st) {
    if (st->Kind == kind &&
        (!sharedAllocs || (st->Buf && st->Buf->Kind == BufferKind::Shared)))
      ++n;
  });
  return n;
}

std::vector<float> interpretGpu(const Kernel &k, const std::vector<float> &x, size_t n) {
  std::vector<float> y(n, -1.0f);
  interpret(k, {const_cast<float *>(x.data()), y.data()});
  return y;
}

} // namespace

TEST_CASE("mapToGpu: a block per row shares reductions among its threads", "[schedule][gpu]") {
  // A softmax-like row: the max, then the sum of exponentials (storing them),
  // then a scale; 48 rows of 300 (not a multiple of the block size).
  const int64_t rows = 48, len = 300;
  KernelBuilder b("rows");
  Buffer x = b.param("x", DType::F32, rows * len), y = b.param("y", DType::F32, rows * len);
  b.loop("r", rows, [&](Expr r) {
    Local mx = b.local("mx", constant(DType::F32, -INFINITY));
    b.loop("k", len, [&](Expr k) { b.set(mx, max(mx.get(), load(x, r * len + k))); });
    Local sum = b.local("sum", constant(DType::F32, 0));
    b.loop("k", len, [&](Expr k) {
      Expr e = unary(UnOp::Exp, load(x, r * len + k) - mx.get());
      b.store(y, r * len + k, e);
      b.set(sum, sum.get() + e);
    });
    b.loop("k", len, [&](Expr k) {
      b.store(y, r * len + k, load(y, r * len + k) / sum.get());
    });
  });
  Kernel k = b.finish();
  Kernel g = mapToGpu(k, asGpu());
  std::vector<Launch> launches = launchesOf(g);
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].Blocks == rows);
  CHECK(launches[0].Threads == 256);
  CHECK(countStmts(g.Body, StmtKind::Barrier) > 2);
  CHECK(countStmts(g.Body, StmtKind::Alloc, true) == 4); // mx, sum and their trees
  std::vector<float> in((size_t)(rows * len));
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
  std::vector<float> want = interpretGpu(k, in, in.size()), got = interpretGpu(g, in, in.size());
  for (size_t i = 0; i < in.size(); ++i)
    REQUIRE(got[i] == Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("mapToGpu: a reduction to one value runs on one block", "[schedule][gpu]") {
  const int64_t n = 5000;
  KernelBuilder b("total");
  Buffer x = b.param("x", DType::F32, n), y = b.param("y", DType::F32, 1);
  Local acc = b.local("acc", constant(DType::F32, 0.5)); // an initial value to keep
  b.loop("k", n, [&](Expr k) { b.set(acc, acc.get() + load(x, k)); });
  b.store(y, indexConst(0), acc.get());
  Kernel k = b.finish();
  Kernel g = mapToGpu(k, asGpu());
  std::vector<Launch> launches = launchesOf(g);
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].Blocks == 1);
  CHECK(launches[0].Threads == 256);
  std::vector<float> in((size_t)n);
  for (int64_t i = 0; i < n; ++i)
    in[(size_t)i] = (float)(i % 7) * 0.25f;
  CHECK(interpretGpu(g, in, 1)[0] == Approx(interpretGpu(k, in, 1)[0]).epsilon(1e-6));
}

TEST_CASE("mapToGpu: a contraction runs in shared-memory tiles", "[schedule][gpu]") {
  // y[i, j] = relu(1 + sum_k a[i, k] * b[k, j]): 40 x 24 outputs, k = 50,
  // none a multiple of the tile.
  const int64_t M = 40, N = 24, K = 50;
  KernelBuilder b("product");
  Buffer x = b.param("x", DType::F32, M * K + K * N), y = b.param("y", DType::F32, M * N);
  b.loop("i", M, [&](Expr i) {
    b.loop("j", N, [&](Expr j) {
      Local acc = b.local("acc", constant(DType::F32, 1));
      b.loop("k", K, [&](Expr k) {
        b.set(acc, acc.get() + load(x, i * K + k) * load(x, M * K + k * N + j));
      });
      b.store(y, i * N + j, max(acc.get(), 0.0));
    });
  });
  Kernel k = b.finish();
  Kernel g = mapToGpu(k, asGpu());
  std::vector<Launch> launches = launchesOf(g);
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].Blocks == 3 * 2);
  CHECK(launches[0].Threads == 256);
  CHECK(countStmts(g.Body, StmtKind::Alloc, true) == 3); // two factor tiles, the sums
  std::vector<float> in((size_t)(M * K + K * N));
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = (float)((i * 29) % 23) / 8.0f - 1.5f;
  // The sums run in the serial order: the same values, exactly.
  CHECK(interpretGpu(g, in, (size_t)(M * N)) == interpretGpu(k, in, (size_t)(M * N)));
}
