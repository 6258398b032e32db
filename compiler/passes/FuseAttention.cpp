//===- FuseAttention.cpp - Attention chains into one node -----------------===//
//
// fuse-attention: the chain exporters write for scaled dot-product
// attention,
//
//   S = MatMul(Q, KT)                      KT: [..., dk, Lk]
//   S = step(S, x...) ...                  Add/Sub/Mul/Div by an operand,
//                                          Where(c, S, x) or Where(c, x, S)
//   P = Softmax(S) over the last axis
//   Y = MatMul(P, V)
//
// becomes one mlcc.Attention node (ops/FusedAttention.cpp) that never
// stores S or P. The Transposes that split the heads before the products
// (a Transpose of Q or V, the one making KT) and the one merging them after
// are folded into the node's operand and output permutations when nothing
// else reads them, so their copies go too; so are the key and value heads
// broadcast to groups of query heads (Unsqueeze, Expand, Reshape: grouped-
// query attention as Hugging Face models write it, read as k_group). Every value in the chain must
// be f32, read by the chain only and not a graph output (Identity and
// inference-mode Dropout nodes in the chain are read through), every step keep
// the scores' shape (operands broadcast to it), and all nodes run under
// the same guard; a chain that does not match stays as it is (each node
// its own kernel, still correct).
//
// The ONNX Attention op (opset 23) becomes the same node where the kernel
// computes what it defines: qk_matmul_output not read, a nonpad_kv_seqlen
// (without a past) turned into a boolean mask of the keys each query sees,
// a mask shorter than the keys padded with -inf (false),
// a past key and value (if any) of fixed length P whose
// present ones are computed first (Concat of the past and the new heads,
// the present outputs when the graph reads them; causal rows see the past:
// causal_offset P; without a past, present outputs that are read are the
// new keys and values in heads-first order), key heads dividing the query
// heads (grouped-query attention: k_group); its scale a Mul step, softcap
// a step of its own, a float mask an Add, a
// boolean mask a Where, is_causal the causal step, 3-D operands read
// through a tail (their heads), a 3-D Y through a Reshape (a view), and a
// row with no attendable key giving zeros.
//
// Not on GPU targets (their matrix products go to the library).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Contraction.h"
#include "compiler/passes/Passes.h"

#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace mlcc::passes {

namespace {

/// The step code of `n` (ops::attention::Step) applied to `scores`: a binary
/// op's + 1 when the scores are its second operand.
std::optional<int64_t> stepCode(const ir::Node &n, const ir::Value *scores) {
  if (!n.Domain.empty())
    return std::nullopt;
  static const std::map<std::string, int64_t> binary = {
      {"Add", ops::attention::Add}, {"Sub", ops::attention::Sub},
      {"Mul", ops::attention::Mul}, {"Div", ops::attention::Div}};
  auto it = binary.find(n.OpType);
  if (it != binary.end() && n.Inputs.size() == 2 && n.Inputs[0] != n.Inputs[1]) {
    if (n.Inputs[0] == scores)
      return it->second;
    if (n.Inputs[1] == scores)
      return it->second + 1;
    return std::nullopt;
  }
  if (n.OpType == "Where" && n.Inputs.size() == 3 && n.Inputs[0] != scores &&
      n.Inputs[1] != n.Inputs[2]) {
    if (n.Inputs[1] == scores)
      return ops::attention::WhereKeep;
    if (n.Inputs[2] == scores)
      return ops::attention::WhereFill;
  }
  return std::nullopt;
}

/// The step's operands, in the order the node reads them.
std::vector<ir::Value *> stepOperands(const ir::Node &n, int64_t code) {
  if (code == ops::attention::WhereKeep)
    return {n.Inputs[0], n.Inputs[2]};
  if (code == ops::attention::WhereFill)
    return {n.Inputs[0], n.Inputs[1]};
  return {n.Inputs[code % 2 == 0 ? 1 : 0]};
}

std::vector<int64_t> identity(size_t rank) {
  std::vector<int64_t> p(rank);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

struct Matcher {
  ir::Graph &G;
  std::map<const ir::Value *, int> Uses;
  std::set<const ir::Node *> Absorbed;
  /// The float type of the chain being matched: f32, or f16/bf16, whose
  /// operands the node reads through Casts to f32 (its result cast back).
  DType T = DType::F32;

  bool isF32(const ir::Value *v) const { return v && v->Type.Type == T; }

  /// Whether `v` is read by one node only and is not a graph output.
  bool single(const ir::Value *v) const {
    auto it = Uses.find(v);
    return it != Uses.end() && it->second == 1 && !G.isGraphOutput(v) && v->Producer;
  }

  /// `v` before the Identity and inference-mode Dropout nodes that produce
  /// it (each read by the chain only), which exporters leave in.
  ir::Value *beforeIdentities(ir::Value *v, const ir::Node &user) const {
    while (v && v->Producer && single(v) && v->Producer->Guard == user.Guard) {
      const ir::Node &n = *v->Producer;
      bool identity = n.Domain.empty() && n.OpType == "Identity";
      bool dropout = n.Domain.empty() && n.OpType == "Dropout" && n.Outputs.size() >= 1 &&
                     (n.Outputs.size() < 2 || !n.Outputs[1] || !Uses.count(n.Outputs[1])) &&
                     (!n.hasInput(2) || (n.Inputs[2]->Const && n.Inputs[2]->Const->intAt(0) == 0));
      if (!(identity || dropout) || !n.hasInput(0) || n.Inputs[0]->Type != v->Type)
        break;
      v = n.Inputs[0];
    }
    return v;
  }

  /// A Transpose producing `v` that the node may read through instead (its
  /// only reader, same guard).
  const ir::Node *transposeOf(const ir::Value *v, const ir::Node &user) const {
    const ir::Node *t = v->Producer;
    if (!t || !t->Domain.empty() || t->OpType != "Transpose" || !single(v) ||
        t->Guard != user.Guard || !t->hasInput(0) || Absorbed.count(t))
      return nullptr;
    return t;
  }
  static std::vector<int64_t> permOf(const ir::Node &t) {
    std::vector<int64_t> p = t.attrInts("perm");
    if (p.empty()) { // default: reversed axes
      p = identity(t.inShape(0).size());
      std::reverse(p.begin(), p.end());
    }
    return p;
  }

  /// How the node reads an operand (see ops/FusedAttention.cpp): Src
  /// through a tail (the last axis from Offset split into Tail's axes) and
  /// a permutation.
  struct Operand {
    ir::Value *Src;
    std::vector<int64_t> Perm, Tail;
    int64_t Offset = 0;
    int64_t Group = 1; ///< query heads per head of Src (grouped-query attention)
  };

  static bool isOp(const ir::Node *n, const char *op) {
    return n && n->Domain.empty() && n->OpType == op && n->hasInput(0);
  }

  /// Grouped-query heads as exporters broadcast them (Hugging Face's
  /// repeat_kv): Reshape(Expand(Unsqueeze(x, a), [..., kv, G, ...]),
  /// [..., kv * G, ...]), each read by the chain only. Returns x, the
  /// heads axis a - 1 of `v` and G.
  struct Broadcast {
    ir::Value *Src;
    size_t Axis;
    int64_t Group;
  };
  std::optional<Broadcast> groupBroadcast(ir::Value *v, const ir::Node &user) const {
    const ir::Node *r = v->Producer;
    if (!isOp(r, "Reshape") || !single(v) || r->Guard != user.Guard)
      return std::nullopt;
    ir::Value *e = r->Inputs[0];
    const ir::Node *ex = e->Producer;
    if (!isOp(ex, "Expand") || !single(e) || ex->Guard != user.Guard)
      return std::nullopt;
    ir::Value *u = ex->Inputs[0];
    const ir::Node *un = u->Producer;
    if (!isOp(un, "Unsqueeze") || !single(u) || un->Guard != user.Guard)
      return std::nullopt;
    ir::Value *x = un->Inputs[0];
    const Shape &xd = x->Type.Dims, &ud = u->Type.Dims, &ed = e->Type.Dims, &rd = v->Type.Dims;
    if (!isF32(x) || ud.size() != xd.size() + 1 || ed.size() != ud.size() ||
        rd.size() != xd.size())
      return std::nullopt;
    for (size_t a = 1; a < ud.size(); ++a) {
      Shape inserted = xd;
      inserted.insert(inserted.begin() + (long)a, 1);
      if (ud != inserted || ed[a] < 1)
        continue;
      Shape expanded = ud, merged = xd;
      expanded[a] = ed[a];
      merged[a - 1] *= ed[a];
      if (ed == expanded && rd == merged)
        return Broadcast{x, a - 1, ed[a]};
    }
    return std::nullopt;
  }

  /// `x` (read as Transpose(x, perm)) through the Transpose before it, and
  /// then through a Reshape that splits the last axis of a part of a Split
  /// along it (the heads of a fused QKV projection), each read by this
  /// chain only.
  Operand through(ir::Value *x, std::vector<int64_t> perm, const ir::Node &user) const {
    Operand o{x, perm, {}, 0};
    if (const ir::Node *t = transposeOf(x, user)) {
      std::vector<int64_t> inner = permOf(*t), composed;
      for (int64_t a : perm)
        composed.push_back(inner[(size_t)a]);
      o = {t->Inputs[0], composed, {}, 0};
    }
    // Keys and values broadcast to the query heads: read once per group of
    // query heads (the heads axis must be the operand's, before its rows).
    if (std::optional<Broadcast> b = groupBroadcast(o.Src, user)) {
      const size_t rank = o.Perm.size();
      if (rank >= 3 && o.Perm[rank - 3] == (int64_t)b->Axis) {
        o.Src = b->Src;
        o.Group = b->Group;
        return o;
      }
    }
    const ir::Node *r = o.Src->Producer;
    if (!r || !r->Domain.empty() || r->OpType != "Reshape" || !single(o.Src) ||
        r->Guard != user.Guard || !r->hasInput(0))
      return o;
    ir::Value *part = r->Inputs[0];
    const Shape &in = part->Type.Dims, &out = o.Src->Type.Dims;
    const size_t lead = in.size() - 1;
    if (in.empty() || out.size() <= lead || !std::equal(in.begin(), in.end() - 1, out.begin()))
      return o;
    int64_t width = 1;
    for (size_t a = lead; a < out.size(); ++a)
      width *= out[a];
    std::optional<std::pair<ir::Value *, int64_t>> whole = splitPart(part, user);
    if (width != in.back() || !whole)
      return o;
    return {whole->first, o.Perm, std::vector<int64_t>(out.begin() + (long)lead, out.end()),
            whole->second};
  }

  /// The input of the Split whose part along the last axis `part` is (read
  /// by `user` only, same guard), and the part's offset on that axis.
  std::optional<std::pair<ir::Value *, int64_t>> splitPart(ir::Value *part,
                                                           const ir::Node &user) const {
    const ir::Node *sp = part->Producer;
    if (!sp || !sp->Domain.empty() || sp->OpType != "Split" || !single(part) ||
        sp->Guard != user.Guard || !sp->hasInput(0) || !isF32(sp->Inputs[0]))
      return std::nullopt;
    ir::Value *whole = sp->Inputs[0];
    const int64_t rank = (int64_t)whole->Type.Dims.size();
    int64_t axis = sp->attrInt("axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis != rank - 1 || part->Type.Dims.size() != (size_t)rank)
      return std::nullopt;
    for (const AxisExtent &a : whole->Bounded)
      if (a.Axis == axis)
        return std::nullopt;
    int64_t offset = 0;
    for (const ir::Value *y : sp->Outputs) {
      if (y == part)
        break;
      offset += y ? y->Type.Dims[(size_t)axis] : 0;
    }
    return std::pair{whole, offset};
  }

  /// The offset c when a Where step's condition `cond` and other operand
  /// `fill` are constants that keep exactly the scores of keys j <= i + c
  /// of each query row i (`keepWhereTrue`: the scores are kept where cond
  /// holds) and put -inf elsewhere, the same for every leading index: a
  /// causal mask, which the kernel computes from the indices (and whose
  /// hidden key blocks it skips).
  static std::optional<int64_t> causalMask(const ir::Value *cond, const ir::Value *fill,
                                           bool keepWhereTrue, const Shape &scores) {
    if (!cond->Const || !fill->Const || fill->Const->numel() != 1 ||
        fill->Const->doubleAt(0) != -std::numeric_limits<double>::infinity())
      return std::nullopt;
    const Shape &s = cond->Type.Dims;
    if (s.size() < 2 || s[s.size() - 2] != scores[scores.size() - 2] || s.back() != scores.back())
      return std::nullopt;
    const int64_t rows = s[s.size() - 2], cols = s.back(), plane = rows * cols;
    const int64_t planes = cond->Const->numel() / std::max<int64_t>(plane, 1);
    if (plane == 0)
      return std::nullopt;
    auto kept = [&](int64_t p, int64_t i, int64_t j) {
      return (cond->Const->intAt(p * plane + i * cols + j) != 0) == keepWhereTrue;
    };
    int64_t c = -1;
    while (c + 1 < cols && kept(0, 0, c + 1))
      ++c;
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          if (kept(p, i, j) != (j <= i + c))
            return std::nullopt;
    return c;
  }

  /// A constant scalar value of the graph.
  ir::Value *scalar(const std::string &base, DType t, double x) {
    ir::Value *v = G.addValue(G.uniqueValueName(base), {t, {}});
    v->Const = std::make_shared<Tensor>(Tensor::fromDoubles(t, {}, {x}));
    return v;
  }

  /// A new node of `n`'s guard computing `out` (a new value of type `t`
  /// when null) from `ins`, appended to `nodes`.
  ir::Value *node(const ir::Node &n, const std::string &op, std::vector<ir::Value *> ins,
                  std::map<std::string, ir::Attribute> attrs, ir::TensorType t,
                  ir::Value *out, std::vector<std::unique_ptr<ir::Node>> &nodes) {
    if (!out)
      out = G.addValue(G.uniqueValueName(n.Name + "/" + op), t);
    auto m = std::make_unique<ir::Node>();
    m->Name = G.uniqueNodeName(n.Name + "/" + op);
    m->OpType = op;
    m->Opset = G.Opsets.count("") ? G.Opsets.at("") : 14;
    m->Attrs = std::move(attrs);
    m->Inputs = std::move(ins);
    m->Outputs = {out};
    m->Guard = n.Guard;
    out->Producer = m.get();
    nodes.push_back(std::move(m));
    return out;
  }

  /// The present keys (or values) [batch, heads, past + seq, size] of an
  /// Attention: `past` (none: nothing) followed by `x` (3-D [batch, seq,
  /// heads * size], split into heads, or 4-D), written to `out` when the
  /// graph reads it.
  ir::Value *present(const ir::Node &n, ir::Value *x, ir::Value *past, int64_t heads,
                     int64_t size, ir::Value *out, std::vector<std::unique_ptr<ir::Node>> &nodes) {
    if (out && !Uses.count(out) && !G.isGraphOutput(out))
      out = nullptr;
    const Shape &d = x->Type.Dims;
    if (d.size() == 3) {
      ir::Value *shape = G.addValue(G.uniqueValueName(n.Name + "/heads_shape"), {DType::I64, {4}});
      shape->Const = std::make_shared<Tensor>(
          Tensor::fromInts(DType::I64, {4}, {d[0], d[1], heads, size}));
      x = node(n, "Reshape", {x, shape}, {}, {T, {d[0], d[1], heads, size}}, nullptr,
               nodes);
      x = node(n, "Transpose", {x}, {{"perm", ir::intsAttr({0, 2, 1, 3})}},
               {T, {d[0], heads, d[1], size}}, past ? nullptr : out, nodes);
    } else if (!past && out) {
      x = node(n, "Identity", {x}, {}, x->Type, out, nodes);
    }
    if (!past)
      return x;
    const Shape &p = past->Type.Dims;
    return node(n, "Concat", {past, x}, {{"axis", ir::intAttr(2)}},
                {T, {p[0], p[1], p[2] + x->Type.Dims[2], p[3]}}, out, nodes);
  }

  /// The node's float operands of a 16-bit chain as f32: a Cast before
  /// `n` for each (one per value).
  void castInputs(ir::Node &n, std::vector<std::unique_ptr<ir::Node>> &before) {
    if (T == DType::F32)
      return;
    std::map<ir::Value *, ir::Value *> made;
    for (ir::Value *&x : n.Inputs)
      if (x && x->Type.Type == T) {
        ir::Value *&c = made[x];
        if (!c)
          c = node(n, "Cast", {x}, {{"to", ir::intAttr((int64_t)DType::F32)}},
                   {DType::F32, x->Type.Dims}, nullptr, before);
        x = c;
      }
  }

  /// A 16-bit chain's result: the node computes it in f32, a Cast after it
  /// (to `after`) rounds it once.
  void castOutput(ir::Node &n, std::vector<std::unique_ptr<ir::Node>> &after) {
    if (T == DType::F32)
      return;
    ir::Value *y = n.Outputs[0];
    ir::Value *y32 = G.addValue(G.uniqueValueName(y->Name + "/f32"), {DType::F32, y->Type.Dims});
    y32->Producer = &n;
    n.Outputs[0] = y32;
    node(n, "Cast", {y32}, {{"to", ir::intAttr((int64_t)T)}}, y->Type, y, after);
  }

  /// A constant int64 tensor of `shape` holding 0, 1, ... plus `from`.
  ir::Value *counting(const std::string &base, Shape shape, int64_t from) {
    std::vector<int64_t> v((size_t)numElements(shape));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = from + (int64_t)i;
    ir::Value *c = G.addValue(G.uniqueValueName(base), {DType::I64, shape});
    c->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, shape, v));
    return c;
  }

  /// The Attention op's nonpad_kv_seqlen as a boolean mask [B, 1, Lq or
  /// 1, Lkv] of the keys each query sees (nodes before `n`).
  ir::Value *validKeys(const ir::Node &n, ir::Value *nonpad, int64_t batch, int64_t lq,
                       int64_t lkv, bool causal, std::vector<std::unique_ptr<ir::Node>> &nodes) {
    ir::Value *shape = G.addValue(G.uniqueValueName(n.Name + "/nonpad_shape"), {DType::I64, {4}});
    shape->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {4}, {batch, 1, 1, 1}));
    ir::Value *lens = node(n, "Reshape", {nonpad, shape}, {}, {DType::I64, {batch, 1, 1, 1}},
                           nullptr, nodes);
    ir::Value *keys = counting(n.Name + "/keys", {1, 1, 1, lkv}, 0);
    ir::Value *keep = node(n, "Less", {keys, lens}, {}, {DType::Bool, {batch, 1, 1, lkv}},
                           nullptr, nodes);
    if (!causal)
      return keep;
    ir::Value *last = node(n, "Add", {lens, counting(n.Name + "/rows", {1, 1, lq, 1}, -lq)}, {},
                           {DType::I64, {batch, 1, lq, 1}}, nullptr, nodes);
    ir::Value *seen = node(n, "LessOrEqual", {keys, last}, {}, {DType::Bool, {batch, 1, lq, lkv}},
                           nullptr, nodes);
    return node(n, "And", {keep, seen}, {}, {DType::Bool, {batch, 1, lq, lkv}}, nullptr, nodes);
  }

  /// Rewrites an ONNX Attention node as mlcc.Attention where it can (see
  /// the file comment). New nodes (a Reshape of a 3-D Y) go to `added`,
  /// to be placed after `n`.
  bool fuseOnnx(ir::Node &n, std::vector<std::unique_ptr<ir::Node>> &before,
                std::vector<std::unique_ptr<ir::Node>> &added) {
    if (!n.Domain.empty() || n.OpType != "Attention" || n.Inputs.size() < 3 || !n.Inputs[0] ||
        !isF32Arithmetic(n.Inputs[0]->Type.Type))
      return false;
    T = n.Inputs[0]->Type.Type;
    auto read = [&](size_t i) {
      return i < n.Outputs.size() && n.Outputs[i] &&
             (Uses.count(n.Outputs[i]) || G.isGraphOutput(n.Outputs[i]));
    };
    ir::Value *pastK = n.hasInput(4) ? n.Inputs[4] : nullptr;
    ir::Value *pastV = n.hasInput(5) ? n.Inputs[5] : nullptr;
    ir::Value *nonpad = n.hasInput(6) ? n.Inputs[6] : nullptr;
    if (!pastK != !pastV || read(3) || (nonpad && (pastK || nonpad->Type.Type != DType::I64 ||
                                                   nonpad->Type.Dims.size() != 1)))
      return false;
    if (pastK && (!isF32(pastK) || !isF32(pastV) || pastK->Type.Dims.size() != 4 ||
                  pastV->Type.Dims.size() != 4 || !pastK->Bounded.empty() ||
                  !pastV->Bounded.empty()))
      return false;
    const double softcap = n.attrFloat("softcap", 0.0);
    if (softcap < 0 || !n.hasOutput(0) || !isF32(n.Outputs[0]))
      return false;
    for (size_t i = 0; i < 3; ++i)
      if (!isF32(n.Inputs[i]) || (n.inShape(i).size() != 3 && n.inShape(i).size() != 4))
        return false;
    const Shape &q = n.inShape(0), &k = n.inShape(1), &v = n.inShape(2);
    const int64_t qh = q.size() == 3 ? n.attrInt("q_num_heads", 0) : q[1];
    const int64_t kvh = k.size() == 3 ? n.attrInt("kv_num_heads", 0) : k[1];
    const int64_t vh = v.size() == 3 ? n.attrInt("kv_num_heads", 0) : v[1];
    if (qh < 1 || kvh < 1 || vh != kvh || qh % kvh)
      return false;
    for (const ir::Value *x : {n.Inputs[0], n.Inputs[1], n.Inputs[2]})
      if (!x->Bounded.empty())
        return false;
    const int64_t hs = q.size() == 3 ? q[2] / qh : q[3];
    const int64_t past = pastK ? pastK->Type.Dims[2] : 0;
    const int64_t skv = (k.size() == 3 ? k[1] : k[2]) + past;
    const int64_t sq = q.size() == 3 ? q[1] : q[2];
    const int64_t vhs = v.size() == 3 ? v[2] / vh : v[3];
    if (hs < 1 || vhs < 1 || (q.size() == 3 && q[2] % qh) || (v.size() == 3 && v[2] % vh))
      return false;
    ir::Value *mask = n.hasInput(3) ? n.Inputs[3] : nullptr;
    if (mask && (mask->Type.Dims.empty() || mask->Type.Dims.size() > 4 ||
                 mask->Type.Dims.back() > skv || !mask->Bounded.empty() ||
                 (mask->Type.Type != DType::Bool && mask->Type.Type != T)))
      return false;
    if (mask && mask->Type.Dims.back() < skv) {
      // Keys the mask's last axis does not reach are masked: the mask padded
      // with -inf (false) before the kernel.
      const Shape &d = mask->Type.Dims;
      std::vector<int64_t> pads(2 * d.size(), 0);
      pads.back() = skv - d.back();
      ir::Value *p = G.addValue(G.uniqueValueName(n.Name + "/mask_pads"), {DType::I64, {(int64_t)pads.size()}});
      p->Const = std::make_shared<Tensor>(Tensor::fromInts(DType::I64, {(int64_t)pads.size()}, pads));
      ir::Value *fill = scalar(n.Name + "/mask_fill", mask->Type.Type,
                               mask->Type.Type == DType::Bool ? 0.0
                                                              : -std::numeric_limits<double>::infinity());
      Shape padded = d;
      padded.back() = skv;
      mask = node(n, "Pad", {mask, p, fill}, {}, {mask->Type.Type, padded}, nullptr, before);
    }
    // The operands: 3-D as [batch, seq, heads, size] (a tail of the last
    // axis), heads first.
    // A 3-D operand that is a part of a Split along the last axis (a packed
    // QKV projection) is read in place: the Split's input from the part's
    // offset.
    std::vector<int64_t> heads = {0, 2, 1, 3};
    auto operand = [&](ir::Value *&x, int64_t h, int64_t size, const char *name) {
      n.Attrs[std::string(name) + "_perm"] =
          ir::intsAttr(x->Type.Dims.size() == 3 ? heads : identity(4));
      if (x->Type.Dims.size() == 3) {
        std::optional<std::pair<ir::Value *, int64_t>> whole = splitPart(x, n);
        n.Attrs[std::string(name) + "_tail"] = ir::intsAttr({h, size});
        n.Attrs[std::string(name) + "_offset"] = ir::intAttr(whole ? whole->second : 0);
        if (whole)
          x = whole->first;
      }
    };
    const double scale = n.hasAttr("scale") ? n.attrFloat("scale", 1.0)
                                            : 1.0 / std::sqrt((double)hs);
    const bool causal = n.attrInt("is_causal", 0) != 0;
    const int64_t batch = q[0];
    ir::Value *y = n.Outputs[0];
    ir::Value *q0 = n.Inputs[0], *k0 = n.Inputs[1], *v0 = n.Inputs[2];
    if (pastK) {
      // The keys and values are the present ones (past followed by the new
      // heads), computed before the node; causal rows see the past too.
      if (pastK->Type.Dims != Shape{batch, kvh, past, hs} ||
          pastV->Type.Dims != Shape{batch, vh, pastV->Type.Dims[2], vhs} ||
          pastV->Type.Dims[2] != past)
        return false;
      k0 = present(n, k0, pastK, kvh, hs, n.Outputs.size() > 1 ? n.Outputs[1] : nullptr, before);
      v0 = present(n, v0, pastV, vh, vhs, n.Outputs.size() > 2 ? n.Outputs[2] : nullptr, before);
    } else {
      // Without a past, the present keys and values (when read) are the
      // new ones in heads-first order; the kernel reads K and V as they are.
      if (read(1))
        present(n, k0, nullptr, kvh, hs, n.Outputs[1], before);
      if (read(2))
        present(n, v0, nullptr, vh, vhs, n.Outputs[2], before);
    }
    n.Attrs.clear();
    if (past && causal)
      n.Attrs["causal_offset"] = ir::intAttr(past);
    operand(q0, qh, hs, "q");
    operand(k0, kvh, hs, "k");
    operand(v0, vh, vhs, "v");
    if (kvh > 1 && kvh < qh) { // grouped-query attention
      n.Attrs["k_group"] = ir::intAttr(qh / kvh);
      n.Attrs["v_group"] = ir::intAttr(qh / kvh);
    }
    std::vector<int64_t> steps = {ops::attention::Mul};
    if (softcap > 0) {
      steps.push_back(ops::attention::Softcap);
      n.Attrs["softcap"] = ir::floatAttr(softcap);
    }
    std::vector<ir::Value *> inputs = {q0, k0, v0, scalar(n.Name + "/scale", DType::F32, scale)};
    if (mask && mask->Type.Type == DType::Bool) {
      steps.push_back(ops::attention::WhereKeep);
      inputs.push_back(mask);
      inputs.push_back(scalar(n.Name + "/masked", DType::F32,
                              -std::numeric_limits<double>::infinity()));
    } else if (mask) {
      steps.push_back(ops::attention::Add);
      inputs.push_back(mask);
    }
    if (nonpad) {
      // Keys j < nonpad[b] are attendable; with is_causal, query i sees
      // j <= i + nonpad[b] - Lq: a boolean mask [B, 1, Lq or 1, Lkv]
      // computed from nonpad before the kernel.
      steps.push_back(ops::attention::WhereKeep);
      inputs.push_back(validKeys(n, nonpad, batch, sq, skv, causal, before));
      inputs.push_back(scalar(n.Name + "/padded", DType::F32,
                              -std::numeric_limits<double>::infinity()));
    } else if (causal) {
      steps.push_back(ops::attention::Causal);
    }
    n.Attrs["steps"] = ir::intsAttr(steps);
    n.Attrs["zero_empty_rows"] = ir::intAttr(1);
    n.Domain = "mlcc";
    n.Opset = 1;
    n.Inputs = inputs;
    n.Outputs.resize(1);
    n.Plan = {};
    castInputs(n, before);
    if (q.size() == 4) {
      n.Attrs["out_perm"] = ir::intsAttr(identity(4));
      castOutput(n, added);
      return true;
    }
    // A 3-D Y: [batch, seq, heads, size] from the node, merged by a Reshape.
    n.Attrs["out_perm"] = ir::intsAttr(heads);
    ir::Value *merged = G.addValue(G.uniqueValueName(y->Name + "/heads"),
                                   {DType::F32, {batch, sq, qh, vhs}});
    merged->Producer = &n;
    n.Outputs[0] = merged;
    auto reshape = std::make_unique<ir::Node>();
    reshape->Name = G.uniqueNodeName(n.Name + "/merge_heads");
    reshape->OpType = "Reshape";
    reshape->Opset = G.Opsets.count("") ? G.Opsets.at("") : 14;
    ir::Value *shape = G.addValue(G.uniqueValueName(y->Name + "/shape"), {DType::I64, {3}});
    shape->Const = std::make_shared<Tensor>(
        Tensor::fromInts(DType::I64, {3}, {batch, sq, qh * vhs}));
    reshape->Inputs = {merged, shape};
    reshape->Outputs = {y};
    reshape->Guard = n.Guard;
    y->Producer = reshape.get();
    ir::Node &merge = *reshape;
    added.push_back(std::move(reshape));
    castOutput(merge, added); // the merged heads are f32
    return true;
  }

  /// Fuses the chain ending in MatMul `pv`, if it is one.
  bool fuse(ir::Node &pv, std::vector<std::unique_ptr<ir::Node>> &before,
            std::vector<std::unique_ptr<ir::Node>> &added) {
    if (!pv.Domain.empty() || pv.OpType != "MatMul" || pv.Inputs.size() != 2 || !pv.Outputs[0] ||
        !isF32Arithmetic(pv.Outputs[0]->Type.Type))
      return false;
    T = pv.Outputs[0]->Type.Type;
    if (!isF32(pv.Inputs[0]) || !isF32(pv.Inputs[1]))
      return false;
    ir::Value *p = beforeIdentities(pv.Inputs[0], pv), *v = pv.Inputs[1];
    ir::Node *sm = p->Producer;
    if (!sm || !single(p) || !sm->Domain.empty() || sm->OpType != "Softmax" ||
        sm->Guard != pv.Guard)
      return false;
    const Shape scoresShape = p->Type.Dims;
    const int64_t rank = (int64_t)scoresShape.size();
    if (rank < 2 || v->Type.Dims.size() < 2)
      return false;
    int64_t axis = sm->attrInt("axis", sm->Opset < 13 ? 1 : -1);
    if (axis < 0)
      axis += rank;
    if (axis != rank - 1)
      return false;
    // Back from the Softmax through the steps to the first product.
    std::vector<const ir::Node *> chain = {sm};
    std::vector<std::pair<int64_t, const ir::Node *>> steps;
    ir::Value *cur = beforeIdentities(sm->Inputs[0], pv);
    while (true) {
      if (!isF32(cur) || !single(cur) || cur->Type.Dims != scoresShape)
        return false;
      ir::Node *n = cur->Producer;
      if (n->Guard != pv.Guard)
        return false;
      if (n->Domain.empty() && n->OpType == "MatMul")
        break;
      ir::Value *in = nullptr;
      for (ir::Value *x : n->Inputs)
        if (x && x->Type.Dims == scoresShape && isF32(x) && x->Producer && single(x) &&
            stepCode(*n, x))
          in = x;
      std::optional<int64_t> code = in ? stepCode(*n, in) : std::nullopt;
      if (!code)
        return false;
      for (ir::Value *x : stepOperands(*n, *code)) {
        if (!x || x == in)
          return false;
        // The operand broadcasts to the scores (the step keeps their shape).
        if (x->Type.Dims.size() > scoresShape.size())
          return false;
        if (*code < 8 || x != n->Inputs[0]) {
          if (!isF32(x))
            return false;
        } else if (x->Type.Type != DType::Bool)
          return false;
      }
      steps.push_back({*code, n});
      chain.push_back(n);
      cur = beforeIdentities(in, pv);
    }
    ir::Node *qk = cur->Producer;
    ir::Value *q = qk->Inputs[0], *kt = qk->Inputs.size() == 2 ? qk->Inputs[1] : nullptr;
    if (!isF32(q) || !isF32(kt) || q->Type.Dims.size() < 2 || kt->Type.Dims.size() < 2)
      return false;
    chain.push_back(qk);
    std::reverse(steps.begin(), steps.end());

    std::vector<int64_t> kSwap = identity(kt->Type.Dims.size());
    std::swap(kSwap[kSwap.size() - 1], kSwap[kSwap.size() - 2]);
    Operand qo = through(q, identity(q->Type.Dims.size()), *qk);
    Operand ko = through(kt, kSwap, *qk);
    Operand vo = through(v, identity(v->Type.Dims.size()), pv);
    ir::Value *qSrc = qo.Src, *kSrc = ko.Src, *vSrc = vo.Src;
    // The output, through a Transpose after it.
    ir::Value *out = pv.Outputs[0];
    std::vector<int64_t> outPerm = identity(out->Type.Dims.size());
    ir::Node *after = nullptr;
    if (single(out))
      for (auto &n : G.Nodes)
        if (n->Domain.empty() && n->OpType == "Transpose" && n->hasInput(0) &&
            n->Inputs[0] == out && n->Guard == pv.Guard && isF32(n->Outputs[0])) {
          after = n.get();
          outPerm = permOf(*n);
        }

    // The node: pv rewritten in place (it comes after every operand).
    std::vector<int64_t> codes;
    std::vector<ir::Value *> inputs = {qSrc, kSrc, vSrc};
    std::optional<int64_t> causal;
    for (auto &[code, n] : steps) {
      std::vector<ir::Value *> xs = stepOperands(*n, code);
      std::optional<int64_t> offset;
      if (!causal && code >= ops::attention::WhereKeep)
        offset = causalMask(xs[0], xs[1], code == ops::attention::WhereKeep, scoresShape);
      if (offset) { // a constant mask that is a causal one: an index test
        causal = offset;
        codes.push_back(ops::attention::Causal);
        continue;
      }
      codes.push_back(code);
      for (ir::Value *x : xs)
        inputs.push_back(x);
    }
    for (const ir::Node *n : chain)
      Absorbed.insert(n);
    // The Transposes, Reshapes and Splits read through are left unused
    // (dead-code elimination removes them).
    for (auto [x, src] : {std::pair{q, qSrc}, std::pair{kt, kSrc}, std::pair{v, vSrc}})
      if (src != x)
        Absorbed.insert(x->Producer);
    pv.OpType = "Attention";
    pv.Domain = "mlcc";
    pv.Opset = 1;
    pv.Attrs.clear();
    for (auto [name, o] : {std::pair{"q", &qo}, std::pair{"k", &ko}, std::pair{"v", &vo}}) {
      pv.Attrs[std::string(name) + "_perm"] = ir::intsAttr(o->Perm);
      if (!o->Tail.empty()) {
        pv.Attrs[std::string(name) + "_tail"] = ir::intsAttr(o->Tail);
        pv.Attrs[std::string(name) + "_offset"] = ir::intAttr(o->Offset);
      }
      if (o->Group > 1)
        pv.Attrs[std::string(name) + "_group"] = ir::intAttr(o->Group);
    }
    pv.Attrs["out_perm"] = ir::intsAttr(outPerm);
    pv.Attrs["steps"] = ir::intsAttr(codes);
    if (causal)
      pv.Attrs["causal_offset"] = ir::intAttr(*causal);
    pv.Inputs = inputs;
    pv.Plan = {};
    if (after) {
      // The node produces the Transpose's output; the Transpose goes, and
      // its old input is left unused.
      ir::Value *y = after->Outputs[0];
      out->Producer = nullptr;
      y->Producer = &pv;
      pv.Outputs[0] = y;
      Absorbed.insert(after);
      Dead.insert(after);
    }
    castInputs(pv, before);
    castOutput(pv, added);
    return true;
  }
  std::set<const ir::Node *> Dead;
};

} // namespace

bool fuseAttention(ir::Graph &g) {
  Matcher m{g, g.useCounts(), {}, {}};
  bool changed = false;
  // New nodes (a 3-D Attention's Reshape) go right after the node they
  // follow, once the matching (which reads g.Nodes) is over.
  std::map<const ir::Node *, std::vector<std::unique_ptr<ir::Node>>> before, after;
  for (auto &n : g.Nodes) {
    std::vector<std::unique_ptr<ir::Node>> ahead, added;
    if (!m.Absorbed.count(n.get()) && (m.fuse(*n, ahead, added) || m.fuseOnnx(*n, ahead, added)))
      changed = true;
    if (!ahead.empty())
      before[n.get()] = std::move(ahead);
    if (!added.empty())
      after[n.get()] = std::move(added);
  }
  if (!before.empty() || !after.empty()) {
    std::vector<std::unique_ptr<ir::Node>> nodes;
    for (auto &n : g.Nodes) {
      auto b = before.find(n.get()), a = after.find(n.get());
      if (b != before.end())
        for (auto &x : b->second)
          nodes.push_back(std::move(x));
      nodes.push_back(std::move(n));
      if (a != after.end())
        for (auto &x : a->second)
          nodes.push_back(std::move(x));
    }
    g.Nodes = std::move(nodes);
  }
  if (!m.Dead.empty())
    g.removeNodesIf([&](const ir::Node &n) { return m.Dead.count(&n) > 0; });
  return changed;
}

} // namespace mlcc::passes
