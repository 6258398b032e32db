//===- Format.h - printf into a std::string -------------------------------===//
#pragma once

#include <string>

namespace mlcc {

/// What printf(fmt, ...) would print, as a string (tables of the check and
/// the listings, which the library returns and the command line prints).
std::string formatText(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

} // namespace mlcc
