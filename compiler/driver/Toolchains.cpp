//===- Toolchains.cpp - The C compiler and nvcc behind --backend c and cuda ===//
#include "compiler/driver/Toolchains.h"

#include "compiler/output/Header.h"
#include "compiler/support/Error.h"
#include "compiler/support/Files.h"
#include "compiler/support/Process.h"
#include "targets/cuda/CudaEmitter.h"
#include "targets/llvm/Targets.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <unistd.h>

namespace mlcc {

namespace {

bool executable(const std::string &path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

/// nvcc: $CUDA_PATH/bin/nvcc, /usr/local/cuda/bin/nvcc, or the first on
/// PATH; empty when there is none.
std::string findNvcc() {
  if (const char *cp = std::getenv("CUDA_PATH"); cp && *cp && executable(std::string(cp) + "/bin/nvcc"))
    return std::string(cp) + "/bin/nvcc";
  if (executable("/usr/local/cuda/bin/nvcc"))
    return "/usr/local/cuda/bin/nvcc";
  return findProgram("nvcc");
}

} // namespace

std::string findProgram(const std::string &program) {
  if (program.find('/') != std::string::npos)
    return executable(program) ? program : "";
  if (const char *path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty() && executable(d + "/" + program))
        return d + "/" + program;
  }
  return "";
}

/// Compiles the generated C with the host compiler; returns the object.
std::string compileC(const std::string &source, const std::string &header,
                     const std::string &name) {
  TempDir tmp;
  tmp.write(name + ".h", header);
  tmp.write(name + ".c", source);
  const char *cc = std::getenv("CC");
  std::string compiler = cc && *cc ? cc : "cc";
  std::vector<std::string> cmd = {compiler, "-std=c99", "-O2", "-fno-strict-aliasing",
                                  "-fPIC", "-c", name + ".c", "-o", name + ".o"};
  // $CFLAGS follows the defaults (e.g. -fsanitize=address,undefined).
  if (const char *flags = std::getenv("CFLAGS")) {
    std::istringstream words(flags);
    for (std::string w; words >> w;)
      cmd.insert(cmd.end() - 5, w);
  }
  std::string log;
  int rc = runProcess(cmd, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: the C compiler '" << compiler
                              << "' failed on the generated code (exit " << rc
                              << "): " << log.substr(0, 2000);
  return readFile(tmp.Path + "/" + name + ".o", "compiled object");
}

/// The --cuda-arch list: sm_NN names (default sm_75).
std::vector<std::string> cudaArchs(const std::string &list) {
  std::vector<std::string> archs;
  std::istringstream words(list.empty() ? "sm_75" : list);
  for (std::string a; std::getline(words, a, ',');) {
    bool ok = a.size() > 3 && a.compare(0, 3, "sm_") == 0;
    for (size_t i = 3; ok && i < a.size(); ++i)
      ok = std::isdigit((unsigned char)a[i]) || (i + 1 == a.size() && (a[i] == 'a' || a[i] == 'f'));
    if (!ok)
      fail(ErrorKind::Usage) << "--cuda-arch: '" << a << "' is not an architecture like sm_80";
    archs.push_back(a);
  }
  if (archs.empty())
    fail(ErrorKind::Usage) << "--cuda-arch: no architecture given";
  return archs;
}

/// The CUDA target's weights image as a host object (NAME_weights.o), so
/// that the weights never pass through nvcc as source text.
std::string cudaWeightsObject(const kir::Program &p) {
  return llvmgen::compileData(cudagen::weightsSymbol(p), cudagen::weightsImage(p),
                              output::kCudaWeightsAlign, llvmgen::resolveTarget("host", "", ""));
}

/// Compiles the generated CUDA with nvcc; returns the object (device code
/// for every architecture, and the last one's PTX, in a fat binary).
std::string compileCuda(const std::string &source, const std::string &header,
                        const std::string &name, const std::vector<std::string> &archs) {
  std::string nvcc = findNvcc();
  if (nvcc.empty())
    fail(ErrorKind::Usage) << "--target cuda needs the CUDA toolkit's nvcc to build a library "
                              "(not found in $CUDA_PATH/bin, /usr/local/cuda/bin or PATH); "
                              "write the source instead with -o " << name << ".cu";
  TempDir tmp;
  tmp.write(name + ".h", header);
  tmp.write(name + ".cu", source);
  std::vector<std::string> cmd = {nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-c",
                                  name + ".cu", "-o", name + ".o"};
  for (size_t i = 0; i < archs.size(); ++i) {
    std::string num = archs[i].substr(3);
    cmd.push_back("-gencode");
    cmd.push_back("arch=compute_" + num + ",code=" + archs[i]);
    if (i + 1 == archs.size()) {
      cmd.push_back("-gencode");
      cmd.push_back("arch=compute_" + num + ",code=compute_" + num);
    }
  }
  std::string log;
  int rc = runProcess(cmd, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: nvcc (" << nvcc
                              << ") failed on the generated CUDA (exit " << rc
                              << "): " << log.substr(0, 2000);
  return readFile(tmp.Path + "/" + name + ".o", "compiled object");
}

} // namespace mlcc
