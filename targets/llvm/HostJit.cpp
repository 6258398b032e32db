//===- HostJit.cpp - Run a compiled program in the compiler's own process -===//
#include "targets/llvm/HostJit.h"

#include "compiler/kernel/Interpreter.h"
#include "compiler/output/RuntimeAbi.h"
#include "compiler/support/Error.h"
#include "targets/llvm/Targets.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdlib>
#include <mutex>

namespace mlcc::llvmgen {

using RunPtrs = int32_t (*)(const void *const *, void *const *, void *, size_t);
using RunWith = int32_t (*)(const void *const *, void *const *, void *, size_t,
                            const mlcc_run_options *);

struct HostModel::Impl {
  std::unique_ptr<llvm::orc::LLJIT> Jit;
  RunPtrs Run = nullptr;
  RunWith RunHooked = nullptr;
  void *Arena = nullptr;
  size_t ArenaSize = 0;
  ~Impl() { std::free(Arena); }
};

namespace {

template <typename T> T orFail(llvm::Expected<T> v, const char *what) {
  if (!v)
    fail(ErrorKind::Internal) << "internal error: the host JIT could not " << what << ": "
                              << llvm::toString(v.takeError());
  return std::move(*v);
}

} // namespace

namespace {

/// kir::evaluate's compiled run: each kernel compiled for this machine
/// into a library of its own in one JIT, run, and removed.
class FoldJit {
public:
  static void run(const kir::Kernel &k, const std::vector<void *> &args) {
    static FoldJit jit;
    jit.runKernel(k, args);
  }

private:
  std::mutex Lock;
  std::unique_ptr<llvm::orc::LLJIT> Jit;
  TargetSpec Host;
  unsigned Next = 0;

  void runKernel(const kir::Kernel &k, const std::vector<void *> &args) {
    std::lock_guard<std::mutex> hold(Lock);
    if (!Jit) {
      Host = resolveTarget("host", "", "");
      Jit = orFail(llvm::orc::LLJITBuilder().create(), "start");
    }
    const std::string entry = "mlcc_fold_" + std::to_string(Next++);
    // Unoptimized: compiled in 1-3 ms, and still some 50 times faster
    // than the interpreter.
    CodegenOptions o;
    o.OptLevel = 0;
    std::string obj = compileKernelEntry(k, entry, Host, o);
    auto made = Jit->createJITDylib(entry);
    if (!made)
      fail(ErrorKind::Internal) << "internal error: the host JIT could not make a library: "
                                << llvm::toString(made.takeError());
    llvm::orc::JITDylib &lib = *made;
    lib.addGenerator(orFail(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                                Jit->getDataLayout().getGlobalPrefix()),
                            "find this process's symbols"));
    if (llvm::Error e = Jit->addObjectFile(lib, llvm::MemoryBuffer::getMemBufferCopy(obj, entry)))
      fail(ErrorKind::Internal) << "internal error: the host JIT could not load a folded kernel: "
                                << llvm::toString(std::move(e));
    using Entry = void (*)(void *const *, const mlcc_run_options *);
    auto fn = orFail(Jit->lookup(lib, entry), "find a folded kernel").toPtr<Entry>();
    mlcc_run_options options{};
    fn(args.data(), &options);
    if (llvm::Error e = Jit->getExecutionSession().removeJITDylib(lib))
      llvm::consumeError(std::move(e));
  }
};

} // namespace

void runCompiledKernel(const kir::Kernel &k, const std::vector<void *> &args) {
  FoldJit::run(k, args);
}

namespace {
/// Installed when this file is linked (every program that compiles).
const bool kFoldJitInstalled = (kir::setCompiledRun(&runCompiledKernel), true);
} // namespace

HostModel::HostModel(const kir::Program &p)
    : HostModel(p, resolveTarget("host", "", ""), CodegenOptions{}) {}

HostModel::HostModel(const kir::Program &p, const TargetSpec &target,
                     const CodegenOptions &options)
    : I(std::make_unique<Impl>()) {
  std::string obj = compileProgram(p, target, options, OutputKind::Object);
  I->Jit = orFail(llvm::orc::LLJITBuilder().create(), "start");
  // Math functions (expf, ...) come from this process.
  auto gen = orFail(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                        I->Jit->getDataLayout().getGlobalPrefix()),
                    "find this process's symbols");
  I->Jit->getMainJITDylib().addGenerator(std::move(gen));
  if (llvm::Error e = I->Jit->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(obj, p.Name + ".o")))
    fail(ErrorKind::Internal) << "internal error: the host JIT could not load the model: "
                              << llvm::toString(std::move(e));
  auto sym = orFail(I->Jit->lookup(p.Name + "_run_ptrs"), "find the run function");
  I->Run = sym.toPtr<RunPtrs>();
  I->RunHooked =
      orFail(I->Jit->lookup(p.Name + "_run_with"), "find the run function").toPtr<RunWith>();
  int64_t align = std::max<int64_t>(p.ArenaAlign, 64);
  I->ArenaSize = (size_t)kir::alignedArenaBytes(p.ArenaSize, align);
  if (I->ArenaSize) {
    I->Arena = std::aligned_alloc((size_t)align, I->ArenaSize);
    if (!I->Arena)
      fail(ErrorKind::Io) << "cannot allocate " << I->ArenaSize << " bytes for the model";
  }
}

HostModel::~HostModel() = default;

int32_t HostModel::tryRun(const std::vector<const void *> &inputs,
                          const std::vector<void *> &outputs) {
  return I->Run(inputs.data(), outputs.data(), I->Arena, I->ArenaSize);
}

void HostModel::run(const std::vector<const void *> &inputs,
                    const std::vector<void *> &outputs) {
  int32_t rc = tryRun(inputs, outputs);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: the host-compiled model returned status "
                              << rc;
}

void HostModel::runWithHook(const std::vector<const void *> &inputs,
                            const std::vector<void *> &outputs, KernelHook hook,
                            void *context) {
  mlcc_run_options options{};
  options.on_kernel = hook;
  options.hook_context = context;
  int32_t rc = I->RunHooked(inputs.data(), outputs.data(), I->Arena, I->ArenaSize, &options);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: the host-compiled model returned status "
                              << rc;
}

uint8_t *HostModel::arena() const { return static_cast<uint8_t *>(I->Arena); }

} // namespace mlcc::llvmgen
