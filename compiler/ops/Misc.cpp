//===- Misc.cpp - Compress, NonZero, Unique, CenterCropPad, Col2Im --------===//
//
// Compress, NonZero and Unique have output shapes that depend on input
// values: the condition of Compress, and the whole input of NonZero and
// Unique, must be compile-time constants (the data of Compress stays a
// run-time value: the kernel copies the selected runs). CenterCropPad and
// Col2Im need their shape inputs constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

#include <algorithm>
#include <numeric>

namespace mlcc::ops {

using namespace kir;

namespace {

// --- Compress -------------------------------------------------------------

struct CompressPlan {
  bool Flat;    ///< no axis: the input is flattened
  int64_t Axis; ///< when !Flat
  std::vector<std::pair<int64_t, int64_t>> Runs; ///< selected [begin, end)
  int64_t Count = 0;
  Shape Out;
};

CompressPlan compressPlan(const ir::Node &n) {
  CompressPlan p;
  const Shape &in = n.inShape(0);
  p.Flat = !n.hasAttr("axis");
  p.Axis = p.Flat ? 0 : normalizeAxis(n, n.attrInt("axis", 0), (int64_t)in.size());
  int64_t len = p.Flat ? numElements(in) : in[(size_t)p.Axis];
  TensorPtr cond = n.constInput(1, "the condition determines the output shape");
  if (cond->rank() != 1)
    n.error() << "condition must be a 1-D tensor";
  int64_t cn = cond->numel();
  for (int64_t i = 0; i < cn; ++i) {
    if (!cond->intAt(i))
      continue;
    if (i >= len)
      n.error() << "condition selects element " << i << " of an axis of extent " << len;
    if (!p.Runs.empty() && p.Runs.back().second == i)
      p.Runs.back().second = i + 1;
    else
      p.Runs.push_back({i, i + 1});
    ++p.Count;
  }
  if (p.Flat) {
    p.Out = {p.Count};
  } else {
    p.Out = in;
    p.Out[(size_t)p.Axis] = p.Count;
  }
  return p;
}

void inferCompress(ir::Node &n) {
  requireDType(n, 1, {DType::Bool});
  CompressPlan p = compressPlan(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerCompress(LowerCtx &c) {
  CompressPlan p = compressPlan(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  int64_t at = 0;
  for (auto [b, e] : p.Runs) {
    if (p.Flat) {
      c.b().loop("i", e - b, [&](Expr i) { y.storeFlat(i + at, x.loadFlat(i + b)); });
    } else {
      Shape s = y.shape();
      s[(size_t)p.Axis] = e - b;
      c.b().loops(s, [&](const std::vector<Expr> &o) {
        std::vector<Expr> src = o, dst = o;
        src[(size_t)p.Axis] = o[(size_t)p.Axis] + b;
        dst[(size_t)p.Axis] = o[(size_t)p.Axis] + at;
        y.store(dst, x.load(src));
      });
    }
    at += e - b;
  }
}

// --- NonZero --------------------------------------------------------------

/// Multi-indices of the nonzero elements, row-major order.
std::vector<int64_t> nonZeroFlat(const ir::Node &n, TensorPtr &t) {
  t = n.constInput(0, "the number of nonzero elements determines the output shape");
  std::vector<int64_t> idx;
  bool fp = isFloat(t->dtype());
  for (int64_t i = 0; i < t->numel(); ++i)
    if (fp ? t->doubleAt(i) != 0 : t->intAt(i) != 0)
      idx.push_back(i);
  return idx;
}

void inferNonZero(ir::Node &n) {
  TensorPtr t;
  std::vector<int64_t> idx = nonZeroFlat(n, t);
  n.setOutput(0, DType::I64, {(int64_t)t->rank(), (int64_t)idx.size()});
}

void lowerNonZero(LowerCtx &c) {
  TensorPtr t;
  std::vector<int64_t> idx = nonZeroFlat(c.node(), t);
  TensorRef y = c.out(0);
  const Shape &s = t->shape();
  int64_t cnt = (int64_t)idx.size();
  for (int64_t k = 0; k < cnt; ++k) {
    int64_t rem = idx[(size_t)k];
    for (int64_t d = (int64_t)s.size() - 1; d >= 0; --d) {
      int64_t e = s[(size_t)d];
      y.storeFlat(indexConst(d * cnt + k), constantInt(DType::I64, rem % e));
      rem /= e;
    }
  }
}

// --- Unique ---------------------------------------------------------------

struct UniquePlan {
  int64_t Axis = -1; ///< -1: flattened
  int64_t Outer = 1, Len = 0, Inner = 1; ///< input viewed as [Outer, Len, Inner]
  std::vector<int64_t> First;   ///< per unique slice: first occurrence
  std::vector<int64_t> Inverse; ///< per input slice: its unique slice
  std::vector<int64_t> Counts;
  Shape Out;
};

UniquePlan uniquePlan(const ir::Node &n) {
  TensorPtr t = n.constInput(0, "the unique values determine the output shape");
  UniquePlan p;
  const Shape &s = t->shape();
  if (n.hasAttr("axis")) {
    p.Axis = normalizeAxis(n, n.attrInt("axis", 0), (int64_t)s.size());
    for (int64_t d = 0; d < (int64_t)s.size(); ++d)
      (d < p.Axis ? p.Outer : p.Inner) *= d == p.Axis ? 1 : s[(size_t)d];
    p.Len = s[(size_t)p.Axis];
  } else {
    p.Len = t->numel();
  }
  bool fp = isFloat(t->dtype());
  auto elem = [&](int64_t slice, int64_t o, int64_t i) {
    return (o * p.Len + slice) * p.Inner + i;
  };
  // Three-way comparison of two slices.
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < p.Outer; ++o)
      for (int64_t i = 0; i < p.Inner; ++i) {
        int64_t ea = elem(a, o, i), eb = elem(b, o, i);
        if (fp) {
          double x = t->doubleAt(ea), y = t->doubleAt(eb);
          if (x != y)
            return x < y ? -1 : 1;
        } else {
          int64_t x = t->intAt(ea), y = t->intAt(eb);
          if (x != y) {
            if (isUnsignedInt(t->dtype()))
              return (uint64_t)x < (uint64_t)y ? -1 : 1;
            return x < y ? -1 : 1;
          }
        }
      }
    return 0;
  };
  p.Inverse.assign((size_t)p.Len, -1);
  for (int64_t k = 0; k < p.Len; ++k) {
    bool found = false;
    for (size_t u = 0; u < p.First.size(); ++u)
      if (cmp(k, p.First[u]) == 0) {
        p.Inverse[(size_t)k] = (int64_t)u;
        ++p.Counts[u];
        found = true;
        break;
      }
    if (!found) {
      p.Inverse[(size_t)k] = (int64_t)p.First.size();
      p.First.push_back(k);
      p.Counts.push_back(1);
    }
  }
  if (n.attrInt("sorted", 1)) {
    std::vector<int64_t> order(p.First.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return cmp(p.First[(size_t)a], p.First[(size_t)b]) < 0;
    });
    std::vector<int64_t> rank(order.size()), first, counts;
    for (size_t r = 0; r < order.size(); ++r) {
      rank[(size_t)order[r]] = (int64_t)r;
      first.push_back(p.First[(size_t)order[r]]);
      counts.push_back(p.Counts[(size_t)order[r]]);
    }
    for (int64_t &v : p.Inverse)
      v = rank[(size_t)v];
    p.First = first;
    p.Counts = counts;
  }
  int64_t u = (int64_t)p.First.size();
  if (p.Axis < 0) {
    p.Out = {u};
  } else {
    p.Out = s;
    p.Out[(size_t)p.Axis] = u;
  }
  return p;
}

void inferUnique(ir::Node &n) {
  UniquePlan p = uniquePlan(n);
  int64_t u = (int64_t)p.First.size();
  n.setOutput(0, n.inDType(0), p.Out);
  n.setOutput(1, DType::I64, {u});
  n.setOutput(2, DType::I64, {p.Len});
  n.setOutput(3, DType::I64, {u});
}

void lowerUnique(LowerCtx &c) {
  UniquePlan p = uniquePlan(c.node());
  TensorRef x = c.in(0);
  int64_t u = (int64_t)p.First.size();
  if (c.hasOut(0)) {
    TensorRef y = c.out(0);
    for (int64_t k = 0; k < u; ++k) {
      int64_t src = p.First[(size_t)k];
      c.b().loop("o", p.Outer, [&](Expr o) {
        c.b().loop("i", p.Inner, [&](Expr i) {
          y.storeFlat((o * u + k) * p.Inner + i,
                      x.loadFlat((o * p.Len + src) * p.Inner + i));
        });
      });
    }
  }
  auto storeInts = [&](size_t out, const std::vector<int64_t> &v) {
    if (!c.hasOut(out))
      return;
    TensorRef y = c.out(out);
    for (size_t k = 0; k < v.size(); ++k)
      y.storeFlat(indexConst((int64_t)k), constantInt(DType::I64, v[k]));
  };
  storeInts(1, p.First);
  storeInts(2, p.Inverse);
  storeInts(3, p.Counts);
}

// --- CenterCropPad --------------------------------------------------------

struct CropPlan {
  std::vector<int64_t> Offset; ///< input index = output index + offset
  Shape Out;
};

CropPlan cropPlan(const ir::Node &n) {
  const Shape &in = n.inShape(0);
  int64_t r = (int64_t)in.size();
  std::vector<int64_t> shape =
      n.constInputInts(1, "the target shape determines the output shape");
  std::vector<int64_t> axes = n.attrInts("axes");
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i)
      axes.push_back(i);
  if (axes.size() != shape.size())
    n.error() << "shape has " << shape.size() << " entries for " << axes.size()
              << " axes";
  CropPlan p;
  p.Offset.assign((size_t)r, 0);
  p.Out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t d = (size_t)normalizeAxis(n, axes[i], r);
    int64_t target = shape[i];
    if (target < 0)
      n.error() << "negative target extent " << target;
    p.Out[d] = target;
    // Crop: start rounded down; pad: the odd pixel goes to the end.
    p.Offset[d] = in[d] >= target ? (in[d] - target) / 2 : -((target - in[d]) / 2);
  }
  return p;
}

void inferCenterCropPad(ir::Node &n) {
  CropPlan p = cropPlan(n);
  n.setOutput(0, n.inDType(0), p.Out);
}

void lowerCenterCropPad(LowerCtx &c) {
  CropPlan p = cropPlan(c.node());
  TensorRef x = c.in(0), y = c.out(0);
  DType ct = y.computeType();
  c.b().loops(y.shape(), [&](const std::vector<Expr> &o) {
    Expr inside = boolConst(true);
    std::vector<Expr> src(o.size());
    for (size_t d = 0; d < o.size(); ++d) {
      src[d] = o[d] + p.Offset[d];
      int64_t e = x.shape()[d];
      if (p.Offset[d] < 0 || p.Out[d] + p.Offset[d] > e) {
        inside = land(inside, land(ge(src[d], indexConst(0)), lt(src[d], indexConst(e))));
        src[d] = clamp(src[d], indexConst(0), indexConst(std::max<int64_t>(e - 1, 0)));
      }
    }
    if (x.numel() == 0) {
      y.store(o, constant(ct, 0));
      return;
    }
    y.store(o, select(inside, x.load(src), constant(ct, 0)));
  });
}

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

MLCC_OPS(Misc) {
  R.add({.Name = "Compress", .SinceVersion = 9, .Fusion = FusionClass::Injective,
         .Infer = inferCompress, .Lower = lowerCompress});
  R.add({.Name = "NonZero", .SinceVersion = 9, .Fusion = FusionClass::Opaque,
         .Infer = inferNonZero, .Lower = lowerNonZero});
  R.add({.Name = "Unique", .SinceVersion = 11, .Fusion = FusionClass::Opaque,
         .Infer = inferUnique, .Lower = lowerUnique});
  R.add({.Name = "CenterCropPad", .SinceVersion = 18,
         .Fusion = FusionClass::Injective, .Infer = inferCenterCropPad,
         .Lower = lowerCenterCropPad});
  R.add({.Name = "Col2Im", .SinceVersion = 18, .Fusion = FusionClass::Opaque,
         .Infer = inferCol2Im, .Lower = lowerCol2Im});
}

} // namespace mlcc::ops
