//===- Tune.h - Schedule search: --tune, --tune-db, --tune-budget ---------===//
//
// mlcc --tune measures the candidate plans of every kernel that has more
// than one (passes::planCandidates: forms and register tiles) and keeps the
// fastest; --tune-db FILE keeps what it measured (schedule::TuneDb) so that
// later compiles read it instead of searching.
//
// The measurer is the compiling machine (targets that run in this process:
// the host, an x86-64 level it has). A round compiles the whole model with
// one candidate for every kernel at once (the first round the default
// plans), loads it with the JIT, checks its outputs against the first
// round's and times each kernel call through NAME_run_with's hook, at the
// model's real shapes: warm-up runs, then the median of repeats. Kernels of
// one signature are tuned once. A confirmation round runs the default and
// the chosen plans alternately and keeps a kernel's choice only where it
// beats the default there by more than the noise margin, so the machine's
// noise does not pick the winner.
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
#include "tools/mlcc/Driver.h"

#include <map>
#include <string>

namespace mlcc {

class PlanTuner {
public:
  /// Checks the flags (a Usage error for --tune-budget without --tune, or
  /// --tune on a target this machine does not run) and reads --tune-db.
  PlanTuner(const DriverOptions &o, const llvmgen::TargetSpec &target, Progress &status);

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
  const DriverOptions &O;
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
