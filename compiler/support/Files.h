//===- Files.h - Reading whole files --------------------------------------===//
#pragma once

#include <string>

namespace mlcc {

/// The bytes of the file at `path`; an Io error names `what` ("model",
/// "NumPy file", ...), the path and the reason when it cannot be read.
std::string readFile(const std::string &path, const char *what);

} // namespace mlcc
