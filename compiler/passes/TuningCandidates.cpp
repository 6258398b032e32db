//===- TuningCandidates.cpp - The plans schedule search measures ----------===//
//
// passes::planCandidates: the plans of a node that schedule search (--tune,
// compiler/driver/Tune.cpp) builds and measures, the default plan
// (DefaultPlans.cpp) first, then each form the node may take with the
// tiles the cost model ranks first for it, the plans the target would get
// without each of its integer multiply-accumulate forms, and the loop
// knobs of every register tile; passes::withoutKnobs, a plan without its
// loop knobs (the form and tile that the search measures first).
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/DefaultPlans.h"
#include "compiler/ops/IntegerOps.h"
#include "compiler/passes/Passes.h"
#include "compiler/schedule/CostModel.h"

#include <algorithm>
#include <functional>

namespace mlcc::passes {

using namespace planning;
using schedule::MacKind;
using schedule::TileChoice;
using schedule::TileProblem;

namespace {

/// The register tiles of each form of a plan that schedule search measures
/// (the model's cheapest of each form; the default plan besides).
constexpr size_t kTilesPerForm = 6;

/// The f32 plans of `n` besides its default (schedule search): each form
/// it may take (Winograd, pixels as the tile's columns, packed panels with
/// pixels or rows as the rows) with the kTilesPerForm tiles the model ranks
/// first for it.
std::vector<ir::KernelPlan> floatAlternatives(const ir::Node &n, const TargetDesc &t) {
  std::vector<ir::KernelPlan> out;
  if (auto wb = winogradBlocks(n, t))
    for (const TileChoice &tile : schedule::rankTiles(t, winogradProducts(n, *wb), kTilesPerForm)) {
      ir::KernelPlan p;
      p.Register = registerTile(tile);
      p.Wino = winogradPlan(*wb, t);
      out.push_back(p);
    }
  std::optional<Contraction> c = contractionOf(n, t);
  if (!c)
    return out;
  const MacKind mac = floatMac(n, t);
  TileProblem rows{mac, c->Rows, c->Cols, c->Reduce};
  if (c->PixelColumns) {
    for (const TileChoice &tile : schedule::rankTiles(
             t, TileProblem{mac, c->Rows, c->Cols, 0, true}, kTilesPerForm))
      if (tile.Vectors * tile.Lanes <= c->Cols) {
        ir::KernelPlan p;
        p.Register = registerTile(tile);
        p.PixelColumns = true;
        out.push_back(p);
      }
    rows = TileProblem{mac, c->Cols, c->Rows, c->Reduce};
  }
  for (const TileChoice &tile : schedule::rankTiles(t, rows, kTilesPerForm)) {
    ir::KernelPlan p;
    p.Register = registerTile(tile);
    out.push_back(p);
  }
  return out;
}

/// The dot-product tiles of `n`'s plan `d` besides its own (a dense or
/// depthwise int8 convolution on dot products): the kTilesPerForm tiles the
/// model ranks first for its geometry.
std::vector<ir::KernelPlan> dotAlternatives(const ir::Node &n, const TargetDesc &t,
                                            const ir::KernelPlan &d) {
  std::vector<ir::KernelPlan> out;
  std::optional<ops::IntegerOperands> o = ops::integerOperands(n);
  if (!o || !o->Conv || d.DotAlongK)
    return out;
  const int64_t lanes = t.lanes(DType::I32);
  const MacKind mac = dotMac(t);
  // The tiles the model ranks first for a geometry; each as a plan.
  auto tiles = [&](const auto &geo, const std::function<void(ir::KernelPlan &,
                                                              const TileChoice &)> &set) {
    if (!geo)
      return;
    for (const TileChoice &tile : schedule::rankTiles(
             t, TileProblem{mac, geo->Rows, geo->Cols, geo->Steps, false, geo->MaxVectors},
             kTilesPerForm)) {
      ir::KernelPlan p = d;
      set(p, tile);
      out.push_back(p);
    }
  };
  if (d.Dot && d.Dot4Lanes)
    tiles(ops::dotConvGeometry(ops::convShape(n, o->X, o->W), lanes, t.StackBytes),
          [](ir::KernelPlan &p, const TileChoice &tile) {
            p.Dot->Rows = tile.Rows;
            p.Dot->Vectors = tile.Vectors;
          });
  else if (d.Taps && d.Taps->Vectors > 0)
    tiles(ops::tapQuadsGeometry(ops::convShape(n, o->X, o->W), lanes),
          [](ir::KernelPlan &p, const TileChoice &tile) { p.Taps->Vectors = tile.Vectors; });
  return out;
}

/// The scalar int32 tiles of `n`'s plan `d` besides its own (an integer
/// convolution or matrix product on a target without vectors: a
/// microcontroller), the kTilesPerForm the model ranks first, with the
/// choices that depend on the tile made again.
std::vector<ir::KernelPlan> intAlternatives(const ir::Node &n, const TargetDesc &t,
                                            const ir::KernelPlan &d) {
  std::vector<ir::KernelPlan> out;
  std::optional<ops::IntegerOperands> o = ops::integerOperands(n);
  std::optional<TileProblem> problem;
  if (o && d.Int && t.VectorBytes == 0)
    problem = scalarIntProblem(n, *o, d.Pairs ? MacKind::IntPair : MacKind::IntScalar);
  if (!problem)
    return out;
  for (const TileChoice &tile : schedule::rankTiles(t, *problem, kTilesPerForm)) {
    ir::KernelPlan p = d;
    p.Int = ir::KernelPlan::IntTile{tile.Rows, 1, tile.Vectors, 1};
    p.StagedPairs = p.Pairs && stagedPairs(n, *o, *p.Int, t);
    p.WindowPairs = windowPairs(n, *o, p);
    out.push_back(p);
  }
  return out;
}

} // namespace

std::vector<ir::KernelPlan> planCandidates(const ir::Node &n, const TargetDesc &t,
                                           bool integerRequant) {
  std::vector<ir::KernelPlan> out{planKernel(n, t, integerRequant)};
  const ir::KernelPlan &d = out[0];
  if (t.gpu() || d.empty())
    return out;
  std::vector<ir::KernelPlan> more;
  if (d.Register && !d.Dot4Lanes && !d.GateRows)
    more = floatAlternatives(n, t);
  else if (d.Dot4Lanes || d.Taps)
    more = dotAlternatives(n, t, d);
  else if (d.Int && t.VectorBytes == 0)
    more = intAlternatives(n, t, d);
  // A recurrent step's gate rows in registers: half, a quarter, twice as
  // many rows at once, or none (the sums in the scratch buffer).
  if (d.GateRows && d.GateBlock > 0)
    for (int64_t rows : {int64_t{0}, d.GateBlock / 2, d.GateBlock / 4, d.GateBlock * 2})
      if (rows == 0 || rows >= 2) {
        ir::KernelPlan p = d;
        p.GateBlock = rows;
        more.push_back(p);
      }
  // An f32 depthwise convolution: a quarter of the plane bound or no plane
  // on the stack (windows clipped at the border), the grid rounded to twice
  // as many elements.
  if (d.Depthwise && !d.Int && depthwiseF32(n))
    for (int64_t plane : {d.Depthwise->MaxElements, d.Depthwise->MaxElements / 4, int64_t{0}})
      for (int64_t round : {d.Depthwise->GridRound, 2 * d.Depthwise->GridRound}) {
        ir::KernelPlan p = d;
        p.Depthwise = ir::KernelPlan::Plane{plane, round};
        more.push_back(p);
      }
  // The other multiply-accumulate forms: the plan the cost model makes
  // for this target without one of its integer forms (VNNI's quads ->
  // pmaddwd's pairs, Arm's sdot -> smlal, the Cortex-M smlad pairs ->
  // one product at a time), with the tiles the cost model ranks first for
  // that form. It runs on this target: it uses a subset of its
  // instructions.
  for (size_t f = 0; f < t.IntMacs.size(); ++f) {
    TargetDesc without = t;
    without.IntMacs.erase(without.IntMacs.begin() + (std::ptrdiff_t)f);
    ir::KernelPlan p = planKernel(n, without, integerRequant);
    if (p.empty() || p == d)
      continue;
    std::vector<ir::KernelPlan> tiles = p.Dot4Lanes || p.Taps ? dotAlternatives(n, without, p)
                                        : p.Int && without.VectorBytes == 0
                                            ? intAlternatives(n, without, p)
                                            : std::vector<ir::KernelPlan>{};
    more.push_back(std::move(p));
    more.insert(more.end(), tiles.begin(), tiles.end());
  }
  for (ir::KernelPlan &p : more)
    if (std::find(out.begin(), out.end(), p) == out.end())
      out.push_back(std::move(p));
  // The loop knobs of every register tile without cache blocks: the row
  // tiles outermost, the reduction unrolled.
  const size_t forms = out.size();
  for (size_t i = 0; i < forms; ++i) {
    if (!out[i].Register || out[i].Register->ReduceBlock || out[i].Dot4Lanes || out[i].GateRows)
      continue;
    for (auto [rowsOuter, unroll] : std::initializer_list<std::pair<bool, int64_t>>{
             {true, 1}, {false, 2}, {false, 4}, {true, 2}}) {
      ir::KernelPlan p = out[i];
      p.Register->RowsOuter = rowsOuter;
      p.Register->Unroll = unroll;
      if (std::find(out.begin(), out.end(), p) == out.end())
        out.push_back(std::move(p));
    }
  }
  return out;
}

ir::KernelPlan withoutKnobs(ir::KernelPlan p) {
  if (p.Register) {
    p.Register->RowsOuter = false;
    p.Register->Unroll = 1;
  }
  return p;
}

} // namespace mlcc::passes
