#include "compiler/output/Report.h"

#include "compiler/kernel/Cost.h"
#include "compiler/support/Error.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace mlcc::output {

namespace {

/// The function bytes of kernel `name`: its own symbol and any clones or
/// outlined tasks LLVM or the C compiler derive from it ("NAME.task",
/// "NAME.part.0").
int64_t functionBytes(const ObjectStats &o, const std::string &name) {
  int64_t n = 0;
  for (auto &[sym, bytes] : o.Functions)
    if (sym == name || (sym.size() > name.size() && sym.compare(0, name.size(), name) == 0 &&
                        sym[name.size()] == '.'))
      n += bytes;
  return n;
}

std::string plural(int64_t n, const char *one, const char *many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string bytes(int64_t n) { return plural(n, "byte", "bytes"); }

/// "node 'conv1' (Conv)" or "node 'conv1' (Conv) + 2 more".
std::string nodesShort(const KernelCallReport &k) {
  if (k.Nodes.empty())
    return k.Label;
  std::string s = "node '" + escapeForMessage(k.Nodes.front().Name) + "' (" +
                  escapeForMessage(k.Nodes.front().Op) + ")";
  if (k.Nodes.size() > 1)
    s += " + " + std::to_string(k.Nodes.size() - 1) + " more";
  return s;
}

std::string num(int64_t v) { return std::to_string(v); }

/// `v` with `digits` decimals.
std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

} // namespace

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : escapeForMessage(s)) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

ModelReport buildReport(const kir::Program &p) {
  ModelReport r;
  r.Name = p.Name;
  r.DistinctKernels = p.Kernels.size();
  r.WeightBytes = p.weightBytes();
  r.ArenaBytes = p.ArenaSize;
  r.ArenaAlign = p.ArenaAlign;

  std::vector<kir::Lifetime> life = kir::bufferLifetimes(p);
  for (size_t i = 0; i < p.ArenaBuffers.size(); ++i)
    r.Buffers.push_back({p.ArenaBuffers[i].Name, p.ArenaBuffers[i].Offset,
                         p.ArenaBuffers[i].Bytes, life[i].First, life[i].Last,
                         p.ArenaBuffers[i].AliasOf, p.ArenaBuffers[i].LaidOver});
  for (auto &c : p.Constants)
    r.Constants.push_back({c.Name, (int64_t)c.Bytes.size()});
  r.ConstantFirstCall.assign(p.Constants.size(), -1);
  for (auto &io : p.Inputs)
    r.Inputs.push_back(io.Name);
  for (auto &io : p.Outputs)
    r.Outputs.push_back(io.Name);

  std::vector<int64_t> ops(p.Kernels.size(), -1), depth(p.Kernels.size(), 0),
      firstCall(p.Kernels.size(), -1);
  std::vector<kir::Movement> moves(p.Kernels.size());
  std::map<std::pair<int, size_t>, size_t> lastWriter;
  std::set<std::pair<size_t, size_t>> edges;
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    const kir::Call &call = p.Calls[c];
    const kir::Kernel &k = p.Kernels[call.KernelIndex];
    KernelCallReport k2;
    k2.Kernel = k.Name;
    k2.Nodes = call.Nodes;
    k2.Label = call.Label;
    k2.Plan = call.Plan;
    if (ops[call.KernelIndex] < 0) {
      ops[call.KernelIndex] = kir::countOps(k);
      depth[call.KernelIndex] = kir::maxExprDepth(k);
      moves[call.KernelIndex] = kir::movementOf(k);
    }
    k2.Ops = ops[call.KernelIndex];
    r.Ops += k2.Ops;
    k2.CopiedBytes = moves[call.KernelIndex].CopiedBytes;
    k2.FilledBytes = moves[call.KernelIndex].FilledBytes;
    r.CopiedBytes += k2.CopiedBytes;
    r.FilledBytes += k2.FilledBytes;
    if (k2.Ops == 0 && k2.CopiedBytes + k2.FilledBytes > 0) {
      ++r.CopyCalls;
      r.FillCalls += k2.CopiedBytes == 0;
    }
    k2.ExprDepth = depth[call.KernelIndex];
    r.MaxExprDepth = std::max(r.MaxExprDepth, k2.ExprDepth);
    if (firstCall[call.KernelIndex] >= 0)
      k2.SharesCodeWith = firstCall[call.KernelIndex];
    else
      firstCall[call.KernelIndex] = (int64_t)c;
    for (auto &s : call.Args)
      if (s.Kind == kir::StorageKind::Constant && r.ConstantFirstCall[s.Index] < 0) {
        r.ConstantFirstCall[s.Index] = (int64_t)c;
        k2.WeightBytes += (int64_t)p.Constants[s.Index].Bytes.size();
      }
    for (size_t a = 0; a < call.Args.size(); ++a) {
      const kir::Storage &s = call.Args[a];
      bool written = a < k.Written.size() && k.Written[a];
      if (s.Kind == kir::StorageKind::Input)
        k2.InputsRead.push_back(s.Index);
      if (s.Kind == kir::StorageKind::Output && written)
        k2.OutputsWritten.push_back(s.Index);
      if (s.Kind != kir::StorageKind::Arena && s.Kind != kir::StorageKind::Output)
        continue;
      auto key = std::make_pair((int)s.Kind, s.Index);
      if (!written) {
        auto w = lastWriter.find(key);
        if (w != lastWriter.end() && w->second != c)
          edges.insert({w->second, c});
      }
    }
    for (size_t a = 0; a < call.Args.size(); ++a)
      if (a < k.Written.size() && k.Written[a] &&
          (call.Args[a].Kind == kir::StorageKind::Arena ||
           call.Args[a].Kind == kir::StorageKind::Output))
        lastWriter[{(int)call.Args[a].Kind, call.Args[a].Index}] = c;
    for (size_t b = 0; b < life.size(); ++b)
      if (life[b].First >= 0 && life[b].First <= (int64_t)c && (int64_t)c <= life[b].Last) {
        k2.LiveBuffers.push_back(b);
        if (p.ArenaBuffers[b].AliasOf < 0) // a part's bytes are its buffer's
          k2.ArenaLiveBytes += p.ArenaBuffers[b].Bytes;
        // An output laid over an input that dies in this call: their shared
        // bytes count once.
        int64_t over = p.ArenaBuffers[b].LaidOver;
        if (over >= 0 && life[b].First == (int64_t)c && life[(size_t)over].Last == (int64_t)c) {
          const kir::ArenaBuffer &x = p.ArenaBuffers[b], &y = p.ArenaBuffers[(size_t)over];
          k2.ArenaLiveBytes -= std::max<int64_t>(
              0, std::min(x.Offset + x.Bytes, y.Offset + y.Bytes) - std::max(x.Offset, y.Offset));
        }
        k2.ArenaEnd = std::max(k2.ArenaEnd, p.ArenaBuffers[b].Offset +
                                                kir::alignedArenaBytes(p.ArenaBuffers[b].Bytes,
                                                                      p.ArenaAlign));
      }
    r.Calls.push_back(std::move(k2));
  }
  r.Edges.assign(edges.begin(), edges.end());
  return r;
}

void addObjectStats(ModelReport &r, const ObjectStats &object) {
  r.HasObject = true;
  r.Object = object;
  int64_t kernelCode = 0;
  for (KernelCallReport &k : r.Calls) {
    k.CodeBytes = k.SharesCodeWith >= 0 ? 0 : functionBytes(object, k.Kernel);
    kernelCode += k.CodeBytes;
  }
  r.CodeOutsideKernels = object.CodeBytes - kernelCode;
}

std::string reportJson(const ModelReport &r, const ReportContext &c) {
  std::string j = "{\n";
  auto field = [&](const char *key, const std::string &value) {
    j += std::string("  \"") + key + "\": " + value + ",\n";
  };
  field("model", jsonString(c.Model));
  field("name", jsonString(r.Name));
  field("target", jsonString(c.Target));
  field("triple", jsonString(c.Triple));
  field("cpu", jsonString(c.Cpu));
  field("backend", jsonString(c.Backend));
  {
    std::string list = "[";
    for (size_t i = 0; i < c.FloatNodes.size(); ++i)
      list += (i ? ", " : "") + jsonString(c.FloatNodes[i]);
    field("float_nodes", list + "]");
  }
  field("kernels", num((int64_t)r.DistinctKernels));
  field("calls", num((int64_t)r.Calls.size()));
  if (r.HasObject) {
    field("code_bytes", num(r.Object.CodeBytes));
    field("code_bytes_outside_kernels", num(r.CodeOutsideKernels));
    field("data_bytes", num(r.Object.DataBytes));
    field("writable_bytes", num(r.Object.WritableBytes));
  }
  field("weight_bytes", num(r.WeightBytes));
  field("arena_bytes", num(r.ArenaBytes));
  field("arena_align", num(r.ArenaAlign));
  field("ops", num(r.Ops));
  field("copy_calls", num(r.CopyCalls));
  field("fill_calls", num(r.FillCalls));
  field("copied_bytes", num(r.CopiedBytes));
  field("filled_bytes", num(r.FilledBytes));
  field("max_expr_depth", num(r.MaxExprDepth));
  if (r.Cycles) {
    const CycleReport &e = *r.Cycles;
    if (!e.Skipped.empty())
      field("cycle_estimate", "{\"skipped\": " + jsonString(e.Skipped) + "}");
    else
      field("cycle_estimate",
            "{\"core\": " + jsonString(e.Core) + ", \"board\": " + jsonString(e.Board) +
                ", \"clock_mhz\": " + fixed(e.ClockMHz, 1) +
                ", \"instructions\": " + num((int64_t)std::llround(e.Instructions)) +
                ", \"cycles\": " + num((int64_t)std::llround(e.Cycles)) +
                ", \"ms\": " + fixed(e.Cycles / (e.ClockMHz * 1e3), 3) +
                ", \"wait_states\": " + num((int64_t)e.WaitStates) +
                ", \"cycles_with_wait_states\": " +
                num((int64_t)std::llround(e.Cycles + e.WaitCycles)) +
                ", \"run_function_cycles\": " + num((int64_t)std::llround(e.OutsideCycles)) +
                ", \"model\": " + jsonString(e.Accuracy) + "}");
  }
  std::string u = "[";
  for (size_t i = 0; i < r.Object.Undefined.size(); ++i)
    u += (i ? ", " : "") + jsonString(r.Object.Undefined[i]);
  field("undefined_symbols", u + "]");

  j += "  \"fused_kernels\": [";
  for (size_t i = 0; i < r.Calls.size(); ++i) {
    const KernelCallReport &k = r.Calls[i];
    j += i ? ",\n    {" : "\n    {";
    j += "\"call\": " + num((int64_t)i) + ", \"kernel\": " + jsonString(k.Kernel);
    j += ", \"nodes\": [";
    for (size_t n = 0; n < k.Nodes.size(); ++n)
      j += (n ? ", " : "") + std::string("{\"name\": ") + jsonString(k.Nodes[n].Name) +
           ", \"op\": " + jsonString(k.Nodes[n].Op) + "}";
    j += "]";
    if (k.Nodes.empty())
      j += ", \"what\": " + jsonString(k.Label);
    if (!k.Plan.empty())
      j += ", \"plan\": " + jsonString(k.Plan);
    if (!k.TuneMeasure.empty())
      j += ", \"tune\": {\"measure\": " + jsonString(k.TuneMeasure) +
           ", \"default_plan\": " + jsonString(k.TuneDefaultPlan) +
           ", \"default\": " + num((int64_t)k.TuneDefault) +
           ", \"tuned\": " + num((int64_t)k.TuneTuned) + "}";
    if (r.HasObject)
      j += ", \"code_bytes\": " + num(k.CodeBytes);
    if (k.EstCycles >= 0)
      j += ", \"est_instructions\": " + num((int64_t)std::llround(k.EstInstructions)) +
           ", \"est_cycles\": " + num((int64_t)std::llround(k.EstCycles));
    if (k.SharesCodeWith >= 0)
      j += ", \"shares_code_with_call\": " + num(k.SharesCodeWith);
    j += ", \"weight_bytes\": " + num(k.WeightBytes) + ", \"ops\": " + num(k.Ops) +
         ", \"copied_bytes\": " + num(k.CopiedBytes) +
         ", \"filled_bytes\": " + num(k.FilledBytes) +
         ", \"expr_depth\": " + num(k.ExprDepth) +
         ", \"arena_live_bytes\": " + num(k.ArenaLiveBytes) +
         ", \"arena_end\": " + num(k.ArenaEnd) + ", \"live_buffers\": [";
    for (size_t b = 0; b < k.LiveBuffers.size(); ++b)
      j += (b ? ", " : "") + num((int64_t)k.LiveBuffers[b]);
    j += "]}";
  }
  j += "\n  ],\n  \"memory_plan\": [";
  for (size_t i = 0; i < r.Buffers.size(); ++i) {
    const BufferReport &b = r.Buffers[i];
    j += i ? ",\n    {" : "\n    {";
    j += "\"buffer\": " + num((int64_t)i) + ", \"name\": " + jsonString(b.Name) +
         ", \"offset\": " + num(b.Offset) + ", \"bytes\": " + num(b.Bytes) +
         ", \"first_call\": " + num(b.FirstCall) + ", \"last_call\": " + num(b.LastCall) +
         (b.PartOf >= 0 ? ", \"part_of\": " + num(b.PartOf) : std::string()) +
         (b.LaidOver >= 0 ? ", \"laid_over\": " + num(b.LaidOver) : std::string()) + "}";
  }
  j += "\n  ],\n  \"weights\": [";
  for (size_t i = 0; i < r.Constants.size(); ++i) {
    j += i ? ",\n    {" : "\n    {";
    j += "\"name\": " + jsonString(r.Constants[i].first) +
         ", \"bytes\": " + num(r.Constants[i].second) +
         ", \"first_call\": " + num(r.ConstantFirstCall[i]) + "}";
  }
  j += "\n  ]\n}\n";
  return j;
}

std::string reportText(const ModelReport &r, const ReportContext &c) {
  std::string s;
  char line[512];
  auto add = [&](const char *key, const std::string &value) {
    std::snprintf(line, sizeof line, "mlcc: %-14s %s\n", key, value.c_str());
    s += line;
  };
  add("target", c.Target + " (" + c.Triple + (c.Cpu.empty() ? "" : ", cpu " + c.Cpu) + ")");
  add("kernels", num((int64_t)r.DistinctKernels) + " (" + num((int64_t)r.Calls.size()) + " calls)");
  if (r.HasObject)
    add("code", bytes(r.Object.CodeBytes) + " (" + num(r.CodeOutsideKernels) +
                    " outside the kernels)");
  add("weights", bytes(r.WeightBytes));
  add("arena", bytes(r.ArenaBytes) + " (align " + num(r.ArenaAlign) + ")");
  add("ops", num(r.Ops) + " per run");
  add("per run", plural((int64_t)r.Calls.size(), "kernel call", "kernel calls") + ", " +
                     plural(r.CopyCalls, "copy", "copies") + " (" +
                     plural(r.FillCalls, "fill", "fills") + "); " + bytes(r.CopiedBytes) +
                     " copied, " + bytes(r.FilledBytes) + " filled");
  if (!c.FloatNodes.empty()) {
    std::string list;
    for (const std::string &n : c.FloatNodes)
      list += (list.empty() ? "" : ", ") + escapeForMessage(n);
    add("float", plural((int64_t)c.FloatNodes.size(), "node", "nodes") +
                     " of the int8 model computed in float (no integer form; between "
                     "DequantizeLinear and QuantizeLinear): " + list);
  }
  if (r.Cycles && !r.Cycles->Skipped.empty())
    add("cycles", "no estimate: " + r.Cycles->Skipped);
  if (r.Cycles && r.Cycles->Skipped.empty()) {
    const CycleReport &e = *r.Cycles;
    auto ms = [&](double cycles) { return fixed(cycles / (e.ClockMHz * 1e3), 2) + " ms"; };
    add("cycles", "about " + fixed(e.Cycles / 1e6, 3) + " M on " + e.Core + " = " +
                      ms(e.Cycles) + " at " + fixed(e.ClockMHz, 0) + " MHz (zero wait states); " +
                      fixed((e.Cycles + e.WaitCycles) / 1e6, 3) + " M = " +
                      ms(e.Cycles + e.WaitCycles) + " with " + num((int64_t)e.WaitStates) +
                      " flash wait states (" + e.Board + "); " + fixed(e.Instructions / 1e6, 3) +
                      " M instructions run under QEMU; timings: " + e.Accuracy);
  }
  if (r.HasObject) {
    std::string u;
    for (auto &sym : r.Object.Undefined)
      u += (u.empty() ? "" : " ") + sym;
    add("undefined", u.empty() ? "(none)" : u);
  }
  const bool cycles = r.Cycles && r.Cycles->Skipped.empty();
  std::snprintf(line, sizeof line, "mlcc: %5s %-28s %9s %10s %14s %10s%s  %s\n", "CALL", "KERNEL",
                "CODE B", "WEIGHTS B", "OPS", "ARENA B", cycles ? "     CYCLES" : "", "NODES");
  s += line;
  for (size_t i = 0; i < r.Calls.size(); ++i) {
    const KernelCallReport &k = r.Calls[i];
    std::string code = !r.HasObject ? "-"
                       : k.SharesCodeWith >= 0 ? "=" + num(k.SharesCodeWith)
                                               : num(k.CodeBytes);
    std::string nodes;
    for (auto &n : k.Nodes)
      nodes += (nodes.empty() ? "" : " + ") + escapeForMessage(n.Name) + " (" +
               escapeForMessage(n.Op) + ")";
    std::snprintf(line, sizeof line, "mlcc: %5zu %-28s %9s %10" PRId64 " %14" PRId64 " %10" PRId64 "  ",
                  i, k.Kernel.substr(0, 28).c_str(), code.c_str(), k.WeightBytes, k.Ops,
                  k.ArenaLiveBytes);
    s += line;
    if (cycles) {
      std::snprintf(line, sizeof line, "%11lld  ", (long long)std::llround(std::max(0.0, k.EstCycles)));
      s += line;
    }
    s += (nodes.empty() ? k.Label : nodes) + "\n";
  }
  return s;
}

int64_t parseByteSize(const std::string &text, const char *flag) {
  size_t i = 0;
  while (i < text.size() && std::isdigit((unsigned char)text[i]))
    ++i;
  std::string digits = text.substr(0, i), suffix = text.substr(i);
  int shift = suffix.empty() ? 0
              : suffix == "k" || suffix == "K" ? 10
              : suffix == "M" ? 20
              : suffix == "G" ? 30
                              : -1;
  if (digits.empty() || digits.size() > 15 || shift < 0 ||
      std::stoll(digits) > (INT64_MAX >> shift))
    fail(ErrorKind::Usage) << flag << ": '" << text
                           << "' is not a byte count (digits, optionally followed "
                              "by k, M or G for 1024, 1024^2, 1024^3)";
  return std::stoll(digits) << shift;
}

void checkBudgets(const ModelReport &r, const Budgets &b) {
  auto over = [](const char *what, int64_t actual, const char *flag, int64_t budget) {
    return std::string(what) + " " + bytes(actual) + ", " + bytes(actual - budget) +
           " over " + flag + " " + num(budget);
  };
  if (b.MaxArena >= 0 && r.ArenaBytes > b.MaxArena) {
    // The buffers live where the arena reaches its end.
    size_t peak = 0;
    for (size_t i = 0; i < r.Calls.size(); ++i)
      if (r.Calls[i].ArenaEnd > r.Calls[peak].ArenaEnd)
        peak = i;
    std::string msg = over("the arena is", r.ArenaBytes, "--max-arena", b.MaxArena);
    if (!r.Calls.empty()) {
      std::vector<size_t> live; // whole buffers: a part's bytes are its buffer's
      for (size_t b : r.Calls[peak].LiveBuffers)
        if (r.Buffers[b].PartOf < 0)
          live.push_back(b);
      std::stable_sort(live.begin(), live.end(), [&](size_t x, size_t y) {
        return r.Buffers[x].Bytes > r.Buffers[y].Bytes;
      });
      msg += "; largest buffers live at its peak (call " + num((int64_t)peak) + ", " +
             nodesShort(r.Calls[peak]) + "):";
      for (size_t i = 0; i < live.size() && i < 3; ++i) {
        const BufferReport &buf = r.Buffers[live[i]];
        msg += std::string(i ? "," : "") + " '" + escapeForMessage(buf.Name) + "' " +
               num(buf.Bytes) + " B (calls " + num(buf.FirstCall) + "-" + num(buf.LastCall) + ")";
      }
    }
    fail(ErrorKind::OverBudget) << msg;
  }
  if (b.MaxWeights >= 0 && r.WeightBytes > b.MaxWeights) {
    std::vector<size_t> order(r.Constants.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return r.Constants[x].second > r.Constants[y].second;
    });
    std::string msg = over("the weights are", r.WeightBytes, "--max-weights", b.MaxWeights) +
                      "; largest:";
    for (size_t i = 0; i < order.size() && i < 3; ++i) {
      int64_t call = r.ConstantFirstCall[order[i]];
      msg += std::string(i ? "," : "") + " '" + escapeForMessage(r.Constants[order[i]].first) +
             "' " + num(r.Constants[order[i]].second) + " B";
      if (call >= 0)
        msg += " (" + nodesShort(r.Calls[call]) + ")";
    }
    fail(ErrorKind::OverBudget) << msg;
  }
  if (b.MaxCode >= 0 && r.HasObject && r.Object.CodeBytes > b.MaxCode) {
    std::vector<size_t> order;
    for (size_t i = 0; i < r.Calls.size(); ++i)
      if (r.Calls[i].SharesCodeWith < 0)
        order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return r.Calls[x].CodeBytes > r.Calls[y].CodeBytes;
    });
    std::string msg = over("the code is", r.Object.CodeBytes, "--max-code", b.MaxCode) +
                      "; largest kernels:";
    for (size_t i = 0; i < order.size() && i < 3; ++i) {
      const KernelCallReport &k = r.Calls[order[i]];
      msg += std::string(i ? "," : "") + " " + k.Kernel + " " + num(k.CodeBytes) + " B (" +
             nodesShort(k) + ")";
    }
    msg += "; outside the kernels " + num(r.CodeOutsideKernels) + " B";
    fail(ErrorKind::OverBudget) << msg;
  }
}

} // namespace mlcc::output
