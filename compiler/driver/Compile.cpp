//===- Compile.cpp - From compile options to a compiled program -----------===//
#include "compiler/driver/Compile.h"

#include "compiler/kernel/Program.h"
#include "compiler/output/Report.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/quantizer/Quantize.h"
#include "compiler/quantizer/Samples.h"
#include "compiler/support/Error.h"
#include "compiler/driver/DimOptions.h"
#include "frontends/onnx/OnnxLoader.h"
#include "targets/llvm/HostJit.h"
#include "targets/llvm/Targets.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

namespace mlcc {

namespace {

std::pair<std::string, std::string> splitAssignment(const std::string &arg,
                                                    const char *flag) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    fail(ErrorKind::Usage) << flag << " expects NAME=VALUE, got '" << arg << "'";
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

onnx::LoadOptions loadOptions(const CompileOptions &o) {
  onnx::LoadOptions lo;
  for (auto &d : o.Dims) {
    auto [name, value] = splitAssignment(d, "--dim");
    if (value.find("..") != std::string::npos) // a range: usage errors, else this one
      for (const ir::BoundedDim &b : boundedDims(o))
        if (b.Name == name)
          failRangeHere(b);
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

/// The "quantize" pass: annotate `g`, calibrate on the samples with the
/// float model compiled for the host (a second copy of the model, with the
/// observed tensors as extra outputs, run in this process), realize.
void quantizeGraph(ir::Graph &g, const CompileOptions &o, const onnx::LoadOptions &lo,
                   const std::vector<std::vector<uint8_t>> &samples, size_t numSamples,
                   const quantizer::QuantizeOptions &qo) {
  quantizer::Annotation a = quantizer::annotate(g, qo.KeepFloat);
  std::unique_ptr<ir::Graph> cal = onnx::loadModel(o.Model, lo);
  PipelineOptions cpo;
  cpo.Name = "mlcc_calibration";
  cpo.Target = llvmgen::describeTarget(llvmgen::resolveTarget("host", "", ""));
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
    outs.emplace_back((size_t)storageBytes(v->Type.Type, v->Type.numel()) + 1);
  for (auto &b : outs)
    outPtrs.push_back(b.data());
  std::vector<size_t> sampleBytes;
  for (const ir::Value *v : cal->Inputs)
    sampleBytes.push_back((size_t)storageBytes(v->Type.Type, v->Type.numel()));
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

void applyMaxTensor(const CompileOptions &o) {
  static const int64_t defaultMax = maxTensorBytes(); // before any compile set it
  setMaxTensorBytes(o.MaxTensor.empty() ? defaultMax
                                        : output::parseByteSize(o.MaxTensor, "--max-tensor"));
}

std::unique_ptr<ir::Graph> loadGraph(const CompileOptions &o) {
  return onnx::loadModel(o.Model, loadOptions(o));
}

void setTargetOptions(PipelineOptions &po, const CompileOptions &o,
                      const llvmgen::TargetSpec &target) {
  po.Target = llvmgen::describeTarget(target);
  if (o.GpuScheduleOnHost) // this CPU runs the launches' loops
    po.Target = asGpu(po.Target);
  po.LibraryDispatch = !o.NoLibraryDispatch;
}

CompiledModel compileModel(const CompileOptions &o, const llvmgen::TargetSpec &target,
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
    if (o.WeightBits != 8 && o.WeightBits != 4)
      fail(ErrorKind::Usage) << "--weight-bits takes 8 or 4, not " << o.WeightBits;
    if (o.WeightBits == 4 && o.ReduceRange)
      fail(ErrorKind::Usage) << "--reduce-range narrows 8-bit weights; --weight-bits 4 "
                                "weights fit already: give one";
    qo.WeightBits = o.WeightBits;
    qo.KeepFloat.insert(o.KeepFloat.begin(), o.KeepFloat.end());
  } else if (!o.Calibrate.empty() || !o.CalibrationMethod.empty() || o.QuantizeIo ||
             o.ReduceRange || !o.KeepFloat.empty() || o.WeightBits != 8) {
    fail(ErrorKind::Usage) << "--calibrate, --calibration-method, --quantize-io, "
                              "--reduce-range, --weight-bits and --keep-float need "
                              "--quantize int8";
  }
  if (!o.Precision.empty() && o.Precision != "float32") {
    if (o.Precision != "float16" && o.Precision != "bfloat16")
      fail(ErrorKind::Usage) << "--precision takes float32, float16 or bfloat16, not '"
                             << o.Precision << "'";
    if (!o.Quantize.empty())
      fail(ErrorKind::Usage) << "--precision " << o.Precision
                             << " and --quantize int8 are two ways to store the same model: "
                                "give one";
    po.Precision = o.Precision == "float16" ? DType::F16 : DType::BF16;
  }
  for (const std::string &pair : o.KvCache) {
    if (pair == "auto") {
      po.KvCacheAuto = true;
      continue;
    }
    auto [past, present] = splitAssignment(pair, "--kv-cache");
    po.KvCache.push_back({past, present});
  }
  m.Program = runPipeline(*graph, po);
  return m;
}

} // namespace mlcc
