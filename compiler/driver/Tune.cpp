//===- Tune.cpp - Schedule search: --tune, --tune-db, --tune-budget -------===//
#include "compiler/driver/Tune.h"

#include "compiler/driver/Harness.h"

#include "compiler/kernel/Mutator.h"
#include "compiler/output/Header.h"
#include "compiler/support/Error.h"
#include "compiler/support/Process.h"
#include "compiler/support/Files.h"
#include "targets/llvm/HostJit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace mlcc {

namespace {

using Clock = std::chrono::steady_clock;

/// A kernel to tune: the nodes of one signature with the same candidates.
struct Slot {
  std::string Signature;
  std::vector<ir::KernelPlan> Candidates;
  std::vector<std::string> Nodes;
  /// The measure of a call (host: the median nanoseconds), per candidate
  /// measured (NaN: not).
  std::vector<double> Measured;
  /// The kernel IR its calls' kernels hold, per candidate measured (NaN:
  /// not): what LLVM compiles for it, the compile cost's proxy.
  std::vector<double> Size;
  /// The candidate each round measures (kNone: none, the default compiled
  /// again): the forms and tiles first, then the loop knobs of the best.
  std::vector<size_t> Order;
};

constexpr size_t kNone = SIZE_MAX;

std::string slotKey(const std::string &signature, const std::vector<ir::KernelPlan> &c) {
  std::string key = signature;
  for (const ir::KernelPlan &p : c)
    key += "\n" + p.str();
  return key;
}

double median(std::vector<double> v) {
  if (v.empty())
    return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Whether two runs' outputs agree: integers exactly, f32 within the
/// conformance cases' tolerance (another order of the sums).
bool sameOutputs(const kir::Program &p, const std::vector<std::vector<uint8_t>> &a,
                 const std::vector<std::vector<uint8_t>> &b, std::string &where) {
  for (size_t o = 0; o < p.Outputs.size(); ++o) {
    const kir::IoTensor &t = p.Outputs[o];
    if (t.Type != DType::F32) {
      if (a[o] != b[o]) {
        where = "output '" + t.Name + "' differs";
        return false;
      }
      continue;
    }
    for (int64_t i = 0, n = numElements(t.Dims); i < n; ++i) {
      float x, y;
      std::memcpy(&x, a[o].data() + 4 * i, 4);
      std::memcpy(&y, b[o].data() + 4 * i, 4);
      if (!(std::fabs(x - y) <= 1e-4 + 1e-3 * std::fabs(y)) && !(std::isnan(x) && std::isnan(y))) {
        where = "output '" + t.Name + "' element " + std::to_string(i) + ": " +
                std::to_string(x) + " vs " + std::to_string(y);
        return false;
      }
    }
  }
  return true;
}

/// A compiled round: the model loaded where it runs, measured call by call.
class Round {
public:
  virtual ~Round() = default;
  const kir::Program &program() const { return P; }
  /// The outputs of the model on the tuning inputs.
  const std::vector<std::vector<uint8_t>> &outputs() const { return Out; }
  /// One measure of every call.
  virtual std::vector<double> measure() = 0;
  /// Runs the model once unmeasured (caches, branch predictors).
  virtual void warm() {}
  /// Waits until the round's outputs and measures are there.
  virtual void finish() {}

protected:
  explicit Round(kir::Program p) : P(std::move(p)) {
    for (auto &o : P.Outputs)
      Out.emplace_back((size_t)std::max<int64_t>(o.bytes(), 1));
  }
  kir::Program P;
  std::vector<std::vector<uint8_t>> Out;
};

/// The host: the model in the JIT, each call timed through the hook.
class HostRound : public Round {
public:
  HostRound(kir::Program program, const llvmgen::TargetSpec &target,
            const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &inputs)
      : Round(std::move(program)), Model(P, target, cg) {
    for (auto &b : inputs)
      In.push_back(b.data());
    for (auto &b : Out)
      OutPtrs.push_back(b.data());
    Start.resize(P.Calls.size());
    Ns.resize(P.Calls.size());
    warm();
  }

  void warm() override { Model.run(In, OutPtrs); }

  /// Seconds one plain run takes.
  double runOnce() {
    auto t0 = Clock::now();
    Model.run(In, OutPtrs);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  /// One run timed call by call: nanoseconds per call.
  std::vector<double> measure() override {
    std::fill(Ns.begin(), Ns.end(), 0.0);
    Model.runWithHook(In, OutPtrs, &HostRound::hook, this);
    return Ns;
  }

private:
  static void hook(void *context, int32_t call, const char *, int32_t phase) {
    auto *r = static_cast<HostRound *>(context);
    auto now = Clock::now();
    if (phase == 0)
      r->Start[(size_t)call] = now;
    else
      r->Ns[(size_t)call] += std::chrono::duration<double, std::nano>(now - r->Start[(size_t)call])
                                 .count();
  }

  llvmgen::HostModel Model;
  std::vector<const void *> In;
  std::vector<void *> OutPtrs;
  std::vector<Clock::time_point> Start;
  std::vector<double> Ns;
};

/// The directives that let the GNU assembler (the cross C compiler's)
/// take LLVM's assembly for `target`, which names no architecture: the
/// AArch64 extensions its kernels may use (float16 arithmetic, dot
/// products, i8mm), beyond the assembler's Armv8.0 default.
std::string assemblerExtensions(const llvmgen::TargetSpec &target) {
  if (target.Triple.rfind("aarch64", 0) != 0)
    return "";
  TargetDesc d = llvmgen::describeTarget(target);
  std::string s;
  if (d.HalfArithmetic)
    s += "\t.arch_extension fp16\n";
  if (d.has(MacForm::ArmDot))
    s += "\t.arch_extension dotprod\n";
  if (d.has(MacForm::ArmMatMul))
    s += "\t.arch_extension i8mm\n";
  return s;
}

/// A round run as a program of the target (firmware under QEMU, a Linux
/// program under qemu-user): the model's object and header, a harness that
/// reads inputs.bin and writes outputs.bin, built with the target's C
/// compiler and run; the build and the run happen on another thread
/// (finish() waits), so that the next round compiles meanwhile.
class ProgramRound : public Round {
public:
  ~ProgramRound() override {
    if (Job.valid())
      Job.wait();
  }

  void finish() override {
    if (Job.valid())
      Job.get(); // rethrows the job's error
  }

  std::vector<double> measure() override { return Measures; }

protected:
  static constexpr const char *kName = "mlcc_tune";

  /// Writes the files; `harness` makes the harness's source from the
  /// program (renamed kName), `runFlags` go after the run command's
  /// program name.
  ProgramRound(kir::Program program, const llvmgen::TargetSpec &target,
               const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &inputs,
               const std::string &model,
               const std::function<std::string(const kir::Program &)> &harness,
               const std::vector<std::string> &runFlags)
      : Round(std::move(program)), Tmp(std::make_unique<TempDir>()), Target(target.Name) {
    std::vector<std::string> cc, run;
    crossCommands(target, "--tune", cc, run);
    // The round's program is its own: renamed in place (no copy of its
    // weights). With block counters the code is built as assembly, which
    // the llvm-mca estimate reads and the C compiler assembles: the code
    // counted is the code analysed, generated once.
    P.Name = kName;
    const bool assembly = !cg.BlockCounters.empty();
    Object = std::string(kName) + (assembly ? ".s" : ".o");
    std::string code = llvmgen::compileProgram(
        P, target, cg, assembly ? llvmgen::OutputKind::Assembly : llvmgen::OutputKind::Object);
    if (assembly)
      code = assemblerExtensions(target) + code;
    Tmp->write(Object, code);
    if (assembly)
      Asm = std::move(code);
    Tmp->write(std::string(kName) + ".h", output::writeHeader(P, model));
    Tmp->write("harness.c", harness(P));
    std::string in;
    for (auto &b : inputs)
      in.append(b.begin(), b.end());
    Tmp->write("inputs.bin", in);
    Build = cc;
    for (const char *a : {"-std=gnu11", "-I.", "harness.c"})
      Build.push_back(a);
    Build.push_back(Object);
    for (const char *a : {"-lm", "-o", "tune.elf"})
      Build.push_back(a);
    Run = run;
    Run.insert(Run.begin() + 1, runFlags.begin(), runFlags.end());
    Run.push_back(Tmp->Path + "/tune.elf");
  }

  /// Starts the build and the run; `parse` reads the run's output (after
  /// outputs.bin is read into Out) and sets Measures.
  void start(std::function<void(const std::string &log)> parse) {
    Job = std::async(std::launch::async, [this, parse] {
      std::string log;
      int rc = runProcess(Build, &log, Tmp->Path);
      if (rc != 0)
        fail(ErrorKind::Usage) << "--tune: building the program for " << Target << " with '"
                               << Build[0] << "' failed (exit " << rc
                               << "): " << log.substr(0, 1500);
      rc = runProcess(Run, &log, Tmp->Path);
      if (rc != 0)
        fail(ErrorKind::Internal) << "--tune: running the program for " << Target << " with '"
                                  << Run[0] << "' failed (exit " << rc
                                  << "): " << log.substr(0, 1500);
      std::string bytes = readFile(Tmp->Path + "/outputs.bin", "the program's outputs");
      size_t at = 0;
      for (size_t o = 0; o < Out.size(); ++o) {
        size_t n = (size_t)P.Outputs[o].bytes();
        if (at + n > bytes.size())
          fail(ErrorKind::Internal) << "--tune: the program wrote " << bytes.size()
                                    << " output bytes, fewer than the model's outputs";
        std::copy(bytes.begin() + (long)at, bytes.begin() + (long)(at + n), Out[o].begin());
        at += n;
      }
      parse(log);
    });
  }

  std::unique_ptr<TempDir> Tmp;
  std::string Target, Asm, Object;
  std::vector<std::string> Build, Run;
  std::vector<double> Measures;

private:
  std::future<void> Job;
};

/// The harness's end: the outputs to outputs.bin (92 when it cannot).
std::string harnessWriteOutputs(const kir::Program &p) {
  std::ostringstream s;
  s << "  FILE *o = fopen(\"outputs.bin\", \"wb\");\n  if (!o)\n    return 92;\n"
       "  for (size_t i = 0; i < " << p.Outputs.size() << "; ++i)\n"
       "    fwrite(outs[i], 1, (size_t)out_bytes[i], o);\n  fclose(o);\n";
  return s.str();
}

/// Hooked runs a firmware round averages (SysTick counts in ticks of 40
/// instructions: over 4 runs, a call's count is within 10).
constexpr int kFirmwareRuns = 4;

/// Instructions a firmware measure may be off by (SysTick ticks of 40
/// instructions over kFirmwareRuns runs): a tuned plan must save more.
constexpr double kFirmwareResolution = 40.0 / kFirmwareRuns;

/// An llvm-mca estimate is a model's: a tuned plan must save more than
/// half a percent of the default's cycles.
constexpr double kMcaKeepBelow = 0.995;

/// A microcontroller under QEMU (-icount shift=0: one instruction a
/// nanosecond of virtual time): the model built as firmware whose harness
/// runs it once, then kFirmwareRuns times with the on_kernel hook reading
/// SysTick, and prints each call's ticks; a call's measure is its
/// instructions (deterministic).
class FirmwareRound : public ProgramRound {
public:
  FirmwareRound(kir::Program program, const llvmgen::TargetSpec &target,
                const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &inputs,
                const std::string &model)
      : ProgramRound(std::move(program), target, cg, inputs, model, source,
                     {"-icount", "shift=0"}) {
    start([this](const std::string &log) {
      Measures.assign(P.Calls.size(), NAN);
      std::istringstream lines(log);
      for (std::string word; lines >> word;) {
        size_t c = 0;
        unsigned long long t = 0;
        if (word == "call" && lines >> c >> t && c < Measures.size())
          Measures[c] = (double)t * (1e9 / (double)kSysTickHz) / kFirmwareRuns;
      }
    });
  }

private:
  /// The MPS2 boards' SysTick runs at the processor clock, 25 MHz.
  static constexpr int64_t kSysTickHz = 25000000;

  static std::string source(const kir::Program &p) {
    std::ostringstream s;
    const std::string &name = p.Name;
    s << "/* mlcc --tune firmware harness (generated) */\n#include <stdint.h>\n#include <stdio.h>\n"
         "#include <string.h>\n#include \"" << name << ".h\"\n\n"
         "#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)\n"
         "#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)\n"
         "#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)\n"
      << harnessBuffers(p) << "#define CALLS " << std::max<size_t>(p.Calls.size(), 1) << "\n"
      << "static uint32_t start;\nstatic uint64_t ticks[CALLS];\n\n"
         "static void on_kernel(void *context, int32_t call, const char *name, int32_t phase) {\n"
         "  (void)context;\n  (void)name;\n"
         "  if (phase == 0) {\n    start = SYST_CVR;\n    return;\n  }\n"
         "  ticks[call] += (start - SYST_CVR) & 0xFFFFFFu;\n}\n\n"
         "int main(void) {\n" << harnessReadInputs(p) <<
         "  SYST_RVR = 0xFFFFFFu;\n  SYST_CVR = 0;\n  SYST_CSR = 5u;\n"
         "  mlcc_run_options options;\n  memset(&options, 0, sizeof options);\n"
         "  int32_t rc = " << name << "_run_with((const " << name << "_inputs *)ins, (" << name
      << "_outputs *)outs, arena, sizeof arena, &options);\n"
         "  options.on_kernel = on_kernel;\n"
         "  for (int r = 0; r < " << kFirmwareRuns << " && rc == 0; ++r)\n"
         "    rc = " << name << "_run_with((const " << name << "_inputs *)ins, (" << name
      << "_outputs *)outs, arena, sizeof arena, &options);\n"
         "  if (rc != 0) {\n    printf(\"status %d\\n\", (int)rc);\n    return 93;\n  }\n"
      << harnessWriteOutputs(p)
      << "  for (int c = 0; c < CALLS; ++c)\n"
         "    printf(\"call %d %llu\\n\", c, (unsigned long long)ticks[c]);\n  return 0;\n}\n";
    return s.str();
  }
};

/// The llvm-mca estimate's symbols: the block counters the program is built
/// with (CodegenOptions::BlockCounters).
constexpr const char *kBlockCounters = "mlcc_tune_blocks";

/// A stretch of a function's assembly that runs as often as one block
/// counter says: from a label or a counter's increment to the next.
struct Segment {
  std::string Function;
  int64_t Counter = -1; ///< -1: the count of the segment before it
  std::vector<std::string> Lines;
};

/// The segments of assembly `text` built with block counters: the
/// counters' increments themselves (the lines that name the counters, and
/// the add of one to the register loaded from them) left out.
std::vector<Segment> segments(const std::string &text) {
  std::vector<Segment> out;
  std::istringstream in(text);
  std::string function, loaded;
  const std::string sym = std::string(kBlockCounters) + "_";
  for (std::string line; std::getline(in, line);) {
    if (line.empty())
      continue;
    if (line[0] != '\t' && line[0] != ' ') {
      // A label: a function's (not .L..., not a section's "$...") starts it.
      size_t colon = line.find(':');
      if (colon == std::string::npos)
        continue;
      std::string label = line.substr(0, colon);
      if (label.rfind(".L", 0) != 0 && label.find(' ') == std::string::npos)
        function = label;
      out.push_back(Segment{function, -1, {}});
      continue;
    }
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '.' || line[first] == '/' ||
        line[first] == '#' || line[first] == ';' || function.empty())
      continue;
    std::string insn = line.substr(first);
    size_t at = insn.find(sym);
    if (at != std::string::npos) {
      // The counter's index: the number its name ends with. Its load
      // (AArch64 ldr, RISC-V ld) or x86's increment in memory is where the
      // block starts; the address's materializations (adrp, lui, auipc),
      // which the code generator may hoist into the block before, and the
      // store are left out.
      int64_t index = std::strtoll(insn.c_str() + at + sym.size(), nullptr, 10);
      std::istringstream words(insn);
      std::string op, reg;
      words >> op >> reg;
      if (!reg.empty() && reg.back() == ',')
        reg.pop_back();
      bool load = op.rfind("ld", 0) == 0;
      if ((load || op.rfind("inc", 0) == 0 || insn.find("(%rip)") != std::string::npos) &&
          (out.empty() || out.back().Counter != index))
        out.push_back(Segment{function, index, {}});
      if (load)
        loaded = reg;
      continue;
    }
    if (!loaded.empty() && insn.rfind("add", 0) == 0 && insn.find(loaded) != std::string::npos &&
        ((insn.size() >= 2 && insn.compare(insn.size() - 2, 2, "#1") == 0) ||
         insn.compare(insn.size() - 2, 2, " 1") == 0)) {
      loaded.clear();
      continue;
    }
    if (out.empty())
      out.push_back(Segment{function, -1, {}});
    out.back().Lines.push_back(insn);
  }
  return out;
}

/// An application core this machine does not run (AArch64, RISC-V Linux):
/// the model built with block counters, run once under qemu-user for how
/// often each block runs, and each block's cycles estimated by llvm-mca for
/// the target's CPU; a call's measure is its kernel's blocks' count x
/// cycles (an estimate; deterministic).
class McaRound : public ProgramRound {
public:
  McaRound(kir::Program program, const llvmgen::TargetSpec &target,
           const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &inputs,
           const std::string &model)
      : ProgramRound(std::move(program), target, counted(cg), inputs, model, source, {}) {
    Mca = {"llvm-mca-19", "-mtriple=" + target.Triple, "-iterations=100",
           "-skip-unsupported-instructions=parse-failure"};
    if (!target.Cpu.empty())
      Mca.push_back("-mcpu=" + target.Cpu);
    Mca.push_back("blocks.s");
    start([this](const std::string &log) { estimate(log); });
  }

private:
  static llvmgen::CodegenOptions counted(llvmgen::CodegenOptions cg) {
    cg.OnProgress = nullptr;
    cg.BlockCounters = kBlockCounters;
    return cg;
  }

  /// Runs the model once and prints every basic block's count ("block I
  /// N", the nonzero ones).
  static std::string source(const kir::Program &p) {
    std::ostringstream s;
    const std::string &name = p.Name;
    s << "/* mlcc --tune llvm-mca harness (generated) */\n#include <stdint.h>\n#include <stdio.h>\n"
         "#include <string.h>\n#include \"" << name << ".h\"\n\n"
         "extern uint64_t *const " << kBlockCounters << "[];\nextern const int32_t "
      << kBlockCounters << "_n;\n" << harnessBuffers(p) << "\nint main(void) {\n"
      << harnessReadInputs(p) << "  int32_t rc = " << name << "_run((const " << name
      << "_inputs *)ins, (" << name << "_outputs *)outs, arena, sizeof arena);\n"
         "  if (rc != 0) {\n    printf(\"status %d\\n\", (int)rc);\n    return 93;\n  }\n"
      << harnessWriteOutputs(p) << "  for (int32_t i = 0; i < " << kBlockCounters << "_n; ++i)\n"
         "    if (*" << kBlockCounters << "[i])\n      printf(\"block %d %llu\\n\", (int)i, "
         "(unsigned long long)*" << kBlockCounters << "[i]);\n  return 0;\n}\n";
    return s.str();
  }

  void estimate(const std::string &log) {
    std::map<int64_t, double> counts;
    std::istringstream lines(log);
    for (std::string word; lines >> word;) {
      int64_t i = 0;
      unsigned long long n = 0;
      if (word == "block" && lines >> i >> n)
        counts[i] = (double)n;
    }
    // Each counted segment a region of one llvm-mca run.
    std::vector<Segment> segs = segments(Asm);
    std::vector<double> times(segs.size(), 0.0);
    std::ostringstream regions;
    std::vector<size_t> regionOf;
    double last = 0;
    std::string lastFunction;
    for (size_t k = 0; k < segs.size(); ++k) {
      if (segs[k].Function != lastFunction)
        last = 0;
      lastFunction = segs[k].Function;
      if (segs[k].Counter >= 0)
        last = counts.count(segs[k].Counter) ? counts[segs[k].Counter] : 0.0;
      times[k] = last;
      if (last == 0 || segs[k].Lines.empty())
        continue;
      regions << "# LLVM-MCA-BEGIN r" << regionOf.size() << "\n";
      for (const std::string &l : segs[k].Lines)
        regions << "\t" << l << "\n";
      regions << "# LLVM-MCA-END\n";
      regionOf.push_back(k);
    }
    Tmp->write("blocks.s", regions.str());
    std::string report;
    int rc = runProcess(Mca, &report, Tmp->Path);
    if (rc != 0)
      fail(ErrorKind::Internal) << "--tune: llvm-mca-19 failed (exit " << rc
                                << "): " << report.substr(0, 1500);
    // "[I] Code Region - rI" ... "Total Cycles: C" (for 100 iterations).
    std::vector<double> cycles(regionOf.size(), 0.0);
    std::istringstream r(report);
    int64_t region = -1;
    for (std::string line; std::getline(r, line);) {
      size_t at = line.find("Code Region - r");
      if (at != std::string::npos)
        region = std::strtoll(line.c_str() + at + 15, nullptr, 10);
      else if (line.rfind("Total Cycles:", 0) == 0 && region >= 0 &&
               region < (int64_t)cycles.size())
        cycles[(size_t)region] = std::strtod(line.c_str() + 13, nullptr) / 100.0;
    }
    std::map<std::string, double> perFunction;
    for (size_t k = 0; k < regionOf.size(); ++k)
      perFunction[segs[regionOf[k]].Function] += times[regionOf[k]] * cycles[k];
    // A call's kernel and its outlined parts (NAME.task...), shared evenly
    // by the calls of one kernel.
    std::map<size_t, int64_t> callsOf;
    for (const kir::Call &c : P.Calls)
      ++callsOf[c.KernelIndex];
    Measures.assign(P.Calls.size(), 0.0);
    for (size_t c = 0; c < P.Calls.size(); ++c) {
      const std::string &k = P.Kernels[P.Calls[c].KernelIndex].Name;
      double total = 0;
      for (const auto &[fn, v] : perFunction)
        if (fn == k || fn.rfind(k + ".", 0) == 0)
          total += v;
      Measures[c] = total / (double)callsOf[P.Calls[c].KernelIndex];
    }
  }

  std::vector<std::string> Mca;
};

/// Whether --tune estimates `t` with llvm-mca (a Linux core under qemu-user).
bool mcaTarget(const llvmgen::TargetSpec &t) {
  const std::string &tr = t.Triple;
  return tr.find("linux") != std::string::npos &&
         (tr.rfind("aarch64", 0) == 0 || tr.rfind("riscv64", 0) == 0);
}

/// Whether --tune measures `t` as firmware under QEMU.
bool firmwareTarget(const llvmgen::TargetSpec &t) {
  return t.Name == "cortex-m4" || t.Name == "cortex-m7";
}

/// Per slot, the nanoseconds of one of its calls in one timed run (the
/// mean over its calls; NaN when none ran).
std::vector<double> perSlot(const kir::Program &p, const std::vector<double> &ns,
                            const std::map<std::string, size_t> &slotOfNode, size_t slots) {
  std::vector<double> sum(slots, 0.0), count(slots, 0.0);
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    if (p.Calls[c].Nodes.empty())
      continue;
    auto it = slotOfNode.find(p.Calls[c].Nodes[0].Name);
    if (it == slotOfNode.end())
      continue;
    sum[it->second] += ns[c];
    count[it->second] += 1;
  }
  std::vector<double> out(slots, NAN);
  for (size_t s = 0; s < slots; ++s)
    if (count[s] > 0)
      out[s] = sum[s] / count[s];
  return out;
}

/// The nodes of a kernel's IR (statements and expressions, each counted
/// where it appears): a deterministic proxy for the time LLVM takes to
/// compile it.
double irSize(const kir::Kernel &k) {
  double n = 0;
  kir::visitStmts(k.Body, [&](const kir::Stmt &) { n += 1; });
  kir::visitExprs(k.Body, [&](const kir::Expr &) { n += 1; });
  return n;
}

/// Per slot, the kernel IR of the distinct kernels its calls run (NaN when
/// none ran).
std::vector<double> slotSizes(const kir::Program &p, const std::map<std::string, size_t> &slotOfNode,
                              size_t slots) {
  std::vector<std::set<size_t>> kernels(slots);
  for (const kir::Call &c : p.Calls) {
    if (c.Nodes.empty())
      continue;
    auto it = slotOfNode.find(c.Nodes[0].Name);
    if (it != slotOfNode.end())
      kernels[it->second].insert(c.KernelIndex);
  }
  std::vector<double> out(slots, NAN);
  for (size_t s = 0; s < slots; ++s) {
    if (kernels[s].empty())
      continue;
    out[s] = 0;
    for (size_t k : kernels[s])
      out[s] += irSize(p.Kernels[k]);
  }
  return out;
}

/// Repeats of a timed run for a model whose run takes `seconds`: about a
/// quarter of a second's worth, 5 to 31 (odd: a true median).
int repeatsFor(double seconds) {
  int n = (int)std::clamp(0.25 / std::max(seconds, 1e-6), 5.0, 31.0);
  return n | 1;
}

/// The noise margin: a tuned plan is kept only where it takes less than
/// this fraction of the default's time in the confirmation round.
constexpr double kKeepBelow = 0.98;

/// The compile-cost guard: the kernel IR that the kept plans add to the
/// default plans' may be at most this fraction of the model's kernel IR,
/// so that a compile reading the database stays close to an untuned one's
/// time (LLVM's time grows more slowly than the IR it compiles).
constexpr double kMaxAddedIr = 0.10;

} // namespace

PlanTuner::PlanTuner(const CompileOptions &o, const llvmgen::TargetSpec &target, Progress &status)
    : O(o), Target(target), Status(status), Tune(o.Tune), DbPath(o.TuneDb) {
  if (!o.TuneBudget.empty()) {
    if (!Tune)
      fail(ErrorKind::Usage) << "--tune-budget needs --tune";
    const std::string &b = o.TuneBudget;
    char *end = nullptr;
    double v = std::strtod(b.c_str(), &end);
    std::string unit = end ? std::string(end) : "";
    if (end == b.c_str() || !(v > 0) || (unit != "" && unit != "s"))
      fail(ErrorKind::Usage) << "--tune-budget '" << b
                             << "': expected seconds (60s) or candidates per kernel (8)";
    if (unit == "s")
      BudgetSeconds = v;
    else if (v != std::floor(v) || v < 1)
      fail(ErrorKind::Usage) << "--tune-budget '" << b
                             << "': a number of candidates is a whole number of at least 1";
    else
      BudgetTrials = (int64_t)v;
  }
  if (!active())
    return;
  if (target.Name == "cuda")
    fail(ErrorKind::Unsupported) << "--tune and --tune-db plan CPU kernels; the CUDA target "
                                    "has no schedule search yet";
  if (Tune && !runsInProcess(target) && !firmwareTarget(target) && !mcaTarget(target))
    fail(ErrorKind::Unsupported)
        << "--tune measures on this machine (the host, x86-64 levels it has), under QEMU "
           "(cortex-m4, cortex-m7: instructions counted) or by llvm-mca (AArch64 and RISC-V "
           "Linux cores), not for --target "
        << target.Name << " (" << target.Triple << (target.Cpu.empty() ? "" : ", " + target.Cpu)
        << ")";
  TargetDesc d = llvmgen::describeTarget(target);
  TargetKey = target.Name + " " + d.Triple + " " + d.Cpu + " " + d.Features;
  Compiler = output::mlccVersion();
  if (!DbPath.empty())
    Db = schedule::TuneDb::read(DbPath);
}

void PlanTuner::search(const PipelineOptions &base) {
  if (!Tune)
    return;
  auto started = Clock::now();
  llvmgen::CodegenOptions Codegen;
  Codegen.OptLevel = O.OptLevel;
  Codegen.SizeOpt = O.SizeOpt;
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  std::vector<Slot> slots;
  std::map<std::string, size_t> slotOfKey, slotOfNode;
  std::set<std::string> seenNodes, ambiguous;
  // The candidate of each slot that confirmation rounds (round kNone)
  // compile.
  std::vector<size_t> choice;
  // The default round records the kernels and their candidates.
  size_t round = 0;
  auto compile = [&](bool record) {
    PipelineOptions po = base;
    po.Status = nullptr;
    po.DumpIr.clear();
    po.TimePasses = false;
    po.ChoosePlan = [&](const ir::Node &n, const std::vector<ir::KernelPlan> &c) -> size_t {
      std::string sig = schedule::kernelSignature(n);
      std::string key = slotKey(sig, c);
      if (record) {
        auto it = slotOfKey.find(key);
        if (it == slotOfKey.end()) {
          it = slotOfKey.emplace(key, slots.size()).first;
          Slot s{sig, c, {}, std::vector<double>(c.size(), NAN),
                 std::vector<double>(c.size(), NAN), {0}};
          for (size_t i = 1; i < c.size(); ++i)
            if (passes::withoutKnobs(c[i]) == c[i])
              s.Order.push_back(i);
          slots.push_back(std::move(s));
        }
        slots[it->second].Nodes.push_back(n.Name);
        if (!seenNodes.insert(n.Name).second)
          ambiguous.insert(n.Name);
        slotOfNode[n.Name] = it->second;
        return 0;
      }
      auto it = slotOfKey.find(key);
      if (it == slotOfKey.end())
        return 0;
      const Slot &s = slots[it->second];
      if (round == kNone)
        return choice.at(it->second);
      return round < s.Order.size() && s.Order[round] != kNone ? s.Order[round] : 0;
    };
    return compileModel(O, Target, po).Program;
  };
  Status.step("tune: compiling the default plans");
  kir::Program defaults = compile(true);
  const std::vector<std::vector<uint8_t>> inputs = harnessInputs(defaults);
  // The measurer: this machine's clock, QEMU's instruction count, or
  // llvm-mca's cycles; the last two are deterministic.
  enum class Kind { Host, Firmware, Mca };
  const Kind kind = runsInProcess(Target)    ? Kind::Host
                    : firmwareTarget(Target) ? Kind::Firmware
                                             : Kind::Mca;
  const bool firmware = kind == Kind::Firmware, exact = kind != Kind::Host;
  const char *unit = kind == Kind::Host ? "ns" : firmware ? "instructions" : "cycles";
  auto load = [&](kir::Program p) -> std::unique_ptr<Round> {
    if (firmware)
      return std::make_unique<FirmwareRound>(std::move(p), Target, Codegen, inputs, O.Model);
    if (kind == Kind::Mca)
      return std::make_unique<McaRound>(std::move(p), Target, Codegen, inputs, O.Model);
    return std::make_unique<HostRound>(std::move(p), Target, Codegen, inputs);
  };
  std::unique_ptr<Round> first = load(std::move(defaults));
  first->finish();
  for (const std::string &n : ambiguous)
    slotOfNode.erase(n);
  // Rounds until every slot's order is measured, within the budget of
  // candidates per kernel.
  auto roundsNeeded = [&] {
    size_t n = 1;
    for (const Slot &s : slots)
      n = std::max(n, s.Order.size());
    return BudgetTrials > 0 ? std::min(n, (size_t)BudgetTrials) : n;
  };
  // Deterministic counts need one measure; times the median of repeats.
  const int repeats =
      exact ? 1 : repeatsFor(static_cast<HostRound &>(*first).runOnce());

  auto measure = [&](Round &r, size_t inRound) {
    r.warm();
    std::vector<std::vector<double>> samples(slots.size());
    for (int k = 0; k < repeats; ++k) {
      std::vector<double> t = perSlot(r.program(), r.measure(), slotOfNode, slots.size());
      for (size_t s = 0; s < slots.size(); ++s)
        if (!std::isnan(t[s]))
          samples[s].push_back(t[s]);
    }
    const std::vector<double> sizes = slotSizes(r.program(), slotOfNode, slots.size());
    for (size_t s = 0; s < slots.size(); ++s)
      if (inRound < slots[s].Order.size() && slots[s].Order[inRound] != kNone) {
        slots[s].Measured[slots[s].Order[inRound]] = median(samples[s]);
        slots[s].Size[slots[s].Order[inRound]] = sizes[s];
      }
  };
  round = 0;
  measure(*first, 0);
  // The default program's kernel IR, and the calls of each slot in a run.
  double defaultIr = 0;
  for (const kir::Kernel &k : first->program().Kernels)
    defaultIr += irSize(k);
  std::vector<double> callsOf(slots.size(), 0.0);
  for (const kir::Call &c : first->program().Calls)
    if (!c.Nodes.empty() && slotOfNode.count(c.Nodes[0].Name))
      callsOf[slotOfNode.at(c.Nodes[0].Name)] += 1;
  size_t measuredRounds = 1;
  // Firmware rounds link and run on other threads while the next ones
  // compile: as many in flight as the machine has cores. Host rounds time
  // one at a time, on a machine otherwise idle.
  const size_t inFlight =
      exact ? std::max<size_t>(1, std::thread::hardware_concurrency()) : 1;
  std::vector<std::pair<size_t, std::unique_ptr<Round>>> batch;
  auto runRounds = [&](size_t next, size_t rounds) {
    while (next < rounds || !batch.empty()) {
      if (next < rounds && batch.size() < inFlight &&
          !(BudgetSeconds > 0 && elapsed() > BudgetSeconds)) {
        round = next++;
        Status.step("tune: round " + std::to_string(round + 1) + " of " + std::to_string(rounds),
                    round, rounds);
        batch.emplace_back(round, load(compile(false)));
        if (next < rounds && batch.size() < inFlight)
          continue;
      }
      if (batch.empty())
        break;
      const size_t thisRound = batch.front().first;
      std::unique_ptr<Round> r = std::move(batch.front().second);
      batch.erase(batch.begin());
      r->finish();
      std::string where;
      if (!sameOutputs(r->program(), r->outputs(), first->outputs(), where)) {
        std::fprintf(stderr,
                     "mlcc: tune: round %zu's plans change the model's outputs (%s); its measures "
                     "are dropped\n",
                     thisRound + 1, where.c_str());
        continue;
      }
      measure(*r, thisRound);
      ++measuredRounds;
    }
  };
  // The index of each slot's best measured candidate.
  auto bestOf = [](const Slot &slot) {
    size_t b = 0;
    for (size_t c = 1; c < slot.Measured.size(); ++c)
      if (!std::isnan(slot.Measured[c]) &&
          (std::isnan(slot.Measured[b]) || slot.Measured[c] < slot.Measured[b]))
        b = c;
    return b;
  };
  // The forms and tiles, then the loop knobs of each slot's best of them.
  const size_t formRounds = roundsNeeded();
  runRounds(1, formRounds);
  for (Slot &slot : slots) {
    const ir::KernelPlan base = passes::withoutKnobs(slot.Candidates[bestOf(slot)]);
    slot.Order.resize(formRounds, kNone);
    for (size_t c = 0; c < slot.Candidates.size(); ++c)
      if (std::isnan(slot.Measured[c]) && passes::withoutKnobs(slot.Candidates[c]) == base)
        slot.Order.push_back(c);
  }
  runRounds(formRounds, roundsNeeded());
  // Confirmation: the default plans and the best ones, run alternately.
  size_t changedSlots = 0;
  std::vector<size_t> best(slots.size(), 0);
  for (size_t s = 0; s < slots.size(); ++s) {
    best[s] = bestOf(slots[s]);
    changedSlots += best[s] != 0;
  }
  // A confirmation round: the default plans and `choice` compiled, run
  // alternately; each slot's median and the whole model's.
  struct Confirmed {
    std::vector<double> Default, Chosen;
    double ModelDefault = NAN, ModelChosen = NAN;
  };
  auto confirm = [&](size_t kernels) {
    Status.step("tune: confirming " + std::to_string(kernels) + " kernels' choices");
    round = kNone;
    std::unique_ptr<Round> chosen = load(compile(false));
    chosen->finish();
    std::string where;
    if (!sameOutputs(chosen->program(), chosen->outputs(), first->outputs(), where))
      fail(ErrorKind::Internal) << "internal error: --tune: the chosen plans change the model's "
                                   "outputs (" << where << ")";
    std::vector<std::vector<double>> a(slots.size()), b(slots.size());
    std::vector<double> totalA, totalB;
    auto total = [](const std::vector<double> &ns) {
      double t = 0;
      for (double x : ns)
        t += x;
      return t;
    };
    first->warm();
    for (int k = 0; k < repeats; ++k) {
      const std::vector<double> na = first->measure();
      totalA.push_back(total(na));
      std::vector<double> ta = perSlot(first->program(), na, slotOfNode, slots.size());
      const std::vector<double> nb = chosen->measure();
      totalB.push_back(total(nb));
      std::vector<double> tb = perSlot(chosen->program(), nb, slotOfNode, slots.size());
      for (size_t s = 0; s < slots.size(); ++s) {
        if (!std::isnan(ta[s]))
          a[s].push_back(ta[s]);
        if (!std::isnan(tb[s]))
          b[s].push_back(tb[s]);
      }
    }
    Confirmed c;
    for (size_t s = 0; s < slots.size(); ++s) {
      c.Default.push_back(median(a[s]));
      c.Chosen.push_back(median(b[s]));
    }
    c.ModelDefault = median(totalA);
    c.ModelChosen = median(totalB);
    return c;
  };
  // Whether a chosen plan's measure beats the default's beyond the
  // measurer's noise.
  auto beats = [&](double chosen, double def) {
    return firmware            ? chosen < def - kFirmwareResolution
           : kind == Kind::Mca ? chosen < kMcaKeepBelow * def
                               : chosen < kKeepBelow * def;
  };
  std::vector<double> confirmDefault(slots.size(), NAN), confirmBest(slots.size(), NAN);
  double modelDefault = NAN, modelTuned = NAN, addedIrShare = 0;
  choice = best;
  size_t kept = 0;
  if (changedSlots > 0) {
    Confirmed c = confirm(changedSlots);
    confirmDefault = c.Default;
    confirmBest = c.Chosen;
    modelDefault = c.ModelDefault;
    modelTuned = c.ModelChosen;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (choice[s] != 0 && !(!std::isnan(c.Chosen[s]) && !std::isnan(c.Default[s]) &&
                              beats(c.Chosen[s], c.Default[s])))
        choice[s] = 0;
      kept += choice[s] != 0;
    }
    // The compile-cost guard: the kept plans may add at most kMaxAddedIr
    // of the model's kernel IR. Plans that add none stay; the others are
    // taken by their gain per node added, best first, each while it fits.
    auto addedIr = [&](size_t s) { return slots[s].Size[choice[s]] - slots[s].Size[0]; };
    double added = 0;
    std::vector<std::pair<double, size_t>> growing;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (choice[s] == 0)
        continue;
      if (addedIr(s) > 0)
        growing.emplace_back(-(c.Default[s] - c.Chosen[s]) * callsOf[s] / addedIr(s), s);
      else
        added += addedIr(s);
    }
    std::sort(growing.begin(), growing.end());
    size_t costly = 0;
    for (const auto &[rate, s] : growing) {
      if (added + addedIr(s) <= kMaxAddedIr * defaultIr) {
        added += addedIr(s);
        continue;
      }
      choice[s] = 0;
      --kept;
      ++costly;
    }
    if (costly > 0)
      std::fprintf(stderr,
                   "mlcc: tune: %zu faster plans left at the default: they would add more than "
                   "%.0f%% to the kernel IR that LLVM compiles\n",
                   costly, kMaxAddedIr * 100);
    addedIrShare = defaultIr > 0 ? added / defaultIr : 0;
    // The plans kept, together, against the defaults once more where some
    // choices went back to the default: the whole model must be faster
    // with exactly the plans kept (a plan can slow the calls around it),
    // or none is kept.
    if (kept > 0 && kept < changedSlots) {
      Confirmed k = confirm(kept);
      modelDefault = k.ModelDefault;
      modelTuned = k.ModelChosen;
    }
    if (kept > 0 && modelTuned > modelDefault) {
      std::fprintf(stderr,
                   "mlcc: tune: the plans kept (%zu) together take %.0f %s a run against the "
                   "defaults' %.0f; the default plans are kept\n",
                   kept, modelTuned, unit, modelDefault);
      std::fill(choice.begin(), choice.end(), 0);
      kept = 0;
    }
    if (kept == 0) {
      modelTuned = modelDefault;
      addedIrShare = 0;
    }
  }
  for (size_t s = 0; s < slots.size(); ++s) {
    const Slot &slot = slots[s];
    schedule::TuneEntry e;
    e.Signature = slot.Signature;
    e.Target = TargetKey;
    e.Compiler = Compiler;
    e.Measure = kind == Kind::Host ? "host-ns" : firmware ? "qemu-instructions" : "mca-cycles";
    e.DefaultPlan = slot.Candidates[0].str();
    e.Candidates = (int64_t)std::count_if(slot.Measured.begin(), slot.Measured.end(),
                                          [](double v) { return !std::isnan(v); });
    e.Default = std::round(slot.Measured[0]);
    e.Tuned = e.Default;
    e.Plan = e.DefaultPlan;
    if (std::isnan(slot.Measured[0]))
      continue; // never timed (its calls' node names are not unique)
    if (best[s] != 0 && !std::isnan(confirmDefault[s])) {
      e.Default = std::round(confirmDefault[s]);
      e.Tuned = e.Default;
    }
    if (choice[s] != 0) {
      e.Plan = slot.Candidates[choice[s]].str();
      e.Tuned = std::round(confirmBest[s]);
    }
    Db.put(e);
  }
  std::fprintf(stderr,
               "mlcc: tune  %zu kernels of %zu signatures, %zu rounds in %.1f s: %zu tuned plans "
               "kept (%+.1f%% of %.0f kernel IR nodes), %zu left at the default",
               slotOfNode.size(), slots.size(), measuredRounds, elapsed(), kept,
               addedIrShare * 100, defaultIr, changedSlots - kept);
  if (!std::isnan(modelDefault) && exact)
    std::fprintf(stderr, "; the kernel calls %.0f %s a run with the default plans, %.0f with "
                 "the chosen ones%s", modelDefault, unit, kept ? modelTuned : modelDefault,
                 kind == Kind::Mca ? " (llvm-mca's estimate)" : "");
  else if (!std::isnan(modelDefault))
    std::fprintf(stderr, "; the kernel calls %.3f ms a run with the default plans, %.3f ms with "
                 "the chosen ones", modelDefault / 1e6, kept ? modelTuned / 1e6 : modelDefault / 1e6);
  std::fprintf(stderr, "\n");
}

passes::PlanChooser PlanTuner::chooser() {
  if (!active())
    return {};
  Applied.clear();
  Skipped.clear();
  return [this](const ir::Node &n, const std::vector<ir::KernelPlan> &c) -> size_t {
    std::string sig = schedule::kernelSignature(n);
    const schedule::TuneEntry *e = Db.find(sig, TargetKey, Compiler);
    if (!e)
      return 0;
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i].str() == e->Plan) {
        Applied[n.Name] = *e;
        return i;
      }
    Skipped[sig] = "its plan " + e->Plan + " is not one this compiler offers for the kernel";
    return 0;
  };
}

void PlanTuner::annotate(output::ModelReport &r, bool verbose) const {
  if (!active())
    return;
  for (output::KernelCallReport &k : r.Calls) {
    if (k.Nodes.empty())
      continue;
    auto it = Applied.find(k.Nodes[0].Name);
    if (it == Applied.end())
      continue;
    k.TuneMeasure = it->second.Measure;
    k.TuneDefaultPlan = it->second.DefaultPlan;
    k.TuneDefault = it->second.Default;
    k.TuneTuned = it->second.Tuned;
  }
  if (!verbose)
    return;
  size_t foreign = Db.foreign(TargetKey, Compiler);
  if (foreign)
    std::fprintf(stderr,
                 "mlcc: tune-db %zu entries for another target or compiler version skipped "
                 "(this one: %s, mlcc %s)\n",
                 foreign, Target.Name.c_str(), Compiler.c_str());
  for (const auto &[sig, why] : Skipped)
    std::fprintf(stderr, "mlcc: tune-db entry skipped, %s: %s\n", why.c_str(), sig.c_str());
  std::fprintf(stderr, "mlcc: tune-db %zu kernel calls take plans from the database\n",
               Applied.size());
}

} // namespace mlcc
