//===- CompilerApiTest.cpp - The public API: mlcc/Compiler.h ---------------===//
#include "mlcc/Check.h"
#include "mlcc/Compiler.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

namespace {

mlcc::CompileOptions digits() {
  mlcc::CompileOptions o;
  o.Model = MLCC_SOURCE_DIR "/examples/digits/digits.onnx";
  o.ProgressMode = "never";
  return o;
}

} // namespace

TEST_CASE("compile in memory: a library with the header's figures", "[api]") {
  mlcc::Library lib = mlcc::compile(digits());
  const mlcc::LibraryInfo &i = lib.info();
  CHECK(i.Name == "digits"); // the model's file name
  REQUIRE(i.Inputs.size() == 1);
  CHECK(i.Inputs[0].Name == "image");
  CHECK(i.Inputs[0].Type == "float");
  CHECK(i.Inputs[0].Shape == std::vector<int64_t>{1, 1, 8, 8});
  CHECK(i.Inputs[0].Extents == std::vector<std::string>(4, ""));
  REQUIRE(i.Outputs.size() == 1);
  CHECK(i.Outputs[0].Shape == std::vector<int64_t>{1, 10});
  CHECK(i.ArenaBytes > 0);
  CHECK(i.WeightBytes > 0);
  CHECK(i.CodeBytes > 0); // a library: the object is made
  CHECK(lib.artifacts().empty()); // nothing named until write()
  CHECK(lib.reportJson().find("\"code_bytes\"") != std::string::npos);
  REQUIRE(lib.runsHere());

  // The same run twice gives the same logits; they are finite.
  std::vector<float> image(64, 0.5f), a(10), b(10);
  lib.run({image.data()}, {a.data()});
  lib.run({image.data()}, {b.data()});
  CHECK(std::memcmp(a.data(), b.data(), sizeof(float) * 10) == 0);
  for (float v : a)
    CHECK(std::isfinite(v));
}

TEST_CASE("compile for the command line: the artifacts of -o", "[api]") {
  mlcc::CompileOptions o = digits();
  o.Output = "out/libnet.a";
  o.Report = "out/r.json";
  // checkWritable: the folder must exist.
  CHECK_THROWS_AS(mlcc::compile(o), mlcc::CompileError);
  o.Output = "libnet.a";
  o.Report = "r.json";
  mlcc::Library lib = mlcc::compile(o);
  REQUIRE(lib.artifacts().size() == 3);
  CHECK(lib.artifacts()[0].Path == "libnet.a");
  CHECK(lib.artifacts()[0].Bytes.compare(0, 8, "!<arch>\n") == 0);
  CHECK(lib.artifacts()[1].Path == "net.h");
  CHECK(lib.artifacts()[2].Path == "r.json");
  CHECK(lib.artifacts()[2].Bytes == lib.reportJson());
  CHECK(lib.info().Name == "net");

  o.Output = "-";
  o.Report.clear();
  o.Emit = "graph";
  mlcc::Library graph = mlcc::compile(o);
  CHECK(graph.artifacts().empty());
  CHECK(graph.stdoutText().find("Conv") != std::string::npos);
  CHECK_THROWS_AS(graph.reportJson(), mlcc::CompileError);
}

TEST_CASE("errors carry the command line's kind and exit status", "[api]") {
  mlcc::CompileOptions o = digits();
  o.Backend = "c";
  o.Target = "cortex-m4";
  try {
    mlcc::compile(o);
    FAIL("no error");
  } catch (const mlcc::CompileError &e) {
    CHECK(e.kind() == mlcc::ErrorKind::Usage);
    CHECK(mlcc::exitStatus(e.kind()) == 2);
    CHECK(std::string(e.what()).find("--backend c builds for the host only") != std::string::npos);
  }
  o = digits();
  o.Model = MLCC_SOURCE_DIR "/no/such/model.onnx";
  try {
    mlcc::compile(o);
    FAIL("no error");
  } catch (const mlcc::CompileError &e) {
    CHECK(mlcc::exitStatus(e.kind()) == 1);
  }
}

TEST_CASE("check: every kernel call of digits within tolerance", "[api]") {
  mlcc::CheckOptions c;
  c.Compile = digits();
  mlcc::CheckResult r = mlcc::checkModel(c);
  CHECK(r.WithinTolerance);
  CHECK(r.Table.find("all within tolerance") != std::string::npos);
  CHECK(r.Json.find("\"rows\"") != std::string::npos);
  c.BreakNode = "/conv1/Conv";
  r = mlcc::checkModel(c);
  CHECK_FALSE(r.WithinTolerance);
}

TEST_CASE("listings", "[api]") {
  CHECK(mlcc::targetList().find("cortex-m4") != std::string::npos);
  CHECK(mlcc::opList().find("Conv ") != std::string::npos);
  mlcc::CompileOptions o;
  o.Target = "cortex-m4";
  CHECK(!mlcc::targetDescription(o).empty());
  CHECK(mlcc::version() == "0.1.0");
}
