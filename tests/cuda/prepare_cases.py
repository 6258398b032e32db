#!/usr/bin/env python3
"""prepare_cases.py - the data of conformance cases for tests/cuda/run-on-gpu.sh.

    prepare_cases.py SUITE CASES_CSV WORK

CASES_CSV is the CSV of an mlcc-conformance --compile-only run whose case
folders (WORK/FOLDER/CASE, holding m.cu and m.h) are kept. For every passed
case this writes, next to m.cu, the raw bytes of each test data set's inputs
that the library still takes (inputs the harness froze are compiled in) as
setK_inI.bin, the expected outputs as setK_outJ.bin, and meta.json with the
outputs' element types and the case's tolerance (rtol 1e-3, atol 1e-7 unless
its data.json says otherwise, as on the host).
"""
import csv
import json
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# Element types that Debian's onnx (1.12) cannot turn into numpy arrays
# (bfloat16 it widens to float32): their bytes are written as the library
# holds them (bfloat16 two bytes, float8 one), from raw_data or, per the
# format, the bit patterns in int32_data.
NARROW = {16: ("bfloat16", np.uint16), 17: ("float8", np.uint8), 18: ("float8", np.uint8),
          19: ("float8", np.uint8), 20: ("float8", np.uint8), 24: ("float8", np.uint8)}


def tensor_bytes(t):
    """The dense bytes of TensorProto t and the dtype name compare_outputs.py reads."""
    if t.data_type in NARROW:
        name, bits = NARROW[t.data_type]
        if t.raw_data:
            return bytes(t.raw_data), name
        return np.array(t.int32_data, dtype=np.int64).astype(bits).tobytes(), name
    a = numpy_helper.to_array(t)
    if a.dtype == object:
        return None, str(a.dtype)
    return np.ascontiguousarray(a).tobytes(), str(a.dtype)


def main():
    suite, cases_csv, work = sys.argv[1:4]
    n = 0
    with open(cases_csv) as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "passed"]
    for r in rows:
        case_dir = os.path.join(suite, r["folder"], r["case"])
        out_dir = os.path.join(work, r["folder"], r["case"])
        model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
        inits = {i.name for i in model.graph.initializer}
        names = [i.name for i in model.graph.input if i.name not in inits]
        frozen = set(r["frozen"].split()) if r["frozen"] else set()
        meta = {"rtol": 1e-3, "atol": 1e-7, "sets": []}
        data_json = os.path.join(case_dir, "data.json")
        if os.path.exists(data_json):
            text = open(data_json).read()
            for key in ("rtol", "atol"):
                m = re.search('"%s"\\s*:\\s*([-+0-9.eE]+)' % key, text)
                if m:
                    meta[key] = float(m.group(1))
        sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
        for k, s in enumerate(sets):
            d = os.path.join(case_dir, s)
            ins = sorted((f for f in os.listdir(d) if f.startswith("input_")),
                         key=lambda f: int(f[6:-3]))
            outs = sorted((f for f in os.listdir(d) if f.startswith("output_")),
                          key=lambda f: int(f[7:-3]))
            entry = {"inputs": [], "outputs": [], "dtypes": []}
            for i, name in enumerate(names):
                if name in frozen or i >= len(ins):
                    continue
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(d, ins[i]), "rb").read())
                path = "set%d_in%d.bin" % (k, i)
                data, _ = tensor_bytes(t)
                if data is not None:
                    open(os.path.join(out_dir, path), "wb").write(data)
                entry["inputs"].append(path)
            for j, o in enumerate(outs):
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(d, o), "rb").read())
                data, dtype = tensor_bytes(t)
                path = "set%d_out%d.bin" % (k, j)
                open(os.path.join(out_dir, path), "wb").write(data or b"")
                entry["outputs"].append(path)
                entry["dtypes"].append(dtype)
            meta["sets"].append(entry)
        with open(os.path.join(out_dir, "meta.json"), "w") as f:
            json.dump(meta, f)
        n += 1
    print("prepared %d cases" % n)


if __name__ == "__main__":
    main()
