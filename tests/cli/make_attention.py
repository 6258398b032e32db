#!/usr/bin/python3
"""Writes tests/cli/data/attention/*.onnx: attention chains as exporters
write them, for fuse-attention (compiler/passes/FuseAttention.cpp) and the
fused kernel (compiler/ops/FusedAttention.cpp); tests/cli/attention.sh
compiles each and compares it with `mlcc check` (the model before
optimization, in float64). Q, K and V are inputs (random data from mlcc
check), masks constants or inputs. Names ending in _unfused are chains fuse-
attention must leave alone (still correct).

Run once; the models are committed.
Usage: /usr/bin/python3 tests/cli/make_attention.py
"""
import os
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "data", "attention")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
F = TP.FLOAT


def vi(name, shape, t=F):
    return h.make_tensor_value_info(name, t, shape)


def const(name, a):
    return nh.from_array(np.asarray(a), name)


def save(name, nodes, ins, outs, inits, opset=17):
    g = h.make_graph(nodes, name, ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 10
    if opset <= 17:  # this onnx (1.12) knows no later opset
        onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    print("wrote", name)


def heads_in(prefix, shape):
    """[1, S, H, dh] inputs q, k, v as a projection would reshape them."""
    return [vi(p, shape) for p in prefix]


# 1. GPT-style: heads split by Transpose, K^T by perm [0,2,3,1], scaled by a
# Div, causal mask by Where(mask, s, -inf), heads merged by Transpose;
# 37 positions (a partial block), 3 heads of 32.
S, H, D = 37, 3, 32
GPT_CHAIN = [
    h.make_node("Transpose", ["q"], ["qh"], perm=[0, 2, 1, 3]),
    h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 3, 1]),
    h.make_node("Transpose", ["v"], ["vh"], perm=[0, 2, 1, 3]),
    h.make_node("MatMul", ["qh", "kt"], ["s"]),
    h.make_node("Div", ["s", "scale"], ["s1"]),
    h.make_node("Where", ["causal", "s1", "ninf"], ["s2"]),
    h.make_node("Softmax", ["s2"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "vh"], ["o"]),
    h.make_node("Transpose", ["o"], ["y"], perm=[0, 2, 1, 3]),
]
save("gpt_causal", GPT_CHAIN, heads_in("qkv", [1, S, H, D]), [vi("y", [1, S, H, D])],
    [const("scale", np.float32(np.sqrt(D))), const("ninf", np.float32(-np.inf)),
     const("causal", np.tril(np.ones((1, 1, S, S), bool)))])

# 2. BERT-style: an additive mask input broadcast over heads and rows (mask
# first, scores second), scaled by a Mul; 70 positions, value width 64.
S, H, D = 70, 2, 64
save("bert_mask", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Mul", ["s", "scale"], ["s1"]),
    h.make_node("Add", ["mask", "s1"], ["s2"]),
    h.make_node("Softmax", ["s2"], ["p"], axis=3),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, H, S, D]), vi("kt", [1, H, D, S]), vi("v", [1, H, S, D]), vi("mask", [1, 1, 1, S])],
    [vi("y", [1, H, S, D])], [const("scale", np.float32(0.125))])

# 3. The same with a symbolic length (bounded: --dim S=1..80).
save("bert_mask_dynamic", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Mul", ["s", "scale"], ["s1"]),
    h.make_node("Add", ["mask", "s1"], ["s2"]),
    h.make_node("Softmax", ["s2"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, H, "S", D]), vi("kt", [1, H, D, "S"]), vi("v", [1, H, "S", D]),
    vi("mask", [1, 1, 1, "S"])], [vi("y", [1, H, "S", D])], [const("scale", np.float32(0.125))])

# 4. 3-D, no steps, K^T an input, value width 48 != key width 16, 20 queries
# against 9 keys, batch 2.
save("plain_3d", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Softmax", ["s"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [2, 20, 16]), vi("kt", [2, 16, 9]), vi("v", [2, 9, 48])], [vi("y", [2, 20, 48])], [])

# 5. A decode step: one query against 129 cached keys (K^T by perm
# [0,1,3,2]), a boolean mask input selecting -inf where it holds
# (Where(c, x, s)), keys shared by 4 query heads (K, V with one head).
save("decode_shared_kv", [
    h.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Mul", ["scale", "s"], ["s1"]),
    h.make_node("Where", ["pad", "ninf", "s1"], ["s2"]),
    h.make_node("Softmax", ["s2"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, 4, 1, 32]), vi("k", [1, 1, 129, 32]), vi("v", [1, 1, 129, 32])],
    [vi("y", [1, 4, 1, 32])],
    [const("scale", np.float32(1 / np.sqrt(32))), const("ninf", np.float32(-np.inf)),
     const("pad", np.arange(129).reshape(1, 1, 1, 129) % 5 == 3)])

# 6. Softmax before opset 13 over the last axis (axis=3 of 4): the same chain.
save("opset11_softmax", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Softmax", ["s"], ["p"], axis=3),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, 2, 5, 8]), vi("kt", [1, 2, 8, 6]), vi("v", [1, 2, 6, 16])],
    [vi("y", [1, 2, 5, 16])], [], opset=11)

# 7. Not attention: Softmax over the queries (axis -2).
save("softmax_rows_unfused", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Softmax", ["s"], ["p"], axis=-2),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, 5, 8]), vi("kt", [1, 8, 5]), vi("v", [1, 5, 16])], [vi("y", [1, 5, 16])], [])

# 8. Not fused: the probabilities are also a graph output.
save("probs_output_unfused", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Softmax", ["s"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, 5, 8]), vi("kt", [1, 8, 6]), vi("v", [1, 6, 16])],
    [vi("y", [1, 5, 16]), vi("p", [1, 5, 6])], [])

# 9. A fused QKV projection's output split in three along its last axis,
# each part's heads split by a Reshape and a Transpose (read in place: no
# Split, Reshape or Transpose kernel is left), merged back by Transpose +
# Reshape; 33 positions, 3 heads of 16.
S, H, D = 33, 3, 16
save("qkv_split", [
    h.make_node("Split", ["x", "sizes"], ["q", "k", "v"], axis=2),
    h.make_node("Reshape", ["q", "heads"], ["q4"]),
    h.make_node("Reshape", ["k", "heads"], ["k4"]),
    h.make_node("Reshape", ["v", "heads"], ["v4"]),
    h.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
    h.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
    h.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
    h.make_node("MatMul", ["qh", "kt"], ["s"]),
    h.make_node("Mul", ["s", "scale"], ["s1"]),
    h.make_node("Softmax", ["s1"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "vh"], ["o"]),
    h.make_node("Transpose", ["o"], ["o4"], perm=[0, 2, 1, 3]),
    h.make_node("Reshape", ["o4", "merged"], ["y"]),
], [vi("x", [1, S, 3 * H * D])], [vi("y", [1, S, H * D])],
    [const("sizes", np.array([H * D] * 3, np.int64)), const("heads", np.array([1, S, H, D], np.int64)),
     const("merged", np.array([1, S, H * D], np.int64)), const("scale", np.float32(0.25))])

# 10. Identity and inference-mode Dropout nodes that exporters leave in the
# chain (between the product and the scale, between Softmax and the second
# product): the same attention.
save("identity_dropout", [
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Identity", ["s"], ["s0"]),
    h.make_node("Div", ["s0", "scale"], ["s1"]),
    h.make_node("Softmax", ["s1"], ["p0"], axis=-1),
    h.make_node("Dropout", ["p0"], ["p"]),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], [vi("q", [1, 2, 20, 16]), vi("kt", [1, 2, 16, 20]), vi("v", [1, 2, 20, 16])],
    [vi("y", [1, 2, 20, 16])], [const("scale", np.float32(4))])

# 11. The ONNX Attention op (opset 23) with a past key and value, grouped
# heads (4 query heads, 2 key heads), 3-D inputs and is_causal: the present
# keys and values (graph outputs) are computed before the fused kernel, and
# causal rows see the whole past.
save("onnx_attention_past", [
    h.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "present_k", "present_v"],
                q_num_heads=4, kv_num_heads=2, is_causal=1),
], [vi("q", [1, 5, 64]), vi("k", [1, 5, 32]), vi("v", [1, 5, 32]),
    vi("past_k", [1, 2, 7, 16]), vi("past_v", [1, 2, 7, 16])],
    [vi("y", [1, 5, 64]), vi("present_k", [1, 2, 12, 16]), vi("present_v", [1, 2, 12, 16])], [], opset=23)

# 12. The GPT-style chain of 1. in float16: fused too, its operands cast to
# float32 before the kernel and the result rounded to float16 once.
S, H, D = 37, 3, 32
F16 = TP.FLOAT16
save("gpt_causal_fp16", GPT_CHAIN, [vi(p, [1, S, H, D], F16) for p in "qkv"],
     [vi("y", [1, S, H, D], F16)],
    [const("scale", np.float16(np.sqrt(D))), const("ninf", np.float16(-np.inf)),
     const("causal", np.tril(np.ones((1, 1, S, S), bool)))])
