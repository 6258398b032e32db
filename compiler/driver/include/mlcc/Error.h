//===- mlcc/Error.h - The one error type of the mlcc compiler API ---------===//
//
// Part of the public C++ API (installed as <mlcc/Error.h>; standard library
// only). Every problem the compiler reports - a malformed model, an
// operator it does not support, bad options, a budget exceeded - is thrown
// as a CompileError: `what()` is the one line the command line prints after
// "mlcc: error: ", `kind()` says which exit status it prints it with.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stdexcept>
#include <string>

namespace mlcc {

/// What kind of problem a CompileError reports. The conformance harness uses
/// the kind to tell "unsupported" cases from real failures, and to retry a
/// case with shape-determining inputs frozen.
enum class ErrorKind {
  Invalid,       ///< The model is malformed or violates the ONNX spec.
  Unsupported,   ///< Valid ONNX that mlcc does not handle (yet).
  DataDependent, ///< An output shape depends on runtime values of an input.
  Io,            ///< A file could not be read or written.
  Usage,         ///< Bad command-line usage.
  OverBudget,    ///< A --max-arena/--max-weights/--max-code budget is exceeded.
  Internal,      ///< A bug in mlcc.
};

/// "invalid", "unsupported", "data-dependent", "io", "usage", "over-budget"
/// or "internal".
const char *errorKindName(ErrorKind kind);

/// The exit status of the command line for an error of this kind: 1 invalid
/// model or I/O error, 2 usage, 3 unsupported, 4 data-dependent, 5 over a
/// budget, 70 internal.
int exitStatus(ErrorKind kind);

/// The single error type of the compiler. `what()` is the full one-line
/// message.
class CompileError : public std::runtime_error {
public:
  CompileError(ErrorKind kind, std::string message)
      : std::runtime_error(message), Kind(kind) {}
  ErrorKind kind() const { return Kind; }

private:
  ErrorKind Kind;
};

} // namespace mlcc
