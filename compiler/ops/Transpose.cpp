//===- Transpose.cpp - Transpose ------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <numeric>

namespace mlcc::ops {

using namespace kir;

namespace {

std::vector<int64_t> permOf(const ir::Node &n) {
  size_t r = n.inShape(0).size();
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty()) {
    perm.resize(r);
    for (size_t i = 0; i < r; ++i)
      perm[i] = (int64_t)(r - 1 - i);
  }
  if (perm.size() != r)
    n.error() << "perm has " << perm.size() << " entries for a rank-" << r << " input";
  std::vector<bool> seen(r, false);
  for (int64_t &p : perm) {
    p = normalizeAxis(n, p, (int64_t)r, "perm entry");
    if (seen[(size_t)p])
      n.error() << "perm repeats axis " << p;
    seen[(size_t)p] = true;
  }
  return perm;
}

void inferTranspose(ir::Node &n) {
  std::vector<int64_t> perm = permOf(n);
  Shape out;
  for (int64_t p : perm)
    out.push_back(n.inShape(0)[(size_t)p]);
  n.setOutput(0, n.inDType(0), out);
}

void lowerTranspose(LowerCtx &c) {
  std::vector<int64_t> perm = permOf(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  c.b().loops(y.extents(), [&](const std::vector<Expr> &o) {
    std::vector<Expr> src(o.size());
    for (size_t i = 0; i < perm.size(); ++i)
      src[(size_t)perm[i]] = o[i];
    y.store(o, x.load(src));
  });
}

/// A permutation that keeps the axes longer than 1 in their order moves
/// no element: the output is the input's bytes.
std::optional<std::vector<int64_t>> transposeSelection(const ir::Node &n) {
  std::vector<int64_t> perm = permOf(n);
  const Shape &in = n.inShape(0);
  int64_t previous = -1;
  for (int64_t p : perm) {
    if (in[(size_t)p] == 1)
      continue;
    if (p < previous)
      return std::nullopt;
    previous = p;
  }
  if (numElements(in) == 0)
    return std::nullopt;
  return std::vector<int64_t>{0};
}

} // namespace

MLCC_OPS(Transpose) {
  R.add({.Name = "Transpose", .SinceVersion = 1, .Fusion = FusionClass::Injective,
         .Infer = inferTranspose, .Lower = lowerTranspose, .Selection = transposeSelection,
         .RunTimeExtents = true, .DenseOperands = true});
}

} // namespace mlcc::ops
