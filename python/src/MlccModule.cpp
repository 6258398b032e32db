//===- MlccModule.cpp - mlcc._mlcc: the compiler API for Python -----------===//
//
// The extension under the `mlcc` package (python/mlcc/__init__.py, which
// turns keyword arguments into the command line's spellings): compile() to
// a Library, its info and report, write() and run() on numpy arrays, and
// the check. Errors are mlcc.Error with the compiler's one-line message and
// its kind and exit status.
//
//===----------------------------------------------------------------------===//
#include "mlcc/Check.h"
#include "mlcc/Compiler.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <functional>

namespace py = pybind11;

namespace {

/// The fields of CompileOptions by name, each with how it is set from a
/// Python value.
using Setter = std::function<void(mlcc::CompileOptions &, const py::handle &)>;

template <typename T> Setter field(T mlcc::CompileOptions::*member) {
  return [member](mlcc::CompileOptions &o, const py::handle &v) { o.*member = v.cast<T>(); };
}

const std::map<std::string, Setter> &setters() {
  using O = mlcc::CompileOptions;
  static const std::map<std::string, Setter> s = {
      {"model", field(&O::Model)},
      {"output", field(&O::Output)},
      {"emit", field(&O::Emit)},
      {"name", field(&O::Name)},
      {"dims", field(&O::Dims)},
      {"shapes", field(&O::Shapes)},
      {"freeze", field(&O::Freeze)},
      {"input_ranges", field(&O::InputRanges)},
      {"backend", field(&O::Backend)},
      {"target", field(&O::Target)},
      {"cpu", field(&O::Cpu)},
      {"features", field(&O::Features)},
      {"cuda_arch", field(&O::CudaArch)},
      {"no_library_dispatch", field(&O::NoLibraryDispatch)},
      {"gpu_schedule_on_host", field(&O::GpuScheduleOnHost)},
      {"opt_level", field(&O::OptLevel)},
      {"size_opt", field(&O::SizeOpt)},
      {"max_arena", field(&O::MaxArena)},
      {"max_weights", field(&O::MaxWeights)},
      {"max_code", field(&O::MaxCode)},
      {"max_tensor", field(&O::MaxTensor)},
      {"precision", field(&O::Precision)},
      {"kv_cache", field(&O::KvCache)},
      {"quantize", field(&O::Quantize)},
      {"calibrate", field(&O::Calibrate)},
      {"calibration_method", field(&O::CalibrationMethod)},
      {"quantize_io", field(&O::QuantizeIo)},
      {"reduce_range", field(&O::ReduceRange)},
      {"weight_bits", field(&O::WeightBits)},
      {"keep_float", field(&O::KeepFloat)},
      {"verbose", field(&O::Verbose)},
      {"time_passes", field(&O::TimePasses)},
      {"tune", field(&O::Tune)},
      {"tune_db", field(&O::TuneDb)},
      {"tune_budget", field(&O::TuneBudget)},
      {"cache_dir", field(&O::CacheDir)},
      {"cache_max", field(&O::CacheMax)},
      {"jobs", field(&O::Jobs)},
      {"cycles", field(&O::Cycles)},
      {"clock_mhz", field(&O::ClockMHz)},
      {"wait_states", field(&O::WaitStates)},
  };
  return s;
}

mlcc::CompileOptions compileOptions(const py::dict &d) {
  mlcc::CompileOptions o;
  o.ProgressMode = "never";
  for (auto &[key, value] : d) {
    std::string k = key.cast<std::string>();
    auto it = setters().find(k);
    if (it == setters().end())
      throw py::type_error("mlcc: unknown compile option '" + k + "'");
    it->second(o, value);
  }
  return o;
}

py::dict tensorInfo(const mlcc::TensorInfo &t) {
  py::dict d;
  d["name"] = t.Name;
  d["c_name"] = t.CName;
  d["dtype"] = t.Type;
  d["shape"] = py::tuple(py::cast(t.Shape));
  d["extents"] = py::tuple(py::cast(t.Extents));
  if (t.Scale != 0) {
    d["scale"] = t.Scale;
    d["zero_point"] = t.ZeroPoint;
  }
  return d;
}

py::dict libraryInfo(const mlcc::LibraryInfo &i) {
  py::dict d;
  d["name"] = i.Name;
  d["target"] = i.Target;
  d["triple"] = i.Triple;
  d["cpu"] = i.Cpu;
  py::list ins, outs, dims;
  for (auto &t : i.Inputs)
    ins.append(tensorInfo(t));
  for (auto &t : i.Outputs)
    outs.append(tensorInfo(t));
  for (auto &dim : i.Dims) {
    py::dict x;
    x["name"] = dim.Name;
    x["min"] = dim.Min;
    x["max"] = dim.Max;
    dims.append(x);
  }
  d["inputs"] = ins;
  d["outputs"] = outs;
  d["dims"] = dims;
  d["arena_bytes"] = i.ArenaBytes;
  d["arena_align"] = i.ArenaAlign;
  d["weight_bytes"] = i.WeightBytes;
  d["code_bytes"] = i.CodeBytes < 0 ? py::object(py::none()) : py::object(py::int_(i.CodeBytes));
  d["kernel_calls"] = i.KernelCalls;
  return d;
}

/// numpy's name of an ONNX element type the run can take.
std::string numpyType(const std::string &onnx) {
  static const std::map<std::string, std::string> names = {
      {"float", "float32"}, {"double", "float64"}, {"float16", "float16"}, {"int8", "int8"},
      {"uint8", "uint8"},   {"int16", "int16"},    {"uint16", "uint16"},   {"int32", "int32"},
      {"uint32", "uint32"}, {"int64", "int64"},    {"uint64", "uint64"},   {"bool", "bool"}};
  auto it = names.find(onnx);
  if (it == names.end())
    throw mlcc::CompileError(mlcc::ErrorKind::Unsupported,
                             "run(): element type " + onnx + " has no numpy type here");
  return it->second;
}

/// Runs `lib` on arrays (a dict by input name, or a list in order).
py::dict run(const mlcc::Library &lib, const py::object &given, const py::object &dimsGiven) {
  const mlcc::LibraryInfo &info = lib.info();
  std::vector<py::array> arrays;
  for (size_t i = 0; i < info.Inputs.size(); ++i) {
    const mlcc::TensorInfo &t = info.Inputs[i];
    py::object a;
    if (py::isinstance<py::dict>(given)) {
      py::dict d = given.cast<py::dict>();
      if (!d.contains(t.Name))
        throw mlcc::CompileError(mlcc::ErrorKind::Usage, "run(): no array for input '" + t.Name + "'");
      a = d[py::str(t.Name)];
    } else {
      py::list l = py::list(given);
      if (l.size() != info.Inputs.size())
        throw mlcc::CompileError(mlcc::ErrorKind::Usage,
                                 "run(): the model takes " + std::to_string(info.Inputs.size()) +
                                     " inputs, not " + std::to_string(l.size()));
      a = l[i];
    }
    py::dtype type(numpyType(t.Type));
    arrays.push_back(py::array::ensure(py::module_::import("numpy").attr("ascontiguousarray")(a, type)));
  }
  if (py::isinstance<py::dict>(given))
    for (auto &[k, v] : given.cast<py::dict>()) {
      bool known = false;
      for (auto &t : info.Inputs)
        known = known || t.Name == k.cast<std::string>();
      if (!known)
        throw mlcc::CompileError(mlcc::ErrorKind::Usage,
                                 "run(): the model has no input '" + k.cast<std::string>() + "'");
    }
  std::vector<std::vector<int64_t>> shapes;
  for (auto &a : arrays)
    shapes.emplace_back(a.shape(), a.shape() + a.ndim());
  std::map<std::string, int64_t> dims = lib.dimsFromShapes(shapes);
  if (!dimsGiven.is_none())
    for (auto &[k, v] : dimsGiven.cast<std::map<std::string, int64_t>>())
      dims[k] = v;
  for (size_t i = 0; i < arrays.size(); ++i) {
    std::vector<int64_t> want = lib.inputShape(i, dims);
    if (shapes[i] != want) {
      std::string w, g;
      for (size_t k = 0; k < want.size(); ++k)
        w += (k ? "x" : "") + std::to_string(want[k]);
      for (size_t k = 0; k < shapes[i].size(); ++k)
        g += (k ? "x" : "") + std::to_string(shapes[i][k]);
      throw mlcc::CompileError(mlcc::ErrorKind::Usage, "run(): input '" + info.Inputs[i].Name +
                                                           "' has shape " + g + ", the model takes " +
                                                           (w.empty() ? "a scalar" : w));
    }
  }
  std::vector<py::array> outs;
  std::vector<const void *> inPtrs;
  std::vector<void *> outPtrs;
  for (auto &a : arrays)
    inPtrs.push_back(a.data());
  for (size_t i = 0; i < info.Outputs.size(); ++i) {
    std::vector<py::ssize_t> shape;
    for (int64_t e : lib.outputShape(i, dims))
      shape.push_back((py::ssize_t)e);
    outs.emplace_back(py::dtype(numpyType(info.Outputs[i].Type)), shape);
    outPtrs.push_back(outs.back().mutable_data());
  }
  {
    py::gil_scoped_release unlocked;
    lib.run(inPtrs, outPtrs, dims);
  }
  py::dict result;
  for (size_t i = 0; i < outs.size(); ++i)
    result[py::str(info.Outputs[i].Name)] = outs[i];
  return result;
}

} // namespace

PYBIND11_MODULE(_mlcc, m) {
  m.doc() = "mlcc's compiler API (use the mlcc package)";
  static py::exception<mlcc::CompileError> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const mlcc::CompileError &e) {
      py::object exc = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      exc.attr("kind") = mlcc::errorKindName(e.kind());
      exc.attr("exit_status") = mlcc::exitStatus(e.kind());
      PyErr_SetObject(error.ptr(), exc.ptr());
    }
  });

  py::class_<mlcc::Library>(m, "Library")
      .def_property_readonly("info", [](const mlcc::Library &l) { return libraryInfo(l.info()); })
      .def_property_readonly("report_json", &mlcc::Library::reportJson)
      .def_property_readonly("report_text", &mlcc::Library::reportText)
      .def_property_readonly("runs_here", &mlcc::Library::runsHere)
      .def("write", &mlcc::Library::write, py::arg("path"))
      .def("run", &run, py::arg("inputs"), py::arg("dims") = py::none());

  m.def("compile", [](const py::dict &options) {
    mlcc::CompileOptions o = compileOptions(options);
    py::gil_scoped_release unlocked;
    return mlcc::compile(o);
  });
  m.def("check", [](const py::dict &options, const py::dict &checkOptions) {
    mlcc::CheckOptions o;
    o.Compile = compileOptions(options);
    for (auto &[key, value] : checkOptions) {
      std::string k = key.cast<std::string>();
      if (k == "inputs")
        o.Inputs = value.cast<std::vector<std::string>>();
      else if (k == "references")
        o.References = value.cast<std::vector<std::string>>();
      else if (k == "tolerance")
        o.Tolerance = value.cast<double>();
      else if (k == "min_snr")
        o.MinSnr = value.cast<double>();
      else if (k == "seed")
        o.Seed = value.cast<uint64_t>();
      else if (k == "cc")
        o.Cc = value.cast<std::string>();
      else if (k == "run")
        o.Run = value.cast<std::string>();
      else if (k == "assign")
        o.Assign = value.cast<std::vector<std::string>>();
      else
        throw py::type_error("mlcc: unknown check option '" + k + "'");
    }
    mlcc::CheckResult r;
    {
      py::gil_scoped_release unlocked;
      r = mlcc::checkModel(o);
    }
    return py::make_tuple(r.WithinTolerance, r.Table, r.Json);
  });
  m.def("target_list", &mlcc::targetList);
  m.def("op_list", &mlcc::opList);
  m.attr("__version__") = mlcc::version();
}
