//===- HostJit.h - Run a compiled program in the compiler's own process ---===//
//
// For work the compiler does by running a model (calibration for
// --quantize): the program is compiled for the host like any library and
// the object is loaded with LLVM's ORC JIT linker, so the model runs at
// full speed without a C compiler or a temporary file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/kernel/Program.h"

#include <memory>
#include <vector>

namespace mlcc::llvmgen {

class HostModel {
public:
  /// Compiles `p` for this CPU and links it into the process.
  explicit HostModel(const kir::Program &p);
  ~HostModel();
  HostModel(const HostModel &) = delete;
  HostModel &operator=(const HostModel &) = delete;

  /// Runs the model: one pointer per graph input and output, in order, to
  /// dense buffers of their types.
  void run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs);

private:
  struct Impl;
  std::unique_ptr<Impl> I;
};

} // namespace mlcc::llvmgen
