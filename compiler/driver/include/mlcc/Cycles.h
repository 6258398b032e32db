//===- mlcc/Cycles.h - Cycle estimates of Cortex-M firmware ---------------===//
//
// `mlcc cycles FIRMWARE.elf --target cortex-m4`: QEMU runs a firmware (one
// that exits through semihosting) once with its translation-block log on,
// and every instruction that ran is priced by the core's published timings
// (the estimate `mlcc -v` gives a compiled library, for any program).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace mlcc {

struct FirmwareCycleOptions {
  std::string Firmware;     ///< the ELF file
  std::string Target;       ///< cortex-m0plus, cortex-m4, cortex-m7, cortex-m33, cortex-m55
  std::string From, To;     ///< count from the first entry of function From to that of To
  int WaitStates = -1;      ///< -1: the core's reference board's
  double ClockMHz = 0;      ///< 0: the reference board's
  int Blocks = 0;           ///< list the N blocks that took the most cycles
};

struct FunctionCycles {
  std::string Function;
  double Instructions = 0, Cycles = 0, WaitCycles = 0;
};

struct FirmwareCycles {
  std::string Target, Board, Model;
  double ClockMHz = 0;
  int WaitStates = 0;
  FunctionCycles Total;                  ///< Function empty
  std::vector<FunctionCycles> Functions; ///< by cycles, largest first
  /// FirmwareCycleOptions::Blocks hottest blocks: "BEGIN-END function",
  /// with the cycles and instructions of all their runs.
  std::vector<FunctionCycles> Blocks;
  std::vector<double> BlockRuns;
  /// A table: a line per function and the total.
  std::string text() const;
};

/// Runs the estimate; a Usage error when the target has no cycle model, a
/// tool is missing or the firmware does not run.
FirmwareCycles estimateFirmwareCycles(const FirmwareCycleOptions &o);

} // namespace mlcc
