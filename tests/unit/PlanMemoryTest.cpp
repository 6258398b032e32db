// plan-memory (kir::planMemory): arena offsets from the buffers' lifetimes;
// buffers alive at once never share bytes, the others may, and a part of a
// buffer (a Concat's input written in place) sits inside it; an output
// laid over an input that dies with its call where the kernel's access
// order allows it (kir::AccessOrder).
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

/// Calls input -> buffer 0 -> buffer 1 -> ... -> output (p's first kernel).
void chainCalls(Program &p) {
  Storage from{StorageKind::Input, 0};
  for (size_t i = 0; i <= p.ArenaBuffers.size(); ++i) {
    Storage to = i < p.ArenaBuffers.size() ? arena(i) : Storage{StorageKind::Output, 0};
    Call c;
    c.Args = {from, to};
    p.Calls.push_back(c);
    from = to;
  }
}

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
  chainCalls(p);
  planMemory(p, InPlace::Off);
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
  planMemory(p, InPlace::Off);
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
  chainCalls(p);
  planMemory(p, InPlace::Off);
  for (size_t i = 0; i + 1 < p.ArenaBuffers.size(); ++i)
    CHECK_FALSE(overlap(p, i, i + 1));
  CHECK(p.ArenaSize == 18432 + 36864);
}

namespace {

/// out[i] = in[i + shift] (0 past the end) for i < n, in a loop of `kind`.
Kernel shiftKernel(int64_t n, int64_t shift, LoopKind kind = LoopKind::Serial) {
  KernelBuilder b("shift");
  Buffer in = b.param("in", DType::F32, n), out = b.param("out", DType::F32, n);
  b.loop("i", n, [&](Expr i) {
    Expr j = i + shift;
    Expr inside = land(ge(j, indexConst(0)), lt(j, indexConst(n)));
    Expr clamped = max(min(j, indexConst(n - 1)), indexConst(0));
    b.store(out, i, select(inside, load(in, clamped), constant(DType::F32, 0)));
  }, kind);
  return b.finish();
}

/// A chain input -> b0 -> b1 -> b2 -> output of 256-float buffers through
/// kernel `k`, planned with `mode`.
Program chainOf(Kernel k, InPlace mode) {
  Program p;
  p.Kernels.push_back(std::move(k));
  p.ArenaBuffers = {{"b0", 1024}, {"b1", 1024}, {"b2", 1024}};
  chainCalls(p);
  planMemory(p, mode);
  return p;
}

} // namespace

TEST_CASE("plan-memory: an elementwise output in place of its dying input", "[plan-memory]") {
  Program p = chainOf(shiftKernel(256, 0), InPlace::Unordered);
  // b1 over b0 and b2 over b1: one buffer's bytes for the chain.
  CHECK(p.ArenaSize == 1024);
  CHECK(p.ArenaBuffers[0].Offset == p.ArenaBuffers[1].Offset);
  CHECK(p.ArenaBuffers[1].Offset == p.ArenaBuffers[2].Offset);
  REQUIRE(p.Kernels[0].Overlapping.size() == 2);
  CHECK(p.Kernels[0].Overlapping[0]);
  CHECK(p.Kernels[0].Overlapping[1]);
  // Without it, two buffers.
  Program q = chainOf(shiftKernel(256, 0), InPlace::Off);
  CHECK(q.ArenaSize == 2048);
  CHECK(q.Kernels[0].Overlapping.empty());
}

TEST_CASE("plan-memory: an output in place only where the reads are done", "[plan-memory]") {
  // out[i] = in[i + 1]: in[i] is read (at i - 1) before out[i] is written.
  Program ahead = chainOf(shiftKernel(256, 1), InPlace::Unordered);
  CHECK(ahead.ArenaSize == 1024);
  // out[i] = in[i - 1]: in[i] is read after out[i] is written, so out must
  // start before in: by one arena alignment (64 bytes, 16 floats).
  Program behind = chainOf(shiftKernel(256, -1), InPlace::Unordered);
  CHECK(behind.ArenaSize == 1024 + 2 * 64);
  CHECK(behind.ArenaBuffers[1].Offset + 64 == behind.ArenaBuffers[0].Offset);
  CHECK(behind.ArenaBuffers[2].Offset + 64 == behind.ArenaBuffers[1].Offset);
}

TEST_CASE("plan-memory: a parallel loop's iterations may run in any order", "[plan-memory]") {
  // out[i] = in[i + 1] in a parallel loop: in[i] is read by iteration i - 1,
  // which may run after iteration i wrote out[i]: not in place unless the
  // loop runs in order (a one-thread target, the loop then made serial).
  Program any = chainOf(shiftKernel(256, 1, LoopKind::Parallel), InPlace::Unordered);
  CHECK(any.ArenaSize == 2048);
  CHECK_FALSE(any.Kernels[0].InOrder);
  Program ordered = chainOf(shiftKernel(256, 1, LoopKind::Parallel), InPlace::Ordered);
  CHECK(ordered.ArenaSize == 1024);
  CHECK(ordered.Kernels[0].InOrder);
  // The same index in the same iteration is safe in any order.
  Program same = chainOf(shiftKernel(256, 0, LoopKind::Parallel), InPlace::Ordered);
  CHECK(same.ArenaSize == 1024);
  CHECK_FALSE(same.Kernels[0].InOrder);
}
