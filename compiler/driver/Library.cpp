//===- Library.cpp - The public compiler API: compile() and Library -------===//
//
// compile() is what the command line does before it writes files: check the
// options, resolve the target, search plans (--tune), compile the graph at
// every bounded dimension's MAX and attach the run-time extents, lower,
// check the budgets, and make the artifacts of the output kind. Library
// keeps the compiled program, so that write() can make other kinds and
// run() can run it in this process.
//
//===----------------------------------------------------------------------===//
#include "mlcc/Compiler.h"

#include "compiler/driver/BoundedDims.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/Harness.h"
#include "compiler/driver/KernelCache.h"
#include "compiler/driver/Toolchains.h"
#include "compiler/driver/Cycles.h"
#include "compiler/driver/Tune.h"
#include "compiler/kernel/Program.h"
#include "compiler/output/Header.h"
#include "compiler/output/OutputFiles.h"
#include "compiler/output/Report.h"
#include "compiler/quantizer/Quantize.h"
#include "compiler/support/Error.h"
#include "frontends/onnx/OnnxWriter.h"
#include "runtime-c/mlcc.h"
#include "targets/c/CEmitter.h"
#include "targets/cuda/CudaEmitter.h"
#include "targets/llvm/HostJit.h"
#include "targets/llvm/Targets.h"

#include <cctype>
#include <chrono>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

namespace mlcc {

struct Library::Impl {
  CompileOptions O;
  std::string Kind; ///< what compile() made: lib, obj, c, graph, onnx, ...
  llvmgen::TargetSpec Target;
  bool Cuda = false;
  std::vector<std::string> Archs; ///< --cuda-arch
  std::string Name;
  std::unique_ptr<ir::Graph> Graph;
  kir::Program Program;
  std::optional<output::ModelReport> Report;
  output::ReportContext Context;
  std::string Header;                ///< made once, when a kind needs it
  std::optional<std::string> Object; ///< the object code as one object (obj), made once
  /// The library's objects (lib), made once: the program's and the kernels'.
  std::optional<llvmgen::ProgramObjects> Objects;
  LibraryInfo Info;
  std::vector<Artifact> Artifacts;
  std::string Stdout;
  std::mutex RunLock;
  std::unique_ptr<llvmgen::HostModel> Host; ///< the JIT-linked library, on the first run()
};

namespace {

std::string extensionOf(const std::string &path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  auto dot = base.find_last_of('.');
  return dot == std::string::npos ? "" : base.substr(dot);
}

std::string emitKindFor(const CompileOptions &o) {
  if (!o.Emit.empty())
    return o.Emit;
  if (o.Output.empty()) // in memory (the API): a library
    return "lib";
  std::string ext = extensionOf(o.Output);
  if (ext == ".a")
    return "lib";
  if (ext == ".o")
    return "obj";
  if (ext == ".c")
    return "c";
  if (ext == ".cu")
    return "cuda";
  if (ext == ".h")
    return "header";
  if (ext == ".ll")
    return "llvm";
  if (ext == ".onnx")
    return "onnx";
  if (ext == ".s" || ext == ".S")
    return "asm";
  fail(ErrorKind::Usage) << "cannot tell what to write from the output name '"
                         << o.Output
                         << "': use an extension .a, .o, .c, .cu, .h, .onnx, .ll or .s, or --emit";
  return "";
}

/// The C prefix: --name, or the output's base name without "lib" and the
/// extension, made a valid C identifier.
std::string modelName(const CompileOptions &o) {
  std::string n = o.Name;
  if (n.empty()) {
    // In memory (the API), the model's file name.
    const std::string &path = o.Output.empty() ? o.Model : o.Output;
    std::string base = path.substr(path.find_last_of('/') + 1);
    auto dot = base.find('.');
    if (dot != std::string::npos)
      base = base.substr(0, dot);
    if (base.size() > 3 && base.compare(0, 3, "lib") == 0)
      base = base.substr(3);
    n = base.empty() || base == "-" ? "model" : base;
  }
  std::string s;
  for (char c : n)
    s += std::isalnum((unsigned char)c) ? c : '_';
  if (std::isdigit((unsigned char)s[0]))
    s = "m_" + s;
  if (!o.Name.empty() && s != o.Name)
    fail(ErrorKind::Usage) << "--name '" << o.Name
                           << "' is not a C identifier (try '" << s << "')";
  return s;
}

std::string dirOf(const std::string &path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? "" : path.substr(0, pos + 1);
}

/// --emit plan: the target's description, then each kernel call's plan.
std::string planText(const kir::Program &p, const std::string &description) {
  std::ostringstream os;
  if (!description.empty()) {
    std::istringstream lines(description);
    for (std::string line; std::getline(lines, line);)
      os << "# " << line << "\n";
  }
  os << "calls: " << p.Calls.size() << "\n";
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    const kir::Call &call = p.Calls[c];
    os << "  " << c << " " << p.Kernels[call.KernelIndex].Name << "  "
       << (call.Plan.empty() ? "(its own loop nest)" : call.Plan) << "  # ";
    if (call.Nodes.empty())
      os << call.Label;
    for (size_t n = 0; n < call.Nodes.size(); ++n)
      os << (n ? " + " : "") << call.Nodes[n].Name << " (" << call.Nodes[n].Op << ")";
    os << "\n";
  }
  return os.str();
}

output::ReportContext reportContext(const CompileOptions &o, const llvmgen::TargetSpec &t) {
  return {o.Model, t.Name, t.Triple, t.Cpu, o.Backend};
}


/// The kernel cache of --cache-dir or $MLCC_CACHE_DIR; null: none.
std::unique_ptr<KernelCache> kernelCache(const CompileOptions &o) {
  std::string dir = o.CacheDir;
  if (dir.empty())
    if (const char *env = std::getenv("MLCC_CACHE_DIR"))
      dir = env;
  if (dir.empty())
    return nullptr;
  int64_t max = o.CacheMax.empty() ? int64_t(512) << 20
                                   : output::parseByteSize(o.CacheMax, "--cache-max");
  return std::make_unique<KernelCache>(dir, max);
}

/// The kinds that read the kernels (not the graph's or the ONNX writer's).
bool needsProgram(const std::string &kind) { return kind != "graph" && kind != "onnx"; }

/// The header of `L`, made on first use.
const std::string &headerOf(Library::Impl &L) {
  if (L.Header.empty())
    L.Header = output::writeHeader(L.Program, L.O.Model,
                                     L.Cuda ? output::Interface::Cuda : output::Interface::Host);
  return L.Header;
}

/// Makes the files of `kind` for output `path` ("-": its text to stdout):
/// the output, and the header and companions beside it.
void emitOutputs(Library::Impl &L, const std::string &kind, const std::string &path,
                 Progress &status, std::vector<Artifact> &files, std::string &out) {
  const CompileOptions &o = L.O;
  const kir::Program &program = L.Program;
  const std::string &name = L.Name;
  bool toStdout = path == "-";
  auto emitText = [&](const std::string &text) {
    if (toStdout)
      out += text;
    else
      files.push_back({path, text});
  };
  std::string headerPath = dirOf(path) + name + ".h";
  llvmgen::CodegenOptions cg;
  cg.OptLevel = o.OptLevel;
  cg.SizeOpt = o.SizeOpt;
  cg.OnProgress = [&](const char *what, size_t done, size_t total) {
    status.step(what, done, total);
  };
  auto timed = [&](const char *what, auto fn) {
    auto start = std::chrono::steady_clock::now();
    auto result = fn();
    if (o.TimePasses)
      std::fprintf(stderr, "mlcc: pass %-22s %8.2f ms\n", what,
                   std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start).count());
    return result;
  };

  if (kind == "graph") {
    emitText(ir::printGraph(*L.Graph));
  } else if (kind == "kernels") {
    emitText(kir::printProgram(program));
  } else if (kind == "plan") {
    emitText(planText(program, L.Cuda ? "" : llvmgen::describeTarget(L.Target).describe()));
  } else if (kind == "header") {
    emitText(headerOf(L));
  } else if (kind == "cuda") {
    emitText(cudagen::emitCuda(program, name + ".h"));
    if (!toStdout) {
      files.push_back({headerPath, headerOf(L)});
      files.push_back({dirOf(path) + name + "_weights.o", cudaWeightsObject(program)});
    }
  } else if (kind == "c") {
    emitText(cgen::emitC(program, name + ".h"));
    if (!toStdout)
      files.push_back({headerPath, headerOf(L)});
  } else if (kind == "llvm" || kind == "asm") {
    emitText(timed("llvm-codegen", [&] {
      return llvmgen::compileProgram(program, L.Target, cg,
                                     kind == "llvm" ? llvmgen::OutputKind::LlvmIr
                                                    : llvmgen::OutputKind::Assembly);
    }));
  } else if (L.Cuda) { // a library
    std::string obj = timed("nvcc", [&] {
      status.step("compiling the generated CUDA with nvcc");
      return compileCuda(cudagen::emitCuda(program, name + ".h"), headerOf(L), name, L.Archs);
    });
    files.push_back({path, llvmgen::makeArchive({{name + ".o", obj},
                                                 {name + "_weights.o", cudaWeightsObject(program)}})});
    files.push_back({headerPath, headerOf(L)});
  } else if (kind == "lib" && o.Backend != "c") {
    // The kernels' objects apart: made in parallel, and kept by the cache.
    if (!L.Objects) {
      L.Objects = timed("codegen", [&] {
        std::unique_ptr<KernelCache> cache = kernelCache(o);
        llvmgen::ProgramObjects objects =
            llvmgen::compileProgramObjects(program, L.Target, cg, cache.get(), (unsigned)o.Jobs);
        if (cache)
          cache->trim();
        return objects;
      });
      if (o.TimePasses && kernelCache(o))
        std::fprintf(stderr, "mlcc: kernel cache: %zu of %zu kernels found\n",
                     L.Objects->CacheHits, L.Objects->CacheHits + L.Objects->CacheMisses);
      if (L.Report && !L.Report->HasObject)
        output::addObjectStats(*L.Report, L.Objects->Stats);
    }
    files.push_back({path, llvmgen::makeArchive(L.Objects->Members)});
    files.push_back({headerPath, headerOf(L)});
  } else if (kind == "obj" || kind == "lib") {
    if (!L.Object) {
      L.Object = timed("codegen", [&] {
        if (o.Backend == "c")
          status.step("compiling the generated C");
        return o.Backend == "c" ? compileC(cgen::emitC(program, name + ".h"), headerOf(L), name)
                                : llvmgen::compileProgram(program, L.Target, cg,
                                                          llvmgen::OutputKind::Object);
      });
      if (L.Report && !L.Report->HasObject)
        output::addObjectStats(*L.Report, llvmgen::inspectObject(*L.Object));
    }
    if (kind == "obj")
      files.push_back({path, *L.Object});
    else
      files.push_back({path, llvmgen::makeArchive({{name + ".o", *L.Object}})});
    files.push_back({headerPath, headerOf(L)});
  } else {
    fail(ErrorKind::Usage) << "cannot write --emit " << kind << " from a compiled library";
  }
}

TensorInfo tensorInfo(const kir::IoTensor &t, const std::vector<std::string> &dimNames) {
  TensorInfo i;
  i.Name = t.Name;
  i.CName = t.CName;
  i.Type = dtypeOnnxName(t.Type);
  i.Shape = t.Dims;
  i.Extents.assign(t.Dims.size(), "");
  for (const AxisExtent &a : t.Bounded)
    i.Extents[(size_t)a.Axis] = extentText(a, dimNames);
  i.Scale = t.Scale;
  i.ZeroPoint = t.ZeroPoint;
  return i;
}

/// The figures of info() from the program and the report.
void fillInfo(Library::Impl &L) {
  LibraryInfo &i = L.Info;
  const kir::Program &p = L.Program;
  i.Name = L.Name;
  i.Target = L.Target.Name;
  i.Triple = L.Target.Triple;
  i.Cpu = L.Target.Cpu;
  std::vector<std::string> dimNames;
  for (const kir::RunTimeDim &d : p.Dims) {
    dimNames.push_back(d.Name);
    i.Dims.push_back({d.Name, d.Min, d.Max});
  }
  for (const kir::IoTensor &t : p.Inputs)
    i.Inputs.push_back(tensorInfo(t, dimNames));
  for (const kir::IoTensor &t : p.Outputs)
    i.Outputs.push_back(tensorInfo(t, dimNames));
  i.KernelCalls = (int64_t)p.Calls.size();
  // As the header states them.
  i.ArenaBytes = p.ArenaSize;
  i.ArenaAlign = p.ArenaAlign;
  i.WeightBytes = p.weightBytes();
  if (L.Report && L.Report->HasObject)
    i.CodeBytes = L.Report->Object.CodeBytes;
}

} // namespace

Library::Library(std::shared_ptr<Impl> impl) : I(std::move(impl)) {}

const LibraryInfo &Library::info() const { return I->Info; }

std::string Library::reportJson() const {
  if (!I->Report)
    fail(ErrorKind::Usage) << "--emit " << I->Kind << " stops before the kernels: no report";
  return output::reportJson(*I->Report, I->Context);
}

std::string Library::reportText() const {
  if (!I->Report)
    fail(ErrorKind::Usage) << "--emit " << I->Kind << " stops before the kernels: no report";
  return output::reportText(*I->Report, I->Context);
}

const std::vector<Artifact> &Library::artifacts() const { return I->Artifacts; }

const std::string &Library::stdoutText() const { return I->Stdout; }

void writeFiles(const std::vector<Artifact> &files) {
  output::OutputFiles out;
  for (const Artifact &a : files)
    out.write(a.Path, a.Bytes);
  out.commit();
}

void checkWritable(const std::string &path) { output::OutputFiles::checkWritable(path); }

void Library::commit() const {
  std::cout << I->Stdout;
  writeFiles(I->Artifacts);
}

void Library::write(const std::string &path) const {
  CompileOptions o = I->O;
  o.Output = path;
  o.Emit.clear();
  std::string kind = emitKindFor(o);
  if (path == "-" || path.empty())
    fail(ErrorKind::Usage) << "write() needs a file name";
  if (kind == "onnx" || !needsProgram(I->Kind))
    fail(ErrorKind::Usage) << "cannot write " << path << " from a compile that stopped at --emit "
                           << I->Kind << (kind == "onnx" ? " (compile with Emit \"onnx\")" : "");
  if (I->Cuda != (kind == "cuda") && (kind == "cuda" || kind == "obj" || kind == "llvm" ||
                                      kind == "asm" || kind == "c"))
    fail(ErrorKind::Usage) << (I->Cuda ? "a --target cuda library writes .a, .cu, .h, not "
                                       : "CUDA source needs --target cuda, not ")
                           << path;
  output::OutputFiles::checkWritable(path);
  Progress quiet(Progress::Mode::Never);
  std::vector<Artifact> files;
  std::string ignored;
  std::lock_guard<std::mutex> lock(I->RunLock);
  emitOutputs(*I, kind, path, quiet, files, ignored);
  I->Info = LibraryInfo{};
  fillInfo(*I); // the code figures, once there is an object
  writeFiles(files);
}

bool Library::runsHere() const {
  return !I->Cuda && needsProgram(I->Kind) && !I->O.GpuScheduleOnHost &&
         runsInProcess(I->Target);
}

void Library::run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs,
                  const std::map<std::string, int64_t> &dims) const {
  const kir::Program &p = I->Program;
  if (!runsHere())
    fail(ErrorKind::Usage) << "run(): the library for --target " << I->Target.Name
                           << " does not run in this process (the host, or an x86-64 level "
                              "this CPU has)";
  if (inputs.size() != p.Inputs.size() || outputs.size() != p.Outputs.size())
    fail(ErrorKind::Usage) << "run(): the model takes " << p.Inputs.size() << " inputs and "
                           << p.Outputs.size() << " outputs, not " << inputs.size() << " and "
                           << outputs.size();
  std::vector<int64_t> values;
  for (const kir::RunTimeDim &d : p.Dims) {
    auto it = dims.find(d.Name);
    if (it == dims.end())
      fail(ErrorKind::Usage) << "run(): the run-time dimension '" << d.Name << "' ("
                             << d.Min << ".." << d.Max << ") is not given";
    values.push_back(it->second);
  }
  for (auto &[name, v] : dims) {
    bool known = false;
    for (const kir::RunTimeDim &d : p.Dims)
      known = known || d.Name == name;
    if (!known)
      fail(ErrorKind::Usage) << "run(): the model has no run-time dimension '" << name << "'";
  }
  std::vector<const void *> args = inputs;
  for (const int64_t &v : values)
    args.push_back(&v);
  std::lock_guard<std::mutex> lock(I->RunLock);
  if (!I->Host) {
    llvmgen::CodegenOptions cg;
    cg.OptLevel = I->O.OptLevel;
    cg.SizeOpt = I->O.SizeOpt;
    I->Host = std::make_unique<llvmgen::HostModel>(p, I->Target, cg);
  }
  int32_t rc = I->Host->tryRun(args, outputs);
  if (rc != MLCC_OK)
    fail(rc == MLCC_ERR_DIM_RANGE ? ErrorKind::Usage : ErrorKind::Internal)
        << "run(): " << p.Name << "_run returned " << mlcc_status_string((mlcc_status)rc);
}

namespace {

/// `t`'s shape with its bounded axes at `dims` (each dimension's MAX where
/// `dims` lacks it).
std::vector<int64_t> shapeAt(const kir::Program &p, const kir::IoTensor &t,
                             const std::map<std::string, int64_t> &dims) {
  std::vector<int64_t> shape = t.Dims;
  for (const AxisExtent &a : t.Bounded) {
    int64_t e = a.Offset;
    for (size_t k = 0; k < a.Coeffs.size() && k < p.Dims.size(); ++k) {
      auto it = dims.find(p.Dims[k].Name);
      e += a.Coeffs[k] * (it == dims.end() ? p.Dims[k].Max : it->second);
    }
    shape[(size_t)a.Axis] = e;
  }
  return shape;
}

} // namespace

std::map<std::string, int64_t>
Library::dimsFromShapes(const std::vector<std::vector<int64_t>> &shapes) const {
  const kir::Program &p = I->Program;
  std::map<std::string, int64_t> dims;
  for (size_t i = 0; i < p.Inputs.size() && i < shapes.size(); ++i) {
    const kir::IoTensor &t = p.Inputs[i];
    if (shapes[i].size() != t.Dims.size())
      fail(ErrorKind::Usage) << "input '" << t.Name << "' has rank " << t.Dims.size() << ", not "
                             << shapes[i].size();
    for (const AxisExtent &a : t.Bounded) {
      size_t dim = a.Coeffs.size(), used = 0;
      for (size_t k = 0; k < a.Coeffs.size(); ++k)
        if (a.Coeffs[k] != 0)
          dim = k, ++used;
      int64_t extent = shapes[i][(size_t)a.Axis];
      if (used != 1 || dims.count(p.Dims[dim].Name))
        continue;
      int64_t c = a.Coeffs[dim], v = (extent - a.Offset) / c;
      if ((extent - a.Offset) % c != 0 || v < p.Dims[dim].Min || v > p.Dims[dim].Max)
        fail(ErrorKind::Usage) << "input '" << t.Name << "' axis " << a.Axis << " is " << extent
                               << ": no value of " << p.Dims[dim].Name << " in "
                               << p.Dims[dim].Min << ".." << p.Dims[dim].Max << " gives it";
      dims[p.Dims[dim].Name] = v;
    }
  }
  return dims;
}

std::vector<int64_t> Library::inputShape(size_t index,
                                         const std::map<std::string, int64_t> &dims) const {
  MLCC_CHECK(index < I->Program.Inputs.size(), "input " << index << " out of range");
  return shapeAt(I->Program, I->Program.Inputs[index], dims);
}

std::vector<int64_t> Library::outputShape(size_t index,
                                          const std::map<std::string, int64_t> &dims) const {
  MLCC_CHECK(index < I->Program.Outputs.size(), "output " << index << " out of range");
  return shapeAt(I->Program, I->Program.Outputs[index], dims);
}

Library compile(const CompileOptions &o) {
  auto L = std::make_shared<Library::Impl>();
  L->O = o;
  std::string kind = emitKindFor(o);
  L->Kind = kind;
  bool toStdout = o.Output == "-";
  bool inMemory = o.Output.empty();
  if (toStdout && kind != "graph" && kind != "kernels" && kind != "plan" && kind != "c" &&
      kind != "cuda" &&
      kind != "header" && kind != "llvm" && kind != "asm")
    fail(ErrorKind::Usage) << "--emit " << kind << " cannot be written to stdout";
  if (!toStdout && !inMemory)
    output::OutputFiles::checkWritable(o.Output);
  if (!o.Report.empty())
    output::OutputFiles::checkWritable(o.Report);
  if (!o.DumpDot.empty())
    output::OutputFiles::checkWritable(o.DumpDot);
  bool cuda = o.Target == "cuda";
  L->Cuda = cuda;
  if (cuda && kind != "lib" && kind != "cuda" && kind != "header" && kind != "kernels" &&
      kind != "plan" &&
      kind != "graph")
    fail(ErrorKind::Usage) << "--target cuda writes a library (.a), CUDA source (.cu), the "
                              "header, the kernels or the graph, not --emit " << kind;
  if (!cuda && kind == "cuda")
    fail(ErrorKind::Usage) << "CUDA source (.cu, --emit cuda) needs --target cuda";
  if (!cuda && (!o.CudaArch.empty() || o.NoLibraryDispatch) && !o.GpuScheduleOnHost)
    fail(ErrorKind::Usage) << "--cuda-arch and --no-library-dispatch need --target cuda";
  if (cuda && o.GpuScheduleOnHost)
    fail(ErrorKind::Usage) << "--gpu-schedule-on-host builds for a CPU target, not cuda";
  std::vector<std::string> &archs = L->Archs;
  if (cuda)
    archs = cudaArchs(o.CudaArch);
  if (o.Backend == "c" && o.Target != "host")
    fail(ErrorKind::Usage) << "--backend c builds for the host only; use the "
                              "default LLVM backend for --target " << o.Target;
  if (o.OptLevel < 0 || o.OptLevel > 3)
    fail(ErrorKind::Usage) << "-O" << o.OptLevel << " is not an optimization level (0-3)";
  if (o.Jobs < 0 || o.Jobs > 1024)
    fail(ErrorKind::Usage) << "--jobs " << o.Jobs << " is not a thread count (0: one per core, "
                           << "up to 1024)";
  if (!o.CacheMax.empty())
    output::parseByteSize(o.CacheMax, "--cache-max"); // refused before the compile's work
  if (!o.ReportHtml.empty())
    output::OutputFiles::checkWritable(o.ReportHtml);
  applyMaxTensor(o);
  output::Budgets budgets;
  if (!o.MaxArena.empty())
    budgets.MaxArena = output::parseByteSize(o.MaxArena, "--max-arena");
  if (!o.MaxWeights.empty())
    budgets.MaxWeights = output::parseByteSize(o.MaxWeights, "--max-weights");
  if (!o.MaxCode.empty()) {
    budgets.MaxCode = output::parseByteSize(o.MaxCode, "--max-code");
    if (kind != "lib" && kind != "obj")
      fail(ErrorKind::Usage) << "--max-code needs object code (-o FILE.a or FILE.o); with --emit "
                             << kind << " the code size is not known";
  }
  if ((kind == "graph" || kind == "onnx") &&
      (!o.Report.empty() || !o.ReportHtml.empty() || budgets.MaxArena >= 0 ||
       budgets.MaxWeights >= 0))
    fail(ErrorKind::Usage) << "--emit " << kind
                           << " stops before the kernels: no report or budget";
  Progress status(o.ProgressMode == "always"  ? Progress::Mode::Always
                  : o.ProgressMode == "never" ? Progress::Mode::Never
                                              : Progress::Mode::Auto);
  llvmgen::TargetSpec &target = L->Target;
  if (cuda) {
    if (!o.Cpu.empty() || !o.Features.empty())
      fail(ErrorKind::Usage) << "--cpu and --features do not apply to --target cuda "
                                "(use --cuda-arch)";
    target = llvmgen::cudaTarget(archs);
  } else {
    target = llvmgen::resolveTarget(o.Target, o.Cpu, o.Features);
  }

  (void)wantsCycleEstimate(o, target, kind); // --cycles on's usage errors, before the work
  L->Name = modelName(o);
  const std::string &name = L->Name;
  PipelineOptions po;
  po.Name = name;
  po.DumpIr = o.DumpIr;
  po.DumpIrDir = o.DumpIrDir;
  po.TimePasses = o.TimePasses;
  po.GraphOnly = kind == "graph";
  po.StopAfterQuantize = kind == "onnx";
  po.Status = &status;
  PlanTuner tuner(o, target, status);
  if (tuner.active() && (kind == "graph" || kind == "onnx"))
    fail(ErrorKind::Usage) << "--emit " << kind
                           << " stops before the kernels are planned: no --tune or --tune-db";
  if (!tuner.dbPath().empty())
    output::OutputFiles::checkWritable(tuner.dbPath());
  // Bounded dimensions: the graph at every dimension's MAX, and which axes
  // follow them.
  const std::vector<ir::BoundedDim> bounded = boundedDims(o);
  if (!bounded.empty() && (cuda || kind == "onnx" || tuner.active()))
    fail(ErrorKind::Unsupported)
        << flagText(bounded[0]) << ": "
        << (cuda              ? "--target cuda does not take bounded dimensions yet"
            : kind == "onnx" ? "--emit onnx writes a graph of fixed shapes"
                             : "--tune and --tune-db measure at fixed shapes")
        << "; use --dim " << bounded[0].Name << "=VALUE";
  if (cuda && !o.InputRanges.empty())
    fail(ErrorKind::Unsupported) << "--input-range " << o.InputRanges[0]
                                 << ": --target cuda does not take input ranges yet (its "
                                    "inputs lie in device memory, where the run cannot check them)";
  if (!bounded.empty() && !o.Quantize.empty())
    fail(ErrorKind::Unsupported) << flagText(bounded[0])
                                 << ": bounded dimensions do not take --quantize yet (its "
                                    "calibration samples have one shape)";
  tuner.search(po);
  po.ChoosePlan = tuner.chooser();
  CompiledModel compiled = compileWithDims(o, target, po, bounded);
  L->Graph = std::move(compiled.Graph);
  L->Program = std::move(compiled.Program);
  std::unique_ptr<ir::Graph> &graph = L->Graph;
  kir::Program &program = L->Program;
  // Arena and weights are known now: fail before the code generation.
  std::optional<output::ModelReport> &report = L->Report;
  if (kind == "onnx") {
    // The model after the graph passes up to quantization, as ONNX.
    if (!o.Quantize.empty() && graph->Opsets.count("") && graph->Opsets.at("") < 13)
      fail(ErrorKind::Unsupported) << "--emit onnx: the model imports ONNX opset "
                                   << graph->Opsets.at("")
                                   << "; its quantized form needs opset 13 or later "
                                      "(per-channel DequantizeLinear)";
    L->Artifacts.push_back({o.Output, onnx::writeModel(*graph)});
    status.finish();
    return Library(L);
  }
  if (kind != "graph") {
    report = output::buildReport(program);
    output::checkBudgets(*report, budgets);
  }

  std::vector<Artifact> &out = L->Artifacts;
  if (!o.DumpDot.empty())
    out.push_back({o.DumpDot, ir::printDot(*graph)});
  if (kind != "graph" && kind != "kernels" && kind != "plan")
    headerOf(*L);
  if (!inMemory) {
    emitOutputs(*L, kind, o.Output, status, out, L->Stdout);
  } else if (kind == "obj" || kind == "lib") { // the object only: write() names the files
    std::vector<Artifact> unnamed;
    emitOutputs(*L, kind, "", status, unnamed, L->Stdout);
  }
  status.finish();
  if (kind != "graph") {
    output::ModelReport &r = *report;
    output::ReportContext &ctx = L->Context;
    ctx = reportContext(o, target);
    ctx.FloatNodes = quantizer::floatFallbacks(*graph);
    tuner.annotate(r, o.Verbose);
    if ((L->Object || L->Objects) && wantsCycleEstimate(o, target, kind)) {
      std::vector<std::string> kernelNames;
      for (const kir::Kernel &k : program.Kernels)
        kernelNames.push_back(k.Name);
      if (L->Objects)
        estimateLibraryCycles(o, program, target, L->Objects->Members,
                              L->Objects->KernelSymbols, headerOf(*L), r);
      else
        estimateLibraryCycles(o, program, target, {{L->Name + ".o", *L->Object}}, kernelNames,
                              headerOf(*L), r);
    }
    if (o.Verbose)
      std::fputs(output::reportText(r, ctx).c_str(), stderr);
    output::checkBudgets(r, budgets);
    if (!o.Report.empty())
      out.push_back({o.Report, output::reportJson(r, ctx)});
    if (!o.ReportHtml.empty())
      out.push_back({o.ReportHtml, output::reportHtml(r, ctx)});
  }
  if (!tuner.dbPath().empty())
    out.push_back({tuner.dbPath(), tuner.dbText()});
  fillInfo(*L);
  return Library(L);
}


} // namespace mlcc
