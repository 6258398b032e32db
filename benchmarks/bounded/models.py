#!/usr/bin/python3
"""Exports the transformers of benchmarks/bounded/models (issue 55) with
PyTorch's TorchScript exporter, opset 17, random weights (seed 0), dynamic
axes as the exporter makes them:

  encoder_ln   a transformer encoder (2 layers, d 128, 4 heads, ff 512)
               whose LayerNorm is written out in tensor ops (the exporter
               writes ReduceMean, Sub, Pow, Sqrt, Div); x[1, seq, 128]
  bert         a BERT-style encoder (vocab 1000, 2 layers, d 128, 4 heads,
               ff 512, GELU) whose attention mask is built from
               attention_mask[1, seq] (Unsqueeze, Cast, Sub, Mul);
               input_ids[1, seq], attention_mask[1, seq]
  gpt_prompt   a GPT-2-style prompt pass (vocab 2000, 2 layers, d 128,
               4 heads, the QKV projection split in three, a causal mask by
               Where from a lower-triangular buffer cut to seq, tanh GELU);
               input_ids[1, seq] -> logits and each layer's key and value
  gpt_decode   the same network's decode step with a KV cache:
               input_ids[1, 1], past_key_L / past_value_L [1, 4, past, 32]
               -> logits, present_key_L / present_value_L [1, 4, past+1, 32]

Usage: /usr/bin/python3 models.py OUT_DIR [NAME...]
Writes OUT_DIR/NAME.onnx.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, FF, LAYERS = 128, 4, 512, 2
DH = D // HEADS


class DecomposedNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.b = nn.Parameter(0.1 * torch.randn(d))

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * self.w + self.b


def heads(t, b, n):
    return t.view(b, n, HEADS, DH).transpose(1, 2)


class EncoderLayer(nn.Module):
    def __init__(self, norm, act):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(D, FF), nn.Linear(FF, D)
        self.n1, self.n2 = norm(D), norm(D)
        self.act = act

    def forward(self, x, mask=None):
        b, n, _ = x.shape
        q, k, v = heads(self.q(x), b, n), heads(self.k(x), b, n), heads(self.v(x), b, n)
        s = q @ k.transpose(-1, -2) / math.sqrt(DH)
        if mask is not None:
            s = s + mask
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, n, D)
        x = self.n1(x + self.o(a))
        return self.n2(x + self.ff2(self.act(self.ff1(x))))


class EncoderLN(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(DecomposedNorm, F.relu) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(1000, D), nn.Embedding(512, D)
        self.norm = nn.LayerNorm(D)
        self.layers = nn.ModuleList(EncoderLayer(nn.LayerNorm, F.gelu) for _ in range(LAYERS))

    def forward(self, input_ids, attention_mask):
        n = input_ids.shape[1]
        pos = torch.arange(n, device=input_ids.device).unsqueeze(0)
        x = self.norm(self.tok(input_ids) + self.pos(pos))
        mask = (1.0 - attention_mask.unsqueeze(1).unsqueeze(2).to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class GptBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("bias", torch.tril(torch.ones(512, 512, dtype=torch.uint8)).view(1, 1, 512, 512))

    def forward(self, x, past_k=None, past_v=None):
        b, n, _ = x.shape
        q, k, v = self.attn(self.ln1(x)).split(D, dim=2)
        q, k, v = heads(q, b, n), heads(k, b, n), heads(v, b, n)
        if past_k is not None:
            k = torch.cat((past_k, k), dim=-2)
            v = torch.cat((past_v, v), dim=-2)
        s = q @ k.transpose(-1, -2) / math.sqrt(DH)
        total = k.shape[-2]
        causal = self.bias[:, :, total - n:total, :total]
        s = torch.where(causal == 0, torch.tensor(float("-inf")), s)
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, n, D)
        x = x + self.proj(a)
        x = x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x, k, v


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(2000, D), nn.Embedding(512, D)
        self.blocks = nn.ModuleList(GptBlock() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, 2000, bias=False)

    def forward(self, input_ids, *past):
        n = input_ids.shape[1]
        start = past[0].shape[2] if past else 0
        pos = torch.arange(start, start + n, device=input_ids.device).unsqueeze(0)
        x = self.tok(input_ids) + self.pos(pos)
        presents = []
        for i, block in enumerate(self.blocks):
            pk, pv = (past[2 * i], past[2 * i + 1]) if past else (None, None)
            x, k, v = block(x, pk, pv)
            presents += [k, v]
        return (self.head(self.ln(x)), *presents)


def export(name, path):
    torch.manual_seed(0)
    kv = ["key_%d" % i for i in range(LAYERS)]
    if name == "encoder_ln":
        m, args = EncoderLN(), (torch.randn(1, 16, D),)
        ins, outs, axes = ["x"], ["y"], {"x": {1: "seq"}, "y": {1: "seq"}}
    elif name == "bert":
        m = Bert()
        args = (torch.randint(0, 1000, (1, 16)), torch.ones(1, 16, dtype=torch.int64))
        ins, outs = ["input_ids", "attention_mask"], ["y"]
        axes = {"input_ids": {1: "seq"}, "attention_mask": {1: "seq"}, "y": {1: "seq"}}
    elif name == "gpt_prompt":
        m, args = Gpt(), (torch.randint(0, 2000, (1, 16)),)
        presents = [p for i in range(LAYERS) for p in ("present_key_%d" % i, "present_value_%d" % i)]
        ins, outs = ["input_ids"], ["logits"] + presents
        axes = {"input_ids": {1: "seq"}, "logits": {1: "seq"}}
        axes.update({p: {2: "seq"} for p in presents})
    elif name == "gpt_decode":
        m = Gpt()
        past = [torch.randn(1, HEADS, 16, DH) for _ in range(2 * LAYERS)]
        args = (torch.randint(0, 2000, (1, 1)), *past)
        pasts = [p for i in range(LAYERS) for p in ("past_key_%d" % i, "past_value_%d" % i)]
        presents = [p.replace("past", "present") for p in pasts]
        ins, outs = ["input_ids"] + pasts, ["logits"] + presents
        axes = {p: {2: "past"} for p in pasts}
        axes.update({p: {2: "past_plus_1"} for p in presents})
    else:
        raise SystemExit("unknown model " + name)
    m.eval()
    with torch.no_grad():
        torch.onnx.export(m, args, path, input_names=ins, output_names=outs, dynamic_axes=axes,
                          opset_version=17)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or ["encoder_ln", "bert", "gpt_prompt", "gpt_decode"]:
        export(name, os.path.join(out, name + ".onnx"))
        print("wrote", os.path.join(out, name + ".onnx"))
