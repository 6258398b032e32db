//===- Quantize.h - Post-training quantization (--quantize int8) ----------===//
//
// Three steps, one file each, run by the pipeline's "quantize" pass on the
// float graph (after fold-batch-norm):
//
//  - annotate (Annotate.cpp) decides which nodes run in int8 and which
//    tensors need a calibrated range;
//  - calibrate (Calibrate.cpp) runs the float model, compiled for the host,
//    on the user's samples and turns what it sees into a range per tensor
//    (min/max, a percentile, or the KL-divergence threshold);
//  - realize (Realize.cpp) writes the quantized model in QDQ form:
//    per-output-channel symmetric int8 weights, int32 biases, per-tensor
//    uint8 activations with scale and zero point. fuse-qdq then makes
//    integer kernels of it, as it does for imported QDQ models.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mlcc::quantizer {

enum class CalibrationMethod { MinMax, Percentile, Entropy };

struct QuantizeOptions {
  CalibrationMethod Method = CalibrationMethod::MinMax;
  /// For Percentile: the share of values (in percent) inside the range, on
  /// each side.
  double Percentile = 99.99;
  /// --quantize-io: quantized graph inputs and outputs become uint8 (their
  /// scale and zero point go to the header) instead of float converted at
  /// the boundary.
  bool QuantizeIo = false;
  /// The largest magnitude of a quantized weight: 127, or 63 with
  /// --reduce-range (7-bit weights, as ONNX Runtime's quantizer's
  /// reduce_range), so that a u8 x s8 pair sum, at most 2 * 255 * 63, fits
  /// in int16: x86 kernels without VNNI (vpmaddubsw, which saturates the
  /// pair sums) then compute the realized model exactly, as mlcc does.
  int WeightMax = 127;
  /// --weight-bits: 8, or 4 (int4 weights per output channel, symmetric,
  /// [-7, 7]; activations stay 8-bit: w4a8). WeightMax applies to 8.
  int WeightBits = 8;
  /// --keep-float NODE: nodes (by ONNX name) that stay float, e.g. the
  /// layers `mlcc check` shows losing the most accuracy.
  std::set<std::string> KeepFloat;
};

/// Parses "minmax", "percentile", "percentile=P" or "entropy" (a Usage
/// error otherwise).
QuantizeOptions parseCalibrationMethod(const std::string &text);

/// What annotate decided.
struct Annotation {
  /// Nodes that run in int8 (by name).
  std::set<std::string> Nodes;
  /// The float tensors that are quantized (inputs and outputs of those
  /// nodes), in graph order; each gets a QuantizeLinear/DequantizeLinear.
  std::vector<std::string> Tensors;
  /// Tensors whose quantization parameters are those of another tensor
  /// (the output of an op that only moves or selects values: MaxPool,
  /// Reshape, a lone Relu...): tensor -> the tensor it takes them from.
  std::map<std::string, std::string> SameAs;
  /// The tensors calibrate must observe (Tensors minus SameAs keys).
  std::vector<std::string> Observed;
};

/// Decides the int8 part of `g` (see Annotate.cpp). Throws a Usage error
/// when no node can run in int8.
/// Nodes named in `keepFloat` stay float (a Usage error names one the
/// graph lacks).
Annotation annotate(const ir::Graph &g, const std::set<std::string> &keepFloat = {});

/// The range [Lo, Hi] of a tensor's values that its quantization covers.
struct Range {
  double Lo = 0, Hi = 0;
};

/// Runs the float model on sample `index` and passes each observed tensor's
/// values to `sink(observedIndex, data, count)`.
using SampleRunner = std::function<void(
    size_t index, const std::function<void(size_t, const float *, size_t)> &sink)>;

/// Runs every sample (twice for the histogram methods) and returns the
/// range of each observed tensor.
std::map<std::string, Range> calibrate(const Annotation &a, size_t numSamples,
                                       const SampleRunner &run,
                                       const QuantizeOptions &options);

/// Range selection from a histogram of |x| over [0, maxAbs] (bins of equal
/// width): the threshold whose quantization to `levels` levels loses the
/// least information (smallest KL divergence). Exposed for tests.
double entropyThreshold(const std::vector<double> &hist, double maxAbs, int levels);

/// The nodes of a quantized graph (after fuse-qdq: one with an integer
/// operator) that still compute in float, the entry quantization and exit
/// dequantization aside: what the integer path lacks, run as float between
/// DequantizeLinear and QuantizeLinear ("name (Op)" each; none for a float
/// graph). `mlcc -v` and --report name them.
std::vector<std::string> floatFallbacks(const ir::Graph &g);

/// Rewrites `g` into QDQ form for the ranges (see Realize.cpp).
void realize(ir::Graph &g, const Annotation &a, const std::map<std::string, Range> &ranges,
             const QuantizeOptions &options = {});

} // namespace mlcc::quantizer
