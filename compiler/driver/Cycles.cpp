//===- Cycles.cpp - The cycle estimate of a compiled Cortex-M library -----===//
#include "compiler/driver/Cycles.h"
#include "mlcc/Cycles.h"

#include "compiler/driver/Harness.h"
#include "compiler/driver/Toolchains.h"
#include "compiler/support/Error.h"
#include "compiler/support/Files.h"
#include "compiler/support/Process.h"
#include "targets/llvm/McuCycles.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace mlcc {

namespace {

/// The firmware's main: copies the inputs (`bytes`, in the source: no file
/// I/O, whose heap some boards' semihosting places over the data) and runs
/// the model once between the two marker functions the estimate counts
/// from and to; exits 0, or 93 when the run fails.
std::string harness(const kir::Program &p, const std::string &bytes) {
  std::ostringstream s;
  const std::string &n = p.Name;
  s << "/* mlcc cycle estimate harness (generated) */\n#include <stdint.h>\n"
       "#include <string.h>\n#include \"" << n << ".h\"\n\n"
    << harnessBuffers(p) << "static const uint8_t input_bytes[" << std::max<size_t>(bytes.size(), 1)
    << "] = {";
  for (size_t i = 0; i < bytes.size(); ++i)
    s << (i % 24 ? "" : "\n  ") << (unsigned)(uint8_t)bytes[i] << ",";
  s << "\n};\n\n"
       "__attribute__((noinline)) void mlcc_cycles_begin(void) { __asm__ volatile(\"\" ::: "
       "\"memory\"); }\n"
       "__attribute__((noinline)) void mlcc_cycles_end(void) { __asm__ volatile(\"\" ::: "
       "\"memory\"); }\n\nint main(void) {\n"
       "  size_t at = 0;\n"
       "  for (size_t i = 0; i < " << p.Inputs.size() << "; ++i) {\n"
       "    memcpy(ins[i], input_bytes + at, (size_t)in_bytes[i]);\n"
       "    at += (size_t)in_bytes[i];\n  }\n"
       "  mlcc_cycles_begin();\n  int32_t rc = " << n << "_run((const " << n << "_inputs *)ins, ("
    << n << "_outputs *)outs, arena, sizeof arena);\n"
    << "  mlcc_cycles_end();\n  return rc == 0 ? 0 : 93;\n}\n";
  return s.str();
}

} // namespace

bool wantsCycleEstimate(const CompileOptions &o, const llvmgen::TargetSpec &t,
                        const std::string &kind) {
  if (o.Cycles == "off")
    return false;
  const bool object = kind == "lib" || kind == "obj";
  if (o.Cycles == "on") {
    if (!llvmgen::mcuCore(t.Name))
      fail(ErrorKind::Usage) << "--cycles on: no cycle model for --target " << t.Name
                             << " (the Cortex-M presets have one: cortex-m0plus, cortex-m4, "
                                "cortex-m7, cortex-m33, cortex-m55)";
    if (!object)
      fail(ErrorKind::Usage) << "--cycles on needs object code (-o FILE.a or FILE.o), not --emit "
                             << kind;
    return true;
  }
  if (o.Cycles != "auto")
    fail(ErrorKind::Usage) << "--cycles takes auto, on or off, not '" << o.Cycles << "'";
  return object && llvmgen::mcuCore(t.Name) &&
         (o.Verbose || !o.Report.empty() || !o.ReportHtml.empty());
}

void estimateLibraryCycles(const CompileOptions &o, const kir::Program &program,
                           const llvmgen::TargetSpec &t,
                           const std::vector<std::pair<std::string, std::string>> &objects,
                           const std::vector<std::string> &kernelSymbols,
                           const std::string &header, output::ModelReport &r) {
  const llvmgen::McuCore *core = llvmgen::mcuCore(t.Name);
  MLCC_CHECK(core, "no cycle model for " << t.Name);
  output::CycleReport e;
  e.Core = core->Name;
  e.Board = core->Board;
  e.Accuracy = core->Accuracy;
  e.ClockMHz = o.ClockMHz > 0 ? o.ClockMHz : core->ClockMHz;
  e.WaitStates = o.WaitStates >= 0 ? o.WaitStates : core->WaitStates;
  const bool required = o.Cycles == "on";
  auto skip = [&](const std::string &why) {
    if (required)
      fail(ErrorKind::Usage) << "--cycles on: " << why;
    e.Skipped = why;
    r.Cycles = e;
  };
  std::vector<std::string> cc, run;
  try {
    crossCommands(t, "the cycle estimate", cc, run);
  } catch (const CompileError &err) {
    return skip(err.what());
  }
  for (const std::string &tool : {cc[0], run[0]})
    if (findProgram(tool).empty())
      return skip(tool + " is not installed (apt-get install gcc-arm-none-eabi "
                         "libnewlib-arm-none-eabi qemu-system-arm)");
  TempDir tmp;
  const std::string &name = program.Name;
  for (auto &[file, bytes] : objects)
    tmp.write(file, bytes);
  tmp.write(name + ".h", header);
  std::string inputs;
  std::vector<std::vector<uint8_t>> data = harnessInputs(program);
  for (size_t i = 0; i < data.size(); ++i)
    inputs.append(data[i].begin(), data[i].begin() + (long)program.Inputs[i].bytes());
  tmp.write("harness.c", harness(program, inputs));
  std::vector<std::string> build = cc;
  for (const char *a : {"-std=gnu11", "-I.", "harness.c"})
    build.push_back(a);
  for (auto &object : objects)
    build.push_back(object.first);
  for (const char *a : {"-lm", "-o", "firmware.elf"})
    build.push_back(a);
  std::string log;
  int rc = runProcess(build, &log, tmp.Path);
  if (rc != 0)
    return skip("linking the estimate's firmware with " + cc[0] + " failed (exit " +
                std::to_string(rc) + "): " + log.substr(0, 600));
  std::vector<std::string> cmd = {run[0]};
  for (const std::string &f : llvmgen::cycleTraceFlags(tmp.Path + "/trace.log"))
    cmd.push_back(f);
  cmd.insert(cmd.end(), run.begin() + 1, run.end());
  cmd.push_back(tmp.Path + "/firmware.elf");
  rc = runProcess(cmd, &log, tmp.Path);
  if (const char *keep = std::getenv("MLCC_CYCLES_KEEP")) // debugging: the firmware's folder
    std::filesystem::copy(tmp.Path, keep, std::filesystem::copy_options::recursive |
                                              std::filesystem::copy_options::overwrite_existing);
  if (rc != 0)
    return skip("running the estimate's firmware under " + run[0] + " failed (exit " +
                std::to_string(rc) + "): " + log.substr(0, 600));
  std::ifstream trace(tmp.Path + "/trace.log");
  llvmgen::CycleOptions co;
  co.Core = t.Name;
  co.WaitStates = e.WaitStates;
  co.Begin = "mlcc_cycles_begin";
  co.End = "mlcc_cycles_end";
  for (const kir::Call &c : program.Calls)
    co.Calls.push_back(kernelSymbols[(size_t)c.KernelIndex]);
  co.Outside = {name + "_run", name + "_run_with", name + "_run_ptrs"};
  llvmgen::CycleProfile prof = llvmgen::estimateCycles(
      readFile(tmp.Path + "/firmware.elf", "the estimate's firmware"), trace, co);
  e.Instructions = prof.Total.Instructions;
  e.Cycles = prof.Total.Cycles;
  e.WaitCycles = prof.Total.WaitCycles;
  e.OutsideInstructions = prof.Outside.Instructions;
  e.OutsideCycles = prof.Outside.Cycles;
  for (size_t i = 0; i < r.Calls.size() && i < prof.Calls.size(); ++i) {
    r.Calls[i].EstInstructions = prof.Calls[i].Instructions;
    r.Calls[i].EstCycles = prof.Calls[i].Cycles;
  }
  r.Cycles = e;
}

} // namespace mlcc

namespace mlcc {

std::string FirmwareCycles::text() const {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "%-40s %14s %14s %14s\n", "function", "instructions",
                "cycles", "+wait states");
  s << line;
  auto row = [&](const FunctionCycles &f) {
    std::snprintf(line, sizeof line, "%-40s %14.0f %14.0f %14.0f\n",
                  f.Function.empty() ? "total" : f.Function.substr(0, 40).c_str(),
                  f.Instructions, f.Cycles, f.WaitCycles);
    s << line;
  };
  for (const FunctionCycles &f : Functions)
    row(f);
  row(Total);
  if (!Blocks.empty()) {
    std::snprintf(line, sizeof line, "\n%-40s %14s %14s %14s\n", "block", "runs", "cycles",
                  "cycles/run");
    s << line;
    for (size_t i = 0; i < Blocks.size(); ++i) {
      std::snprintf(line, sizeof line, "%-40s %14.0f %14.0f %14.2f\n",
                    Blocks[i].Function.substr(0, 40).c_str(), BlockRuns[i], Blocks[i].Cycles,
                    Blocks[i].Cycles / std::max(1.0, BlockRuns[i]));
      s << line;
    }
  }
  std::snprintf(line, sizeof line,
                "%s: about %.0f cycles = %.4f ms at %.0f MHz (zero wait states); %.0f cycles "
                "with %d flash wait states (%s)\ntimings: %s\n",
                Target.c_str(), Total.Cycles, Total.Cycles / (ClockMHz * 1e3), ClockMHz,
                Total.Cycles + Total.WaitCycles, WaitStates, Board.c_str(), Model.c_str());
  s << line;
  return s.str();
}

FirmwareCycles estimateFirmwareCycles(const FirmwareCycleOptions &o) {
  const llvmgen::McuCore *core = llvmgen::mcuCore(o.Target);
  if (!core)
    fail(ErrorKind::Usage) << "mlcc cycles: no cycle model for --target '" << o.Target
                           << "' (cortex-m0plus, cortex-m4, cortex-m7, cortex-m33, cortex-m55)";
  if (findProgram("qemu-system-arm").empty())
    fail(ErrorKind::Usage) << "mlcc cycles: qemu-system-arm is not installed";
  std::string elf = readFile(o.Firmware, "the firmware");
  TempDir tmp;
  std::vector<std::string> cmd = {"qemu-system-arm"};
  for (const std::string &f : llvmgen::cycleTraceFlags(tmp.Path + "/trace.log"))
    cmd.push_back(f);
  for (const char *a : {"-M"})
    cmd.push_back(a);
  cmd.push_back(core->QemuMachine);
  for (const char *a : {"-nographic", "-monitor", "none", "-serial", "none",
                        "-semihosting-config", "enable=on,target=native", "-kernel"})
    cmd.push_back(a);
  cmd.push_back(std::filesystem::absolute(o.Firmware).string());
  std::string log;
  int rc = runProcess(cmd, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Usage) << "mlcc cycles: the firmware did not run to its end under QEMU "
                           << core->QemuMachine << " (exit " << rc << "): " << log.substr(0, 600);
  std::ifstream trace(tmp.Path + "/trace.log");
  llvmgen::CycleOptions co;
  co.Core = o.Target;
  co.WaitStates = o.WaitStates >= 0 ? o.WaitStates : core->WaitStates;
  co.Begin = o.From;
  co.End = o.To;
  llvmgen::CycleProfile prof = llvmgen::estimateCycles(elf, trace, co);
  FirmwareCycles r;
  r.Target = core->Name;
  r.Board = core->Board;
  r.Model = core->Accuracy;
  r.ClockMHz = o.ClockMHz > 0 ? o.ClockMHz : core->ClockMHz;
  r.WaitStates = co.WaitStates;
  r.Total = {"", prof.Total.Instructions, prof.Total.Cycles, prof.Total.WaitCycles};
  for (const auto &[fn, c] : prof.Functions)
    r.Functions.push_back({fn, c.Instructions, c.Cycles, c.WaitCycles});
  for (size_t i = 0; i < prof.Blocks.size() && (int)i < o.Blocks; ++i) {
    const llvmgen::BlockCycles &b = prof.Blocks[i];
    char range[64];
    std::snprintf(range, sizeof range, "%#llx-%#llx ", (unsigned long long)b.Begin,
                  (unsigned long long)b.End);
    r.Blocks.push_back({range + b.Function, b.Instructions, b.Cycles, 0});
    r.BlockRuns.push_back(b.Executions);
  }
  std::stable_sort(r.Functions.begin(), r.Functions.end(),
                   [](const FunctionCycles &a, const FunctionCycles &b) {
                     return a.Cycles > b.Cycles;
                   });
  return r;
}

} // namespace mlcc
