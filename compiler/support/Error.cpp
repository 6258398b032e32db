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
  case ErrorKind::OverBudget:
    return "over-budget";
  case ErrorKind::Internal:
    return "internal";
  }
  return "unknown";
}

int exitStatus(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Usage: return 2;
  case ErrorKind::Unsupported: return 3;
  case ErrorKind::DataDependent: return 4;
  case ErrorKind::OverBudget: return 5;
  case ErrorKind::Internal: return 70;
  default: return 1;
  }
}

std::string escapeForMessage(const std::string &text) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = (unsigned char)text[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f)
        escape(c);
      else
        out += (char)c;
      ++i;
      continue;
    }
    // A UTF-8 sequence: lead byte, 1-3 continuation bytes, shortest form,
    // no surrogates, at most U+10FFFF.
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k)
      ok = ((unsigned char)text[i + k] & 0xc0) == 0x80;
    if (ok && len >= 3) {
      unsigned char c1 = (unsigned char)text[i + 1];
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) &&
           !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (!ok) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text, i, len);
    i += len;
  }
  return out;
}

} // namespace mlcc
