#!/usr/bin/python3
"""Converts a float32 ONNX model to a float16 graph, as float16 models are
published ("model_fp16.onnx"): every float32 weight, constant and activation
becomes float16; the graph's float32 inputs and outputs stay float32, with a
Cast to float16 after each input and a Cast to float32 before each output.

Inputs that ONNX requires to be float32 whatever the data type (Resize's and
Upsample's scales) keep their type.

Usage: /usr/bin/python3 to_float16.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# (op type, input index) that stay float32 in a float16 graph
FLOAT32_ONLY = {("Resize", 2), ("Upsample", 1)}


def to_f16_tensor(t):
    a = numpy_helper.to_array(t).astype(np.float16)
    return numpy_helper.from_array(a, t.name)


def convert(model):
    g = model.graph
    keep = set()
    for n in g.node:
        for i, name in enumerate(n.input):
            if (n.op_type, i) in FLOAT32_ONLY:
                keep.add(name)
    # a kept name that a float16 consumer also reads would need two copies;
    # the exported models do not share them
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT and t.name not in keep:
            g.initializer[i].CopyFrom(to_f16_tensor(t))
    for n in g.node:
        if n.op_type == "Constant" and not any(o in keep for o in n.output):
            for a in n.attribute:
                if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                    a.t.CopyFrom(to_f16_tensor(a.t))
                elif a.name in ("value_float", "value_floats"):
                    raise SystemExit(f"{n.name}: Constant {a.name} not converted")
        if n.op_type == "ConstantOfShape":
            for a in n.attribute:
                if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                    a.t.CopyFrom(to_f16_tensor(a.t))
        if n.op_type == "Cast":
            for a in n.attribute:
                if a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
    for vi in g.value_info:
        tt = vi.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT and vi.name not in keep:
            tt.elem_type = TensorProto.FLOAT16

    casts = []
    for inp in g.input:
        if inp.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        inner = inp.name + "_f16"
        for n in g.node:
            for i, name in enumerate(n.input):
                if name == inp.name and (n.op_type, i) not in FLOAT32_ONLY:
                    n.input[i] = inner
        casts.append(helper.make_node("Cast", [inp.name], [inner], to=TensorProto.FLOAT16,
                                      name=inp.name + "_to_f16"))
    tail = []
    for out in g.output:
        if out.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        inner = out.name + "_f16"
        for n in g.node:
            for i, name in enumerate(n.output):
                if name == out.name:
                    n.output[i] = inner
            for i, name in enumerate(n.input):
                if name == out.name:
                    n.input[i] = inner
        tail.append(helper.make_node("Cast", [inner], [out.name], to=TensorProto.FLOAT,
                                     name=out.name + "_to_f32"))
    nodes = casts + list(g.node) + tail
    del g.node[:]
    g.node.extend(nodes)
    return model


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    model = convert(onnx.load(argv[1]))
    onnx.checker.check_model(model)
    onnx.save(model, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
