//===- Files.cpp - Reading whole files ------------------------------------===//
#include "compiler/support/Files.h"

#include "compiler/support/Error.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mlcc {

std::string readFile(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(ErrorKind::Io) << "cannot open " << what << " '" << path
                        << "': " << std::strerror(errno);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    fail(ErrorKind::Io) << "cannot read " << what << " '" << path << "'";
  return ss.str();
}

} // namespace mlcc
