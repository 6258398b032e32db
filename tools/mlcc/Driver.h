//===- Driver.h - From options to output files ----------------------------===//
#pragma once

#include <string>
#include <vector>

namespace mlcc {

struct DriverOptions {
  std::string Model;
  std::string Output;
  std::string Emit; ///< empty: from the output extension
  std::string Name;
  std::vector<std::string> Dims;   ///< NAME=VALUE
  std::vector<std::string> Freeze; ///< NAME=FILE.pb
  std::string Backend = "c";
  std::string DumpIr, DumpIrDir;
  bool TimePasses = false;
  bool Verbose = false;
};

/// Compiles and writes the outputs; throws CompileError on any problem
/// (and then leaves no output file behind).
void runDriver(const DriverOptions &options);

} // namespace mlcc
