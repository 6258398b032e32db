//===- MatMulNBits.cpp - com.microsoft MatMulNBits: 2/4/8-bit weights ------===//
//
// Y[..., n] = sum_k A[..., k] * (q[n, k] - zp[n, k / bs]) * scale[n, k / bs]
//             (+ bias[n])
//
// ONNX Runtime's weight-only quantized matrix product, how its quantizer and
// model builders ship small language models. B holds the codes q of each
// output row n block by block ([N, k_blocks, blob], blob = bs * bits / 8
// bytes, low bits first); scales and the optional zero points are per row
// and block ([N * k_blocks]; zero points packed like B as uint8, or floats of
// A's type; absent: 2^(bits-1)). fuse-qdq rewrites a MatMul of a blocked or
// per-channel DequantizeLinear of 4-bit constant weights into this op
// (compiler/passes/FuseQdq.cpp), so both spellings take this kernel.
//
// The kernel keeps B as it is stored (packed, in flash) and unpacks it in
// registers. Per row of A, the row is split by position within a byte into
// e = 8 / bits arrays (A_r[j] = A[e*j + r], zero past K), and the sum of
// each block of A is kept, so that the zero point costs one product per
// block: sum_k a_k (q_k - z) s = s * (sum_k a_k q_k) - s * z * sum_k a_k.
// Then for each output n, a row of partial sums over P consecutive bytes
// accumulates s * sum_r A_r[j] * ((byte >> r*bits) & mask) for every byte j
// of B's row: the loop over those P bytes has independent iterations and
// contiguous loads, so the vectorizer makes it vector arithmetic (bytes
// widened to f32 lanes); the plan gives its width (a vector of the target's
// f32 lanes) and the rows of A that go in a group, each byte of B unpacked
// once for the group (KernelPlan::NBitsRows, NBitsLanes).
//
// A's rows may follow a dimension known only at run time (--dim), when they
// are the leading elements of its buffer. g_idx (act-order) is not supported. accuracy_level is a hint (the
// arithmetic is f32 for every A type).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Lowering.h"

namespace mlcc::ops {

using namespace kir;

namespace {

struct NBitsShape {
  int64_t K, N, Bits, Block, KBlocks, Blob, ZpBytes;
  bool FloatZp = false, HasZp = false, HasBias = false;
};

NBitsShape nbitsShape(const ir::Node &n) {
  NBitsShape s;
  s.K = n.attrInt("K", -1);
  s.N = n.attrInt("N", -1);
  s.Bits = n.attrInt("bits", 4);
  s.Block = n.attrInt("block_size", -1);
  if (s.K <= 0 || s.N <= 0)
    n.error() << "attributes K and N are required and positive, got K " << s.K << ", N "
              << s.N;
  if (s.Bits != 2 && s.Bits != 4 && s.Bits != 8)
    n.error(ErrorKind::Unsupported) << "bits must be 2, 4 or 8, got " << s.Bits;
  if (s.Block < 16 || (s.Block & (s.Block - 1)) != 0)
    n.error() << "block_size must be a power of 2 of at least 16, got " << s.Block;
  s.KBlocks = (s.K + s.Block - 1) / s.Block;
  s.Blob = s.Block * s.Bits / 8;
  s.ZpBytes = (s.KBlocks * s.Bits + 7) / 8;
  s.HasZp = n.hasInput(3);
  s.HasBias = n.hasInput(5);
  if (s.HasZp)
    s.FloatZp = isFloat(n.inDType(3));
  return s;
}

void inferMatMulNBits(ir::Node &n) {
  NBitsShape s = nbitsShape(n);
  requireFloat(n, 0);
  const Shape &a = n.inShape(0);
  if (a.empty() || a.back() != s.K)
    n.error() << "A of shape " << shapeToString(a) << " must end in K = " << s.K;
  if (n.inDType(1) != DType::U8)
    n.error() << "B must be uint8, got " << dtypeOnnxName(n.inDType(1));
  if (numElements(n.inShape(1)) != s.N * s.KBlocks * s.Blob)
    n.error() << "B of shape " << shapeToString(n.inShape(1)) << " must hold N x k_blocks x "
              << "blob = " << s.N << " x " << s.KBlocks << " x " << s.Blob << " bytes";
  if (n.inDType(2) != n.inDType(0))
    n.error() << "scales must have A's type " << dtypeOnnxName(n.inDType(0));
  if (numElements(n.inShape(2)) != s.N * s.KBlocks)
    n.error() << "scales of shape " << shapeToString(n.inShape(2)) << " must hold N x k_blocks = "
              << s.N * s.KBlocks << " values";
  if (s.HasZp) {
    if (s.FloatZp ? n.inDType(3) != n.inDType(0) : n.inDType(3) != DType::U8)
      n.error() << "zero_points must be uint8 or A's type, got " << dtypeOnnxName(n.inDType(3));
    int64_t want = s.FloatZp ? s.N * s.KBlocks : s.N * s.ZpBytes;
    if (numElements(n.inShape(3)) != want)
      n.error() << "zero_points of shape " << shapeToString(n.inShape(3)) << " must hold " << want
                << (s.FloatZp ? " values" : " bytes");
  }
  if (n.hasInput(4))
    n.error(ErrorKind::Unsupported) << "g_idx (act-order) is not supported";
  if (s.HasBias && numElements(n.inShape(5)) != s.N)
    n.error() << "bias of shape " << shapeToString(n.inShape(5)) << " must hold N = " << s.N
              << " values";
  Shape y = a;
  y.back() = s.N;
  n.setOutput(0, n.inDType(0), y);
}

/// Bytes of B that one row's partial sums cover: the plan's lanes (a
/// vector of the target's), at most a block's bytes, a power of two (a
/// block's bytes are one).
int64_t partialBytes(const NBitsShape &s, int64_t lanes) {
  int64_t p = 1;
  while (p * 2 <= std::min(s.Blob, lanes))
    p *= 2;
  return p;
}

void lowerMatMulNBits(LowerCtx &c) {
  const NBitsShape s = nbitsShape(c.node());
  TensorRef a = c.in(0), b = c.in(1), scales = c.in(2), y = c.out(0);
  std::optional<TensorRef> zp, bias;
  if (s.HasZp)
    zp = c.in(3);
  if (s.HasBias)
    bias = c.in(5);
  KernelBuilder &kb = c.b();
  const DType f = DType::F32, i32 = DType::I32;
  const int64_t per = 8 / s.Bits, mask = (1 << s.Bits) - 1;
  const int64_t rows = numElements(a.shape()) / s.K;
  const int64_t bytesPerRow = s.KBlocks * s.Blob; // of B, and of each A_r
  // Rows of A taken together (the plan's): each byte of B is unpacked once
  // for all of them (a prompt's rows; a decode step has one).
  const ir::KernelPlan &plan = c.node().Plan;
  const int64_t R = std::max<int64_t>(1, std::min<int64_t>(rows, plan.NBitsRows));
  const int64_t P = partialBytes(s, std::max<int64_t>(1, plan.NBitsLanes)), chunks = s.Blob / P;
  // The rows' A split by position within a byte, and each block's sums.
  TensorRef split = c.scratch("a_split", f, {R, per, bytesPerRow});
  TensorRef sums = c.scratch("a_sums", f, {R, s.KBlocks});

  // Rows [m0, m0 + g) of Y.
  auto group = [&](const Expr &m0, int64_t g) {
    kb.loop("r", g, [&](Expr r) {
      kb.loop("e", per, [&](Expr e) {
        kb.loop("j", bytesPerRow, [&](Expr j) {
          Expr k = j * per + e;
          Expr v = select(lt(k, indexConst(s.K)),
                          cast(f, a.loadFlat((m0 + r) * s.K + min(k, indexConst(s.K - 1)))),
                          constant(f, 0));
          split.store({r, e, j}, v);
        });
      });
      kb.loop("kb", s.KBlocks, [&](Expr blk) {
        Local acc = kb.local("sum", constant(f, 0));
        kb.loop("e", per, [&](Expr e) {
          kb.loop("j", s.Blob, [&](Expr j) {
            kb.set(acc, acc.get() + split.load({r, e, blk * s.Blob + j}));
          });
        });
        sums.store({r, blk}, acc.get());
      });
    });
    kb.loop("n", s.N, [&](Expr n) {
      Local part = kb.local("part", f, g * P);
      Local corr = kb.local("corr", f, g);
      kb.loop("p", g * P, [&](Expr p) { kb.set(part, p, constant(f, 0)); });
      kb.loop("r", g, [&](Expr r) { kb.set(corr, r, constant(f, 0)); });
      kb.loop("kb", s.KBlocks, [&](Expr blk) {
        Expr sc = cast(f, scales.loadFlat(n * s.KBlocks + blk));
        Expr z;
        if (!zp) {
          z = constant(f, (double)(1 << (s.Bits - 1)));
        } else if (s.FloatZp) {
          z = cast(f, zp->loadFlat(n * s.KBlocks + blk));
        } else {
          Expr byte = cast(i32, zp->loadFlat(n * s.ZpBytes + blk / per));
          Expr shift = cast(i32, (blk % per) * s.Bits);
          z = cast(f, binary(BinOp::BitAnd, binary(BinOp::Shr, byte, shift),
                             constantInt(i32, mask)));
        }
        Local scz = kb.local("scz", sc * z);
        for (int64_t r = 0; r < g; ++r)
          kb.set(corr, indexConst(r),
                 corr.get(indexConst(r)) + scz.get() * sums.load({indexConst(r), blk}));
        kb.loop("c", chunks, [&](Expr ch) {
          kb.loop("p", P, [&](Expr p) {
            Expr j = blk * s.Blob + ch * P + p;
            Expr byte = cast(i32, b.loadFlat(n * bytesPerRow + j));
            std::vector<Expr> q;
            for (int64_t e = 0; e < per; ++e)
              q.push_back(cast(f, s.Bits == 8 ? byte
                                              : binary(BinOp::BitAnd,
                                                       e ? binary(BinOp::Shr, byte,
                                                                  constantInt(i32, e * s.Bits))
                                                         : byte,
                                                       constantInt(i32, mask))));
            for (int64_t r = 0; r < g; ++r) {
              Expr dot;
              for (int64_t e = 0; e < per; ++e) {
                Expr t = split.load({indexConst(r), indexConst(e), j}) * q[(size_t)e];
                dot = dot ? dot + t : t;
              }
              Expr at = p + r * P;
              kb.set(part, at, part.get(at) + sc * dot);
            }
          });
        });
      });
      kb.loop("r", g, [&](Expr r) {
        Local total = kb.local("total", constant(f, 0));
        kb.loop("p", P, [&](Expr p) { kb.set(total, total.get() + part.get(r * P + p)); });
        Expr v = total.get() - corr.get(r);
        if (bias)
          v = v + cast(f, bias->loadFlat(n));
        y.storeFlat((m0 + r) * s.N + n, v);
      });
    });
  };
  // The rows when the kernel runs: a prompt's length may be known only then
  // (--dim seq=1..MAX): whole groups, then the rest in a group of its size.
  Expr rowsAt = indexConst(rows);
  if (a.bounded()) {
    rowsAt = a.numelAtRunTime(s.K);
    if (!rowsAt || !y.numelAtRunTime(s.N))
      c.node().error(ErrorKind::Unsupported)
          << "A's rows follow a run-time dimension with other axes of more than one before it";
  }
  kb.loopTo("mg", rowsAt / R, [&](Expr mg) { group(mg * R, R); });
  for (int64_t g = 1; g < R; ++g)
    kb.ifThen(eq(rowsAt % R, indexConst(g)), [&] { group(rowsAt - g, g); });
}

} // namespace

MLCC_OPS(MatMulNBits) {
  R.add({.Domain = "com.microsoft", .Name = "MatMulNBits", .SinceVersion = 1,
         .Fusion = FusionClass::Opaque, .Infer = inferMatMulNBits,
         .Lower = lowerMatMulNBits, .RunTimeExtents = true});
}

} // namespace mlcc::ops
