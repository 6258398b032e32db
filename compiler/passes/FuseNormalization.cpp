//===- FuseNormalization.cpp - Written-out normalizations into one node ---===//
//
// fuse-normalization: the layer normalizations exporters write out in
// tensor ops (PyTorch's nn.LayerNorm below opset 17, Hugging Face's RMSNorm
// at every opset) become the ONNX op, one kernel instead of three to five:
//
//   LayerNorm:  m = ReduceMean(x)      d = Sub(x, m)
//               v = ReduceMean(d * d)  (Pow(d, 2) or Mul(d, d))
//               y = d / Sqrt(v + eps)  (Div, or Mul by Reciprocal / 1 / ...;
//                                       Pow(., 0.5) or Mul by Pow(., -0.5))
//               [* gamma] [+ beta]
//   -> LayerNormalization(x, gamma or ones, beta; axis, epsilon)
//
//   RMSNorm:    v = ReduceMean(x * x)  (Pow(x, 2) or Mul(x, x))
//               y = x / Sqrt(v + eps)  (the same forms)  [* gamma]
//   -> RMSNormalization(x, gamma or ones; axis, epsilon)
//
// The reductions keep their axes and cover the trailing axes from `axis`
// on; eps is a constant scalar; gamma and beta constants of the normalized
// axes' shape (or fewer, broadcasting); x float32, float16 or bfloat16 (the
// ops compute in float32, stash_type 1). Every intermediate value is read by
// the pattern only and is no graph output; all nodes run under one guard.
// Anything else stays as it is.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include <map>
#include <set>

namespace mlcc::passes {

namespace {

struct Matcher {
  ir::Graph &G;
  std::map<const ir::Value *, int> Uses;
  std::set<const ir::Node *> Dead;

  static bool isOp(const ir::Node *n, const char *op) {
    return n && n->Domain.empty() && n->OpType == op;
  }

  /// The node producing `v` when it is an `op` read `uses` times (by the
  /// pattern only), not a graph output, under `guard`.
  ir::Node *inner(const ir::Value *v, const char *op, const ir::Value *guard, int uses = 1) const {
    if (!v || !v->Producer || !isOp(v->Producer, op) || v->Producer->Guard != guard ||
        G.isGraphOutput(v))
      return nullptr;
    auto it = Uses.find(v);
    return it != Uses.end() && it->second == uses ? v->Producer : nullptr;
  }

  static const Tensor *constant(const ir::Value *v) { return v && v->Const ? v->Const.get() : nullptr; }

  static bool isScalar(const ir::Value *v, double want) {
    const Tensor *t = constant(v);
    return t && t->numel() == 1 && t->doubleAt(0) == want;
  }

  /// The other operand of a binary node whose one operand is `x`.
  static ir::Value *other(const ir::Node &n, const ir::Value *x) {
    if (n.Inputs.size() != 2)
      return nullptr;
    return n.Inputs[0] == x ? n.Inputs[1] : n.Inputs[1] == x ? n.Inputs[0] : nullptr;
  }

  /// The first reduced axis of a ReduceMean of `x` that keeps its axes and
  /// reduces exactly the trailing axes from it; none otherwise.
  static std::optional<int64_t> trailingAxes(const ir::Node &r, const ir::Value *x) {
    if (r.Inputs.empty() || r.Inputs[0] != x || r.attrInt("keepdims", 1) != 1 ||
        r.attrInt("noop_with_empty_axes", 0) != 0)
      return std::nullopt;
    std::vector<int64_t> axes = r.attrInts("axes");
    if (r.Opset >= 18) {
      const Tensor *t = r.hasInput(1) ? constant(r.Inputs[1]) : nullptr;
      if (!t)
        return std::nullopt;
      axes.clear();
      for (int64_t i = 0; i < t->numel(); ++i)
        axes.push_back(t->intAt(i));
    }
    const int64_t rank = (int64_t)x->Type.Dims.size();
    if (axes.empty() || rank == 0)
      return std::nullopt;
    std::set<int64_t> s;
    for (int64_t a : axes)
      s.insert(a < 0 ? a + rank : a);
    const int64_t first = *s.begin();
    if (first < 0 || *s.rbegin() != rank - 1 || (int64_t)s.size() != rank - first)
      return std::nullopt;
    for (const AxisExtent &b : x->Bounded)
      if (b.Axis >= first)
        return std::nullopt; // normalized along a run-time extent: left as it is
    return first;
  }

  /// `v` as the square of `x`: Pow(x, 2) or Mul(x, x).
  bool isSquare(const ir::Value *v, const ir::Value *x, const ir::Value *guard) const {
    if (const ir::Node *p = inner(v, "Pow", guard))
      return p->Inputs.size() == 2 && p->Inputs[0] == x && isScalar(p->Inputs[1], 2.0);
    const ir::Node *m = inner(v, "Mul", guard);
    return m && m->Inputs.size() == 2 && m->Inputs[0] == x && m->Inputs[1] == x;
  }

  /// Where `y` is num / Sqrt(mean + eps) with `num` given: the mean of
  /// squares (the value under the root, before eps) and eps; the root, Add
  /// and reciprocal nodes go to `nodes`. Forms: Div(num, s),
  /// Mul(num, Reciprocal(s)), Mul(num, Div(1, s)) with s = Sqrt(v) or
  /// Pow(v, 0.5), and Mul(num, Pow(v, -0.5)).
  struct Root {
    ir::Value *MeanSquares;
    double Eps;
  };
  std::optional<Root> scaledBySqrt(const ir::Node &y, const ir::Value *num,
                                   std::vector<const ir::Node *> &nodes) const {
    const ir::Value *guard = y.Guard;
    // Pow(v, e): its base when `v` is one, read once, with exponent `e`.
    auto power = [&](const ir::Value *v, double e) -> const ir::Node * {
      const ir::Node *p = inner(v, "Pow", guard);
      return p && p->Inputs.size() == 2 && isScalar(p->Inputs[1], e) ? p : nullptr;
    };
    const ir::Value *s = nullptr, *under = nullptr; // the root, and what is under it
    if (isOp(&y, "Div") && y.Inputs.size() == 2 && y.Inputs[0] == num) {
      s = y.Inputs[1];
    } else if (isOp(&y, "Mul")) {
      const ir::Value *r = other(y, num);
      if (const ir::Node *rec = inner(r, "Reciprocal", guard)) {
        s = rec->Inputs[0];
        nodes.push_back(rec);
      } else if (const ir::Node *div = inner(r, "Div", guard);
                 div && div->Inputs.size() == 2 && isScalar(div->Inputs[0], 1.0)) {
        s = div->Inputs[1];
        nodes.push_back(div);
      } else if (const ir::Node *p = power(r, -0.5)) { // (mean + eps)^-0.5
        under = p->Inputs[0];
        nodes.push_back(p);
      }
    }
    if (!under) {
      const ir::Node *root = inner(s, "Sqrt", guard);
      if (!root)
        root = power(s, 0.5);
      if (!root)
        return std::nullopt;
      under = root->Inputs[0];
      nodes.push_back(root);
    }
    const ir::Node *add = inner(under, "Add", guard);
    if (!add || add->Inputs.size() != 2)
      return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const Tensor *eps = constant(add->Inputs[(size_t)k]);
      if (eps && eps->numel() == 1 && add->Inputs[(size_t)(1 - k)]->Producer) {
        nodes.push_back(add);
        return Root{add->Inputs[(size_t)(1 - k)], eps->doubleAt(0)};
      }
    }
    return std::nullopt;
  }

  /// A constant scale or shift `c` of the normalized axes (shape [..., n]
  /// of at most rank - axis axes).
  static bool fitsNormalized(const ir::Value *c, const ir::Value *x, int64_t axis) {
    if (!c || !c->Const)
      return false;
    const Shape &s = c->Type.Dims, &d = x->Type.Dims;
    if (s.size() > d.size() - (size_t)axis)
      return false;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[s.size() - 1 - i] != d[d.size() - 1 - i] && s[s.size() - 1 - i] != 1)
        return false;
    return true;
  }

  ir::Value *ones(const ir::Value *x, int64_t axis) {
    Shape s(x->Type.Dims.begin() + axis, x->Type.Dims.end());
    ir::Value *v = G.addValue(G.uniqueValueName(x->Name + "/norm_scale"), {x->Type.Type, s});
    v->Const = std::make_shared<Tensor>(
        Tensor::fromDoubles(x->Type.Type, s, std::vector<double>((size_t)numElements(s), 1.0)));
    return v;
  }

  /// Rewrites the normalization ending in `tail` (the node computing the
  /// normalized value, or its scale, or its shift) into the op.
  bool match(ir::Node &tail) {
    // Walk back from a candidate last node: an Add (shift) or a Mul
    // (scale) by a constant, or the division itself.
    ir::Node *end = &tail;
    ir::Value *beta = nullptr, *gamma = nullptr;
    ir::Node *shiftNode = nullptr, *scaleNode = nullptr;
    std::vector<const ir::Node *> nodes;
    const ir::Value *guard = tail.Guard;
    const bool isFloatX = !tail.Outputs.empty() && tail.Outputs[0] &&
                          isF32Arithmetic(tail.Outputs[0]->Type.Type);
    if (!isFloatX)
      return false;
    ir::Node *norm = end;
    auto constOperand = [&](ir::Node &n) -> std::pair<ir::Value *, ir::Value *> {
      if (n.Inputs.size() != 2)
        return {nullptr, nullptr};
      for (int k = 0; k < 2; ++k)
        if (n.Inputs[(size_t)k]->Const && n.Inputs[(size_t)(1 - k)]->Producer)
          return {n.Inputs[(size_t)k], n.Inputs[(size_t)(1 - k)]};
      return {nullptr, nullptr};
    };
    if (isOp(norm, "Add")) {
      auto [c, in] = constOperand(*norm);
      ir::Node *m = c ? inner(in, "Mul", guard) : nullptr;
      if (!m)
        return false;
      beta = c;
      shiftNode = norm;
      norm = m;
    }
    if (isOp(norm, "Mul")) {
      auto [c, in] = constOperand(*norm);
      ir::Node *p = c ? in->Producer : nullptr;
      if (p && (isOp(p, "Div") || isOp(p, "Mul")) && inner(in, p->OpType.c_str(), guard)) {
        gamma = c;
        scaleNode = norm;
        norm = p;
      } else if (beta) {
        return false;
      }
    }
    if (!isOp(norm, "Div") && !isOp(norm, "Mul"))
      return false;
    // The numerator: d = x - mean (LayerNorm) or x (RMSNorm).
    for (ir::Value *num : norm->Inputs) {
      if (!num)
        continue;
      std::vector<const ir::Node *> rootNodes;
      std::optional<Root> root = scaledBySqrt(*norm, num, rootNodes);
      if (!root)
        continue;
      const ir::Node *meanSq = inner(root->MeanSquares, "ReduceMean", guard);
      if (!meanSq || meanSq->Inputs.empty())
        continue;
      const ir::Value *sq = meanSq->Inputs[0];
      // LayerNorm: num = Sub(x, ReduceMean(x)), read by the square and the
      // division (twice by Mul(d, d)).
      const ir::Node *sub = num->Producer;
      if (sub && isOp(sub, "Sub") && sub->Guard == guard && sub->Inputs.size() == 2 &&
          !G.isGraphOutput(num)) {
        ir::Value *x = sub->Inputs[0];
        const ir::Node *mean = inner(sub->Inputs[1], "ReduceMean", guard);
        const bool mulSquare = sq->Producer && isOp(sq->Producer, "Mul");
        auto uses = Uses.find(num);
        if (mean && uses != Uses.end() && uses->second == (mulSquare ? 3 : 2) &&
            isSquare(sq, num, guard) && x->Type.Type == tail.Outputs[0]->Type.Type) {
          std::optional<int64_t> a1 = trailingAxes(*mean, x), a2 = trailingAxes(*meanSq, sq);
          if (a1 && a2 && *a1 == *a2 && (!gamma || fitsNormalized(gamma, x, *a1)) &&
              (!beta || fitsNormalized(beta, x, *a1))) {
            nodes = rootNodes;
            nodes.insert(nodes.end(), {mean, sub, sq->Producer, meanSq, norm});
            rewrite(tail, "LayerNormalization", 17, x, gamma, beta, *a1, root->Eps, nodes,
                    scaleNode, shiftNode);
            return true;
          }
        }
      }
      // RMSNorm: num = x, read by the square, the division and no one else
      // matched here (x is the block's input: other readers are fine).
      if (!beta && isSquare(sq, num, guard) && num->Type.Type == tail.Outputs[0]->Type.Type) {
        std::optional<int64_t> a = trailingAxes(*meanSq, sq);
        if (a && (!gamma || fitsNormalized(gamma, num, *a))) {
          nodes = rootNodes;
          nodes.insert(nodes.end(), {sq->Producer, meanSq, norm});
          rewrite(tail, "RMSNormalization", 23, num, gamma, nullptr, *a, root->Eps, nodes,
                  scaleNode, nullptr);
          return true;
        }
      }
    }
    return false;
  }

  /// `tail` becomes the op; the other nodes of the pattern go.
  void rewrite(ir::Node &tail, const char *op, int64_t opset, ir::Value *x, ir::Value *gamma,
               ir::Value *beta, int64_t axis, double eps, std::vector<const ir::Node *> nodes,
               const ir::Node *scaleNode, const ir::Node *shiftNode) {
    for (const ir::Node *n : {scaleNode, shiftNode})
      if (n && n != &tail)
        nodes.push_back(n);
    for (const ir::Node *n : nodes)
      if (n != &tail)
        Dead.insert(n);
    ir::Value *y = tail.Outputs[0];
    tail.OpType = op;
    tail.Domain.clear();
    tail.Opset = opset;
    tail.Attrs = {{"axis", ir::intAttr(axis)}, {"epsilon", ir::floatAttr(eps)}};
    tail.Inputs = {x, gamma ? gamma : ones(x, axis)};
    if (beta)
      tail.Inputs.push_back(beta);
    tail.Outputs = {y};
    tail.Plan = {};
  }
};

} // namespace

bool fuseNormalization(ir::Graph &g) {
  Matcher m{g, g.useCounts(), {}};
  bool changed = false;
  // Last nodes first: a normalization's tail comes after its body.
  for (auto it = g.Nodes.rbegin(); it != g.Nodes.rend(); ++it)
    if (!m.Dead.count(it->get()) && m.match(**it))
      changed = true;
  if (!m.Dead.empty())
    g.removeNodesIf([&](const ir::Node &n) { return m.Dead.count(&n) > 0; });
  return changed;
}

} // namespace mlcc::passes
