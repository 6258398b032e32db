#include "compiler/support/Error.h"

namespace mlcc {

const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Invalid:
    return "invalid";
  case ErrorKind::Unsupported:
    return "unsupported";
  case ErrorKind::DataDependent:
    return "data-dependent";
  case ErrorKind::Io:
    return "io";
  case ErrorKind::Usage:
    return "usage";
  case ErrorKind::Internal:
    return "internal";
  }
  return "unknown";
}

} // namespace mlcc
