//===- main.cpp - The mlcc command line -----------------------------------===//
//
//   mlcc model.onnx -o libmodel.a        static library + model.h
//   mlcc model.onnx -o model.c           C source + model.h
//   mlcc model.onnx --emit graph -o -    the optimized graph IR on stdout
//
// The options become a CompileOptions for the compiler's API
// (mlcc/Compiler.h); all errors end in one line on stderr and a non-zero
// exit, with no output file written.
//
//===----------------------------------------------------------------------===//
#include "tools/mlcc/Options.h"

#include "mlcc/Compiler.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <new>

namespace mlcc {

int parseErrorStatus(CLI::App &app, const CLI::ParseError &e) {
  if (e.get_exit_code() == 0)
    return app.exit(e); // --help, --version
  std::fprintf(stderr, "mlcc: error: %s\n", e.what());
  return 2;
}

void addCompileOptions(CLI::App &app, CompileOptions &o) {
  app.add_option("--dim", o.Dims,
                 "Bind a symbolic input dimension: NAME=VALUE (repeatable)");
  app.add_option("--shape", o.Shapes,
                 "Set a graph input's whole shape, named or unnamed dimensions alike: "
                 "NAME=D0xD1x... (repeatable)");
  app.add_option("--freeze", o.Freeze,
                 "Make a graph input a compile-time constant: NAME=FILE.pb "
                 "(a serialized TensorProto; repeatable)");
  app.add_option("--input-range", o.InputRanges,
                 "The values an integer scalar graph input takes: NAME=MIN..MAX (checked "
                 "when the model runs; a Loop whose trip count it is unrolls to MAX; repeatable)");
  app.add_option("--kv-cache", o.KvCache,
                 "Keep a key/value cache in one caller buffer: PAST=PRESENT (a graph input and "
                 "the output that is Concat(past, new) along its --dim axis), or auto (pairs "
                 "by name); the step writes only the new rows (repeatable)");
  app.add_option("--precision", o.Precision,
                 "Store the float model's weights and activations as float16 or bfloat16 "
                 "(inputs and outputs stay float32; arithmetic in float32, float16 on targets with "
                 "float16 arithmetic: --print-target)")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
  app.add_option("--quantize", o.Quantize,
                 "Quantize the float model: int8 (calibrated with --calibrate; "
                 "weights int8 per channel, activations uint8)")
      ->check(CLI::IsMember({"int8"}));
  app.add_option("--calibrate", o.Calibrate,
                 "Calibration samples of an input for --quantize: NAME=SAMPLES.npy "
                 "(shape [N] + the input's shape) or NAME=FOLDER of TensorProto .pb "
                 "files (repeatable: one per input)");
  app.add_option("--calibration-method", o.CalibrationMethod,
                 "How calibration picks each range: minmax (default), "
                 "percentile[=99.99] or entropy (KL divergence)");
  app.add_flag("--quantize-io", o.QuantizeIo,
               "With --quantize: the quantized inputs and outputs are uint8 "
               "(their scale and zero point are in the header and NAME_info()), and "
               "the convolutions and matrix products requantize in integers "
               "(fixed-point multipliers, rounding half up) on every target");
  app.add_option("--keep-float", o.KeepFloat,
                 "With --quantize: keep this node (ONNX name) in float, e.g. a layer "
                 "that mlcc check shows losing accuracy (repeatable)");
  app.add_flag("--reduce-range", o.ReduceRange,
               "With --quantize: 7-bit weights ([-63, 63]), so that ONNX Runtime on x86 "
               "without VNNI computes the realized model (-o FILE.onnx) exactly");
  app.add_option("--weight-bits", o.WeightBits,
                 "With --quantize: bits of the weights, 8 (default) or 4 (int4 per "
                 "output channel, activations 8-bit; stored two a byte in the library)");
  app.add_option("--target", o.Target,
                 "A preset (see --list-targets: host, aarch64-linux, cortex-m4, "
                 "riscv64-linux, ...) or any LLVM triple (default: host)");
  app.add_option("--cuda-arch", o.CudaArch,
                 "--target cuda: the GPU architectures of the library's code, "
                 "comma-separated (default sm_75; PTX of the last is included too)");
  app.add_flag("--no-library-dispatch", o.NoLibraryDispatch,
               "--target cuda: compile the matrix products from the kernel IR "
               "instead of calling cuBLAS");
  app.add_flag("--gpu-schedule-on-host", o.GpuScheduleOnHost,
               "Testing aid: build the program as for --target cuda (library "
               "dispatch, GPU launches) and run its kernels serially on this target");
  app.add_option("--cpu", o.Cpu, "Override the target CPU (LLVM CPU name)");
  app.add_option("--features", o.Features,
                 "Extra target features, LLVM syntax: +neon,-fp64");
  app.add_option("-O", o.OptLevel, "Optimization level 0-3 (default 3)");
  app.add_flag("--Os", o.SizeOpt, "Optimize for code size");
  app.add_option("--backend", o.Backend,
                 "How object code is made: 'llvm' (default, any target) or 'c' "
                 "(compile the generated C with the host C compiler $CC)")
      ->check(CLI::IsMember({"llvm", "c"}));
  app.add_option("--max-tensor", o.MaxTensor,
                 "The largest tensor a model may declare or compute, in BYTES "
                 "(default 4G): a larger one is refused (exit 1) before it is "
                 "allocated");
}

} // namespace mlcc

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "check")
    return mlcc::checkMain(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "cycles")
    return mlcc::cyclesMain(argc - 1, argv + 1);
  mlcc::CompileOptions o;
  CLI::App app{"mlcc: compiles an ONNX model into a static library with a C "
               "interface (no runtime, no malloc).\n\nExamples:\n"
               "  mlcc model.onnx -o libmodel.a         library + model.h\n"
               "  mlcc model.onnx -o model.c            portable C99 source + model.h\n"
               "  mlcc model.onnx --dim batch=1 -o libm.a   bind a symbolic dimension\n"
               "  mlcc model.onnx --emit graph -o -     print the optimized graph\n"
               "  mlcc check model.onnx [options]       compare every kernel's output with a "
               "reference (mlcc check --help)\n"
               "  mlcc cycles firmware.elf --target cortex-m4   a Cortex-M firmware's cycle "
               "estimate (mlcc cycles --help)\n",
               "mlcc"};
  bool list = false, listOps = false, printTarget = false;
  app.add_flag("--list-targets", list, "List the target presets and exit");
  app.add_flag("--print-target", printTarget,
               "Print what --target (with --cpu, --features) offers the kernels: vectors, "
               "registers, caches, float unit, integer multiply-accumulate forms; and exit");
  app.add_flag("--list-ops", listOps,
               "List the supported operators (and from which opset) and exit");
  app.add_option("model", o.Model, "The ONNX model file");
  app.add_option("-o,--output", o.Output,
                 "Output file; its extension picks what is written: .a "
                 "(library), .o (object), .c (C source), .cu (CUDA source, "
                 "--target cuda), .h (header only); "
                 "'-' writes text outputs to stdout");
  app.add_option("--emit", o.Emit,
                 "What to write instead of what -o's extension implies: "
                 "lib, obj, c, cuda, header, graph, kernels, plan (the target's description "
                 "and each kernel call's plan), llvm, asm, onnx (the model "
                 "after the graph passes up to --quantize: its QDQ form)")
      ->check(CLI::IsMember({"lib", "obj", "c", "cuda", "header", "graph", "kernels", "plan",
                             "llvm", "asm", "onnx"}));
  app.add_option("--name", o.Name,
                 "Prefix of every generated C symbol (default: the output "
                 "file name without 'lib' and extension)");
  mlcc::addCompileOptions(app, o);
  app.add_option("--report", o.Report,
                 "Write a JSON report: code, weight and arena bytes, undefined "
                 "symbols, every fused kernel (nodes, code, weights, operations, "
                 "live arena) and the memory plan");
  app.add_option("--report-html", o.ReportHtml,
                 "Write one self-contained HTML page: the arena over the kernel "
                 "calls, the fused graph, the per-kernel table and memory plan");
  app.add_option("--cycles", o.Cycles,
                 "The cycle estimate on a Cortex-M target (cortex-m0plus, -m4, -m7, -m33, "
                 "-m55): the firmware runs once under QEMU and each executed instruction is "
                 "priced by the core's published timings; per kernel call and in total, in "
                 "-v and --report. auto (default): with -v, --report or --report-html where "
                 "arm-none-eabi-gcc and qemu-system-arm are installed; on: always (an error "
                 "without them); off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--clock-mhz", o.ClockMHz,
                 "The clock the cycle estimate's milliseconds are at (default: the core's "
                 "reference board's: Cortex-M4 120 MHz, STM32L4R5)")
      ->check(CLI::Range(0.001, 100000.0));
  app.add_option("--wait-states", o.WaitStates,
                 "Flash wait states of the cycle estimate's second figure (default: the "
                 "reference board's at its clock)")
      ->check(CLI::Range(0, 64));
  app.add_flag("--tune", o.Tune,
               "Schedule search: measure each kernel's candidate plans (forms, register "
               "tiles) on this machine, in the whole model at its shapes, and keep the "
               "fastest (the target must be one this machine runs: host, an x86-64 level "
               "it has); with --tune-db, write what it measured there");
  app.add_option("--tune-db", o.TuneDb,
                 "A tuning database (JSON lines): without --tune, take each kernel's plan "
                 "from it (no search; entries of another target, compiler version or a "
                 "plan no longer offered are skipped, -v says so); with --tune, add to it");
  app.add_option("--tune-budget", o.TuneBudget,
                 "Limit --tune: seconds (60s) or candidates measured per kernel (8); "
                 "default: every candidate");
  app.add_option("--cache-dir", o.CacheDir,
                 "Keep each kernel's object code in this folder, and take it from there when "
                 "a later compile (this model or another, the same target and compiler "
                 "build) has the same kernel; the output is the same bytes (library "
                 "outputs; default: $MLCC_CACHE_DIR, none where unset)");
  app.add_option("--cache-max", o.CacheMax,
                 "The kernel cache's bound (default 512M): the least recently used "
                 "objects go past it");
  app.add_option("-j,--jobs", o.Jobs,
                 "Threads of code generation (default: one per core); the output does not "
                 "depend on them")
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-arena", o.MaxArena,
                 "Fail (exit 5) when the arena exceeds BYTES (k, M, G: 1024, "
                 "1024^2, 1024^3)");
  app.add_option("--max-weights", o.MaxWeights,
                 "Fail (exit 5) when the weights exceed BYTES");
  app.add_option("--max-code", o.MaxCode,
                 "Fail (exit 5) when the code exceeds BYTES (object outputs)");
  app.add_option("--progress", o.ProgressMode,
                 "auto (default): a status line on a terminal when the compile "
                 "takes over a second; always: every step as a line; never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--dump-ir", o.DumpIr,
                 "Print the graph IR after passes: after-all, after-change "
                 "or after-<pass>");
  app.add_option("--dump-ir-dir", o.DumpIrDir,
                 "Write --dump-ir output as files NNN_<pass>.txt in this folder");
  app.add_option("--dump-dot", o.DumpDot,
                 "Write the optimized graph as Graphviz (dot) to this file");
  app.add_flag("--time-passes", o.TimePasses, "Print the time of each pass");
  app.add_flag("-v,--verbose", o.Verbose,
               "Print a summary (target, code/weight/arena bytes, undefined "
               "symbols) and a line per kernel call: its nodes, code, weight "
               "and live arena bytes, operations");
  app.footer("Exit status: 0 success; 1 invalid model or I/O error; 2 bad "
             "usage; 3 the model uses something mlcc does not support; 4 an "
             "input must be known at compile time (see --freeze); 5 a "
             "--max-arena/--max-weights/--max-code budget is exceeded; 70 "
             "internal error.");
  app.set_version_flag("--version", "mlcc " + mlcc::version());

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return mlcc::parseErrorStatus(app, e);
  }

  try {
    if (list || printTarget || listOps) {
      std::fputs((list          ? mlcc::targetList()
                  : printTarget ? mlcc::targetDescription(o)
                                : mlcc::opList())
                     .c_str(),
                 stdout);
      return 0;
    }
    if (o.Model.empty() || o.Output.empty())
      throw mlcc::CompileError(mlcc::ErrorKind::Usage,
                               "need a model and -o OUTPUT (see mlcc --help)");
    mlcc::compile(o).commit();
    return 0;
  } catch (const mlcc::CompileError &e) {
    std::fprintf(stderr, "mlcc: error: %s\n", e.what());
    return mlcc::exitStatus(e.kind());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "mlcc: error: out of memory\n");
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mlcc: error: internal error: %s\n", e.what());
    return 70;
  }
}
