//===- OnnxWriter.h - The graph IR as an ONNX model file ------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <string>

namespace mlcc::onnx {

/// Serializes `g` as an ONNX ModelProto (IR version 8): its inputs and
/// outputs with their types and shapes, its constants as initializers
/// (raw little-endian data), its nodes with their attributes. For --emit
/// onnx (the model after mlcc's graph passes up to quantization: a
/// realized int8 model in QDQ form). An Unsupported error names a node
/// whose attributes cannot be written (subgraphs).
std::string writeModel(const ir::Graph &g);

} // namespace mlcc::onnx
