#include "compiler/kernel/Program.h"

#include "compiler/support/Error.h"

#include <algorithm>
#include <functional>
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

void planMemory(Program &p) {
  size_t n = p.ArenaBuffers.size();
  std::vector<int64_t> first(n, -1), last(n, -1);
  std::vector<Lifetime> life = bufferLifetimes(p);
  for (size_t i = 0; i < n; ++i)
    first[i] = life[i].First, last[i] = life[i].Last;

  std::vector<size_t> live;
  for (size_t i = 0; i < n; ++i)
    if (first[i] >= 0 && p.ArenaBuffers[i].AliasOf < 0)
      live.push_back(i);

  // Places the buffers in `order`, each at the lowest offset where it
  // overlaps no buffer placed before whose lifetime meets its own; returns
  // the arena's size and the offsets.
  struct Placed {
    int64_t Offset, End, First, Last;
  };
  auto place = [&](const std::vector<size_t> &order, std::vector<int64_t> &offsets) {
    std::vector<Placed> placed;
    int64_t size = 0;
    for (size_t i : order) {
      int64_t bytes = alignedArenaBytes(p.ArenaBuffers[i].Bytes, p.ArenaAlign);
      // Regions of buffers alive at the same time, by offset.
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (auto &q : placed)
        if (q.First <= last[i] && first[i] <= q.Last)
          busy.push_back({q.Offset, q.End});
      std::sort(busy.begin(), busy.end());
      int64_t offset = 0;
      for (auto &[b, e] : busy) {
        if (offset + bytes <= b)
          break;
        offset = std::max(offset, alignUp(e, p.ArenaAlign));
      }
      offsets[i] = offset;
      placed.push_back({offset, offset + bytes, first[i], last[i]});
      size = std::max(size, offset + bytes);
    }
    return size;
  };
  // Greedy placement depends on the order: the largest buffers first (the
  // default, kept on ties), the earliest first (a chain of layers reuses
  // the space its predecessors freed), the longest-lived first. The
  // smallest arena wins.
  auto bySize = [&](size_t a, size_t b) {
    if (p.ArenaBuffers[a].Bytes != p.ArenaBuffers[b].Bytes)
      return p.ArenaBuffers[a].Bytes > p.ArenaBuffers[b].Bytes;
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
        int64_t sa = p.ArenaBuffers[a].Bytes * (last[a] - first[a] + 1),
                sb = p.ArenaBuffers[b].Bytes * (last[b] - first[b] + 1);
        return sa != sb ? sa > sb : bySize(a, b);
      },
  };
  int64_t size = -1;
  std::vector<int64_t> best(n, 0), offsets(n, 0);
  for (auto &less : orders) {
    std::vector<size_t> order = live;
    std::stable_sort(order.begin(), order.end(), less);
    int64_t s = place(order, offsets);
    if (size < 0 || s < size) {
      size = s;
      best = offsets;
    }
  }
  for (size_t i : live)
    p.ArenaBuffers[i].Offset = best[i];
  size = std::max<int64_t>(size, 0);
  for (size_t i = 0; i < n; ++i)
    if (first[i] < 0 && p.ArenaBuffers[i].AliasOf < 0)
      p.ArenaBuffers[i].Offset = 0; // never used
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
