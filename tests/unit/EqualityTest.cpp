// Structural equality and hashing of kernel IR (compiler/kernel/Equality.h):
// equal exactly when the printed form is equal, hashes consistent with it.
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Equality.h"
#include "compiler/kernel/Mutator.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

using namespace mlcc;
using namespace mlcc::kir;

namespace {

/// One kernel, and the ways a variant of it differs.
struct Variant {
  double Scale = 2.0;            ///< a constant
  DType Compute = DType::F32;    ///< the type of a cast
  int Lanes = 4;                 ///< the lanes of a load and store
  int64_t Extent = 16;           ///< a loop bound
  bool StoreToZ = false;         ///< the buffer stored to
  int64_t InputSize = 64;        ///< a buffer's size
  LoopKind Loop = LoopKind::Serial;
  std::string Suffix;            ///< appended to every name
};

Buffer param(const std::string &name, int64_t size) {
  return std::make_shared<BufferNode>(BufferNode{name, DType::F32, size, BufferKind::Param});
}

/// for i in [0, Extent): out[i*Lanes +Lanes] = f32(Compute(x[i*Lanes +Lanes]) * Scale),
/// with a local accumulator around it.
Kernel makeKernel(const Variant &v) {
  const std::string &s = v.Suffix;
  Buffer x = param("x" + s, v.InputSize), y = param("y" + s, 64), z = param("z" + s, 64);
  auto acc = std::make_shared<BufferNode>(BufferNode{"acc" + s, DType::F32, 1, BufferKind::Local});
  Var i = newVar("i" + s);
  Expr index = varRef(i) * v.Lanes;
  Expr value = cast(DType::F32, cast(v.Compute, vload(x, index, v.Lanes)) *
                                    constant(v.Compute, v.Scale));
  Stmt body = block({store(acc, indexConst(0), constant(DType::F32, 0)),
                     forLoop(i, indexConst(0), indexConst(v.Extent),
                             store(v.StoreToZ ? z : y, index, value), v.Loop)});
  Kernel k;
  k.Name = "k" + s;
  k.Params = {x, y, z};
  k.Body = alloc(acc, body);
  k.finalize();
  return k;
}

/// What the printed-text key said; the structural key must say the same.
void checkAgreesWithPrint(const Kernel &a, const Kernel &b) {
  bool textEqual = print(a, false) == print(b, false);
  CHECK(structuralEqual(a, b) == textEqual);
  CHECK((structuralCompare(a, b) == 0) == textEqual);
  CHECK(structuralCompare(a, b) == -structuralCompare(b, a));
  if (textEqual)
    CHECK(structuralHash(a) == structuralHash(b));
}

void checkAgreesWithPrint(const Expr &a, const Expr &b) {
  bool textEqual = print(a) == print(b);
  CHECK(structuralEqual(a, b) == textEqual);
  CHECK(structuralCompare(a, b) == -structuralCompare(b, a));
  if (textEqual)
    CHECK(structuralHash(a) == structuralHash(b));
}

Expr f64Const(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return constant(DType::F64, d);
}

} // namespace

TEST_CASE("a kernel built twice is equal to itself and hashes alike", "[kernel][equality]") {
  Kernel a = makeKernel({}), b = makeKernel({});
  REQUIRE(a.Body != b.Body); // distinct nodes, the same structure
  CHECK(structuralEqual(a, b));
  CHECK(structuralCompare(a, b) == 0);
  CHECK(structuralHash(a) == structuralHash(b));
  checkAgreesWithPrint(a, b);

  // Names are ignored, as in the printed key: a consistent renaming of the
  // kernel, its buffers and its variable is the same kernel.
  Variant renamed;
  renamed.Suffix = "_other";
  Kernel c = makeKernel(renamed);
  CHECK(structuralEqual(a, c));
  CHECK(structuralHash(a) == structuralHash(c));
  checkAgreesWithPrint(a, c);
}

TEST_CASE("kernels differing in one thing are unequal", "[kernel][equality]") {
  Kernel base = makeKernel({});
  std::vector<std::pair<const char *, Variant>> variants;
  Variant v;
  v.Scale = 3.0;
  variants.push_back({"a constant", v});
  v = {};
  v.Compute = DType::F64;
  variants.push_back({"a cast's type", v});
  v.Scale = std::nextafter(2.0, 3.0); // one ulp of an f64 constant
  Kernel f64 = makeKernel(v);
  Variant f64Base;
  f64Base.Compute = DType::F64;
  CHECK_FALSE(structuralEqual(makeKernel(f64Base), f64));
  v = {};
  v.Lanes = 8;
  v.Extent = 8;
  variants.push_back({"lanes (same elements)", v});
  v = {};
  v.Extent = 15;
  variants.push_back({"a loop bound", v});
  v = {};
  v.StoreToZ = true;
  variants.push_back({"the buffer stored to", v});
  v = {};
  v.InputSize = 128;
  variants.push_back({"a buffer's size", v});
  v = {};
  v.Loop = LoopKind::Parallel;
  variants.push_back({"a loop's kind", v});

  std::vector<Kernel> kernels = {base};
  for (auto &[what, variant] : variants) {
    INFO(what);
    Kernel k = makeKernel(variant);
    CHECK_FALSE(structuralEqual(base, k));
    CHECK(structuralCompare(base, k) != 0);
    CHECK(structuralHash(base) != structuralHash(k)); // not required, but expected
    kernels.push_back(k);
  }
  for (const Kernel &a : kernels)
    for (const Kernel &b : kernels)
      checkAgreesWithPrint(a, b);
}

TEST_CASE("a kernel key finds an equal kernel in hashed and ordered maps", "[kernel][equality]") {
  std::unordered_map<KernelKey, int> hashed;
  std::map<KernelKey, int> ordered;
  Variant other;
  other.Extent = 15;
  hashed.emplace(KernelKey(makeKernel({})), 1);
  hashed.emplace(KernelKey(makeKernel(other)), 2);
  ordered.emplace(KernelKey(makeKernel({})), 1);
  ordered.emplace(KernelKey(makeKernel(other)), 2);
  Variant renamed;
  renamed.Suffix = "_2";
  REQUIRE(hashed.size() == 2);
  CHECK(hashed.at(KernelKey(makeKernel(renamed))) == 1);
  CHECK(hashed.at(KernelKey(makeKernel(other))) == 2);
  REQUIRE(ordered.size() == 2);
  CHECK(ordered.at(KernelKey(makeKernel(renamed))) == 1);
  CHECK(ordered.at(KernelKey(makeKernel(other))) == 2);
}

TEST_CASE("expressions compare by their variables' and buffers' names", "[kernel][equality]") {
  Var i = newVar("i"), i2 = newVar("i"), j = newVar("j");
  Buffer x = param("x", 8), x2 = param("x", 8), w = param("w", 8);
  // Distinct variables of one name print alike on their own...
  CHECK(structuralEqual(varRef(i), varRef(i2)));
  CHECK(structuralEqual(load(x, varRef(i)), load(x2, varRef(i2))));
  // ...but not where one expression holds both (i and i_1).
  CHECK_FALSE(structuralEqual(varRef(i) + varRef(i), varRef(i) + varRef(i2)));
  CHECK_FALSE(structuralEqual(varRef(i), varRef(j)));
  CHECK_FALSE(structuralEqual(load(x, varRef(i)), load(w, varRef(i))));
  CHECK_FALSE(structuralEqual(vload(x, varRef(i), 4), vload(x, varRef(i), 4, 2)));
  CHECK_FALSE(structuralEqual(varRef(i) * 2, varRef(i) * 3));

  std::vector<Expr> all = {varRef(i), varRef(i2), varRef(j), varRef(i) + varRef(i),
                           varRef(i) + varRef(i2), varRef(i2) + varRef(i), varRef(i) * 2,
                           load(x, varRef(i)), load(x2, varRef(i)), load(w, varRef(i)),
                           vload(x, varRef(i), 4), vload(x, varRef(i), 4, 2),
                           broadcast(load(x, varRef(j)), 4), indexConst(1), boolConst(true),
                           constantInt(DType::I64, 1), constant(DType::F32, 1.0),
                           constant(DType::F64, 1.0), cast(DType::F64, load(x, varRef(i)))};
  for (const Expr &a : all)
    for (const Expr &b : all)
      checkAgreesWithPrint(a, b);
}

TEST_CASE("float constants compare by bits; NaNs only by sign", "[kernel][equality]") {
  Expr zero = constant(DType::F64, 0.0), negZero = constant(DType::F64, -0.0);
  CHECK_FALSE(structuralEqual(zero, negZero));
  Expr nan1 = f64Const(0x7ff8000000000000ull), nan2 = f64Const(0x7ff8000000000001ull);
  Expr negNan = f64Const(0xfff8000000000000ull);
  REQUIRE(std::isnan(nan2->FloatValue));
  CHECK(structuralEqual(nan1, nan2)); // print() shows both as nan
  CHECK(structuralHash(nan1) == structuralHash(nan2));
  CHECK_FALSE(structuralEqual(nan1, negNan));
  for (const Expr &a : {zero, negZero, nan1, nan2, negNan})
    for (const Expr &b : {zero, negZero, nan1, nan2, negNan})
      checkAgreesWithPrint(a, b);
}

TEST_CASE("expression keys merge equal expressions in maps", "[kernel][equality]") {
  Var i = newVar("i"), i2 = newVar("i");
  std::map<ExprKey, int> ordered;
  std::unordered_map<ExprKey, int> hashed;
  for (const Expr &e : {varRef(i) * 4 + 1, varRef(i2) * 4 + 1, varRef(i) * 4 + 2}) {
    ++ordered[ExprKey(e)];
    ++hashed[ExprKey(e)];
  }
  CHECK(ordered.size() == 2);
  CHECK(hashed.size() == 2);
  CHECK(ordered.at(ExprKey(varRef(i) * 4 + 1)) == 2);
  CHECK(hashed.at(ExprKey(varRef(i) * 4 + 1)) == 2);
}
