//===- Error.h - Compile errors with node context -------------------------===//
//
// mlcc reports every user-facing problem as a CompileError: one line that names
// where the problem is (node name and op type, or a tensor/file) and what was
// expected. The CLI catches it at the top level, prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <exception>
#include <utility>

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

const char *errorKindName(ErrorKind kind);

/// `text` made safe for a one-line message on a terminal: control bytes and
/// bytes that are not valid UTF-8 become \xNN (names in a model are
/// arbitrary bytes); valid UTF-8 is kept.
std::string escapeForMessage(const std::string &text);

/// The single error type of the compiler. `what()` is the full one-line
/// message; `detail()` excludes the location prefix.
class CompileError : public std::runtime_error {
public:
  CompileError(ErrorKind kind, std::string message)
      : std::runtime_error(message), Kind(kind) {}
  ErrorKind kind() const { return Kind; }

private:
  ErrorKind Kind;
};

/// Builds a message with `<<` and throws it as a CompileError:
///   fail(ErrorKind::Invalid) << "node 'conv1' (Conv): ...";
/// The throw happens when the temporary is destroyed at the end of the
/// full expression, so the whole message is assembled first.
class ErrorBuilder {
public:
  explicit ErrorBuilder(ErrorKind kind, const std::string &prefix = "")
      : Kind(kind), Pending(std::uncaught_exceptions()) {
    Stream << prefix;
  }
  ErrorBuilder(const ErrorBuilder &) = delete;
  ErrorBuilder &operator=(const ErrorBuilder &) = delete;
  ~ErrorBuilder() noexcept(false) {
    // If building the message itself threw, let that exception propagate.
    if (std::uncaught_exceptions() == Pending)
      throw CompileError(Kind, escapeForMessage(Stream.str()));
  }
  template <typename T> ErrorBuilder &operator<<(const T &value) {
    Stream << value;
    return *this;
  }

private:
  ErrorKind Kind;
  int Pending;
  std::ostringstream Stream;
};

inline ErrorBuilder fail(ErrorKind kind) { return ErrorBuilder(kind); }

/// Asserts an internal invariant; a violation is an mlcc bug, reported as an
/// Internal error rather than a crash.
#define MLCC_CHECK(cond, msg)                                                  \
  do {                                                                         \
    if (!(cond))                                                               \
      ::mlcc::fail(::mlcc::ErrorKind::Internal)                                \
          << "internal error: " << msg << " (" << __FILE__ << ":" << __LINE__  \
          << ")";                                                              \
  } while (0)

} // namespace mlcc
