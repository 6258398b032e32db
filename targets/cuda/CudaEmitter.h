//===- CudaEmitter.h - Kernel IR to CUDA C++ ------------------------------===//
//
// Writes a GPU-scheduled program (kir::mapToGpu) as one CUDA translation
// unit: the helpers as device functions, NAME_load_weights, which copies the
// weights image (weightsImage: bytes, not source, so that nvcc compiles
// kernels only; the driver puts it in an object of its own, NAME_weights.o)
// into the caller's device buffer in one copy, one __global__
// function per launch of each kernel, and NAME_run, which enqueues the
// launches and the cuBLAS calls of the matrix products (kernels with a
// kir::GemmCall, unless library dispatch is off) on the caller's stream.
// The interface is the header of output::writeHeader(..., Interface::Cuda). Like
// the other emitters it knows kernel IR only, no op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <string>

namespace mlcc::cudagen {

/// CUDA source of the library; `headerName` is the file name of NAME.h.
std::string emitCuda(const kir::Program &p, const std::string &headerName);

/// The weights as the device buffer holds them (each constant at its offset
/// of kir::weightsLayout, the gaps zero), which NAME_load_weights copies from
/// the host array weightsSymbol(p).
std::string weightsImage(const kir::Program &p);
std::string weightsSymbol(const kir::Program &p);

} // namespace mlcc::cudagen
