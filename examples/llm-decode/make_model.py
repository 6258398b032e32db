#!/usr/bin/python3
"""Writes llama_decode.onnx: the decode step of a small Llama-style language
model (random weights, seed 0) as PyTorch's TorchScript exporter writes it,
opset 17, for examples/llm-decode (generate.c).

  vocab 512, 2 layers, d 128, 4 query heads and 2 key/value heads of 32
  (grouped-query attention), RMSNorm, rotary position embedding (the
  rotate-half form, angles computed from the past length), SwiGLU MLP
  (ff 352), an output projection of its own (untied).

  inputs:  input_ids [1, 1] int64, past_key_L / past_value_L [1, 2, past, 32]
  outputs: logits [1, 1, 512], present_key_L / present_value_L [1, 2, past+1, 32]

The past length is the dynamic axis "past" (compile with --dim past=0..MAX).
Usage: /usr/bin/python3 make_model.py [OUT.onnx]
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, D, HEADS, KV_HEADS, FF, LAYERS = 512, 128, 4, 2, 352, 2
DH = D // HEADS


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(), RMSNorm()
        self.q = nn.Linear(D, HEADS * DH, bias=False)
        self.k = nn.Linear(D, KV_HEADS * DH, bias=False)
        self.v = nn.Linear(D, KV_HEADS * DH, bias=False)
        self.o = nn.Linear(D, D, bias=False)
        self.gate = nn.Linear(D, FF, bias=False)
        self.up = nn.Linear(D, FF, bias=False)
        self.down = nn.Linear(FF, D, bias=False)

    def forward(self, x, cos, sin, past_k, past_v):
        h = self.n1(x)
        q = self.q(h).view(1, 1, HEADS, DH).transpose(1, 2)
        k = self.k(h).view(1, 1, KV_HEADS, DH).transpose(1, 2)
        v = self.v(h).view(1, 1, KV_HEADS, DH).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
        total = k.shape[2]
        group = HEADS // KV_HEADS
        kk = k[:, :, None].expand(1, KV_HEADS, group, total, DH).reshape(1, HEADS, total, DH)
        vv = v[:, :, None].expand(1, KV_HEADS, group, total, DH).reshape(1, HEADS, total, DH)
        s = (q @ kk.transpose(-1, -2)) / DH ** 0.5
        a = (s.softmax(-1) @ vv).transpose(1, 2).reshape(1, 1, D)
        x = x + self.o(a)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)), k, v


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm()
        self.head = nn.Linear(D, VOCAB, bias=False)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, DH, 2).float() / DH))

    def forward(self, input_ids, *past):
        position = torch.tensor(past[0].shape[2], dtype=torch.float32)
        angles = position * self.inv_freq
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        x = self.embed(input_ids)
        presents = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, cos, sin, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (self.head(self.norm(x)), *presents)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "llama_decode.onnx"
    torch.manual_seed(0)
    m = Llama().eval()
    past = [torch.randn(1, KV_HEADS, 5, DH) for _ in range(2 * LAYERS)]
    pasts = [p for i in range(LAYERS) for p in ("past_key_%d" % i, "past_value_%d" % i)]
    presents = [p.replace("past", "present") for p in pasts]
    axes = {p: {2: "past"} for p in pasts}
    axes.update({p: {2: "past_plus_1"} for p in presents})
    with torch.no_grad():
        torch.onnx.export(m, (torch.tensor([[7]]), *past), out, input_names=["input_ids"] + pasts,
                          output_names=["logits"] + presents, dynamic_axes=axes, opset_version=17)
    print("wrote", out)


if __name__ == "__main__":
    main()
