//===- Files.cpp - Reading whole files ------------------------------------===//
#include "compiler/support/Files.h"

#include "compiler/support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mlcc {

std::string readFile(const std::string &path, const char *what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(ErrorKind::Io) << "cannot open " << what << " '" << path
                        << "': " << std::strerror(errno);
  // In one read where the size is known (a model of many megabytes),
  // in pieces where it is not (a pipe).
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size > 0 && in) {
    bytes.resize((size_t)size);
    in.read(bytes.data(), size);
    if (in.gcount() != size)
      fail(ErrorKind::Io) << "cannot read " << what << " '" << path << "'";
    return bytes;
  }
  in.clear();
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    fail(ErrorKind::Io) << "cannot read " << what << " '" << path << "'";
  return ss.str();
}

TempDir::TempDir() {
  std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  tmpl += "/mlcc-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data()))
    fail(ErrorKind::Io) << "cannot create a temporary folder in " << tmpl;
  Path = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(Path, ec);
}

void TempDir::write(const std::string &name, const std::string &text) const {
  FILE *f = std::fopen((Path + "/" + name).c_str(), "wb");
  bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f)
    std::fclose(f);
  if (!ok)
    fail(ErrorKind::Io) << "cannot write temporary file " << name;
}

} // namespace mlcc
