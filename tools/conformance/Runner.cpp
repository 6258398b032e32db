//===- Runner.cpp - The ONNX backend conformance harness ------------------===//
//
// For every case of the ONNX backend test data: compile model.onnx with the
// real mlcc command line into a static library, link it with driver.c into a
// test program, run the program on the case's inputs and compare its outputs
// with the expected ones. Each case ends as:
//
//   passed       outputs match
//   failed       mlcc crashed or failed on a valid model, the program failed,
//                or outputs differ
//   unsupported  mlcc said clearly that it does not support something
//
// When mlcc reports that an input determines an output shape (exit status
// 4), the case is retried with that input frozen (--freeze) to its test
// value; such passes are marked in the CSV.
//
// With --bounded-axis, each case runs again with an axis bound at run time:
// axis 0 of the first graph input becomes a named dimension (its dim_param,
// or "d" written into a copy of the model), compiled with --dim d=1..K (K
// twice the case's extent) and run at the case's extent. Where the model is
// not consistent at other values of that axis alone, the axes of the other
// inputs with the same extent follow it too; a case with no consistent
// rewrite is "n/a". --fixed-csv (the CSV of the fixed run) and --op-table
// then count, per op, the cases that pass bounded against those that pass
// fixed.
//
// Known failures live in one list file, one case per line with its reason.
// The exit status is non-zero if a case fails that is not listed, if a
// listed case no longer fails, or if a folder passes fewer cases than a
// --min-pass threshold.
//
//===----------------------------------------------------------------------===//
#include "compiler/support/Error.h"
#include "compiler/support/Process.h"
#include "frontends/onnx/OnnxLoader.h"
#include "tools/conformance/Compare.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <thread>

namespace fs = std::filesystem;
using namespace mlcc;

namespace {

struct Options {
  std::string Suite, Mlcc, RuntimeInclude, Driver, Work, Known, Csv;
  std::string Backend = "c";
  std::vector<std::string> MlccArgs;
  std::vector<std::string> Folders = {"node", "simple", "pytorch-converted",
                                      "pytorch-operator", "light"};
  std::string Filter;
  std::vector<std::string> MinPass;
  std::string Cc = "cc";            ///< compiles the driver and links
  /// Extra flags for the driver, the link and (as $CFLAGS) mlcc's C backend.
  std::string CFlags;
  std::string RunPrefix;            ///< e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu"
  std::string SamplePassed;         ///< CSV of a host run: sample its passed cases
  int Sample = 0;                   ///< how many cases to sample evenly
  int Jobs = 0;
  int Timeout = 300;
  bool Verbose = false;
  bool Keep = false;
  /// Stop after mlcc: a case passes when it compiles (its output is kept),
  /// for targets whose programs cannot run here (--target cuda).
  bool CompileOnly = false;
  /// mlcc's output file in each case's folder (its extension picks what
  /// mlcc writes).
  std::string Output = "libm.a";
  /// Name each case's model after its folder and case (a C identifier),
  /// so that the outputs of many cases can be compiled together.
  bool UniqueNames = false;
  /// Rerun every case with axis 0 of its first input bound at run time.
  bool BoundedAxis = false;
  std::string FixedCsv; ///< a fixed run's CSV, to compare with per op
  std::string OpTable;  ///< the per-op comparison, as a Markdown table
};

enum class Status { Passed, Failed, Unsupported, NotApplicable };

struct Result {
  std::string Folder, Case;
  Status S = Status::Failed;
  std::string Detail;
  std::string Frozen; ///< inputs frozen to make the case compile
  std::string Op;     ///< the op a one-node model tests (--op-table)
  double Seconds = 0;
};

const char *statusName(Status s) {
  switch (s) {
  case Status::Passed: return "passed";
  case Status::Failed: return "failed";
  case Status::Unsupported: return "unsupported";
  case Status::NotApplicable: return "n/a";
  }
  return "?";
}

std::string readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string firstLine(const std::string &s) {
  std::string line = s.substr(0, s.find('\n'));
  const std::string prefix = "mlcc: error: ";
  if (line.compare(0, prefix.size(), prefix) == 0)
    line = line.substr(prefix.size());
  return line.substr(0, 400);
}

test::Tolerance toleranceFor(const fs::path &caseDir) {
  test::Tolerance tol;
  fs::path json = caseDir / "data.json";
  if (!fs::exists(json))
    return tol;
  std::string text = readAll(json.string());
  std::smatch m;
  static const std::regex rtol("\"rtol\"\\s*:\\s*([-+0-9.eE]+)");
  static const std::regex atol("\"atol\"\\s*:\\s*([-+0-9.eE]+)");
  if (std::regex_search(text, m, rtol))
    tol.Rtol = std::stod(m[1]);
  if (std::regex_search(text, m, atol))
    tol.Atol = std::stod(m[1]);
  return tol;
}

/// Sorted input_N.pb / output_N.pb files of a test data set.
std::vector<fs::path> dataFiles(const fs::path &set, const std::string &prefix) {
  std::vector<std::pair<int, fs::path>> files;
  for (auto &e : fs::directory_iterator(set)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() + 3 &&
        name.substr(name.size() - 3) == ".pb")
      files.push_back({std::stoi(name.substr(prefix.size())), e.path()});
  }
  std::sort(files.begin(), files.end());
  std::vector<fs::path> out;
  for (auto &f : files)
    out.push_back(f.second);
  return out;
}

/// The graph input whose axis 0 a bounded rerun binds at run time, and the
/// case's extent there.
struct BoundedInput {
  std::string Input;
  int64_t Value = 0;
};

/// A model to compile and its --dim arguments.
struct Rewrite {
  std::string Model;
  std::vector<std::string> Dims;
  BoundedInput Bound;
};

bool numericDim(const std::string &d) {
  return !d.empty() && std::isdigit((unsigned char)d[0]);
}

class Harness {
public:
  explicit Harness(Options o) : O(std::move(o)) {}

  int run() {
    fs::create_directories(O.Work);
    loadKnown();
    buildDriver();
    std::vector<std::pair<std::string, std::string>> cases;
    for (auto &folder : O.Folders) {
      fs::path dir = fs::path(O.Suite) / folder;
      if (!fs::exists(dir))
        continue;
      std::vector<std::string> names;
      for (auto &e : fs::directory_iterator(dir))
        if (e.is_directory() && fs::exists(e.path() / "model.onnx"))
          names.push_back(e.path().filename().string());
      std::sort(names.begin(), names.end());
      for (auto &n : names)
        if (O.Filter.empty() || std::regex_search(folder + "/" + n, std::regex(O.Filter)))
          cases.push_back({folder, n});
    }
    if (!O.SamplePassed.empty())
      cases = sampleCases(cases);
    Results.resize(cases.size());
    std::atomic<size_t> next{0};
    int jobs = O.Jobs > 0 ? O.Jobs : (int)std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    auto start = std::chrono::steady_clock::now();
    for (int j = 0; j < jobs; ++j)
      pool.emplace_back([&] {
        for (size_t i; (i = next++) < cases.size();) {
          Results[i] = runCase(cases[i].first, cases[i].second);
          if (O.Verbose) {
            std::lock_guard<std::mutex> lock(Mu);
            std::cerr << statusName(Results[i].S) << " " << cases[i].first << "/"
                      << cases[i].second << " " << Results[i].Detail << "\n";
          }
        }
      });
    for (auto &t : pool)
      t.join();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report(secs);
  }

private:
  void loadKnown() {
    if (O.Known.empty())
      return;
    std::ifstream in(O.Known);
    if (!in)
      fail(ErrorKind::Io) << "cannot read known-failures list " << O.Known;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#')
        continue;
      std::istringstream ls(line);
      std::string id, tag;
      ls >> id;
      // Optional backend tag: "node/test_x [llvm] reason".
      std::string rest;
      std::getline(ls, rest);
      size_t p = rest.find_first_not_of(' ');
      rest = p == std::string::npos ? "" : rest.substr(p);
      if (rest.size() > 2 && rest[0] == '[') {
        tag = rest.substr(1, rest.find(']') - 1);
        if (tag != O.Backend)
          continue;
      }
      Known.insert(id);
    }
  }

  /// Each case's status ("FOLDER/CASE" -> "passed", ...) in the CSV of an
  /// earlier run (`what`, for the message when it is missing).
  static std::map<std::string, std::string> caseStatuses(const std::string &csv,
                                                         const std::string &what) {
    std::ifstream in(csv);
    if (!in)
      fail(ErrorKind::Io) << "cannot read " << csv << " (run " << what << " first)";
    std::map<std::string, std::string> statuses;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ls(line);
      std::string cell;
      for (int i = 0; i < 4 && std::getline(ls, cell, ','); ++i)
        f.push_back(cell);
      if (f.size() == 4)
        statuses[f[0] + "/" + f[1]] = f[3];
    }
    return statuses;
  }

  /// An even sample of the cases that passed in an earlier (host) run.
  std::vector<std::pair<std::string, std::string>>
  sampleCases(const std::vector<std::pair<std::string, std::string>> &all) {
    std::set<std::string> passed;
    for (auto &[name, status] : caseStatuses(O.SamplePassed, "the host conformance test"))
      if (status == "passed")
        passed.insert(name);
    std::vector<std::pair<std::string, std::string>> pool, out;
    for (auto &c : all)
      if (passed.count(c.first + "/" + c.second))
        pool.push_back(c);
    size_t n = O.Sample > 0 ? std::min<size_t>((size_t)O.Sample, pool.size()) : pool.size();
    for (size_t i = 0; i < n; ++i)
      out.push_back(pool[i * pool.size() / n]);
    return out;
  }

  std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::istringstream is(s);
    std::string w;
    while (is >> w)
      out.push_back(w);
    return out;
  }

  void buildDriver() {
    DriverObj = (fs::path(O.Work) / "driver.o").string();
    std::string log;
    std::vector<std::string> cmd = {O.Cc, "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror",
                                    "-I", O.RuntimeInclude, "-c", O.Driver, "-o", DriverObj};
    for (auto &f : split(O.CFlags))
      cmd.push_back(f);
    int rc = runProcess(cmd, &log);
    if (rc != 0)
      fail(ErrorKind::Io) << "cannot compile the driver: " << log;
  }

  std::vector<std::string> timeoutCmd() {
    return {"timeout", "-k", "5", std::to_string(O.Timeout)};
  }

  Result runCase(const std::string &folder, const std::string &name) {
    Result r;
    r.Folder = folder;
    r.Case = name;
    auto start = std::chrono::steady_clock::now();
    fs::path caseDir = fs::path(O.Suite) / folder / name;
    fs::path work = fs::path(O.Work) / folder / name;
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work);
    try {
      if (O.BoundedAxis) {
        std::vector<std::string> ops = onnx::describeNodeOps((caseDir / "model.onnx").string());
        r.Op = ops.size() == 1 ? ops[0] : "(graphs of several ops)";
      }
      runCaseIn(caseDir, work, r);
    } catch (const std::exception &e) {
      r.S = Status::Failed;
      r.Detail = std::string("harness: ") + e.what();
    }
    if (r.S == Status::Passed && !O.Keep && !O.CompileOnly)
      fs::remove_all(work, ec);
    r.Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }

  void runCaseIn(const fs::path &caseDir, const fs::path &work, Result &r) {
    std::vector<fs::path> sets;
    for (auto &e : fs::directory_iterator(caseDir))
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
        sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) {
      r.S = Status::Failed;
      r.Detail = "harness: case has no test data";
      return;
    }
    std::vector<fs::path> inFiles = dataFiles(sets[0], "input_");

    // Compile, freezing inputs that mlcc needs at compile time.
    std::string lib = (work / O.Output).string();
    std::string modelName = "m";
    if (O.UniqueNames) {
      modelName.clear();
      for (char ch : work.parent_path().filename().string() + "_" + work.filename().string())
        modelName += std::isalnum((unsigned char)ch) ? ch : '_';
    }
    std::vector<std::string> frozen;
    std::string log;
    int rc = 0;
    std::vector<std::string> names; // graph input names, once known
    // Symbolic input dimensions take the extents of the test inputs, as a
    // user would bind them with --dim.
    std::vector<std::string> dims = symbolicDims(caseDir, inFiles);
    std::string model = (caseDir / "model.onnx").string();
    std::vector<Rewrite> rewrites;
    if (O.BoundedAxis) {
      rewrites = boundedRewrites(caseDir, inFiles, work, dims);
      if (rewrites.empty()) {
        r.S = Status::NotApplicable;
        r.Detail = "no graph input of rank 1 or more";
        return;
      }
    }
    BoundedInput bound;
    auto compileWith = [&](const Rewrite &w) {
      model = w.Model;
      dims = w.Dims;
      bound = w.Bound;
    };
    size_t rewrite = 0;
    if (!rewrites.empty())
      compileWith(rewrites[0]);
    for (int attempt = 0; attempt < 8; ++attempt) {
      std::vector<std::string> cmd = timeoutCmd();
      cmd.insert(cmd.end(), {O.Mlcc, model, "-o", lib, "--name", modelName});
      for (auto &d : dims)
        cmd.insert(cmd.end(), {"--dim", d});
      cmd.insert(cmd.end(), O.MlccArgs.begin(), O.MlccArgs.end());
      for (auto &f : frozen)
        cmd.insert(cmd.end(), {"--freeze", f});
      log.clear();
      rc = runProcess(cmd, &log);
      // An invalid model at other values of the bounded axis: its next
      // rewrite ties more axes to it.
      if (rc == 1 && rewrite + 1 < rewrites.size()) {
        compileWith(rewrites[++rewrite]);
        --attempt;
        continue;
      }
      if (rc != 4)
        break;
      // "... freeze it with --freeze NAME=FILE.pb"
      static const std::regex want("--freeze (.+)=FILE\\.pb");
      std::smatch m;
      if (!std::regex_search(log, m, want))
        break;
      std::string input = m[1].str();
      int idx = graphInputIndex(caseDir, input);
      if (idx < 0 || idx >= (int)inFiles.size())
        break;
      frozen.push_back(input + "=" + inFiles[(size_t)idx].string());
      r.Frozen += (r.Frozen.empty() ? "" : " ") + input;
    }
    if (O.BoundedAxis && (rc == 1 || bound.Input.empty() ||
                          std::find_if(frozen.begin(), frozen.end(), [&](const std::string &f) {
                            return f.compare(0, bound.Input.size() + 1, bound.Input + "=") == 0;
                          }) != frozen.end())) {
      r.S = Status::NotApplicable;
      r.Detail = rc == 1 ? "no consistent rewrite: " + firstLine(log)
                         : "the bounded input is read at compile time";
      return;
    }
    if (rc == 3 || rc == 4) {
      r.S = Status::Unsupported;
      r.Detail = firstLine(log);
      return;
    }
    if (rc != 0) {
      r.S = Status::Failed;
      r.Detail = "mlcc exit " + std::to_string(rc) + ": " + firstLine(log);
      return;
    }

    if (O.CompileOnly) {
      r.S = Status::Passed;
      if (!r.Frozen.empty())
        r.Detail = "frozen: " + r.Frozen;
      return;
    }

    // Link the test program.
    std::string exe = (work / "run").string();
    log.clear();
    std::vector<std::string> link = {O.Cc, "-o", exe, DriverObj, lib, "-lm"};
    for (auto &f : split(O.CFlags))
      link.push_back(f);
    rc = runProcess(link, &log);
    if (rc != 0) {
      r.S = Status::Failed;
      r.Detail = "link failed: " + firstLine(log);
      return;
    }

    // Inputs the library still takes: the graph inputs minus frozen ones.
    std::vector<std::string> allInputs = graphInputNames(caseDir);
    std::vector<std::string> libInputs;
    for (auto &n : allInputs)
      if (std::find_if(frozen.begin(), frozen.end(), [&](const std::string &f) {
            return f.compare(0, n.size() + 1, n + "=") == 0;
          }) == frozen.end())
        libInputs.push_back(n);

    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<fs::path> ins = dataFiles(sets[s], "input_");
      std::vector<fs::path> outs = dataFiles(sets[s], "output_");
      std::vector<std::string> cmd = timeoutCmd();
      for (auto &w : split(O.RunPrefix))
        cmd.push_back(w);
      cmd.push_back(exe);
      if (O.BoundedAxis)
        cmd.insert(cmd.end(), {"-d", std::to_string(bound.Value)});
      for (auto &want : libInputs) {
        auto it = std::find(allInputs.begin(), allInputs.end(), want);
        size_t idx = (size_t)(it - allInputs.begin());
        if (it == allInputs.end() || idx >= ins.size()) {
          r.S = Status::Failed;
          r.Detail = "harness: no test data for input '" + want + "'";
          return;
        }
        TensorPtr t = onnx::loadTensorFile(ins[idx].string());
        std::string bin = (work / ("in" + std::to_string(idx) + ".bin")).string();
        std::vector<uint8_t> bytes = t->denseBytes();
        std::ofstream(bin, std::ios::binary)
            .write((const char *)bytes.data(), (std::streamsize)bytes.size());
        cmd.push_back(bin);
      }
      cmd.push_back("--");
      for (size_t k = 0; k < outs.size(); ++k)
        cmd.push_back((work / ("out" + std::to_string(k) + ".bin")).string());
      log.clear();
      rc = runProcess(cmd, &log);
      if (rc != 0) {
        r.S = Status::Failed;
        r.Detail = "test program exit " + std::to_string(rc) + ": " + firstLine(log);
        return;
      }
      test::Tolerance tol = toleranceFor(caseDir);
      for (size_t k = 0; k < outs.size(); ++k) {
        TensorPtr expected = onnx::loadTensorFile(outs[k].string());
        std::string actual = readAll((work / ("out" + std::to_string(k) + ".bin")).string());
        // A bounded library's output is dense at the run-time extents in
        // the leading bytes of its buffer (sized for MAX).
        size_t want = expected->denseBytes().size();
        if (O.BoundedAxis && actual.size() > want)
          actual.resize(want);
        std::string diff = test::compareTensor(*expected, actual, tol);
        if (!diff.empty()) {
          r.S = Status::Failed;
          r.Detail = "output " + std::to_string(k) + ": " + diff;
          return;
        }
      }
    }
    r.S = Status::Passed;
    if (!r.Frozen.empty())
      r.Detail = "frozen: " + r.Frozen;
  }

  /// The models of a bounded rerun, in the order to try: axis 0 of the
  /// first graph input of rank 1 or more named (its own dim_param, or a new
  /// dimension "d"), then the same with every numeric axis of the other
  /// inputs that has the same extent in the test data named alike. Each
  /// binds the name to 1..2*extent (0..2 for an empty axis); the other
  /// symbolic dimensions keep `fixedDims`' values.
  std::vector<Rewrite> boundedRewrites(const fs::path &caseDir, const std::vector<fs::path> &inFiles,
                                       const fs::path &work,
                                       const std::vector<std::string> &fixedDims) {
    const std::string model = (caseDir / "model.onnx").string();
    std::vector<onnx::GraphInputDesc> inputs = graphInputs(caseDir);
    std::vector<std::optional<Shape>> shapes;
    for (size_t i = 0; i < inputs.size() && i < inFiles.size(); ++i) {
      try {
        shapes.push_back(onnx::loadTensorFile(inFiles[i].string())->shape());
      } catch (const CompileError &) {
        shapes.push_back(std::nullopt); // a sequence or optional input
      }
      if (shapes.back() && shapes.back()->size() != inputs[i].Dims.size())
        shapes.back().reset();
    }
    size_t first = 0;
    while (first < shapes.size() && (!shapes[first] || shapes[first]->empty()))
      ++first;
    if (first == shapes.size())
      return {};
    const int64_t extent = (*shapes[first])[0];
    const std::string &declared = inputs[first].Dims[0];
    const bool symbolic = !declared.empty() && !numericDim(declared);
    std::string name = symbolic ? declared : "d";
    for (auto &in : inputs)
      if (!symbolic && std::find(in.Dims.begin(), in.Dims.end(), name) != in.Dims.end())
        name = "d_bounded";
    std::vector<std::string> dims;
    for (auto &d : fixedDims)
      if (d.compare(0, name.size() + 1, name + "=") != 0)
        dims.push_back(d);
    dims.push_back(name + "=" + std::to_string(std::min<int64_t>(1, extent)) + ".." +
                   std::to_string(std::max<int64_t>(2 * extent, 2)));
    const BoundedInput bound{inputs[first].Name, extent};
    auto written = [&](const std::vector<onnx::NamedAxis> &axes, const std::string &file) {
      if (axes.empty())
        return model;
      std::string path = (work / file).string();
      std::string bytes = onnx::withNamedAxes(model, axes);
      std::ofstream(path, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
      return path;
    };
    std::vector<onnx::NamedAxis> axes;
    if (!symbolic)
      axes.push_back({inputs[first].Name, 0, name});
    std::vector<Rewrite> out{{written(axes, "bounded.onnx"), dims, bound}};
    // The other inputs' axes of the same extent that may follow it: those
    // that broadcasting aligns with it, their axes 0, any.
    const size_t rank = shapes[first]->size();
    std::vector<std::function<bool(size_t, size_t)>> ties = {
        [&](size_t i, size_t a) { return a + rank == shapes[i]->size(); },
        [&](size_t, size_t a) { return a == 0; }, [&](size_t, size_t) { return true; }};
    std::set<std::vector<std::pair<std::string, size_t>>> tried;
    for (size_t t = 0; t < ties.size(); ++t) {
      std::vector<onnx::NamedAxis> tied = axes;
      for (size_t i = 0; i < shapes.size(); ++i)
        for (size_t a = 0; shapes[i] && i != first && a < shapes[i]->size(); ++a)
          if (numericDim(inputs[i].Dims[a]) && (*shapes[i])[a] == extent && ties[t](i, a))
            tied.push_back({inputs[i].Name, a, name});
      std::vector<std::pair<std::string, size_t>> key;
      for (auto &x : tied)
        key.push_back({x.Input, x.Axis});
      if (tied.size() > axes.size() && tried.insert(key).second)
        out.push_back({written(tied, "bounded-tied" + std::to_string(t) + ".onnx"), dims, bound});
    }
    return out;
  }

  /// NAME=VALUE for each symbolic dimension of the graph inputs, read from
  /// the shapes of the first test data set's inputs.
  std::vector<std::string> symbolicDims(const fs::path &caseDir,
                                        const std::vector<fs::path> &inFiles) {
    std::vector<onnx::GraphInputDesc> inputs = graphInputs(caseDir);
    std::vector<std::vector<std::string>> dims;
    for (auto &in : inputs)
      dims.push_back(in.Dims);
    std::map<std::string, int64_t> bound;
    for (size_t i = 0; i < dims.size() && i < inFiles.size(); ++i) {
      bool symbolic = false;
      for (auto &d : dims[i])
        if (!d.empty() && !std::isdigit((unsigned char)d[0]))
          symbolic = true;
      if (!symbolic)
        continue;
      TensorPtr t;
      try {
        t = onnx::loadTensorFile(inFiles[i].string());
      } catch (const CompileError &) {
        continue; // not a tensor (a sequence): mlcc will say so
      }
      if (t->rank() != dims[i].size())
        continue;
      for (size_t d = 0; d < dims[i].size(); ++d)
        if (!dims[i][d].empty() && !std::isdigit((unsigned char)dims[i][d][0]))
          bound.emplace(dims[i][d], t->shape()[d]);
    }
    std::vector<std::string> out;
    for (auto &[name, v] : bound)
      out.push_back(name + "=" + std::to_string(v));
    return out;
  }

  /// The graph inputs (initializers excluded) of a case's model, read once.
  std::vector<onnx::GraphInputDesc> graphInputs(const fs::path &caseDir) {
    std::lock_guard<std::mutex> lock(Mu);
    auto it = InputCache.find(caseDir.string());
    if (it == InputCache.end())
      it = InputCache
               .emplace(caseDir.string(),
                        onnx::describeGraphInputs((caseDir / "model.onnx").string()))
               .first;
    return it->second;
  }

  std::vector<std::string> graphInputNames(const fs::path &caseDir) {
    std::vector<std::string> names;
    for (auto &in : graphInputs(caseDir))
      names.push_back(in.Name);
    return names;
  }

  int graphInputIndex(const fs::path &caseDir, const std::string &name) {
    std::vector<std::string> names = graphInputNames(caseDir);
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : (int)(it - names.begin());
  }

  int report(double seconds) {
    std::map<std::string, std::array<int, 4>> perFolder;
    std::array<int, 4> total{0, 0, 0, 0};
    std::vector<std::string> unexpected, stale;
    std::set<std::string> seen;
    for (auto &r : Results) {
      perFolder[r.Folder][(int)r.S]++;
      total[(int)r.S]++;
      std::string id = r.Folder + "/" + r.Case;
      seen.insert(id);
      bool known = Known.count(id) > 0;
      if (r.S == Status::Failed && !known)
        unexpected.push_back(id + ": " + r.Detail);
      if (r.S != Status::Failed && known)
        stale.push_back(id + " (" + statusName(r.S) + ")");
    }
    if (!O.Csv.empty()) {
      std::ofstream csv(O.Csv);
      csv << "folder,case,backend,status,frozen,seconds,detail\n";
      for (auto &r : Results) {
        std::string d = r.Detail;
        std::replace(d.begin(), d.end(), '"', '\'');
        csv << r.Folder << "," << r.Case << "," << O.Backend << ","
            << statusName(r.S) << "," << r.Frozen << "," << r.Seconds << ",\""
            << d << "\"\n";
      }
    }
    for (auto &folder : O.Folders) {
      if (!perFolder.count(folder))
        continue;
      auto &c = perFolder[folder];
      std::printf("%-18s %4d passed, %4d failed, %4d unsupported%s (of %d) [%s]\n",
                  (folder + ":").c_str(), c[0], c[1], c[2],
                  c[3] ? (", " + std::to_string(c[3]) + " n/a").c_str() : "",
                  c[0] + c[1] + c[2] + c[3], O.Backend.c_str());
    }
    std::printf("conformance: %d passed, %d failed, %d unsupported%s [%s, %.0f s]\n",
                total[0], total[1], total[2],
                total[3] ? (", " + std::to_string(total[3]) + " n/a").c_str() : "",
                O.Backend.c_str(), seconds);
    if (!O.FixedCsv.empty())
      compareWithFixed();
    int rc = 0;
    if (!unexpected.empty()) {
      std::printf("\n%zu unexpected failure(s) (not in %s):\n", unexpected.size(),
                  O.Known.c_str());
      for (auto &u : unexpected)
        std::printf("  %s\n", u.c_str());
      rc = 1;
    }
    if (!stale.empty()) {
      std::printf("\n%zu case(s) in the known-failures list no longer fail; "
                  "remove them from the list:\n", stale.size());
      for (auto &s : stale)
        std::printf("  %s\n", s.c_str());
      rc = 1;
    }
    for (auto &m : O.MinPass) {
      auto eq = m.find('=');
      std::string folder = m.substr(0, eq);
      int want = std::stoi(m.substr(eq + 1));
      int got = perFolder.count(folder) ? perFolder[folder][0] : 0;
      if (got < want) {
        std::printf("\n%s: %d cases passed, fewer than the required %d\n",
                    folder.c_str(), got, want);
        rc = 1;
      }
    }
    return rc;
  }

  /// An unsupported case's message without the node and value names (what
  /// cases of one op share), for the op table.
  static std::string reasonOf(const std::string &detail) {
    std::string text = detail;
    auto close = text.find("): ");
    if (text.rfind("node '", 0) == 0 && close != std::string::npos)
      text = text.substr(close + 3);
    // What the probed kernels' comparison found, without the sentence
    // around it (compiler/passes/LowerToProgram.cpp).
    const std::string differ = "differ in more than integer constants that follow ";
    if (auto at = text.find(differ); at != std::string::npos) {
      auto open = text.find(" (", at);
      if (open != std::string::npos)
        text = "its kernels at several values differ: " + text.substr(open + 2);
    }
    std::string out;
    bool quoted = false;
    for (size_t i = 0; i < text.size(); ++i) {
      char ch = text[i];
      // A quote opens after a space or a bracket (not an apostrophe).
      bool opens = ch == '\'' && !quoted && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '(');
      if (opens || (ch == '\'' && quoted)) {
        if (opens)
          out += "'...'";
        quoted = !quoted;
      } else if (!quoted && ch != '|' && ch != '\n') {
        out += ch;
      }
    }
    if (!out.empty() && out.back() == ')' && out.find("differ: ") != std::string::npos)
      out.pop_back();
    return out.size() > 200 ? out.substr(0, 197) + "..." : out;
  }

  /// Per op (of the one-node cases; the others as one row): the cases that
  /// pass fixed (O.FixedCsv), and how they end bounded. Printed, and
  /// written to O.OpTable as Markdown.
  void compareWithFixed() {
    std::map<std::string, std::string> fixed = caseStatuses(O.FixedCsv, "the fixed conformance");
    struct Row {
      int Fixed = 0, Passed = 0, Unsupported = 0, Failed = 0, NotApplicable = 0;
      std::map<std::string, int> Reasons; ///< unsupported bounded: first words
    };
    std::map<std::string, Row> rows;
    Row all;
    for (auto &r : Results) {
      auto it = fixed.find(r.Folder + "/" + r.Case);
      if (it == fixed.end() || it->second != "passed")
        continue;
      for (Row *row : {&rows[r.Op], &all}) {
        row->Fixed++;
        if (r.S == Status::Passed)
          row->Passed++;
        else if (r.S == Status::Unsupported) {
          row->Unsupported++;
          row->Reasons[reasonOf(r.Detail)]++;
        }
        else if (r.S == Status::Failed)
          row->Failed++;
        else
          row->NotApplicable++;
      }
    }
    std::ostringstream md;
    md << "| op | pass fixed | pass bounded | unsupported bounded | fail bounded | n/a | why "
          "not bounded (the most frequent reason) |\n"
          "|---|---:|---:|---:|---:|---:|---|\n";
    auto commonest = [](const Row &row) {
      std::string best;
      int most = 0;
      for (auto &[text, count] : row.Reasons)
        if (count > most)
          best = text, most = count;
      return best;
    };
    for (auto &[op, row] : rows)
      md << "| " << op << " | " << row.Fixed << " | " << row.Passed << " | " << row.Unsupported
         << " | " << row.Failed << " | " << row.NotApplicable << " | " << commonest(row) << " |\n";
    md << "| **all** | " << all.Fixed << " | " << all.Passed << " | " << all.Unsupported << " | "
       << all.Failed << " | " << all.NotApplicable << " | |\n";
    int opsAll = 0, opsApplicable = 0;
    for (auto &[op, row] : rows)
      if (row.Fixed > row.NotApplicable) {
        ++opsApplicable;
        opsAll += row.Passed == row.Fixed - row.NotApplicable;
      }
    std::printf("bounded axis: %d of the %d cases that pass fixed pass bounded (%d unsupported, "
                "%d failed, %d n/a); %d of %d ops pass every applicable case bounded\n",
                all.Passed, all.Fixed, all.Unsupported, all.Failed, all.NotApplicable, opsAll,
                opsApplicable);
    if (!O.OpTable.empty())
      std::ofstream(O.OpTable) << md.str();
  }

  Options O;
  std::string DriverObj;
  std::set<std::string> Known;
  std::vector<Result> Results;
  std::mutex Mu;
  std::map<std::string, std::vector<onnx::GraphInputDesc>> InputCache;
};

/// The compiler runs with the stack a user's shell has (8 MiB, Debian's
/// default) even where this machine allows more: a larger limit once hid a
/// stack overflow in the C writer.
void limitStackToDefault() {
  const rlim_t kUserStack = rlim_t(8) << 20;
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > kUserStack)) {
    rl.rlim_cur = kUserStack;
    setrlimit(RLIMIT_STACK, &rl);
  }
}

} // namespace

int main(int argc, char **argv) {
  limitStackToDefault();
  Options o;
  CLI::App app{"mlcc ONNX backend conformance harness", "mlcc-conformance"};
  app.add_option("--suite", o.Suite, "Folder with node/, simple/, ...")->required();
  app.add_option("--mlcc", o.Mlcc, "The mlcc executable")->required();
  app.add_option("--runtime-include", o.RuntimeInclude, "Folder of mlcc.h")->required();
  app.add_option("--driver", o.Driver, "driver.c")->required();
  app.add_option("--work", o.Work, "Scratch folder")->required();
  app.add_option("--known-failures", o.Known, "Known-failures list");
  app.add_option("--csv", o.Csv, "Per-case CSV output");
  app.add_option("--backend", o.Backend, "Label for the backend (and list tags)");
  app.add_option("--mlcc-arg", o.MlccArgs, "Extra argument for mlcc (repeatable)");
  app.add_option("--folders", o.Folders, "Folders to run")->delimiter(',');
  app.add_option("--filter", o.Filter, "Regex on folder/case");
  app.add_option("--min-pass", o.MinPass, "FOLDER=N: fail if fewer pass");
  app.add_option("--cc", o.Cc, "C compiler for the driver and the link (cross gcc)");
  app.add_option("--cflags", o.CFlags,
                 "Flags for the driver, the link and mlcc's C backend ($CFLAGS), "
                 "e.g. -fsanitize=address,undefined");
  app.add_option("--run-prefix", o.RunPrefix, "Command prefix to run test programs (qemu)");
  app.add_option("--sample-passed", o.SamplePassed, "CSV of an earlier run: only its passed cases");
  app.add_option("--sample", o.Sample, "With --sample-passed: this many, evenly spaced");
  app.add_option("--jobs", o.Jobs, "Parallel cases (default: cores)");
  app.add_option("--timeout", o.Timeout, "Seconds per step");
  app.add_flag("-v,--verbose", o.Verbose, "Print every case");
  app.add_flag("--keep", o.Keep, "Keep work folders of passing cases");
  app.add_flag("--compile-only", o.CompileOnly,
               "Only compile: a case passes when mlcc succeeds; its folder is kept");
  app.add_option("--output", o.Output, "mlcc's output file in each case folder (default libm.a)");
  app.add_flag("--unique-names", o.UniqueNames,
               "Name each model FOLDER_CASE instead of m (--name)");
  app.add_flag("--bounded-axis", o.BoundedAxis,
               "Rerun each case with axis 0 of its first input bound at run time "
               "(--dim d=1..2N, run at N)");
  app.add_option("--fixed-csv", o.FixedCsv,
                 "With --bounded-axis: the CSV of the fixed run, compared per op");
  app.add_option("--op-table", o.OpTable, "With --fixed-csv: write the per-op counts (Markdown)");
  CLI11_PARSE(app, argc, argv);
  if (!fs::exists(o.Suite)) {
    std::printf("conformance: suite folder '%s' not found (../shared is "
                "absent); skipping all conformance cases\n", o.Suite.c_str());
    return 77;
  }
  if (!o.CFlags.empty())
    setenv("CFLAGS", o.CFlags.c_str(), 1); // for mlcc --backend c
  try {
    Harness h(o);
    return h.run();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "mlcc-conformance: %s\n", e.what());
    return 1;
  }
}
