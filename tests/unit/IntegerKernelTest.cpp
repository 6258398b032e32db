//===- IntegerKernelTest.cpp - int8 kernels against plain ones ------------===//
//
// The int8 convolutions and matrix products on each multiply-accumulate
// form of a target (x86 VNNI and pmaddwd, Arm dotprod, i8mm, smlal by
// element, smlad pairs, Helium's byte vectors) and the integer depthwise
// convolutions' stack planes: the same outputs as the plain integer kernels,
// which vary.
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Compiles an int8 model for an AVX-512-shaped target with each form of
/// the int8 dot product and without, runs them on `in`: the outputs must
/// be equal and vary. Dense convolutions (quad images) take the form's
/// kernel IR: dot4 (x86 VNNI, Arm i8mm's usdot), dot2 of pre-split pairs
/// (x86 pmaddwd), sdot4 on signed quads (Arm dotprod); depthwise ones the
/// four taps per dot4 (Arm dotprod: sdot4 on signed quads); matrix
/// products dot4 (Arm dotprod: sdot4 along K for one row of A).
void checkDotEqualsPlain(const std::string &model, const std::vector<float> &in,
                         const char *path = nullptr) {
  TargetDesc plain = avx512(32768, 524288);
  std::vector<float> want = compileAndRun(model, plain, in, nullptr);
  for (MacForm form :
       {MacForm::X86Vnni, MacForm::X86Madd16, MacForm::ArmDot, MacForm::ArmMatMul}) {
    TargetDesc dot = plain;
    dot.IntMacs.push_back(form);
    std::string text;
    std::vector<float> got = compileAndRun(model, dot, in, &text);
    INFO(macFormName(form) << "\n" << text.substr(0, 4000));
    // (Arm dotprod's matrix products of several rows of A stay plain.)
    const bool dense = text.find("xquads") != std::string::npos,
               taps = text.find("tapquads") != std::string::npos,
               alongK = text.find("aquads") != std::string::npos;
    if (form != MacForm::ArmDot || dense || taps || alongK)
      CHECK(text.find(form == MacForm::ArmDot                ? "sdot4"
                      : form == MacForm::X86Madd16 && dense ? "dot2(zext_bytes02("
                                                            : "dot4(") != std::string::npos);
    if (path)
      CHECK(text.find(path) != std::string::npos);
    checkEqualAndVarying(got, want);
  }
}

} // namespace

TEST_CASE("int8 convolutions on the dot product equal the plain integer kernels",
          "[contraction][quantization]") {
  // 6 input channels (two quads, the second half empty); uint8 and int8
  // inputs with nonzero zero points (int8 data is offset to unsigned);
  // 10 output channels (an overlapping row tile); 1x1, 3x3 and 5x5
  // kernels padded by half their size (quad images per kernel column with
  // the zero point in the padding) at strides 1 and 2 (row phases): 200 and
  // 50 outputs (whole tiles and a tail tile).
  for (int xtype : {2, 3})
    for (int64_t k : {1, 3, 5})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", kernel " << k << ", stride " << stride);
        Shape x = {1, 6, 10, 20};
        int64_t pad = k / 2, oh = (10 + 2 * pad - k) / stride + 1,
                ow = (20 + 2 * pad - k) / stride + 1;
        std::string model = qlinearConvModel(x, 10, k, pad, stride, xtype, xtype == 2 ? 3 : -5,
                                             {1, 10, oh, ow});
        checkDotEqualsPlain(model, randomValues(x, 3), k == 1 ? "xquads" : "xpanel");
      }
  // Weights that outweigh the quad images (40 output channels over 20
  // input channels, 40 outputs): the panels of every output tile (a whole
  // tile of 32 outputs and a tail tile of 16 ending at the last) packed
  // once, the row tiles outside; a pointwise kernel reads its quad image.
  for (int xtype : {2, 3})
    for (int64_t k : {1, 3, 5}) {
      INFO("input type " << xtype << ", kernel " << k << ", weights outside");
      Shape x = {1, 20, 5, 8};
      std::string model =
          qlinearConvModel(x, 40, k, k / 2, 1, xtype, xtype == 2 ? 7 : -2, {1, 40, 5, 8});
      checkDotEqualsPlain(model, randomValues(x, 4), k == 1 ? "xquads" : "xpanels");
    }
}

TEST_CASE("int8 convolutions reading their rows' weights as lanes equal the plain kernels",
          "[contraction][quantization]") {
  // The int32 tile with the plan's LaneWeights (a target with Arm's
  // multiply-accumulate by element): one and two input channels (no
  // quads), uint8 and int8 inputs with zero points, 10 output channels
  // (an overlapping row tile), strides 1 and 2.
  for (int xtype : {2, 3})
    for (int64_t c : {1, 2})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", " << c << " channels, stride " << stride);
        Shape x = {1, c, 10, 20};
        int64_t oh = (10 + 2 - 3) / stride + 1, ow = (20 + 2 - 3) / stride + 1;
        std::string model =
            qlinearConvModel(x, 10, 3, 1, stride, xtype, xtype == 2 ? 3 : -5, {1, 10, oh, ow});
        std::vector<float> in = randomValues(x, 3);
        TargetDesc plain = avx512(32768, 524288), lanes = plain;
        lanes.IntMacs.push_back(MacForm::ArmLongMac);
        std::vector<float> want = compileAndRun(model, plain, in, nullptr);
        std::string text;
        std::vector<float> got = compileAndRun(model, lanes, in, &text);
        INFO(text.substr(0, 4000));
        CHECK(text.find(")[1])") != std::string::npos); // a row's weight as lane 1
        checkEqualAndVarying(got, want);
      }
}

TEST_CASE("int8 depthwise convolutions with taps on the dot product equal the plain kernels",
          "[contraction][quantization]") {
  // 6 channels, 6 groups, uint8 input with a zero point (the border),
  // through the tap-quad images of lowerIntTapQuads: 3x3 taps at strides
  // 1 and 2 (row phases), outputs narrower than a vector (7x7: tiles of
  // consecutive outputs across rows), 5x5 taps (two quads per kernel row),
  // two images, and output counts that leave an overlapping last tile.
  struct Case {
    Shape X;
    int64_t K, Pad, Stride;
  };
  for (const Case &k : {Case{{1, 6, 10, 20}, 3, 1, 1}, Case{{1, 6, 10, 20}, 3, 1, 2},
                        Case{{1, 6, 7, 7}, 3, 1, 1}, Case{{2, 6, 9, 11}, 5, 2, 2},
                        Case{{1, 6, 6, 13}, 5, 0, 1}}) {
    int64_t oh = (k.X[2] + 2 * k.Pad - k.K) / k.Stride + 1,
            ow = (k.X[3] + 2 * k.Pad - k.K) / k.Stride + 1;
    INFO("x " << k.X[0] << "x" << k.X[2] << "x" << k.X[3] << ", kernel " << k.K << ", stride "
              << k.Stride);
    std::string model =
        qlinearConvModel(k.X, 6, k.K, k.Pad, k.Stride, 2, 5, {k.X[0], 6, oh, ow}, 6);
    checkDotEqualsPlain(model, randomValues(k.X, 7), "tapquads");
  }
}

TEST_CASE("int8 matrix products on the dot product equal the plain integer kernels",
          "[contraction][quantization]") {
  // K = 37 (the last quad partial), N = 40 (two vectors and an overlapping
  // edge tile), M = 5 (a partial row tile); uint8 and int8 inputs.
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      std::string model = qlinearMatMulModel(5, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm);
      checkDotEqualsPlain(model, randomValues({5, 37}, 4));
      // One row of A (Arm dotprod: along K, its row staged as quads, the
      // last partial and the rest of the vector zero; 40 columns in two
      // tiles).
      std::string row = qlinearMatMulModel(1, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm);
      checkDotEqualsPlain(row, randomValues({1, 37}, 5));
    }
}

/// A Helium-shaped target (16-byte vectors, 8 registers, a float unit, a
/// kernel stack of `stackBytes`) and the same without Helium's
/// multiply-accumulate across lanes.
std::pair<TargetDesc, TargetDesc> heliumAndPlain(int64_t stackBytes) {
  TargetDesc plain;
  plain.VectorBytes = 16;
  plain.VectorRegisters = 8;
  plain.FloatUnit = true;
  plain.StackBytes = stackBytes;
  TargetDesc helium = plain;
  helium.IntMacs.push_back(MacForm::HeliumMac);
  return {helium, plain};
}

TEST_CASE("int8 matrix products on Helium's byte vectors equal the plain integer kernels",
          "[contraction][quantization]") {
  // The plan's ByteDot (signed bytes summed along K, uint8 A offset by 128
  // and corrected with B's column sums): QLinearMatMul (B [K, N],
  // transposed at compile time) and QGemm (transB), uint8 A with a zero
  // point and int8 A with a negative one, K = 37 (no whole vector at the
  // end), against the same target without Helium's multiply-accumulate.
  auto [helium, plain] = heliumAndPlain(8192);
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      std::string model = qlinearMatMulModel(3, 37, 10, xtype, xtype == 2 ? 9 : -3, gemm);
      std::vector<float> in = randomValues({3, 37}, 6);
      std::vector<float> want = compileAndRun(model, plain, in, nullptr);
      std::string text;
      std::vector<float> got = compileAndRun(model, helium, in, &text);
      INFO(text.substr(0, 4000));
      CHECK(text.find("scalar") != std::string::npos); // the byte loop, left to LLVM
      checkEqualAndVarying(got, want);
    }
}

TEST_CASE("int8 pointwise convolutions on Helium's byte vectors equal the plain integer kernels",
          "[contraction][quantization]") {
  // The plan's ByteDot for a pointwise convolution (bands of pixels copied
  // channels-last on the stack, one sum of bytes per output): 64 channels,
  // 7x8 pixels in bands of 3 (a 200-byte plane bound: the last band shifted
  // back), uint8 input with a zero point and int8 with a negative one.
  auto [helium, plain] = heliumAndPlain(200);
  for (int xtype : {2, 3}) {
    INFO("input type " << xtype);
    std::string model =
        qlinearConvModel({1, 64, 7, 8}, 24, 1, 0, 1, xtype, xtype == 2 ? 9 : -3, {1, 24, 7, 8});
    std::vector<float> in = randomValues({1, 64, 7, 8}, 8);
    std::vector<float> want = compileAndRun(model, plain, in, nullptr);
    std::string text;
    std::vector<float> got = compileAndRun(model, helium, in, &text);
    INFO(text.substr(0, 4000));
    CHECK(text.find("xbytes") != std::string::npos);
    checkEqualAndVarying(got, want);
  }
}

TEST_CASE("integer depthwise convolutions padded a plane at a time on the stack",
          "[contraction][quantization]") {
  // A target without vectors and a kernel stack (a microcontroller): each
  // channel's bordered plane is copied to the stack (the plan's Depthwise),
  // not the whole image to the arena; the outputs equal those of the
  // whole-image copy (no stack). uint8 and int8 inputs with nonzero zero
  // points (the border holds them), 3x3 and 5x5 kernels, strides 1 and 2.
  TargetDesc stack, whole;
  stack.GeneralRegisters = whole.GeneralRegisters = 13;
  stack.StackBytes = 8192;
  for (int xtype : {2, 3})
    for (int64_t k : {3, 5})
      for (int64_t stride : {1, 2}) {
        INFO("input type " << xtype << ", kernel " << k << ", stride " << stride);
        Shape x = {1, 6, 9, 12};
        int64_t pad = k / 2, oh = (9 + 2 * pad - k) / stride + 1,
                ow = (12 + 2 * pad - k) / stride + 1;
        std::string model = qlinearConvModel(x, 6, k, pad, stride, xtype,
                                             xtype == 2 ? 3 : -5, {1, 6, oh, ow}, 6);
        std::string text, wholeText;
        std::vector<float> got = compileAndRun(model, stack, randomValues(x, 3), &text);
        std::vector<float> want = compileAndRun(model, whole, randomValues(x, 3), &wholeText);
        INFO(text.substr(0, 3000));
        CHECK(text.find("alloc xplane") != std::string::npos);
        CHECK(wholeText.find("xplane") == std::string::npos);
        checkEqualAndVarying(got, want);
      }
}

TEST_CASE("int8 products in pairs (smlad) equal the plain integer kernels",
          "[contraction][quantization]") {
  // A target without vectors with and without the dual 16-bit
  // multiply-accumulate: the same outputs (exact integer sums either way),
  // which vary. Input channels per group 3, 5, 6 and 8 (partial and whole
  // quads), uint8 and int8 inputs with nonzero zero points, 1x1 (the
  // pointwise path), 3x3 and 5x5 kernels with padding, strides 1 and 2; the
  // matrix products with K = 37 (a partial quad) and M = 5.
  TargetDesc pairs;
  pairs.GeneralRegisters = 13;
  pairs.IntMacs.push_back(MacForm::ArmSmlad);
  TargetDesc plain = pairs;
  plain.IntMacs.clear();
  // A microcontroller's (small) kernel stack: the pointwise convolutions
  // stage their input pairs on it (the plan's StagedPairs), the windowed
  // ones whose bordered image passes its bound each output row's input
  // rows (the plan's Depthwise bound, 256 elements).
  TargetDesc staged = pairs;
  staged.StackBytes = 256;
  // Larger stacks: the windowed ones read pair words staged on the stack
  // (the plan's WindowPairs), the whole bordered image (8 KiB) or each
  // output row's input rows (1 KiB), wherever those words fit.
  TargetDesc imageWords = pairs, bandWords = pairs;
  imageWords.StackBytes = 8192;
  bandWords.StackBytes = 1024;
  auto check = [&](const std::string &model, const std::vector<float> &in,
                   std::string *imageText = nullptr, std::string *bandText = nullptr) {
    std::string text, stagedText;
    std::vector<float> got = compileAndRun(model, pairs, in, &text);
    std::vector<float> want = compileAndRun(model, plain, in, nullptr);
    std::vector<float> fromStack = compileAndRun(model, staged, in, &stagedText);
    INFO(text.substr(0, 3000));
    CHECK(text.find("dot2") != std::string::npos);
    CHECK(text.find("sext_bytes13") != std::string::npos);
    checkEqualAndVarying(got, want);
    checkEqualAndVarying(fromStack, want);
    if (imageText)
      checkEqualAndVarying(compileAndRun(model, imageWords, in, imageText), want);
    if (bandText)
      checkEqualAndVarying(compileAndRun(model, bandWords, in, bandText), want);
    return stagedText;
  };
  for (int64_t channels : {3, 5, 6, 8})
    for (int xtype : {2, 3})
      for (int64_t k : {1, 3, 5})
        for (int64_t stride : {1, 2}) {
          if (k == 1 && stride == 2)
            continue;
          INFO("channels " << channels << ", input type " << xtype << ", kernel " << k
                           << ", stride " << stride);
          Shape x = {1, channels, 9, 12};
          int64_t pad = k / 2, oh = (9 + 2 * pad - k) / stride + 1,
                  ow = (12 + 2 * pad - k) / stride + 1;
          std::string imageText, bandText;
          std::string stagedText =
              check(qlinearConvModel(x, 10, k, pad, stride, xtype, xtype == 2 ? 3 : -5,
                                     {1, 10, oh, ow}),
                    randomValues(x, 3), &imageText, &bandText);
          CHECK((stagedText.find("alloc pairs") != std::string::npos) == (k == 1));
          // The windowed ones stage each output row's input rows (the band)
          // when the bordered image passes 256 elements and the band fits.
          const int64_t band = channels * k * (12 + 2 * pad),
                        image = channels * (9 + 2 * pad) * (12 + 2 * pad);
          // Pair words: two int32 per channel quad and position.
          const int64_t words = (channels + 3) / 4 * 2 * 4;
          const bool pairImage = k != 1 && words * image / channels <= 1024;
          const bool pairBand = k != 1 && !pairImage && ow >= 2 && words * band / channels <= 1024;
          CHECK((stagedText.find("alloc xband") != std::string::npos) ==
                (k != 1 && band <= 256 && image > 256));
          CHECK((imageText.find("alloc xpairs") != std::string::npos) == (k != 1));
          CHECK((bandText.find("alloc xpairs") != std::string::npos) == pairImage);
          CHECK((bandText.find("alloc xbandpairs") != std::string::npos) == pairBand);
        }
  for (bool gemm : {false, true})
    for (int xtype : {2, 3}) {
      INFO((gemm ? "QGemm" : "QLinearMatMul") << ", input type " << xtype);
      check(qlinearMatMulModel(5, 37, 40, xtype, xtype == 2 ? 9 : -3, gemm),
            randomValues({5, 37}, 4));
      // K = 40 and no zero point: A's quads read as words (the plan's
      // PairWords), split by zext_bytes (uint8) or sext_bytes (int8).
      std::string model = qlinearMatMulModel(5, 40, 40, xtype, 0, gemm);
      std::string text;
      INFO("K = 40, zero point 0");
      check(model, randomValues({5, 40}, 4));
      compileAndRun(model, pairs, randomValues({5, 40}, 4), &text);
      CHECK(text.find(xtype == 2 ? "zext_bytes13" : "sext_bytes13(bitor") != std::string::npos);
    }
}
