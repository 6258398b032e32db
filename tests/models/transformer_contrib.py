#!/usr/bin/python3
"""ONNX Runtime's transformer contrib ops (com.microsoft): models and inputs
for tests/models/transformer_contrib.sh, and the comparison of outputs.

  transformer_contrib.py make DIR      writes DIR/CASE/{model.onnx, in*.bin,
                                       inputs, outputs, fused}
  transformer_contrib.py compare CASE  compares CASE/mlcc*.bin with CASE/ort*.bin
  transformer_contrib.py make-bad DIR  invalid or unsupported forms:
                                       DIR/NAME.onnx and DIR/NAME.expect

`inputs` holds the input specs for tests/models/ort_run.js
(FILE:D0,D1[@TYPE]), `outputs` the number of outputs and of those compared
(the first ones), `fused` the number of
fused attention kernels `mlcc --emit plan` must show. Each op is written as
ONNX Runtime's optimizer and exporters write it (compiler/ops/
TransformerContrib.cpp says what each means); the last case is a BERT-style
layer built from them.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

rng = np.random.default_rng(5)
MS = "com.microsoft"


def vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def const(name, a):
    return nh.from_array(np.asarray(a), name)


def randn(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save_model(path, nodes, ins, outs, inits):
    g = h.make_graph(nodes, os.path.basename(path), ins, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)])
    m.ir_version = 8
    onnx.save(m, path)


def case(out, name, nodes, inputs, outs, inits, fused=0, compared=None):
    """inputs: (name, array) pairs in the graph's order; the first
    `compared` outputs (default all) are compared with ONNX Runtime's."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    types = {np.dtype(np.float32): (TP.FLOAT, ""), np.dtype(np.int32): (TP.INT32, "@int32"),
             np.dtype(np.int64): (TP.INT64, "@int64")}
    ins, specs = [], []
    for i, (n, a) in enumerate(inputs):
        t, suffix = types[a.dtype]
        ins.append(vi(n, list(a.shape), t))
        f = os.path.join(d, "in%d.bin" % i)
        a.tofile(f)
        specs.append("%s:%s%s" % (f, ",".join(str(x) for x in a.shape), suffix))
    save_model(os.path.join(d, "model.onnx"), nodes, ins, outs, inits)
    with open(os.path.join(d, "inputs"), "w") as f:
        f.write(" ".join(specs) + "\n")
    with open(os.path.join(d, "outputs"), "w") as f:
        f.write("%d %d\n" % (len(outs), len(outs) if compared is None else compared))
    with open(os.path.join(d, "fused"), "w") as f:
        f.write("%d\n" % fused)


def rope_cache(positions, half):
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def make(out):
    B, S, D, N = 2, 7, 64, 4
    # Normalizations with the residual add (and bias) before them.
    case(out, "skip_layer_norm", [
        h.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                    ["y", "", "", "sum"], domain=MS, epsilon=1e-5),
    ], [("x", randn(B, S, D)), ("skip", randn(B, S, D))],
        [vi("y", [B, S, D]), vi("sum", [B, S, D])],
        [const("gamma", randn(D)), const("beta", randn(D)), const("bias", randn(D))])
    case(out, "skip_layer_norm_plain", [
        h.make_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"], domain=MS),
    ], [("x", randn(B, S, D)), ("skip", randn(B, S, D))], [vi("y", [B, S, D])],
        [const("gamma", randn(D))])
    case(out, "skip_simplified_layer_norm", [
        h.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"],
                    ["y", "", "", "sum"], domain=MS, epsilon=1e-6),
    ], [("x", randn(B, S, D)), ("skip", randn(B, S, D))],
        [vi("y", [B, S, D]), vi("sum", [B, S, D])], [const("gamma", randn(D))])
    case(out, "skip_simplified_layer_norm_bias", [
        h.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"],
                    ["y", "", "", "sum"], domain=MS),
    ], [("x", randn(B, S, D)), ("skip", randn(B, S, D))],
        [vi("y", [B, S, D]), vi("sum", [B, S, D])], [const("gamma", randn(D)), const("bias", randn(D))])
    case(out, "simplified_layer_norm", [
        h.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["y"], epsilon=1e-6),
    ], [("x", randn(B, S, D))], [vi("y", [B, S, D])], [const("gamma", randn(D))])
    # The GELU forms (and QuickGelu), one output each.
    case(out, "gelu_forms", [
        h.make_node("BiasGelu", ["x", "b"], ["y0"], domain=MS),
        h.make_node("FastGelu", ["x", "b"], ["y1"], domain=MS),
        h.make_node("FastGelu", ["x"], ["y2"], domain=MS),
        h.make_node("Gelu", ["x"], ["y3"], domain=MS),
        h.make_node("QuickGelu", ["x"], ["y4"], domain=MS, alpha=1.5),
    ], [("x", randn(B, S, D, scale=3))], [vi("y%d" % i, [B, S, D]) for i in range(5)],
        [const("b", randn(D))])
    # Rotary embeddings: a 3-D input whose positions start at an offset
    # (position_ids [1]), and a 4-D one, interleaved, with per-token
    # positions and a rotary part of the head.
    cos, sin = rope_cache(32, 8)
    case(out, "rotary_offset", [
        h.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, num_heads=N),
    ], [("x", randn(1, 6, D)), ("pos", np.array([3], np.int64))], [vi("y", [1, 6, D])],
        [const("cos", cos), const("sin", sin)])
    cos4, sin4 = rope_cache(32, 4)
    case(out, "rotary_interleaved_4d", [
        h.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS,
                    interleaved=1, rotary_embedding_dim=8, num_heads=N),
    ], [("x", randn(B, N, 6, 16)), ("pos", rng.integers(0, 32, (B, 6)).astype(np.int64))],
        [vi("y", [B, N, 6, 16])], [const("cos", cos4), const("sin", sin4)])
    # MultiHeadAttention: self-attention with a bias and a key padding mask.
    mask = np.ones((B, 10), np.int32)
    mask[1, 6:] = 0
    case(out, "mha_padding_mask", [
        h.make_node("MultiHeadAttention", ["q", "k", "v", "bias", "mask"], ["y"], domain=MS,
                    num_heads=N),
    ], [("q", randn(B, 10, D)), ("k", randn(B, 10, D)), ("v", randn(B, 10, D)), ("mask", mask)],
        [vi("y", [B, 10, D])], [const("bias", randn(3 * D))], fused=1)
    # A decoder step: causal, past key and value, present ones out.
    case(out, "mha_causal_past", [
        h.make_node("MultiHeadAttention", ["q", "k", "v", "", "", "", "pk", "pv"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=N, unidirectional=1),
    ], [("q", randn(1, 5, D)), ("k", randn(1, 5, D)), ("v", randn(1, 5, D)),
        ("pk", randn(1, N, 7, 16)), ("pv", randn(1, N, 7, 16))],
        [vi("y", [1, 5, D]), vi("present_k", [1, N, 12, 16]), vi("present_v", [1, N, 12, 16])],
        [], fused=1)
    # Cross-attention over keys and values already split into heads, with an
    # attention bias and a key-length mask.
    case(out, "mha_cross_bias", [
        h.make_node("MultiHeadAttention", ["q", "k", "v", "", "lengths", "ab"], ["y"], domain=MS,
                    num_heads=N, scale=0.2),
    ], [("q", randn(B, 6, D)), ("k", randn(B, N, 9, 16)), ("v", randn(B, N, 9, 16)),
        ("lengths", np.array([9, 4], np.int32)), ("ab", randn(1, N, 6, 9))],
        [vi("y", [B, 6, D])], [], fused=1)
    # The Attention op of ONNX Runtime's BERT optimizer: packed projection,
    # key lengths as mask_index.
    case(out, "bert_attention", [
        h.make_node("Attention", ["x", "w", "b", "lengths"], ["y"], domain=MS, num_heads=N),
    ], [("x", randn(B, 12, D)), ("lengths", np.array([12, 5], np.int32))],
        [vi("y", [B, 12, D])], [const("w", randn(D, 3 * D, scale=0.2)), const("b", randn(3 * D))],
        fused=1)
    # GroupQueryAttention as onnxruntime-genai writes it (4 query heads, 2
    # key/value heads, rotary inside): the first prompt, a decode step of a
    # padded batch (row 1 uses 4 of its 7 past rows; ONNX Runtime leaves the
    # present rows after the valid ones unset, so only Y is compared; its
    # kernel reads the past only when the present outputs are requested), a
    # decode step with packed QKV and softcap, and a later prompt of 3
    # tokens after 5.
    KV = 2
    total = lambda t: const("total", np.array(t, np.int32))
    case(out, "gqa_prompt_rotary", [
        h.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "lens", "total", "cos", "sin"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=N, kv_num_heads=KV,
                    do_rotary=1),
    ], [("q", randn(B, 6, D)), ("k", randn(B, 6, KV * 16)), ("v", randn(B, 6, KV * 16)),
        ("lens", np.array([5, 5], np.int32))],
        [vi("y", [B, 6, D]), vi("present_k", [B, KV, 6, 16]), vi("present_v", [B, KV, 6, 16])],
        [total(6), const("cos", cos), const("sin", sin)], fused=1)
    case(out, "gqa_decode_padded_rotary", [
        h.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "lens", "total", "cos", "sin"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=N, kv_num_heads=KV,
                    do_rotary=1, rotary_interleaved=1),
    ], [("q", randn(B, 1, D)), ("k", randn(B, 1, KV * 16)), ("v", randn(B, 1, KV * 16)),
        ("pk", randn(B, KV, 7, 16)), ("pv", randn(B, KV, 7, 16)), ("lens", np.array([7, 4], np.int32))],
        [vi("y", [B, 1, D]), vi("present_k", [B, KV, 8, 16]), vi("present_v", [B, KV, 8, 16])],
        [total(8), const("cos", cos), const("sin", sin)], fused=1, compared=1)
    case(out, "gqa_decode_packed_softcap", [
        h.make_node("GroupQueryAttention", ["qkv", "", "", "pk", "pv", "lens", "total"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=N, kv_num_heads=KV,
                    softcap=2.0),
    ], [("qkv", randn(1, 1, D + 2 * KV * 16)), ("pk", randn(1, KV, 9, 16)), ("pv", randn(1, KV, 9, 16)),
        ("lens", np.array([9], np.int32))],
        [vi("y", [1, 1, D]), vi("present_k", [1, KV, 10, 16]), vi("present_v", [1, KV, 10, 16])],
        [total(10)], fused=1)
    case(out, "gqa_later_prompt", [
        h.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "lens", "total"],
                    ["y", "present_k", "present_v"], domain=MS, num_heads=N, kv_num_heads=KV),
    ], [("q", randn(1, 3, D)), ("k", randn(1, 3, KV * 16)), ("v", randn(1, 3, KV * 16)),
        ("pk", randn(1, KV, 5, 16)), ("pv", randn(1, KV, 5, 16)), ("lens", np.array([7], np.int32))],
        [vi("y", [1, 3, D]), vi("present_k", [1, KV, 8, 16]), vi("present_v", [1, KV, 8, 16])],
        [total(8)], fused=1)
    # A BERT-style layer as the optimizer leaves it.
    F = 4 * D
    case(out, "bert_layer", [
        h.make_node("Attention", ["x", "wqkv", "bqkv", "mask"], ["a"], domain=MS, num_heads=N),
        h.make_node("MatMul", ["a", "wo"], ["o"]),
        h.make_node("SkipLayerNormalization", ["o", "x", "g1", "b1", "bo"], ["h1"], domain=MS,
                    epsilon=1e-12),
        h.make_node("MatMul", ["h1", "w1"], ["f0"]),
        h.make_node("BiasGelu", ["f0", "bf1"], ["f1"], domain=MS),
        h.make_node("MatMul", ["f1", "w2"], ["f2"]),
        h.make_node("SkipLayerNormalization", ["f2", "h1", "g2", "b2", "bf2"], ["y"], domain=MS,
                    epsilon=1e-12),
    ], [("x", randn(B, 16, D)), ("mask", np.array([[1] * 16, [1] * 9 + [0] * 7], np.int32))],
        [vi("y", [B, 16, D])],
        [const("wqkv", randn(D, 3 * D, scale=0.15)), const("bqkv", randn(3 * D, scale=0.1)),
         const("wo", randn(D, D, scale=0.15)), const("bo", randn(D, scale=0.1)),
         const("g1", randn(D)), const("b1", randn(D)), const("w1", randn(D, F, scale=0.15)),
         const("bf1", randn(F, scale=0.1)), const("w2", randn(F, D, scale=0.1)),
         const("bf2", randn(D, scale=0.1)), const("g2", randn(D)), const("b2", randn(D))],
        fused=1)


def compare(d):
    with open(os.path.join(d, "outputs")) as f:
        count = int(f.read().split()[1])
    worst = 0.0
    for i in range(count):
        a = np.fromfile(os.path.join(d, "mlcc%d.bin" % i), np.float32).astype(np.float64)
        b = np.fromfile(os.path.join(d, "ort%d.bin" % i), np.float32).astype(np.float64)
        if a.shape != b.shape or not np.all(np.isfinite(a)):
            print("output %d: %d values against ONNX Runtime's %d (or not finite)" % (i, a.size, b.size))
            return 1
        rel = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)
        worst = max(worst, rel)
        if rel > 1e-5:
            print("output %d: max|mlcc - ORT| = %.3g x max|ORT| (> 1e-5)" % (i, rel))
            return 1
    print("%d output(s), max|mlcc - ORT| <= %.2g x max|ORT|" % (count, worst))
    return 0


def make_bad(out):
    os.makedirs(out, exist_ok=True)
    D = 64

    def bad(name, node, ins, outs, inits, expect):
        save_model(os.path.join(out, name + ".onnx"), [node], ins, outs, inits)
        with open(os.path.join(out, name + ".expect"), "w") as f:
            f.write(expect + "\n")

    bad("mha_packed_qkv", h.make_node("MultiHeadAttention", ["qkv"], ["y"], name="mha", domain=MS,
                                      num_heads=4),
        [vi("qkv", [1, 5, 4, 3, 16])], [vi("y", [1, 5, D])], [], "packed QKV")
    bad("skip_ln_gamma", h.make_node("SkipLayerNormalization", ["x", "s", "g"], ["y"], name="sln",
                                     domain=MS),
        [vi("x", [1, 5, D]), vi("s", [1, 5, D])], [vi("y", [1, 5, D])],
        [const("g", np.ones(D // 2, np.float32))], "gamma")
    bad("rotary_scale", h.make_node("RotaryEmbedding", ["x", "p", "c", "s"], ["y"], name="rope",
                                    domain=MS, scale=2.0),
        [vi("x", [1, 5, D]), vi("p", [1], TP.INT64)], [vi("y", [1, 5, D])],
        [const("c", np.ones((8, 8), np.float32)), const("s", np.ones((8, 8), np.float32))], "scale")
    bad("gqa_run_time_total", h.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "l", "t"],
                                          ["y"], name="gqa", domain=MS, num_heads=4, kv_num_heads=2),
        [vi("q", [1, 5, D]), vi("k", [1, 5, 32]), vi("v", [1, 5, 32]), vi("l", [1], TP.INT32),
         vi("t", [], TP.INT32)], [vi("y", [1, 5, D])], [], "total_sequence_length")
    bad("gqa_window", h.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "l", "t"], ["y"],
                                  name="gqa2", domain=MS, num_heads=4, kv_num_heads=2,
                                  local_window_size=4),
        [vi("q", [1, 5, D]), vi("k", [1, 5, 32]), vi("v", [1, 5, 32]), vi("l", [1], TP.INT32)],
        [vi("y", [1, 5, D])], [const("t", np.array(5, np.int32))], "local_window_size")
    bad("gqa_past_rank", h.make_node("GroupQueryAttention", ["q", "k", "v", "pk", "pv", "l", "t"],
                                     ["y"], name="gqa3", domain=MS, num_heads=4, kv_num_heads=2),
        [vi("q", [1, 1, D]), vi("k", [1, 1, 32]), vi("v", [1, 1, 32]), vi("pk", [1, 2, 16]),
         vi("pv", [1, 2, 16]), vi("l", [1], TP.INT32)], [vi("y", [1, 1, D])],
        [const("t", np.array(17, np.int32))], "past_key|input 3")
    bad("mha_heads", h.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], name="mha3",
                                 domain=MS, num_heads=5),
        [vi("q", [1, 5, D]), vi("k", [1, 5, D]), vi("v", [1, 5, D])], [vi("y", [1, 5, D])], [],
        "num_heads")


def main(argv):
    if len(argv) == 3 and argv[1] == "make":
        make(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "compare":
        return compare(argv[2])
    if len(argv) == 3 and argv[1] == "make-bad":
        make_bad(argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
