#include "tools/mlcc/Driver.h"

#include "compiler/kernel/Program.h"
#include "compiler/pack/Header.h"
#include "compiler/pack/OutputFiles.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/support/Error.h"
#include "compiler/support/Process.h"
#include "frontends/onnx/OnnxLoader.h"
#include "targets/c/CEmitter.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>

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
  if (ext == ".h")
    return "header";
  fail(ErrorKind::Usage) << "cannot tell what to write from the output name '"
                         << o.Output
                         << "': use an extension .a, .o, .c or .h, or --emit";
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
    char *end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (*end || v <= 0)
      fail(ErrorKind::Usage) << "--dim " << name << ": '" << value
                             << "' is not a positive integer";
    lo.Dims[name] = v;
  }
  for (auto &f : o.Freeze) {
    auto [name, file] = splitAssignment(f, "--freeze");
    lo.Frozen[name] = onnx::loadTensorFile(file);
  }
  return lo;
}

std::string dirOf(const std::string &path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? "" : path.substr(0, pos + 1);
}

/// A private temporary folder, removed on scope exit.
struct TempDir {
  std::string Path;
  TempDir() {
    std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    tmpl += "/mlcc-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data()))
      fail(ErrorKind::Io) << "cannot create a temporary folder in " << tmpl;
    Path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(Path, ec);
  }
};

/// Compiles the C source with the host compiler into an object file at
/// `objPath` (a temporary of OutputFiles or a scratch file).
void compileC(const std::string &source, const std::string &header,
              const std::string &name, const std::string &objPath,
              const TempDir &tmp) {
  auto writeFile = [&](const std::string &file, const std::string &text) {
    FILE *f = std::fopen((tmp.Path + "/" + file).c_str(), "wb");
    if (!f || std::fwrite(text.data(), 1, text.size(), f) != text.size())
      fail(ErrorKind::Io) << "cannot write temporary file " << file;
    std::fclose(f);
  };
  writeFile(name + ".h", header);
  writeFile(name + ".c", source);
  const char *cc = std::getenv("CC");
  std::string compiler = cc && *cc ? cc : "cc";
  std::string log;
  int rc = runProcess({compiler, "-std=c99", "-O2", "-fno-strict-aliasing",
                       "-fPIC", "-c", name + ".c", "-o", name + ".o"},
                      &log, tmp.Path);
  if (rc != 0)
    fail(ErrorKind::Internal) << "internal error: the C compiler '" << compiler
                              << "' failed on the generated code (exit " << rc
                              << "): " << log.substr(0, 2000);
  std::error_code ec;
  std::filesystem::copy_file(tmp.Path + "/" + name + ".o", objPath,
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec)
    fail(ErrorKind::Io) << "cannot write object file: " << ec.message();
}

} // namespace

void runDriver(const DriverOptions &o) {
  std::string kind = emitKindFor(o);
  bool toStdout = o.Output == "-";
  if (toStdout && kind != "graph" && kind != "kernels" && kind != "c" &&
      kind != "header")
    fail(ErrorKind::Usage) << "--emit " << kind << " cannot be written to stdout";
  if (!toStdout)
    pack::OutputFiles::checkWritable(o.Output);

  std::string name = modelName(o);
  onnx::LoadOptions lo = loadOptions(o);
  std::unique_ptr<ir::Graph> graph = onnx::loadModel(o.Model, lo);

  PipelineOptions po;
  po.Name = name;
  po.DumpIr = o.DumpIr;
  po.DumpIrDir = o.DumpIrDir;
  po.TimePasses = o.TimePasses;
  po.GraphOnly = kind == "graph";
  kir::Program program = runPipeline(*graph, po);

  pack::OutputFiles out;
  auto emitText = [&](const std::string &text) {
    if (toStdout)
      std::cout << text;
    else
      out.write(o.Output, text);
  };
  std::string headerPath = dirOf(o.Output) + name + ".h";
  std::string header;
  if (kind != "graph" && kind != "kernels")
    header = pack::writeHeader(program, o.Model);

  if (kind == "graph") {
    emitText(ir::printGraph(*graph));
  } else if (kind == "kernels") {
    emitText(kir::printProgram(program));
  } else if (kind == "header") {
    emitText(header);
  } else if (kind == "c") {
    emitText(cgen::emitC(program, name + ".h"));
    if (!toStdout)
      out.write(headerPath, header);
  } else if (kind == "obj" || kind == "lib") {
    TempDir tmp;
    std::string source = cgen::emitC(program, name + ".h");
    if (kind == "obj") {
      compileC(source, header, name, out.temporaryFor(o.Output), tmp);
    } else {
      std::string obj = tmp.Path + "/" + name + ".o.copy";
      compileC(source, header, name, obj, tmp);
      // Deterministic archive (D: zero timestamps and ids).
      std::string archive =
          std::filesystem::absolute(out.temporaryFor(o.Output)).string();
      std::filesystem::copy_file(obj, tmp.Path + "/" + name + "_model.o");
      std::string log;
      int rc = runProcess({"ar", "rcsD", archive, name + "_model.o"}, &log,
                          tmp.Path);
      if (rc != 0)
        fail(ErrorKind::Io) << "cannot create the archive: " << log;
    }
    out.write(headerPath, header);
  }
  out.commit();

  if (o.Verbose && kind != "graph") {
    std::fprintf(stderr,
                 "mlcc: %s: %zu kernels, %zu calls, weights %lld bytes, arena "
                 "%lld bytes\n",
                 name.c_str(), program.Kernels.size(), program.Calls.size(),
                 (long long)program.weightBytes(), (long long)program.ArenaSize);
  }
}

} // namespace mlcc
