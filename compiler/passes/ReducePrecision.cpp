//===- ReducePrecision.cpp - A float32 model in float16 or bfloat16 -------===//
//
// reduce-precision (--precision float16|bfloat16): the model's float32
// weights and activations become 16-bit floats (half the weights' bytes
// and the arena's), its graph inputs and outputs stay float32 (a Cast after
// each input and before each output). The float plans take 16-bit floats
// as they take float32 (f32 arithmetic, one rounding per stored value), so
// what changes is what is stored.
//
// Node by node, in order: each float32 input that the node's ONNX schema
// lets be the 16-bit type (its type constraint allows it) is read in that
// type: a constant converted once (its copy shared by every reader), any
// other value through a Cast (shared too). The node is then checked and
// inferred again; where it refuses the 16-bit type (an op mlcc computes
// only in float32), it keeps its float32 inputs, 16-bit producers' values
// cast back. Inputs whose formal type is fixed at float32 (Resize's
// scales) stay float32.
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/passes/Passes.h"
#include "compiler/support/Error.h"

#include <map>
#include <set>

namespace mlcc::passes {

namespace {

class Reducer {
public:
  Reducer(ir::Graph &g, DType to) : G(g), To(to) {}

  void run() {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    std::vector<std::unique_ptr<ir::Node>> old = std::move(G.Nodes);
    G.Nodes.clear();
    for (ir::Value *in : G.Inputs)
      if (in && in->Type.Type == DType::F32)
        Narrow[in] = cast(in, To, nullptr);
    flush();
    for (auto &n : old) {
      std::vector<ir::Value *> original = n->Inputs;
      std::vector<DType> outTypes;
      for (ir::Value *out : n->Outputs)
        outTypes.push_back(out ? out->Type.Type : DType::Undefined);
      for (size_t i = 0; i < n->Inputs.size(); ++i) {
        ir::Value *v = n->Inputs[i];
        if (v && v->Type.Type == DType::F32 && reg.accepts(*n, i, To))
          n->Inputs[i] = narrow(v);
      }
      // Inferred again: inputs narrowed here or by their producers change
      // its output types.
      if (!inferred(*n)) {
        // The op refuses the 16-bit type: float32 in, as before.
        n->Inputs = original;
        for (ir::Value *&v : n->Inputs)
          if (v && Produced.count(v))
            v = widen(v);
        if (!inferred(*n))
          n->error(ErrorKind::Internal) << "internal error: reduce-precision left it without "
                                           "the types it had";
      }
      for (size_t o = 0; o < n->Outputs.size(); ++o)
        if (ir::Value *out = n->Outputs[o]; out && outTypes[o] == DType::F32 &&
                                            out->Type.Type == To)
          Produced.insert(out);
      flush(); // the Casts it reads, before it
      G.Nodes.push_back(std::move(n));
    }
    // Graph outputs stay float32, under their names.
    for (ir::Value *&out : G.Outputs) {
      if (!out || !Produced.count(out))
        continue;
      ir::Value *wide = widen(out);
      G.swapNames(out, wide);
      out = wide;
    }
    flush();
  }

private:
  ir::Graph &G;
  DType To;
  std::map<ir::Value *, ir::Value *> Narrow; ///< float32 value -> its 16-bit copy
  std::map<ir::Value *, ir::Value *> Wide;   ///< 16-bit value -> float32 copy
  std::set<ir::Value *> Produced;             ///< values a node now writes in To
  std::vector<std::unique_ptr<ir::Node>> Pending;

  /// Runs the node's schema check and inference; false when it refuses
  /// its input types.
  static bool inferred(ir::Node &n) {
    const ops::OpRegistry &reg = ops::OpRegistry::instance();
    try {
      reg.validate(n);
      reg.lookup(n).Infer(n);
      return true;
    } catch (const CompileError &) {
      return false;
    }
  }

  /// `v` (float32) in the 16-bit type: a converted constant or a Cast.
  ir::Value *narrow(ir::Value *v) {
    auto it = Narrow.find(v);
    if (it != Narrow.end())
      return it->second;
    ir::Value *r;
    if (v->Const) {
      auto t = std::make_shared<Tensor>(To, v->Const->shape());
      for (int64_t i = 0; i < v->Const->numel(); ++i)
        t->setDouble(i, v->Const->doubleAt(i));
      r = G.addValue(G.uniqueValueName(v->Name + "." + dtypeName(To)), {To, v->Type.Dims});
      r->Const = std::move(t);
    } else {
      r = cast(v, To, v->Producer ? v->Producer->Guard : nullptr);
    }
    return Narrow[v] = r;
  }

  /// `v` (a value a node now writes in the 16-bit type) in float32.
  ir::Value *widen(ir::Value *v) {
    auto it = Wide.find(v);
    return it != Wide.end() ? it->second
                            : cast(v, DType::F32, v->Producer ? v->Producer->Guard : nullptr);
  }

  /// A Cast of `v` to `t`, placed before the node being placed (Pending).
  ir::Value *cast(ir::Value *v, DType t, ir::Value *guard) {
    auto n = std::make_unique<ir::Node>();
    n->Name = G.uniqueNodeName(v->Name + "/to_" + dtypeName(t));
    n->OpType = "Cast";
    n->Opset = 13;
    n->Inputs = {v};
    n->Attrs["to"] = ir::intAttr(t == DType::F32 ? 1 : t == DType::F16 ? 10 : 16);
    n->Guard = guard;
    ir::Value *out = G.addValue(G.uniqueValueName(v->Name + "." + dtypeName(t)));
    out->Type = {t, v->Type.Dims};
    out->Bounded = v->Bounded;
    out->Producer = n.get();
    n->Outputs = {out};
    if (t == DType::F32)
      Wide[v] = out;
    Pending.push_back(std::move(n));
    return out;
  }

  void flush() {
    for (auto &n : Pending)
      G.Nodes.push_back(std::move(n));
    Pending.clear();
  }
};

} // namespace

bool reducePrecision(ir::Graph &g, DType to) {
  MLCC_CHECK(to == DType::F16 || to == DType::BF16, "reduce-precision to " << dtypeName(to));
  Reducer(g, to).run();
  return true;
}

} // namespace mlcc::passes
