//===- Listings.cpp - --list-targets, --list-ops, --print-target ----------===//
#include "mlcc/Compiler.h"

#include "compiler/ops/OpRegistry.h"
#include "compiler/output/Header.h"
#include "compiler/support/Error.h"
#include "compiler/support/Format.h"
#include "targets/llvm/Targets.h"

#include <map>

namespace mlcc {

std::string targetList() {
  std::string s = formatText("%-16s %-32s %-14s %s\n", "TARGET", "TRIPLE", "CPU", "DESCRIPTION");
  for (auto &t : llvmgen::targetPresets())
    s += formatText("%-16s %-32s %-14s %s\n", t.Name.c_str(), t.Triple.c_str(),
                t.Name == "host" ? "(this CPU)" : t.Cpu.c_str(), t.Description.c_str());
  s += formatText("%-16s %-32s %-14s %s\n", "cuda", "(CUDA C++ through nvcc)", "--cuda-arch",
              "NVIDIA GPUs sm_75 and newer: CUDA source per kernel, cuBLAS products");
  s += "\nAny other LLVM triple is accepted too (normalized), with --cpu and --features.\n";
  return s;
}

std::string targetDescription(const CompileOptions &o) {
  if (o.Target == "cuda")
    fail(ErrorKind::Usage) << "--print-target describes CPU targets; --target cuda takes "
                              "--cuda-arch";
  return llvmgen::describeTarget(llvmgen::resolveTarget(o.Target, o.Cpu, o.Features)).describe();
}

std::string opList() {
  std::map<std::string, std::vector<const ops::OpSchema *>> byOp;
  for (const ops::OpSchema *s : ops::OpRegistry::instance().all())
    if (s->Domain != "mlcc.internal" && s->Domain != "mlcc") // not the ops passes create
      byOp[(s->Domain.empty() ? "" : s->Domain + ".") + s->Name].push_back(s);
  std::string text;
  for (auto &[name, versions] : byOp) {
    std::string since;
    for (auto *s : versions)
      since += (since.empty() ? "" : ", ") + std::to_string(s->SinceVersion);
    text += formatText("%-32s opset %s+  %s\n", name.c_str(), since.c_str(),
                   ops::fusionClassName(versions.back()->Fusion));
  }
  text += formatText("\n%zu operators\n", byOp.size());
  return text;
}

std::string version() { return output::mlccVersion(); }

} // namespace mlcc
