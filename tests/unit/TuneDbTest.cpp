// The schedule-search database (compiler/schedule/TuneDb): its text round
// trip, lookups by target and compiler version, the errors of a corrupt
// file, and kernel signatures.
#include "compiler/schedule/TuneDb.h"
#include "compiler/support/Error.h"

#include <catch2/catch.hpp>

using namespace mlcc;
using schedule::TuneDb;
using schedule::TuneEntry;

namespace {

TuneEntry entry(const std::string &sig, const std::string &target, double def, double tuned) {
  TuneEntry e;
  e.Signature = sig;
  e.Target = target;
  e.Compiler = "0.1.0";
  e.Measure = "host-ns";
  e.DefaultPlan = "plan{tile=6x64 lanes=16}";
  e.Plan = tuned < def ? "plan{tile=4x64 lanes=16}" : e.DefaultPlan;
  e.Default = def;
  e.Tuned = tuned;
  e.Candidates = 7;
  return e;
}

/// The message of the error `fn` throws ("" when it throws none).
template <class F> std::string errorOf(F fn) {
  try {
    fn();
  } catch (const CompileError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("the tuning database's text reads back as the same entries", "[tune]") {
  TuneDb db;
  // Quotes, backslashes and a tab in a signature survive the JSON string.
  db.put(entry("Conv f32[1,3,8,8] auto_pad=\"SAME\\x\"\tz", "host x86_64 icelake", 1500, 1200));
  db.put(entry("Gemm f32[1,512]", "host x86_64 icelake", 99.5, 99.5));
  db.put(entry("Gemm f32[1,512]", "cortex-m4 thumbv7em", 1e6, 9e5));
  std::string text = db.text();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  TuneDb back = TuneDb::parse(text, "db.jsonl");
  CHECK(back.size() == 3);
  CHECK(back.text() == text);
  const TuneEntry *e = back.find("Conv f32[1,3,8,8] auto_pad=\"SAME\\x\"\tz", "host x86_64 icelake",
                                 "0.1.0");
  REQUIRE(e);
  CHECK(e->Plan == "plan{tile=4x64 lanes=16}");
  CHECK(e->Default == 1500);
  CHECK(e->Tuned == 1200);
  CHECK(e->Candidates == 7);
  const TuneEntry *g = back.find("Gemm f32[1,512]", "host x86_64 icelake", "0.1.0");
  REQUIRE(g);
  CHECK(g->Default == Approx(99.5));
  // Another target's or compiler version's entry is not this one's.
  CHECK(back.find("Gemm f32[1,512]", "host x86_64 icelake", "0.2.0") == nullptr);
  CHECK(back.foreign("host x86_64 icelake", "0.1.0") == 1);
  CHECK(back.foreign("cortex-m4 thumbv7em", "0.1.0") == 2);
  // A later entry of the same key replaces the earlier; blank lines pass.
  TuneDb twice = TuneDb::parse(text + "\n" + text, "db.jsonl");
  CHECK(twice.size() == 3);
}

TEST_CASE("a corrupt tuning database is an error naming the file and the line", "[tune]") {
  TuneDb db;
  db.put(entry("Gemm f32[1,512]", "host", 10, 9));
  const std::string good = db.text();
  struct Case {
    std::string text, phrase;
  } cases[] = {
      {good + "{\"signature\": \"x\"\n", "db.jsonl:2: not a tuning entry"},
      {good + "not json\n", "db.jsonl:2: not a tuning entry: expected '{'"},
      {"\n" + good.substr(0, good.size() - 3) + "\n", "db.jsonl:2: not a tuning entry"},
      {good + good.substr(0, good.size() - 1) + " trailing\n", "text after the entry"},
      {"{\"signature\": \"x\", \"target\": \"t\"}\n", "db.jsonl:1: not a tuning entry: no string member \"compiler\""},
      {"{\"signature\": 1}\n", "db.jsonl:1: not a tuning entry: no string member \"signature\""},
      {"{\"a\": 1, \"a\": 2}\n", "member \"a\" appears twice"},
      {"{\"a\": \"\\q\"}\n", "an unknown escape"},
      {"{\"a\": nan}\n", "expected a string or a number"},
  };
  for (const Case &c : cases) {
    INFO(c.text);
    std::string msg = errorOf([&] { TuneDb::parse(c.text, "db.jsonl"); });
    CHECK(msg.find(c.phrase) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  // The good text itself parses.
  CHECK(errorOf([&] { TuneDb::parse(good, "db.jsonl"); }).empty());
}

TEST_CASE("kernel signatures tell shapes, types, constants and attributes apart", "[tune]") {
  ir::Graph g;
  auto node = [&](Shape x, bool constW, int64_t stride) {
    auto n = std::make_unique<ir::Node>();
    n->Name = "c";
    n->OpType = "Conv";
    ir::Value *a = g.addValue("x" + std::to_string(g.Nodes.size()), {DType::F32, x});
    ir::Value *w = g.addValue("w" + std::to_string(g.Nodes.size()), {DType::F32, {8, 3, 3, 3}});
    if (constW)
      w->Const = std::make_shared<Tensor>(
          Tensor::fromDoubles(DType::F32, {8, 3, 3, 3}, std::vector<double>(216, 1.0)));
    n->Inputs = {a, w};
    ir::Attribute s;
    s.Kind = ir::AttrKind::Ints;
    s.Ints = {stride, stride};
    n->Attrs["strides"] = s;
    return schedule::kernelSignature(*g.addNode(std::move(n)));
  };
  std::string base = node({1, 3, 16, 16}, true, 1);
  CHECK(base == "Conv f32[1,3,16,16] f32[8,3,3,3]=c -> strides=[1,1]");
  CHECK(node({1, 3, 16, 16}, true, 1) == base); // names do not matter
  CHECK(node({1, 3, 17, 16}, true, 1) != base);
  CHECK(node({1, 3, 16, 16}, false, 1) != base);
  CHECK(node({1, 3, 16, 16}, true, 2) != base);
}
