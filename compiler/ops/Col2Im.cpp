//===- Col2Im.cpp - Col2Im -------------------------------------------------===//
//
// The image and block shape inputs must be compile-time constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <numeric>

namespace mlcc::ops {

using namespace kir;

namespace {

// --- Col2Im ---------------------------------------------------------------

struct Col2ImPlan {
  Shape Image, Block, Blocks;
  std::vector<int64_t> Strides, Dilations, PadBegin;
  int64_t C = 0;
};

Col2ImPlan col2imPlan(const ir::Node &n) {
  Col2ImPlan p;
  p.Image = n.constInputInts(1, "the image shape determines the output shape");
  p.Block = n.constInputInts(2, "the block shape determines the computation");
  size_t r = p.Image.size();
  const Shape &in = n.inShape(0);
  if (in.size() != 3)
    n.error() << "input must have rank 3, got " << shapeToString(in);
  if (p.Block.size() != r || r == 0)
    n.error() << "image_shape and block_shape must have the same nonzero length";
  p.Strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
  p.Dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
  if (p.Strides.size() != r || p.Dilations.size() != r || pads.size() != 2 * r)
    n.error() << "strides, dilations and pads must match the image rank " << r;
  int64_t bsize = 1, nblocks = 1;
  for (size_t d = 0; d < r; ++d) {
    if (p.Block[d] < 1 || p.Strides[d] < 1 || p.Dilations[d] < 1 || p.Image[d] < 0)
      n.error() << "invalid block, stride, dilation or image extent";
    int64_t eff = p.Dilations[d] * (p.Block[d] - 1) + 1;
    int64_t cnt = (p.Image[d] + pads[d] + pads[d + r] - eff) / p.Strides[d] + 1;
    if (cnt < 1)
      n.error() << "the block does not fit the padded image on axis " << d;
    p.Blocks.push_back(cnt);
    p.PadBegin.push_back(pads[d]);
    bsize *= p.Block[d];
    nblocks *= cnt;
  }
  if (in[1] % bsize)
    n.error() << "input channels " << in[1] << " are not a multiple of the block size "
              << bsize;
  if (in[2] != nblocks)
    n.error() << "input has " << in[2] << " blocks, expected " << nblocks;
  p.C = in[1] / bsize;
  return p;
}

void inferCol2Im(ir::Node &n) {
  requireNumeric(n, 0);
  Col2ImPlan p = col2imPlan(n);
  Shape out = {n.inShape(0)[0], p.C};
  out.insert(out.end(), p.Image.begin(), p.Image.end());
  n.setOutput(0, n.inDType(0), out);
}

void lowerCol2Im(LowerCtx &c) {
  Col2ImPlan p = col2imPlan(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  KernelBuilder &b = c.b();
  DType ct = y.computeType();
  size_t r = p.Image.size();
  // Each output pixel sums the (block offset, block position) pairs that
  // land on it; iterate over those pairs and accumulate into the output.
  b.loop("i", y.numel(), [&](Expr i) { y.storeFlat(i, constant(ct, 0)); });
  int64_t nb = x.shape()[0];
  b.loop("n", nb, [&](Expr n) {
    b.loop("c", p.C, [&](Expr ch) {
      b.loops(p.Block, [&](const std::vector<Expr> &k) {
        b.loops(p.Blocks, [&](const std::vector<Expr> &l) {
          Expr inside = boolConst(true);
          std::vector<Expr> pos(r);
          Expr kFlat = indexConst(0), lFlat = indexConst(0);
          for (size_t d = 0; d < r; ++d) {
            pos[d] = l[d] * p.Strides[d] - p.PadBegin[d] + k[d] * p.Dilations[d];
            inside = land(inside, land(ge(pos[d], indexConst(0)),
                                       lt(pos[d], indexConst(p.Image[d]))));
            kFlat = kFlat * p.Block[d] + k[d];
            lFlat = lFlat * p.Blocks[d] + l[d];
          }
          int64_t bsize = x.shape()[1] / p.C;
          b.ifThen(inside, [&] {
            std::vector<Expr> yi = {n, ch};
            yi.insert(yi.end(), pos.begin(), pos.end());
            y.store(yi, y.load(yi) + x.load({n, ch * bsize + kFlat, lFlat}));
          });
        }, "l");
      }, "k");
    });
  });
}

} // namespace

MLCC_OPS(Col2Im) {
  R.add({.Name = "Col2Im", .SinceVersion = 18, .Fusion = FusionClass::Opaque,
         .Infer = inferCol2Im, .Lower = lowerCol2Im});
}

} // namespace mlcc::ops
