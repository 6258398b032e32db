//===- Samples.h - Calibration samples from .npy files or .pb folders -----===//
#pragma once

#include "compiler/ir/Graph.h"

#include <string>
#include <vector>

namespace mlcc::quantizer {

/// A NumPy .npy file (format versions 1-3, C order, little-endian or
/// one-byte types) as a tensor. An Io or Invalid error names the file and
/// what is wrong.
Tensor loadNpy(const std::string &path);

/// The calibration samples of every graph input, as --calibrate gives
/// them: NAME=FILE.npy (an array of shape [N] followed by the input's
/// shape, of the input's type) or NAME=FOLDER (one serialized ONNX
/// TensorProto per .pb file, in name order, each of the input's shape or of
/// [n] followed by it). Every float input needs samples, and all inputs the
/// same number N. Returns one dense byte buffer per graph input, holding N
/// samples back to back, and N through `count`.
std::vector<std::vector<uint8_t>> loadSamples(const ir::Graph &g,
                                              const std::vector<std::string> &specs,
                                              size_t &count);

} // namespace mlcc::quantizer
