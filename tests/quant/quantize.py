#!/usr/bin/python3
"""Models and checks for tests/quant/quantize.sh (mlcc --quantize, fuse-qdq).

  quantize.py make-qdq DIR       a small CNN (conv+bn+relu, residual add,
                                 max pool, global average pool, linear)
                                 quantized by PyTorch (qnnpack) and exported
                                 in QDQ form: DIR/model.onnx, DIR/input.bin,
                                 DIR/shape, DIR/step (the output's
                                 quantization step); exit 77 without PyTorch
  quantize.py make-outlier DIR   a float MatMul -> Relu -> MatMul model whose
                                 input has rare outliers in the calibration
                                 samples (DIR/samples.npy) but not in the
                                 test input (DIR/input.bin); the float
                                 reference output is DIR/reference.bin
  quantize.py make-plain DIR     a model with no quantizable node (Softmax)
                                 and samples of the wrong shape and dtype
  quantize.py check-qdq MODEL SAMPLES.npy DIR   the ONNX checker on MODEL (a
                                 realized QDQ model: QuantizeLinear nodes, int8
                                 weights); writes samples 3, 77, 150 as
                                 DIR/xK.bin and the output step as DIR/step
  quantize.py compare A.bin B.bin STEP   max |A - B| in steps of STEP; exit 1
                                 when above 1 step
  quantize.py rms OUT.bin REF.bin        prints the RMS error of OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(path, array):
    np.ascontiguousarray(array, dtype=np.float32).tofile(path)


def make_qdq(d):
    try:
        import torch
        import torch.nn as nn
    except ImportError:
        print("SKIP: PyTorch is not installed (python3-torch)")
        sys.exit(77)
    torch.backends.quantized.engine = "qnnpack"
    torch.manual_seed(7)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = torch.ao.quantization.QuantStub()
            self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(16)
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
            self.relu2 = nn.ReLU()
            # A depthwise convolution (the dot-product taps where the vectors
            # have 8 or more int32 lanes).
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
            self.relu3 = nn.ReLU()
            self.add = nn.quantized.FloatFunctional()
            self.pool = nn.MaxPool2d(2)
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, 10)
            self.dequant = torch.ao.quantization.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            y = self.relu1(self.bn1(self.conv1(x)))
            z = self.relu3(self.dw(self.relu2(self.conv2(y))))
            y = self.add.add(y, z)
            y = self.gap(self.pool(y))
            return self.dequant(self.fc(torch.flatten(y, 1)))

    m = Net().eval()
    with torch.no_grad():
        m.bn1.running_mean.uniform_(-0.2, 0.2)
        m.bn1.running_var.uniform_(0.5, 1.5)
    torch.ao.quantization.fuse_modules(m, [["conv1", "bn1", "relu1"], ["conv2", "relu2"], ["dw", "relu3"]],
                                       inplace=True)
    m.qconfig = torch.ao.quantization.get_default_qconfig("qnnpack")
    torch.ao.quantization.prepare(m, inplace=True)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(16):
            m(torch.rand(1, 3, 16, 16, generator=g) * 2 - 1)
    torch.ao.quantization.convert(m, inplace=True)
    x = torch.rand(1, 3, 16, 16, generator=g) * 2 - 1
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(m, x, os.path.join(d, "model.onnx"), opset_version=13,
                      input_names=["input"], output_names=["output"])
    save(os.path.join(d, "input.bin"), x.numpy())
    with open(os.path.join(d, "shape"), "w") as f:
        f.write("1,3,16,16\n")
    # The output's step: the scale of the last QuantizeLinear (fc's output).
    model = onnx.load(os.path.join(d, "model.onnx"))
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
              for n in model.graph.node if n.op_type == "Constant"}
    consts.update({i.name: numpy_helper.to_array(i) for i in model.graph.initializer})
    last_q = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][-1]
    with open(os.path.join(d, "step"), "w") as f:
        f.write(f"{float(consts[last_q.input[1]]):.9g}\n")


def make_outlier(d):
    rng = np.random.default_rng(11)
    w1 = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    w2 = (rng.standard_normal((64, 16)) / 8).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["y"])],
        "outlier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 16])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    # Calibration: normal values with one outlier of magnitude 60 in every
    # 2000 (a sensor glitch); the test input has none.
    samples = rng.standard_normal((16, 64, 64)).astype(np.float32)
    glitch = rng.random(samples.shape) < 1 / 2000
    samples[glitch] = 60.0 * np.sign(rng.standard_normal(int(glitch.sum())))
    np.save(os.path.join(d, "samples.npy"), samples)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    save(os.path.join(d, "input.bin"), x)
    ref = np.maximum(x.astype(np.float64) @ w1, 0) @ w2
    save(os.path.join(d, "reference.bin"), ref)


def make_plain(d):
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    os.makedirs(d, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
              os.path.join(d, "plain.onnx"))
    np.save(os.path.join(d, "samples_plain.npy"), np.zeros((4, 2, 8), np.float32))
    np.save(os.path.join(d, "wrong_shape.npy"), np.zeros((4, 2, 9), np.float32))
    np.save(os.path.join(d, "wrong_dtype.npy"), np.zeros((4, 64, 64), np.float64))
    with open(os.path.join(d, "not_npy.npy"), "wb") as f:
        f.write(b"this is not a NumPy file")


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd = argv[1]
    if cmd == "make-qdq":
        make_qdq(argv[2])
    elif cmd == "make-outlier":
        make_outlier(argv[2])
    elif cmd == "make-plain":
        make_plain(argv[2])
    elif cmd == "check-qdq":
        model = onnx.load(argv[2])
        onnx.checker.check_model(model)
        ops = [n.op_type for n in model.graph.node]
        inits = {i.name: i for i in model.graph.initializer}
        int8 = [i for i in model.graph.initializer if i.data_type == TensorProto.INT8]
        if "QuantizeLinear" not in ops or not int8:
            print("no QuantizeLinear or no int8 weights in the realized model")
            return 1
        # The step of the output: the scale of the DequantizeLinear writing it.
        out = model.graph.output[0].name
        dq = [n for n in model.graph.node if n.output[0] == out]
        if not dq or dq[0].op_type != "DequantizeLinear":
            print("the output is not written by a DequantizeLinear")
            return 1
        step = float(numpy_helper.to_array(inits[dq[0].input[1]]))
        samples = np.load(argv[3])
        for k in (3, 77, 150):
            save(os.path.join(argv[4], f"x{k}.bin"), samples[k])
        with open(os.path.join(argv[4], "step"), "w") as f:
            f.write(f"{step:.9g}\n")
        print(f"  the realized model: {len(ops)} nodes, {len(int8)} int8 initializers, checker ok")
    elif cmd == "compare":
        a, b = np.fromfile(argv[2], "<f4"), np.fromfile(argv[3], "<f4")
        step = float(argv[4])
        d = np.abs(a.astype(np.float64) - b).max() / step
        print(f"max difference {d:.2f} output steps of {step:.4g}")
        return 0 if d <= 1.0 + 1e-6 else 1
    elif cmd == "rms":
        a, b = np.fromfile(argv[2], "<f4"), np.fromfile(argv[3], "<f4")
        print(f"{np.sqrt(np.mean((a.astype(np.float64) - b) ** 2)):.6g}")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
