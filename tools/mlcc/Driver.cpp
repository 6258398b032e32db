#include "tools/mlcc/Driver.h"

#include "compiler/kernel/Program.h"
#include "compiler/ops/OpRegistry.h"
#include "compiler/output/Header.h"
#include "compiler/output/OutputFiles.h"
#include "compiler/output/Report.h"
#include "tools/mlcc/BoundedDims.h"
#include "tools/mlcc/Tune.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/quantizer/Quantize.h"
#include "compiler/quantizer/Samples.h"
#include "compiler/support/Error.h"
#include "compiler/support/Files.h"
#include "compiler/support/Process.h"
#include "frontends/onnx/OnnxLoader.h"
#include "frontends/onnx/OnnxWriter.h"
#include "targets/c/CEmitter.h"
#include "targets/cuda/CudaEmitter.h"
#include "targets/llvm/HostJit.h"
#include "targets/llvm/Targets.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace mlcc {

namespace {

std::string extensionOf(const std::string &path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  auto dot = base.find_last_of('.');
  return dot == std::string::npos ? "" : base.substr(dot);
}

std::string emitKindFor(const DriverOptions &o) {
  if (!o.Emit.empty())
    return o.Emit;
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
std::string modelName(const DriverOptions &o) {
  std::string n = o.Name;
  if (n.empty()) {
    std::string base = o.Output.substr(o.Output.find_last_of('/') + 1);
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

std::pair<std::string, std::string> splitAssignment(const std::string &arg,
                                                    const char *flag) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    fail(ErrorKind::Usage) << flag << " expects NAME=VALUE, got '" << arg << "'";
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

onnx::LoadOptions loadOptions(const DriverOptions &o) {
  onnx::LoadOptions lo;
  for (auto &d : o.Dims) {
    auto [name, value] = splitAssignment(d, "--dim");
    if (value.find("..") != std::string::npos) // a range: usage errors, else this one
      for (const ir::BoundedDim &b : boundedDims(o))
        if (b.Name == name)
          failCheckRange(b);
    char *end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (*end || end == value.c_str() || v < 0)
      fail(ErrorKind::Usage) << "--dim " << name << ": '" << value
                             << "' is not a non-negative integer";
    lo.Dims[name] = v;
  }
  for (auto &a : o.Shapes) {
    auto [name, text] = splitAssignment(a, "--shape");
    Shape shape;
    size_t at = 0;
    while (true) {
      size_t x = text.find('x', at);
      std::string dim = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
      char *end = nullptr;
      long long v = std::strtoll(dim.c_str(), &end, 10);
      if (dim.empty() || *end || v < 0)
        fail(ErrorKind::Usage) << "--shape " << name << ": '" << text
                               << "' is not a shape D0xD1x... of non-negative integers";
      shape.push_back(v);
      if (x == std::string::npos)
        break;
      at = x + 1;
    }
    if (!lo.Shapes.emplace(name, shape).second)
      fail(ErrorKind::Usage) << "--shape " << name << " is given twice";
  }
  for (auto &f : o.Freeze) {
    auto [name, file] = splitAssignment(f, "--freeze");
    lo.Frozen[name] = onnx::loadTensorFile(file);
  }
  for (auto &r : o.InputRanges) {
    auto [name, text] = splitAssignment(r, "--input-range");
    size_t dots = text.find("..");
    auto number = [&](const std::string &s) {
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end || errno)
        fail(ErrorKind::Usage) << "--input-range " << name << "=" << text
                               << ": expected a range MIN..MAX of integers";
      return (int64_t)v;
    };
    if (dots == std::string::npos)
      number("");
    int64_t min = number(text.substr(0, dots)), max = number(text.substr(dots + 2));
    if (min > max)
      fail(ErrorKind::Usage) << "--input-range " << name << "=" << text
                             << ": the range is empty (MIN " << min << " is greater than MAX "
                             << max << ")";
    if (!lo.Ranges.emplace(name, std::make_pair(min, max)).second)
      fail(ErrorKind::Usage) << "--input-range " << name << " is given twice";
  }
  return lo;
}

std::string dirOf(const std::string &path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? "" : path.substr(0, pos + 1);
}

/// Compiles the generated C with the host compiler; returns the object.
std::string compileC(const std::string &source, const std::string &header,
                     const std::string &name) {
  TempDir tmp;
  tmp.write(name + ".h", header);
  tmp.write(name + ".c", source);
  const char *cc = std::getenv("CC");
  std::string compiler = cc && *cc ? cc : "cc";
  std::vector<std::string> cmd = {compiler, "-std=c99", "-O2", "-fno-strict-aliasing",
                                  "-fPIC", "-c", name + ".c", "-o", name + ".o"};
  // $CFLAGS follows the defaults (e.g. -fsanitize=address,undefined).
  if (const char *flags = std::getenv("CFLAGS")) {
    std::istringstream words(flags);
    for (std::string w; words >> w;)
      cmd.insert(cmd.end() - 5, w);
  }
  std::string log;
  int rc = runProcess(cmd, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: the C compiler '" << compiler
                              << "' failed on the generated code (exit " << rc
                              << "): " << log.substr(0, 2000);
  return readFile(tmp.Path + "/" + name + ".o", "compiled object");
}

/// nvcc: $CUDA_PATH/bin/nvcc, /usr/local/cuda/bin/nvcc, or the first on
/// PATH; empty when there is none.
std::string findNvcc() {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (const char *cp = std::getenv("CUDA_PATH"); cp && *cp)
    candidates.push_back(std::string(cp) + "/bin/nvcc");
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  if (const char *path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty())
        candidates.push_back(d + "/nvcc");
  }
  for (auto &c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && access(c.c_str(), X_OK) == 0)
      return c;
  }
  return "";
}

/// The --cuda-arch list: sm_NN names (default sm_75).
std::vector<std::string> cudaArchs(const std::string &list) {
  std::vector<std::string> archs;
  std::istringstream words(list.empty() ? "sm_75" : list);
  for (std::string a; std::getline(words, a, ',');) {
    bool ok = a.size() > 3 && a.compare(0, 3, "sm_") == 0;
    for (size_t i = 3; ok && i < a.size(); ++i)
      ok = std::isdigit((unsigned char)a[i]) || (i + 1 == a.size() && (a[i] == 'a' || a[i] == 'f'));
    if (!ok)
      fail(ErrorKind::Usage) << "--cuda-arch: '" << a << "' is not an architecture like sm_80";
    archs.push_back(a);
  }
  if (archs.empty())
    fail(ErrorKind::Usage) << "--cuda-arch: no architecture given";
  return archs;
}

/// The CUDA target's weights image as a host object (NAME_weights.o), so
/// that the weights never pass through nvcc as source text.
std::string cudaWeightsObject(const kir::Program &p) {
  return llvmgen::compileData(cudagen::weightsSymbol(p), cudagen::weightsImage(p),
                              output::kCudaWeightsAlign, llvmgen::resolveTarget("host", "", ""));
}

/// Compiles the generated CUDA with nvcc; returns the object (device code
/// for every architecture, and the last one's PTX, in a fat binary).
std::string compileCuda(const std::string &source, const std::string &header,
                        const std::string &name, const std::vector<std::string> &archs) {
  std::string nvcc = findNvcc();
  if (nvcc.empty())
    fail(ErrorKind::Usage) << "--target cuda needs the CUDA toolkit's nvcc to build a library "
                              "(not found in $CUDA_PATH/bin, /usr/local/cuda/bin or PATH); "
                              "write the source instead with -o " << name << ".cu";
  TempDir tmp;
  tmp.write(name + ".h", header);
  tmp.write(name + ".cu", source);
  std::vector<std::string> cmd = {nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-c",
                                  name + ".cu", "-o", name + ".o"};
  for (size_t i = 0; i < archs.size(); ++i) {
    std::string num = archs[i].substr(3);
    cmd.push_back("-gencode");
    cmd.push_back("arch=compute_" + num + ",code=" + archs[i]);
    if (i + 1 == archs.size()) {
      cmd.push_back("-gencode");
      cmd.push_back("arch=compute_" + num + ",code=compute_" + num);
    }
  }
  std::string log;
  int rc = runProcess(cmd, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: nvcc (" << nvcc
                              << ") failed on the generated CUDA (exit " << rc
                              << "): " << log.substr(0, 2000);
  return readFile(tmp.Path + "/" + name + ".o", "compiled object");
}

/// The "quantize" pass: annotate `g`, calibrate on the samples with the
/// float model compiled for the host (a second copy of the model, with the
/// observed tensors as extra outputs, run in this process), realize.
void quantizeGraph(ir::Graph &g, const DriverOptions &o, const onnx::LoadOptions &lo,
                   const std::vector<std::vector<uint8_t>> &samples, size_t numSamples,
                   const quantizer::QuantizeOptions &qo) {
  quantizer::Annotation a = quantizer::annotate(g, qo.KeepFloat);
  std::unique_ptr<ir::Graph> cal = onnx::loadModel(o.Model, lo);
  PipelineOptions cpo;
  cpo.Name = "mlcc_calibration";
  cpo.Schedule = llvmgen::describeTarget(llvmgen::resolveTarget("host", "", ""));
  std::vector<size_t> where; // observed tensor -> output index
  cpo.Quantize = [&](ir::Graph &x) {
    for (const std::string &name : a.Observed) {
      ir::Value *v = x.findValue(name);
      MLCC_CHECK(v, "calibration: tensor '" << name << "' is not in the model's copy");
      auto it = std::find(x.Outputs.begin(), x.Outputs.end(), v);
      where.push_back((size_t)(it - x.Outputs.begin()));
      if (it == x.Outputs.end())
        x.Outputs.push_back(v);
    }
  };
  kir::Program p = runPipeline(*cal, cpo);
  llvmgen::HostModel model(p);
  std::vector<std::vector<uint8_t>> outs;
  std::vector<void *> outPtrs;
  for (const ir::Value *v : cal->Outputs)
    outs.emplace_back((size_t)v->Type.numel() * dtypeSize(v->Type.Type) + 1);
  for (auto &b : outs)
    outPtrs.push_back(b.data());
  std::vector<size_t> sampleBytes;
  for (const ir::Value *v : cal->Inputs)
    sampleBytes.push_back((size_t)v->Type.numel() * dtypeSize(v->Type.Type));
  MLCC_CHECK(sampleBytes.size() == samples.size(), "calibration inputs do not match");
  quantizer::SampleRunner run = [&](size_t s, const std::function<void(size_t, const float *,
                                                                   size_t)> &sink) {
    std::vector<const void *> ins;
    for (size_t i = 0; i < samples.size(); ++i)
      ins.push_back(samples[i].data() + s * sampleBytes[i]);
    model.run(ins, outPtrs);
    for (size_t k = 0; k < where.size(); ++k)
      sink(k, reinterpret_cast<const float *>(outs[where[k]].data()),
           (size_t)cal->Outputs[where[k]]->Type.numel());
  };
  std::map<std::string, quantizer::Range> ranges = quantizer::calibrate(a, numSamples, run, qo);
  quantizer::realize(g, a, ranges, qo);
}

} // namespace

int exitStatus(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::Usage: return 2;
  case ErrorKind::Unsupported: return 3;
  case ErrorKind::DataDependent: return 4;
  case ErrorKind::OverBudget: return 5;
  case ErrorKind::Internal: return 70;
  default: return 1;
  }
}

std::unique_ptr<ir::Graph> loadGraph(const DriverOptions &o) {
  return onnx::loadModel(o.Model, loadOptions(o));
}

/// The pipeline options `target` decides: its description for the
/// schedules, the GPU schedule and library dispatch.
static void setTargetOptions(PipelineOptions &po, const DriverOptions &o,
                             const llvmgen::TargetSpec &target) {
  bool cuda = target.Name == "cuda";
  if (!cuda)
    po.Schedule = llvmgen::describeTarget(target);
  po.Gpu = cuda || o.GpuScheduleOnHost;
  po.LibraryDispatch = !o.NoLibraryDispatch;
}

CompiledModel compileModel(const DriverOptions &o, const llvmgen::TargetSpec &target,
                           PipelineOptions po) {
  onnx::LoadOptions lo = loadOptions(o);
  CompiledModel m;
  m.Graph = onnx::loadModel(o.Model, lo);
  ir::Graph *graph = m.Graph.get();
  setTargetOptions(po, o, target);
  std::vector<std::vector<uint8_t>> samples;
  size_t numSamples = 0;
  quantizer::QuantizeOptions qo;
  if (!o.Quantize.empty()) {
    qo = quantizer::parseCalibrationMethod(o.CalibrationMethod.empty() ? "minmax"
                                                                   : o.CalibrationMethod);
    if (o.Calibrate.empty())
      fail(ErrorKind::Usage) << "--quantize int8 needs calibration samples: --calibrate "
                                "INPUT=SAMPLES.npy for each input";
    samples = quantizer::loadSamples(*graph, o.Calibrate, numSamples);
    po.Quantize = [&](ir::Graph &g) { quantizeGraph(g, o, lo, samples, numSamples, qo); };
    qo.QuantizeIo = o.QuantizeIo;
    po.IntegerRequant = o.QuantizeIo; // no float instruction where none is needed
    qo.WeightMax = o.ReduceRange ? 63 : 127;
    qo.KeepFloat.insert(o.KeepFloat.begin(), o.KeepFloat.end());
  } else if (!o.Calibrate.empty() || !o.CalibrationMethod.empty() || o.QuantizeIo ||
             o.ReduceRange || !o.KeepFloat.empty()) {
    fail(ErrorKind::Usage) << "--calibrate, --calibration-method, --quantize-io, "
                              "--reduce-range and --keep-float need --quantize int8";
  }
  m.Program = runPipeline(*graph, po);
  return m;
}

namespace {

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

output::ReportContext reportContext(const DriverOptions &o, const llvmgen::TargetSpec &t) {
  return {o.Model, t.Name, t.Triple, t.Cpu, o.Backend};
}

} // namespace

void listTargets() {
  std::printf("%-16s %-32s %-14s %s\n", "TARGET", "TRIPLE", "CPU", "DESCRIPTION");
  for (auto &t : llvmgen::targetPresets())
    std::printf("%-16s %-32s %-14s %s\n", t.Name.c_str(), t.Triple.c_str(),
                t.Name == "host" ? "(this CPU)" : t.Cpu.c_str(), t.Description.c_str());
  std::printf("%-16s %-32s %-14s %s\n", "cuda", "(CUDA C++ through nvcc)", "--cuda-arch",
              "NVIDIA GPUs sm_75 and newer: CUDA source per kernel, cuBLAS products");
  std::printf("\nAny other LLVM triple is accepted too (normalized), with --cpu and "
              "--features.\n");
}

void printTarget(const DriverOptions &o) {
  if (o.Target == "cuda")
    fail(ErrorKind::Usage) << "--print-target describes CPU targets; --target cuda takes "
                              "--cuda-arch";
  std::fputs(llvmgen::describeTarget(llvmgen::resolveTarget(o.Target, o.Cpu, o.Features))
                 .describe()
                 .c_str(),
             stdout);
}

void listOps() {
  std::map<std::string, std::vector<const ops::OpSchema *>> byOp;
  for (const ops::OpSchema *s : ops::OpRegistry::instance().all())
    if (s->Domain != "mlcc.internal" && s->Domain != "mlcc") // not the ops passes create
      byOp[(s->Domain.empty() ? "" : s->Domain + ".") + s->Name].push_back(s);
  for (auto &[name, versions] : byOp) {
    std::string since;
    for (auto *s : versions)
      since += (since.empty() ? "" : ", ") + std::to_string(s->SinceVersion);
    std::printf("%-32s opset %s+  %s\n", name.c_str(), since.c_str(),
                ops::fusionClassName(versions.back()->Fusion));
  }
  std::printf("\n%zu operators\n", byOp.size());
}

void runDriver(const DriverOptions &o) {
  std::string kind = emitKindFor(o);
  bool toStdout = o.Output == "-";
  if (toStdout && kind != "graph" && kind != "kernels" && kind != "plan" && kind != "c" &&
      kind != "cuda" &&
      kind != "header" && kind != "llvm" && kind != "asm")
    fail(ErrorKind::Usage) << "--emit " << kind << " cannot be written to stdout";
  if (!toStdout)
    output::OutputFiles::checkWritable(o.Output);
  if (!o.Report.empty())
    output::OutputFiles::checkWritable(o.Report);
  if (!o.DumpDot.empty())
    output::OutputFiles::checkWritable(o.DumpDot);
  bool cuda = o.Target == "cuda";
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
  std::vector<std::string> archs;
  if (cuda)
    archs = cudaArchs(o.CudaArch);
  if (o.Backend == "c" && o.Target != "host")
    fail(ErrorKind::Usage) << "--backend c builds for the host only; use the "
                              "default LLVM backend for --target " << o.Target;
  if (o.OptLevel < 0 || o.OptLevel > 3)
    fail(ErrorKind::Usage) << "-O" << o.OptLevel << " is not an optimization level (0-3)";
  if (!o.ReportHtml.empty())
    output::OutputFiles::checkWritable(o.ReportHtml);
  if (!o.MaxTensor.empty())
    setMaxTensorBytes(output::parseByteSize(o.MaxTensor, "--max-tensor"));
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
  llvmgen::TargetSpec target;
  if (cuda) {
    if (!o.Cpu.empty() || !o.Features.empty())
      fail(ErrorKind::Usage) << "--cpu and --features do not apply to --target cuda "
                                "(use --cuda-arch)";
    target.Name = "cuda";
    target.Triple = "nvptx64-nvidia-cuda";
    for (auto &a : archs)
      target.Cpu += (target.Cpu.empty() ? "" : ",") + a;
  } else {
    target = llvmgen::resolveTarget(o.Target, o.Cpu, o.Features);
  }

  std::string name = modelName(o);
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
  std::vector<int64_t> maxes;
  for (const ir::BoundedDim &d : bounded)
    maxes.push_back(d.Max);
  // Bounded dimensions: the graph passes at every dimension's MAX, the
  // axes that follow the dimensions found, then the kernels, which run to
  // the extents the caller gives.
  PipelineOptions graphPo = po;
  graphPo.GraphOnly = po.GraphOnly || !bounded.empty();
  CompiledModel compiled = compileModel(atValues(o, bounded, maxes), target, graphPo);
  // Loops and Scans whose number of iterations follows the dimensions run
  // to the count the caller's dimensions give.
  while (!bounded.empty() && addTripRules(o, target, graphPo, *compiled.Graph, bounded))
    compiled = compileModel(atValues(o, bounded, maxes), target, graphPo);
  po.TripRules = graphPo.TripRules;
  if (!bounded.empty()) {
    attachBoundedExtents(o, target, po, *compiled.Graph, bounded);
    if (!po.GraphOnly) {
      setTargetOptions(po, o, target);
      compiled.Program = lowerGraph(*compiled.Graph, po);
    }
  }
  std::unique_ptr<ir::Graph> &graph = compiled.Graph;
  kir::Program &program = compiled.Program;
  // Arena and weights are known now: fail before the code generation.
  std::optional<output::ModelReport> report;
  if (kind == "onnx") {
    // The model after the graph passes up to quantization, as ONNX.
    if (!o.Quantize.empty() && graph->Opsets.count("") && graph->Opsets.at("") < 13)
      fail(ErrorKind::Unsupported) << "--emit onnx: the model imports ONNX opset "
                                   << graph->Opsets.at("")
                                   << "; its quantized form needs opset 13 or later "
                                      "(per-channel DequantizeLinear)";
    output::OutputFiles out;
    out.write(o.Output, onnx::writeModel(*graph));
    status.finish();
    out.commit();
    return;
  }
  if (kind != "graph") {
    report = output::buildReport(program);
    output::checkBudgets(*report, budgets);
  }

  output::OutputFiles out;
  if (!o.DumpDot.empty())
    out.write(o.DumpDot, ir::printDot(*graph));
  auto emitText = [&](const std::string &text) {
    if (toStdout)
      std::cout << text;
    else
      out.write(o.Output, text);
  };
  std::string headerPath = dirOf(o.Output) + name + ".h";
  std::string header;
  if (kind != "graph" && kind != "kernels" && kind != "plan")
    header = output::writeHeader(program, o.Model, cuda);
  llvmgen::CodegenOptions cg;
  cg.OptLevel = o.OptLevel;
  cg.SizeOpt = o.SizeOpt;
  cg.OnProgress = [&](const char *what, size_t done, size_t total) {
    status.step(what, done, total);
  };
  std::optional<llvmgen::ObjectStats> stats;

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
    emitText(ir::printGraph(*graph));
  } else if (kind == "kernels") {
    emitText(kir::printProgram(program));
  } else if (kind == "plan") {
    emitText(planText(program, cuda ? "" : llvmgen::describeTarget(target).describe()));
  } else if (kind == "header") {
    emitText(header);
  } else if (kind == "cuda") {
    emitText(cudagen::emitCuda(program, name + ".h"));
    if (!toStdout) {
      out.write(headerPath, header);
      out.write(dirOf(o.Output) + name + "_weights.o", cudaWeightsObject(program));
    }
  } else if (kind == "c") {
    emitText(cgen::emitC(program, name + ".h"));
    if (!toStdout)
      out.write(headerPath, header);
  } else if (kind == "llvm" || kind == "asm") {
    emitText(timed("llvm-codegen", [&] {
      return llvmgen::compileProgram(program, target, cg,
                                     kind == "llvm" ? llvmgen::OutputKind::LlvmIr
                                                    : llvmgen::OutputKind::Assembly);
    }));
  } else if (cuda) { // a library
    std::string obj = timed("nvcc", [&] {
      status.step("compiling the generated CUDA with nvcc");
      return compileCuda(cudagen::emitCuda(program, name + ".h"), header, name, archs);
    });
    out.write(o.Output, llvmgen::makeArchive(
                            {{name + ".o", obj}, {name + "_weights.o", cudaWeightsObject(program)}}));
    out.write(headerPath, header);
  } else if (kind == "obj" || kind == "lib") {
    std::string obj = timed("codegen", [&] {
      if (o.Backend == "c")
        status.step("compiling the generated C");
      return o.Backend == "c" ? compileC(cgen::emitC(program, name + ".h"), header, name)
                              : llvmgen::compileProgram(program, target, cg,
                                                        llvmgen::OutputKind::Object);
    });
    stats = llvmgen::inspectObject(obj);
    if (kind == "obj")
      out.write(o.Output, obj);
    else
      out.write(o.Output, llvmgen::makeArchive({{name + ".o", obj}}));
    out.write(headerPath, header);
  }
  status.finish();
  if (kind != "graph") {
    output::ModelReport &r = *report;
    if (stats)
      output::addObjectStats(r, *stats);
    output::ReportContext ctx = reportContext(o, target);
    ctx.FloatNodes = quantizer::floatFallbacks(*graph);
    tuner.annotate(r, o.Verbose);
    if (o.Verbose)
      std::fputs(output::reportText(r, ctx).c_str(), stderr);
    output::checkBudgets(r, budgets);
    if (!o.Report.empty())
      out.write(o.Report, output::reportJson(r, ctx));
    if (!o.ReportHtml.empty())
      out.write(o.ReportHtml, output::reportHtml(r, ctx));
  }
  if (!tuner.dbPath().empty())
    out.write(tuner.dbPath(), tuner.dbText());
  out.commit();
}

} // namespace mlcc
