//===- Reference.cpp - The model before optimization, in double -----------===//
//
// A node is computed in double when, with each of its float32 inputs made
// float64, it passes its ONNX schema check and its type inference makes
// each of its float32 outputs float64 (so ops whose output type comes from
// an attribute, like Cast, stay as they are). Its float32 inputs then read a
// float64 twin: the constant converted, or a Cast of the value inserted
// before the node; a node that stays in float32 reads a Cast of a promoted
// value back to float32. Promoted values keep their names.
//
//===----------------------------------------------------------------------===//
#include "compiler/check/Reference.h"

#include "compiler/kernel/Schedule.h"
#include "compiler/ops/OpRegistry.h"

#include <algorithm>
#include <map>
#include <set>

namespace mlcc::check {

namespace {

bool hasSubgraphs(const ir::Node &n) {
  for (auto &[name, a] : n.Attrs)
    if (a.Kind == ir::AttrKind::Graph || a.Kind == ir::AttrKind::Graphs)
      return true;
  return false;
}

/// Whether `n` can run with its float32 inputs and outputs in float64
/// (`promoted`: its inputs already made float64).
bool promotable(ir::Node &n, const std::set<const ir::Value *> &promoted) {
  const ops::OpRegistry &reg = ops::OpRegistry::instance();
  std::vector<ir::Value *> changed;
  bool anyFloatIn = false;
  for (ir::Value *in : n.Inputs) {
    anyFloatIn = anyFloatIn || (in && promoted.count(in));
    if (in && in->Type.Type == DType::F32 &&
        std::find(changed.begin(), changed.end(), in) == changed.end())
      changed.push_back(in);
  }
  anyFloatIn = anyFloatIn || !changed.empty();
  bool anyFloatOut = false;
  for (ir::Value *out : n.Outputs)
    anyFloatOut = anyFloatOut || (out && out->Type.Type == DType::F32);
  if (!anyFloatIn || !anyFloatOut || hasSubgraphs(n))
    return false;
  std::vector<ir::TensorType> outTypes;
  for (ir::Value *out : n.Outputs)
    outTypes.push_back(out ? out->Type : ir::TensorType{});
  for (ir::Value *in : changed)
    in->Type.Type = DType::F64;
  bool ok = true;
  try {
    reg.validate(n);
    reg.lookup(n).Infer(n);
    for (size_t i = 0; i < n.Outputs.size(); ++i)
      if (n.Outputs[i])
        ok = ok && n.Outputs[i]->Type.Type ==
                       (outTypes[i].Type == DType::F32 ? DType::F64 : outTypes[i].Type);
  } catch (const CompileError &) {
    ok = false;
  }
  for (ir::Value *in : changed)
    in->Type.Type = DType::F32;
  for (size_t i = 0; i < n.Outputs.size(); ++i)
    if (n.Outputs[i])
      n.Outputs[i]->Type = outTypes[i];
  return ok;
}

class Promoter {
public:
  explicit Promoter(ir::Graph &g) : G(g) {
    auto it = g.Opsets.find("");
    Opset = it == g.Opsets.end() ? 13 : it->second;
  }

  void run(Reference &r) {
    std::vector<std::unique_ptr<ir::Node>> nodes = std::move(G.Nodes);
    G.Nodes.clear();
    for (auto &np : nodes) {
      ir::Node &n = *np;
      bool up = promotable(n, Promoted);
      for (ir::Value *&in : n.Inputs) {
        if (!in)
          continue;
        if (up && in->Type.Type == DType::F32)
          in = twin64(in);
        else if (!up && Promoted.count(in))
          in = twin32(in);
      }
      if (up)
        for (ir::Value *out : n.Outputs)
          if (out && out->Type.Type == DType::F32) {
            out->Type.Type = DType::F64;
            Promoted.insert(out);
          }
      ++(up ? r.DoubleNodes : r.OtherNodes);
      G.Nodes.push_back(std::move(np));
    }
  }

  /// Values that exist only for the reference (casts, converted constants).
  std::set<const ir::Value *> Added;

private:
  ir::Value *twin64(ir::Value *v) {
    auto it = To64.find(v);
    if (it != To64.end())
      return it->second;
    ir::Value *t;
    if (v->Const) {
      t = G.addValue(G.uniqueValueName(v->Name + "::f64"), {DType::F64, v->Type.Dims});
      const Tensor &c = *v->Const;
      t->Const = std::make_shared<Tensor>(
          c.isSplat() ? Tensor::fromDoubles(DType::F64, c.shape(),
                                            std::vector<double>((size_t)c.numel(), c.doubleAt(0)))
                      : Tensor::fromDoubles(DType::F64, c.shape(), c.toDoubles()));
    } else {
      t = cast(v, DType::F64, "::f64");
    }
    Added.insert(t);
    return To64[v] = t;
  }

  ir::Value *twin32(ir::Value *v) {
    auto it = To32.find(v);
    if (it != To32.end())
      return it->second;
    ir::Value *t = cast(v, DType::F32, "::f32");
    Added.insert(t);
    return To32[v] = t;
  }

  ir::Value *cast(ir::Value *v, DType to, const char *suffix) {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(v->Name + suffix);
    n->OpType = "Cast";
    n->Opset = Opset;
    n->Attrs["to"] = ir::intAttr(to == DType::F64 ? 11 : 1);
    ir::Value *out = G.addValue(G.uniqueValueName(v->Name + suffix), {to, v->Type.Dims});
    out->Producer = n.get();
    n->Inputs = {v};
    n->Outputs = {out};
    G.Nodes.push_back(std::move(n));
    return out;
  }

  ir::Graph &G;
  int64_t Opset = 13;
  std::set<const ir::Value *> Promoted;
  std::map<const ir::Value *, ir::Value *> To64, To32;
};

} // namespace

Reference buildReference(ir::Graph &g, const passes::FoldOptions &fold) {
  Reference r;
  passes::FoldOptions validate = fold;
  validate.Validate = true;
  passes::inferAndFold(g, validate);
  passes::eliminateDeadCode(g);
  for (auto &v : g.Values)
    if (v->Type.known())
      r.ModelTypes[v->Name] = v->Type;
  std::set<const ir::Value *> added;
  bool controlFlow = false;
  for (auto &n : g.Nodes)
    controlFlow = controlFlow || hasSubgraphs(*n);
  if (controlFlow) {
    r.NoDoubleReason = "the model has control flow (If, Loop, Scan), whose subgraphs read "
                       "outer values in their own types";
    r.OtherNodes = g.Nodes.size();
  } else {
    Promoter p(g);
    p.run(r);
    added = p.Added;
    passes::inferAndFold(g, fold);
  }
  // Every computed value is an output (the graph's own outputs first).
  std::vector<ir::Value *> outs = g.Outputs;
  std::set<const ir::Value *> seen(outs.begin(), outs.end());
  for (auto &n : g.Nodes)
    for (ir::Value *v : n->Outputs)
      if (v && !v->Const && !added.count(v) && v->Type.numel() > 0 && seen.insert(v).second)
        outs.push_back(v);
  g.Outputs = outs;
  r.Program = passes::lowerToProgram(g, "mlcc_reference");
  kir::planMemory(r.Program);
  // Unscheduled, but packed 4- and 2-bit accesses must be byte operations
  // for any emitter (what the schedule step does to them).
  for (kir::Kernel &k : r.Program.Kernels)
    if (kir::hasSubByte(k))
      k = kir::expandSubByte(k);
  return r;
}

} // namespace mlcc::check
