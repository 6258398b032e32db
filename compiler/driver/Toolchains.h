//===- Toolchains.h - The C compiler and nvcc behind --backend c and cuda --===//
#pragma once

#include "compiler/kernel/Program.h"

#include <string>
#include <vector>

namespace mlcc {

/// `program` as it would run: itself when it names a path, else the first
/// executable of that name on PATH; empty when there is none.
std::string findProgram(const std::string &program);

/// Compiles the generated C with the host compiler ($CC, default cc; with
/// $CFLAGS after the defaults); returns the object.
std::string compileC(const std::string &source, const std::string &header,
                     const std::string &name);

/// The --cuda-arch list: sm_NN names (default sm_75); a Usage error for
/// another name.
std::vector<std::string> cudaArchs(const std::string &list);

/// The CUDA target's weights image as a host object (NAME_weights.o), so
/// that the weights never pass through nvcc as source text.
std::string cudaWeightsObject(const kir::Program &p);

/// Compiles the generated CUDA with nvcc; returns the object (device code
/// for every architecture, and the last one's PTX, in a fat binary).
std::string compileCuda(const std::string &source, const std::string &header,
                        const std::string &name, const std::vector<std::string> &archs);

} // namespace mlcc
