//===- mlcc/Check.h - Every kernel call against a reference ---------------===//
//
// Part of the public C++ API (installed as <mlcc/Check.h>; standard library
// only): what `mlcc check` does. The model is compiled as compile() would
// with the same options, the code that ships runs (in this process, or
// under QEMU for other targets) and what every kernel call writes is
// compared, by ONNX tensor, with a reference: the model before optimization
// computed in float64, or the tensors given as References.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlcc/Compiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlcc {

struct CheckOptions {
  CompileOptions Compile;
  std::vector<std::string> Inputs;     ///< NAME=FILE.npy
  std::vector<std::string> References; ///< NAME=FILE.npy, or a folder of NAME.npy
  double Tolerance = 1e-3; ///< float models: max |error| <= this x max |reference|
  double MinSnr = 20;      ///< quantized models: SNR at least this, in dB
  uint64_t Seed = 1;       ///< of the random inputs
  std::string Cc, Run;     ///< other targets: how a program is linked and run
  std::string BreakNode;   ///< testing aid: the kernel computing this node is broken
  bool FailuresOnly = false; ///< the table shows only the calls out of tolerance
  bool Html = false;         ///< make CheckResult::Html too
  /// NAME=VALUE: a value of a run-time dimension (--dim NAME=MIN..MAX) at
  /// which the bounded library is checked; repeatable, each combination of
  /// the values is checked in turn.
  std::vector<std::string> Assign;
};

struct CheckResult {
  /// Every compared output within tolerance.
  bool WithinTolerance = true;
  /// The table `mlcc check` prints.
  std::string Table;
  /// The table as JSON (`mlcc check --json`): a summary and one row per
  /// output of every kernel call.
  std::string Json;
  /// The page of `--report-html` (when CheckOptions::Html).
  std::string Html;
};

/// Compiles, runs and compares; throws CompileError for the compile's
/// problems and bad options.
CheckResult checkModel(const CheckOptions &options);

} // namespace mlcc
