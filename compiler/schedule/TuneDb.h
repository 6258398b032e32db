//===- TuneDb.h - Measured plans, kept between compiles --------------------===//
//
// Schedule search (mlcc --tune) measures the candidate plans of each kernel
// (passes::planCandidates) and keeps the fastest in a database that later
// compiles read (--tune-db FILE) instead of searching again. The file is
// JSON lines, one entry per kernel signature, sorted, so that it diffs
// well under version control:
//
//   {"signature": "Conv f32[1,64,56,56] f32[64,64,3,3]=c ... -> f32[...]",
//    "target": "host x86_64-unknown-linux-gnu sapphirerapids ...",
//    "compiler": "0.9.0", "measure": "host-ns",
//    "plan": "plan{tile=6x32 lanes=16}", "default_plan": "plan{...}",
//    "default": 81234, "tuned": 70112, "candidates": 9}
//
// (on one line each). An entry applies to a node whose signature, target
// and compiler version are the entry's and whose candidates include its
// plan; any other is skipped (foreign: another target or version; stale: a
// plan the compiler no longer offers for that kernel).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/ir/Graph.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace mlcc::schedule {

/// One kernel's measured plans.
struct TuneEntry {
  std::string Signature, Target, Compiler;
  /// What the figures count: "host-ns" (median nanoseconds of a call on
  /// the compiling machine), "qemu-instructions" (a call's instructions on
  /// a microcontroller under QEMU), "mca-cycles" (llvm-mca's estimate of a
  /// call's cycles on the target CPU).
  std::string Measure;
  std::string Plan, DefaultPlan; ///< ir::KernelPlan::str()
  double Default = 0, Tuned = 0; ///< the measure of each plan
  int64_t Candidates = 0;        ///< plans measured
};

class TuneDb {
public:
  /// Reads a database; a missing file is an empty one. A line that is not
  /// an entry is an error naming the file and the line.
  static TuneDb read(const std::string &path);
  /// Parses `text` (named `path` in errors).
  static TuneDb parse(const std::string &text, const std::string &path);
  /// The file's text: one entry per line, sorted by (signature, target,
  /// compiler).
  std::string text() const;

  /// The entry of `signature` for `target` and `compiler`, or null.
  const TuneEntry *find(const std::string &signature, const std::string &target,
                        const std::string &compiler) const;
  /// Adds `e`, replacing the entry of its key.
  void put(const TuneEntry &e);
  /// Entries for another target or compiler version than these.
  size_t foreign(const std::string &target, const std::string &compiler) const;
  size_t size() const { return Entries.size(); }

private:
  std::map<std::tuple<std::string, std::string, std::string>, TuneEntry> Entries;
};

/// What identifies a node's kernel for search: its op, the types and
/// shapes of its inputs (constants marked) and outputs, and its attributes.
/// Nodes of one signature get the same candidates and the same plan.
std::string kernelSignature(const ir::Node &n);

} // namespace mlcc::schedule
