//===- OutputFiles.h - All-or-nothing output ------------------------------===//
//
// Collects the files a compilation produces as temporaries beside their
// final paths and renames them into place only when everything succeeded.
// If the compilation fails (or the object is destroyed without commit()),
// the temporaries are removed: no partial output is ever left behind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace mlcc::output {

class OutputFiles {
public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles &) = delete;
  ~OutputFiles();

  /// Fails early (Io error) if `path`'s folder does not exist or is not
  /// writable, before any work is done.
  static void checkWritable(const std::string &path);

  /// Writes `content` to a temporary for `path`.
  void write(const std::string &path, const std::string &content);
  /// Returns a fresh temporary path for `path` that a tool may write; it is
  /// renamed to `path` on commit.
  std::string temporaryFor(const std::string &path);
  /// Renames every temporary to its final path.
  void commit();

private:
  struct Entry {
    std::string Temp, Final;
  };
  std::vector<Entry> Entries;
  bool Committed = false;
};

} // namespace mlcc::output
