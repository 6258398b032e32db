//===- CEmitter.h - Kernel IR to C99 --------------------------------------===//
//
// Writes a program as one portable C99 translation unit: helper functions,
// constant data, one static function per kernel, the entry points and the
// model info. It includes the generated header by name. The emitter knows
// kernel IR only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <string>

namespace mlcc::cgen {

/// C source of the library; `headerName` is the file name of NAME.h.
std::string emitC(const kir::Program &p, const std::string &headerName);

} // namespace mlcc::cgen
