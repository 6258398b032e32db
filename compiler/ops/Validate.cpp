//===- Validate.cpp - Every node checked against its ONNX schema ----------===//
//
// OpRegistry::validate checks a node against the operator's ONNX schema for
// the node's opset before its type inference runs: the number of inputs and
// outputs, required inputs that are omitted, required attributes and the
// types of those given, the element types each type constraint allows (and
// that inputs bound to one constraint agree), and the attribute values that
// every op reads the same way (axes within the rank, window sizes, group
// counts). The schemas are a table generated from the ONNX documentation
// (OnnxSchemas.inc, see tools/onnx-schemas/generate.py), so these checks are
// written once here and no op's Infer has to repeat them; ops the table does
// not know (mlcc's own, contrib domains) are checked by their Infer alone.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>

namespace mlcc::ops {

namespace {

const char SchemaText[] =
#include "compiler/ops/OnnxSchemas.inc"
    ;

struct Formal {
  std::string Name;
  char Option = 's';       ///< s single, o optional, v variadic, h heterogeneous
  std::string Constraint;  ///< type constraint name, or empty for Allowed
  std::vector<int> Allowed; ///< concrete element types (ONNX codes)
};

struct AttrSpec {
  std::string Name;
  std::string Kind; ///< f i s t g fs is ss ts gs sp tp
  bool Required = false;
};

struct Schema {
  std::string Op;
  int64_t Version = 1;
  bool Deprecated = false;
  int MinIn = 0, MaxIn = 0, MinOut = 0, MaxOut = 0; ///< -1: unbounded
  std::vector<Formal> In, Out;
  std::vector<AttrSpec> Attrs;
  /// Allowed element types per constraint; absent: no tensor type listed.
  std::map<std::string, std::vector<int>> Types;

  const AttrSpec *attr(const std::string &name) const {
    for (auto &a : Attrs)
      if (a.Name == name)
        return &a;
    return nullptr;
  }
};

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  if (s.empty())
    return out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    out.push_back(cur);
  if (s.back() == sep)
    out.push_back("");
  return out;
}

std::vector<int> codes(const std::string &s) {
  std::vector<int> out;
  for (auto &c : split(s, ';'))
    if (!c.empty() && c != "*")
      out.push_back(std::stoi(c));
  return out;
}

std::vector<Formal> formals(const std::string &s) {
  std::vector<Formal> out;
  for (auto &f : split(s, ',')) {
    auto parts = split(f, ':');
    MLCC_CHECK(parts.size() == 3, "bad schema formal '" << f << "'");
    Formal x{parts[0], parts[1][0], "", {}};
    if (!parts[2].empty() && parts[2][0] == '=')
      x.Allowed = codes(parts[2].substr(1));
    else
      x.Constraint = parts[2];
    out.push_back(std::move(x));
  }
  return out;
}

using Table = std::map<std::pair<std::string, std::string>, std::vector<Schema>>;

Table parseTable() {
  Table t;
  std::istringstream in(SchemaText);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    std::vector<std::string> f = split(line, '|');
    MLCC_CHECK(f.size() == 4 || f.size() == 11, "bad schema line '" << line << "'");
    Schema s;
    s.Op = f[1];
    s.Version = std::stoll(f[2]);
    if (f.size() == 4) {
      s.Deprecated = true;
    } else {
      s.MinIn = std::stoi(f[3]);
      s.MaxIn = std::stoi(f[4]);
      s.In = formals(f[5]);
      s.MinOut = std::stoi(f[6]);
      s.MaxOut = std::stoi(f[7]);
      s.Out = formals(f[8]);
      for (auto &a : split(f[9], ',')) {
        auto parts = split(a, ':');
        MLCC_CHECK(parts.size() == 3, "bad schema attribute '" << a << "'");
        s.Attrs.push_back({parts[0], parts[1], parts[2] == "r"});
      }
      for (auto &c : split(f[10], ',')) {
        auto eq = c.find('=');
        MLCC_CHECK(eq != std::string::npos, "bad type constraint '" << c << "'");
        if (c.substr(eq + 1) != "*")
          s.Types[c.substr(0, eq)] = codes(c.substr(eq + 1));
      }
    }
    t[{f[0], f[1]}].push_back(std::move(s));
  }
  for (auto &[key, list] : t)
    std::sort(list.begin(), list.end(),
              [](const Schema &a, const Schema &b) { return a.Version < b.Version; });
  return t;
}

/// Every documented version of an op, oldest first (null when undocumented).
const std::vector<Schema> *schemaVersions(const std::string &domain, const std::string &op) {
  static const Table table = parseTable();
  auto it = table.find({domain, op});
  return it == table.end() ? nullptr : &it->second;
}

const Schema *findSchema(const std::string &domain, const std::string &op,
                         int64_t version) {
  const std::vector<Schema> *versions = schemaVersions(domain, op);
  const Schema *best = nullptr;
  if (versions)
    for (auto &s : *versions)
      if (s.Version <= version)
        best = &s;
  return best;
}

const char *attrKindCode(ir::AttrKind k) {
  using ir::AttrKind;
  switch (k) {
  case AttrKind::Float: return "f";
  case AttrKind::Int: return "i";
  case AttrKind::String: return "s";
  case AttrKind::Tensor: return "t";
  case AttrKind::Graph: return "g";
  case AttrKind::Floats: return "fs";
  case AttrKind::Ints: return "is";
  case AttrKind::Strings: return "ss";
  case AttrKind::Tensors: return "ts";
  case AttrKind::Graphs: return "gs";
  case AttrKind::TypeProto: return "tp";
  case AttrKind::SparseTensor: return "sp";
  }
  return "?";
}

const char *attrKindWords(const std::string &code) {
  static const std::map<std::string, const char *> words = {
      {"f", "a float"},          {"i", "an int"},
      {"s", "a string"},         {"t", "a tensor"},
      {"g", "a graph"},          {"fs", "a list of floats"},
      {"is", "a list of ints"},  {"ss", "a list of strings"},
      {"ts", "a list of tensors"}, {"gs", "a list of graphs"},
      {"sp", "a sparse tensor"}, {"tp", "a type"}};
  auto it = words.find(code);
  return it == words.end() ? "?" : it->second;
}

std::string typeList(const std::vector<int> &allowed) {
  std::string s;
  for (int c : allowed) {
    auto t = dtypeFromOnnx(c);
    s += (s.empty() ? "" : ", ") + std::string(t ? dtypeOnnxName(*t) : "?");
  }
  return s;
}

std::string plural(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string arityText(int lo, int hi) {
  if (hi < 0)
    return "at least " + std::to_string(lo);
  if (lo == hi)
    return std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

/// The formal parameter that actual position `i` binds to.
const Formal *formalAt(const std::vector<Formal> &fs, size_t i) {
  if (i < fs.size())
    return &fs[i];
  if (!fs.empty() && (fs.back().Option == 'v' || fs.back().Option == 'h'))
    return &fs.back();
  return nullptr;
}

void checkArity(const ir::Node &n, const Schema &s) {
  std::string op = n.OpType + "-" + std::to_string(s.Version);
  size_t ins = n.Inputs.size(), outs = n.Outputs.size();
  if ((int)ins < s.MinIn || (s.MaxIn >= 0 && (int)ins > s.MaxIn))
    n.error() << "has " << plural(ins, "input") << "; " << op << " takes "
              << arityText(s.MinIn, s.MaxIn);
  if ((int)outs < s.MinOut || (s.MaxOut >= 0 && (int)outs > s.MaxOut))
    n.error() << "has " << plural(outs, "output") << "; " << op << " has "
              << arityText(s.MinOut, s.MaxOut);
  for (size_t i = 0; i < ins; ++i) {
    const Formal *f = formalAt(s.In, i);
    if (f && f->Option == 's' && !n.Inputs[i])
      n.error() << "input " << i << " ('" << f->Name
                << "') is required but the node leaves it empty";
  }
  for (size_t i = 0; i < outs; ++i) {
    const Formal *f = formalAt(s.Out, i);
    if (f && f->Option == 's' && !n.Outputs[i])
      n.error() << "output " << i << " ('" << f->Name
                << "') is required but the node leaves its name empty";
  }
}

void checkAttributes(const ir::Node &n, const Schema &s) {
  std::string op = n.OpType + "-" + std::to_string(s.Version);
  for (auto &a : s.Attrs)
    if (a.Required && !n.hasAttr(a.Name))
      n.error() << "lacks the required attribute '" << a.Name << "'";
  for (auto &[name, value] : n.Attrs) {
    const AttrSpec *spec = s.attr(name);
    if (!spec || spec->Kind == "tp")
      continue; // unknown attributes are ignored, as ONNX Runtime does
    if (spec->Kind != attrKindCode(value.Kind))
      n.error() << "attribute '" << name << "' is " << attrKindWords(attrKindCode(value.Kind))
                << "; " << op << " expects " << attrKindWords(spec->Kind);
  }
}

void checkTypes(const ir::Node &n, const Schema &s) {
  std::map<std::string, std::pair<size_t, DType>> bound; // constraint -> first input
  for (size_t i = 0; i < n.Inputs.size(); ++i) {
    const ir::Value *v = n.Inputs[i];
    const Formal *f = formalAt(s.In, i);
    if (!v || !f || !v->Type.known())
      continue;
    const std::vector<int> *allowed = &f->Allowed;
    if (!f->Constraint.empty()) {
      auto it = s.Types.find(f->Constraint);
      if (it == s.Types.end())
        continue; // a constraint over sequences or maps
      allowed = &it->second;
    }
    if (allowed->empty())
      continue;
    DType t = v->Type.Type;
    if (std::find(allowed->begin(), allowed->end(), (int)t) == allowed->end())
      n.error() << "input " << i << " ('" << f->Name << "') is " << dtypeOnnxName(t)
                << "; " << n.OpType << "-" << s.Version << " accepts "
                << (f->Constraint.empty() ? "" : f->Constraint + " in ") << "{"
                << typeList(*allowed) << "}";
    if (f->Constraint.empty() || f->Option == 'h')
      continue;
    auto [it, fresh] = bound.insert({f->Constraint, {i, t}});
    if (!fresh && it->second.second != t)
      n.error() << "input " << i << " ('" << f->Name << "') is " << dtypeOnnxName(t)
                << " but input " << it->second.first << " is "
                << dtypeOnnxName(it->second.second) << "; both are of type "
                << f->Constraint << " and must agree";
  }
}

/// Rank of input 0 when it is a typed tensor, or -1.
int64_t rank0(const ir::Node &n) {
  if (!n.hasInput(0) || !n.Inputs[0]->Type.known())
    return -1;
  return (int64_t)n.Inputs[0]->Type.rank();
}

std::string listText(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

/// Kernel sizes, strides, dilations and pads above this are rejected: the
/// window arithmetic (input + pads - dilation * (kernel - 1)) then stays far
/// from 64-bit overflow for every tensor mlcc accepts.
constexpr int64_t MaxWindowValue = INT32_MAX;

/// Attribute values that every op which has them reads the same way.
void checkSharedValues(const ir::Node &n, const Schema &s) {
  int64_t r = rank0(n);
  auto intAttr = [&](const char *name) -> const ir::Attribute * {
    const ir::Attribute *a = n.attr(name);
    return a && a->Kind == ir::AttrKind::Int ? a : nullptr;
  };
  auto intsAttr = [&](const char *name) -> const ir::Attribute * {
    const ir::Attribute *a = n.attr(name);
    return a && a->Kind == ir::AttrKind::Ints ? a : nullptr;
  };

  // axis: within the rank of input 0 (of the output for Flatten and OneHot,
  // which insert an axis). Quantize/DequantizeLinear ignore it for
  // per-tensor scales; sequence ops have no tensor input 0.
  static const std::set<std::string> axisIgnoredBy = {
      "QuantizeLinear", "DequantizeLinear", "ConcatFromSequence"};
  if (const ir::Attribute *a = intAttr("axis");
      a && r >= 1 && s.attr("axis") && !axisIgnoredBy.count(n.OpType)) {
    int64_t rr = r + (n.OpType == "Flatten" || n.OpType == "OneHot" ? 1 : 0);
    int64_t hi = n.OpType == "Flatten" ? r : rr - 1;
    if (a->I < -rr || a->I > hi)
      n.error() << "axis " << a->I << " is out of range [" << -rr << ", " << hi
                << "] for an input of rank " << r;
  }
  // axes: distinct axes within the rank (Unsqueeze: of its output).
  if (const ir::Attribute *a = intsAttr("axes"); a && r >= 0 && s.attr("axes")) {
    int64_t rr = r + (n.OpType == "Unsqueeze" ? (int64_t)a->Ints.size() : 0);
    std::set<int64_t> seen;
    for (int64_t ax : a->Ints) {
      if (ax < -rr || ax >= rr)
        n.error() << "axes " << listText(a->Ints) << ": axis " << ax
                  << " is out of range for rank " << rr;
      if (!seen.insert(ax < 0 ? ax + rr : ax).second)
        n.error() << "axes " << listText(a->Ints) << " names axis " << ax << " twice";
    }
  }
  // Sliding windows (convolutions and pooling over an input X of rank r):
  // one kernel size, stride and dilation per spatial axis, each at least 1;
  // a begin and an end padding per spatial axis, each at least 0.
  bool window = (s.attr("strides") || s.attr("kernel_shape")) && !s.In.empty() &&
                (s.In[0].Name == "X" || s.In[0].Name == "x");
  if (window && r >= 3) {
    size_t spatial = (size_t)r - 2;
    for (const char *name : {"kernel_shape", "strides", "dilations"})
      if (const ir::Attribute *a = intsAttr(name)) {
        if (a->Ints.size() != spatial)
          n.error() << name << " " << listText(a->Ints) << " has "
                    << a->Ints.size() << " values; the input has " << spatial
                    << " spatial axes";
        for (int64_t v : a->Ints)
          if (v < 1 || v > MaxWindowValue)
            n.error() << name << " " << listText(a->Ints) << " must be in [1, "
                      << MaxWindowValue << "]";
      }
    if (const ir::Attribute *a = intsAttr("pads")) {
      if (a->Ints.size() != 2 * spatial)
        n.error() << "pads " << listText(a->Ints) << " has " << a->Ints.size()
                  << " values; the input has " << spatial
                  << " spatial axes, so it needs " << 2 * spatial;
      for (int64_t v : a->Ints)
        if (v < 0 || v > MaxWindowValue)
          n.error() << "pads " << listText(a->Ints) << " must be in [0, "
                    << MaxWindowValue << "]";
    }
  }
  // Counts that must be positive wherever they appear.
  for (const char *name : {"group", "blocksize"})
    if (const ir::Attribute *a = intAttr(name); a && s.attr(name) && a->I < 1)
      n.error() << name << " is " << a->I << "; it must be at least 1";
}

} // namespace

bool OpRegistry::accepts(const ir::Node &n, size_t i, DType t) const {
  const Schema *s = findSchema(n.Domain, n.OpType, n.Opset);
  const Formal *f = s ? formalAt(s->In, i) : nullptr;
  if (!f)
    return true;
  const std::vector<int> *allowed = &f->Allowed;
  if (!f->Constraint.empty()) {
    auto it = s->Types.find(f->Constraint);
    if (it == s->Types.end())
      return true;
    allowed = &it->second;
  }
  return allowed->empty() || std::find(allowed->begin(), allowed->end(), (int)t) != allowed->end();
}

void OpRegistry::validate(const ir::Node &n) const {
  const Schema *s = findSchema(n.Domain, n.OpType, n.Opset);
  if (!s) {
    // An op of the documentation that the model's opset predates has no
    // definition to compile (Cosh in an opset-8 model: found by the fuzzer,
    // an internal error in inference before).
    if (const std::vector<Schema> *versions = schemaVersions(n.Domain, n.OpType))
      n.error() << n.OpType << " does not exist before opset " << versions->front().Version
                << " of " << (n.Domain.empty() ? "ai.onnx" : n.Domain)
                << "; the model imports opset " << n.Opset;
    return; // the registry's lookup reports ops and versions mlcc lacks
  }
  if (s->Deprecated)
    return;
  checkArity(n, *s);
  checkAttributes(n, *s);
  checkTypes(n, *s);
  checkSharedValues(n, *s);
}

} // namespace mlcc::ops
