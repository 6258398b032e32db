#include "targets/llvm/Targets.h"

#include "compiler/support/Error.h"
#include "targets/llvm/LLVMEmitter.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Pass.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/Support/BLAKE3.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>
#include <cstdlib>
#include <mutex>
#include <map>
#include <set>

namespace mlcc::llvmgen {

namespace {

void initLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

std::string hostFeatures() {
  std::vector<std::string> on;
  for (auto &f : llvm::sys::getHostCPUFeatures())
    if (f.second)
      on.push_back("+" + f.first().str());
  std::sort(on.begin(), on.end());
  std::string s;
  for (auto &f : on)
    s += (s.empty() ? "" : ",") + f;
  return s;
}

TargetSpec preset(std::string name, std::string triple, std::string cpu,
                  std::string features, std::string abi, bool hardFloat, bool pic,
                  std::string description) {
  TargetSpec t;
  t.Name = std::move(name);
  t.Triple = llvm::Triple::normalize(triple);
  t.Cpu = std::move(cpu);
  t.Features = std::move(features);
  t.Abi = std::move(abi);
  t.HardFloat = hardFloat;
  t.Pic = pic;
  t.Description = std::move(description);
  return t;
}

} // namespace

std::vector<TargetSpec> targetPresets() {
  return {
      preset("host", llvm::sys::getDefaultTargetTriple(), "", "", "", false, true,
             "this machine: its CPU and all its features"),
      preset("x86_64", "x86_64-unknown-linux-gnu", "x86-64", "", "", false, true,
             "portable x86-64 Linux (baseline SSE2)"),
      preset("x86_64-v3", "x86_64-unknown-linux-gnu", "x86-64-v3", "", "", false, true,
             "x86-64 Linux with AVX2/FMA (Haswell and newer)"),
      preset("aarch64-linux", "aarch64-unknown-linux-gnu", "cortex-a72", "+neon", "",
             false, true, "64-bit Arm Linux, Cortex-A72 class with NEON"),
      // Boards and servers by the name users know them (64-bit Linux):
      // the same triple, with the CPU that picks the int8 form (smlal,
      // sdot, usdot) and the tiles.
      preset("rpi4", "aarch64-unknown-linux-gnu", "cortex-a72", "+neon", "", false, true,
             "Raspberry Pi 4 (Cortex-A72): int8 on widening multiply-adds (smlal)"),
      preset("rpi5", "aarch64-unknown-linux-gnu", "cortex-a76", "+neon", "", false, true,
             "Raspberry Pi 5 (Cortex-A76): int8 on dot products (sdot)"),
      preset("jetson-orin", "aarch64-unknown-linux-gnu", "cortex-a78ae", "+neon", "", false,
             true, "NVIDIA Jetson Orin's CPU (Cortex-A78AE): int8 on sdot"),
      preset("graviton2", "aarch64-unknown-linux-gnu", "neoverse-n1", "+neon", "", false, true,
             "AWS Graviton2 (Neoverse N1): int8 on sdot"),
      preset("graviton3", "aarch64-unknown-linux-gnu", "neoverse-v1", "+neon", "", false, true,
             "AWS Graviton3 (Neoverse V1): int8 on i8mm (usdot), NEON kernels"),
      preset("neoverse-n2", "aarch64-unknown-linux-gnu", "neoverse-n2", "+neon", "", false,
             true, "Arm Neoverse N2 servers: int8 on i8mm (usdot)"),
      preset("cortex-m0plus", "thumbv6m-none-eabi", "cortex-m0plus", "", "", false, false,
             "Arm Cortex-M0+ bare metal, no FPU (soft float)"),
      // -slowfpvfmx: fused multiply-adds (VFMA) for the contracted float
      // arithmetic of the kernels, one instruction where LLVM's default
      // for these cores is VMUL + VADD (fewer instructions and code bytes;
      // on the M4 a VFMA issues in 3 cycles against 1 + 1).
      preset("cortex-m4", "thumbv7em-none-eabihf", "cortex-m4", "-slowfpvfmx", "", true,
             false, "Arm Cortex-M4F bare metal, FPv4-SP-D16 (VFMA), hard-float ABI"),
      preset("cortex-m7", "thumbv7em-none-eabihf", "cortex-m7", "-slowfpvfmx", "", true,
             false, "Arm Cortex-M7 bare metal, FPv5-D16 (VFMA), hard-float ABI"),
      preset("cortex-m33", "thumbv8m.main-none-eabihf", "cortex-m33", "-slowfpvfmx", "", true,
             false, "Arm Cortex-M33 bare metal (Armv8-M Mainline, DSP, FPv5-SP-D16), "
             "hard-float ABI: STM32U5-class"),
      preset("cortex-m55", "thumbv8.1m.main-none-eabihf", "cortex-m55", "", "", true, false,
             "Arm Cortex-M55 bare metal, Helium (MVE) with float, hard-float ABI"),
      preset("riscv64-linux", "riscv64-unknown-linux-gnu", "generic-rv64",
             "+m,+a,+f,+d,+c", "lp64d", false, true, "RISC-V 64 Linux, rv64gc"),
      preset("riscv64-linux-v", "riscv64-unknown-linux-gnu", "generic-rv64",
             "+m,+a,+f,+d,+c,+v", "lp64d", false, true,
             "RISC-V 64 Linux, rv64gcv (vector extension)"),
      preset("riscv32", "riscv32-unknown-none-elf", "generic-rv32", "+m,+a,+c", "ilp32",
             false, false, "RISC-V 32 bare metal, rv32imac (soft float)"),
      preset("riscv32f", "riscv32-unknown-none-elf", "generic-rv32", "+m,+a,+f,+c",
             "ilp32f", false, false, "RISC-V 32 bare metal, rv32imafc (hard single float)"),
  };
}

TargetSpec resolveTarget(const std::string &target, const std::string &cpu,
                         const std::string &features) {
  initLlvm();
  TargetSpec t;
  bool found = false;
  for (auto &p : targetPresets())
    if (p.Name == target) {
      t = p;
      found = true;
    }
  if (!found) {
    if (target.find('-') == std::string::npos)
      fail(ErrorKind::Usage) << "unknown target '" << target
                             << "': use a preset (see --list-targets) or an LLVM triple";
    t.Name = target;
    t.Triple = llvm::Triple::normalize(target);
    llvm::Triple tr(t.Triple);
    t.HardFloat = tr.getEnvironment() == llvm::Triple::EABIHF ||
                  tr.getEnvironment() == llvm::Triple::GNUEABIHF ||
                  tr.getEnvironment() == llvm::Triple::MuslEABIHF;
    t.Pic = tr.getOS() != llvm::Triple::UnknownOS;
    t.Cpu = "generic";
  }
  if (t.Name == "host") {
    // MLCC_HOST_CPU names another x86 CPU for "host" (its LLVM name, e.g.
    // x86-64-v3 for an AVX2-only one): the tests run as on that CPU, on any
    // machine that can run its code (an AVX2 build on an AVX-512 machine).
    const char *asCpu = std::getenv("MLCC_HOST_CPU");
    if (asCpu && *asCpu) {
      t.Cpu = asCpu;
      t.Features.clear();
    } else {
      t.Cpu = llvm::sys::getHostCPUName().str();
      t.Features = hostFeatures();
    }
  }
  if (!cpu.empty())
    t.Cpu = cpu;
  if (!features.empty())
    t.Features = t.Features.empty() ? features : t.Features + "," + features;
  llvm::Triple tr(t.Triple);
  if (tr.isRISCV() && t.Abi.empty()) {
    bool d = t.Features.find("+d") != std::string::npos;
    bool f = t.Features.find("+f") != std::string::npos;
    t.Abi = std::string(tr.isArch64Bit() ? "lp64" : "ilp32") + (d ? "d" : f ? "f" : "");
  }
  std::string err;
  const llvm::Target *target_ = llvm::TargetRegistry::lookupTarget(t.Triple, err);
  if (!target_)
    fail(ErrorKind::Usage) << "target '" << target << "' (" << t.Triple
                           << ") is not available: " << err;
  // Check the CPU name with a generic subtarget, before LLVM sees it (it
  // would only print a warning and ignore an unknown name).
  if (!t.Cpu.empty() && t.Cpu != "generic") {
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target_->createMCSubtargetInfo(t.Triple, "", ""));
    if (sti && !sti->isCPUStringValid(t.Cpu))
      fail(ErrorKind::Usage) << "unknown CPU '" << t.Cpu << "' for " << t.Triple;
  }
  return t;
}

namespace {

std::unique_ptr<llvm::TargetMachine> makeMachine(const TargetSpec &t,
                                                 const CodegenOptions &o) {
  initLlvm();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.Triple, err);
  if (!target)
    fail(ErrorKind::Usage) << "target " << t.Triple << " is not available: " << err;
  llvm::TargetOptions opts;
  if (llvm::Triple(t.Triple).isARM() || llvm::Triple(t.Triple).isThumb())
    opts.FloatABIType = t.HardFloat ? llvm::FloatABI::Hard : llvm::FloatABI::Soft;
  opts.MCOptions.ABIName = t.Abi;
  opts.FunctionSections = false;
  auto level = o.OptLevel <= 0   ? llvm::CodeGenOptLevel::None
               : o.OptLevel == 1 ? llvm::CodeGenOptLevel::Less
               : o.OptLevel == 2 ? llvm::CodeGenOptLevel::Default
                                 : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.Triple, t.Cpu, t.Features, opts,
      t.Pic ? llvm::Reloc::PIC_ : llvm::Reloc::Static, std::nullopt, level));
  if (!tm)
    fail(ErrorKind::Usage) << "cannot create a code generator for " << t.Triple
                           << " (cpu '" << t.Cpu << "')";
  return tm;
}

} // namespace

TargetSpec cudaTarget(const std::vector<std::string> &archs) {
  TargetSpec t;
  t.Name = "cuda";
  t.Triple = "nvptx64-nvidia-cuda";
  for (const std::string &a : archs)
    t.Cpu += (t.Cpu.empty() ? "" : ",") + a;
  return t;
}

namespace {

/// The running machine's L1 data and L2 caches (bytes, cpu0's, from
/// Linux's sysfs); each 0 where unknown or outside the sizes the cost
/// model is made for (L1 16 KiB to 256 KiB, L2 128 KiB to 8 MiB).
std::pair<int64_t, int64_t> hostCaches() {
  int64_t l1 = 0, l2 = 0;
  auto read = [](const std::string &path) {
    std::ifstream f(path);
    std::string v;
    std::getline(f, v);
    return v;
  };
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read(dir + "level"), type = read(dir + "type"),
                      size = read(dir + "size");
    if (size.empty() || !std::isdigit((unsigned char)size[0]))
      continue;
    int64_t bytes = std::atoll(size.c_str());
    const char unit = size.back();
    bytes *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
    if (level == "1" && type == "Data")
      l1 = bytes;
    else if (level == "2" && (type == "Unified" || type == "Data"))
      l2 = bytes;
  }
  if (l1 < 16 * 1024 || l1 > 256 * 1024)
    l1 = 0;
  if (l2 < 128 * 1024 || l2 > 8 * 1024 * 1024)
    l2 = 0;
  return {l1, l2};
}

} // namespace

TargetDesc describeTarget(const TargetSpec &t) {
  if (t.Name == "cuda") {
    TargetDesc s = asGpu();
    s.Name = t.Name;
    s.Triple = t.Triple;
    s.Cpu = t.Cpu;
    return s;
  }
  std::unique_ptr<llvm::TargetMachine> tm = makeMachine(t, CodegenOptions{});
  const llvm::MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  auto has = [&](const char *f) { return sti->checkFeatures(std::string("+") + f); };
  llvm::Triple triple(t.Triple);
  TargetDesc s;
  s.Name = t.Name;
  s.Triple = t.Triple;
  s.Cpu = t.Cpu;
  s.Features = t.Features;
  if (triple.isX86()) {
    s.VectorRegisters = triple.isArch64Bit() ? 16 : 8;
    s.GeneralRegisters = triple.isArch64Bit() ? 16 : 8;
    if (has("avx512f")) {
      s.VectorBytes = 64;
      s.VectorRegisters = 32;
    } else if (has("avx")) {
      s.VectorBytes = 32;
    } else if (has("sse2")) {
      s.VectorBytes = 16;
    }
    s.Fma = has("fma");
    // pmaddwd as the kernels can use it: on vectors of the width they use
    // (256-bit integer vectors need AVX2, 512-bit ones AVX512BW).
    if ((s.VectorBytes == 16 && has("sse2")) || (s.VectorBytes == 32 && has("avx2")) ||
        (s.VectorBytes == 64 && has("avx512bw")))
      s.IntMacs.push_back(MacForm::X86Madd16);
    if (has("ssse3"))
      s.IntMacs.push_back(MacForm::X86MaddU8S8);
    // VNNI as the kernels can use it: on vectors of the width they use.
    if ((s.VectorBytes == 64 && has("avx512vnni")) ||
        (s.VectorBytes == 32 && (has("avxvnni") || (has("avx512vnni") && has("avx512vl")))))
      s.IntMacs.push_back(MacForm::X86Vnni);
  } else if (triple.isAArch64()) {
    s.VectorBytes = has("neon") ? 16 : 0;
    s.VectorRegisters = 32;
    s.GeneralRegisters = 31;
    s.Fma = true;
    if (has("neon"))
      s.IntMacs.push_back(MacForm::ArmLongMac);
    if (has("dotprod"))
      s.IntMacs.push_back(MacForm::ArmDot);
    if (has("i8mm"))
      s.IntMacs.push_back(MacForm::ArmMatMul);
    s.HalfArithmetic = has("neon") && has("fullfp16");
  } else if (triple.isARM() || triple.isThumb()) {
    // Thumb-1 (ARMv6-M) instructions reach r0-r7 only.
    s.GeneralRegisters = has("thumb2") || !triple.isThumb() ? 13 : 8;
    if (has("mve.fp")) { // Helium: 8 Q registers
      s.VectorBytes = 16;
      s.VectorRegisters = 8;
    } else if (has("neon")) {
      s.VectorBytes = 16;
      s.VectorRegisters = 16;
    }
    s.Fma = has("vfp4d16sp") || has("fp-armv8d16sp"); // the single-precision forms
    s.FloatUnit = has("vfp2sp") || has("fp-armv8") || has("mve.fp") || has("neon");
    s.DoubleUnit = s.FloatUnit && has("fp64");
    // VMAXNM/VMINNM (Armv8 FP), or NEON's vector forms.
    s.FloatMinMax = has("fp-armv8d16sp") || has("neon") || has("mve.fp");
    // (No ArmLongMac on 32-bit NEON: the kernels' widening multiply-adds
    // and pair sums are AArch64's; its int8 runs the int32 tiles as LLVM
    // selects them.)
    if (has("dsp"))
      s.IntMacs.push_back(MacForm::ArmSmlad);
    if (has("mve"))
      s.IntMacs.push_back(MacForm::HeliumMac);
  } else if (triple.isRISCV()) {
    s.GeneralRegisters = has("e") ? 15 : 31;
    s.Fma = has("f");
    s.FloatUnit = has("f");
    s.DoubleUnit = has("d");
    // RVV 1.0: 32 vector registers of VLEN >= 128 bits. Kernels use
    // 128-bit vectors, which run at any VLEN (LMUL 1 at 128, a part of a
    // register beyond).
    if (has("v")) {
      s.VectorBytes = 16;
      s.VectorRegisters = 32;
      s.IntMacs.push_back(MacForm::RvvWidening);
    }
  }
  if (s.VectorBytes == 0)
    s.VectorRegisters = 0;
  // Application processors have a private L2 of 512 KiB or more (x86-64,
  // Cortex-A, RV64 with vectors); microcontrollers have no cache to plan.
  // They have an L1 data cache of 32 KiB or more, 64-byte lines, and
  // threads whose stacks take 256 KiB of kernel scratch; a microcontroller
  // gives a kernel 8 KiB of its stack.
  if (triple.isX86() || triple.isAArch64() || (triple.isRISCV64() && has("v"))) {
    s.L2Bytes = 512 * 1024;
    s.L1Bytes = 32 * 1024;
    s.CacheLineBytes = 64;
    s.StackBytes = 256 * 1024;
    // The host target plans for this machine's caches where Linux names
    // them (a Zen 4/5 core: 32/48 KiB and 1 MiB; Sapphire Rapids 48 KiB
    // and 2 MiB): a product whose packed panel fits the real L2 then runs
    // without cache blocks (the Whisper-like encoder's 1536 -> 384 layer:
    // 34.6 -> 28.2 ms on Zen 5 with the 1 MiB it has).
    if (t.Name == "host") {
      auto [l1, l2] = hostCaches();
      if (l1)
        s.L1Bytes = l1;
      if (l2)
        s.L2Bytes = l2;
    }
  } else {
    s.StackBytes = 8 * 1024;
  }
  return s;
}

namespace {

/// Counts the functions the code generator has finished (it runs after
/// the AsmPrinter of each function) for the progress line.
class CountFunctions : public llvm::FunctionPass {
public:
  static char ID;
  explicit CountFunctions(std::function<void()> onFunction)
      : llvm::FunctionPass(ID), OnFunction(std::move(onFunction)) {}
  bool runOnFunction(llvm::Function &) override {
    OnFunction();
    return false;
  }
  void getAnalysisUsage(llvm::AnalysisUsage &au) const override { au.setPreservesAll(); }
  llvm::StringRef getPassName() const override { return "mlcc progress"; }

private:
  std::function<void()> OnFunction;
};
char CountFunctions::ID = 0;

void optimize(llvm::Module &m, llvm::TargetMachine &tm, const CodegenOptions &o) {
  if (o.OptLevel <= 0)
    return;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = o.OptLevel >= 2;
  // No SLP vectorization: the kernel IR's schedules make the vectors, and
  // LLVM 19's SLP vectorizer miscompiles some of the scalar code left (the
  // clipped windows of ONNX's test_averagepool_2d_precomputed_pads, vectorized
  // into gathers for Intel AVX-512 CPUs, summed the wrong elements).
  pto.SLPVectorization = false;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = o.SizeOpt          ? llvm::OptimizationLevel::Os
                                  : o.OptLevel == 1  ? llvm::OptimizationLevel::O1
                                  : o.OptLevel == 2  ? llvm::OptimizationLevel::O2
                                                     : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

/// CodegenOptions::BlockCounters: a counter per basic block of every
/// defined function, incremented at the block's top. Each counter is its
/// own global, SYMBOL_I, so that every access to it names it in the
/// assembly (a shared array would be reached through one base register);
/// SYMBOL is the table of their addresses and SYMBOL_n their number.
void countBlocks(llvm::Module &m, const std::string &symbol) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *i64 = llvm::Type::getInt64Ty(ctx);
  std::vector<llvm::Constant *> counters;
  std::vector<llvm::BasicBlock *> blocks;
  for (auto &f : m)
    if (!f.isDeclaration())
      for (auto &bb : f)
        blocks.push_back(&bb);
  for (llvm::BasicBlock *bb : blocks) {
    auto *c = new llvm::GlobalVariable(m, i64, false, llvm::GlobalValue::ExternalLinkage,
                                       llvm::ConstantInt::get(i64, 0),
                                       symbol + "_" + std::to_string(counters.size()));
    c->setVisibility(llvm::GlobalValue::HiddenVisibility);
    c->setDSOLocal(true);
    counters.push_back(c);
    llvm::IRBuilder<> b(bb, bb->getFirstInsertionPt());
    b.CreateStore(b.CreateAdd(b.CreateLoad(i64, c), llvm::ConstantInt::get(i64, 1)), c);
  }
  auto *ptrs = llvm::ArrayType::get(llvm::PointerType::get(ctx, 0), counters.size());
  new llvm::GlobalVariable(m, ptrs, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantArray::get(ptrs, counters), symbol);
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx);
  new llvm::GlobalVariable(m, i32, true, llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantInt::get(i32, counters.size()), symbol + "_n");
}

/// Writes `m` as `kind` for `tm`.
std::string emitFile(llvm::Module &m, llvm::TargetMachine &tm, const TargetSpec &t,
                     OutputKind kind, const ProgressFn &onProgress) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == OutputKind::LlvmIr) {
    m.print(os, nullptr);
    os.flush();
    return out;
  }
  // About the size of the object: its constants, and room for code (the
  // buffer does not grow, copying, as the object writer fills it).
  llvm::SmallVector<char, 0> buffer;
  size_t constantBytes = 0;
  for (const llvm::GlobalVariable &g : m.globals())
    if (g.hasInitializer())
      constantBytes += (size_t)m.getDataLayout().getTypeAllocSize(g.getValueType());
  buffer.reserve(constantBytes + constantBytes / 16 + (64 << 10));
  llvm::raw_svector_ostream bos(buffer);
  llvm::legacy::PassManager pm;
  auto fileType = kind == OutputKind::Object ? llvm::CodeGenFileType::ObjectFile
                                             : llvm::CodeGenFileType::AssemblyFile;
  if (tm.addPassesToEmitFile(pm, bos, nullptr, fileType))
    fail(ErrorKind::Internal) << "internal error: " << t.Triple
                              << " cannot emit this kind of file";
  if (onProgress) {
    size_t total = 0, done = 0;
    for (auto &f : m)
      total += !f.isDeclaration();
    onProgress("code generation", 0, total);
    pm.add(new CountFunctions([&] { onProgress("code generation", ++done, total); }));
  }
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

} // namespace

namespace {

/// The instructions the emitter calls directly, from the machine's features.
EmitFeatures emitFeatures(const llvm::TargetMachine &tm, const TargetSpec &t) {
  const llvm::MCSubtargetInfo *sti = tm.getMCSubtargetInfo();
  llvm::Triple triple(t.Triple);
  EmitFeatures features;
  if (triple.isX86()) {
    features.Vnni512 = sti->checkFeatures("+avx512vnni");
    features.Vnni256 = (features.Vnni512 && sti->checkFeatures("+avx512vl")) ||
                       sti->checkFeatures("+avxvnni");
    features.Madd128 = sti->checkFeatures("+sse2");
    features.Madd256 = sti->checkFeatures("+avx2");
    features.Madd512 = sti->checkFeatures("+avx512bw");
    features.HalfConversions = sti->checkFeatures("+f16c");
    features.FenceHalfWidening =
        features.HalfConversions && !sti->checkFeatures("+avx512fp16");
  }
  if (triple.isAArch64()) {
    features.ArmDot = sti->checkFeatures("+dotprod");
    features.ArmI8mm = sti->checkFeatures("+i8mm");
    features.ArmMull = sti->checkFeatures("+neon");
    features.FloatMinMax = sti->checkFeatures("+fp-armv8");
    features.HalfConversions = sti->checkFeatures("+fp-armv8");
  }
  if (triple.isARM() || triple.isThumb()) {
    features.Smlad = sti->checkFeatures("+dsp");
    features.Helium = sti->checkFeatures("+mve");
    // vcvtb.f32.f16 / vcvtb.f16.f32 (VFPv4 and later: Cortex-M4F, M7, M55).
    features.HalfConversions = sti->checkFeatures("+fp16");
  }
  return features;
}

/// The target's attributes on every function of `m` and its ABI flag.
void targetAttributes(llvm::Module &m, const TargetSpec &t, const CodegenOptions &o) {
  if (!t.Abi.empty())
    m.addModuleFlag(llvm::Module::Error, "target-abi",
                    llvm::MDString::get(m.getContext(), t.Abi));
  for (auto &f : m) {
    if (f.isDeclaration())
      continue;
    if (!t.Cpu.empty())
      f.addFnAttr("target-cpu", t.Cpu);
    if (!t.Features.empty())
      f.addFnAttr("target-features", t.Features);
    if (o.SizeOpt)
      f.addFnAttr(llvm::Attribute::OptimizeForSize);
  }
}

/// Optimizes `m` and applies what comes after the vectorizers.
void optimizeFor(llvm::Module &m, llvm::TargetMachine &tm, const TargetSpec &t,
                 const CodegenOptions &o) {
  optimize(m, tm, o);
  // After the loop vectorizer, which may have made vector conversions.
  if (llvm::Triple(t.Triple).isRISCV() && tm.getMCSubtargetInfo()->checkFeatures("+zve32f"))
    avoidVectorRtz(m);
}

} // namespace

std::string compileProgram(const kir::Program &p, const TargetSpec &t,
                           const CodegenOptions &o, OutputKind kind) {
  std::unique_ptr<llvm::TargetMachine> tm = makeMachine(t, o);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m =
      emitModule(p, ctx, t.Triple, tm->createDataLayout(), emitFeatures(*tm, t));
  targetAttributes(*m, t, o);
  if (o.OnProgress)
    o.OnProgress("optimizing", 0, 0);
  optimizeFor(*m, *tm, t, o);
  if (!o.BlockCounters.empty())
    countBlocks(*m, o.BlockCounters);
  return emitFile(*m, *tm, t, kind, o.OnProgress);
}

namespace {

/// The name a kernel's function placeholder has until its hash names it.
constexpr const char *kUnnamedKernel = "mlcc_kernel";

/// "conv_relu" of "k12_conv_relu"; other names as they are, with
/// characters outside [A-Za-z0-9_] as '_'.
std::string kernelStem(const std::string &name) {
  size_t i = 0;
  if (name.size() > 2 && name[0] == 'k' && std::isdigit((unsigned char)name[1])) {
    i = 1;
    while (i < name.size() && std::isdigit((unsigned char)name[i]))
      ++i;
    i = i < name.size() && name[i] == '_' ? i + 1 : 0;
  }
  std::string stem = name.substr(i);
  for (char &c : stem)
    if (!std::isalnum((unsigned char)c) && c != '_')
      c = '_';
  return stem.substr(0, 48);
}

std::string hex(const uint8_t *b, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += digits[b[i] >> 4], s += digits[b[i] & 15];
  return s;
}

/// One kernel's module, from its emission to its object.
struct KernelPart {
  std::unique_ptr<llvm::LLVMContext> Ctx;
  std::unique_ptr<llvm::Module> M;
  std::string Key;    ///< 32 hex digits
  std::string Symbol;
  std::string Object;
  bool Hit = false;
};

/// Everything a kernel's code depends on besides its module: the machine
/// and the code generator.
std::string machineKey(const TargetSpec &t, const CodegenOptions &o) {
  std::ostringstream s;
  s << "mlcc kernel object 1\nLLVM " << LLVM_VERSION_STRING << "\ntriple " << t.Triple
    << "\ncpu " << t.Cpu << "\nfeatures " << t.Features << "\nabi " << t.Abi << "\nhard-float "
    << t.HardFloat << "\npic " << t.Pic << "\nopt " << o.OptLevel << "\nsize " << o.SizeOpt
    << "\n";
  return s.str();
}

/// Emits kernel `k`'s module and names it by its hash.
void emitPart(KernelPart &part, const kir::Kernel &k, const TargetSpec &t,
              const llvm::DataLayout &layout, const EmitFeatures &features,
              const std::string &machine) {
  part.Ctx = std::make_unique<llvm::LLVMContext>();
  part.M = emitKernelModule(k, kUnnamedKernel, *part.Ctx, t.Triple, layout, features);
  std::string text = machine;
  llvm::raw_string_ostream os(text);
  part.M->print(os, nullptr);
  os.flush();
  auto h = llvm::BLAKE3::hash<16>(
      llvm::ArrayRef<uint8_t>((const uint8_t *)text.data(), text.size()));
  part.Key = hex(h.data(), h.size());
  part.Symbol = "mlcc_" + kernelStem(k.Name) + "_" + part.Key.substr(0, 16);
  // The kernel's function and what was named after it (its tasks).
  const std::string prefix = kUnnamedKernel;
  for (llvm::Function &f : *part.M)
    if (f.getName().starts_with(prefix))
      f.setName(part.Symbol + f.getName().substr(prefix.size()).str());
  part.M->setModuleIdentifier(part.Symbol);
  part.M->setSourceFileName(part.Symbol);
  if (llvm::Triple(t.Triple).supportsCOMDAT())
    part.M->getFunction(part.Symbol)->setComdat(part.M->getOrInsertComdat(part.Symbol));
}

/// Whether `bytes` read as an object of `t`'s architecture that defines
/// `symbol` (a cache entry someone damaged is a miss).
bool isObjectFor(const std::string &bytes, const TargetSpec &t, const std::string &symbol) {
  auto obj = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, symbol));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return false;
  }
  if ((*obj)->getArch() != llvm::Triple(t.Triple).getArch())
    return false;
  for (const llvm::object::SymbolRef &sym : (*obj)->symbols()) {
    auto name = sym.getName();
    auto flags = sym.getFlags();
    bool ok = name && flags && *name == symbol &&
              !(*flags & llvm::object::SymbolRef::SF_Undefined);
    if (!name)
      llvm::consumeError(name.takeError());
    if (!flags)
      llvm::consumeError(flags.takeError());
    if (ok)
      return true;
  }
  return false;
}

/// Runs `work(i, thread)` for i < n on up to `jobs` threads (thread <
/// jobs); the first error is thrown here once all have stopped.
void parallelFor(size_t n, unsigned jobs, const std::function<void(size_t, unsigned)> &work) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex errorMutex;
  auto worker = [&](unsigned thread) {
    for (size_t i; (i = next++) < n;) {
      try {
        work(i, thread);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (!error)
          error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs && j < n; ++j)
    threads.emplace_back(worker, j);
  worker(0);
  for (std::thread &th : threads)
    th.join();
  if (error)
    std::rethrow_exception(error);
}

} // namespace

ProgramObjects compileProgramObjects(const kir::Program &p, const TargetSpec &t,
                                     const CodegenOptions &o, ObjectCache *cache,
                                     unsigned jobs) {
  if (jobs == 0)
    jobs = std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<llvm::TargetMachine> tm0 = makeMachine(t, o);
  const llvm::DataLayout layout = tm0->createDataLayout();
  const EmitFeatures features = emitFeatures(*tm0, t);
  const std::string machine = machineKey(t, o);

  // Each kernel's module and name, then its object: from the cache, or
  // compiled (once per distinct symbol). The program's own module, which
  // names the kernels, is compiled meanwhile as one more piece of work.
  // On little-endian ELF targets the weights are an object of their own,
  // written directly (dataObject); the program's module declares them.
  const bool weightsApart = llvm::Triple(t.Triple).isOSBinFormatELF() &&
                            layout.isLittleEndian() && !p.Constants.empty();
  std::vector<std::string> constantSymbols;
  for (size_t i = 0; weightsApart && i < p.Constants.size(); ++i)
    constantSymbols.push_back(p.Name + "_mlcc_w" + std::to_string(i));
  std::vector<KernelPart> parts(p.Kernels.size());
  parallelFor(parts.size(), jobs, [&](size_t i, unsigned) {
    emitPart(parts[i], p.Kernels[i], t, layout, features, machine);
    if (cache && cache->get(parts[i].Key, parts[i].Object))
      parts[i].Hit = isObjectFor(parts[i].Object, t, parts[i].Symbol);
  });
  ProgramObjects out;
  std::vector<size_t> todo; // the parts to compile, one per symbol
  std::map<std::string, size_t> firstOf;
  for (size_t i = 0; i < parts.size(); ++i) {
    out.KernelSymbols.push_back(parts[i].Symbol);
    auto [it, fresh] = firstOf.emplace(parts[i].Symbol, i);
    if (fresh && !parts[i].Hit)
      todo.push_back(i);
  }
  std::string mainObject;
  std::mutex progressMutex;
  size_t done = 0, total = todo.size() + 1;
  auto progress = [&] {
    if (!o.OnProgress)
      return;
    std::lock_guard<std::mutex> lock(progressMutex);
    o.OnProgress("code generation", done++, total);
  };
  progress();
  // One machine per thread (a machine makes its subtarget once; the
  // modules it compiles in turn reuse it).
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines(jobs);
  parallelFor(todo.size() + 1, jobs, [&](size_t w, unsigned thread) {
    if (!machines[thread])
      machines[thread] = makeMachine(t, o);
    llvm::TargetMachine *tm = machines[thread].get();
    if (w == 0) { // the largest piece first
      llvm::LLVMContext ctx;
      std::unique_ptr<llvm::Module> m =
          emitModule(p, ctx, t.Triple, layout, features, &out.KernelSymbols,
                     weightsApart ? &constantSymbols : nullptr);
      targetAttributes(*m, t, o);
      optimizeFor(*m, *tm, t, o);
      mainObject = emitFile(*m, *tm, t, OutputKind::Object, nullptr);
    } else {
      KernelPart &part = parts[todo[w - 1]];
      targetAttributes(*part.M, t, o);
      optimizeFor(*part.M, *tm, t, o);
      part.Object = emitFile(*part.M, *tm, t, OutputKind::Object, nullptr);
      if (cache)
        cache->put(part.Key, part.Object);
    }
    progress();
  });

  out.Members.push_back({p.Name + ".o", mainObject});
  out.Stats = inspectObject(mainObject);
  std::set<std::string> defined(out.KernelSymbols.begin(), out.KernelSymbols.end());
  defined.insert(constantSymbols.begin(), constantSymbols.end());
  std::set<std::string> undefined;
  for (const std::string &u : out.Stats.Undefined)
    if (!defined.count(u))
      undefined.insert(u);
  std::map<std::string, int64_t> functions(out.Stats.Functions.begin(),
                                           out.Stats.Functions.end());
  for (auto &[symbol, i] : firstOf) {
    KernelPart &part = parts[i];
    part.Hit ? ++out.CacheHits : ++out.CacheMisses;
    out.Members.push_back({symbol + ".o", part.Object});
    ObjectStats s = inspectObject(part.Object);
    out.Stats.CodeBytes += s.CodeBytes;
    out.Stats.DataBytes += s.DataBytes;
    out.Stats.WritableBytes += s.WritableBytes;
    for (const std::string &u : s.Undefined)
      if (!defined.count(u))
        undefined.insert(u);
    // Under the name of every kernel that is this function.
    for (size_t k = 0; k < parts.size(); ++k)
      if (parts[k].Symbol == symbol) {
        for (auto &[name, bytes] : s.Functions) {
          if (name.rfind(symbol, 0) == 0)
            functions[p.Kernels[k].Name + name.substr(symbol.size())] += bytes;
          else if (k == i) // a helper of its own (a conversion)
            functions[name] += bytes;
        }
      }
  }
  // Members in the order of their names after the program's own, so that
  // the archive does not depend on the order the kernels came in.
  std::sort(out.Members.begin() + 1, out.Members.end());
  if (weightsApart) {
    MLCC_CHECK(canWriteDataObject(mainObject), "the program's object is not little-endian ELF");
    std::vector<std::pair<std::string, std::string_view>> data;
    std::vector<std::string> padded(p.Constants.size());
    for (size_t i = 0; i < p.Constants.size(); ++i) {
      const kir::ConstantData &c = p.Constants[i];
      size_t size = std::max<size_t>((size_t)c.Count, 1) * dtypeSize(c.Type);
      std::string_view bytes((const char *)c.Bytes.data(), c.Bytes.size());
      if (bytes.size() != size) { // a constant of no elements, or a splat's tail
        padded[i].assign(c.Bytes.begin(), c.Bytes.end());
        padded[i].resize(size, '\0');
        bytes = padded[i];
      }
      data.push_back({constantSymbols[i], bytes});
    }
    std::string weights = dataObject(mainObject, data);
    ObjectStats s = inspectObject(weights);
    out.Stats.DataBytes += s.DataBytes;
    out.Stats.CodeBytes += s.CodeBytes;
    out.Stats.WritableBytes += s.WritableBytes;
    out.Members.insert(out.Members.begin() + 1, {p.Name + "_weights.o", std::move(weights)});
  }
  out.Stats.Undefined.assign(undefined.begin(), undefined.end());
  out.Stats.Functions.assign(functions.begin(), functions.end());
  return out;
}

std::string compileKernelEntry(const kir::Kernel &k, const std::string &entry,
                               const TargetSpec &t, const CodegenOptions &o) {
  std::unique_ptr<llvm::TargetMachine> tm = makeMachine(t, o);
  llvm::LLVMContext ctx;
  const std::string symbol = entry + "_kernel";
  std::unique_ptr<llvm::Module> m = emitKernelModule(k, symbol, ctx, t.Triple,
                                                     tm->createDataLayout(), emitFeatures(*tm, t));
  llvm::Function *kernel = m->getFunction(symbol);
  llvm::Type *ptr = llvm::PointerType::get(ctx, 0);
  auto *fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, entry, *m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  std::vector<llvm::Value *> args;
  for (size_t i = 0; i < k.Params.size(); ++i)
    args.push_back(b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, fn->getArg(0), i)));
  args.push_back(fn->getArg(1));
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
  targetAttributes(*m, t, o);
  optimizeFor(*m, *tm, t, o);
  return emitFile(*m, *tm, t, OutputKind::Object, nullptr);
}

std::string compileData(const std::string &symbol, const std::string &bytes, unsigned align,
                        const TargetSpec &t) {
  std::unique_ptr<llvm::TargetMachine> tm = makeMachine(t, CodegenOptions{});
  llvm::LLVMContext ctx;
  llvm::Module m(symbol, ctx);
  m.setTargetTriple(t.Triple);
  m.setDataLayout(tm->createDataLayout());
  llvm::Constant *data = llvm::ConstantDataArray::getRaw(
      bytes.empty() ? llvm::StringRef("\0", 1) : llvm::StringRef(bytes),
      std::max<uint64_t>(bytes.size(), 1), llvm::Type::getInt8Ty(ctx));
  auto *g = new llvm::GlobalVariable(m, data->getType(), true, llvm::GlobalValue::ExternalLinkage,
                                     data, symbol);
  g->setAlignment(llvm::Align(align));
  return emitFile(m, *tm, t, OutputKind::Object, nullptr);
}



std::string makeArchive(const std::vector<std::pair<std::string, std::string>> &members) {
  initLlvm();
  std::vector<llvm::NewArchiveMember> ms;
  for (auto &[name, bytes] : members) {
    llvm::NewArchiveMember m(llvm::MemoryBufferRef(bytes, name));
    ms.push_back(std::move(m));
  }
  std::string out;
  size_t bytes = 0;
  for (auto &member : members)
    bytes += member.second.size() + 128;
  out.reserve(bytes + (64 << 10));
  llvm::raw_string_ostream os(out);
  if (llvm::Error e = llvm::writeArchiveToStream(os, ms, llvm::SymtabWritingMode::NormalSymtab,
                                                 llvm::object::Archive::K_GNU,
                                                 /*Deterministic=*/true, /*Thin=*/false))
    fail(ErrorKind::Internal) << "internal error: cannot write the archive: "
                              << llvm::toString(std::move(e));
  os.flush();
  return out;
}

ObjectStats inspectObject(const std::string &bytes) {
  initLlvm();
  ObjectStats s;
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(bytes, "object"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return s;
  }
  for (const llvm::object::SectionRef &sec : (*obj)->sections()) {
    if (!sec.isText() && !sec.isData() && !sec.isBSS())
      continue;
    auto name = sec.getName();
    std::string n = name ? name->str() : "";
    if (sec.isText())
      s.CodeBytes += (int64_t)sec.getSize();
    else if (sec.isBSS() || (n.rfind(".data", 0) == 0 && n.rfind(".data.rel.ro", 0) != 0))
      s.WritableBytes += (int64_t)sec.getSize(), s.DataBytes += (int64_t)sec.getSize();
    else
      s.DataBytes += (int64_t)sec.getSize();
    if (!name)
      llvm::consumeError(name.takeError());
  }
  std::set<std::string> undef;
  for (const llvm::object::SymbolRef &sym : (*obj)->symbols()) {
    auto flags = sym.getFlags();
    if (!flags) {
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (!(*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    auto name = sym.getName();
    if (name && !name->empty())
      undef.insert(name->str());
    else if (!name)
      llvm::consumeError(name.takeError());
  }
  s.Undefined.assign(undef.begin(), undef.end());
  if (auto *elf = llvm::dyn_cast<llvm::object::ELFObjectFileBase>(obj->get())) {
    std::map<std::string, int64_t> functions;
    for (llvm::object::ELFSymbolRef sym : elf->symbols()) {
      auto type = sym.getType();
      auto name = sym.getName();
      if (!type || !name) {
        if (!type)
          llvm::consumeError(type.takeError());
        if (!name)
          llvm::consumeError(name.takeError());
        continue;
      }
      auto flags = sym.getFlags();
      if (!flags) {
        llvm::consumeError(flags.takeError());
        continue;
      }
      if (*type == llvm::object::SymbolRef::ST_Function && !name->empty() &&
          !(*flags & llvm::object::SymbolRef::SF_Undefined))
        functions[name->str()] += (int64_t)sym.getSize();
    }
    s.Functions.assign(functions.begin(), functions.end());
  }
  return s;
}

} // namespace mlcc::llvmgen
