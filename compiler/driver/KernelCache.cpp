#include "compiler/driver/KernelCache.h"

#include "compiler/support/Error.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

namespace mlcc {

namespace fs = std::filesystem;

namespace {
#include "BuildId.inc" // kBuildId
} // namespace

const char *KernelCache::buildId() { return kBuildId; }

KernelCache::KernelCache(std::string dir, int64_t maxBytes)
    : Dir(std::move(dir)), MaxBytes(maxBytes) {
  std::error_code ec;
  fs::create_directories(Dir, ec);
  if (ec || !fs::is_directory(Dir))
    fail(ErrorKind::Io) << "cannot use the kernel cache folder '" << Dir << "': "
                        << (ec ? ec.message() : "not a folder");
}

std::string KernelCache::pathOf(const std::string &key) const {
  // One folder per compiler build: an edited compiler never reads its
  // predecessor's objects (trim removes them in time).
  return Dir + "/" + kBuildId + "/" + key.substr(0, 2) + "/" + key + ".o";
}

bool KernelCache::get(const std::string &key, std::string &object) {
  const std::string path = pathOf(key);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream s;
  s << in.rdbuf();
  if (!in || s.str().empty())
    return false;
  object = s.str();
  std::error_code ec; // most recently used; a failure only ages it
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  return true;
}

void KernelCache::put(const std::string &key, const std::string &object) {
  const std::string path = pathOf(key);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // A file of this process and thread, renamed into place once complete:
  // a reader sees the whole object or none.
  std::ostringstream tmp;
  tmp << path << ".tmp." << getpid() << "." << std::this_thread::get_id();
  {
    std::ofstream out(tmp.str(), std::ios::binary | std::ios::trunc);
    out.write(object.data(), (std::streamsize)object.size());
    out.close();
    if (!out) { // a full disk or a read-only folder: no cache, same output
      fs::remove(tmp.str(), ec);
      return;
    }
  }
  if (std::rename(tmp.str().c_str(), path.c_str()) != 0) {
    fs::remove(tmp.str(), ec);
    return;
  }
  ++Stored;
}

void KernelCache::trim() {
  if (Stored == 0)
    return;
  struct Entry {
    fs::file_time_type Time;
    int64_t Bytes;
    fs::path Path;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::recursive_directory_iterator(Dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec))
      continue;
    const fs::path &p = it->path();
    auto time = it->last_write_time(ec);
    if (ec)
      continue;
    // A temporary file left by a compile that was killed, an hour on.
    if (p.string().find(".o.tmp.") != std::string::npos) {
      if (now - time > std::chrono::hours(1))
        fs::remove(p, ec);
      continue;
    }
    if (p.extension() != ".o")
      continue;
    int64_t bytes = (int64_t)it->file_size(ec);
    if (ec)
      continue;
    entries.push_back({time, bytes, p});
    total += bytes;
  }
  if (total <= MaxBytes)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.Time < b.Time; });
  for (const Entry &e : entries) {
    if (total <= MaxBytes - MaxBytes / 4)
      break;
    if (fs::remove(e.Path, ec))
      total -= e.Bytes;
  }
}

} // namespace mlcc
