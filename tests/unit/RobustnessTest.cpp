// Mutated models must produce a clean CompileError (or compile), never a
// crash, a hang or an internal error. The frontend, inference and lowering
// all run in-process on each mutant.
#include "compiler/pipeline/Pipeline.h"
#include "compiler/support/Error.h"
#include "frontends/onnx/OnnxLoader.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace mlcc;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Compiles `bytes` as a model; returns the error kind, or nullopt on success.
std::optional<ErrorKind> compileBytes(const std::string &bytes, const std::string &path) {
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), (std::streamsize)bytes.size());
  }
  try {
    auto g = onnx::loadModel(path, {});
    PipelineOptions po;
    po.Name = "m";
    runPipeline(*g, po);
    return std::nullopt;
  } catch (const CompileError &e) {
    std::string msg = e.what();
    if (e.kind() == ErrorKind::Internal)
      FAIL("internal error on a mutant: " << msg);
    // A model problem: one non-empty line, never an I/O or usage error.
    CHECK(!msg.empty());
    CHECK(msg.find('\n') == std::string::npos);
    CHECK((e.kind() == ErrorKind::Invalid || e.kind() == ErrorKind::Unsupported ||
           e.kind() == ErrorKind::DataDependent));
    return e.kind();
  }
}

} // namespace

TEST_CASE("mutated models never crash the compiler", "[robustness]") {
  std::string model = readFile(MLCC_SOURCE_DIR "/examples/digits/digits.onnx");
  REQUIRE(model.size() > 1000);
  std::string path = "robustness-mutant.onnx";
  std::mt19937 rng(12345);
  int ok = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string m = model;
    int kind = (int)(rng() % 4);
    if (kind == 0) { // flip a few random bytes
      for (int k = 0; k < 1 + (int)(rng() % 8); ++k)
        m[rng() % m.size()] ^= (char)(1u << (rng() % 8));
    } else if (kind == 1) { // truncate
      m.resize(rng() % m.size());
    } else if (kind == 2) { // overwrite a byte in the (small) graph structure
      size_t pos = m.size() - 1 - rng() % std::min<size_t>(m.size(), 600);
      m[pos] = (char)(rng() % 256);
    } else { // duplicate a chunk
      size_t a = rng() % m.size(), len = rng() % 64;
      m.insert(rng() % m.size(), m.substr(a, len));
    }
    if (compileBytes(m, path))
      ++rejected;
    else
      ++ok;
  }
  std::remove(path.c_str());
  INFO("compiled " << ok << ", rejected " << rejected);
  // Both outcomes occur: flips inside the weights leave a valid model, and
  // truncation alone rejects about a quarter of the mutants.
  CHECK(ok > 0);
  CHECK(rejected >= 100);
}

TEST_CASE("messages escape bytes that are not printable UTF-8", "[robustness]") {
  CHECK(escapeForMessage("node 'a'") == "node 'a'");
  CHECK(escapeForMessage("a\nb\x1b") == "a\\x0ab\\x1b");
  CHECK(escapeForMessage("caf\xc3\xa9 \xe6\x97\xa5") == "caf\xc3\xa9 \xe6\x97\xa5");
  CHECK(escapeForMessage("\xff\xc3") == "\\xff\\xc3");           // stray and cut off
  CHECK(escapeForMessage("\xc0\xaf") == "\\xc0\\xaf");           // overlong
  CHECK(escapeForMessage("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // surrogate
  try {
    fail(ErrorKind::Invalid) << "node '" << std::string("x\xfe\n", 3) << "'";
    FAIL("no error thrown");
  } catch (const CompileError &e) {
    CHECK(std::string(e.what()) == "node 'x\\xfe\\x0a'");
  }
}
