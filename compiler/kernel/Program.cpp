#include "compiler/kernel/Program.h"

#include "compiler/kernel/InPlace.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <tuple>
#include <cstdlib>
#include <climits>
#include <set>
#include <map>
#include <sstream>

namespace mlcc::kir {

int64_t Program::weightBytes() const {
  int64_t n = 0;
  for (auto &c : Constants)
    n += (int64_t)c.Bytes.size();
  return n;
}

namespace {
int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
} // namespace

std::vector<int64_t> weightsLayout(const Program &p, int64_t align, int64_t &total) {
  std::vector<int64_t> offsets;
  total = 0;
  for (auto &c : p.Constants) {
    offsets.push_back(total);
    total = alignUp(total + (int64_t)c.Bytes.size(), align);
  }
  return offsets;
}

size_t aliasRoot(const Program &p, size_t i) {
  for (size_t steps = 0; p.ArenaBuffers[i].AliasOf >= 0; ++steps) {
    MLCC_CHECK(steps < p.ArenaBuffers.size(), "cyclic arena aliases");
    i = (size_t)p.ArenaBuffers[i].AliasOf;
  }
  return i;
}

std::vector<Lifetime> bufferLifetimes(const Program &p) {
  std::vector<Lifetime> life(p.ArenaBuffers.size());
  auto touch = [&](size_t b, int64_t c) {
    if (life[b].First < 0)
      life[b].First = c;
    life[b].Last = c;
  };
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    std::vector<Storage> read = p.Calls[c].Args;
    if (p.Calls[c].Guard)
      read.push_back(*p.Calls[c].Guard);
    for (auto &s : read)
      if (s.Kind == StorageKind::Arena) {
        MLCC_CHECK(s.Index < life.size(), "arena buffer " << s.Index << " out of range");
        touch(s.Index, (int64_t)c);
        // Every buffer this one is a part of lives at least as long.
        for (size_t b = s.Index, root = aliasRoot(p, s.Index); b != root;) {
          b = (size_t)p.ArenaBuffers[b].AliasOf;
          if (life[b].First < 0 || life[b].First > (int64_t)c)
            life[b].First = (int64_t)c;
          life[b].Last = std::max(life[b].Last, (int64_t)c);
        }
      }
  }
  return life;
}

namespace {

/// Buffers placed together: each at its displacement from the first's
/// offset (an output laid over an input, layInPlace), or one buffer.
struct Member {
  size_t Buf;
  int64_t Off;
};
using Unit = std::vector<Member>;

/// Places the root buffers (their Offset) so that buffers whose lifetimes
/// overlap never share bytes, except the members of one unit (which
/// layInPlace laid over each other where the kernels allow it); returns the
/// arena's size. Greedy: each unit in turn at the lowest offset where none
/// of its members meets a buffer placed before, in several orders of the
/// units, keeping the smallest arena (see planMemory).
int64_t placeBuffers(Program &p, const std::vector<Unit> &groups) {
  size_t n = p.ArenaBuffers.size();
  std::vector<Lifetime> life = bufferLifetimes(p);
  auto bytesOf = [&](size_t b) { return alignedArenaBytes(p.ArenaBuffers[b].Bytes, p.ArenaAlign); };
  std::vector<bool> grouped(n, false);
  std::vector<Unit> units;
  for (const Unit &g : groups) {
    int64_t lo = INT64_MAX;
    for (const Member &m : g)
      lo = std::min(lo, m.Off);
    Unit u;
    for (const Member &m : g) {
      u.push_back({m.Buf, m.Off - lo});
      grouped[m.Buf] = true;
    }
    units.push_back(std::move(u));
  }
  for (size_t i = 0; i < n; ++i)
    if (!grouped[i] && life[i].First >= 0 && p.ArenaBuffers[i].AliasOf < 0)
      units.push_back({{i, 0}});
  // Per unit: bytes (its extent), first and last call.
  std::vector<int64_t> bytes(units.size(), 0), first(units.size(), INT64_MAX),
      last(units.size(), -1);
  for (size_t u = 0; u < units.size(); ++u)
    for (const Member &m : units[u]) {
      bytes[u] = std::max(bytes[u], m.Off + bytesOf(m.Buf));
      first[u] = std::min(first[u], life[m.Buf].First);
      last[u] = std::max(last[u], life[m.Buf].Last);
    }

  struct Placed {
    int64_t Offset, End, First, Last;
  };
  auto place = [&](const std::vector<size_t> &order, std::vector<int64_t> &offsets) {
    std::vector<Placed> placed;
    int64_t size = 0;
    for (size_t u : order) {
      // Offsets of the unit that would make a member meet a placed buffer
      // alive with it: [from, to).
      std::vector<std::pair<int64_t, int64_t>> banned;
      for (const Member &m : units[u])
        for (auto &q : placed)
          if (q.First <= life[m.Buf].Last && life[m.Buf].First <= q.Last)
            banned.push_back({q.Offset - m.Off - bytesOf(m.Buf) + 1, q.End - m.Off});
      std::sort(banned.begin(), banned.end());
      int64_t offset = 0;
      for (auto &[from, to] : banned) {
        if (offset < from)
          break;
        offset = std::max(offset, alignUp(to, p.ArenaAlign));
      }
      offsets[u] = offset;
      for (const Member &m : units[u])
        placed.push_back({offset + m.Off, offset + m.Off + bytesOf(m.Buf), life[m.Buf].First,
                          life[m.Buf].Last});
      size = std::max(size, offset + bytes[u]);
    }
    return size;
  };
  auto bySize = [&](size_t a, size_t b) {
    if (bytes[a] != bytes[b])
      return bytes[a] > bytes[b];
    return first[a] < first[b];
  };
  std::vector<std::function<bool(size_t, size_t)>> orders = {
      bySize,
      [&](size_t a, size_t b) {
        return first[a] != first[b] ? first[a] < first[b] : bySize(a, b);
      },
      [&](size_t a, size_t b) {
        int64_t la = last[a] - first[a], lb = last[b] - first[b];
        return la != lb ? la > lb : bySize(a, b);
      },
      [&](size_t a, size_t b) {
        int64_t sa = bytes[a] * (last[a] - first[a] + 1), sb = bytes[b] * (last[b] - first[b] + 1);
        return sa != sb ? sa > sb : bySize(a, b);
      },
  };
  int64_t size = -1;
  std::vector<int64_t> best(units.size(), 0), offsets(units.size(), 0);
  std::vector<size_t> all(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    all[u] = u;
  for (auto &less : orders) {
    std::vector<size_t> order = all;
    std::stable_sort(order.begin(), order.end(), less);
    int64_t s = place(order, offsets);
    if (size < 0 || s < size) {
      size = s;
      best = offsets;
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (p.ArenaBuffers[i].AliasOf < 0)
      p.ArenaBuffers[i].Offset = 0; // never used, unless placed below
  for (size_t u = 0; u < units.size(); ++u)
    for (const Member &m : units[u])
      p.ArenaBuffers[m.Buf].Offset = best[u] + m.Off;
  return std::max<int64_t>(size, 0);
}

/// An output laid over an input of its call: the kernel's params.
struct Overlap {
  size_t Kernel, In, Out; ///< the kernel and its params
  size_t Input, Output;   ///< the buffers
  bool NeedsOrder;        ///< allowed only if the Parallel loops run in order
};

/// The largest number of accesses and loop iterations the in-place
/// analysis runs for one program (its time stays a fraction of a second).
constexpr int64_t kInPlaceBudget = 30'000'000;
/// Displacements tried per output and input, the best first: laying an
/// output far over its input may keep another from its own, so planMemory
/// tries each of these limits and keeps the smallest arena.
constexpr int kInPlaceTries[] = {1, 64, 1024};

/// Lays each call's new outputs over an input that dies with the call,
/// where the kernel's access order allows (AccessOrder) and it saves bytes:
/// the buffers so laid form units (`groups`), placed together at their
/// displacements. Returns the kernels' overlapping params.
/// The access orders layInPlace ran, by call, params and whether the
/// Parallel loops run in order (it runs several times with the same ones).
using AccessOrders =
    std::map<std::tuple<size_t, size_t, size_t, bool>, std::shared_ptr<AccessOrder>>;

std::vector<Overlap> layInPlace(const Program &p, bool ordered, int maxTries,
                                AccessOrders &orders, int64_t &budget,
                                std::vector<Unit> &groups) {
  std::vector<Overlap> result;
  const size_t n = p.ArenaBuffers.size();
  std::vector<Lifetime> life = bufferLifetimes(p);
  std::vector<bool> hasParts(n, false);
  for (const ArenaBuffer &b : p.ArenaBuffers)
    if (b.AliasOf >= 0)
      hasParts[(size_t)b.AliasOf] = true;
  std::vector<int64_t> groupOf(n, -1);
  auto bytesOf = [&](size_t b) { return alignedArenaBytes(p.ArenaBuffers[b].Bytes, p.ArenaAlign); };
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    const Call &call = p.Calls[c];
    if (call.Guard)
      continue;
    const Kernel &k = p.Kernels[call.KernelIndex];
    std::map<size_t, int> uses;
    for (const Storage &s : call.Args)
      if (s.Kind == StorageKind::Arena)
        ++uses[s.Index];
    auto plain = [&](size_t arg) {
      const Storage &s = call.Args[arg];
      return s.Kind == StorageKind::Arena && uses[s.Index] == 1 &&
             p.ArenaBuffers[s.Index].AliasOf < 0 && !hasParts[s.Index];
    };
    for (size_t q = 0; q < call.Args.size(); ++q) {
      if (!plain(q) || q >= k.Written.size() || !k.Written[q])
        continue;
      const size_t o = call.Args[q].Index;
      if (life[o].First != (int64_t)c || groupOf[o] >= 0)
        continue;
      struct Best {
        size_t A = 0, Arg = 0;
        int64_t Off = 0, Extent = INT64_MAX;
        bool NeedsOrder = false;
      } best;
      for (size_t r = 0; r < call.Args.size(); ++r) {
        if (r == q || !plain(r) || (r < k.Written.size() && k.Written[r]))
          continue;
        const size_t a = call.Args[r].Index;
        if (life[a].Last != (int64_t)c || life[a].First >= (int64_t)c)
          continue;
        // Any order of a Parallel loop's iterations first; their serial
        // order only where `ordered` allows making the loops serial.
        auto orderOf = [&](bool inOrder) -> const AccessOrder & {
          std::shared_ptr<AccessOrder> &known = orders[{c, r, q, inOrder}];
          if (!known)
            known = std::make_shared<AccessOrder>(k, r, q, inOrder, budget);
          return *known;
        };
        const AccessOrder &any = orderOf(false);
        const AccessOrder *serial = ordered ? &orderOf(true) : nullptr;
        if (!any.ok() && !(serial && serial->ok()))
          continue;
        std::vector<Member> members = groupOf[a] >= 0 ? groups[(size_t)groupOf[a]]
                                                      : std::vector<Member>{{a, 0}};
        int64_t aOff = 0, lo = INT64_MAX, hi = INT64_MIN;
        for (const Member &m : members) {
          if (m.Buf == a)
            aOff = m.Off;
          lo = std::min(lo, m.Off);
          hi = std::max(hi, m.Off + bytesOf(m.Buf));
        }
        const int64_t oBytes = bytesOf(o), aBytes = bytesOf(a);
        std::vector<std::pair<int64_t, int64_t>> tries; // extent, displacement
        for (int64_t d = -oBytes; d <= aBytes; d += p.ArenaAlign) {
          int64_t off = aOff + d;
          int64_t extent = std::max(hi, off + oBytes) - std::min(lo, off);
          if (extent < (hi - lo) + oBytes && extent < best.Extent)
            tries.push_back({extent, d});
        }
        std::sort(tries.begin(), tries.end(), [](auto &x, auto &y) {
          return x.first != y.first ? x.first < y.first
                                    : std::llabs(x.second) < std::llabs(y.second);
        });
        if (tries.size() > (size_t)maxTries)
          tries.resize((size_t)maxTries);
        for (auto &[extent, d] : tries) {
          int64_t off = aOff + d;
          bool clash = false;
          for (const Member &m : members)
            if (m.Buf != a && life[m.Buf].First <= life[o].Last && life[o].First <= life[m.Buf].Last &&
                m.Off < off + oBytes && off < m.Off + bytesOf(m.Buf))
              clash = true;
          if (clash)
            continue;
          bool needsOrder = false;
          if (!any.allows(d)) {
            if (!serial || !serial->allows(d))
              continue;
            needsOrder = true;
          }
          best = {a, r, off, extent, needsOrder};
          break;
        }
      }
      if (best.Extent == INT64_MAX)
        continue;
      if (groupOf[best.A] < 0) {
        groupOf[best.A] = (int64_t)groups.size();
        groups.push_back({{best.A, 0}});
      }
      groupOf[o] = groupOf[best.A];
      groups[(size_t)groupOf[o]].push_back({o, best.Off});
      result.push_back({call.KernelIndex, best.Arg, q, best.A, o, best.NeedsOrder});
    }
  }
  return result;
}

} // namespace

void planMemory(Program &p, InPlace inPlace) {
  int64_t size = placeBuffers(p, {});
  if (inPlace != InPlace::Off) {
    std::vector<int64_t> plain;
    for (const ArenaBuffer &b : p.ArenaBuffers)
      plain.push_back(b.Offset);
    AccessOrders orders;
    int64_t budget = kInPlaceBudget;
    std::vector<Overlap> overlaps;
    std::vector<Unit> chosen;
    for (int tries : kInPlaceTries) {
      std::vector<Unit> groups;
      std::vector<Overlap> found =
          layInPlace(p, inPlace == InPlace::Ordered, tries, orders, budget, groups);
      int64_t shared = found.empty() ? size : placeBuffers(p, groups);
      if (shared < size) {
        size = shared;
        overlaps = std::move(found);
        chosen = std::move(groups);
      }
    }
    if (!overlaps.empty()) {
      placeBuffers(p, chosen);
      for (const Overlap &o : overlaps) {
        Kernel &k = p.Kernels[o.Kernel];
        k.Overlapping.resize(k.Params.size(), false);
        k.Overlapping[o.In] = k.Overlapping[o.Out] = true;
        p.ArenaBuffers[o.Output].LaidOver = (int64_t)o.Input;
      }
      if (inPlace == InPlace::Ordered) {
        std::set<size_t> kernels;
        for (const Overlap &o : overlaps)
          if (o.NeedsOrder)
            kernels.insert(o.Kernel);
        for (size_t k : kernels)
          p.Kernels[k].InOrder = true;
      }
    } else {
      for (size_t i = 0; i < plain.size(); ++i)
        p.ArenaBuffers[i].Offset = plain[i];
    }
  }
  const size_t n = p.ArenaBuffers.size();
  // Parts: their buffer's offset plus theirs (along the chain of parts).
  for (size_t i = 0; i < n; ++i) {
    if (p.ArenaBuffers[i].AliasOf < 0)
      continue;
    size_t root = aliasRoot(p, i);
    int64_t offset = 0;
    for (size_t b = i; b != root; b = (size_t)p.ArenaBuffers[b].AliasOf)
      offset += p.ArenaBuffers[b].AliasOffset;
    p.ArenaBuffers[i].Offset = p.ArenaBuffers[root].Offset + offset;
  }
  p.ArenaSize = size;
}

std::string printProgram(const Program &p) {
  std::ostringstream os;
  os << "program " << p.Name << "\n";
  for (const RunTimeDim &d : p.Dims)
    os << "  dim " << d.Name << " = " << d.Min << ".." << d.Max << "\n";
  for (size_t i = 0; i < p.Inputs.size(); ++i)
    os << "  input " << i << " " << p.Inputs[i].Name << ": "
       << dtypeName(p.Inputs[i].Type) << shapeToString(p.Inputs[i].Dims) << "\n";
  for (size_t i = 0; i < p.Outputs.size(); ++i)
    os << "  output " << i << " " << p.Outputs[i].Name << ": "
       << dtypeName(p.Outputs[i].Type) << shapeToString(p.Outputs[i].Dims)
       << "\n";
  for (size_t i = 0; i < p.Constants.size(); ++i)
    os << "  const " << i << " " << p.Constants[i].Name << ": "
       << dtypeName(p.Constants[i].Type) << "[" << p.Constants[i].Count
       << "]\n";
  os << "  arena " << p.ArenaSize << " bytes, align " << p.ArenaAlign << "\n";
  for (size_t i = 0; i < p.ArenaBuffers.size(); ++i)
    os << "    buffer " << i << " " << p.ArenaBuffers[i].Name << ": "
       << p.ArenaBuffers[i].Bytes << " bytes at " << p.ArenaBuffers[i].Offset
       << (p.ArenaBuffers[i].AliasOf >= 0
               ? " (part of buffer " + std::to_string(p.ArenaBuffers[i].AliasOf) + ")"
               : std::string())
       << "\n";
  os << "\n";
  for (auto &k : p.Kernels)
    os << print(k) << "\n";
  os << "calls:\n";
  static const char *kinds[] = {"input", "output", "arena", "const", "dims"};
  auto storage = [&](const Storage &s) {
    os << kinds[(int)s.Kind];
    if (s.Kind != StorageKind::Dims)
      os << " " << s.Index;
  };
  for (auto &c : p.Calls) {
    os << "  ";
    if (c.Guard) {
      os << "if ";
      storage(*c.Guard);
      os << ": ";
    }
    os << p.Kernels[c.KernelIndex].Name << "(";
    for (size_t i = 0; i < c.Args.size(); ++i) {
      os << (i ? ", " : "");
      storage(c.Args[i]);
    }
    os << ")  # " << c.Label << "\n";
  }
  return os.str();
}

} // namespace mlcc::kir
