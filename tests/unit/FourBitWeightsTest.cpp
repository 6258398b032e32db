//===- FourBitWeightsTest.cpp - 4-bit weights on the int8 kernels ---------===//
//
// A QDQ model whose Conv, MatMul or Gemm reads DequantizeLinear of int4 or
// uint4 weights runs on the int8 integer kernels (fuse-qdq widens the codes
// to int8, 16 times each at a 16 times smaller scale when they fit in
// [-8, 7]), the weights stored two a byte (lower-to-program's nibble pairs,
// unpacked where the kernels load them). Each model is compared with the
// same model written with int8 weights of equal real value, which is stored
// plainly: on every multiply-accumulate form of the targets the outputs
// must be equal (exact integer sums either way) and vary, and the 4-bit
// program's constants must be smaller where its weights fit in nibbles.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include "frontends/onnx/OnnxLoader.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Weights [.. M ..] along `Axis` (the output channels): codes `Q` with
/// zero points `Zp` (one, or one per channel) and per-channel scales.
struct Weights {
  Shape Dims;
  int64_t Axis = 0;
  bool Unsigned = false;
  std::vector<int64_t> Q, Zp;
  std::vector<float> Scale;
};

/// The model X -> Q/DQ (uint8) -> op(., DQ(W), DQ(int32 bias)) -> Q/DQ -> Y.
/// `fourBit`: W is int4/uint4 (opset 21); otherwise int8 weights of the
/// same real values, 16 times the centred codes at a scale 16 times smaller
/// when `scaled`, else the centred codes themselves, zero point 0.
std::string qdqModel(const std::string &op, const Shape &x, const Weights &w, const Shape &y,
                     bool fourBit, bool scaled,
                     const std::vector<std::pair<std::string, int64_t>> &attrs) {
  pb::Model model;
  pb::Graph *g = newGraph(model, x);
  model.mutable_opset_import(0)->set_version(21);
  const int64_t m = w.Dims[(size_t)w.Axis];
  int64_t inner = 1;
  for (size_t d = (size_t)w.Axis + 1; d < w.Dims.size(); ++d)
    inner *= w.Dims[d];
  auto zpOf = [&](int64_t i) { return w.Zp.size() == 1 ? w.Zp[0] : w.Zp[(size_t)((i / inner) % m)]; };
  const float xs = 2.0f / 255, factor = scaled ? 16.0f : 1.0f;
  addInitializer(g, "xs", {}, {xs});
  addIntInitializer(g, "xz", 2, {}, {128});
  addInitializer(g, "ys", {}, {0.02f});
  addIntInitializer(g, "yz", 2, {}, {128});
  std::vector<float> ws, bs;
  for (float s : w.Scale) {
    ws.push_back(fourBit ? s : s / factor);
    bs.push_back(fourBit ? xs * s : (xs * s) / factor);
  }
  addInitializer(g, "ws", {m}, ws);
  addInitializer(g, "bs", {m}, bs);
  std::mt19937 rng(3);
  std::vector<int64_t> bias = randomInts(rng, m, -400, 400);
  if (!fourBit)
    for (int64_t &b : bias)
      b *= (int64_t)factor;
  addIntInitializer(g, "B", 6, {m}, bias);
  if (fourBit) {
    pb::Tensor *t = g->add_initializer();
    t->set_name("W");
    t->set_data_type(w.Unsigned ? 21 : 22); // UINT4, INT4
    for (int64_t d : w.Dims)
      t->add_dims(d);
    std::string bytes((w.Q.size() + 1) / 2, '\0');
    for (size_t i = 0; i < w.Q.size(); ++i)
      bytes[i / 2] = (char)(bytes[i / 2] | (int)((w.Q[i] & 15) << (4 * (i % 2))));
    t->set_raw_data(bytes);
    pb::Tensor *z = g->add_initializer();
    z->set_name("wz");
    z->set_data_type(w.Unsigned ? 21 : 22);
    z->add_dims(m);
    std::string zb(((size_t)m + 1) / 2, '\0');
    for (int64_t c = 0; c < m; ++c)
      zb[(size_t)c / 2] = (char)(zb[(size_t)c / 2] |
                                 (int)((zpOf(c * inner) & 15) << (4 * (c % 2))));
    z->set_raw_data(zb);
  } else {
    std::vector<int64_t> v;
    for (size_t i = 0; i < w.Q.size(); ++i)
      v.push_back((w.Q[i] - zpOf((int64_t)i)) * (int64_t)factor);
    addIntInitializer(g, "W", 3, w.Dims, v);
    addIntInitializer(g, "wz", 3, {m}, std::vector<int64_t>((size_t)m, 0));
  }
  auto axisAttr = [](pb::Node *n, int64_t axis) {
    pb::Attribute *a = n->add_attribute();
    a->set_name("axis");
    a->set_type(2);
    a->set_i(axis);
  };
  addNode(g, "QuantizeLinear", {"X", "xs", "xz"}, "XQ");
  addNode(g, "DequantizeLinear", {"XQ", "xs", "xz"}, "XD");
  axisAttr(addNode(g, "DequantizeLinear", {"W", "ws", "wz"}, "WD"), w.Axis);
  axisAttr(addNode(g, "DequantizeLinear", {"B", "bs"}, "BD"), 0);
  pb::Node *n = addNode(g, op, op == "MatMul" ? std::vector<std::string>{"XD", "WD"}
                                              : std::vector<std::string>{"XD", "WD", "BD"},
                        "YF");
  for (auto &[name, v] : attrs) {
    pb::Attribute *a = n->add_attribute();
    a->set_name(name);
    if (name == "pads" || name == "strides") {
      a->set_type(7);
      for (int i = 0; i < (name == "pads" ? 4 : 2); ++i)
        a->add_ints(v);
    } else {
      a->set_type(2);
      a->set_i(v);
    }
  }
  addNode(g, "QuantizeLinear", {"YF", "ys", "yz"}, "YQ");
  addNode(g, "DequantizeLinear", {"YQ", "ys", "yz"}, "Y");
  addFloatInfo(g->add_output(), "Y", y);
  return model.SerializeAsString();
}

/// Codes of `n` weights: signed in [-8, 7], or unsigned in [0, 15].
std::vector<int64_t> codes(int64_t n, bool isUnsigned, unsigned seed) {
  std::mt19937 rng(seed);
  return randomInts(rng, n, isUnsigned ? 0 : -8, isUnsigned ? 15 : 7);
}

std::vector<float> scales(int64_t m) {
  std::vector<float> s;
  for (int64_t i = 0; i < m; ++i)
    s.push_back(0.04f + 0.003f * (float)i);
  return s;
}

/// The bytes of a program's constants.
int64_t constantBytes(const std::string &model, const TargetDesc &target) {
  auto g = onnx::loadModelBytes(model, "test.onnx", "", {});
  PipelineOptions po;
  po.Name = "m";
  po.Target = target;
  kir::Program p = runPipeline(*g, po);
  int64_t bytes = 0;
  for (const kir::ConstantData &c : p.Constants)
    bytes += (int64_t)c.Bytes.size();
  return bytes;
}

/// The targets of the check: an AVX-512-shaped one plain and with each
/// dot-product or multiply-accumulate form, and one without vectors with
/// the Cortex-M dual multiply-accumulate (smlad pairs) at two stack sizes.
std::vector<std::pair<std::string, TargetDesc>> targets() {
  std::vector<std::pair<std::string, TargetDesc>> t;
  TargetDesc plain = avx512(32768, 524288);
  t.push_back({"plain", plain});
  for (MacForm form : {MacForm::X86Vnni, MacForm::X86Madd16, MacForm::ArmDot,
                       MacForm::ArmMatMul, MacForm::ArmLongMac, MacForm::HeliumMac}) {
    TargetDesc d = plain;
    d.IntMacs.push_back(form);
    t.push_back({macFormName(form), d});
  }
  TargetDesc pairs;
  pairs.GeneralRegisters = 13;
  pairs.IntMacs.push_back(MacForm::ArmSmlad);
  t.push_back({"smlad", pairs});
  pairs.StackBytes = 256;
  t.push_back({"smlad, small stack", pairs});
  return t;
}

/// The 4-bit model against its int8 twin on every target.
void checkFourBit(const std::string &op, const Shape &x, const Weights &w, const Shape &y,
                  bool scaled, const std::vector<std::pair<std::string, int64_t>> &attrs) {
  std::string four = qdqModel(op, x, w, y, true, scaled, attrs);
  std::string eight = qdqModel(op, x, w, y, false, scaled, attrs);
  std::vector<float> in = randomValues(x, 11);
  int64_t smaller = 0;
  for (auto &[name, target] : targets()) {
    INFO(op << " on " << name << (scaled ? "" : ", codes past [-8, 7]"));
    std::string text;
    std::vector<float> got = compileAndRun(four, target, in, &text);
    std::vector<float> want = compileAndRun(eight, target, in, nullptr);
    INFO(text.substr(0, 3000));
    checkEqualAndVarying(got, want);
    int64_t fourBytes = constantBytes(four, target), eightBytes = constantBytes(eight, target);
    CHECK(fourBytes <= eightBytes);
    // Stored two a byte: at least 40% of the weights' bytes saved.
    smaller += (eightBytes - fourBytes) * 10 >= (int64_t)w.Q.size() * 4;
  }
  // Codes that fit in nibbles are stored two a byte on most forms (Arm's
  // smlal by element and the pairs of x86 pmaddwd read 16-bit weights);
  // the others keep a byte a weight.
  if (scaled)
    CHECK(smaller >= 6);
  else
    CHECK(smaller == 0);
}

} // namespace

TEST_CASE("4-bit weights on the int8 kernels equal int8 weights of the same value",
          "[contraction][quantization]") {
  // Convolutions: 3x3 padded over 12 input channels (three quads), 10
  // output channels (an odd tile at the end), strides 1 and 2; a pointwise
  // one; a depthwise one (group = channels). int4 with zero points 0 and
  // uint4 with per-channel zero points; uint4 codes far from their zero
  // point (differences up to 15) take int8 weights without the factor 16.
  for (bool isUnsigned : {false, true})
    for (int64_t stride : {1, 2}) {
      Weights w{{10, 12, 3, 3}, 0, isUnsigned, codes(10 * 12 * 9, isUnsigned, 1), {}, scales(10)};
      w.Zp = isUnsigned ? std::vector<int64_t>{8, 7, 8, 9, 8, 8, 7, 8, 8, 8}
                        : std::vector<int64_t>{0};
      if (isUnsigned) // keep q - z in [-8, 7]
        for (size_t i = 0; i < w.Q.size(); ++i)
          w.Q[i] = std::clamp<int64_t>(w.Q[i], w.Zp[i / 108] - 8, w.Zp[i / 108] + 7);
      int64_t o = (9 + 2 - 3) / stride + 1;
      checkFourBit("Conv", {1, 12, 9, 9}, w, {1, 10, o, o}, true,
                   {{"pads", 1}, {"strides", stride}});
    }
  {
    Weights w{{16, 20, 1, 1}, 0, false, codes(16 * 20, false, 2), {0}, scales(16)};
    checkFourBit("Conv", {1, 20, 6, 7}, w, {1, 16, 6, 7}, true, {});
  }
  {
    Weights w{{8, 1, 3, 3}, 0, false, codes(8 * 9, false, 4), {0}, scales(8)};
    checkFourBit("Conv", {1, 8, 10, 10}, w, {1, 8, 10, 10}, true, {{"group", 8}, {"pads", 1}});
  }
  {
    Weights w{{10, 12, 3, 3}, 0, true, codes(10 * 12 * 9, true, 5), {0}, scales(10)};
    checkFourBit("Conv", {1, 12, 9, 9}, w, {1, 10, 9, 9}, false, {{"pads", 1}});
  }
  // Matrix products: MatMul [K, N] (output channels along axis 1) and Gemm
  // with transB ([N, K], axis 0), K = 37 (a partial quad), 3 rows of X.
  {
    Weights w{{37, 14}, 1, false, codes(37 * 14, false, 6), {0}, scales(14)};
    checkFourBit("MatMul", {3, 37}, w, {3, 14}, true, {});
  }
  {
    Weights w{{14, 37}, 0, false, codes(14 * 37, false, 7), {0}, scales(14)};
    checkFourBit("Gemm", {1, 37}, w, {1, 14}, true, {{"transB", 1}});
    checkFourBit("Gemm", {4, 37}, w, {4, 14}, true, {{"transB", 1}});
  }
}
