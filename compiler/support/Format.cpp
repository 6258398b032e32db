//===- Format.cpp - printf into a std::string -----------------------------===//
#include "compiler/support/Format.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace mlcc {

std::string formatText(const char *fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string s((size_t)std::max(n, 0) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), fmt, again);
  va_end(again);
  s.pop_back();
  return s;
}

} // namespace mlcc
