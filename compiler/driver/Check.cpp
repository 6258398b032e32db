//===- Check.cpp - mlcc check: every kernel call against a reference ------===//
//
//   mlcc check model.onnx [compile options] [--input NAME=FILE.npy ...]
//
// Compiles the model as `mlcc` would with the same options, runs the code
// that ships and reads back what every kernel call wrote: on the host in
// this process (the object linked by the JIT, NAME_run_with's on_kernel hook
// after each call), for other targets as a program built with the target's
// C compiler and run under QEMU (a harness that writes the same bytes to a
// file). Where each call's outputs lie comes from the compiler's own plan
// (kir::Call::Produces, the arena offsets): the library is the one `mlcc`
// writes, nothing is added to it.
//
// Each output is compared, by its ONNX name, with the reference: mlcc's
// interpretation of the model before optimization, in double
// (compiler/check/Reference.h), or the tensors given with --reference. An
// 8-bit tensor of a quantized model is dequantized and compared with the
// float tensor it stands for (the same tensor in a QDQ model; the float
// model's tensor with --quantize).
//
// Within tolerance means, for a float model, max |error| <= --tolerance
// (1e-3) times the largest |value| of the reference tensor (for a float16
// or bfloat16 tensor, or any float tensor of a --precision build, at least
// four units in the last place of that type at that value);
// for a quantized
// model (its error is the quantization's), an SNR of at least --min-snr dB.
// Exit status 0: every compared output within tolerance; 6: some are not;
// the compile errors' statuses otherwise.
//
//===----------------------------------------------------------------------===//
#include "mlcc/Check.h"

#include "compiler/driver/BoundedDims.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/Harness.h"
#include "compiler/driver/Tune.h"

#include "compiler/check/Reference.h"
#include "compiler/output/Header.h"
#include "compiler/output/OutputFiles.h"
#include "compiler/output/Report.h"
#include "compiler/quantizer/Samples.h"
#include "compiler/support/Error.h"
#include "compiler/support/Files.h"
#include "compiler/support/Format.h"
#include "compiler/support/Process.h"
#include "targets/llvm/HostJit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

namespace mlcc {

namespace {

constexpr const char *kModelName = "mlcc_check";


double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

/// A dense tensor: type, shape and bytes.
struct Data {
  DType Type = DType::F32;
  Shape Dims;
  std::vector<uint8_t> Bytes;
  std::vector<double> values() const {
    return Tensor(Type, Dims, Bytes).toDoubles();
  }
};

std::string shapeText(const Shape &s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? "x" : "") + std::to_string(s[i]);
  return t.empty() ? "scalar" : t;
}

std::pair<std::string, std::string> splitArg(const std::string &arg, const char *flag) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    fail(ErrorKind::Usage) << flag << " expects NAME=FILE.npy, got '" << arg << "'";
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// --- the comparison --------------------------------------------------------

struct Stats {
  double MaxAbs = 0, RefMax = 0, Rel = 0, Snr = INFINITY;
  bool NanMismatch = false;
};

/// A reference value this large is a mask's fill (scores masked with the
/// float minimum, or -inf), not a signal: left out of the SNR, whose
/// signal it would make astronomically large (a Softmax after it then
/// showed a drop of hundreds of dB).
constexpr double kMaskFill = 1e30;

Stats compareValues(const std::vector<double> &got, const std::vector<double> &ref) {
  Stats s;
  double signal = 0, noise = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], r = ref[i];
    if (std::isnan(g) || std::isnan(r)) {
      s.NanMismatch = s.NanMismatch || std::isnan(g) != std::isnan(r);
      continue;
    }
    if (std::fabs(r) >= kMaskFill) {
      // A masked position: left out, unless the result is not masked too.
      if (std::fabs(g) < kMaskFill || std::signbit(g) != std::signbit(r))
        s.MaxAbs = INFINITY;
      continue;
    }
    if (g == r) { // infinities of the same sign included
      if (std::isfinite(r))
        signal += r * r, s.RefMax = std::max(s.RefMax, std::fabs(r));
      continue;
    }
    double e = std::fabs(g - r);
    s.MaxAbs = std::max(s.MaxAbs, e);
    if (std::isfinite(r)) {
      s.RefMax = std::max(s.RefMax, std::fabs(r));
      signal += r * r;
    }
    noise += e * e;
  }
  s.Rel = s.MaxAbs == 0 ? 0 : s.RefMax > 0 ? s.MaxAbs / s.RefMax : INFINITY;
  if (s.NanMismatch) {
    s.MaxAbs = s.Rel = INFINITY;
    s.Snr = -INFINITY;
  } else if (noise > 0) {
    s.Snr = signal > 0 ? 10 * std::log10(signal / noise) : -INFINITY;
  }
  return s;
}

/// The largest error within tolerance for a float tensor of type `t` whose
/// reference's largest magnitude is `refMax`: `tolerance` x refMax, and at
/// least four units in the last place of `t` at refMax for the 16-bit
/// floats. Both sides round each node's output to the type, and each call
/// is compared with the reference run of the whole model, so its error
/// also holds its inputs' differences: a float16 unit is already 5e-4 to
/// 1e-3 of the value (the default tolerance is about 8000 float32 units).
double allowedError(double tolerance, DType t, double refMax) {
  double allowed = tolerance * refMax;
  if ((t == DType::F16 || t == DType::BF16) && refMax > 0 && std::isfinite(refMax)) {
    int mantissaBits = t == DType::F16 ? 10 : 7;
    allowed = std::max(allowed, 4 * std::ldexp(1.0, std::ilogb(refMax) - mantissaBits));
  }
  return allowed;
}

struct Row {
  size_t Call = 0;
  std::string Kernel;
  std::vector<kir::NodeRef> Nodes; ///< The ONNX nodes it computes.
  std::string Tensor, Against;     ///< Its tensor, and the reference's.
  Shape Dims;
  DType Type = DType::F32;
  bool Quantized = false;
  bool Compared = false, Pass = true;
  std::string Note; ///< Why it is not compared.
  Stats S;
  double Drop = NAN; ///< SNR lost in this call (quantized models).
};

// --- inputs --------------------------------------------------------------------

/// One buffer per program input: --input files, else the first calibration
/// sample, else random values (seeded) in the input's range (its
/// --input-range, if any).
std::vector<Data> makeInputs(const CheckOptions &o, const kir::Program &p,
                             const ir::Graph &original) {
  std::map<std::string, std::string> files;
  for (const std::string &a : o.Inputs) {
    auto [name, file] = splitArg(a, "--input");
    bool known = false;
    for (auto &in : p.Inputs)
      known = known || in.Name == name;
    if (!known)
      fail(ErrorKind::Usage) << "--input: the model has no input named '" << name << "'";
    files[name] = file;
  }
  std::vector<std::vector<uint8_t>> samples;
  size_t count = 0;
  if (!o.Compile.Calibrate.empty() && !o.Compile.Quantize.empty())
    samples = quantizer::loadSamples(original, o.Compile.Calibrate, count);
  std::mt19937_64 rng(o.Seed);
  std::vector<Data> out;
  for (size_t i = 0; i < p.Inputs.size(); ++i) {
    const kir::IoTensor &in = p.Inputs[i];
    // The float input the model was written for (--quantize-io makes the
    // program's input uint8).
    const ir::Value *v = original.findValue(in.Name);
    MLCC_CHECK(v, "check: input '" << in.Name << "' is not in the model");
    Data d{v->Type.Type, v->Type.Dims, {}};
    int64_t n = numElements(d.Dims);
    if (files.count(in.Name)) {
      Tensor t = quantizer::loadNpy(files[in.Name]);
      if (t.shape() != d.Dims || t.dtype() != d.Type)
        fail(ErrorKind::Usage) << "--input " << in.Name << ": '" << files[in.Name] << "' holds "
                               << ir::TensorType{t.dtype(), t.shape()}.str()
                               << ", the input is " << v->Type.str();
      d.Bytes = t.denseBytes();
    } else if (count > 0 && i < samples.size() && !samples[i].empty()) {
      size_t bytes = (size_t)storageBytes(d.Type, n);
      d.Bytes.assign(samples[i].begin(), samples[i].begin() + (long)bytes);
    } else {
      double lo = -1, hi = 1;
      if (in.Scale != 0)
        lo = in.Scale * (0 - in.ZeroPoint), hi = in.Scale * (255 - in.ZeroPoint);
      if (isInteger(d.Type))
        lo = 0, hi = 4;
      if (in.Range) // --input-range: a value it allows
        lo = (double)in.Range->first, hi = (double)in.Range->second + 1;
      if (d.Type == DType::Bool)
        lo = 0, hi = 2;
      std::uniform_real_distribution<double> u(lo, hi);
      std::vector<double> vals((size_t)n);
      for (double &x : vals)
        x = isFloat(d.Type) ? u(rng) : std::floor(u(rng));
      d.Bytes = Tensor::fromDoubles(d.Type, d.Dims, vals).denseBytes();
    }
    out.push_back(std::move(d));
  }
  return out;
}

/// The bytes the program reads for input i (quantized with --quantize-io).
std::vector<uint8_t> programInput(const kir::IoTensor &in, const Data &d) {
  if (in.Scale == 0 || in.Type == d.Type)
    return d.Bytes;
  std::vector<double> q = d.values();
  double lo = in.Type == DType::I8 ? -128 : 0, hi = in.Type == DType::I8 ? 127 : 255;
  for (double &x : q)
    x = std::clamp(std::nearbyint(x / in.Scale) + (double)in.ZeroPoint, lo, hi);
  return Tensor::fromDoubles(in.Type, in.Dims, q).denseBytes();
}

// --- running the code that ships ------------------------------------------------

/// What each call wrote: [call][Produces index].
using CallBytes = std::vector<std::vector<std::vector<uint8_t>>>;

int64_t producedBytes(const kir::CallOutput &c) {
  return storageBytes(c.Type, numElements(c.Dims));
}

struct HookState {
  const kir::Program *P;
  const llvmgen::HostModel *Model;
  const std::vector<void *> *Outputs;
  CallBytes *Got;
};

void afterCall(void *context, int32_t call, const char *, int32_t phase) {
  if (phase != 1)
    return;
  HookState &s = *static_cast<HookState *>(context);
  const kir::Call &c = s.P->Calls[(size_t)call];
  for (size_t k = 0; k < c.Produces.size(); ++k) {
    const kir::Storage &st = c.Args[c.Produces[k].Arg];
    const uint8_t *src = nullptr;
    if (st.Kind == kir::StorageKind::Arena)
      src = s.Model->arena() + s.P->ArenaBuffers[st.Index].Offset;
    else if (st.Kind == kir::StorageKind::Output)
      src = static_cast<const uint8_t *>((*s.Outputs)[st.Index]);
    if (src)
      (*s.Got)[(size_t)call][k].assign(src, src + producedBytes(c.Produces[k]));
  }
}

CallBytes emptyCallBytes(const kir::Program &p) {
  CallBytes got(p.Calls.size());
  for (size_t c = 0; c < p.Calls.size(); ++c)
    got[c].resize(p.Calls[c].Produces.size());
  return got;
}

CallBytes runOnHost(const kir::Program &p, const llvmgen::TargetSpec &target,
                    const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &ins,
                    const std::vector<int64_t> &dims) {
  llvmgen::HostModel model(p, target, cg);
  std::vector<std::vector<uint8_t>> outs;
  std::vector<const void *> inPtrs;
  std::vector<void *> outPtrs;
  for (auto &b : ins)
    inPtrs.push_back(b.data());
  // NAME_run_with reads NAME_inputs: the inputs' pointers, then each
  // run-time dimension's value (an int64_t, a pointer's size on a 64-bit
  // host).
  static_assert(sizeof(void *) == sizeof(int64_t), "a 64-bit host");
  for (int64_t v : dims)
    inPtrs.push_back(reinterpret_cast<const void *>((intptr_t)v));
  for (auto &o : p.Outputs)
    outs.emplace_back((size_t)o.bytes() + 1);
  for (auto &b : outs)
    outPtrs.push_back(b.data());
  CallBytes got = emptyCallBytes(p);
  HookState s{&p, &model, &outPtrs, &got};
  model.runWithHook(inPtrs, outPtrs, afterCall, &s);
  return got;
}

std::vector<std::string> words(const std::string &text) {
  std::istringstream in(text);
  std::vector<std::string> w;
  for (std::string x; in >> x;)
    w.push_back(x);
  return w;
}

/// How a program for `t` is built and run: the C compiler command (it links
/// the harness with the model's object) and the command that runs it.
void crossTools(const CheckOptions &o, const llvmgen::TargetSpec &t,
                std::vector<std::string> &cc, std::vector<std::string> &run) {
  cc = words(o.Cc);
  run = words(o.Run);
  crossCommands(t, "mlcc check", cc, run);
}

/// The C harness: runs the model once on inputs.bin and writes every
/// produced tensor, call after call, to calls.bin (through the on_kernel
/// hook), then prints the status. Each tensor is a byte 1 and its data, or
/// a byte 0 when its call did not run (a guarded call: Call::Guard).
std::string harnessSource(const kir::Program &p) {
  std::ostringstream s;
  s << "/* mlcc check harness (generated) */\n#include <stdint.h>\n#include <stdio.h>\n"
       "#include <string.h>\n#include \"" << kModelName << ".h\"\n\n"
       "struct region { int32_t call, output; int64_t where, bytes; };\n"
       "static const struct region regions[] = {\n";
  size_t count = 0;
  for (size_t c = 0; c < p.Calls.size(); ++c)
    for (const kir::CallOutput &po : p.Calls[c].Produces) {
      const kir::Storage &st = p.Calls[c].Args[po.Arg];
      bool out = st.Kind == kir::StorageKind::Output;
      if (!out && st.Kind != kir::StorageKind::Arena)
        continue;
      s << "  {" << c << ", " << out << ", "
        << (out ? (int64_t)st.Index : p.ArenaBuffers[st.Index].Offset) << ", "
        << producedBytes(po) << "},\n";
      ++count;
    }
  if (!count)
    s << "  {-1, 0, 0, 0},\n";
  s << "};\nstatic const int32_t num_regions = " << count << ";\n" << harnessBuffers(p);
  s << "\nstatic FILE *dump;\nstatic int32_t next_region;\n\n"
       "static void after_call(void *context, int32_t call, const char *name, int32_t phase) {\n"
       "  (void)context;\n  (void)name;\n  if (phase != 1)\n    return;\n"
       "  for (; next_region < num_regions && regions[next_region].call < call; ++next_region)\n"
       "    fputc(0, dump);\n"
       "  while (next_region < num_regions && regions[next_region].call == call) {\n"
       "    const struct region *r = &regions[next_region++];\n"
       "    const uint8_t *p = r->output ? (const uint8_t *)outs[r->where] : arena + r->where;\n"
       "    fputc(1, dump);\n"
       "    fwrite(p, 1, (size_t)r->bytes, dump);\n  }\n}\n\n"
       "int main(void) {\n" << harnessReadInputs(p) <<
       "  dump = fopen(\"calls.bin\", \"wb\");\n  if (!dump)\n    return 92;\n"
       "  mlcc_run_options options;\n  memset(&options, 0, sizeof options);\n"
       "  options.on_kernel = after_call;\n"
       "  int32_t rc = " << kModelName << "_run_with((const " << kModelName << "_inputs *)ins, ("
    << kModelName << "_outputs *)outs, arena, sizeof arena, &options);\n"
       "  for (; next_region < num_regions; ++next_region)\n    fputc(0, dump);\n"
       "  fclose(dump);\n  printf(\"mlcc check harness: status %d\\n\", (int)rc);\n"
       "  return rc == 0 ? 0 : 93;\n}\n";
  return s.str();
}

CallBytes runCross(const CheckOptions &o, const kir::Program &p, const llvmgen::TargetSpec &t,
                   const llvmgen::CodegenOptions &cg, const std::vector<std::vector<uint8_t>> &ins) {
  std::vector<std::string> cc, run;
  crossTools(o, t, cc, run);
  TempDir tmp;
  tmp.write(std::string(kModelName) + ".o",
            llvmgen::compileProgram(p, t, cg, llvmgen::OutputKind::Object));
  tmp.write(std::string(kModelName) + ".h", output::writeHeader(p, o.Compile.Model));
  tmp.write("harness.c", harnessSource(p));
  std::string inBytes;
  for (auto &b : ins)
    inBytes.append(b.begin(), b.end());
  tmp.write("inputs.bin", inBytes);
  std::vector<std::string> build = cc;
  for (const char *a : {"-std=c99", "-I.", "harness.c"})
    build.push_back(a);
  build.push_back(std::string(kModelName) + ".o");
  for (const char *a : {"-lm", "-o", "check.elf"})
    build.push_back(a);
  std::string log;
  int rc = runProcess(build, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Usage) << "mlcc check: building the harness for " << t.Name << " with '"
                           << cc[0] << "' failed (exit " << rc << "): " << log.substr(0, 1500);
  std::vector<std::string> exec = run;
  exec.push_back(tmp.Path + "/check.elf");
  rc = runProcess(exec, &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "mlcc check: running the model for " << t.Name << " with '"
                              << run[0] << "' failed (exit " << rc << "): " << log.substr(0, 1500);
  std::string dump = readFile(tmp.Path + "/calls.bin", "harness output");
  CallBytes got = emptyCallBytes(p);
  size_t at = 0;
  for (size_t c = 0; c < p.Calls.size(); ++c)
    for (size_t k = 0; k < p.Calls[c].Produces.size(); ++k) {
      const kir::Storage &st = p.Calls[c].Args[p.Calls[c].Produces[k].Arg];
      if (st.Kind != kir::StorageKind::Output && st.Kind != kir::StorageKind::Arena)
        continue;
      size_t n = (size_t)producedBytes(p.Calls[c].Produces[k]);
      bool ran = at < dump.size() && dump[at] == 1;
      if (at >= dump.size() || (ran && at + 1 + n > dump.size()))
        fail(ErrorKind::Internal) << "mlcc check: the harness wrote " << dump.size()
                                  << " bytes, fewer than the calls produce";
      ++at;
      if (!ran)
        continue;
      got[c][k].assign(dump.begin() + (long)at, dump.begin() + (long)(at + n));
      at += n;
    }
  return got;
}

/// Whether code for `t` runs in this process (runsInProcess) and no --run
/// program was given.
bool runsHere(const CheckOptions &o, const llvmgen::TargetSpec &t) {
  return o.Run.empty() && runsInProcess(t);
}


// --- the test-only switch -----------------------------------------------------

/// Makes the kernel of the first call that computes node `name` write
/// 1 - x (float) or 100 - x (integers) instead of each x of its first
/// output: a wrong kernel for tests of mlcc check.
void breakKernel(kir::Program &p, const std::string &name) {
  for (kir::Call &c : p.Calls) {
    bool hit = false;
    for (auto &n : c.Nodes)
      hit = hit || n.Name == name;
    if (!hit || c.Produces.empty())
      continue;
    kir::Kernel k = p.Kernels[c.KernelIndex];
    const kir::Buffer &out = k.Params[c.Produces[0].Arg];
    kir::Var i = std::make_shared<kir::VarNode>(kir::VarNode{"broken"});
    kir::Expr x = kir::load(out, kir::varRef(i));
    kir::Expr bad = isFloat(out->Type)
                        ? kir::binary(kir::BinOp::Sub, kir::constant(out->Type, 1.0), x)
                        : kir::binary(kir::BinOp::Sub, kir::constantInt(out->Type, 100), x);
    k.Body = kir::block({k.Body, kir::forLoop(i, kir::indexConst(0), kir::indexConst(out->Size),
                                               kir::store(out, kir::varRef(i), bad))});
    k.Name += "_broken";
    k.finalize();
    p.Kernels.push_back(std::move(k));
    c.KernelIndex = p.Kernels.size() - 1;
    return;
  }
  fail(ErrorKind::Usage) << "--break-kernel-for-test: no kernel call computes node '" << name
                         << "'";
}

// --- references -----------------------------------------------------------------

using Tensors = std::map<std::string, Data>;

Tensors runReference(check::Reference &ref, const std::vector<Data> &inputs) {
  llvmgen::HostModel model(ref.Program);
  std::vector<const void *> in;
  static const uint8_t none = 0; // an input with no elements (a KV cache at past=0)
  for (auto &d : inputs)
    in.push_back(d.Bytes.empty() ? &none : d.Bytes.data());
  Tensors out;
  std::vector<void *> outPtrs;
  for (auto &o : ref.Program.Outputs) {
    Data &d = out[o.Name];
    d = {o.Type, o.Dims, std::vector<uint8_t>((size_t)o.bytes() + 1)};
  }
  for (auto &o : ref.Program.Outputs)
    outPtrs.push_back(out[o.Name].Bytes.data());
  model.run(in, outPtrs);
  for (auto &[name, d] : out)
    d.Bytes.pop_back();
  return out;
}

/// The file name a tensor's .npy has in a --reference folder: its name with
/// every character other than letters, digits, '.', '-' and '_' made '_'.
std::string fileStem(const std::string &tensor) {
  std::string s;
  for (char c : tensor)
    s += std::isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' ? c : '_';
  return s;
}

Tensors userReferences(const CheckOptions &o, const check::Reference &ref) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> byStem;
  for (auto &[name, type] : ref.ModelTypes)
    byStem[fileStem(name)] = name;
  std::vector<std::pair<std::string, std::string>> files; // tensor, file
  for (const std::string &r : o.References) {
    std::error_code ec;
    if (r.find('=') == std::string::npos && fs::is_directory(r, ec)) {
      for (auto &e : fs::directory_iterator(r, ec))
        if (e.path().extension() == ".npy") {
          std::string stem = e.path().stem().string();
          std::string v = ref.ModelTypes.count(stem) ? stem
                          : byStem.count(stem)     ? byStem[stem]
                                                   : "";
          if (v.empty())
            fail(ErrorKind::Usage) << "--reference " << r << ": '" << e.path().filename().string()
                                   << "' names no tensor of the model";
          files.push_back({v, e.path().string()});
        }
      continue;
    }
    auto [name, file] = splitArg(r, "--reference");
    if (!ref.ModelTypes.count(name))
      fail(ErrorKind::Usage) << "--reference: the model has no tensor named '" << name << "'";
    files.push_back({name, file});
  }
  Tensors out;
  for (auto &[name, file] : files) {
    const ir::TensorType &type = ref.ModelTypes.at(name);
    Tensor t = quantizer::loadNpy(file);
    bool kindOk = isFloat(t.dtype()) == isFloat(type.Type) &&
                  (t.dtype() == DType::Bool) == (type.Type == DType::Bool);
    if (t.shape() != type.Dims || !kindOk)
      fail(ErrorKind::Usage) << "--reference " << name << ": '" << file << "' holds "
                             << ir::TensorType{t.dtype(), t.shape()}.str() << ", the tensor is "
                             << type.str();
    out[name] = {t.dtype(), t.shape(), t.denseBytes()};
  }
  return out;
}

/// The ONNX nodes between the tensors other calls produce (or the graph's
/// inputs) and `tensor`: what the call that writes `tensor` computes.
std::vector<kir::NodeRef> onnxNodes(const ir::Graph &g, const std::string &tensor,
                                    const std::set<std::string> &stops) {
  std::vector<kir::NodeRef> nodes;
  std::vector<const ir::Value *> work;
  std::set<const ir::Value *> seen;
  if (const ir::Value *v = g.findValue(tensor))
    work.push_back(v);
  while (!work.empty()) {
    const ir::Value *v = work.back();
    work.pop_back();
    if (!v || !v->Producer || !seen.insert(v).second)
      continue;
    if (v->Name != tensor && stops.count(v->Name))
      continue;
    const ir::Node *n = v->Producer;
    if (n->Name.find("::f") == std::string::npos) // the reference's own casts
      nodes.push_back({n->Name, n->OpType});
    for (const ir::Value *in : n->Inputs)
      work.push_back(in);
  }
  std::reverse(nodes.begin(), nodes.end());
  return nodes;
}

// --- output ---------------------------------------------------------------------

std::string num(double v, const char *fmt = "%.3g") {
  if (std::isnan(v))
    return "-";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string nodesText(const std::vector<kir::NodeRef> &nodes, size_t max = 3) {
  std::string t;
  for (size_t i = 0; i < nodes.size() && i < max; ++i)
    t += (i ? ", " : "") + nodes[i].Name + " (" + nodes[i].Op + ")";
  if (nodes.size() > max)
    t += ", +" + std::to_string(nodes.size() - max) + " more";
  return t;
}

std::string jsonNumber(double v) {
  if (std::isnan(v))
    return "null";
  if (std::isinf(v))
    return v > 0 ? "\"inf\"" : "\"-inf\"";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

struct Summary {
  std::string Model, Target, Reference, Criterion;
  size_t Calls = 0, Compared = 0, Failed = 0;
  long FirstFailure = -1;
  double CompileS = 0, RunS = 0, ReferenceS = 0;
  bool Quantized = false;
};

std::string jsonReport(const Summary &s, const std::vector<Row> &rows) {
  std::ostringstream j;
  j << "{\n  \"model\": " << output::jsonString(s.Model) << ",\n  \"target\": " << output::jsonString(s.Target)
    << ",\n  \"reference\": " << output::jsonString(s.Reference)
    << ",\n  \"criterion\": " << output::jsonString(s.Criterion)
    << ",\n  \"quantized\": " << (s.Quantized ? "true" : "false")
    << ",\n  \"calls\": " << s.Calls << ",\n  \"compared\": " << s.Compared
    << ",\n  \"out_of_tolerance\": " << s.Failed
    << ",\n  \"first_out_of_tolerance\": " << (s.FirstFailure < 0 ? "null" : std::to_string(s.FirstFailure))
    << ",\n  \"compile_s\": " << jsonNumber(s.CompileS) << ",\n  \"run_s\": " << jsonNumber(s.RunS)
    << ",\n  \"reference_s\": " << jsonNumber(s.ReferenceS) << ",\n  \"rows\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row &r = rows[i];
    j << (i ? "," : "") << "\n    {\"call\": " << r.Call << ", \"kernel\": " << output::jsonString(r.Kernel)
      << ", \"nodes\": [";
    for (size_t k = 0; k < r.Nodes.size(); ++k)
      j << (k ? ", " : "") << "{\"name\": " << output::jsonString(r.Nodes[k].Name)
        << ", \"op\": " << output::jsonString(r.Nodes[k].Op) << "}";
    j << "], \"tensor\": " << output::jsonString(r.Tensor) << ", \"reference\": " << output::jsonString(r.Against)
      << ", \"shape\": [";
    for (size_t k = 0; k < r.Dims.size(); ++k)
      j << (k ? ", " : "") << r.Dims[k];
    j << "], \"dtype\": " << output::jsonString(dtypeName(r.Type))
      << ", \"compared\": " << (r.Compared ? "true" : "false");
    if (r.Compared)
      j << ", \"max_abs_error\": " << jsonNumber(r.S.MaxAbs)
        << ", \"reference_max_abs\": " << jsonNumber(r.S.RefMax)
        << ", \"relative_error\": " << jsonNumber(r.S.Rel) << ", \"snr_db\": " << jsonNumber(r.S.Snr)
        << ", \"snr_drop_db\": " << jsonNumber(r.Drop)
        << ", \"within_tolerance\": " << (r.Pass ? "true" : "false");
    else
      j << ", \"note\": " << output::jsonString(r.Note);
    j << "}";
  }
  j << "\n  ]\n}\n";
  return j.str();
}

/// One self-contained page: the SNR of every compared call as a chart (SVG),
/// the tolerance line, and the table.
std::string htmlReport(const Summary &s, const std::vector<Row> &rows, double minSnr) {
  std::vector<const Row *> shown;
  for (const Row &r : rows)
    if (r.Compared)
      shown.push_back(&r);
  constexpr double kCap = 160; // dB drawn at most (exact results are +inf)
  const double w = std::max<double>(640, 14.0 * (double)shown.size() + 80), h = 320, left = 50,
               bottom = 40, top = 20;
  double maxDb = 20;
  for (const Row *r : shown)
    maxDb = std::max(maxDb, std::min(kCap, std::isfinite(r->S.Snr) ? r->S.Snr : kCap));
  maxDb = std::ceil(maxDb / 20) * 20;
  auto y = [&](double db) {
    db = std::clamp(std::isfinite(db) ? db : (db > 0 ? kCap : 0.0), 0.0, maxDb);
    return top + (h - top - bottom) * (1 - db / maxDb);
  };
  const double right = w - 110; // the tolerance's label beyond
  double step = shown.empty() ? 0 : (right - left) / (double)shown.size();
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mlcc check: "
    << output::html(s.Model) << "</title>\n<style>body{font:14px sans-serif;margin:20px}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
       "text-align:right}td.l,th.l{text-align:left}tr.bad{background:#fdd}"
       "tr.first{background:#f99}</style></head><body>\n"
    << "<h1>mlcc check: " << output::html(s.Model) << "</h1>\n<p>Target " << output::html(s.Target)
    << ". Reference: " << output::html(s.Reference) << ". Within tolerance: "
    << output::html(s.Criterion) << ". " << s.Compared << " of " << s.Calls
    << " kernel calls compared, " << s.Failed << " out of tolerance.</p>\n"
    << "<h2>SNR per kernel call (dB, higher is better; exact results drawn at the top)</h2>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\">\n";
  for (double db = 0; db <= maxDb; db += 20)
    o << "<line x1=\"" << left << "\" x2=\"" << right << "\" y1=\"" << y(db) << "\" y2=\""
      << y(db) << "\" stroke=\"#eee\"/><text x=\"" << left - 6 << "\" y=\"" << y(db) + 4
      << "\" font-size=\"11\" text-anchor=\"end\">" << db << "</text>\n";
  if (s.Quantized)
    o << "<line x1=\"" << left << "\" x2=\"" << right << "\" y1=\"" << y(minSnr) << "\" y2=\""
      << y(minSnr) << "\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/><text x=\"" << right + 4
      << "\" y=\"" << y(minSnr) + 4 << "\" font-size=\"11\" fill=\"#c00\">"
      << "--min-snr " << minSnr << " dB</text>\n";
  for (size_t i = 0; i < shown.size(); ++i) {
    const Row &r = *shown[i];
    double x = left + step * (double)i + step * 0.15, bw = std::max(1.0, step * 0.7);
    double yy = y(r.S.Snr);
    o << "<rect x=\"" << x << "\" y=\"" << yy << "\" width=\"" << bw << "\" height=\""
      << (h - bottom) - yy << "\" fill=\"" << (r.Pass ? "#4a7fd4" : "#d44") << "\"><title>call "
      << r.Call << ": " << output::html(r.Tensor) << " (" << output::html(nodesText(r.Nodes, 8))
      << ") SNR " << num(r.S.Snr, "%.1f") << " dB</title></rect>\n";
    if (shown.size() <= 60 || i % (shown.size() / 30 + 1) == 0)
      o << "<text x=\"" << x + bw / 2 << "\" y=\"" << h - bottom + 14
        << "\" font-size=\"10\" text-anchor=\"middle\">" << r.Call << "</text>\n";
  }
  o << "<text x=\"" << (left + right) / 2 << "\" y=\"" << h - 6
    << "\" font-size=\"12\" text-anchor=\"middle\">kernel call</text>\n</svg>\n";
  o << "<h2>Kernel calls</h2>\n<table><tr><th>call</th><th class=\"l\">kernel</th>"
       "<th class=\"l\">ONNX nodes</th><th class=\"l\">tensor</th><th>shape</th>"
       "<th>max abs error</th><th>relative</th><th>SNR dB</th>"
    << (s.Quantized ? "<th>SNR drop dB</th>" : "") << "<th class=\"l\">status</th></tr>\n";
  for (const Row &r : rows) {
    bool first = (long)r.Call == s.FirstFailure && !r.Pass;
    o << "<tr" << (first ? " class=\"first\"" : !r.Pass ? " class=\"bad\"" : "") << "><td>"
      << r.Call << "</td><td class=\"l\">" << output::html(r.Kernel) << "</td><td class=\"l\">"
      << output::html(nodesText(r.Nodes, 100)) << "</td><td class=\"l\">" << output::html(r.Tensor)
      << "</td><td>" << shapeText(r.Dims) << "</td>";
    if (r.Compared)
      o << "<td>" << num(r.S.MaxAbs) << "</td><td>" << num(r.S.Rel) << "</td><td>"
        << num(r.S.Snr, "%.1f") << "</td>" << (s.Quantized ? "<td>" + num(r.Drop, "%.1f") + "</td>" : "")
        << "<td class=\"l\">" << (r.Pass ? "ok" : first ? "FIRST OUT OF TOLERANCE" : "out of tolerance")
        << "</td>";
    else
      o << "<td></td><td></td><td></td>" << (s.Quantized ? "<td></td>" : "") << "<td class=\"l\">"
        << output::html(r.Note) << "</td>";
    o << "</tr>\n";
  }
  o << "</table>\n</body></html>\n";
  return o.str();
}

// --- the command ------------------------------------------------------------------

/// The elements of a value that a call wrote, dense at the run's extents
/// `at`: `bytes` holds it in its layout at MAX (`dims`; an arena buffer)
/// or, with `dense`, dense at the run's extents already (the caller's
/// output).
std::vector<uint8_t> inUse(const std::vector<uint8_t> &bytes, const Shape &dims, const Shape &at,
                           size_t esize, bool dense) {
  const int64_t n = numElements(at);
  if (dense || at == dims)
    return std::vector<uint8_t>(bytes.begin(), bytes.begin() + (long)(n * (int64_t)esize));
  std::vector<uint8_t> out((size_t)n * esize);
  std::vector<int64_t> idx(at.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t a = 0; a < at.size(); ++a)
      off = off * dims[a] + idx[a];
    std::memcpy(&out[(size_t)e * esize], &bytes[(size_t)off * esize], esize);
    for (size_t a = at.size(); a-- > 0;)
      if (++idx[a] < at[a])
        break;
      else
        idx[a] = 0;
  }
  return out;
}

/// `v`'s extents at the run-time values `values` of `dims`.
Shape extentsAt(const ir::Value &v, const std::vector<int64_t> &values) {
  Shape s = v.Type.Dims;
  for (const AxisExtent &a : v.Bounded) {
    int64_t e = a.Offset;
    for (size_t k = 0; k < a.Coeffs.size() && k < values.size(); ++k)
      e += a.Coeffs[k] * values[k];
    s[(size_t)a.Axis] = e;
  }
  return s;
}

/// One check; `values`: the run-time dimensions' values (--assign), in the
/// order of boundedDims.
CheckResult runCheck(const CheckOptions &o, const std::vector<int64_t> &values) {
  CheckResult result;
  std::string &out = result.Table;
  const CompileOptions &d = o.Compile;
  if (d.Target == "cuda")
    fail(ErrorKind::Usage) << "mlcc check runs CPU targets; --target cuda code runs on a GPU "
                              "(check its program on this CPU with --gpu-schedule-on-host)";
  if (d.Backend != "llvm")
    fail(ErrorKind::Usage) << "mlcc check runs the LLVM backend's code (no --backend c)";
  if (!d.KvCache.empty())
    fail(ErrorKind::Usage) << "mlcc check compares the library with dense caches; compile "
                              "without --kv-cache to check it (the cache layout changes only "
                              "where the rows live)";
  if (!(o.Tolerance >= 0) || !std::isfinite(o.MinSnr))
    fail(ErrorKind::Usage) << "--tolerance must be >= 0 and --min-snr a number";
  if (d.OptLevel < 0 || d.OptLevel > 3)
    fail(ErrorKind::Usage) << "-O" << d.OptLevel << " is not an optimization level (0-3)";
  applyMaxTensor(d);
  llvmgen::TargetSpec target = llvmgen::resolveTarget(d.Target, d.Cpu, d.Features);
  bool here = runsHere(o, target);

  // The code that ships.
  auto start = std::chrono::steady_clock::now();
  Progress quiet(Progress::Mode::Never);
  PipelineOptions po;
  po.Name = kModelName;
  po.Status = &quiet;
  // --tune-db: the plans a tuned library ships with.
  PlanTuner tuner(d, target, quiet);
  po.ChoosePlan = tuner.chooser();
  const std::vector<ir::BoundedDim> bounded = boundedDims(d);
  if (!bounded.empty() && !here)
    fail(ErrorKind::Unsupported) << flagText(bounded[0])
                                 << ": mlcc check runs a library with run-time dimensions on "
                                    "this machine only so far (a host target)";
  CompiledModel m = compileWithDims(d, target, po, bounded);
  kir::Program &p = m.Program;
  if (!o.BreakNode.empty())
    breakKernel(p, o.BreakNode);
  llvmgen::CodegenOptions cg;
  cg.OptLevel = d.OptLevel;
  cg.SizeOpt = d.SizeOpt;
  Summary sum;
  sum.Model = d.Model;
  sum.Target = target.Name + " (" + target.Triple + (target.Cpu.empty() ? "" : ", " + target.Cpu) +
               ")";
  sum.Calls = p.Calls.size();
  for (size_t k = 0; k < bounded.size(); ++k)
    sum.Target += (k ? ", " : "; at ") + bounded[k].Name + "=" + std::to_string(values[k]);

  // The reference graph (also the names and shapes of every tensor), at
  // the run's values of the dimensions.
  std::unique_ptr<ir::Graph> refGraph = loadGraph(bounded.empty() ? d : atValues(d, bounded, values));
  check::Reference ref = check::buildReference(*refGraph, passes::FoldOptions{});
  std::vector<Data> inputs = makeInputs(o, p, *refGraph);
  std::vector<std::vector<uint8_t>> programInputs;
  for (size_t i = 0; i < p.Inputs.size(); ++i) {
    programInputs.push_back(programInput(p.Inputs[i], inputs[i]));
    // Dense at the run's extents, in a buffer of the size at MAX (never
    // empty: an input with no elements at this run, a KV cache at past=0,
    // still gets a pointer, as a caller's buffer would be).
    programInputs.back().resize(std::max<size_t>(
        {programInputs.back().size(), (size_t)p.Inputs[i].bytes(), 1}));
  }
  Tensors refs;
  if (o.References.empty()) {
    auto rs = std::chrono::steady_clock::now();
    refs = runReference(ref, inputs);
    sum.ReferenceS = seconds(rs);
    sum.Reference = ref.NoDoubleReason.empty()
                        ? "the model before optimization, in float64 (" +
                              std::to_string(ref.DoubleNodes) + " nodes in float64, " +
                              std::to_string(ref.OtherNodes) + " in their own types)"
                        : "the model before optimization, in its own types (" +
                              ref.NoDoubleReason + ")";
  } else {
    refs = userReferences(o, ref);
    sum.Reference = std::to_string(refs.size()) + " tensors from --reference";
  }
  for (size_t i = 0; i < p.Inputs.size(); ++i) // exact, by definition
    refs.emplace(p.Inputs[i].Name, inputs[i]);
  sum.CompileS = seconds(start);
  auto rs = std::chrono::steady_clock::now();
  CallBytes got = here ? runOnHost(p, target, cg, programInputs, values)
                       : runCross(o, p, target, cg, programInputs);
  sum.RunS = seconds(rs);
  sum.CompileS -= sum.ReferenceS;

  // Tensors some call writes: the walk back to a call's ONNX nodes stops there.
  std::set<std::string> produced;
  for (const kir::Call &c : p.Calls)
    for (const kir::CallOutput &po2 : c.Produces) {
      produced.insert(po2.Value);
      if (!po2.QuantizedFrom.empty())
        produced.insert(po2.QuantizedFrom);
      sum.Quantized = sum.Quantized || po2.Scale != 0;
    }
  for (const auto &in : p.Inputs)
    sum.Quantized = sum.Quantized || in.Scale != 0;
  sum.Criterion = sum.Quantized ? "SNR >= " + num(o.MinSnr) + " dB (--min-snr; a quantized model)"
                                : "max |error| <= " + num(o.Tolerance) +
                                      " x max |reference| (--tolerance)";

  std::vector<Row> rows;
  // The type whose units bound a tensor's error: its own, or, compiled
  // with --precision, the 16-bit type every float tensor before it was
  // stored in (a float32 tensor downstream carries those roundings).
  auto unitType = [&](DType t) {
    if (isFloat(t) && o.Compile.Precision == "float16")
      return DType::F16;
    if (isFloat(t) && o.Compile.Precision == "bfloat16")
      return DType::BF16;
    return t;
  };
  std::map<std::pair<int, size_t>, double> snrOf; // storage -> SNR of its last writer
  for (size_t c = 0; c < p.Calls.size(); ++c) {
    const kir::Call &call = p.Calls[c];
    const kir::Kernel &k = p.Kernels[call.KernelIndex];
    double inSnr = INFINITY;
    for (size_t a = 0; a < call.Args.size(); ++a) {
      auto it = snrOf.find({(int)call.Args[a].Kind, call.Args[a].Index});
      if (!k.Written[a] && it != snrOf.end())
        inSnr = std::min(inSnr, it->second);
    }
    for (size_t i = 0; i < call.Produces.size(); ++i) {
      const kir::CallOutput &po2 = call.Produces[i];
      Row r;
      r.Call = c;
      r.Kernel = k.Name;
      r.Tensor = po2.Value;
      r.Dims = po2.Dims;
      // A value that follows the dimensions: the elements in use at this
      // run's values (its layout is that at MAX, but for the caller's
      // outputs, which are dense at the run's extents).
      const ir::Value *mv = bounded.empty() ? nullptr : m.Graph->findValue(po2.Value);
      if (mv && !mv->Bounded.empty()) {
        r.Dims = extentsAt(*mv, values);
        if (!got[c][i].empty())
          got[c][i] = inUse(got[c][i], po2.Dims, r.Dims, dtypeSize(po2.Type),
                            call.Args[po2.Arg].Kind == kir::StorageKind::Output);
      }
      r.Type = po2.Type;
      r.Quantized = po2.Scale != 0;
      auto it = refs.find(po2.Value);
      if (it == refs.end() && !po2.QuantizedFrom.empty())
        it = refs.find(po2.QuantizedFrom);
      // A value the graph output views (a Reshape merging heads): the
      // output's data is this call's.
      if (it == refs.end() && call.Args[po2.Arg].Kind == kir::StorageKind::Output)
        it = refs.find(p.Outputs[call.Args[po2.Arg].Index].Name);
      r.Against = it == refs.end() ? "" : it->first;
      std::set<std::string> stops = produced; // what other calls write
      stops.erase(po2.Value);
      stops.erase(po2.QuantizedFrom);
      r.Nodes = onnxNodes(*refGraph, r.Against.empty() ? po2.Value : r.Against, stops);
      if (r.Nodes.empty())
        r.Nodes = call.Nodes;
      if (it == refs.end()) {
        r.Note = o.References.empty() ? "no tensor of this name in the original model"
                                      : "no --reference for this tensor";
      } else if (numElements(it->second.Dims) != numElements(r.Dims)) {
        r.Note = "the reference has shape " + shapeText(it->second.Dims);
      } else if (got[c][i].empty() && call.Guard) {
        r.Note = "not run: its condition was false in this run";
      } else if (got[c][i].empty()) {
        r.Note = "not read back (written to a constant or input)";
      } else {
        std::vector<double> g = Data{po2.Type, r.Dims, got[c][i]}.values();
        std::vector<double> want = it->second.values();
        if (po2.Scale != 0) {
          for (double &x : g)
            x = po2.Scale * (x - (double)po2.ZeroPoint);
          if (it->first == po2.Value && !isFloat(it->second.Type))
            for (double &x : want)
              x = po2.Scale * (x - (double)po2.ZeroPoint);
        }
        r.Compared = true;
        r.S = compareValues(g, want);
        r.Pass = sum.Quantized ? r.S.Snr >= o.MinSnr
                               : !r.S.NanMismatch &&
                                     r.S.MaxAbs <= allowedError(o.Tolerance, unitType(r.Type),
                                                                r.S.RefMax);
        // The accuracy this call loses: its inputs' SNR less its own (none
        // when its inputs are exact: the loss from exact is unbounded).
        if (sum.Quantized && std::isfinite(inSnr))
          r.Drop = inSnr - (std::isfinite(r.S.Snr) ? r.S.Snr : inSnr);
        snrOf[{(int)call.Args[po2.Arg].Kind, call.Args[po2.Arg].Index}] = r.S.Snr;
        ++sum.Compared;
        if (!r.Pass) {
          ++sum.Failed;
          if (sum.FirstFailure < 0)
            sum.FirstFailure = (long)c;
        }
      }
      if (!r.Compared) // what it computes from is as good as it gets known
        snrOf[{(int)call.Args[po2.Arg].Kind, call.Args[po2.Arg].Index}] = inSnr;
      rows.push_back(std::move(r));
    }
  }

  // The table.
  out += formatText("mlcc check %s\n  target:    %s%s\n  reference: %s\n  tolerance: %s\n",
              d.Model.c_str(), sum.Target.c_str(), here ? "" : " (run under QEMU)",
              sum.Reference.c_str(), sum.Criterion.c_str());
  out += formatText("\n%5s  %-16s %12s %10s %9s%s  %-6s %s\n", "call", "shape", "max abs err",
              "rel err", "SNR dB", sum.Quantized ? "  drop dB" : "", "status", "ONNX nodes");
  size_t hidden = 0;
  for (const Row &r : rows) {
    bool first = (long)r.Call == sum.FirstFailure && !r.Pass;
    if (o.FailuresOnly && r.Pass && r.Compared) {
      ++hidden;
      continue;
    }
    std::string nodes = nodesText(r.Nodes, 4);
    if (r.Compared)
      out += formatText("%5zu  %-16s %12s %10s %9s%s  %-6s %s%s\n", r.Call, shapeText(r.Dims).c_str(),
                  num(r.S.MaxAbs).c_str(), num(r.S.Rel).c_str(), num(r.S.Snr, "%.1f").c_str(),
                  sum.Quantized ? ("  " + std::string(7 - std::min<size_t>(7, num(r.Drop, "%.1f").size()), ' ') +
                                   num(r.Drop, "%.1f")).c_str()
                                : "",
                  r.Pass ? "ok" : "FAIL", nodes.c_str(),
                  first ? "  <-- first out of tolerance" : "");
    else
      out += formatText("%5zu  %-16s %s%s  %-6s %s (%s)\n", r.Call, shapeText(r.Dims).c_str(),
                  std::string(33, ' ').c_str(), sum.Quantized ? std::string(9, ' ').c_str() : "",
                  "-", nodes.c_str(), r.Note.c_str());
  }
  if (hidden)
    out += formatText("  (%zu calls within tolerance not shown)\n", hidden);
  out += formatText("\n%zu kernel calls, %zu outputs compared: %s\n", sum.Calls, sum.Compared,
              sum.Failed ? (std::to_string(sum.Failed) + " out of tolerance").c_str()
                         : "all within tolerance");
  if (sum.FirstFailure >= 0) {
    for (const Row &r : rows)
      if ((long)r.Call == sum.FirstFailure && !r.Pass) {
        out += formatText("first out of tolerance: call %zu, kernel %s, tensor '%s'\n  ONNX nodes: %s\n",
                    r.Call, r.Kernel.c_str(), r.Tensor.c_str(), nodesText(r.Nodes, 100).c_str());
        break;
      }
  }
  if (sum.Quantized) {
    std::vector<const Row *> byDrop;
    for (const Row &r : rows)
      if (r.Compared && std::isfinite(r.Drop) && r.Drop > 0)
        byDrop.push_back(&r);
    std::sort(byDrop.begin(), byDrop.end(),
              [](const Row *a, const Row *b) { return a->Drop > b->Drop; });
    if (!byDrop.empty()) {
      out += formatText("\nlayers that lose the most accuracy (SNR drop in the layer):\n");
      for (size_t i = 0; i < byDrop.size() && i < 5; ++i)
        out += formatText("  %5.1f dB  call %zu: %s\n", byDrop[i]->Drop, byDrop[i]->Call,
                    nodesText(byDrop[i]->Nodes, 100).c_str());
      std::string anchor;
      for (const kir::NodeRef &n : byDrop[0]->Nodes)
        if (anchor.empty() && (n.Op == "Conv" || n.Op == "MatMul" || n.Op == "Gemm"))
          anchor = n.Name;
      if (!d.Quantize.empty() && !anchor.empty())
        out += formatText("to keep a layer in float, add --keep-float NODE to the compile options "
                    "and check again (here: --keep-float %s)\n", anchor.c_str());
    }
  }
  out += formatText("time: compile %.2f s, run %.2f s, reference %.2f s\n", sum.CompileS, sum.RunS,
              sum.ReferenceS);
  result.Json = jsonReport(sum, rows);
  if (o.Html)
    result.Html = htmlReport(sum, rows, o.MinSnr);
  result.WithinTolerance = sum.Failed == 0;
  return result;
}

} // namespace

CheckResult checkModel(const CheckOptions &o) {
  // A library with run-time dimensions: checked at each combination of
  // the values --assign gives.
  const std::vector<ir::BoundedDim> bounded = boundedDims(o.Compile);
  std::vector<std::vector<int64_t>> valuesOf(bounded.size());
  for (const std::string &a : o.Assign) {
    auto [name, text] = splitArg(a, "--assign");
    size_t k = 0;
    while (k < bounded.size() && bounded[k].Name != name)
      ++k;
    if (k == bounded.size())
      fail(ErrorKind::Usage) << "--assign " << a << ": '" << name
                             << "' is not a dimension bound to a range (--dim " << name
                             << "=MIN..MAX)";
    char *end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || v < bounded[k].Min || v > bounded[k].Max)
      fail(ErrorKind::Usage) << "--assign " << a << ": not a value in " << bounded[k].Min
                             << ".." << bounded[k].Max << " (" << flagText(bounded[k]) << ")";
    valuesOf[k].push_back(v);
  }
  for (size_t k = 0; k < bounded.size(); ++k)
    if (valuesOf[k].empty())
      fail(ErrorKind::Usage) << flagText(bounded[k]) << ": mlcc check runs the library at "
                             << "values of its run-time dimensions: give them with --assign "
                             << bounded[k].Name << "=VALUE (repeatable)";
  if (bounded.empty())
    return runCheck(o, {});
  CheckResult all;
  std::vector<std::string> jsons;
  std::vector<size_t> at(bounded.size(), 0);
  while (true) {
    std::vector<int64_t> values;
    for (size_t k = 0; k < bounded.size(); ++k)
      values.push_back(valuesOf[k][at[k]]);
    CheckResult r = runCheck(o, values);
    all.Table += (all.Table.empty() ? "" : "\n") + r.Table;
    all.Html += r.Html;
    jsons.push_back(r.Json);
    all.WithinTolerance = all.WithinTolerance && r.WithinTolerance;
    size_t k = 0;
    while (k < bounded.size() && ++at[k] == valuesOf[k].size())
      at[k++] = 0;
    if (k == bounded.size())
      break;
  }
  // One value: its report; several: a list of them.
  if (jsons.size() == 1) {
    all.Json = jsons[0];
  } else {
    all.Json = "[";
    for (size_t i = 0; i < jsons.size(); ++i)
      all.Json += (i ? ",\n" : "") + jsons[i];
    all.Json += "]\n";
  }
  return all;
}

} // namespace mlcc
