#include "compiler/output/OutputFiles.h"

#include "compiler/support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace mlcc::output {

namespace {
std::string dirOf(const std::string &path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos)
    return ".";
  return pos == 0 ? "/" : path.substr(0, pos);
}
} // namespace

OutputFiles::~OutputFiles() {
  if (!Committed)
    for (auto &e : Entries)
      std::remove(e.Temp.c_str());
}

void OutputFiles::checkWritable(const std::string &path) {
  std::string dir = dirOf(path);
  if (access(dir.c_str(), W_OK) != 0)
    fail(ErrorKind::Io) << "cannot write '" << path << "': folder '" << dir
                        << "' " << (errno == ENOENT ? "does not exist"
                                                    : std::strerror(errno));
}

std::string OutputFiles::temporaryFor(const std::string &path) {
  checkWritable(path);
  std::string temp = path + ".tmp" + std::to_string(getpid()) + "." +
                     std::to_string(Entries.size());
  Entries.push_back({temp, path});
  return temp;
}

void OutputFiles::write(const std::string &path, const std::string &content) {
  std::string temp = temporaryFor(path);
  std::ofstream out(temp, std::ios::binary);
  if (!out)
    fail(ErrorKind::Io) << "cannot write '" << path << "': "
                        << std::strerror(errno);
  out.write(content.data(), (std::streamsize)content.size());
  out.close();
  if (!out)
    fail(ErrorKind::Io) << "cannot write '" << path << "' (disk full?)";
}

void OutputFiles::commit() {
  for (auto &e : Entries)
    if (std::rename(e.Temp.c_str(), e.Final.c_str()) != 0)
      fail(ErrorKind::Io) << "cannot create '" << e.Final
                          << "': " << std::strerror(errno);
  Committed = true;
}

} // namespace mlcc::output
