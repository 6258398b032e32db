//===- CheckCommand.cpp - mlcc check ---------------------------------------===//
//
//   mlcc check model.onnx [compile options] [--input NAME=FILE.npy ...]
//
// The options of mlcc/Check.h from the command line; the table on stdout.
// Exit status 0: every compared output within tolerance; 6: some are not;
// the compile errors' statuses otherwise.
//
//===----------------------------------------------------------------------===//
#include "tools/mlcc/Options.h"

#include "mlcc/Check.h"

#include <cstdio>
#include <new>

namespace mlcc {

namespace {
constexpr int kExitOutOfTolerance = 6;
} // namespace

int checkMain(int argc, char **argv) {
  CheckOptions o;
  std::string json, html; // --json, --report-html: files to write
  CLI::App app{"mlcc check: compiles the model as mlcc would with the same options, runs "
               "the code that ships (on this CPU, or under QEMU for other targets) and "
               "compares what every kernel call writes, by ONNX tensor, with a reference: "
               "the model before optimization computed in float64, or --reference tensors.\n\n"
               "Examples:\n"
               "  mlcc check model.onnx\n"
               "  mlcc check model.onnx --quantize int8 --calibrate input=samples.npy "
               "--report-html snr.html\n"
               "  mlcc check model.onnx --target cortex-m4\n",
               "mlcc check"};
  app.add_option("model", o.Compile.Model, "The ONNX model file")->required();
  addCompileOptions(app, o.Compile);
  app.add_option("--input", o.Inputs,
                 "An input's values: NAME=FILE.npy (repeatable; default: the first "
                 "--calibrate sample, else random values in [-1, 1) seeded by --seed)");
  app.add_option("--reference", o.References,
                 "Compare with these tensors instead of mlcc's own: NAME=FILE.npy, or a "
                 "folder of NAME.npy files (characters other than letters, digits, '.', '-' "
                 "and '_' in NAME written '_'); repeatable");
  app.add_option("--tolerance", o.Tolerance,
                 "Float models: an output is within tolerance when max |error| <= this times "
                 "the largest |value| of its reference (default 1e-3)");
  app.add_option("--min-snr", o.MinSnr,
                 "Quantized models: an output is within tolerance when its SNR against the "
                 "float reference is at least this, in dB (default 20)");
  app.add_option("--seed", o.Seed, "Seed of the random inputs (default 1)");
  app.add_option("--assign", o.Assign,
                 "NAME=VALUE: check a library with a run-time dimension (--dim NAME=MIN..MAX) "
                 "at this value (repeatable: each value in turn)");
  app.add_option("--tune-db", o.Compile.TuneDb,
                 "Check the library with the plans this tuning database gives (mlcc --tune-db)");
  app.add_option("--json", json, "Write the table as JSON to this file");
  app.add_option("--report-html", html,
                 "Write a page with the SNR of every kernel call as a chart and the table");
  app.add_flag("--failures-only", o.FailuresOnly,
               "Print only the calls out of tolerance (and those not compared)");
  app.add_option("--cc", o.Cc,
                 "Other targets: the C compiler and flags that link a program for the target "
                 "(default for aarch64-linux, riscv64-linux, cortex-m4 and cortex-m7: the "
                 "Debian cross compilers)");
  app.add_option("--run", o.Run,
                 "Other targets: the command that runs a program for the target (default: "
                 "qemu-aarch64, qemu-riscv64, or qemu-system-arm's MPS2 board with "
                 "semihosting)");
  app.add_option("--break-kernel-for-test", o.BreakNode,
                 "Testing aid: the kernel that computes this node writes wrong values")
      ->group("");
  app.footer("Exit status: 0 every compared output within tolerance; 6 some are not; 1 "
             "invalid model or I/O error; 2 bad usage; 3 unsupported; 70 internal error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return parseErrorStatus(app, e);
  }
  try {
    for (const std::string *path : {&json, &html})
      if (!path->empty())
        checkWritable(*path);
    o.Html = !html.empty();
    CheckResult r = checkModel(o);
    std::fputs(r.Table.c_str(), stdout);
    std::vector<Artifact> files;
    if (!json.empty())
      files.push_back({json, r.Json});
    if (!html.empty())
      files.push_back({html, r.Html});
    writeFiles(files);
    return r.WithinTolerance ? 0 : kExitOutOfTolerance;
  } catch (const CompileError &e) {
    std::fprintf(stderr, "mlcc check: error: %s\n", e.what());
    return exitStatus(e.kind());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "mlcc check: error: out of memory\n");
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mlcc check: error: internal error: %s\n", e.what());
    return 70;
  }
}

} // namespace mlcc
