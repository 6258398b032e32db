//===- Pack.cpp - mlcc.PackPanels: weights in the layout a kernel reads ---===//
//
// An internal op that pack-weights inserts in front of a contraction whose
// weights are constant; infer-and-fold then evaluates it like any other
// node (the interpreter runs this lowering), so the packed weights are
// computed at compile time by the one definition below.
//
//   mlcc.PackPanels {groups=G, cols=C, panel=P, transposed=T}(W)
//     W is read as a matrix of G*C columns by K rows: element (column j,
//     row k) is W[j*K + k] (T=0, e.g. Conv weights [M, C/g, kh, kw] or Gemm
//     B with transB) or W[k*C + j] (T=1, G=1: MatMul B [K, N]).
//     Output [G, ceil(C/P), K, P]: for each group and panel of P columns,
//     the K rows of P consecutive columns, zero past the last column, so a
//     kernel loads a panel row as contiguous vectors.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"
#include "compiler/ops/Requantization.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct PackGeometry {
  int64_t Groups, Cols, Panel, Rows;
  bool Transposed;
};

PackGeometry packGeometry(const ir::Node &n) {
  PackGeometry g;
  g.Groups = n.requireInt("groups");
  g.Cols = n.requireInt("cols");
  g.Panel = n.requireInt("panel");
  g.Transposed = n.attrInt("transposed", 0) != 0;
  int64_t total = n.inType(0).numel();
  if (g.Groups < 1 || g.Cols < 1 || g.Panel < 1 || total % (g.Groups * g.Cols) ||
      (g.Transposed && g.Groups != 1))
    n.error() << "cannot pack " << shapeToString(n.inShape(0)) << " as " << g.Groups
              << " groups of " << g.Cols << " columns";
  g.Rows = total / (g.Groups * g.Cols);
  return g;
}

void inferPackPanels(ir::Node &n) {
  PackGeometry g = packGeometry(n);
  n.setOutput(0, n.inDType(0),
              {g.Groups, (g.Cols + g.Panel - 1) / g.Panel, g.Rows, g.Panel});
}

void lowerPackPanels(LowerCtx &c) {
  PackGeometry g = packGeometry(c.node());
  TensorRef w = c.in(0), y = c.out(0);
  int64_t full = g.Cols / g.Panel, panels = (g.Cols + g.Panel - 1) / g.Panel;
  auto src = [&](const Expr &group, const Expr &row, const Expr &col) {
    return g.Transposed ? row * g.Cols + col : (group * g.Cols + col) * g.Rows + row;
  };
  // Full panels: a copy per panel row. The last panel, when partial, is
  // zero past the last column.
  c.b().loops({g.Groups, full, g.Rows, g.Panel}, [&](const std::vector<Expr> &i) {
    y.store(i, w.loadFlat(src(i[0], i[2], i[1] * g.Panel + i[3])));
  }, "i");
  if (full == panels)
    return;
  c.b().loops({g.Groups, g.Rows, g.Panel}, [&](const std::vector<Expr> &i) {
    Expr col = indexConst(full * g.Panel) + i[2];
    Expr j = min(col, indexConst(g.Cols - 1)); // in bounds; masked below
    y.store({i[0], indexConst(full), i[1], i[2]},
            select(lt(col, indexConst(g.Cols)), w.loadFlat(src(i[0], i[1], j)),
                   constant(w.computeType(), 0)));
  }, "i");
}

/// The int32 of the four bytes of a quad in the order `pairs` says: 0 as
/// they are (the operand of dot4); 1 v0, v2, v1, v3, so that sext_bytes02
/// of it is the dot2 operand pair (v0, v1) and sext_bytes13 (v2, v3) (the
/// int8 products in pairs on Cortex-M smlad).
Expr packQuad(std::vector<Expr> bytes, bool pairs) {
  if (pairs)
    std::swap(bytes[1], bytes[2]);
  return requant::byteQuad(bytes);
}

/// The dot2 operand of two int8 weights (bytes zero-extended into int32):
/// each sign-extended into a 16-bit half, `lo` the low one.
Expr packPair(const Expr &lo, const Expr &hi) {
  auto sext = [](const Expr &byte) { return cast(DType::I32, cast(DType::I8, byte)); };
  return requant::halfPair(sext(lo), sext(hi));
}

/// PackQuads: int8 weights [M, C, k...] as int32 [M, ceil(C / 4), k...]
/// whose four bytes are the weights of four consecutive input channels
/// (zero past C): the operand layout of the int8 dot product (dot4) over
/// channel quads (see DotConv.cpp), or with pairs = 1 of dot2 over channel
/// pairs (see packQuad, IntegerConv.cpp). With pairs = 2, int32 [M,
/// ceil(C / 4), k..., 2]: each quad as its two dot2 operands, channels
/// (0, 2) and (1, 3) as sign-extended 16-bit halves (the plan's DotPairs).
void inferPackQuads(ir::Node &n) {
  const Shape &w = n.inShape(0);
  if (n.inDType(0) != DType::I8 || w.size() < 2)
    n.error(ErrorKind::Internal) << "PackQuads needs int8 weights [M, C, ...]";
  Shape out = w;
  out[1] = (w[1] + 3) / 4;
  if (n.attrInt("pairs", 0) == 2)
    out.push_back(2);
  n.setOutput(0, DType::I32, out);
}

void lowerPackQuads(LowerCtx &c) {
  TensorRef w = c.in(0), y = c.out(0);
  const Shape &ws = w.shape();
  int64_t m = ws[0], ch = ws[1], cq = (ch + 3) / 4, inner = numElements(ws) / (m * ch);
  c.b().loops({m, cq, inner}, [&](const std::vector<Expr> &i) {
    std::vector<Expr> bytes;
    for (int64_t j = 0; j < 4; ++j) {
      Expr channel = i[1] * 4 + j;
      Expr inside = lt(channel, indexConst(ch));
      Expr src = (i[0] * ch + min(channel, indexConst(ch - 1))) * inner + i[2];
      Expr byte = cast(DType::I32, cast(DType::U8, w.loadFlat(src)));
      bytes.push_back(select(inside, byte, constantInt(DType::I32, 0)));
    }
    Expr at = (i[0] * cq + i[1]) * inner + i[2];
    if (c.node().attrInt("pairs", 0) == 2) {
      y.storeFlat(at * 2, packPair(bytes[0], bytes[2]));
      y.storeFlat(at * 2 + 1, packPair(bytes[1], bytes[3]));
      return;
    }
    y.storeFlat(at, packQuad(bytes, c.node().attrInt("pairs", 0)));
  }, "q");
}

/// PackQuadsK: int8 matrix B [K, N] (or [N, K] with transposed = 1) as
/// int32 [ceil(K / 4), N] whose four bytes are B(4q..4q+3, n) (zero past K):
/// the B operand of integer matrix products on dot4, or with pairs = 1 on
/// dot2 (see packQuad, IntegerMatMul.cpp). With columns = L > 0, per
/// column instead: [N, ceil(K / 4) rounded up to L], zero quads past K
/// (the plan's DotAlongK).
void inferPackQuadsK(ir::Node &n) {
  const Shape &w = n.inShape(0);
  if (n.inDType(0) != DType::I8 || w.size() != 2)
    n.error(ErrorKind::Internal) << "PackQuadsK needs an int8 matrix";
  bool t = n.attrInt("transposed", 0);
  int64_t k = t ? w[1] : w[0], cols = t ? w[0] : w[1], per = n.attrInt("columns", 0);
  if (per > 0)
    n.setOutput(0, DType::I32, {cols, ((k + 3) / 4 + per - 1) / per * per});
  else
    n.setOutput(0, DType::I32, {(k + 3) / 4, cols});
}

void lowerPackQuadsK(LowerCtx &c) {
  TensorRef w = c.in(0), y = c.out(0);
  bool t = c.node().attrInt("transposed", 0), columns = c.node().attrInt("columns", 0) > 0;
  const Shape &ws = w.shape();
  int64_t k = t ? ws[1] : ws[0], cols = t ? ws[0] : ws[1];
  int64_t kq = columns ? y.shape()[1] : (k + 3) / 4;
  c.b().loops({kq, cols}, [&](const std::vector<Expr> &i) {
    std::vector<Expr> bytes;
    for (int64_t j = 0; j < 4; ++j) {
      Expr r = i[0] * 4 + j;
      Expr rc = min(r, indexConst(k - 1));
      Expr byte = cast(DType::I32, cast(DType::U8, t ? w.load({i[1], rc}) : w.load({rc, i[1]})));
      bytes.push_back(select(lt(r, indexConst(k)), byte, constantInt(DType::I32, 0)));
    }
    Expr quad = packQuad(bytes, c.node().attrInt("pairs", 0));
    if (columns)
      y.store({i[1], i[0]}, quad);
    else
      y.store(i, quad);
  }, "q");
}

} // namespace

MLCC_OPS(Pack) {
  R.add({.Domain = "mlcc", .Name = "PackQuadsK", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferPackQuadsK, .Lower = lowerPackQuadsK});
  R.add({.Domain = "mlcc", .Name = "PackQuads", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferPackQuads, .Lower = lowerPackQuads});
  R.add({.Domain = "mlcc", .Name = "PackPanels", .SinceVersion = 1,
         .Fusion = FusionClass::Injective, .Infer = inferPackPanels,
         .Lower = lowerPackPanels});
}

} // namespace mlcc::ops
