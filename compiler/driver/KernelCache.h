//===- KernelCache.h - Kernels' object code kept between compiles ---------===//
//
// --cache-dir DIR (or $MLCC_CACHE_DIR): the object code of each kernel,
// in DIR/XX/KEY.o, found again by a later compile of the same kernel for
// the same target with the same compiler build, in this model or another.
// The key hashes the code generator's key of the kernel (its module's LLVM
// IR, the target, the options: llvmgen::ProgramObjects) with this build's
// identity (a hash of the compiler's sources, made when it is built), so
// an edited compiler never reads its predecessor's objects.
//
// Safe when several compiles share the folder: an object is written to a
// file of its own and renamed into place (readers see all of it or
// nothing); a file that does not read as an object of the key's size is a
// miss. Bounded: after a compile that stored objects, when the folder holds
// more than its limit (--cache-max, default 512 MiB), the least recently
// used objects (a hit touches its file) are removed down to 3/4 of it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "targets/llvm/Targets.h"

#include <atomic>
#include <cstdint>
#include <string>

namespace mlcc {

class KernelCache : public llvmgen::ObjectCache {
public:
  /// The cache in `dir` (made when missing) holding at most `maxBytes`.
  KernelCache(std::string dir, int64_t maxBytes);
  bool get(const std::string &key, std::string &object) override;
  void put(const std::string &key, const std::string &object) override;
  /// Removes the least recently used objects while the folder holds more
  /// than its limit (after a compile that stored some).
  void trim();

  /// This build's identity (BuildId.inc).
  static const char *buildId();

private:
  std::string pathOf(const std::string &key) const;
  std::string Dir;
  int64_t MaxBytes;
  std::atomic<int> Stored{0};
};

} // namespace mlcc
