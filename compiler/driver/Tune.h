//===- Tune.h - Schedule search: --tune, --tune-db, --tune-budget ---------===//
//
// mlcc --tune measures the candidate plans of every kernel that has more
// than one (passes::planCandidates: forms, register tiles, multiply-
// accumulate forms, loop knobs) and keeps the fastest; --tune-db FILE keeps
// what it measured (schedule::TuneDb) so that later compiles read it
// instead of searching. The search is by coordinates: the forms and tiles
// first, then the loop knobs (loop order, unrolling) of each kernel's best
// of those.
//
// A round compiles the whole model with one candidate for every kernel at
// once (the first round the default plans), runs it, checks its outputs
// against the first round's and measures each kernel call at the model's
// real shapes. The measurer depends on the target: this machine (the host,
// an x86-64 level it has: the JIT, each call timed through NAME_run_with's
// hook, the median of repeats after a warm-up); a Cortex-M4/M7 (firmware
// under QEMU with -icount shift=0, SysTick read in the hook: instructions);
// an AArch64 or RISC-V Linux core (block counts under qemu-user times
// llvm-mca's cycles per block: an estimate). Kernels of one signature are
// tuned once. A confirmation round runs the default and the chosen plans
// side by side and keeps a kernel's choice only where it beats the default
// there beyond the measurer's noise (host: 2%), so the machine's noise
// does not pick the winner.
//
// The final compile takes its plans from the database (the one just
// searched, or the file), the same way with and without --tune: a compile
// that reads a database does no search and gives the same output every
// time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/output/Report.h"
#include "compiler/schedule/TuneDb.h"
#include "compiler/support/Progress.h"
#include "compiler/driver/Compile.h"

#include <map>
#include <string>

namespace mlcc {

class PlanTuner {
public:
  /// Checks the flags (a Usage error for --tune-budget without --tune, or
  /// --tune on a target this machine does not run) and reads --tune-db.
  PlanTuner(const CompileOptions &o, const llvmgen::TargetSpec &target, Progress &status);

  /// Whether the compile takes plans from search or a database.
  bool active() const { return Tune || !DbPath.empty(); }
  /// With --tune: compiles and runs the model once per round (see above)
  /// and puts what it measured in the database.
  void search(const PipelineOptions &base);
  /// The chooser of the final compile: each node takes its entry's plan.
  passes::PlanChooser chooser();
  /// The database to write (--tune-db), or "" when none is.
  std::string dbPath() const { return Tune ? DbPath : ""; }
  std::string dbText() const { return Db.text(); }
  /// Adds each call's default and tuned measure to the report; with -v,
  /// prints the entries skipped.
  void annotate(output::ModelReport &r, bool verbose) const;

private:
  const CompileOptions &O;
  llvmgen::TargetSpec Target;
  Progress &Status;
  bool Tune = false;
  std::string DbPath;
  double BudgetSeconds = 0; ///< 0: none
  int64_t BudgetTrials = 0; ///< candidates measured per kernel; 0: all
  std::string TargetKey, Compiler;
  schedule::TuneDb Db;
  /// The final compile's: node name -> the entry applied.
  std::map<std::string, schedule::TuneEntry> Applied;
  /// Entries skipped: signature -> why.
  std::map<std::string, std::string> Skipped;
};

} // namespace mlcc
