//===- Harness.cpp - Running compiled code here or under QEMU -------------===//
#include "compiler/driver/Harness.h"

#include "compiler/support/Error.h"
#include "targets/llvm/McuCycles.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

namespace mlcc {

namespace {

/// The folder of the firmware startup code and linker script (the source
/// tree's examples/cmake/firmware, found next to the mlcc executable).
std::string firmwareDir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir = exe.parent_path(); !ec && !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path())
    for (const char *sub : {"examples/cmake/firmware", "share/mlcc/firmware"})
      if (fs::exists(dir / sub / "arm-mps.ld", ec))
        return (dir / sub).string();
  return "";
}

} // namespace

bool runsInProcess(const llvmgen::TargetSpec &t) {
  llvmgen::TargetSpec host = llvmgen::resolveTarget("host", "", "");
  auto arch = [](const std::string &triple) { return triple.substr(0, triple.find('-')); };
  if (arch(t.Triple) != arch(host.Triple) || t.Triple.find("linux") == std::string::npos)
    return false;
  if (t.Cpu == host.Cpu && t.Features == host.Features)
    return true;
#if defined(__x86_64__) && defined(__GNUC__)
  if (t.Features.empty()) {
    if (t.Cpu == "x86-64")
      return true;
    if (t.Cpu == "x86-64-v2")
      return __builtin_cpu_supports("x86-64-v2");
    if (t.Cpu == "x86-64-v3")
      return __builtin_cpu_supports("x86-64-v3");
    if (t.Cpu == "x86-64-v4")
      return __builtin_cpu_supports("x86-64-v4");
  }
#endif
  return false;
}

std::string harnessBuffers(const kir::Program &p) {
  std::ostringstream s;
  int64_t align = std::max<int64_t>(p.ArenaAlign, 64);
  s << "static uint8_t arena[" << kir::alignedArenaBytes(p.ArenaSize, align)
    << "] __attribute__((aligned(" << align << ")));\n";
  for (size_t i = 0; i < p.Inputs.size(); ++i)
    s << "static uint8_t in" << i << "[" << p.Inputs[i].bytes() + 1
      << "] __attribute__((aligned(64)));\n";
  for (size_t i = 0; i < p.Outputs.size(); ++i)
    s << "static uint8_t out" << i << "[" << p.Outputs[i].bytes() + 1
      << "] __attribute__((aligned(64)));\n";
  s << "static void *ins[] = {";
  for (size_t i = 0; i < p.Inputs.size(); ++i)
    s << "in" << i << ", ";
  s << "0};\nstatic void *outs[] = {";
  for (size_t i = 0; i < p.Outputs.size(); ++i)
    s << "out" << i << ", ";
  s << "0};\nstatic const int64_t in_bytes[] = {";
  for (auto &in : p.Inputs)
    s << in.bytes() << ", ";
  s << "0};\nstatic const int64_t out_bytes[] = {";
  for (auto &out : p.Outputs)
    s << out.bytes() << ", ";
  s << "0};\n";
  return s.str();
}

std::vector<std::vector<uint8_t>> harnessInputs(const kir::Program &p) {
  std::mt19937 rng(12345);
  std::vector<std::vector<uint8_t>> ins;
  for (const kir::IoTensor &t : p.Inputs) {
    std::vector<uint8_t> b((size_t)std::max<int64_t>(t.bytes(), 1), 0);
    int64_t n = numElements(t.Dims);
    if (t.Type == DType::F32) {
      std::uniform_real_distribution<float> d(-1, 1);
      for (int64_t i = 0; i < n; ++i) {
        float v = d(rng);
        std::memcpy(b.data() + 4 * i, &v, 4);
      }
    } else if (t.Type == DType::U8 || t.Type == DType::I8) {
      for (auto &x : b)
        x = (uint8_t)(rng() & 0xFF);
    }
    ins.push_back(std::move(b));
  }
  return ins;
}

std::string harnessReadInputs(const kir::Program &p) {
  std::ostringstream s;
  s << "  FILE *f = fopen(\"inputs.bin\", \"rb\");\n  if (!f)\n    return 90;\n"
       "  for (size_t i = 0; i < " << p.Inputs.size() << "; ++i)\n"
       "    if (fread(ins[i], 1, (size_t)in_bytes[i], f) != (size_t)in_bytes[i])\n"
       "      return 91;\n  fclose(f);\n";
  return s.str();
}

void crossCommands(const llvmgen::TargetSpec &t, const std::string &who,
                   std::vector<std::string> &cc, std::vector<std::string> &run) {
  if (!cc.empty() && !run.empty())
    return;
  std::vector<std::string> dcc, drun;
  const std::string &tr = t.Triple;
  if (tr.rfind("aarch64", 0) == 0 && tr.find("linux") != std::string::npos) {
    dcc = {"aarch64-linux-gnu-gcc", "-O1"};
    drun = {"qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"};
  } else if (tr.rfind("riscv64", 0) == 0 && tr.find("linux") != std::string::npos) {
    dcc = {"riscv64-linux-gnu-gcc", "-O1"};
    drun = {"qemu-riscv64", "-cpu", "rv64,v=true", "-L", "/usr/riscv64-linux-gnu"};
  } else if (t.Name == "cortex-m4" || t.Name == "cortex-m7" || t.Name == "cortex-m0plus" ||
             t.Name == "cortex-m33" || t.Name == "cortex-m55") {
    std::string fw = firmwareDir();
    if (fw.empty())
      fail(ErrorKind::Usage) << who << " --target " << t.Name
                             << ": the firmware startup code (examples/cmake/firmware, or "
                                "share/mlcc/firmware where mlcc is installed) is not next to mlcc"
                             << (who == "mlcc check" ? "; give --cc and --run" : "");
    // The board QEMU runs the code on is the core's (llvmgen::McuCore): the
    // MPS2 boards with 4 MB of code and data memory (arm-mps.ld), the MPS3
    // AN547 with examples/cmake/firmware/mps3-an547.ld.
    const std::string &n = t.Name;
    const bool mps3 = llvmgen::mcuCore(n)->QemuMachine == "mps3-an547";
    dcc = {"arm-none-eabi-gcc", "-O1", "-mcpu=" + n, "-mthumb"};
    if (n == "cortex-m0plus")
      dcc.push_back("-mfloat-abi=soft");
    else
      dcc.push_back("-mfloat-abi=hard");
    if (n == "cortex-m4")
      dcc.push_back("-mfpu=fpv4-sp-d16");
    else if (n == "cortex-m7")
      dcc.push_back("-mfpu=fpv5-d16");
    for (const std::string &a :
         std::vector<std::string>{"--specs=rdimon.specs", fw + "/cortex-m-startup.c", "-T",
                                  fw + (mps3 ? "/mps3-an547.ld" : "/arm-mps.ld"),
                                  "-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments"})
      dcc.push_back(a);
    drun = {"qemu-system-arm", "-M", llvmgen::mcuCore(n)->QemuMachine, "-nographic",
            "-monitor", "none", "-serial", "none", "-semihosting-config",
            "enable=on,target=native", "-kernel"};
  } else if (cc.empty() || run.empty()) {
    fail(ErrorKind::Usage) << who << " --target " << t.Name
                           << (t.Cpu.empty() ? "" : " (CPU " + t.Cpu + ")")
                           << ": no built-in way to run this code here (it may use "
                              "instructions this machine lacks); give --cc 'COMPILER FLAGS' "
                              "(links a C program) and --run 'COMMAND' (runs it, e.g. under QEMU)";
  }
  if (cc.empty())
    cc = dcc;
  if (run.empty())
    run = drun;
}

} // namespace mlcc
