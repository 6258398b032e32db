//===- FixedPointRequant.cpp - Requantization without floating point ------===//
//
// fixed-point-requant: on targets without floating point, plan-kernels plans
// the integer convolutions and matrix products to requantize in integers
// (ops::requant::requantizeFixed). This pass computes, for each output
// channel (column), the real multiplier x_scale * w_scale (* alpha) /
// y_scale in f32, as ONNX Runtime does, and writes it as an int32 Q31
// multiplier M0 in [2^30, 2^31) and a right shift S (m = M0 * 2^-S),
// appended to the node's inputs as two constants. A QLinearConv that
// requantizes in f32 gets its per-channel f32 multipliers the same way (one
// constant, rounded as its kernel would round them), so no kernel computes
// them on each run into the arena.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/IntegerOps.h"
#include "compiler/ops/Requantization.h"
#include "compiler/passes/Passes.h"

#include <array>

namespace mlcc::passes {

std::optional<FixedPointScales> fixedPointScales(const ir::Node &n) {
  std::array<size_t, 3> idx; // x scale, w scale, y scale
  if (n.Domain == "" && (n.OpType == "QLinearConv" || n.OpType == "QLinearMatMul"))
    idx = {1, 4, 6};
  else if (n.Domain == "com.microsoft" && n.OpType == "QGemm" && n.hasInput(7))
    idx = {1, 4, 7};
  else
    return std::nullopt;
  for (size_t i : idx)
    if (!n.hasInput(i) || !n.Inputs[i]->Const || n.inDType(i) != DType::F32)
      return std::nullopt;
  if (n.Inputs[idx[0]]->Type.numel() != 1 || n.Inputs[idx[2]]->Type.numel() != 1)
    return std::nullopt;
  const Tensor &ws = *n.Inputs[idx[1]]->Const;
  float xs = (float)n.Inputs[idx[0]]->Const->doubleAt(0);
  float ys = (float)n.Inputs[idx[2]]->Const->doubleAt(0);
  float alpha = (float)n.attrFloat("alpha", 1.0);
  FixedPointScales f;
  for (int64_t c = 0; c < ws.numel(); ++c) {
    float m = xs * (float)ws.doubleAt(c);
    if (n.OpType == "QGemm")
      m = alpha * m;
    m = m / ys;
    std::optional<std::pair<int64_t, int64_t>> q = ops::requant::q31Multiplier((double)m);
    if (!q)
      return std::nullopt;
    auto [m0, s] = *q;
    f.Multipliers.push_back(m0);
    f.Shifts.push_back(s);
  }
  return f;
}

namespace {

/// A QLinearConv's f32 multipliers x_scale * w_scale[m] / y_scale, rounded
/// like the kernel rounds them (f32 after each operation), when the scales
/// are f32 constants (x and y per tensor).
std::optional<std::vector<double>> constantMultipliers(const ir::Node &n) {
  if (n.Domain != "" || n.OpType != "QLinearConv")
    return std::nullopt;
  for (size_t i : {1, 4, 6})
    if (!n.hasInput(i) || !n.Inputs[i]->Const || n.inDType(i) != DType::F32)
      return std::nullopt;
  if (n.Inputs[1]->Type.numel() != 1 || n.Inputs[6]->Type.numel() != 1 || !n.hasInput(3))
    return std::nullopt;
  const Tensor &ws = *n.Inputs[4]->Const;
  int64_t channels = n.inShape(3).empty() ? 0 : n.inShape(3)[0];
  if (ws.numel() != 1 && ws.numel() != channels)
    return std::nullopt;
  float xs = (float)n.Inputs[1]->Const->doubleAt(0);
  float ys = (float)n.Inputs[6]->Const->doubleAt(0);
  std::vector<double> m;
  for (int64_t c = 0; c < channels; ++c) {
    float p = xs * (float)ws.doubleAt(ws.numel() == 1 ? 0 : c);
    m.push_back((double)(float)(p / ys));
  }
  return m;
}

} // namespace

bool fixedPointRequant(ir::Graph &g) {
  bool changed = false;
  for (auto &np : g.Nodes) {
    ir::Node &n = *np;
    if (!n.Plan.FixedRequant && n.Plan.MultiplierInput < 0)
      if (std::optional<std::vector<double>> m = constantMultipliers(n)) {
        int64_t channels = (int64_t)m->size();
        ir::Value *c = g.addValue(g.uniqueValueName(n.Name + "/requant_multiplier"),
                                  {DType::F32, {channels}});
        c->Const = std::make_shared<Tensor>(Tensor::fromDoubles(DType::F32, {channels}, *m));
        size_t at = n.Inputs.size();
        if (std::optional<ops::IntegerOperands> o = ops::integerOperands(n))
          at = std::max(at, o->Appended);
        n.Inputs.resize(at, nullptr);
        n.Plan.MultiplierInput = (int64_t)at;
        n.Inputs.push_back(c);
        changed = true;
        continue;
      }
    // The integer convolutions and products; QLinearAdd and QLinearMul
    // read their constant scales themselves.
    if (!n.Plan.FixedRequant || n.Plan.FixedRequantInput >= 0 || !ops::integerOperands(n))
      continue;
    std::optional<FixedPointScales> f = fixedPointScales(n);
    if (!f)
      n.error(ErrorKind::Internal) << "internal error: planned fixed-point requantization "
                                      "without fixed-point scales";
    int64_t channels = (int64_t)f->Multipliers.size();
    auto constant = [&](const std::string &what, const std::vector<int64_t> &v) {
      ir::Value *c = g.addValue(g.uniqueValueName(n.Name + "/" + what), {DType::I32, {channels}});
      c->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I32, {channels}, v));
      return c;
    };
    // After the op's own inputs, the optional ones included (a QLinearConv
    // without bias keeps input 8 empty).
    size_t at = n.Inputs.size();
    if (std::optional<ops::IntegerOperands> o = ops::integerOperands(n))
      at = std::max(at, o->Appended);
    n.Inputs.resize(at, nullptr);
    n.Plan.FixedRequantInput = (int64_t)at;
    n.Inputs.push_back(constant("requant_multiplier", f->Multipliers));
    n.Inputs.push_back(constant("requant_shift", f->Shifts));
    changed = true;
  }
  return changed;
}

} // namespace mlcc::passes
