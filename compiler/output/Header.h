//===- Header.h - The generated C header ----------------------------------===//
//
// Writes NAME.h for a program: the embedded runtime interface (runtime-c),
// arena size/alignment macros, the input and output structs and the entry
// points. The header is the same for every CPU target and backend; the CUDA
// target's has the same shape with device pointers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <string>

namespace mlcc::output {

/// The version string recorded in generated files.
const char *mlccVersion();

/// Which interface a generated header declares.
enum class Interface {
  Host, ///< NAME_run on the caller's buffers in host memory
  Cuda, ///< the CUDA target's: device pointers, device weights, a stream and a cuBLAS handle
};

/// Text of the generated header. `source` names the model file in the
/// banner comment.
std::string writeHeader(const kir::Program &p, const std::string &source,
                        Interface interface = Interface::Host);

/// Alignment of every constant in the CUDA target's device weights.
constexpr int64_t kCudaWeightsAlign = 256;
/// True when a kernel of the program is a matrix product that the CUDA
/// target hands to cuBLAS (the run then needs a cuBLAS handle).
bool usesCublas(const kir::Program &p);

/// A C string literal (with quotes) for arbitrary bytes.
std::string cStringLiteral(const std::string &s);
/// C type of one element as it appears in the interface (uint16_t for
/// f16/bf16, uint8_t for bool).
const char *cInterfaceType(DType t);
/// "[1][3][224][224]" or "scalar".
std::string shapeComment(const Shape &dims);
/// The shape NAME_info gives for `t`: -1 for each axis that follows
/// run-time dimensions.
Shape infoShape(const kir::IoTensor &t);
/// The model name in upper case, for macros.
std::string upperName(const std::string &s);

} // namespace mlcc::output
