//===- CEmitter.h - Kernel IR to C99 --------------------------------------===//
//
// Writes a program as one portable C99 translation unit: helper functions,
// constant data, one static function per kernel, the entry points and the
// model info. It includes the generated header by name. The emitter knows
// kernel IR only.
//
// The pieces below the entry point are shared with the CUDA emitter
// (targets/cuda), which writes the same kernels as device code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <ostream>
#include <string>

namespace mlcc::cgen {

/// C source of the library; `headerName` is the file name of NAME.h.
std::string emitC(const kir::Program &p, const std::string &headerName);

// --- shared with targets/cuda ----------------------------------------------

enum class Dialect {
  C,    ///< C99; GPU loops run as serial loops
  Cuda, ///< CUDA C++: GPU loops bind to blockIdx.x / threadIdx.x
};

/// The helper functions (conversions, NaN-propagating min/max, dot4) every
/// source starts with; device functions when compiled by nvcc.
const char *preludeText();
/// The C type of a kernel element type.
const char *cType(DType t);
/// A C literal of the float type `t` (f32 or f64).
std::string floatLiteral(DType t, double v);
/// The function `qualifiers name(params) { body }` of kernel `k`.
void writeKernel(std::ostream &os, const kir::Kernel &k, const std::string &qualifiers,
                 const std::string &name, Dialect d);
/// A `static const` array with the constant's elements, named `prefix`
/// followed by its name.
void writeConstant(std::ostream &os, const kir::ConstantData &c, const std::string &prefix);
/// The argument for parameter `param` of `k` bound to `s`: in->x, out->y,
/// the arena `a` + offset, the constant's array or, with `constantOffsets`,
/// the weights buffer `w` + its offset.
std::string storageExpr(const kir::Program &p, const kir::Kernel &k, size_t param,
                        const kir::Storage &s, const std::vector<int64_t> *constantOffsets);
/// The checks a run function starts with: `in`, `out` and their pointers
/// not NULL, the arena (declared as `a`) present, large and aligned enough.
void writeArgumentChecks(std::ostream &os, const kir::Program &p);
/// NAME_run_ptrs(inputs, outputs, PARAMS): fills the structs from the
/// pointer arrays and returns NAME_run(&in, &out, ARGS).
void writeRunPtrs(std::ostream &os, const kir::Program &p, const std::string &params,
                  const std::string &args);
/// The shape tables, mlcc_tensor_info arrays and NAME_info().
void writeModelInfo(std::ostream &os, const kir::Program &p);

} // namespace mlcc::cgen
