//===- LibraryGemm.cpp - mlcc.Gemm: a matrix product a library may run ----===//
//
// An internal op that dispatch-library puts in place of the matrix products
// a target hands to a library (the CUDA target: cuBLAS). Its attributes are
// the product's description, kir::GemmCall, over the flat operands:
//
//   mlcc.Gemm {batch, m, n, k, trans_a, trans_b, lda, ldb, ldc, stride_a,
//              stride_b, stride_c, alpha, shape}(A, B) -> C
//     C[b*stride_c + i*ldc + j] = alpha * sum_p opA(b, i, p) * opB(b, p, j)
//     opA(b, i, p) = A[b*stride_a + (trans_a ? p*lda + i : i*lda + p)]
//     opB(b, p, j) = B[b*stride_b + (trans_b ? j*ldb + p : p*ldb + j)]
//     C has the dims `shape` and is dense (every element is written).
//
// The kernel's body computes exactly that, so the interpreter (constant
// folding), the CPU emitters and a GPU target that compiles the kernel
// instead of calling the library all agree with the library call that the
// description stands for. The op takes no fused epilogue: what followed the
// product (a bias, an activation) runs in the next kernel.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

GemmCall describe(const ir::Node &n) {
  GemmCall g;
  g.Batch = n.requireInt("batch");
  g.M = n.requireInt("m");
  g.N = n.requireInt("n");
  g.K = n.requireInt("k");
  g.TransA = n.attrInt("trans_a", 0) != 0;
  g.TransB = n.attrInt("trans_b", 0) != 0;
  g.Lda = n.requireInt("lda");
  g.Ldb = n.requireInt("ldb");
  g.Ldc = n.requireInt("ldc");
  g.StrideA = n.attrInt("stride_a", 0);
  g.StrideB = n.attrInt("stride_b", 0);
  g.StrideC = n.attrInt("stride_c", 0);
  g.Alpha = n.attrFloat("alpha", 1.0);
  // Every element each operand's description reaches must exist.
  auto extent = [](int64_t batch, int64_t stride, int64_t rows, int64_t ld, int64_t cols) {
    return (batch - 1) * stride + (rows - 1) * ld + cols;
  };
  int64_t ra = g.TransA ? g.K : g.M, ca = g.TransA ? g.M : g.K;
  int64_t rb = g.TransB ? g.N : g.K, cb = g.TransB ? g.K : g.N;
  if (g.Batch < 1 || g.M < 1 || g.N < 1 || g.K < 1 || g.Lda < ca || g.Ldb < cb ||
      g.Ldc < g.N || extent(g.Batch, g.StrideA, ra, g.Lda, ca) > n.inType(0).numel() ||
      extent(g.Batch, g.StrideB, rb, g.Ldb, cb) > n.inType(1).numel() ||
      g.Batch * g.M * g.N != numElements(n.requireInts("shape")))
    n.error(ErrorKind::Internal) << "internal error: a matrix product description that "
                                    "does not fit its operands";
  return g;
}

void inferGemm(ir::Node &n) {
  requireDType(n, 0, {DType::F32});
  requireDType(n, 1, {DType::F32});
  n.setOutput(0, DType::F32, n.requireInts("shape"));
  describe(n);
}

void lowerGemm(LowerCtx &c) {
  GemmCall g = describe(c.node());
  TensorRef a = c.in(0), b = c.in(1), y = c.out(0);
  if (y.writeOnly())
    c.node().error(ErrorKind::Unsupported) << "a library matrix product takes no epilogue";
  // C is dense with ldc = n and stride_c = m * n (dispatch-library writes
  // no other), so its elements are the flat output in order.
  if (g.Ldc != g.N || (g.Batch > 1 && g.StrideC != g.M * g.N))
    c.node().error(ErrorKind::Internal) << "internal error: a strided matrix product result";
  auto &kb = c.b();
  kb.loops({g.Batch, g.M, g.N}, [&](const std::vector<Expr> &i) {
    Local acc = kb.local("acc", constant(DType::F32, 0));
    kb.loop("p", g.K, [&](Expr p) {
      Expr ai = i[0] * g.StrideA + (g.TransA ? p * g.Lda + i[1] : i[1] * g.Lda + p);
      Expr bi = i[0] * g.StrideB + (g.TransB ? i[2] * g.Ldb + p : p * g.Ldb + i[2]);
      kb.set(acc, acc.get() + a.loadFlat(ai) * b.loadFlat(bi));
    });
    Expr v = acc.get();
    if (g.Alpha != 1)
      v = v * constant(DType::F32, g.Alpha);
    y.storeFlat((i[0] * g.M + i[1]) * g.N + i[2], v);
  });
  g.A = a.buffer();
  g.B = b.buffer();
  g.C = y.buffer();
  // An operand folded into the code (a splat constant) has no memory for a
  // library to read: the kernel then runs as generated.
  if (g.A && g.B && g.C)
    kb.setGemm(std::make_shared<const GemmCall>(g));
}

} // namespace

MLCC_OPS(LibraryGemm) {
  R.add({.Domain = "mlcc", .Name = "Gemm", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferGemm, .Lower = lowerGemm});
}

} // namespace mlcc::ops
