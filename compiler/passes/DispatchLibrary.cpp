//===- DispatchLibrary.cpp - Matrix products a library runs ---------------===//
//
// dispatch-library (targets with a matrix-product library: CUDA and
// cuBLAS; a no-op elsewhere and with --no-library-dispatch): float matrix
// products become mlcc.Gemm nodes (compiler/ops/LibraryGemm.cpp), whose
// kernels carry the product's description (kir::GemmCall) for the emitter
// to call the library with; what the product's op adds to it becomes
// ordinary nodes that fuse-ops then fuses into the next kernel:
//
//   MatMul   A [..., M, K] x B [..., K, N]: B 2-D (A's batch folds into M),
//            A 2-D (B's batch strided, A's stride 0), or equal batches.
//            Other broadcasts and 1-D operands keep the generated kernel.
//   Gemm     alpha * op(A) * op(B), then Add(beta * C) when C is given.
//   Conv     1x1, stride 1, no padding, one group: per image, W [M, C] x
//            X [C, H*W] (a batch of images with W's stride 0), then the
//            bias as an Add of [M, 1, ...] when given (a constant).
//
// Other convolutions stay generated kernels (one thread per output).
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

namespace mlcc::passes {

namespace {

struct Product {
  int64_t Batch = 1, M = 0, N = 0, K = 0;
  bool TransA = false, TransB = false;
  int64_t Lda = 0, Ldb = 0, StrideA = 0, StrideB = 0;
  double Alpha = 1;
};

bool f32(const ir::Node &n, size_t i) { return n.hasInput(i) && n.inDType(i) == DType::F32; }

std::optional<Product> matMulProduct(const ir::Node &n) {
  const Shape &a = n.inShape(0), &b = n.inShape(1);
  if (a.size() < 2 || b.size() < 2)
    return std::nullopt;
  Product p;
  p.K = a.back();
  p.N = b.back();
  p.Lda = p.K;
  p.Ldb = p.N;
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  if (bb.empty() || numElements(bb) == 1) {
    p.M = numElements(a) / p.K; // A's batch and rows as one matrix
  } else if (ba.empty() || numElements(ba) == 1) {
    p.M = a[a.size() - 2];
    p.Batch = numElements(bb);
    p.StrideB = p.K * p.N;
  } else if (ba == bb) {
    p.M = a[a.size() - 2];
    p.Batch = numElements(ba);
    p.StrideA = p.M * p.K;
    p.StrideB = p.K * p.N;
  } else {
    return std::nullopt;
  }
  return p;
}

std::optional<Product> gemmProduct(const ir::Node &n) {
  const Shape &a = n.inShape(0), &b = n.inShape(1);
  if (a.size() != 2 || b.size() != 2)
    return std::nullopt;
  Product p;
  p.TransA = n.attrInt("transA", 0) != 0;
  p.TransB = n.attrInt("transB", 0) != 0;
  p.M = p.TransA ? a[1] : a[0];
  p.K = p.TransA ? a[0] : a[1];
  p.N = p.TransB ? b[0] : b[1];
  p.Lda = a[1];
  p.Ldb = b[1];
  p.Alpha = n.attrFloat("alpha", 1.0);
  return p;
}

/// A 1x1 convolution that is a product per image (see the file comment).
std::optional<Product> convProduct(const ir::Node &n) {
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  if (x.size() < 3 || w.size() != x.size() || n.attrInt("group", 1) != 1 ||
      (n.hasInput(2) && !n.Inputs[2]->Const))
    return std::nullopt;
  for (size_t d = 2; d < w.size(); ++d)
    if (w[d] != 1)
      return std::nullopt;
  for (int64_t s : n.attrInts("strides", {}))
    if (s != 1)
      return std::nullopt;
  for (int64_t pad : n.attrInts("pads", {}))
    if (pad != 0)
      return std::nullopt;
  const Shape &y = n.Outputs[0]->Type.Dims;
  if (!std::equal(x.begin() + 2, x.end(), y.begin() + 2))
    return std::nullopt;
  Product p;
  p.Batch = x[0];
  p.M = w[0];
  p.K = x[1];
  p.N = numElements(Shape(x.begin() + 2, x.end()));
  p.Lda = p.K;
  p.Ldb = p.N;
  p.StrideB = p.K * p.N;
  return p;
}

} // namespace

bool dispatchLibrary(ir::Graph &g) {
  std::vector<std::unique_ptr<ir::Node>> nodes;
  bool changed = false;
  ir::Value *guard = nullptr; // the guard of the node being replaced
  auto addNode = [&](const std::string &base, const std::string &op,
                     std::vector<ir::Value *> inputs, ir::Value *out) {
    auto m = std::make_unique<ir::Node>();
    m->Guard = guard;
    m->Name = g.uniqueNodeName(base + "/" + op);
    m->OpType = op;
    m->Opset = 13;
    m->Inputs = std::move(inputs);
    out->Producer = m.get();
    m->Outputs = {out};
    nodes.push_back(std::move(m));
  };
  for (auto &n : g.Nodes) {
    guard = n->Guard;
    std::optional<Product> p;
    bool usable = n->Domain.empty() && f32(*n, 0) && f32(*n, 1) && n->Outputs.size() == 1 &&
                  n->Outputs[0] && n->Outputs[0]->Type.numel() > 0 &&
                  n->Outputs[0]->Type.Type == DType::F32;
    if (usable && n->OpType == "MatMul")
      p = matMulProduct(*n);
    else if (usable && n->OpType == "Gemm")
      p = gemmProduct(*n);
    else if (usable && n->OpType == "Conv")
      p = convProduct(*n);
    if (!p || p->K == 0 || std::max({p->Batch, p->M, p->N, p->K}) > INT32_MAX) {
      nodes.push_back(std::move(n));
      continue;
    }
    // The bias a Gemm or Conv adds after the product.
    ir::Value *bias = nullptr;
    double beta = 1;
    if (n->OpType == "Gemm" && n->hasInput(2)) {
      bias = n->Inputs[2];
      beta = n->attrFloat("beta", 1.0);
    } else if (n->OpType == "Conv" && n->hasInput(2)) {
      Shape dims(n->inShape(0).size() - 1, 1);
      dims[0] = n->inShape(1)[0];
      bias = g.addValue(g.uniqueValueName(n->Inputs[2]->Name + ".per_channel"),
                        {DType::F32, dims});
      bias->Const = std::make_shared<Tensor>(DType::F32, dims, n->Inputs[2]->Const->denseBytes());
    }
    ir::Value *y = n->Outputs[0];
    std::string base = n->Name, op = n->OpType;
    n->Domain = "mlcc";
    n->OpType = "Gemm";
    n->Opset = 1;
    ir::Value *a = n->Inputs[0], *b = n->Inputs[1];
    n->Inputs = op == "Conv" ? std::vector<ir::Value *>{b, a} : std::vector<ir::Value *>{a, b};
    std::map<std::string, ir::Attribute> attrs;
    auto set = [&](const char *k, int64_t v) { attrs[k] = ir::intAttr(v); };
    set("batch", p->Batch);
    set("m", p->M);
    set("n", p->N);
    set("k", p->K);
    set("trans_a", p->TransA);
    set("trans_b", p->TransB);
    set("lda", p->Lda);
    set("ldb", p->Ldb);
    set("ldc", p->N);
    set("stride_a", p->StrideA);
    set("stride_b", p->StrideB);
    set("stride_c", p->M * p->N);
    attrs["alpha"].Kind = ir::AttrKind::Float;
    attrs["alpha"].F = p->Alpha;
    attrs["shape"].Kind = ir::AttrKind::Ints;
    attrs["shape"].Ints = y->Type.Dims;
    n->Attrs = std::move(attrs);
    if (!bias || beta == 0) {
      nodes.push_back(std::move(n));
      changed = true;
      continue;
    }
    ir::Value *product = g.addValue(g.uniqueValueName(y->Name + ".product"), y->Type);
    product->Producer = n.get();
    n->Outputs = {product};
    nodes.push_back(std::move(n));
    if (beta != 1) {
      ir::Value *scale = g.addValue(g.uniqueValueName(base + ".beta"), {DType::F32, {}});
      scale->Const = std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, {}, {beta}));
      ir::Value *scaled = g.addValue(g.uniqueValueName(bias->Name + ".scaled"));
      addNode(base, "Mul", {bias, scale}, scaled);
      bias = scaled;
    }
    addNode(base, "Add", {product, bias}, y);
    changed = true;
  }
  g.Nodes = std::move(nodes);
  return changed;
}

} // namespace mlcc::passes
