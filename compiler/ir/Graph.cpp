#include "compiler/ir/Graph.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace mlcc::ir {

std::string TensorType::str() const {
  return std::string(dtypeName(Type)) + shapeToString(Dims);
}

const char *attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Float: return "float";
  case AttrKind::Int: return "int";
  case AttrKind::String: return "string";
  case AttrKind::Tensor: return "tensor";
  case AttrKind::Graph: return "graph";
  case AttrKind::Floats: return "floats";
  case AttrKind::Ints: return "ints";
  case AttrKind::Strings: return "strings";
  case AttrKind::Tensors: return "tensors";
  case AttrKind::Graphs: return "graphs";
  case AttrKind::TypeProto: return "type_proto";
  case AttrKind::SparseTensor: return "sparse_tensor";
  }
  return "?";
}

std::string Node::where() const {
  std::string op = Domain.empty() ? OpType : Domain + "." + OpType;
  return "node '" + Name + "' (" + op + ")";
}

ErrorBuilder Node::error(ErrorKind kind) const {
  return ErrorBuilder(kind, where() + ": ");
}

const Attribute *Node::attr(const std::string &name) const {
  auto it = Attrs.find(name);
  return it == Attrs.end() ? nullptr : &it->second;
}

namespace {
void expectKind(const Node &n, const std::string &name, const Attribute &a,
                AttrKind kind) {
  if (a.Kind != kind)
    n.error() << "attribute '" << name << "' must be of type "
              << attrKindName(kind) << ", got " << attrKindName(a.Kind);
}
} // namespace

int64_t Node::attrInt(const std::string &name, int64_t dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  expectKind(*this, name, *a, AttrKind::Int);
  return a->I;
}

double Node::attrFloat(const std::string &name, double dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  if (a->Kind == AttrKind::Int) // tolerated: some exporters write ints
    return (double)a->I;
  expectKind(*this, name, *a, AttrKind::Float);
  return a->F;
}

std::string Node::attrString(const std::string &name,
                             const std::string &dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  expectKind(*this, name, *a, AttrKind::String);
  return a->S;
}

std::vector<int64_t> Node::attrInts(const std::string &name,
                                    std::vector<int64_t> dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  expectKind(*this, name, *a, AttrKind::Ints);
  return a->Ints;
}

std::vector<double> Node::attrFloats(const std::string &name,
                                     std::vector<double> dflt) const {
  const Attribute *a = attr(name);
  if (!a)
    return dflt;
  expectKind(*this, name, *a, AttrKind::Floats);
  return a->Floats;
}

int64_t Node::requireInt(const std::string &name) const {
  if (!hasAttr(name))
    error() << "missing required attribute '" << name << "'";
  return attrInt(name, 0);
}

std::vector<int64_t> Node::requireInts(const std::string &name) const {
  if (!hasAttr(name))
    error() << "missing required attribute '" << name << "'";
  return attrInts(name);
}

TensorPtr Node::requireTensor(const std::string &name) const {
  const Attribute *a = attr(name);
  if (!a)
    error() << "missing required attribute '" << name << "'";
  expectKind(*this, name, *a, AttrKind::Tensor);
  return a->T;
}

const TensorType &Node::inType(size_t i) const {
  if (!hasInput(i))
    error() << "input " << i << " is required but missing";
  return Inputs[i]->Type;
}

TensorPtr Node::constInput(size_t i, const char *why) const {
  if (!hasInput(i))
    error() << "input " << i << " is required but missing";
  if (!Inputs[i]->Const) {
    // Only graph inputs can be frozen: name one the value depends on.
    const Value *root = nullptr;
    std::vector<const Value *> todo = {Inputs[i]};
    std::set<const Value *> seen;
    while (!todo.empty() && !root) {
      const Value *v = todo.back();
      todo.pop_back();
      if (v->Const || !seen.insert(v).second)
        continue;
      if (!v->Producer)
        root = v;
      else
        for (const Value *in : v->Producer->Inputs)
          if (in)
            todo.push_back(in);
    }
    std::string name = root ? root->Name : Inputs[i]->Name;
    error(ErrorKind::DataDependent)
        << "input " << i << " ('" << Inputs[i]->Name
        << "') must be known at compile time"
        << (why ? std::string(" (") + why + ")" : std::string())
        << (name != Inputs[i]->Name ? "; it depends on graph input '" + name + "'"
                                    : std::string())
        << "; freeze it with --freeze " << name << "=FILE.pb";
  }
  return Inputs[i]->Const;
}

std::vector<int64_t> Node::constInputInts(size_t i, const char *why) const {
  return constInput(i, why)->toInts();
}

void Node::setOutput(size_t i, DType type, Shape dims) {
  if (!hasOutput(i))
    return;
  for (int64_t d : dims)
    if (d < 0)
      error() << "output " << i << " would have a negative dimension "
              << shapeToString(dims);
  checkTensorSize(where() + ": output " + std::to_string(i), dims, type);
  Outputs[i]->Type = TensorType{type, std::move(dims)};
}

// ---------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------

Value *Graph::addValue(const std::string &name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->Name = name;
  v->Type = std::move(type);
  Value *raw = v.get();
  Values.push_back(std::move(v));
  ValueByName[name] = raw;
  return raw;
}

Value *Graph::findValue(const std::string &name) const {
  auto it = ValueByName.find(name);
  return it == ValueByName.end() ? nullptr : it->second;
}

void Graph::swapNames(Value *a, Value *b) {
  std::swap(a->Name, b->Name);
  ValueByName[a->Name] = a;
  ValueByName[b->Name] = b;
}

Node *Graph::addNode(std::unique_ptr<Node> node) {
  Nodes.push_back(std::move(node));
  return Nodes.back().get();
}

std::string Graph::uniqueValueName(const std::string &base) {
  if (!ValueByName.count(base))
    return base;
  int &n = NameCounters[base];
  std::string name;
  do
    name = base + "." + std::to_string(++n);
  while (ValueByName.count(name));
  return name;
}

std::string Graph::uniqueNodeName(const std::string &base) {
  int &n = NodeNameCounters[base];
  return base + "_" + std::to_string(n++);
}

void Graph::replaceAllUses(Value *from, Value *to) {
  for (auto &n : Nodes)
    for (auto &in : n->Inputs)
      if (in == from)
        in = to;
  for (auto &n : Nodes)
    if (n->Guard == from)
      n->Guard = to;
  for (auto &out : Outputs)
    if (out == from)
      out = to;
}

std::map<const Value *, int> Graph::useCounts() const {
  std::map<const Value *, int> uses;
  for (auto &n : Nodes)
    for (auto *in : n->Inputs)
      if (in)
        uses[in]++;
  for (auto &n : Nodes)
    if (n->Guard)
      uses[n->Guard]++;
  for (auto *out : Outputs)
    uses[out]++;
  return uses;
}

bool Graph::isGraphInput(const Value *v) const {
  for (auto *in : Inputs)
    if (in == v)
      return true;
  return false;
}

bool Graph::isGraphOutput(const Value *v) const {
  for (auto *out : Outputs)
    if (out == v)
      return true;
  return false;
}

// ---------------------------------------------------------------------------
// Printer
// ---------------------------------------------------------------------------

namespace {

/// FNV-1a over the bytes: a short stable fingerprint for large constants.
uint64_t fingerprint(const std::vector<uint8_t> &bytes) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

void printTensorValue(std::ostream &os, const Tensor &t) {
  os << dtypeName(t.dtype()) << shapeToString(t.shape());
  if (t.isSplat() && t.numel() > 1) {
    os << " splat(" << (isFloat(t.dtype()) ? std::to_string(t.doubleAt(0))
                                             : std::to_string(t.intAt(0)))
       << ")";
    return;
  }
  if (t.numel() <= 16) {
    os << " {";
    for (int64_t i = 0; i < t.numel(); ++i) {
      os << (i ? ", " : "");
      if (isFloat(t.dtype())) {
        std::ostringstream v;
        v.precision(9);
        v << t.doubleAt(i);
        os << v.str();
      } else {
        os << t.intAt(i);
      }
    }
    os << "}";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx",
                (unsigned long long)fingerprint(t.bytes()));
  os << " dense<" << t.bytes().size() << " bytes, fnv1a " << buf << ">";
}

void printAttr(std::ostream &os, const Attribute &a) {
  auto list = [&](auto const &v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i)
      os << (i ? "," : "") << v[i];
    os << "]";
  };
  switch (a.Kind) {
  case AttrKind::Float: {
    std::ostringstream v;
    v.precision(9);
    v << a.F;
    os << v.str();
    break;
  }
  case AttrKind::Int: os << a.I; break;
  case AttrKind::String: os << '"' << a.S << '"'; break;
  case AttrKind::Tensor:
    if (a.T)
      printTensorValue(os, *a.T);
    break;
  case AttrKind::Graph: os << "<graph>"; break;
  case AttrKind::Floats: list(a.Floats); break;
  case AttrKind::Ints: list(a.Ints); break;
  case AttrKind::Strings: {
    os << "[";
    for (size_t i = 0; i < a.Strings.size(); ++i)
      os << (i ? "," : "") << '"' << a.Strings[i] << '"';
    os << "]";
    break;
  }
  case AttrKind::Tensors: os << "<" << a.Tensors.size() << " tensors>"; break;
  case AttrKind::Graphs: os << "<" << a.Graphs.size() << " graphs>"; break;
  case AttrKind::TypeProto: os << "<type>"; break;
  case AttrKind::SparseTensor: os << "<sparse>"; break;
  }
}

std::string valueRef(const Value *v) { return v ? "%" + v->Name : "_"; }

} // namespace

std::string typeText(const Graph &g, const Value &v) {
  if (v.Bounded.empty())
    return v.Type.str();
  std::vector<std::string> names;
  for (const BoundedDim &d : g.BoundedDims)
    names.push_back(d.Name);
  std::string s = dtypeName(v.Type.Type);
  s += "[";
  for (size_t a = 0; a < v.Type.Dims.size(); ++a) {
    if (a)
      s += ",";
    auto e = std::find_if(v.Bounded.begin(), v.Bounded.end(),
                          [&](const AxisExtent &x) { return x.Axis == (int64_t)a; });
    if (e == v.Bounded.end()) {
      s += std::to_string(v.Type.Dims[a]);
      continue;
    }
    s += extentText(*e, names);
  }
  return s + "]";
}

std::string printGraph(const Graph &g) {
  std::ostringstream os;
  os << "graph " << (g.Name.empty() ? "main" : g.Name) << " opsets {";
  bool first = true;
  for (auto &[dom, ver] : g.Opsets) {
    os << (first ? "" : ", ") << (dom.empty() ? "ai.onnx" : dom) << ": "
       << ver;
    first = false;
  }
  os << "}\n";
  for (const BoundedDim &d : g.BoundedDims)
    os << "  dim " << d.Name << " = " << d.Min << ".." << d.Max << "\n";
  for (auto *in : g.Inputs)
    os << "  input " << valueRef(in) << ": " << typeText(g, *in) << "\n";
  // Constants referenced by nodes or outputs, in first-use order.
  std::set<const Value *> printed;
  auto printConst = [&](const Value *v) {
    if (!v || !v->Const || printed.count(v) || v->Producer)
      return;
    printed.insert(v);
    os << "  const " << valueRef(v) << " = ";
    printTensorValue(os, *v->Const);
    if (!v->Bounded.empty()) // held at MAX, read to the run's extents
      os << "  # " << typeText(g, *v);
    os << "\n";
  };
  for (auto &n : g.Nodes)
    for (auto *in : n->Inputs)
      printConst(in);
  for (auto *out : g.Outputs)
    printConst(out);
  for (auto &n : g.Nodes) {
    os << "  ";
    for (size_t i = 0; i < n->Outputs.size(); ++i)
      os << (i ? ", " : "") << valueRef(n->Outputs[i])
         << (n->Outputs[i] ? ": " + typeText(g, *n->Outputs[i]) : "");
    os << " = " << (n->Domain.empty() ? "" : n->Domain + ".") << n->OpType;
    if (!n->Attrs.empty()) {
      os << " {";
      bool firstAttr = true;
      for (auto &[name, a] : n->Attrs) {
        os << (firstAttr ? "" : ", ") << name << "=";
        printAttr(os, a);
        firstAttr = false;
      }
      os << "}";
    }
    if (!n->Plan.empty())
      os << " " << n->Plan.str();
    os << "(";
    for (size_t i = 0; i < n->Inputs.size(); ++i)
      os << (i ? ", " : "") << valueRef(n->Inputs[i]);
    os << ")  # " << n->Name;
    if (n->Group >= 0)
      os << "  [fused " << n->Group << "]";
    os << "\n";
  }
  for (auto *out : g.Outputs)
    os << "  output " << valueRef(out) << ": " << typeText(g, *out) << "\n";
  return os.str();
}

std::string printDot(const Graph &g) {
  std::ostringstream os;
  auto quote = [](const std::string &s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '\x01') { // line break
        q += "\\n";
        continue;
      }
      if (c == '"' || c == '\\')
        q += '\\';
      q += c;
    }
    return q + "\"";
  };
  const std::string br = "\x01"; // marks a line break inside a dot label
  os << "digraph " << quote(g.Name.empty() ? "main" : g.Name) << " {\n"
     << "  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<const Value *, std::string> source;
  for (size_t i = 0; i < g.Inputs.size(); ++i) {
    std::string id = "in" + std::to_string(i);
    os << "  " << id << " [shape=oval, label="
       << quote(g.Inputs[i]->Name + br + typeText(g, *g.Inputs[i])) << "];\n";
    source[g.Inputs[i]] = id;
  }
  int consts = 0;
  // The node id that produces `v`; declares a constant's node on first use.
  auto src = [&](const Value *v) {
    auto it = source.find(v);
    if (it != source.end())
      return it->second;
    std::string id = "c" + std::to_string(consts++);
    os << "  " << id << " [shape=note, fontsize=8, label="
       << quote(v->Name + br + typeText(g, *v)) << "];\n";
    source[v] = id;
    return id;
  };
  auto edge = [&](const Value *v, const std::string &to) {
    std::string from = src(v);
    os << "  " << from << " -> " << to << " [label=" << quote(typeText(g, *v))
       << ", fontsize=8];\n";
  };
  for (size_t n = 0; n < g.Nodes.size(); ++n) {
    const Node &node = *g.Nodes[n];
    std::string id = "n" + std::to_string(n);
    os << "  " << id << " [shape=box, style=rounded, label="
       << quote(node.OpType + br + node.Name) << "];\n";
    for (const Value *in : node.Inputs)
      if (in)
        edge(in, id);
    for (const Value *out : node.Outputs)
      if (out)
        source[out] = id;
  }
  for (size_t i = 0; i < g.Outputs.size(); ++i) {
    std::string id = "out" + std::to_string(i);
    os << "  " << id << " [shape=oval, label=" << quote(g.Outputs[i]->Name) << "];\n";
    edge(g.Outputs[i], id);
  }
  // Fused groups as clusters: one box per kernel around its nodes.
  std::map<int, std::vector<size_t>> groups;
  for (size_t n = 0; n < g.Nodes.size(); ++n)
    if (g.Nodes[n]->Group >= 0)
      groups[g.Nodes[n]->Group].push_back(n);
  for (auto &[id, members] : groups) {
    os << "  subgraph cluster_fused" << id << " {\n    label="
       << quote("fused " + std::to_string(id)) << "; style=dashed;";
    for (size_t n : members)
      os << " n" << n << ";";
    os << "\n  }\n";
  }
  os << "}\n";
  return os.str();
}

// ---------------------------------------------------------------------------
// Verifier
// ---------------------------------------------------------------------------

void verifyGraph(const Graph &g) {
  auto bad = [&](const std::string &msg) {
    fail(ErrorKind::Internal) << "internal error: graph verifier: " << msg;
  };
  std::set<const Value *> defined;
  for (auto *in : g.Inputs)
    defined.insert(in);
  for (auto &n : g.Nodes) {
    for (auto *in : n->Inputs) {
      if (!in)
        continue;
      if (!in->Const && !defined.count(in))
        bad(n->where() + " uses '" + in->Name + "' before it is defined");
      if (!in->Type.known())
        bad(n->where() + " input '" + in->Name + "' has no type");
    }
    for (auto *out : n->Outputs) {
      if (!out)
        continue;
      if (defined.count(out))
        bad("'" + out->Name + "' is defined twice");
      if (out->Producer != n.get())
        bad("'" + out->Name + "' does not point back to " + n->where());
      if (!out->Type.known())
        bad(n->where() + " output '" + out->Name + "' has no type");
      defined.insert(out);
    }
  }
  for (auto *out : g.Outputs)
    if (!out->Const && !defined.count(out))
      bad("graph output '" + out->Name + "' is never defined");
}

std::string KernelPlan::str() const {
  if (empty())
    return "";
  std::ostringstream os;
  const char *sep = "";
  auto field = [&](const std::string &text) {
    os << sep << text;
    sep = ", ";
  };
  os << "plan{";
  if (Register) {
    field("tile=" + std::to_string(Register->Rows) + "x" + std::to_string(Register->Panel) +
          " lanes=" + std::to_string(Register->Lanes));
    if (Register->ReduceBlock)
      field("blocks=" + std::to_string(Register->ReduceBlock) + "x" +
            std::to_string(Register->RowBlock));
    if (Register->HalfAccumulate)
      field("float16_accumulate");
    if (Register->RowsOuter)
      field("rows_outer");
    if (Register->Unroll > 1)
      field("unroll=" + std::to_string(Register->Unroll));
    // The parallel loop's rule, where it is not the default's.
    const Tile standard;
    if (Register->ParallelPanels != standard.ParallelPanels ||
        Register->ParallelRowUnits != standard.ParallelRowUnits)
      field("parallel_panels>=" + std::to_string(Register->ParallelPanels) +
            " row_units<" + std::to_string(Register->ParallelRowUnits));
  }
  if (PackedInput >= 0)
    field("packed=" + std::to_string(PackedInput));
  if (PixelColumns)
    field("pixel_columns");
  if (GateRows)
    field("gate_rows");
  if (GateBlock)
    field("gate_block=" + std::to_string(GateBlock));
  if (Fft)
    field("fft twiddles=" + std::to_string(FftInput));
  if (Wino)
    field("winograd=" + std::to_string(Wino->Tile) + " rows=" + std::to_string(Wino->Rows) +
          " pitch=" + std::to_string(Wino->Pitch) + " skew=" + std::to_string(Wino->Skew));
  if (Dot4Lanes)
    field("dot4=" + std::to_string(Dot4Lanes) + " packed=" + std::to_string(Dot4Input) +
          (DotPairs ? " pairs" : "") + (DotSigned ? " signed" : "") +
          (DotNarrow ? " narrow" : "") + (DotAlongK ? " along_k" : ""));
  auto intTile = [&](const char *name, const IntTile &t) {
    std::string s = std::string(name) + "=" + std::to_string(t.Rows) + "x" +
                    std::to_string(t.Vectors * t.Lanes) + " lanes=" + std::to_string(t.Lanes);
    if (t.TailGroups > 1)
      s += " tail_groups=" + std::to_string(t.TailGroups);
    field(s);
  };
  if (Dot)
    intTile("dot_tile", *Dot);
  if (Taps)
    intTile("dot4_taps", *Taps);
  if (Taps && !Dot4Lanes && DotSigned)
    field(DotNarrow ? "signed narrow" : "signed");
  if (Int)
    intTile("int_tile", *Int);
  if (LaneWeights)
    field("lane_weights=" + std::to_string(LaneWeightsInput));
  if (ByteDot)
    field(ByteDotInput >= 0 ? "byte_dot=" + std::to_string(ByteDotInput) : "byte_dot");
  if (Pairs)
    field("pairs=" + std::to_string(PairsInput) + (PairWords ? " words" : "") +
          (StagedPairs ? " staged" : "") + (WindowPairs ? " window" : ""));
  if (Depthwise)
    field("plane<=" + std::to_string(Depthwise->MaxElements) +
          " grid_round=" + std::to_string(Depthwise->GridRound));
  if (GridStageBytes > 0)
    field("grid<=" + std::to_string(GridStageBytes));
  if (StagedABytes > 0)
    field("stage_a<=" + std::to_string(StagedABytes));
  if (NBitsRows > 0)
    field("nbits_rows=" + std::to_string(NBitsRows) + " lanes=" + std::to_string(NBitsLanes));
  if (UnrolledTaps != KernelPlan{}.UnrolledTaps)
    field("unrolled_taps=" + std::to_string(UnrolledTaps));
  if (FixedRequant)
    field("fixed_requant=" + std::to_string(FixedRequantInput));
  if (MultiplierInput >= 0)
    field("multipliers=" + std::to_string(MultiplierInput));
  if (IntSaturate)
    field("int_saturate");
  if (PerOutput)
    field("per_output");
  if (Attention) {
    auto tile = [](const Tile &t) {
      return std::to_string(t.Rows) + "x" + std::to_string(t.Panel) +
             " lanes=" + std::to_string(t.Lanes);
    };
    field("attention blocks=" + std::to_string(Attention->QueryBlock) + "x" +
          std::to_string(Attention->KeyBlock) +
          (Attention->KeysAsRows ? " keys_as_rows" : "") + " scores=" + tile(Attention->Scores) +
          " values=" + tile(Attention->Values) +
          (Attention->FewRows ? " few_rows=" + tile(*Attention->FewRows) : "") +
          (Attention->FewValues ? " few_values=" + tile(*Attention->FewValues) : ""));
  }
  os << "}";
  return os.str();
}

} // namespace mlcc::ir
