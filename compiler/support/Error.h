//===- Error.h - Compile errors with node context -------------------------===//
//
// mlcc reports every user-facing problem as a CompileError (mlcc/Error.h, the
// public API's): one line that names where the problem is (node name and op
// type, or a tensor/file) and what was expected. The CLI catches it at the top level, prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlcc/Error.h" // ErrorKind, CompileError: the public API's

#include <sstream>
#include <stdexcept>
#include <string>
#include <exception>
#include <utility>

namespace mlcc {

/// `text` made safe for a one-line message on a terminal: control bytes and
/// bytes that are not valid UTF-8 become \xNN (names in a model are
/// arbitrary bytes); valid UTF-8 is kept.
std::string escapeForMessage(const std::string &text);

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
