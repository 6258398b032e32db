#!/usr/bin/python3
"""Converts a float32 ONNX model to the form ONNX Runtime's quantize_dynamic
writes (QOperator, weight_type int8, per tensor): every MatMul whose second
operand is a 2-D float initializer becomes

  DynamicQuantizeLinear(A) -> A_q (uint8), A_scale, A_zero_point
  MatMulInteger(A_q, W_q, A_zero_point, W_zero_point) -> int32
  Cast(to float) -> Mul(A_scale * W_scale)

with W_q = round(W / W_scale) in int8, W_scale = max|W| / 127 and zero point
0 (symmetric), as quantize_dynamic does for int8 weights. The activations'
scale is computed on every run (per tensor, uint8). Other nodes stay float.

Usage: /usr/bin/python3 to_dynamic_quant.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def convert(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    nodes, added = [], []
    for n in g.node:
        w = inits.get(n.input[1]) if n.op_type == "MatMul" and n.domain == "" else None
        if w is None or w.data_type != TensorProto.FLOAT or len(w.dims) != 2:
            nodes.append(n)
            continue
        a = numpy_helper.to_array(w)
        scale = np.float32(max(np.abs(a).max(), 1e-12) / 127.0)
        q = np.clip(np.round(a / scale), -127, 127).astype(np.int8)
        base = n.name or n.output[0]
        wq, ws, wz = base + "_W_quantized", base + "_W_scale", base + "_W_zero_point"
        added += [numpy_helper.from_array(q, wq), numpy_helper.from_array(np.array(scale), ws),
                  numpy_helper.from_array(np.array(0, np.int8), wz)]
        aq, as_, az = base + "_A_quantized", base + "_A_scale", base + "_A_zero_point"
        acc, accf, s = base + "_int32", base + "_float", base + "_scale"
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [n.input[0]], [aq, as_, az], name=base + "_quant"),
            helper.make_node("MatMulInteger", [aq, wq, az, wz], [acc], name=base + "_MatMulInteger"),
            helper.make_node("Cast", [acc], [accf], name=base + "_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [as_, ws], [s], name=base + "_scales"),
            helper.make_node("Mul", [accf, s], [n.output[0]], name=base + "_rescale"),
        ]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(added)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    onnx.save(convert(onnx.load(argv[1])), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
