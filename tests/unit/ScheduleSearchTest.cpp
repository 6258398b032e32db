//===- ScheduleSearchTest.cpp - Every candidate plan computes -------------===//
//
// Schedule search (passes::planCandidates): every candidate plan of a node,
// chosen in turn, computes the definition (float contractions, run through
// the interpreter or compiled by LLVM for this machine) or equals the plain
// integer kernels (int8 dot-product tiles).
//
//===----------------------------------------------------------------------===//
#include "ProgramTestSupport.h"
#include "frontends/onnx/OnnxLoader.h"
#include "targets/llvm/HostJit.h"
#include "targets/llvm/Targets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace mlcc;
using namespace mlcc::testsupport;

namespace {

/// Runs `model` on `target` with every candidate plan of schedule search
/// (passes::planCandidates, one node tuned) and checks each against `ref`
/// within float rounding of sums of `terms` products; returns the plans
/// run.
std::vector<std::string> everyCandidate(const std::string &model, const Shape &x,
                                        const TargetDesc &target, const std::vector<float> &ref,
                                        int64_t terms) {
  std::vector<std::string> plans;
  passes::PlanChooser record = [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
    for (const ir::KernelPlan &p : c)
      plans.push_back(p.str());
    return size_t{0};
  };
  compileAndRun(model, target, randomValues(x, 3), nullptr, record);
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    std::string chosen;
    passes::PlanChooser pick = [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
      chosen = c.at(i).str();
      return i;
    };
    std::vector<float> got = compileAndRun(model, target, randomValues(x, 3), nullptr, pick);
    CHECK(chosen == plans[i]);
    REQUIRE(got.size() == ref.size());
    size_t bad = 0;
    for (size_t k = 0; k < ref.size(); ++k)
      if (std::fabs(got[k] - ref[k]) > 2e-7 * (double)terms && bad++ == 0)
        UNSCOPED_INFO("first difference at " << k << ": " << got[k] << " vs " << ref[k]);
    CHECK(bad == 0);
  }
  return plans;
}

size_t countWith(const std::vector<std::string> &plans, const std::string &text) {
  return (size_t)std::count_if(plans.begin(), plans.end(), [&](const std::string &p) {
    return p.find(text) != std::string::npos;
  });
}

} // namespace

TEST_CASE("every candidate plan of schedule search computes the definition", "[tune]") {
  const TargetDesc t = avx512(32768, 524288);
  SECTION("a 3x3 convolution: Winograd tiles and direct ones") {
    // 64 channels and a small cache: Winograd in blocks of 2 rows of 8
    // tiles by default (as in the Winograd test above).
    std::string model = oneNodeModel("Conv", {1, 64, 18, 16}, {32, 64, 3, 3}, {32},
                                     {1, 32, 18, 16}, {{"kernel_shape", 3}, {"pads", 1}});
    std::vector<std::string> plans =
        everyCandidate(model, {1, 64, 18, 16}, avx512(32768, 131072),
                       referenceConv({1, 64, 18, 16}, 32, 3, 1, 1, 1), 576);
    CHECK(plans.at(0).find("winograd") != std::string::npos);
    CHECK(countWith(plans, "winograd") > 1);
    CHECK(countWith(plans, "winograd") < plans.size()); // direct tiles too
  }
  SECTION("a pointwise convolution: pixels as columns and as rows") {
    std::string model = oneNodeModel("Conv", {1, 24, 9, 9}, {40, 24, 1, 1}, {40}, {1, 40, 9, 9},
                                     {{"kernel_shape", 1}});
    std::vector<std::string> plans =
        everyCandidate(model, {1, 24, 9, 9}, t, referenceConv({1, 24, 9, 9}, 40, 1, 0, 1, 1), 24);
    CHECK(countWith(plans, "pixel_columns") > 0);
    CHECK(countWith(plans, "pixel_columns") < plans.size());
    // The loop knobs: the row tiles outermost, the reduction unrolled
    // (24 steps: by 2, and by 4 with no remainder).
    CHECK(countWith(plans, "rows_outer") > 0);
    CHECK(countWith(plans, "unroll=2") > 0);
    CHECK(countWith(plans, "unroll=4") > 0);
  }
  SECTION("a matrix product: a reduction unrolled with a remainder") {
    // K = 27: unrolled by 2 and 4, a remainder of 1 and 3 steps.
    std::string model = oneNodeModel("Gemm", {20, 27}, {27, 48}, {48}, {20, 48}, {});
    std::vector<float> a = randomValues({20, 27}, 3), w = randomValues({27, 48}, 1),
                       bias = randomValues({48}, 2), ref(20 * 48);
    for (int64_t i = 0; i < 20; ++i)
      for (int64_t j = 0; j < 48; ++j) {
        double sum = bias[(size_t)j];
        for (int64_t k = 0; k < 27; ++k)
          sum += (double)a[(size_t)(i * 27 + k)] * w[(size_t)(k * 48 + j)];
        ref[(size_t)(i * 48 + j)] = (float)std::max(sum, 0.0); // the Relu after
      }
    std::vector<std::string> plans = everyCandidate(model, {20, 27}, t, ref, 27);
    CHECK(countWith(plans, "unroll=4") > 0);
    CHECK(countWith(plans, "rows_outer") > 0);
  }
  SECTION("a depthwise convolution: stack planes and grid roundings") {
    std::string model =
        oneNodeModel("Conv", {1, 6, 9, 9}, {6, 1, 5, 5}, {6}, {1, 6, 5, 5},
                     {{"kernel_shape", 5}, {"pads", 2}, {"strides", 2}, {"group", 6}});
    std::vector<std::string> plans = everyCandidate(
        model, {1, 6, 9, 9}, t, referenceConv({1, 6, 9, 9}, 6, 5, 2, 2, 6), 25);
    CHECK(plans.size() == 6);
    CHECK(countWith(plans, "plane<=0 ") == 2);
  }
  SECTION("a strided convolution with cache blocks") {
    // 20 x 3x3 = 180 reduction steps over a small L1: blocked tiles.
    std::string model = oneNodeModel("Conv", {1, 20, 7, 9}, {40, 20, 3, 3}, {40}, {1, 40, 4, 5},
                                     {{"kernel_shape", 3}, {"pads", 1}, {"strides", 2}});
    TargetDesc small = avx512(2048, 4096);
    std::vector<std::string> plans = everyCandidate(
        model, {1, 20, 7, 9}, small, referenceConv({1, 20, 7, 9}, 40, 3, 1, 2, 1), 180);
    CHECK(plans.size() > 2);
    CHECK(countWith(plans, "blocks=") > 0);
  }
}

TEST_CASE("every dot-product tile of schedule search equals the plain integer kernels",
          "[tune][quantization]") {
  // A QLinearConv on VNNI: each candidate tile against the plain kernels.
  Shape x = {1, 20, 5, 8};
  std::string model = qlinearConvModel(x, 40, 3, 1, 1, 2, 7, {1, 40, 5, 8});
  std::vector<float> in = randomValues(x, 4);
  TargetDesc plain = avx512(32768, 524288);
  std::vector<float> want = compileAndRun(model, plain, in, nullptr);
  TargetDesc dot = plain;
  dot.IntMacs.push_back(MacForm::X86Vnni);
  dot.IntMacs.push_back(MacForm::X86Madd16);
  std::vector<std::string> plans;
  compileAndRun(model, dot, in, nullptr,
                [&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
                  for (const ir::KernelPlan &p : c)
                    plans.push_back(p.str());
                  return size_t{0};
                });
  REQUIRE(plans.size() > 1);
  // VNNI's quads and, where the target has both, pmaddwd's pairs.
  CHECK(countWith(plans, " pairs") > 0);
  CHECK(countWith(plans, " pairs") < plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    CHECK(plans[i].find("dot_tile=") != std::string::npos);
    std::vector<float> got =
        compileAndRun(model, dot, in, nullptr,
                      [&](const ir::Node &, const std::vector<ir::KernelPlan> &) { return i; });
    checkEqualAndVarying(got, want);
  }
}

TEST_CASE("every candidate of a NEON-shaped target, compiled by LLVM, computes the definition",
          "[tune]") {
  // The plans of an AArch64 Cortex-A76 (4 lanes, cache blocks for 512
  // channels) lowered and compiled for this machine by LLVM, where stack
  // buffers are not zeroed as the interpreter's are: a blocked tile's
  // partial sums once started from garbage here (the kernel vectorizer
  // turned their zeroing loop of 4-lane stores into strided stores).
  TargetDesc t = llvmgen::describeTarget(llvmgen::resolveTarget("aarch64-linux", "cortex-a76", ""));
  std::string model = oneNodeModel("Conv", {1, 512, 7, 7}, {16, 512, 3, 3}, {16}, {1, 16, 7, 7},
                                   {{"kernel_shape", 3}, {"pads", 1}});
  std::vector<float> in = randomValues({1, 512, 7, 7}, 3);
  std::vector<float> ref = referenceConv({1, 512, 7, 7}, 16, 3, 1, 1, 1);
  std::vector<std::string> plans;
  auto compile = [&](const passes::PlanChooser &choose) {
    auto g = onnx::loadModelBytes(model, "test.onnx", "", {});
    PipelineOptions po;
    po.Name = "m";
    po.Target = t;
    po.ChoosePlan = choose;
    return runPipeline(*g, po);
  };
  compile([&](const ir::Node &, const std::vector<ir::KernelPlan> &c) {
    for (const ir::KernelPlan &p : c)
      plans.push_back(p.str());
    return size_t{0};
  });
  CHECK(countWith(plans, "blocks=") > 0);
  for (size_t i = 0; i < plans.size(); ++i) {
    INFO("candidate " << i << ": " << plans[i]);
    kir::Program p =
        compile([&](const ir::Node &, const std::vector<ir::KernelPlan> &) { return i; });
    llvmgen::HostModel host(p);
    std::vector<float> out(ref.size(), NAN);
    host.run({in.data()}, {out.data()});
    size_t bad = 0;
    for (size_t k = 0; k < ref.size(); ++k)
      if (!(std::fabs(out[k] - ref[k]) <= 2e-7 * 4608) && bad++ == 0)
        UNSCOPED_INFO("first difference at " << k << ": " << out[k] << " vs " << ref[k]);
    CHECK(bad == 0);
  }
}
