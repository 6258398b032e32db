//===- Files.h - Whole files and temporary folders -----------------------------------===//
#pragma once

#include <string>

namespace mlcc {

/// The bytes of the file at `path`; an Io error names `what` ("model",
/// "NumPy file", ...), the path and the reason when it cannot be read.
std::string readFile(const std::string &path, const char *what);

/// A private temporary folder ($TMPDIR or /tmp), removed on scope exit.
struct TempDir {
  std::string Path;
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  /// Writes `text` to the file `name` in the folder.
  void write(const std::string &name, const std::string &text) const;
};

} // namespace mlcc
