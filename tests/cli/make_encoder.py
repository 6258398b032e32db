#!/usr/bin/python3
"""Writes tests/cli/data/bounded_encoder.onnx: a PyTorch TransformerEncoder
(2 layers, d_model 32, 4 heads, feed-forward 64) exported with a dynamic
sequence axis 'seq', as users export one. tests/cli/bounded_dims.sh reads
it with --dim seq=MIN..MAX.

Run once with Debian's python3-torch; the output is committed, so the tests
need no Python. Usage: /usr/bin/python3 tests/cli/make_encoder.py
"""
import os
import torch

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                         batch_first=True, dropout=0.0)
encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
torch.onnx.export(encoder, (torch.randn(1, 16, 32),), os.path.join(here, "bounded_encoder.onnx"),
                  input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {1: "seq"}, "y": {1: "seq"}}, opset_version=17)
