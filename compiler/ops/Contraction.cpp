#include "compiler/ops/Contraction.h"

namespace mlcc::ops {

using namespace kir;

namespace {

/// Where a row of results accumulates: in the output itself, or scratch.
struct Row {
  TensorRef Buf;
  Expr Base; ///< flat offset of the row's first element in Buf
  Expr get(const Expr &j) const { return Buf.loadFlat(Base + j); }
  void set(const Expr &j, const Expr &v) const { Buf.storeFlat(Base + j, v); }
};

} // namespace

// ---------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------

Shape ConvShape::outShape() const {
  Shape out = {N, M};
  out.insert(out.end(), W.Out.begin(), W.Out.end());
  return out;
}

ConvShape convShape(const ir::Node &n, size_t xIdx, size_t wIdx) {
  const Shape &x = n.inShape(xIdx), &w = n.inShape(wIdx);
  if (x.size() < 3)
    n.error() << "input must have rank 3 or more, got " << shapeToString(x);
  if (w.size() != x.size())
    n.error() << "weights " << shapeToString(w) << " do not match input "
              << shapeToString(x);
  ConvShape s;
  s.N = x[0];
  s.C = x[1];
  s.M = w[0];
  s.Group = n.attrInt("group", 1);
  if (s.Group < 1 || s.C % s.Group || s.M % s.Group || w[1] * s.Group != s.C)
    n.error() << "channels (" << s.C << " in, " << s.M << " out, weights "
              << shapeToString(w) << ") do not fit group " << s.Group;
  s.InSpatial.assign(x.begin() + 2, x.end());
  std::vector<int64_t> kernel(w.begin() + 2, w.end());
  std::vector<int64_t> ks = n.attrInts("kernel_shape", kernel);
  if (ks != kernel)
    n.error() << "kernel_shape " << shapeToString(ks)
              << " does not match the weights " << shapeToString(w);
  s.W = computeWindow(n, s.InSpatial, kernel);
  return s;
}

void lowerConvolution(LowerCtx &c, const ConvShape &s, const TensorRef &y,
                      const ConvSpec &spec) {
  KernelBuilder &b = c.b();
  size_t r = s.W.rank();
  size_t last = r - 1;
  int64_t cPerGroup = s.C / s.Group, mPerGroup = s.M / s.Group;
  int64_t ow = s.W.Out[last];
  bool direct = !spec.Finish && y.dtype() == spec.Acc && !y.writeOnly();
  TensorRef scratch;
  if (!direct)
    scratch = c.scratch("row", spec.Acc, {ow});
  Shape outer(s.W.Out.begin(), s.W.Out.end() - 1);

  b.loop("n", s.N, [&](Expr n) {
    b.loop("m", s.M, [&](Expr m) {
      Expr g = m / mPerGroup;
      b.loops(outer, [&](const std::vector<Expr> &o) {
        std::vector<Expr> yi = {n, m};
        yi.insert(yi.end(), o.begin(), o.end());
        yi.push_back(indexConst(0));
        Row row = direct ? Row{y, y.offset(yi)} : Row{scratch, indexConst(0)};
        Expr init = spec.Init ? spec.Init(m) : constant(spec.Acc, 0);
        b.loop("j", ow, [&](Expr j) { row.set(j, init); });
        b.loop("ic", cPerGroup, [&](Expr ic) {
          Expr ch = g * cPerGroup + ic;
          std::vector<Expr> k(r);
          std::function<void(size_t)> rec = [&](size_t d) {
            if (d < last) { // outer kernel axes: clip to this output row
              auto [lo, hi] = validKernelRange(o[d], s.W.Strides[d], s.W.Dilations[d],
                                               s.W.PadBegin[d], s.W.Kernel[d],
                                               s.InSpatial[d]);
              b.loop("k" + std::to_string(d), lo, hi, [&](Expr kd) {
                k[d] = kd;
                rec(d + 1);
              });
              return;
            }
            // Innermost: every kernel offset, the outputs it reaches.
            b.loop("k" + std::to_string(d), s.W.Kernel[d], [&](Expr kd) {
              k[d] = kd;
              std::vector<Expr> wi = {m, ic};
              wi.insert(wi.end(), k.begin(), k.end());
              Expr wv = spec.LoadW(wi);
              // The outputs this kernel offset reaches inside the image.
              auto [lo, hi] = affineRange(kd * s.W.Dilations[d] - s.W.PadBegin[d],
                                          s.W.Strides[d], s.InSpatial[d], ow);
              b.loop("ow", lo, hi, [&](Expr j) {
                std::vector<Expr> xi = {n, ch};
                for (size_t i = 0; i < last; ++i)
                  xi.push_back(o[i] * s.W.Strides[i] + k[i] * s.W.Dilations[i] -
                               s.W.PadBegin[i]);
                xi.push_back(j * s.W.Strides[d] + kd * s.W.Dilations[d] -
                             s.W.PadBegin[d]);
                row.set(j, row.get(j) + spec.LoadX(xi) * wv);
              });
            });
          };
          rec(0);
        });
        if (!direct) {
          Expr base = y.offset(yi);
          b.loop("j", ow, [&](Expr j) {
            y.storeFlat(base + j, spec.Finish ? spec.Finish(row.get(j), m) : row.get(j));
          });
        }
      }, "o");
    });
  });
}

void lowerConvolutionPerOutput(LowerCtx &c, const ConvShape &s, const TensorRef &y,
                               const ConvSpec &spec) {
  KernelBuilder &b = c.b();
  size_t r = s.W.rank();
  int64_t cPerGroup = s.C / s.Group, mPerGroup = s.M / s.Group;
  b.loops(s.outShape(), [&](const std::vector<Expr> &yi) {
    Expr n = yi[0], m = yi[1];
    std::vector<Expr> o(yi.begin() + 2, yi.end());
    Local acc = b.local("acc", spec.Init ? spec.Init(m) : constant(spec.Acc, 0));
    b.loop("ic", cPerGroup, [&](Expr ic) {
      Expr ch = m / mPerGroup * cPerGroup + ic;
      std::vector<Expr> k(r);
      std::function<void(size_t)> rec = [&](size_t d) {
        if (d == r) {
          std::vector<Expr> xi = {n, ch}, wi = {m, ic};
          for (size_t i = 0; i < r; ++i)
            xi.push_back(o[i] * s.W.Strides[i] + k[i] * s.W.Dilations[i] - s.W.PadBegin[i]);
          wi.insert(wi.end(), k.begin(), k.end());
          b.set(acc, acc.get() + spec.LoadX(xi) * spec.LoadW(wi));
          return;
        }
        // The kernel offsets whose input lies inside the image.
        auto [lo, hi] = validKernelRange(o[d], s.W.Strides[d], s.W.Dilations[d],
                                         s.W.PadBegin[d], s.W.Kernel[d], s.InSpatial[d]);
        b.loop("k" + std::to_string(d), lo, hi, [&](Expr kd) {
          k[d] = kd;
          rec(d + 1);
        });
      };
      rec(0);
    });
    y.store(yi, spec.Finish ? spec.Finish(acc.get(), m) : acc.get());
  }, "o");
}

// ---------------------------------------------------------------------------
// Matrix product
// ---------------------------------------------------------------------------

MatMulShape matmulShape(const ir::Node &n, const Shape &a0, const Shape &b0) {
  MatMulShape s;
  if (a0.empty() || b0.empty())
    n.error() << "matrix operands must have rank 1 or more";
  s.RankA = a0.size();
  s.RankB = b0.size();
  s.A = a0.size() == 1 ? Shape{1, a0[0]} : a0;
  s.B = b0.size() == 1 ? Shape{b0[0], 1} : b0;
  s.M = s.A[s.A.size() - 2];
  s.K = s.A.back();
  s.N = s.B.back();
  if (s.B[s.B.size() - 2] != s.K)
    n.error() << "cannot multiply " << shapeToString(a0) << " by " << shapeToString(b0);
  Shape ab(s.A.begin(), s.A.end() - 2), bb(s.B.begin(), s.B.end() - 2);
  s.Batch = broadcastShapes(n, {ab, bb});
  s.Out = s.Batch;
  if (a0.size() > 1)
    s.Out.push_back(s.M);
  if (b0.size() > 1)
    s.Out.push_back(s.N);
  return s;
}

std::vector<Expr> matmulOperandIndex(const MatMulShape &s, bool isA,
                                     const std::vector<Expr> &bi, const Expr &r,
                                     const Expr &c) {
  const Shape &shape = isA ? s.A : s.B;
  size_t origRank = isA ? s.RankA : s.RankB;
  std::vector<Expr> idx;
  size_t batchRank = shape.size() - 2, lead = bi.size() - batchRank;
  for (size_t d = 0; d < batchRank; ++d)
    idx.push_back(shape[d] == 1 ? indexConst(0) : bi[lead + d]);
  if (origRank == 1) { // the promoted axis is not in the buffer
    idx.push_back(isA ? c : r);
    return idx;
  }
  idx.push_back(r);
  idx.push_back(c);
  return idx;
}

void lowerMatrixProduct(LowerCtx &c, const MatMulShape &s, const TensorRef &y,
                        const MatMulSpec &spec) {
  KernelBuilder &b = c.b();
  std::vector<Expr> batch = s.BatchAt;
  if (batch.empty())
    for (int64_t e : s.Batch)
      batch.push_back(indexConst(e));
  const Expr M = s.MAt ? s.MAt : indexConst(s.M), K = s.KAt ? s.KAt : indexConst(s.K),
             N = s.NAt ? s.NAt : indexConst(s.N);
  if (c.node().Plan.PerOutput) {
    // One output per iteration, its sum in a local accumulator: the GPU
    // form (a thread per output, or tiles staged in shared memory).
    b.loops(batch, [&](const std::vector<Expr> &bi) {
      b.loopTo("i", M, [&](Expr i) {
        b.loopTo("j", N, [&](Expr j) {
          Local acc = b.local("acc", spec.Init ? spec.Init(bi, i, j) : constant(spec.Acc, 0));
          b.loopTo("k", K, [&](Expr k) {
            b.set(acc, acc.get() + spec.LoadA(bi, i, k) * spec.LoadB(bi, k, j));
          });
          std::vector<Expr> yi = bi;
          if (s.RankA > 1)
            yi.push_back(i);
          if (s.RankB > 1)
            yi.push_back(j);
          y.store(yi, spec.Finish ? spec.Finish(acc.get(), bi, i, j) : acc.get());
        });
      });
    }, "b");
    return;
  }
  auto outIndex = [&](const std::vector<Expr> &bi, const Expr &i, const Expr &j) {
    std::vector<Expr> yi = bi;
    if (s.RankA > 1)
      yi.push_back(i);
    if (s.RankB > 1)
      yi.push_back(j);
    return yi;
  };
  if (!N->isConst()) {
    // Columns known at run time: blocks of kLoopedRowBlock columns, each
    // summed in a local row (a constant width: its vectors stay in
    // registers over the reduction), then the columns left in one more.
    const int64_t W = kLoopedRowBlock;
    b.loops(batch, [&](const std::vector<Expr> &bi) {
      b.loopTo("i", M, [&](Expr i) {
        auto block = [&](const Expr &j0, const Expr &width) {
          Local acc = b.local("acc", spec.Acc, W);
          b.loopTo("j", width, [&](Expr j) {
            b.set(acc, j, spec.Init ? spec.Init(bi, i, j0 + j) : constant(spec.Acc, 0));
          });
          b.loopTo("k", K, [&](Expr k) {
            Expr av = spec.LoadA(bi, i, k);
            b.loopTo("j", width, [&](Expr j) {
              b.set(acc, j, acc.get(j) + av * spec.LoadB(bi, k, j0 + j));
            });
          });
          b.loopTo("j", width, [&](Expr j) {
            y.store(outIndex(bi, i, j0 + j),
                    spec.Finish ? spec.Finish(acc.get(j), bi, i, j0 + j) : acc.get(j));
          });
        };
        Expr whole = N / W;
        b.loopTo("jb", whole, [&](Expr jb) { block(jb * W, indexConst(W)); });
        Expr rest = N - whole * W;
        b.ifThen(gt(rest, indexConst(0)), [&] { block(whole * W, rest); });
      });
    }, "b");
    return;
  }
  bool direct = !spec.Finish && y.dtype() == spec.Acc && !y.writeOnly();
  TensorRef scratch;
  if (!direct)
    scratch = c.scratch("row", spec.Acc, {s.N});
  b.loops(batch, [&](const std::vector<Expr> &bi) {
    b.loopTo("i", M, [&](Expr i) {
      std::vector<Expr> yi = bi;
      if (s.RankA > 1)
        yi.push_back(i);
      if (s.RankB > 1)
        yi.push_back(indexConst(0));
      Expr base = y.offset(yi);
      Row row = direct ? Row{y, base} : Row{scratch, indexConst(0)};
      b.loopTo("j", N, [&](Expr j) {
        row.set(j, spec.Init ? spec.Init(bi, i, j) : constant(spec.Acc, 0));
      });
      b.loopTo("k", K, [&](Expr k) {
        Expr av = spec.LoadA(bi, i, k);
        b.loopTo("j", N, [&](Expr j) {
          row.set(j, row.get(j) + av * spec.LoadB(bi, k, j));
        });
      });
      if (!direct)
        b.loopTo("j", N, [&](Expr j) {
          y.storeFlat(base + j, spec.Finish ? spec.Finish(row.get(j), bi, i, j)
                                            : row.get(j));
        });
    });
  }, "b");
}

// ---------------------------------------------------------------------------
// Register-tiled contraction
// ---------------------------------------------------------------------------

std::optional<PackedOperand> packedOperand(const ir::Node &n) {
  if (!n.Plan.Register)
    return std::nullopt;
  PackedOperand p;
  p.Tile = *n.Plan.Register;
  p.PixelColumns = n.Plan.PixelColumns;
  p.Input = (size_t)std::max<int64_t>(n.Plan.PackedInput, 0);
  if (p.Tile.Lanes < 1 || p.Tile.Panel % p.Tile.Lanes || p.Tile.Rows < 1 ||
      p.Tile.ReduceBlock < 0 || p.Tile.RowBlock < 0 ||
      (!p.PixelColumns && !n.hasInput(p.Input)))
    n.error(ErrorKind::Internal) << "internal error: bad packed-operand attributes";
  return p;
}

namespace {

/// Whether a parallel contraction of `panels` panels and `rowUnits` row
/// tiles (or blocks) per panel runs its panels in parallel (else its row
/// units): Tile::ParallelPanels and ParallelRowUnits.
bool parallelOverPanels(const TiledContraction &t, int64_t panels, int64_t rowUnits) {
  return t.Parallel && panels > 1 &&
         (panels >= t.Tile.ParallelPanels || rowUnits < t.Tile.ParallelRowUnits);
}

/// lowerTiledContraction where t.RowsAt, when set, is at least one tile
/// (or, with ClampRows, any count).
void lowerTiles(LowerCtx &c, const TiledContraction &t) {
  KernelBuilder &b = c.b();
  // The accumulators' type: the plan's float16 (A and B are then read as
  // float16, and the finished sums widen to f32 for Store), or the caller's.
  const DType accType = t.Tile.HalfAccumulate ? DType::F16 : t.Acc;
  const int64_t L = t.Tile.Lanes, VM = t.Tile.Panel, NV = VM / L;
  const int64_t RW = std::min(t.Tile.Rows, t.Rows);
  const int64_t panels = (t.Cols + VM - 1) / VM;
  int64_t kred = 1;
  for (int64_t e : t.Reduce)
    kred *= e;
  const bool direct = t.LoadB != nullptr;
  MLCC_CHECK(direct || !t.ColsAt, "run-time columns of a packed B operand");
  const Expr panelsAt = t.ColsAt ? (t.ColsAt + (VM - 1)) / VM : indexConst(panels);
  const kir::Buffer &packed = t.PackedB.buffer();
  // A packed operand without a buffer is an inlined splat (every weight
  // the same value): its vectors are broadcasts.
  MLCC_CHECK(direct ? t.Cols >= VM : t.PackedB.numel() >= panels * kred * VM,
             "B operand of " << t.Cols << " columns for panels of " << VM);
  const int64_t rowTiles = (t.Rows + RW - 1) / RW;
  const int64_t U = std::max<int64_t>(1, t.Tile.Unroll);
  // Rows known at run time: tiles up to them, the last one shifted back.
  const bool runTimeRows = t.RowsAt && !t.RowsAt->isConst();
  const Expr rowTilesAt = runTimeRows ? (t.RowsAt + (RW - 1)) / RW : indexConst(rowTiles);
  const Expr lastRow = runTimeRows ? t.RowsAt - RW : indexConst(t.Rows - RW);
  MLCC_CHECK(!t.ClampRows || (runTimeRows && !t.RowsContiguous), "clamped rows without RowsAt");
  // Row r of A: with ClampRows, the last row for those past it.
  auto rowOf = [&](const Expr &r) { return t.ClampRows ? min(r, t.RowsAt - 1) : r; };

  // Cache blocking: the outermost reduction axis runs in blocks of `bc`
  // slices, and the row tiles of a block of `tilesPerBlock` tiles keep their
  // partial sums in memory between blocks.
  const int64_t outer = t.Reduce.empty() ? 1 : t.Reduce[0], inner = kred / std::max<int64_t>(outer, 1);
  int64_t bc = outer, tilesPerBlock = rowTiles;
  if (t.Tile.ReduceBlock > 0 && !t.Reduce.empty() && rowTiles > 1 && !runTimeRows &&
      !t.ReduceAt) {
    bc = std::clamp<int64_t>(t.Tile.ReduceBlock / std::max<int64_t>(inner, 1), 1, outer);
    tilesPerBlock = std::clamp<int64_t>(t.Tile.RowBlock / RW, 1, rowTiles);
  }
  const int64_t kBlocks = (outer + bc - 1) / bc;
  const bool blocked = kBlocks > 1;
  if (!blocked)
    tilesPerBlock = rowTiles;
  const int64_t rowBlocks = (rowTiles + tilesPerBlock - 1) / tilesPerBlock;

  auto accAt = [&](int64_t r, int64_t v) { return indexConst((r * NV + v) * L); };
  // Adds A(r0 + r, k) * B(k, panel p) for the reduction steps whose
  // outermost index is in [kBegin, kEnd) to the accumulators.
  // A(r0 + r, k), or the staged copy's element when the tile staged A.
  using LoadRow = std::function<Expr(int64_t r, const std::vector<Expr> &k)>;
  auto reduce = [&](const Local &acc, const Expr &p, const Expr &c0, const Expr &r0,
                    const Expr &kBegin, const Expr &kEnd, const LoadRow &staged = nullptr) {
    std::vector<Expr> k(t.Reduce.size());
    std::function<void(size_t)> rec = [&](size_t d) {
      if (d < t.Reduce.size()) {
        auto body = [&](Expr kd) {
          k[d] = kd;
          rec(d + 1);
        };
        if (d == 0 && U > 1 && kBegin->isConst() && kEnd->isConst() &&
            kEnd->IntValue - kBegin->IntValue >= U) {
          // U steps per iteration, then the steps left over.
          const int64_t k0 = kBegin->IntValue, steps = kEnd->IntValue - k0;
          b.loop("k0", steps / U, [&](Expr ku) {
            for (int64_t u = 0; u < U; ++u)
              body(ku * U + (k0 + u));
          });
          if (steps % U)
            b.loop("k0", indexConst(k0 + steps / U * U), kEnd, body);
        } else if (d == 0)
          b.loop("k0", kBegin, kEnd, body);
        else
          b.loop("k" + std::to_string(d), t.Reduce[d], body);
        return;
      }
      Expr kf = indexConst(0);
      for (size_t i = 0; i < k.size(); ++i)
        kf = kf * t.Reduce[i] + k[i];
      std::vector<Expr> bv;
      for (int64_t v = 0; v < NV; ++v)
        bv.push_back(direct  ? cast(accType, t.LoadB(k, c0 + v * L))
                     : packed ? cast(accType, vload(packed, ((t.FirstPanel + p) * kred + kf) * VM +
                                                              v * L,
                                                  (int)L))
                              : broadcast(cast(accType, t.PackedB.loadFlat(indexConst(0))), (int)L));
      for (int64_t r = 0; r < RW; ++r) {
        Expr a = staged ? staged(r, k) : cast(accType, t.LoadA(rowOf(r0 + r), k));
        for (int64_t v = 0; v < NV; ++v)
          b.store(acc.Buf, accAt(r, v),
                  vload(acc.Buf, accAt(r, v), (int)L) +
                      (t.Product ? t.Product(a, bv[(size_t)v]) : a * bv[(size_t)v]));
      }
    };
    rec(0);
  };
  // Stores the finished tile at rows r0.., columns c0.. of panel p; `sum`
  // reads its element (row r, column j).
  auto storeTile = [&](const Expr &p, const Expr &c0, const Expr &r0,
                       const std::function<Expr(const Expr &r, const Expr &j)> &sum) {
    // The columns that exist: a constant trip count per panel (the loops
    // vectorize), the last, partial panel in a branch of its own; with
    // columns known at run time, those up to them.
    auto overColumns = [&](const std::function<void(Expr)> &emit) {
      if (t.ColsAt)
        emit(min(indexConst(VM), t.ColsAt - c0));
      else if (direct || t.Cols % VM == 0)
        emit(indexConst(VM));
      else
        b.ifThen(lt(p, indexConst(panels - 1)), [&] { emit(indexConst(VM)); },
                 [&] { emit(indexConst(t.Cols - (panels - 1) * VM)); });
    };
    if (t.RowsContiguous)
      // Along the columns, the tile's rows written out in the body: the
      // loop vectorizes along the columns, with one store per row strided
      // by the rows' pitch, a group that the emitters transpose into runs
      // of RW contiguous elements per column.
      overColumns([&](Expr n) {
        b.loopTo("j", n, [&](Expr j) {
          for (int64_t r = 0; r < RW; ++r)
            t.Store(r0 + r, c0 + j, cast(kir::computeType(accType), sum(indexConst(r), j)));
        });
      });
    else
      overColumns([&](Expr n) {
        b.loop("r", RW, [&](Expr r) {
          auto row = [&] {
            b.loopTo("j", n, [&](Expr j) {
              t.Store(r0 + r, c0 + j, cast(kir::computeType(accType), sum(r, j)));
            });
          };
          if (t.ClampRows)
            b.ifThen(lt(r0 + r, t.RowsAt), row);
          else
            row();
        });
      });
  };
  // The first row of row tile `rt` (edge tiles are shifted back).
  auto firstRow = [&](const Expr &rt) { return t.ClampRows ? rt * RW : min(rt * RW, lastRow); };

  // Parallel over the panels or over the row tiles (or row blocks) of each
  // panel, as the plan's tile says (Tile::ParallelPanels, ParallelRowUnits).
  const int64_t rowUnits = blocked ? rowBlocks : rowTiles;
  bool parallelPanels = parallelOverPanels(t, panels, rowUnits);
  bool parallelRows = t.Parallel && !parallelPanels && rowUnits > 1;
  LoopKind rowKind = parallelRows ? LoopKind::Parallel : LoopKind::Serial;
  // The first column of panel p: panel-aligned in a packed B (the last
  // panel's padding is computed, not stored), shifted back to overlap when
  // direct.
  auto firstCol = [&](const Expr &p) {
    return direct ? min(p * VM, indexConst(t.Cols - VM)) : p * VM;
  };
  // One row tile of one panel, summed over the whole reduction.
  auto wholeTile = [&](const Expr &p, const Expr &rt) {
    Expr c0 = firstCol(p), r0 = firstRow(rt);
    LoadRow staged;
    if (t.StageABytes > 0 && t.Reduce.size() == 1 && !t.ReduceAt &&
        RW * kred * (int64_t)dtypeSize(accType) <= t.StageABytes) {
      Local a = b.local("a", accType, RW * kred);
      b.loop("r", RW, [&](Expr r) {
        b.loop("k", kred, [&](Expr k) { b.set(a, r * kred + k, cast(accType, t.LoadA(rowOf(r0 + r), {k}))); });
      });
      staged = [a, kred](int64_t r, const std::vector<Expr> &k) { return a.get(k[0] + r * kred); };
    }
    Local acc = b.local("acc", accType, RW * VM);
    for (int64_t r = 0; r < RW; ++r)
      for (int64_t v = 0; v < NV; ++v)
        b.store(acc.Buf, accAt(r, v), broadcast(constant(accType, 0), (int)L));
    reduce(acc, p, c0, r0, indexConst(0), t.ReduceAt ? t.ReduceAt : indexConst(outer), staged);
    // Spill the tile (constant offsets keep acc in registers), then store
    // the columns that exist.
    Local tile = b.local("tile", accType, RW * VM);
    for (int64_t r = 0; r < RW; ++r)
      for (int64_t v = 0; v < NV; ++v)
        b.store(tile.Buf, accAt(r, v), vload(acc.Buf, accAt(r, v), (int)L));
    storeTile(p, c0, r0, [&](const Expr &r, const Expr &j) { return tile.get(r * VM + j); });
  };
  if (!blocked && t.Tile.RowsOuter && rowTiles > 1 && panels > 1 && !t.Panel) {
    // The row tiles outermost (in parallel when there are several): each
    // tile of A stays in cache while every panel of B passes.
    b.loopTo("rt", rowTilesAt, [&](Expr rt) {
      b.loopTo("p", panelsAt, [&](Expr p) { wholeTile(p, rt); });
    }, t.Parallel && rowTiles > 1 ? LoopKind::Parallel : LoopKind::Serial);
    return;
  }
  auto eachPanel = [&](const std::function<void(Expr)> &body, LoopKind kind) {
    if (t.Panel)
      body(t.Panel);
    else
      b.loopTo("p", panelsAt, body, kind);
  };
  eachPanel([&](Expr p) {
    Expr c0 = firstCol(p);
    if (!blocked) {
      b.loopTo("rt", rowTilesAt, [&](Expr rt) { wholeTile(p, rt); }, rowKind);
      return;
    }
    b.loop("rb", rowBlocks, [&](Expr rb) {
      // The partial sums of the block's row tiles, one RW x VM slot each.
      const int64_t slot = RW * VM;
      Local part = b.local("part", accType, tilesPerBlock * slot);
      b.loop("z", tilesPerBlock * slot / L, [&](Expr z) {
        b.store(part.Buf, z * L, broadcast(constant(accType, 0), (int)L));
      });
      Expr tiles = rowTiles % tilesPerBlock == 0
                       ? indexConst(tilesPerBlock)
                       : min(indexConst(tilesPerBlock), indexConst(rowTiles) - rb * tilesPerBlock);
      b.loop("kb", kBlocks, [&](Expr kb) {
        Expr kBegin = kb * bc;
        Expr kEnd = outer % bc == 0 ? kBegin + bc : min(kBegin + bc, indexConst(outer));
        b.loop("rt", indexConst(0), tiles, [&](Expr rt) {
          Expr r0 = firstRow(rb * tilesPerBlock + rt), base = rt * slot;
          Local acc = b.local("acc", accType, RW * VM);
          for (int64_t r = 0; r < RW; ++r)
            for (int64_t v = 0; v < NV; ++v)
              b.store(acc.Buf, accAt(r, v), vload(part.Buf, base + accAt(r, v), (int)L));
          reduce(acc, p, c0, r0, kBegin, kEnd);
          for (int64_t r = 0; r < RW; ++r)
            for (int64_t v = 0; v < NV; ++v)
              b.store(part.Buf, base + accAt(r, v), vload(acc.Buf, accAt(r, v), (int)L));
        });
      });
      b.loop("rt", indexConst(0), tiles, [&](Expr rt) {
        Expr r0 = firstRow(rb * tilesPerBlock + rt), base = rt * slot;
        storeTile(p, c0, r0,
                  [&](const Expr &r, const Expr &j) { return part.get(base + r * VM + j); });
      });
    }, rowKind);
  }, parallelPanels ? LoopKind::Parallel : LoopKind::Serial);
}

} // namespace

namespace {

/// lowerTiledContraction after its columns: rows known at run time.
void lowerRowRuns(LowerCtx &c, const TiledContraction &t);

} // namespace

void lowerTiledContraction(LowerCtx &c, const TiledContraction &t) {
  // Columns of a directly read B known at run time: whole panels, then the
  // columns left (fewer than a panel) in panels of half as many vectors,
  // and so on down to one vector, so that a short run (the last block of
  // a query length) computes about the columns it has, not a whole panel.
  // Where the columns' capacity is whole panels, so that every panel read
  // stays inside it.
  const int64_t L = t.Tile.Lanes, VM = t.Tile.Panel;
  if (t.LoadB && t.ColsAt && !t.ColsAt->isConst() && VM > L && t.Cols % VM == 0) {
    KernelBuilder &b = c.b();
    Expr whole = t.ColsAt / VM * VM;
    TiledContraction panels = t;
    panels.ColsAt = whole;
    b.ifThen(ge(t.ColsAt, indexConst(VM)), [&] { lowerRowRuns(c, panels); });
    TiledContraction rest = t;
    rest.Tile.Panel = std::max<int64_t>(1, VM / L / 2) * L;
    rest.ColsAt = t.ColsAt - whole;
    rest.LoadB = [load = t.LoadB, whole](const std::vector<Expr> &k, const Expr &col0) {
      return load(k, col0 + whole);
    };
    rest.Store = [store = t.Store, whole](const Expr &r, const Expr &col, const Expr &acc) {
      store(r, col + whole, acc);
    };
    b.ifThen(gt(rest.ColsAt, indexConst(0)), [&] { lowerTiledContraction(c, rest); });
    return;
  }
  lowerRowRuns(c, t);
}

namespace {

void lowerRowRuns(LowerCtx &c, const TiledContraction &t) {
  // Rows known at run time: as many whole tiles as fit (and one more,
  // clamped, when more than half a tile is left), then the rows left in
  // tiles of half as many rows, and so on down to one row, so that no row
  // is computed twice (an edge tile shifted back over a short sequence
  // would compute up to a tile's rows again) and a short sequence still
  // runs tiles of several rows.
  const int64_t rows = std::min(t.Tile.Rows, t.Rows);
  const bool runTime = t.RowsAt && !t.RowsAt->isConst() && rows > 1;
  const int64_t VM = t.Tile.Panel, panels = (t.Cols + VM - 1) / VM;
  const int64_t rowTiles = (t.Rows + rows - 1) / rows;
  const bool parallelPanels = parallelOverPanels(t, panels, rowTiles);
  if (runTime && t.ClampAll && !t.RowsContiguous) {
    // Whole tiles only, the last one clamped: one run, B read once.
    TiledContraction tiles = t;
    tiles.ClampRows = true;
    c.b().ifThen(gt(t.RowsAt, indexConst(0)), [&] { lowerTiles(c, tiles); });
    return;
  }
  if (runTime && !t.Panel && panels > 1 && !(t.Tile.RowsOuter && rowTiles > 1) &&
      (!t.Parallel || parallelPanels)) {
    // Panel by panel, the runs of each panel one after another: B's panel
    // is read from memory once, not once per run (a B of many columns, a
    // vocabulary's logits, read three times for 7 rows in tiles of 8).
    const Expr panelsAt = t.ColsAt ? (t.ColsAt + (VM - 1)) / VM : indexConst(panels);
    c.b().loopTo("p", panelsAt, [&](Expr p) {
      TiledContraction one = t;
      one.Panel = p;
      one.Parallel = false;
      lowerRowRuns(c, one);
    }, parallelPanels ? LoopKind::Parallel : LoopKind::Serial);
    return;
  }
  if (runTime) {
    Expr whole = t.RowsAt / rows * rows;
    TiledContraction tiles = t;
    tiles.RowsAt = whole;
    TiledContraction rest = t;
    rest.Rows = std::min(t.Rows, rows - 1);
    rest.RowsAt = t.RowsAt - whole;
    if (!t.RowsContiguous && rows > 2) {
      // More rows left than half a tile: one more tile, clamped, in the
      // same loop (a pass over B's panel, not one per smaller tile).
      Local left = c.b().local("left", t.RowsAt - whole);
      Expr more = gt(left.get(), indexConst(rows / 2));
      tiles.RowsAt = c.b().local("rows", select(more, t.RowsAt, whole)).get();
      tiles.ClampRows = true;
      rest.RowsAt = select(more, indexConst(0), left.get());
      rest.Rows = std::min(t.Rows, rows / 2);
      c.b().ifThen(gt(tiles.RowsAt, indexConst(0)), [&] { lowerTiles(c, tiles); });
    } else {
      c.b().ifThen(ge(t.RowsAt, indexConst(rows)), [&] { lowerTiles(c, tiles); });
    }
    rest.Tile.Rows = rows / 2;
    rest.LoadA = [load = t.LoadA, whole](const Expr &r, const std::vector<Expr> &k) {
      return load(r + whole, k);
    };
    rest.Store = [store = t.Store, whole](const Expr &r, const Expr &col, const Expr &acc) {
      store(r + whole, col, acc);
    };
    c.b().ifThen(gt(rest.RowsAt, indexConst(0)), [&] { lowerRowRuns(c, rest); });
    return;
  }
  lowerTiles(c, t);
}

} // namespace

} // namespace mlcc::ops
