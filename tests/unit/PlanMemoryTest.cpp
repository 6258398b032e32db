// plan-memory (kir::planMemory): arena offsets from the buffers' lifetimes;
// buffers alive at once never share bytes, the others may, and a part of a
// buffer (a Concat's input written in place) sits inside it.
#include "compiler/kernel/Builder.h"
#include "compiler/kernel/Program.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using namespace mlcc::kir;

namespace {

/// out[i] = in[i] for i < 4: a kernel of two parameters, the second written.
Kernel copyKernel() {
  KernelBuilder b("copy");
  Buffer in = b.param("in", DType::F32, 4), out = b.param("out", DType::F32, 4);
  b.loop("i", 4, [&](Expr i) { b.store(out, i, load(in, i)); });
  return b.finish();
}

Storage arena(size_t i) { return {StorageKind::Arena, i}; }

/// Whether buffers a and b share a byte.
bool overlap(const Program &p, size_t a, size_t b) {
  const ArenaBuffer &x = p.ArenaBuffers[a], &y = p.ArenaBuffers[b];
  return x.Offset < y.Offset + y.Bytes && y.Offset < x.Offset + x.Bytes;
}

} // namespace

TEST_CASE("plan-memory: buffers alive at once apart, the others share", "[plan-memory]") {
  Program p;
  p.Kernels.push_back(copyKernel());
  // input -> b0 -> b1 -> b2 -> output: b0 and b2 are never alive together.
  p.ArenaBuffers = {{"b0", 1000}, {"b1", 2000}, {"b2", 1000}};
  std::vector<std::pair<Storage, Storage>> chain = {{{StorageKind::Input, 0}, arena(0)},
                                                    {arena(0), arena(1)},
                                                    {arena(1), arena(2)},
                                                    {arena(2), {StorageKind::Output, 0}}};
  for (auto &[from, to] : chain) {
    Call c;
    c.Args = {from, to};
    p.Calls.push_back(c);
  }
  planMemory(p);
  CHECK_FALSE(overlap(p, 0, 1));
  CHECK_FALSE(overlap(p, 1, 2));
  CHECK(overlap(p, 0, 2)); // the largest first, then both smaller ones after it
  for (const ArenaBuffer &b : p.ArenaBuffers)
    CHECK(b.Offset % p.ArenaAlign == 0);
  CHECK(p.ArenaSize >= 3000);
  CHECK(p.ArenaSize <= 2048 + 1024);
}

TEST_CASE("plan-memory: a part of a buffer is placed inside it", "[plan-memory]") {
  Program p;
  p.Kernels.push_back(copyKernel());
  // b1 is a Concat's output; b2, written by the first call, is its part at
  // 512 bytes: b1 lives from that call on.
  p.ArenaBuffers = {{"b0", 1024}, {"b1", 2048}, {"b2", 1024, -1, 1, 512}};
  std::vector<std::pair<Storage, Storage>> calls = {{{StorageKind::Input, 0}, arena(2)},
                                                    {{StorageKind::Input, 0}, arena(0)},
                                                    {arena(1), {StorageKind::Output, 0}}};
  for (auto &[from, to] : calls) {
    Call c;
    c.Args = {from, to};
    p.Calls.push_back(c);
  }
  planMemory(p);
  CHECK(p.ArenaBuffers[2].Offset == p.ArenaBuffers[1].Offset + 512);
  // b0 is written while b1 (through its part) is alive.
  CHECK_FALSE(overlap(p, 0, 1));
  CHECK(p.ArenaSize == 1024 + 2048);
}

TEST_CASE("plan-memory: another order where the largest-first one fragments", "[plan-memory]") {
  // A chain whose largest buffer comes last (a network's early layers): the
  // largest first leaves the third buffer no room beside the others (64512
  // bytes); placing them in the order they are made needs only the most
  // that is alive at once, the last two (18432 + 36864).
  Program p;
  p.Kernels.push_back(copyKernel());
  p.ArenaBuffers = {{"a", 27648}, {"b", 18432}, {"c", 18432}, {"d", 36864}};
  std::vector<std::pair<Storage, Storage>> chain = {{{StorageKind::Input, 0}, arena(0)},
                                                    {arena(0), arena(1)},
                                                    {arena(1), arena(2)},
                                                    {arena(2), arena(3)},
                                                    {arena(3), {StorageKind::Output, 0}}};
  for (auto &[from, to] : chain) {
    Call c;
    c.Args = {from, to};
    p.Calls.push_back(c);
  }
  planMemory(p);
  for (size_t i = 0; i + 1 < p.ArenaBuffers.size(); ++i)
    CHECK_FALSE(overlap(p, i, i + 1));
  CHECK(p.ArenaSize == 18432 + 36864);
}
