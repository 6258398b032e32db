//===- McuCycles.h - Cycle estimates for Cortex-M cores from a QEMU trace -===//
//
// How many cycles a Cortex-M core takes for code mlcc generated, without the
// board: QEMU runs the firmware once and logs every translation block it
// translates (`-d in_asm`: the addresses of its instructions) and every one
// it executes (`-d exec,nochain`: one line per execution, chaining off so
// none is skipped). The estimator reads that log in order: how often each
// block ran, and after each run whether its last instruction branched (the
// next block is not the fall-through). Each instruction is decoded from the
// firmware's ELF with LLVM's disassembler and priced by the core's
// published timings (McuCore), with the rules the manuals give for
// neighbours (an LDR that pipelines behind another, an address that waits
// for the instruction before, an IT folded into a 16-bit instruction, a
// taken branch's pipeline refill). The method counts exactly what ran
// (data-dependent paths included); its error is the timing model's, which
// tests/mcu/cycles.sh measures on micro-kernels whose cycle counts follow
// from the manuals.
//
// Memory: the figure assumes zero wait states for code and data (the flash
// accelerator's best case: a cache or prefetch hit on every fetch); with N
// flash wait states each taken branch also waits N cycles for the refill
// from flash (the prefetch buffer hides sequential fetches), which is the
// second figure.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mlcc::llvmgen {

/// A core the estimator prices, with its reference board.
struct McuCore {
  std::string Name;       ///< the --target preset: cortex-m4, ...
  std::string Board;      ///< the reference board the clock and wait states are from
  double ClockMHz = 0;    ///< its clock
  int WaitStates = 0;     ///< its flash wait states at that clock
  std::string QemuMachine; ///< where the firmware runs (a core that executes the same code)
  std::string Accuracy;   ///< how exact the model is, in words
};

/// The core of preset `target` (cortex-m0plus, cortex-m4, cortex-m7,
/// cortex-m33, cortex-m55), or null.
const McuCore *mcuCore(const std::string &target);

/// Instructions and cycles of one part of a run.
struct CycleCounts {
  double Instructions = 0;
  double Cycles = 0;     ///< zero wait states
  double WaitCycles = 0; ///< added with the core's flash wait states
  void add(const CycleCounts &o) {
    Instructions += o.Instructions, Cycles += o.Cycles, WaitCycles += o.WaitCycles;
  }
};

/// One translation block's share of a run.
struct BlockCycles {
  uint64_t Begin = 0, End = 0; ///< its bytes: [Begin, End)
  std::string Function;
  double Executions = 0, Instructions = 0, Cycles = 0; ///< in all its runs
};

struct CycleProfile {
  CycleCounts Total;               ///< from `Begin` to `End`
  std::vector<CycleCounts> Calls;  ///< per entry of CycleOptions::Calls
  CycleCounts Outside;             ///< before the first call, and CycleOptions::Outside
  std::map<std::string, CycleCounts> Functions; ///< by ELF symbol ("?" where none)
  std::vector<BlockCycles> Blocks; ///< every block that ran in the region, most cycles first
};

struct CycleOptions {
  std::string Core;      ///< a name mcuCore() knows
  int WaitStates = -1;   ///< -1: the core's reference board's
  /// The region counted: from the first execution of the block at symbol
  /// `Begin` to the first at `End` (empty: the whole trace).
  std::string Begin, End;
  /// The functions entered in order (kernel calls): an execution of the
  /// block at the entry of Calls[i] after call i-1 starts call i; what runs
  /// until the next call's entry (helpers, outlined parts) is call i's.
  std::vector<std::string> Calls;
  /// Functions whose own code is counted apart (CycleProfile::Outside):
  /// the run function between its calls.
  std::vector<std::string> Outside;
};

/// Reads a QEMU log (`-d in_asm,exec,nochain`) of running `elf` (its
/// bytes) and estimates its cycles. A Usage error when the log or the ELF
/// cannot be read.
CycleProfile estimateCycles(const std::string &elf, std::istream &log, const CycleOptions &o);

/// The QEMU flags that make the log estimateCycles() reads into `path`.
std::vector<std::string> cycleTraceFlags(const std::string &path);

} // namespace mlcc::llvmgen
