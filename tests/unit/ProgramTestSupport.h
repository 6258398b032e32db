//===- ProgramTestSupport.h - Whole programs run by the tests -------------===//
//
// What the program tests share: ONNX models built in memory (one node and
// the Relu after it, the int8 QDQ convolutions and matrix products), a
// program compiled in-process and run through the kernel interpreter (arena
// offsets as planned), an AVX-512-shaped target with caches of a chosen
// size, and the definition of a convolution in double.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/pipeline/Pipeline.h"
#include "frontends/onnx/OnnxSchema.pb.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace mlcc::testsupport {

namespace pb = ::mlcc::onnxpb;

/// Sets `v` to a float tensor `name` of shape `dims`.
void addFloatInfo(pb::ValueInfo *v, const std::string &name, const Shape &dims);

/// Values drawn uniformly from [-1, 1] for a tensor of shape `dims`.
std::vector<float> randomValues(const Shape &dims, unsigned seed);

/// `n` integers drawn uniformly from [lo, hi] (int8 weights, int32 biases).
std::vector<int64_t> randomInts(std::mt19937 &rng, int64_t n, int lo, int hi);

/// A float initializer.
void addInitializer(pb::Graph *g, const std::string &name, const Shape &dims,
                    const std::vector<float> &values);

/// A model's graph with the float input "X" of shape `x`, opset 13.
pb::Graph *newGraph(pb::Model &m, const Shape &x);

/// A model of one node `op` (input X; W and B initializers with the values
/// of randomValues(.., 1) and (.., 2)) and a Relu after it (a fused
/// epilogue).
std::string oneNodeModel(const std::string &op, const Shape &x, const Shape &w,
                         const Shape &bias, const Shape &y,
                         const std::vector<std::pair<std::string, int64_t>> &attrs);

/// Compiles `model` for `target` and runs it on `x` with the interpreter.
/// With `choose`, plan-kernels picks each node's plan with it (--tune).
std::vector<float> compileAndRun(const std::string &model, const TargetDesc &target,
                                 const std::vector<float> &x, std::string *kernels,
                                 const passes::PlanChooser &choose = {});

/// An AVX-512-shaped target (64-byte vectors, 32 registers, FMA) with an
/// L1 of `l1` and an L2 of `l2` bytes.
TargetDesc avx512(int64_t l1, int64_t l2);

/// relu(conv(x, w) + b) for NCHW x [1, C, H, W], square kernel k, equal
/// pads and strides, `group` groups: the definition, in double. With
/// `operand`, x, w and b pass through it first (float16 rounding).
std::vector<float> referenceConv(const Shape &x, int64_t m, int64_t k, int64_t pad,
                                 int64_t stride, int64_t group,
                                 float (*operand)(float) = nullptr);

/// A node `op` named after its one output `out`, reading `in`.
pb::Node *addNode(pb::Graph *g, const std::string &op, const std::vector<std::string> &in,
                  const std::string &out);

/// An initializer of an integer type (ONNX data type `type`: 2 uint8,
/// 3 int8, 6 int32) or float scale.
void addIntInitializer(pb::Graph *g, const std::string &name, int type, const Shape &dims,
                       const std::vector<int64_t> &values);

/// X (float) -> QuantizeLinear (type `xtype`, zero point `xzp`) ->
/// QLinearConv with int8 weights (per-channel scales, zero point 0), a
/// bias, output uint8 -> DequantizeLinear.
std::string qlinearConvModel(const Shape &x, int64_t m, int64_t k, int64_t pad, int64_t stride,
                             int xtype, int64_t xzp, const Shape &y, int64_t group = 1);

/// X [M, K] (float) -> QuantizeLinear (type `xtype`, zero point `xzp`) ->
/// QLinearMatMul with int8 B [K, N] (per-column scales), or com.microsoft
/// QGemm with B stored [N, K] (transB) and an int32 bias -> DequantizeLinear.
std::string qlinearMatMulModel(int64_t m, int64_t k, int64_t n, int xtype, int64_t xzp,
                               bool gemm);

/// `got` equals `want`, which is not a constant output.
void checkEqualAndVarying(const std::vector<float> &got, const std::vector<float> &want);

} // namespace mlcc::testsupport
