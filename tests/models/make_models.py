#!/usr/bin/python3
"""Exports the real-model test networks to ONNX, with random inputs.

For every model NAME, writes into OUT/NAME/:
  model.onnx   exported with torch.onnx.export (eval mode)
  input.bin    the input tensor, raw float32 little-endian
  input.shape  its shape, comma-separated (e.g. 1,3,224,224)
  flops.json   only with --flops: the multiply-accumulates of the model's
               convolutions and matrix products (Conv/Gemm/MatMul in ONNX),
               counted on a PyTorch forward pass; "flops" is 2 * "macs"

Quantized variants (benchmarks/vs-ort):
  NAME_qdq     torchvision's quantizable NAME (same architecture), fused,
               calibrated by PyTorch (qnnpack engine) on 16 random inputs,
               converted and exported in QDQ form: ONNX Runtime runs it as
               int8 too
  NAME_int8    the float NAME, plus calibration.npy (16 random inputs from
               the same generator) and mlcc.args (`--quantize int8
               --calibrate input=DIR/calibration.npy`): mlcc quantizes it
               itself while ONNX Runtime runs the float model; the file
               `check` says "quantized" (outputs compared loosely)
  NAME_fp16    the float NAME as a float16 graph (to_float16.py: weights,
               constants and activations float16, a Cast after the input
               and before the output, so input.bin stays float32); both
               engines run the float16 model; the file `check` says
               "float16" (outputs compared to 2e-3 of the largest)
  NAME_dynq    the float NAME as ONNX Runtime's quantize_dynamic writes it
               (to_dynamic_quant.py: DynamicQuantizeLinear + MatMulInteger
               + the float rescale for every MatMul with float weights);
               both engines run it; the file `check` says "dynq" (outputs
               compared to 1e-2 of the largest)

Weights are random (fixed seeds, torchvision's default initialisation) and
every BatchNorm gets random running statistics (mean ~ N(0, 0.1), variance
~ U(0.5, 1.5)) and affine parameters, so activations keep a useful scale
through deep networks instead of collapsing to ~1e-9.

Usage: /usr/bin/python3 make_models.py [--flops] OUT [NAME...]
  NAME: a model below (default: the models of compare_ort.sh, DEFAULT_MODELS)
"""
import json
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


def encoder(d_model, nhead, ff, layers, seq, activation="relu"):
    def make(gen):
        layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=nhead,
                                           dim_feedforward=ff, dropout=0.0,
                                           activation=activation, batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=layers,
                                      enable_nested_tensor=False)
        return model, torch.randn(1, seq, d_model, generator=gen)
    return make


def dft_conv(n_fft, hop):
    """An STFT as a strided Conv1d: the Hann-windowed cosine and sine rows
    of the real DFT's n_fft // 2 + 1 bins (real parts, then imaginary), as
    speech front ends export it."""
    bins = n_fft // 2 + 1
    t = torch.arange(n_fft, dtype=torch.float64)
    k = torch.arange(bins, dtype=torch.float64)[:, None]
    window = 0.5 - 0.5 * torch.cos(2 * torch.pi * t / n_fft)
    angle = 2 * torch.pi * k * t / n_fft
    rows = torch.cat([torch.cos(angle) * window, -torch.sin(angle) * window])
    conv = nn.Conv1d(1, 2 * bins, n_fft, stride=hop, bias=False)
    conv.weight.data = rows[:, None, :].float()
    return conv, bins


class WakeWordFrontEnd(nn.Module):
    """A wake-word front end on 1,760 samples: STFT (n_fft 512, hop 160,
    257 bins, 8 frames) as Conv1d, power, 32 mel bands (a random
    non-negative filter bank), log."""

    def __init__(self, gen):
        super().__init__()
        self.stft, self.bins = dft_conv(512, 160)
        self.mel = nn.Parameter(torch.rand(32, self.bins, generator=gen) * 0.05)

    def forward(self, x):
        s = self.stft(x.unsqueeze(1))
        re, im = s[:, : self.bins], s[:, self.bins:]
        return torch.log(torch.matmul(self.mel, re * re + im * im) + 1e-6)


class VoiceActivity(nn.Module):
    """A voice-activity detector on 512 samples: STFT (n_fft 256, hop 128,
    3 frames) as Conv1d, magnitude, four Conv1d(kernel 3, padding 1) + ReLU
    of 128, 64, 64 and 128 channels, an LSTM of 128 over the frames, a
    sigmoid head on the last frame."""

    def __init__(self, gen):
        super().__init__()
        self.stft, self.bins = dft_conv(256, 128)
        chans = [self.bins, 128, 64, 64, 128]
        self.convs = nn.ModuleList(nn.Conv1d(a, b, 3, padding=1)
                                   for a, b in zip(chans, chans[1:]))
        self.lstm = nn.LSTM(128, 128, batch_first=True)
        self.head = nn.Linear(128, 1)

    def forward(self, x):
        s = self.stft(x.unsqueeze(1))
        re, im = s[:, : self.bins], s[:, self.bins:]
        h = torch.sqrt(re * re + im * im + 1e-9)
        for conv in self.convs:
            h = torch.relu(conv(h))
        out, _ = self.lstm(h.transpose(1, 2))
        return torch.sigmoid(self.head(out[:, -1]))


class GruKeywords(nn.Module):
    """A GRU keyword spotter on 49 frames of 40 features: a GRU of 64 and a
    linear layer to 12 classes on the last frame."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(40, 64, batch_first=True)
        self.out = nn.Linear(64, 12)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.out(y[:, -1])


class UNet(nn.Module):
    """A U-Net for segmentation at 1024x1024 (compile-time benchmark: the
    size of a background-removal or medical-imaging network): four levels of
    two 3x3 Conv + BatchNorm + ReLU (32, 64, 128, 256 channels, 512 at the
    bottom), max pooling down, ConvTranspose(2, stride 2) up, the skip
    connections concatenated, a 1x1 Conv to 2 classes."""

    def __init__(self, base=32, levels=4):
        super().__init__()

        def block(a, b):
            return nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(),
                                 nn.Conv2d(b, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU())
        chans = [base * 2 ** i for i in range(levels + 1)]
        self.down = nn.ModuleList(block(a, b) for a, b in zip([3] + chans[:-2], chans[:-1]))
        self.bottom = block(chans[-2], chans[-1])
        self.up = nn.ModuleList(nn.ConvTranspose2d(b, a, 2, stride=2)
                                for a, b in zip(chans[:-1], chans[1:]))
        self.merge = nn.ModuleList(block(2 * a, a) for a in chans[:-1])
        self.head = nn.Conv2d(base, 2, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = torch.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in reversed(list(zip(self.up, self.merge, skips))):
            x = merge(torch.cat([up(x), skip], 1))
        return self.head(x)


def unet(size):
    def make(gen):
        model = UNet()
        randomize_batchnorm(model, gen)
        return model, torch.randn(1, 3, size, size, generator=gen)
    return make


class OnnxModel:
    """A model written directly as ONNX (ops PyTorch's exporter lacks), with
    the multiply-accumulates of its Conv/Gemm/MatMul nodes."""

    def __init__(self, proto, macs):
        self.proto, self.macs = proto, macs


def wakeword_stft(gen):
    """The wake-word front end on ONNX's signal ops (opset 17, written
    directly: PyTorch's exporter has no STFT): STFT (frame_step 160, a
    periodic Hann window of 512 from HannWindow, 257 bins, 8 frames) on
    1,760 samples, power (ReduceSumSquare over real and imaginary), 32 mel
    bands (MelWeightMatrix: 16 kHz, 20 to 8,000 Hz), log."""
    from onnx import TensorProto, helper
    x = torch.randn(1, 1760, generator=gen)

    def const(name, value, dtype=TensorProto.INT64):
        return helper.make_tensor(name, dtype, [], [value])

    nodes = [
        helper.make_node("Unsqueeze", ["input", "axis2"], ["signal"]),
        helper.make_node("HannWindow", ["n_fft"], ["window"]),
        helper.make_node("STFT", ["signal", "hop", "window"], ["spectrum"]),
        helper.make_node("ReduceSumSquare", ["spectrum"], ["power"], axes=[-1], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mels", "n_fft", "rate", "low", "high"], ["mel"]),
        helper.make_node("MatMul", ["power", "mel"], ["bands"]),
        helper.make_node("Add", ["bands", "eps"], ["floor"]),
        helper.make_node("Log", ["floor"], ["output"]),
    ]
    inits = [
        helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
        const("n_fft", 512), const("hop", 160), const("mels", 32), const("rate", 16000),
        const("low", 20.0, TensorProto.FLOAT), const("high", 8000.0, TensorProto.FLOAT),
        const("eps", 1e-6, TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "wakeword_stft",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1760])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8, 32])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    macs = 8 * 257 * 32  # the mel MatMul
    return OnnxModel(proto, {"macs": macs, "flops": 2 * macs, "by_op": {"matmul": macs}}), x


def audio(factory, shape):
    def make(gen):
        return factory(gen), torch.randn(*shape, generator=gen)
    return make


MODELS = {
    "resnet18": (1, vision(torchvision.models.resnet18)),
    "squeezenet1_1": (2, vision(torchvision.models.squeezenet1_1)),
    "mobilenet_v2": (3, vision(torchvision.models.mobilenet_v2)),
    # 2 layers, d_model 64, input [1,16,64].
    "transformer_encoder": (4, encoder(64, 4, 128, 2, 16)),
    # Benchmark models (benchmarks/vs-ort), not exported by default.
    "mobilenet_v3_small": (5, vision(torchvision.models.mobilenet_v3_small)),
    # 4 layers, d_model 256, 4 heads, feed-forward 1024, GELU (exported as
    # Erf), input [1,128,256].
    "transformer_d256": (6, encoder(256, 4, 1024, 4, 128, activation="gelu")),
    # More torchvision networks for benchmarks/vs-ort --models (beyond the
    # five of the issue; no mechanism is tuned to them): inception blocks
    # (concatenations), channel shuffles, squeeze-excite with SiLU, dense
    # concatenation, a NAS-designed network.
    "googlenet": (7, vision(lambda weights: torchvision.models.googlenet(
        weights=weights, aux_logits=False, init_weights=True))),
    "shufflenet_v2_x1_0": (8, vision(torchvision.models.shufflenet_v2_x1_0)),
    "efficientnet_b0": (9, vision(torchvision.models.efficientnet_b0)),
    "densenet121": (10, vision(torchvision.models.densenet121)),
    "mnasnet1_0": (11, vision(torchvision.models.mnasnet1_0)),
    "resnet50": (12, vision(torchvision.models.resnet50)),
    # Speech and audio (benchmarks/audio).
    "wakeword_frontend": (13, audio(WakeWordFrontEnd, (1, 1760))),
    "vad": (14, audio(VoiceActivity, (1, 512))),
    "gru_kws": (15, audio(lambda gen: GruKeywords(), (1, 49, 40))),
    "wakeword_stft": (16, wakeword_stft),
    "unet_1024": (17, unet(1024)),
    "mobilenet_v3_large": (18, vision(torchvision.models.mobilenet_v3_large)),
}
# Transformers (benchmarks/transformers): tests/models/transformers.py.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformers as _transformers  # noqa: E402
MODELS.update({name: (100 + i, make) for i, (name, make) in
               enumerate(sorted(_transformers.factories().items()))})
VARIANTS = ("_qdq", "_int8", "_fp16", "_dynq")
DEFAULT_MODELS = ["resnet18", "squeezenet1_1", "mobilenet_v2", "transformer_encoder"]


def count_macs(model, x):
    """Multiply-accumulates of the convolutions and matrix products of one
    forward pass, counted at the ATen level (what ONNX Conv, Gemm and MatMul
    compute): {"macs": total, "flops": 2 * total, "by_op": {...}}."""
    from torch.utils._python_dispatch import TorchDispatchMode
    aten = torch.ops.aten

    def numel(shape):
        n = 1
        for s in shape:
            n *= int(s)
        return n

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.by_op = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            p = func.overloadpacket
            macs = 0
            if p is aten.convolution:  # out [N,M,...], weight [M,C/groups,k...]
                macs = numel(out.shape) * numel(args[1].shape[1:])
            elif p in (aten.mm, aten.bmm):  # [(B,)M,K] x [(B,)K,N]
                macs = numel(args[0].shape) * int(args[1].shape[-1])
            elif p in (aten.addmm, aten.baddbmm):  # bias + a @ b
                macs = numel(args[1].shape) * int(args[2].shape[-1])
            if macs:
                name = p.__name__
                self.by_op[name] = self.by_op.get(name, 0) + macs
            return out

    counter = Counter()
    with counter:  # grad mode on, as for the export (no fused fast paths)
        model(x)
    total = sum(counter.by_op.values())
    return {"macs": total, "flops": 2 * total, "by_op": counter.by_op}


QUANTIZABLE = {
    "resnet18": torchvision.models.quantization.resnet18,
    "mobilenet_v2": torchvision.models.quantization.mobilenet_v2,
}


def quantized_qdq(base, gen, model, x):
    """The quantizable torchvision `base` with `model`'s weights, quantized
    by PyTorch (qnnpack) after calibration on random inputs."""
    torch.backends.quantized.engine = "qnnpack"
    q = QUANTIZABLE[base](weights=None, quantize=False)
    q.load_state_dict(model.state_dict())
    q.eval()
    q.fuse_model()
    q.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(q, inplace=True)
    with torch.no_grad():
        for _ in range(16):
            q(torch.randn(x.shape, generator=gen))
    torch.ao.quantization.convert(q, inplace=True)
    return q


def export(name, out_dir, flops=False):
    variant = ""
    base = name
    for suffix in VARIANTS:
        if name.endswith(suffix) and name[: -len(suffix)] in MODELS:
            base, variant = name[: -len(suffix)], suffix
    seed, make = MODELS[base]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(1000 + seed)
    model, x = make(gen)
    if not isinstance(model, OnnxModel):
        model.eval()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    direct = isinstance(model, OnnxModel)
    macs = (model.macs if direct else count_macs(model, x)) if flops else None
    if variant == "_qdq":
        model = quantized_qdq(base, gen, model, x)
    elif variant == "_int8":
        samples = torch.randn((16,) + tuple(x.shape), generator=gen)
        np.save(os.path.join(d, "calibration.npy"), samples.numpy().astype("<f4"))
        with open(os.path.join(d, "mlcc.args"), "w") as f:
            f.write("--quantize int8 --calibrate input=@DIR@/calibration.npy\n")
        with open(os.path.join(d, "check"), "w") as f:
            f.write("quantized\n")
    elif variant in ("_fp16", "_dynq"):
        with open(os.path.join(d, "check"), "w") as f:
            f.write("float16\n" if variant == "_fp16" else "dynq\n")
    path = os.path.join(d, "model.onnx")
    # Grad mode stays on: under no_grad, eval-mode TransformerEncoderLayer takes
    # a fused fast path (aten::_transformer_encoder_layer_fwd) with no ONNX export.
    if direct:
        import onnx
        onnx.save(model.proto, path + ".tmp")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, x, path + ".tmp", input_names=["input"],
                              output_names=["output"], opset_version=OPSET,
                              do_constant_folding=True)
    if variant in ("_fp16", "_dynq"):
        import onnx
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import to_dynamic_quant
        import to_float16
        convert = to_float16.convert if variant == "_fp16" else to_dynamic_quant.convert
        onnx.save(convert(onnx.load(path + ".tmp")), path + ".tmp")
    os.replace(path + ".tmp", path)
    x.numpy().astype("<f4").tofile(os.path.join(d, "input.bin"))
    with open(os.path.join(d, "input.shape"), "w") as f:
        f.write(",".join(str(s) for s in x.shape) + "\n")
    if flops:
        with open(os.path.join(d, "flops.json"), "w") as f:
            json.dump(macs, f, indent=1, sort_keys=True)
            f.write("\n")
    print(f"  {name}: {os.path.getsize(path)} bytes, input {list(x.shape)}")


def main(argv):
    flops = len(argv) > 1 and argv[1] == "--flops"
    if flops:
        argv = argv[:1] + argv[2:]
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    names = argv[2:] or DEFAULT_MODELS
    for n in names:
        if n not in MODELS and not any(
                (n.endswith(s) and n[: -len(s)] in (QUANTIZABLE if s == "_qdq" else MODELS))
                for s in VARIANTS):
            print(f"unknown model {n}; known: {' '.join(MODELS)}", file=sys.stderr)
            return 2
    torch.set_num_threads(1)
    for n in names:
        export(n, argv[1], flops)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
