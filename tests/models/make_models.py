#!/usr/bin/python3
"""Exports the real-model test networks to ONNX, with random inputs.

For every model NAME, writes into OUT/NAME/:
  model.onnx   exported with torch.onnx.export (eval mode)
  input.bin    the input tensor, raw float32 little-endian
  input.shape  its shape, comma-separated (e.g. 1,3,224,224)

Weights are random (fixed seeds, torchvision's default initialisation) and
every BatchNorm gets random running statistics (mean ~ N(0, 0.1), variance
~ U(0.5, 1.5)) and affine parameters, so activations keep a useful scale
through deep networks instead of collapsing to ~1e-9.

Usage: /usr/bin/python3 make_models.py OUT [NAME...]   (default: all models)
"""
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torchvision

OPSET = 13


def randomize_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                    m.bias.copy_(torch.randn(n, generator=gen) * 0.1)


def vision(factory):
    def make(gen):
        model = factory(weights=None)
        randomize_batchnorm(model, gen)
        return model, torch.randn(1, 3, 224, 224, generator=gen)
    return make


def transformer_encoder(gen):
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                       dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, torch.randn(1, 16, 64, generator=gen)


MODELS = {
    "resnet18": (1, vision(torchvision.models.resnet18)),
    "squeezenet1_1": (2, vision(torchvision.models.squeezenet1_1)),
    "mobilenet_v2": (3, vision(torchvision.models.mobilenet_v2)),
    "transformer_encoder": (4, transformer_encoder),
}


def export(name, out_dir):
    seed, make = MODELS[name]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(1000 + seed)
    model, x = make(gen)
    model.eval()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    # Grad mode stays on: under no_grad, eval-mode TransformerEncoderLayer takes
    # a fused fast path (aten::_transformer_encoder_layer_fwd) with no ONNX export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path + ".tmp", input_names=["input"],
                          output_names=["output"], opset_version=OPSET,
                          do_constant_folding=True)
    os.replace(path + ".tmp", path)
    x.numpy().astype("<f4").tofile(os.path.join(d, "input.bin"))
    with open(os.path.join(d, "input.shape"), "w") as f:
        f.write(",".join(str(s) for s in x.shape) + "\n")
    print(f"  {name}: {os.path.getsize(path)} bytes, input {list(x.shape)}")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    names = argv[2:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"unknown model {n}; known: {' '.join(MODELS)}", file=sys.stderr)
            return 2
    torch.set_num_threads(1)
    for n in names:
        export(n, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
