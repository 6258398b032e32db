//===- RequantizationTest.cpp - Requantization in integers ----------------===//
//
// Targets without float or without f64 requantize in integers: the
// convolutions and matrix products with fixed-point multipliers, QLinearAdd
// and QLinearMul without f64; their outputs within one step of the float
// formula's.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Dequantized outputs of two requantizations (steps of `step`): at most
/// one step apart, and different in at most one in `oneIn` places.
void checkWithinOneStep(const std::vector<float> &got, const std::vector<float> &want,
                        double step, size_t oneIn) {
  REQUIRE(got.size() == want.size());
  size_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    differ += got[i] != want[i];
    worst = std::max(worst, (double)std::fabs(got[i] - want[i]));
  }
  CHECK(worst <= step * 1.001);
  CHECK(differ <= got.size() / oneIn);
}

} // namespace

TEST_CASE("fixed-point requantization (targets without float) is within one step of f32",
          "[quantization]") {
  // The same int8 convolution and matrix products compiled for a target
  // without a floating-point unit (integer multiplier and shift per output
  // channel) and for one with (f32 multiplier): the outputs (dequantized by
  // the model's last DequantizeLinear, steps of 0.05 and 0.1) differ by at
  // most one step, and in few places (ties and the last bit of a product).
  struct Case {
    std::string Model;
    Shape X;
    double Step;
  };
  std::vector<Case> cases = {
      {qlinearConvModel({1, 6, 10, 20}, 10, 3, 1, 1, 2, 3, {1, 10, 10, 20}), {1, 6, 10, 20}, 0.05},
      {qlinearMatMulModel(5, 37, 40, 2, 9, false), {5, 37}, 0.1},
      {qlinearMatMulModel(5, 37, 40, 3, -3, true), {5, 37}, 0.1}};
  for (const Case &k : cases) {
    std::vector<float> in = randomValues(k.X, 6);
    TargetDesc fixed, f32;
    fixed.FloatUnit = false;
    std::string text;
    std::vector<float> got = compileAndRun(k.Model, fixed, in, &text);
    std::vector<float> want = compileAndRun(k.Model, f32, in, nullptr);
    INFO(text.substr(0, 3000));
    CHECK(text.find("requant_shift") != std::string::npos);
    checkWithinOneStep(got, want, k.Step, 50);
  }
}

/// X (float) quantized twice (A: type `xtype`, scale `as`; B: scale `bs`,
/// or the constant C [3, 1, 1] broadcast along the rows when `constantB`)
/// -> com.microsoft `op` (QLinearAdd or QLinearMul) -> DequantizeLinear of
/// scale `ys`.
std::string qlinearBinaryModel(const std::string &op, int xtype, bool constantB, float as,
                               float bs, float ys) {
  pb::Model model;
  const Shape x = {1, 3, 7, 9};
  pb::Graph *g = newGraph(model, x);
  auto *ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  const bool u8 = xtype == 2;
  addInitializer(g, "as", {}, {as});
  addIntInitializer(g, "az", xtype, {}, {u8 ? 131 : -5});
  addInitializer(g, "bs", {}, {bs});
  addIntInitializer(g, "bz", xtype, {}, {u8 ? 120 : 7});
  addInitializer(g, "ys", {}, {ys});
  addIntInitializer(g, "yz", xtype, {}, {u8 ? 128 : 3});
  addIntInitializer(g, "C", xtype, {3, 1, 1}, u8 ? std::vector<int64_t>{7, 200, 121}
                                                 : std::vector<int64_t>{-100, 90, 12});
  addNode(g, "QuantizeLinear", {"X", "as", "az"}, "A");
  if (!constantB)
    addNode(g, "QuantizeLinear", {"X", "bs", "bz"}, "B");
  addNode(g, op, {"A", "as", "az", constantB ? "C" : "B", "bs", "bz", "ys", "yz"}, "YQ")
      ->set_domain("com.microsoft");
  addNode(g, "DequantizeLinear", {"YQ", "ys", "yz"}, "Y");
  addFloatInfo(g->add_output(), "Y", x);
  return model.SerializeAsString();
}

TEST_CASE("QLinearAdd and QLinearMul in integers (targets without f64) are within one step",
          "[quantization]") {
  // On a target whose f64 is a library call, the elementwise quantized ops
  // requantize in integers: the outputs (dequantized, steps of ys) differ
  // from the f64 formula's by one step at most. Where the exact result is a
  // half, the two round on either side as their approximations of the
  // scale ratios fall: with the scales of a calibrated model (no simple
  // ratios) that is rare, so few outputs differ; with decimal scales whose
  // ratios make many exact halves (0.02, 0.035 and 0.05: 0.4 and 0.7), up
  // to a tenth of them may.
  for (const std::string op : {"QLinearAdd", "QLinearMul"})
    for (int xtype : {2, 3})
      for (bool constantB : {false, true})
        for (bool decimal : {false, true}) {
          INFO(op << ", type " << xtype << (constantB ? ", constant B" : "")
                  << (decimal ? ", decimal scales" : ""));
          const float as = decimal ? 0.02f : 0.0213f, bs = decimal ? 0.035f : 0.0347f;
          const float ys = op == "QLinearAdd" ? (decimal ? 0.05f : 0.0519f)
                                              : (decimal ? 0.02f : 0.0187f);
          std::string model = qlinearBinaryModel(op, xtype, constantB, as, bs, ys);
          std::vector<float> in = randomValues({1, 3, 7, 9}, 8);
          for (float &v : in)
            v *= 1.5f;
          TargetDesc integer, f64;
          integer.DoubleUnit = false;
          std::string text, floatText;
          std::vector<float> got = compileAndRun(model, integer, in, &text);
          std::vector<float> want = compileAndRun(model, f64, in, &floatText);
          INFO(text.substr(0, 3000));
          CHECK(text.find("f64") == std::string::npos);
          CHECK(floatText.find("f64") != std::string::npos);
          checkWithinOneStep(got, want, ys, decimal ? 10 : 50);
          checkEqualAndVarying(got, got); // the outputs vary
        }
}
