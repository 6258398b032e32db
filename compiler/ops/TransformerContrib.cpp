//===- TransformerContrib.cpp - ONNX Runtime's transformer contrib ops ----===//
//
// The contrib ops (domain com.microsoft, version 1) that ONNX Runtime's
// transformer optimizer, Olive and Optimum write for transformer blocks,
// expanded before inference (OpSchema::Expand) into the standard ops whose
// kernels and fusions they then get: an attention becomes one ONNX
// Attention (opset 23), which fuse-attention turns into the fused kernel
// (past keys and values included); a normalization becomes one
// LayerNormalization or RMSNormalization kernel with the residual Add fused
// before it; a GELU its elementwise op, fused into the matrix product before
// it. Forms not listed are refused with the node, op and form named.
//
//  - Gelu(X), BiasGelu(X, bias): Gelu (erf) of X (+ bias).
//  - FastGelu(X, bias?): Gelu with approximate="tanh" of X (+ bias).
//  - QuickGelu(X; alpha = 1.702): X * Sigmoid(alpha * X).
//  - SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon
//    1e-12): s = input + skip (+ bias); output = LayerNormalization(s) over
//    the last axis; outputs mean, inv_std_var (LayerNormalization's, with
//    stash_type 1) and input_skip_bias_sum = s.
//  - SkipSimplifiedLayerNormalization(input, skip, gamma, bias?; epsilon
//    1e-12): the same with RMSNormalization; inv_std_var refused.
//  - SimplifiedLayerNormalization (ONNX Runtime registers it in the ONNX
//    domain, version 1; axis -1, epsilon 1e-5): RMSNormalization.
//  - RotaryEmbedding(input, position_ids, cos_cache, sin_cache;
//    interleaved, num_heads, rotary_embedding_dim): the ONNX op (opset 23)
//    with its inputs in ONNX's order; position_ids of shape [1] is the
//    position of the first token (positions p, p+1, ...); num_heads of a
//    3-D input without it is hidden / (2 x the caches' width).
//  - MultiHeadAttention(query, key, value, bias?, key_padding_mask?,
//    attention_bias?, past_key?, past_value?; num_heads, scale,
//    unidirectional, mask_filter_value -10000): query [B, S, D], key and
//    value [B, L, D'] (or [B, N, L, H] as they are); bias [D + Dk + Dv]
//    added to each; key_padding_mask [B, T] (0: masked) or [B] (the number
//    of valid keys) adds mask_filter_value to masked keys, as ONNX Runtime
//    does; attention_bias is added; unidirectional is the causal mask
//    (query i sees keys up to past + i); present_key/present_value are the
//    Attention's. Refused: packed QKV or KV, past_sequence_length,
//    cache_indirection, the qk output.
//  - Attention(input, weights, bias?, mask_index?; num_heads,
//    qkv_hidden_sizes, unidirectional, scale, mask_filter_value): the
//    projection MatMul(input, weights) + bias split into Q, K and V, then
//    as MultiHeadAttention (mask_index [B, T] or [B] as key_padding_mask).
//    Refused: past/present, attention_bias, past_sequence_length, rotary.
//  - GroupQueryAttention(query, key?, value?, past_key?, past_value?,
//    seqlens_k, total_sequence_length, cos_cache?, sin_cache?,
//    position_ids?, attention_bias?; num_heads, kv_num_heads, scale,
//    softcap, do_rotary, rotary_interleaved): always causal; packed QKV
//    split; total_sequence_length must be a constant (it is, with fixed
//    shapes). The first prompt (S = total) is a causal Attention over the
//    new tokens. A later call (total = P + S) uses ps[b] = seqlens_k[b] + 1
//    - S rows of the past buffer: present row j is past row j (j < ps), new
//    row j - ps (j < ps + S), else past row j - S (ONNX Runtime leaves
//    those unset), and query s sees rows j <= ps + s -- so padded batches
//    give ONNX Runtime's results too. Rotary positions are position_ids,
//    or s (first prompt) and ps + s. Refused: local_window_size,
//    smooth_softmax, head_sink, qk output, a first prompt with a past
//    buffer, a present buffer of fixed capacity (total != P + S).
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/Expansion.h"
#include "compiler/ops/Lowering.h"

#include <cmath>

namespace mlcc::ops {

namespace {

const char *const Ms = "com.microsoft";

ir::Attribute stringAttr(const std::string &s) {
  ir::Attribute a;
  a.Kind = ir::AttrKind::String;
  a.S = s;
  return a;
}

/// The node's inputs: between `least` and `most`, `required` present,
/// float `floats` (the first one's type); at least one output.
void checkInputs(const ir::Node &n, size_t least, size_t most, std::initializer_list<size_t> required,
                 std::initializer_list<size_t> floats, const char *names) {
  if (n.Inputs.size() < least || n.Inputs.size() > most)
    n.error() << "has " << n.Inputs.size() << " inputs; " << n.OpType << " takes " << names;
  for (size_t i : required)
    if (!n.hasInput(i))
      n.error() << "input " << i << " is required; " << n.OpType << " takes " << names;
  if (n.Outputs.empty() || !n.Outputs[0])
    n.error() << "has no output";
  DType t = n.inDType(*floats.begin());
  for (size_t i : floats)
    if (n.hasInput(i) && (!isFloat(n.inDType(i)) || n.inDType(i) != t))
      n.error() << "input " << i << " has type " << dtypeOnnxName(n.inDType(i))
                << "; expected a float type, the same as input " << *floats.begin() << "'s";
}

/// Refuses output i when the model names it (exporters leave the unused
/// ones empty).
void refuseOutput(const ir::Node &n, size_t i, const char *what) {
  if (n.hasOutput(i))
    n.error(ErrorKind::Unsupported) << "output " << i << " (" << what << ") is not supported";
}

void refuseInput(const ir::Node &n, size_t i, const char *what) {
  if (n.hasInput(i))
    n.error(ErrorKind::Unsupported) << "input " << i << " (" << what << ") is not supported";
}

ir::Value *i64s(Expansion &e, std::vector<int64_t> v, const std::string &hint) {
  return e.constant(Tensor::fromInts(DType::I64, {(int64_t)v.size()}, v), hint);
}

ir::Value *scalarOf(Expansion &e, DType t, double x, const std::string &hint) {
  return e.constant(Tensor::fromDoubles(t, {}, {x}), hint);
}

/// x + bias, or x when there is no bias.
ir::Value *plusBias(Expansion &e, ir::Value *x, ir::Value *bias) {
  return bias ? e.add("Add", 14, {x, bias}) : x;
}

// --- GELU forms ------------------------------------------------------------

Nodes expandGelu(ir::Node &n, ir::Graph &g, bool tanhForm, size_t inputs) {
  checkInputs(n, 1, inputs, {0}, {0, 1}, inputs == 1 ? "1 input (X)" : "X and bias");
  Expansion e{n, g, {}};
  std::map<std::string, ir::Attribute> attrs;
  if (tanhForm)
    attrs["approximate"] = stringAttr("tanh");
  e.add("Gelu", 20, {plusBias(e, n.Inputs[0], e.input(1))}, attrs, n.Outputs[0]);
  return std::move(e.Out);
}

Nodes expandQuickGelu(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 1, 1, {0}, {0}, "1 input (X)");
  Expansion e{n, g, {}};
  ir::Value *x = n.Inputs[0];
  ir::Value *ax = e.add("Mul", 14, {x, scalarOf(e, n.inDType(0), n.attrFloat("alpha", 1.702), "alpha")});
  e.add("Mul", 14, {x, e.add("Sigmoid", 13, {ax})}, {}, n.Outputs[0]);
  return std::move(e.Out);
}

// --- normalizations ----------------------------------------------------------

/// input + skip (+ bias, input `biasInput`), written to output 3 when the
/// graph has it.
ir::Value *residual(Expansion &e, const ir::Node &n, size_t biasInput) {
  ir::Value *bias = e.input(biasInput);
  const Shape &x = n.inShape(0), &s = n.inShape(1);
  if (x.empty() || s.empty() || s.back() != x.back() || s.size() > x.size())
    n.error() << "skip has shape " << shapeToString(s) << "; expected the input's "
              << shapeToString(x) << " or a shape broadcasting to it";
  if (bias && n.inShape(biasInput) != Shape{x.back()})
    n.error() << "bias must have shape [" << x.back() << "]";
  ir::Value *sum = e.add("Add", 14, {n.Inputs[0], n.Inputs[1]}, {}, bias ? nullptr : e.output(3));
  if (bias)
    sum = e.add("Add", 14, {sum, bias}, {}, e.output(3));
  return sum;
}

void checkScale(const ir::Node &n, size_t i, const char *what) {
  const Shape &x = n.inShape(0);
  if (n.hasInput(i) && n.inShape(i) != Shape{x.back()})
    n.error() << what << " (input " << i << ") has shape " << shapeToString(n.inShape(i))
              << "; expected [" << x.back() << "] (the last axis)";
}

Nodes expandSkipLayerNorm(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 3, 5, {0, 1, 2}, {0, 1, 2, 3, 4}, "input, skip, gamma, beta?, bias?");
  checkScale(n, 2, "gamma");
  checkScale(n, 3, "beta");
  Expansion e{n, g, {}};
  ir::Value *sum = residual(e, n, 4);
  std::map<std::string, ir::Attribute> attrs = {
      {"axis", ir::intAttr(-1)}, {"epsilon", ir::floatAttr(n.attrFloat("epsilon", 1e-12))}};
  e.addMulti("LayerNormalization", 17, {sum, n.Inputs[2], e.input(3)}, attrs,
             {n.Outputs[0], e.output(1), e.output(2)});
  return std::move(e.Out);
}

Nodes expandSkipSimplifiedLayerNorm(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 3, 4, {0, 1, 2}, {0, 1, 2, 3}, "input, skip, gamma, bias?");
  checkScale(n, 2, "gamma");
  refuseOutput(n, 1, "mean");
  refuseOutput(n, 2, "inv_std_var");
  Expansion e{n, g, {}};
  ir::Value *sum = residual(e, n, 3);
  e.add("RMSNormalization", 23, {sum, n.Inputs[2]},
        {{"axis", ir::intAttr(-1)}, {"epsilon", ir::floatAttr(n.attrFloat("epsilon", 1e-12))}},
        n.Outputs[0]);
  return std::move(e.Out);
}

Nodes expandSimplifiedLayerNorm(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 2, 2, {0, 1}, {0, 1}, "X and scale");
  refuseOutput(n, 1, "inv_std_var");
  Expansion e{n, g, {}};
  e.add("RMSNormalization", 23, {n.Inputs[0], n.Inputs[1]},
        {{"axis", ir::intAttr(n.attrInt("axis", -1))},
         {"epsilon", ir::floatAttr(n.attrFloat("epsilon", 1e-5))}},
        n.Outputs[0]);
  return std::move(e.Out);
}

// --- rotary embedding ----------------------------------------------------------

Nodes expandRotary(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 4, 4, {0, 1, 2, 3}, {0, 2, 3}, "input, position_ids, cos_cache, sin_cache");
  if (n.attrInt("is_packed_batching", 0) != 0)
    n.error(ErrorKind::Unsupported) << "is_packed_batching = 1 is not supported";
  if (n.attrFloat("scale", 1.0) != 1.0)
    n.error(ErrorKind::Unsupported) << "scale " << n.attrFloat("scale", 1.0)
                                    << " is not supported (only 1)";
  const Shape &x = n.inShape(0), &pos = n.inShape(1), &cache = n.inShape(2);
  if ((x.size() != 3 && x.size() != 4) || cache.size() != 2)
    n.error() << "input must be 3-D or 4-D and the caches 2-D; got " << shapeToString(x) << " and "
              << shapeToString(cache);
  if (n.inDType(1) != DType::I64)
    n.error() << "position_ids must be int64";
  const int64_t batch = x[0], seq = x.size() == 3 ? x[1] : x[2];
  Expansion e{n, g, {}};
  ir::Value *positions = n.Inputs[1];
  if (pos == Shape{1}) { // the first token's position: p, p + 1, ...
    std::vector<int64_t> steps((size_t)seq);
    for (int64_t i = 0; i < seq; ++i)
      steps[(size_t)i] = i;
    positions = e.add("Add", 14, {positions, e.constant(Tensor::fromInts(DType::I64, {1, seq}, steps), "steps")});
    positions = e.add("Expand", 13, {positions, i64s(e, {batch, seq}, "positions_shape")});
  } else if (pos != Shape{batch, seq}) {
    n.error() << "position_ids has shape " << shapeToString(pos) << "; expected [1] or ["
              << batch << ", " << seq << "]";
  }
  std::map<std::string, ir::Attribute> attrs = {
      {"interleaved", ir::intAttr(n.attrInt("interleaved", 0))}};
  int64_t rotary = n.attrInt("rotary_embedding_dim", 0), heads = n.attrInt("num_heads", 0);
  if (rotary > 0)
    attrs["rotary_embedding_dim"] = ir::intAttr(rotary);
  if (x.size() == 3 && heads == 0) {
    if (rotary > 0)
      n.error() << "a 3-D input with rotary_embedding_dim needs num_heads";
    int64_t head = 2 * cache[1];
    if (head == 0 || x[2] % head)
      n.error() << "hidden size " << x[2] << " is not a multiple of the head size " << head
                << " (twice the caches' width)";
    heads = x[2] / head;
  }
  if (heads > 0)
    attrs["num_heads"] = ir::intAttr(heads);
  e.add("RotaryEmbedding", 23, {n.Inputs[0], n.Inputs[2], n.Inputs[3], positions}, attrs,
        n.Outputs[0]);
  return std::move(e.Out);
}

// --- attention -------------------------------------------------------------------

/// The additive mask [B, 1, 1, T] of a key padding mask: [B, T] (0 or less:
/// masked) or [B] (the number of valid keys), `filter` where masked.
ir::Value *paddingMask(Expansion &e, const ir::Node &n, ir::Value *mask, int64_t batch,
                       int64_t total, DType t, const char *name) {
  const Shape &m = mask->Type.Dims;
  if (mask->Type.Type != DType::I32)
    n.error() << name << " must be int32, got " << dtypeOnnxName(mask->Type.Type);
  ir::Value *keep = nullptr;
  if (m == Shape{batch, total}) {
    keep = e.add("Greater", 13, {mask, e.constant(Tensor::fromInts(DType::I32, {}, {0}), "zero")});
  } else if (m == Shape{batch}) {
    std::vector<int64_t> keys((size_t)total);
    for (int64_t j = 0; j < total; ++j)
      keys[(size_t)j] = j;
    ir::Value *lengths = e.add("Reshape", 14, {mask, i64s(e, {batch, 1}, "lengths_shape")});
    keep = e.add("Less", 13, {e.constant(Tensor::fromInts(DType::I32, {1, total}, keys), "keys"), lengths});
  } else {
    n.error(ErrorKind::Unsupported) << name << " of shape " << shapeToString(m)
                                    << " is not supported (only [" << batch << ", " << total
                                    << "] or [" << batch << "])";
  }
  ir::Value *add = e.add("Where", 16, {keep, scalarOf(e, t, 0, "kept"),
                                       scalarOf(e, t, n.attrFloat("mask_filter_value", -10000.0), "filter")});
  return e.add("Reshape", 14, {add, i64s(e, {batch, 1, 1, total}, "mask_shape")});
}

/// The ONNX Attention computing the node's output 0 (and present key and
/// value when given) from 3-D Q and 3-D or 4-D K, V.
void onnxAttention(Expansion &e, const ir::Node &n, ir::Value *q, ir::Value *k, ir::Value *v,
                   ir::Value *mask, ir::Value *pastK, ir::Value *pastV, int64_t heads,
                   std::vector<ir::Value *> outs) {
  std::map<std::string, ir::Attribute> attrs = {{"q_num_heads", ir::intAttr(heads)},
                                                {"kv_num_heads", ir::intAttr(heads)}};
  if (n.attrInt("unidirectional", 0) != 0)
    attrs["is_causal"] = ir::intAttr(1);
  double scale = n.attrFloat("scale", 0.0);
  if (scale != 0.0)
    attrs["scale"] = ir::floatAttr(scale);
  e.addMulti("Attention", 23, {q, k, v, mask, pastK, pastV}, attrs, outs);
}

Nodes expandMultiHeadAttention(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 1, 10, {0}, {0, 1, 2, 3, 5, 6, 7},
              "query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value, "
              "past_sequence_length, cache_indirection");
  const int64_t heads = n.requireInt("num_heads");
  refuseInput(n, 8, "past_sequence_length");
  refuseInput(n, 9, "cache_indirection");
  refuseOutput(n, 3, "qk");
  if (!n.hasInput(1) || !n.hasInput(2))
    n.error(ErrorKind::Unsupported) << "packed QKV or KV (no separate key and value) is not supported";
  const Shape &q = n.inShape(0), &k = n.inShape(1), &v = n.inShape(2);
  if (q.size() != 3 || (k.size() != 3 && k.size() != 4) || v.size() != k.size())
    n.error(ErrorKind::Unsupported) << "query " << shapeToString(q) << ", key " << shapeToString(k)
                                    << ", value " << shapeToString(v)
                                    << ": expected [B, S, D] and [B, L, D] or [B, N, L, H]";
  if (heads < 1 || q[2] % heads)
    n.error() << "num_heads " << heads << " does not divide the query's hidden size " << q[2];
  Expansion e{n, g, {}};
  ir::Value *qv = n.Inputs[0], *kv = n.Inputs[1], *vv = n.Inputs[2];
  if (ir::Value *bias = e.input(3)) {
    if (k.size() != 3)
      n.error(ErrorKind::Unsupported) << "bias with a 4-D key is not supported";
    const int64_t dq = q[2], dk = k[2], dv = v[2];
    if (n.inShape(3) != Shape{dq + dk + dv})
      n.error() << "bias has shape " << shapeToString(n.inShape(3)) << "; expected ["
                << dq + dk + dv << "]";
    auto part = [&](ir::Value *x, int64_t from, int64_t to) {
      ir::Value *b = e.add("Slice", 13, {bias, i64s(e, {from}, "starts"), i64s(e, {to}, "ends")});
      return e.add("Add", 14, {x, b});
    };
    qv = part(qv, 0, dq);
    kv = part(kv, dq, dq + dk);
    vv = part(vv, dq + dk, dq + dk + dv);
  }
  const int64_t past = n.hasInput(6) ? n.inShape(6).size() == 4 ? n.inShape(6)[2] : 0 : 0;
  const int64_t total = (k.size() == 3 ? k[1] : k[2]) + past;
  ir::Value *mask = nullptr;
  if (n.hasInput(4))
    mask = paddingMask(e, n, n.Inputs[4], q[0], total, n.inDType(0), "key_padding_mask");
  if (ir::Value *bias = e.input(5))
    mask = mask ? e.add("Add", 14, {mask, bias}) : bias;
  onnxAttention(e, n, qv, kv, vv, mask, e.input(6), e.input(7), heads,
                {n.Outputs[0], e.output(1), e.output(2)});
  return std::move(e.Out);
}

Nodes expandAttention(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 2, 8, {0, 1}, {0, 1, 2},
              "input, weights, bias, mask_index, past, attention_bias, past_sequence_length");
  const int64_t heads = n.requireInt("num_heads");
  refuseInput(n, 4, "past");
  refuseInput(n, 5, "attention_bias");
  refuseInput(n, 6, "past_sequence_length");
  refuseOutput(n, 1, "present");
  if (n.attrInt("do_rotary", 0) != 0)
    n.error(ErrorKind::Unsupported) << "do_rotary = 1 is not supported";
  const Shape &x = n.inShape(0), &w = n.inShape(1);
  if (x.size() != 3 || w.size() != 2 || w[0] != x[2])
    n.error() << "input " << shapeToString(x) << " and weights " << shapeToString(w)
              << ": expected [B, S, D] and [D, D']";
  std::vector<int64_t> sizes = n.attrInts("qkv_hidden_sizes", {});
  if (sizes.empty()) {
    if (w[1] % 3)
      n.error() << "weights have " << w[1] << " columns, not three equal parts";
    sizes = {w[1] / 3, w[1] / 3, w[1] / 3};
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != w[1] ||
      sizes[0] % heads || sizes[2] % heads)
    n.error() << "qkv_hidden_sizes must be three sizes (Q and K equal, each a multiple of "
              << heads << " heads) adding up to the weights' " << w[1] << " columns";
  if (n.hasInput(2) && n.inShape(2) != Shape{w[1]})
    n.error() << "bias has shape " << shapeToString(n.inShape(2)) << "; expected [" << w[1] << "]";
  Expansion e{n, g, {}};
  ir::Value *qkv = plusBias(e, e.add("MatMul", 13, {n.Inputs[0], n.Inputs[1]}), e.input(2));
  std::vector<ir::Value *> parts;
  for (int i = 0; i < 3; ++i)
    parts.push_back(g.addValue(g.uniqueValueName(n.Name + "/" + "qkv"[i])));
  e.addMulti("Split", 13, {qkv, i64s(e, sizes, "sizes")}, {{"axis", ir::intAttr(2)}}, parts);
  ir::Value *mask = n.hasInput(3)
                        ? paddingMask(e, n, n.Inputs[3], x[0], x[1], n.inDType(0), "mask_index")
                        : nullptr;
  onnxAttention(e, n, parts[0], parts[1], parts[2], mask, nullptr, nullptr, heads, {n.Outputs[0]});
  return std::move(e.Out);
}

/// A constant int64 [1, ..., n, ..., 1] (rank `rank`, n at `axis`) holding
/// 0, 1, ..., n - 1 plus `from`.
ir::Value *counting(Expansion &e, int64_t n, size_t rank, size_t axis, int64_t from,
                    const std::string &hint) {
  std::vector<int64_t> v((size_t)n);
  for (int64_t i = 0; i < n; ++i)
    v[(size_t)i] = from + i;
  Shape shape(rank, 1);
  shape[axis] = n;
  return e.constant(Tensor::fromInts(DType::I64, shape, v), hint);
}

/// [B, S, heads * size] -> [B, heads, S, size] (x may be a new value, not
/// yet typed).
ir::Value *headsFirst(Expansion &e, ir::Value *x, int64_t batch, int64_t seq, int64_t heads,
                      int64_t size) {
  ir::Value *split = e.add("Reshape", 14, {x, i64s(e, {batch, seq, heads, size}, "heads_shape")});
  return e.add("Transpose", 13, {split}, {{"perm", ir::intsAttr({0, 2, 1, 3})}});
}

Nodes expandGroupQueryAttention(ir::Node &n, ir::Graph &g) {
  checkInputs(n, 7, 12, {0, 5, 6}, {0, 1, 2, 3, 4, 7, 8, 10},
              "query, key, value, past_key, past_value, seqlens_k, total_sequence_length, "
              "cos_cache, sin_cache, position_ids, attention_bias, head_sink");
  const int64_t heads = n.requireInt("num_heads"), kvHeads = n.requireInt("kv_num_heads");
  if (n.attrInt("local_window_size", -1) != -1)
    n.error(ErrorKind::Unsupported) << "local_window_size " << n.attrInt("local_window_size", -1)
                                    << " (a sliding window) is not supported";
  if (n.attrInt("smooth_softmax", 0) != 0 || n.hasInput(11))
    n.error(ErrorKind::Unsupported) << "smooth_softmax and head_sink are not supported";
  if (n.attrInt("qk_output", 0) != 0)
    n.error(ErrorKind::Unsupported) << "qk_output is not supported";
  refuseOutput(n, 3, "output_qk");
  const Shape &q = n.inShape(0);
  if (q.size() != 3 || heads < 1 || kvHeads < 1 || heads % kvHeads)
    n.error() << "query " << shapeToString(q) << " with " << heads << " heads and " << kvHeads
              << " key/value heads: expected [B, S, D] and key/value heads dividing the heads";
  const int64_t batch = q[0], seq = q[1];
  const bool packed = !n.hasInput(1);
  if (packed == n.hasInput(2))
    n.error() << "key and value must both be given, or neither (packed QKV)";
  const int64_t size = q[2] / (packed ? heads + 2 * kvHeads : heads);
  const Shape kvShape = {batch, seq, kvHeads * size};
  if (size < 1 || q[2] != size * (packed ? heads + 2 * kvHeads : heads) ||
      (!packed && (n.inShape(1) != kvShape || n.inShape(2) != kvShape)))
    n.error() << "query, key and value do not hold " << heads << " and " << kvHeads
              << " heads of one size (key and value " << shapeToString(kvShape) << " expected)";
  if (n.hasInput(3) != n.hasInput(4))
    n.error() << "past_key and past_value must both be given, or neither";
  const int64_t past = n.hasInput(3) && n.inShape(3).size() == 4 ? n.inShape(3)[2] : 0;
  for (size_t i : {3, 4})
    if (n.hasInput(i) && n.inShape(i) != Shape{batch, kvHeads, past, size})
      n.error() << "input " << i << " has shape " << shapeToString(n.inShape(i)) << "; expected ["
                << batch << ", " << kvHeads << ", P, " << size << "]";
  const ir::Value *totalV = n.Inputs[6];
  if (!totalV->Const || totalV->Const->numel() != 1)
    n.error(ErrorKind::Unsupported)
        << "total_sequence_length is known only at run time; mlcc needs it at compile time "
           "(fixed input shapes make the usual Shape-derived value a constant)";
  if (n.inDType(5) != DType::I32 || n.inShape(5) != Shape{batch})
    n.error() << "seqlens_k must be int32 of shape [" << batch << "]";
  const int64_t total = totalV->Const->intAt(0);
  // The first prompt (S = total): no past, causal over the new tokens.
  // Later calls: each batch row's past is seqlens_k + 1 - S rows of the
  // past buffer, and the new keys go after them.
  const bool first = seq == total;
  if (first && past > 0)
    n.error(ErrorKind::Unsupported) << "a first prompt (sequence length " << seq
                                    << " = total_sequence_length) with a past buffer of "
                                    << past << " rows is not supported";
  if (!first && total != past + seq)
    n.error(ErrorKind::Unsupported)
        << "total_sequence_length " << total << " is not the past length " << past
        << " plus the sequence length " << seq
        << " (a past/present buffer of fixed capacity is not supported)";
  Expansion e{n, g, {}};
  ir::Value *qv = n.Inputs[0], *kv = e.input(1), *vv = e.input(2);
  if (packed) {
    std::vector<ir::Value *> parts;
    for (const char *p : {"q", "k", "v"})
      parts.push_back(g.addValue(g.uniqueValueName(n.Name + "/" + p)));
    e.addMulti("Split", 13,
               {qv, i64s(e, {heads * size, kvHeads * size, kvHeads * size}, "sizes")},
               {{"axis", ir::intAttr(2)}}, parts);
    qv = parts[0], kv = parts[1], vv = parts[2];
  }
  // ps[b] = seqlens_k[b] + 1 - S, the rows of the past in use.
  ir::Value *ps = nullptr;
  if (!first) {
    ir::Value *lens = e.add("Cast", 13, {n.Inputs[5]}, {{"to", ir::intAttr(7)}});
    lens = e.add("Reshape", 14, {lens, i64s(e, {batch, 1}, "rows_shape")});
    ps = e.add("Add", 14, {lens, e.constant(Tensor::fromInts(DType::I64, {}, {1 - seq}), "one_less_s")});
  }
  if (n.attrInt("do_rotary", 0) != 0) {
    if (!n.hasInput(7) || !n.hasInput(8) || n.inShape(7).size() != 2 ||
        n.inShape(8) != n.inShape(7))
      n.error() << "do_rotary needs cos_cache and sin_cache of one shape [positions, rotary / 2]";
    ir::Value *positions = e.input(9);
    if (positions && n.inShape(9) != Shape{batch, seq})
      n.error() << "position_ids must have shape [" << batch << ", " << seq << "]";
    if (!positions) {
      ir::Value *steps = counting(e, seq, 2, 1, 0, "steps");
      positions = first ? steps : e.add("Add", 14, {ps, steps});
      positions = e.add("Expand", 13, {positions, i64s(e, {batch, seq}, "positions_shape")});
    }
    const int64_t rotary = 2 * n.inShape(7).back();
    std::map<std::string, ir::Attribute> attrs = {
        {"interleaved", ir::intAttr(n.attrInt("rotary_interleaved", 0))}};
    if (rotary < size)
      attrs["rotary_embedding_dim"] = ir::intAttr(rotary);
    auto rope = [&](ir::Value *x, int64_t h) {
      std::map<std::string, ir::Attribute> a = attrs;
      a["num_heads"] = ir::intAttr(h);
      return e.add("RotaryEmbedding", 23, {x, n.Inputs[7], n.Inputs[8], positions}, a);
    };
    qv = rope(qv, heads);
    kv = rope(kv, kvHeads);
  }
  std::map<std::string, ir::Attribute> attrs = {{"q_num_heads", ir::intAttr(heads)},
                                                {"kv_num_heads", ir::intAttr(kvHeads)}};
  if (double scale = n.attrFloat("scale", 0.0); scale != 0.0)
    attrs["scale"] = ir::floatAttr(scale);
  if (double softcap = n.attrFloat("softcap", 0.0); softcap != 0.0)
    attrs["softcap"] = ir::floatAttr(softcap);
  if (first) {
    attrs["is_causal"] = ir::intAttr(1);
    e.addMulti("Attention", 23, {qv, kv, vv, e.input(10)}, attrs,
               {n.Outputs[0], e.output(1), e.output(2)});
    return std::move(e.Out);
  }
  // Present rows j of batch b: the past's row j (j < ps), the new row
  // j - ps (j < ps + S), then the past's row j - S (ONNX Runtime leaves
  // those unset): a gather from the past followed by the new rows.
  ir::Value *j = counting(e, total, 2, 1, 0, "rows");
  ir::Value *fromNew = e.add("Add", 14, {e.add("Sub", 14, {j, ps}), e.constant(Tensor::fromInts(DType::I64, {}, {past}), "past")});
  ir::Value *after = counting(e, total, 2, 1, -seq, "rows_after");
  ir::Value *end = e.add("Add", 14, {ps, e.constant(Tensor::fromInts(DType::I64, {}, {seq}), "seq")});
  ir::Value *rows = e.add("Where", 16, {e.add("Less", 13, {j, ps}), j,
                                        e.add("Where", 16, {e.add("Less", 13, {j, end}), fromNew, after})});
  rows = e.add("Reshape", 14, {rows, i64s(e, {batch, 1, total, 1}, "rows4_shape")});
  rows = e.add("Expand", 13, {rows, i64s(e, {batch, kvHeads, total, size}, "present_shape")});
  auto present = [&](ir::Value *pastX, ir::Value *x, ir::Value *out) {
    ir::Value *cat = e.add("Concat", 13, {pastX, headsFirst(e, x, batch, seq, kvHeads, size)}, {{"axis", ir::intAttr(2)}});
    return e.add("GatherElements", 13, {cat, rows}, {{"axis", ir::intAttr(2)}}, out);
  };
  ir::Value *pk = present(n.Inputs[3], kv, e.output(1)), *pv = present(n.Inputs[4], vv, e.output(2));
  // Query s of batch b sees present rows j <= ps[b] + s.
  ir::Value *psRows = e.add("Reshape", 14, {ps, i64s(e, {batch, 1, 1, 1}, "ps_shape")});
  ir::Value *visible = e.add("LessOrEqual", 16, {counting(e, total, 4, 3, 0, "keys"),
                                                 e.add("Add", 14, {psRows, counting(e, seq, 4, 2, 0, "queries")})});
  DType t = n.inDType(0);
  ir::Value *mask = e.add("Where", 16, {visible, scalarOf(e, t, 0, "seen"),
                                        scalarOf(e, t, -INFINITY, "hidden")});
  if (ir::Value *bias = e.input(10))
    mask = e.add("Add", 14, {mask, bias});
  e.add("Attention", 23, {qv, pk, pv, mask}, attrs, n.Outputs[0]);
  return std::move(e.Out);
}

} // namespace

MLCC_OPS(TransformerContrib) {
  R.add({.Domain = Ms, .Name = "Gelu", .SinceVersion = 1,
         .Expand = [](ir::Node &n, ir::Graph &g) { return expandGelu(n, g, false, 1); }});
  R.add({.Domain = Ms, .Name = "BiasGelu", .SinceVersion = 1,
         .Expand = [](ir::Node &n, ir::Graph &g) { return expandGelu(n, g, false, 2); }});
  R.add({.Domain = Ms, .Name = "FastGelu", .SinceVersion = 1,
         .Expand = [](ir::Node &n, ir::Graph &g) { return expandGelu(n, g, true, 2); }});
  R.add({.Domain = Ms, .Name = "QuickGelu", .SinceVersion = 1, .Expand = expandQuickGelu});
  R.add({.Domain = Ms, .Name = "SkipLayerNormalization", .SinceVersion = 1,
         .Expand = expandSkipLayerNorm});
  R.add({.Domain = Ms, .Name = "SkipSimplifiedLayerNormalization", .SinceVersion = 1,
         .Expand = expandSkipSimplifiedLayerNorm});
  R.add({.Name = "SimplifiedLayerNormalization", .SinceVersion = 1,
         .Expand = expandSimplifiedLayerNorm});
  R.add({.Domain = Ms, .Name = "RotaryEmbedding", .SinceVersion = 1, .Expand = expandRotary});
  R.add({.Domain = Ms, .Name = "MultiHeadAttention", .SinceVersion = 1,
         .Expand = expandMultiHeadAttention});
  R.add({.Domain = Ms, .Name = "Attention", .SinceVersion = 1, .Expand = expandAttention});
  R.add({.Domain = Ms, .Name = "GroupQueryAttention", .SinceVersion = 1,
         .Expand = expandGroupQueryAttention});
}

} // namespace mlcc::ops
