//===- CyclesCommand.cpp - mlcc cycles: a firmware's cycle estimate -------===//
#include "tools/mlcc/Options.h"

#include "mlcc/Cycles.h"
#include "mlcc/Error.h"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace mlcc {

int cyclesMain(int argc, char **argv) {
  FirmwareCycleOptions o;
  CLI::App app{"mlcc cycles: estimates the cycles a Cortex-M firmware takes. QEMU runs it once "
               "(it must exit through semihosting) with its translation-block log on, and "
               "each instruction that ran is priced by the core's published timings.\n\n"
               "Example:\n  mlcc cycles firmware.elf --target cortex-m4 --from start --to stop\n",
               "mlcc cycles"};
  app.add_option("firmware", o.Firmware, "The firmware (ELF)")->required();
  app.add_option("--target", o.Target,
                 "The core: cortex-m0plus, cortex-m4, cortex-m7, cortex-m33, cortex-m55")
      ->required();
  app.add_option("--from", o.From,
                 "Count from the first time function FROM is entered (default: the start)");
  app.add_option("--to", o.To, "... to the first time function TO is entered (default: the end)");
  app.add_option("--wait-states", o.WaitStates,
                 "Flash wait states of the second figure (default: the reference board's)")
      ->check(CLI::Range(0, 64));
  app.add_option("--clock-mhz", o.ClockMHz, "The clock of the milliseconds (default: the "
                                            "reference board's)")
      ->check(CLI::Range(0.001, 100000.0));
  app.add_option("--blocks", o.Blocks,
                 "Also list the N blocks (straight-line runs of code) that took the most cycles");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return parseErrorStatus(app, e);
  }
  try {
    std::fputs(estimateFirmwareCycles(o).text().c_str(), stdout);
    return 0;
  } catch (const CompileError &e) {
    std::fprintf(stderr, "mlcc cycles: error: %s\n", e.what());
    return exitStatus(e.kind());
  }
}

} // namespace mlcc
