//===- KvCache.cpp - Key/value caches kept in one caller buffer -----------===//
//
// kv-cache (--kv-cache): a decode step's key/value cache as exporters write
// it, present = Concat(past, new) along the past's bounded axis, with past a
// graph input and present a graph output, is kept in one caller buffer: the
// present in its layout at MAX (the bounded axis at its largest extent, so
// the rows of every step stay where they are) and the past its first rows.
// The Concat becomes mlcc.CacheAppend, which writes only the new rows; the
// step copies nothing else. The caller passes the same pointer as the past
// input and the present output (NAME_run checks it), the buffer holding
// the rows of the steps before.
//
// Pairs are named (IN=OUT) or found ("auto": every graph input whose name
// holds "past_key_values" or "past", with the output named with "present"
// in its place). A pair that does not have this form is refused, naming it.
// The graph passes run at the dimensions' MAX (compiler/driver/
// BoundedDims.cpp), so lower-to-kernels checks, with the extents known,
// that the Concat runs along the past's one run-time axis.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

namespace mlcc::passes {

namespace {

/// The output paired with input `name` by "auto": "present" in the place of
/// "past_key_values" or of "past".
std::string presentName(const std::string &name) {
  for (const char *past : {"past_key_values", "past"}) {
    size_t at = name.find(past);
    if (at != std::string::npos)
      return name.substr(0, at) + "present" + name.substr(at + std::string(past).size());
  }
  return "";
}

} // namespace

bool kvCache(ir::Graph &g, const std::vector<std::pair<std::string, std::string>> &named,
             bool automatic) {
  std::vector<std::pair<std::string, std::string>> pairs = named;
  if (automatic)
    for (const ir::Value *v : g.Inputs) {
      std::string out = presentName(v->Name);
      const ir::Value *o = out.empty() ? nullptr : g.findValue(out);
      if (o && g.isGraphOutput(o))
        pairs.push_back({v->Name, out});
    }
  if (pairs.empty())
    fail(ErrorKind::Usage) << "--kv-cache auto: no graph input with \"past\" in its name has an "
                              "output named with \"present\" in its place; name the pairs "
                              "(--kv-cache PAST=PRESENT)";
  const std::map<const ir::Value *, int> uses = g.useCounts();
  for (const auto &[inName, outName] : pairs) {
    const std::string what = "--kv-cache " + inName + "=" + outName;
    ir::Value *past = g.findValue(inName), *present = g.findValue(outName);
    if (past && !g.isGraphInput(past))
      past = nullptr;
    if (present && !g.isGraphOutput(present))
      present = nullptr;
    if (!past || !present)
      fail(ErrorKind::Usage) << what << ": the model has no " << (past ? "output '" : "input '")
                             << (past ? outName : inName) << "'";
    ir::Node *cat = present->Producer;
    auto refuse = [&](const std::string &why) {
      fail(ErrorKind::Unsupported) << what << ": " << why
                                   << "; a cache is present = Concat(past, new) along the past's "
                                      "run-time axis (--dim), the past read by it only";
    };
    if (!cat || !cat->Domain.empty() || cat->OpType != "Concat" || cat->Inputs.size() != 2 ||
        cat->Inputs[0] != past || cat->Guard)
      refuse("'" + outName + "' is not computed by a Concat of '" + inName + "' and new rows");
    const int64_t rank = (int64_t)past->Type.Dims.size();
    int64_t axis = cat->attrInt("axis", 0);
    if (axis < 0)
      axis += rank;
    // (That the axis is the past's run-time one is checked where the
    // extents are known: lower-to-kernels.)
    auto it = uses.find(past);
    if (it == uses.end() || it->second != 1 || g.isGraphOutput(past))
      refuse("'" + inName + "' is read by other nodes too");
    for (const auto &[p, q] : g.KvCaches)
      if (p == past || q == present)
        fail(ErrorKind::Usage) << what << ": '" << (p == past ? inName : outName)
                               << "' is in another pair";
    cat->OpType = "CacheAppend";
    cat->Domain = "mlcc";
    cat->Opset = 1;
    cat->Attrs = {{"axis", ir::intAttr(axis)}};
    g.KvCaches.push_back({past, present});
  }
  return true;
}

} // namespace mlcc::passes
