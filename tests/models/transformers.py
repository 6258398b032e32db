#!/usr/bin/python3
"""The transformers of benchmarks/transformers (issue 56), written in
PyTorch (random weights), for make_models.py: each factory takes a torch
Generator and returns (model, input).

  tf_encoder_S  a BERT-style encoder (d 256, 4 heads, 4 layers, ff 1024,
                erf GELU, post-LN), x[1, S, 256]
  tf_gpt_S      a GPT-2-style prompt pass over embedded tokens (d 384, 6
                heads, 6 layers, learned positions, causal mask by Where,
                tanh GELU, pre-LN, vocabulary head 8000), x[1, S, 384]
  vit_tiny      a ViT-Tiny (224x224, patch 16, d 192, 3 heads, 12 layers,
                197 tokens, class token)
  whisper_enc   a Whisper-tiny-like audio encoder (80 mel bins x 3000
                frames, two Conv1d and GELU, 1500 positions, d 384, 6
                heads, 4 layers, pre-LN)

Attention is written by hand as exporters see it: one QKV projection split
in three, heads by view + transpose, scores scaled, an optional causal mask,
softmax, heads merged by transpose + reshape.
"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Multi-head self-attention as exporters see it written by hand: one
    projection each, heads split by view + transpose, scores scaled, an
    optional additive or causal mask, softmax, merged by transpose +
    reshape."""

    def __init__(self, d, heads, causal=False):
        super().__init__()
        self.h, self.dh, self.causal = heads, d // heads, causal
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        if causal:
            self.register_buffer("mask", torch.tril(torch.ones(1024, 1024, dtype=torch.bool)))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (t.view(b, n, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh)
        if self.causal:
            s = torch.where(self.mask[:n, :n], s, torch.tensor(float("-inf")))
        a = s.softmax(-1) @ v
        return self.o(a.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    def __init__(self, d, heads, ff, act, pre_ln, causal=False):
        super().__init__()
        self.attn = Attention(d, heads, causal)
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.act, self.pre_ln = act, pre_ln

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attn(self.n1(x))
            return x + self.ff2(self.act(self.ff1(self.n2(x))))
        x = self.n1(x + self.attn(x))
        return self.n2(x + self.ff2(self.act(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block(256, 4, 1024, F.gelu, False) for _ in range(4))

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(0.02 * torch.randn(1024, 384))
        self.blocks = nn.ModuleList(Block(384, 6, 1536, gelu_tanh, True, True) for _ in range(6))
        self.ln = nn.LayerNorm(384)
        self.head = nn.Linear(384, 8000, bias=False)

    def forward(self, x):
        x = x + self.pos[: x.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 192, 16, 16)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, 192))
        self.pos = nn.Parameter(0.02 * torch.randn(1, 197, 192))
        self.blocks = nn.ModuleList(Block(192, 3, 768, F.gelu, True) for _ in range(12))
        self.ln = nn.LayerNorm(192)
        self.head = nn.Linear(192, 1000)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x[:, 0]))


class Whisper(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(80, 384, 3, padding=1)
        self.c2 = nn.Conv1d(384, 384, 3, stride=2, padding=1)
        self.pos = nn.Parameter(0.02 * torch.randn(1500, 384))
        self.blocks = nn.ModuleList(Block(384, 6, 1536, F.gelu, True) for _ in range(4))
        self.ln = nn.LayerNorm(384)

    def forward(self, mel):
        x = F.gelu(self.c2(F.gelu(self.c1(mel)))).transpose(1, 2) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x)


def factories():
    """{name: factory(gen) -> (model, input)}"""
    def encoder(n):
        return lambda gen: (Encoder(), torch.randn(1, n, 256, generator=gen))

    def gpt(n):
        return lambda gen: (Gpt(), torch.randn(1, n, 384, generator=gen))

    out = {"tf_encoder_%d" % n: encoder(n) for n in (32, 128, 512)}
    out.update({"tf_gpt_%d" % n: gpt(n) for n in (128, 512)})
    out["vit_tiny"] = lambda gen: (Vit(), torch.randn(1, 3, 224, 224, generator=gen))
    out["whisper_enc"] = lambda gen: (Whisper(), torch.randn(1, 80, 3000, generator=gen))
    return out
