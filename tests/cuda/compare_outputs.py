#!/usr/bin/env python3
"""compare_outputs.py - checks a GPU run of a conformance case.

    compare_outputs.py CASE_DIR SET

Compares CASE_DIR/setSET_gpuJ.bin with setSET_outJ.bin for every output in
meta.json: floats with |got - want| <= atol + rtol * |want| (NaN where NaN
is expected; bfloat16 widened to float32), everything else (float8 as
bit patterns) exactly. Exit 0 when all match, 1 otherwise
(with the first difference printed).
"""
import json
import os
import sys

import numpy as np


def read(path, dtype):
    """A raw output file as numpy: bfloat16 widened to float32 (exactly),
    float8 as its bit patterns (compared exactly)."""
    if dtype == "bfloat16":
        return (np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    if dtype == "float8":
        return np.fromfile(path, dtype=np.uint8)
    return np.fromfile(path, dtype=dtype)


def main():
    case, k = sys.argv[1], int(sys.argv[2])
    meta = json.load(open(os.path.join(case, "meta.json")))
    s = meta["sets"][k]
    for j, (want_path, dtype) in enumerate(zip(s["outputs"], s["dtypes"])):
        want, got = (read(os.path.join(case, p), dtype)
                     for p in (want_path, "set%d_gpu%d.bin" % (k, j)))
        if got.shape != want.shape:
            print("output %d: %d elements, expected %d" % (j, got.size, want.size))
            return 1
        if np.issubdtype(want.dtype, np.floating):
            w, g = want.astype(np.float64), got.astype(np.float64)
            ok = np.isclose(g, w, rtol=meta["rtol"], atol=meta["atol"], equal_nan=True)
        else:
            ok = got == want
        if not ok.all():
            i = int(np.argmin(ok))
            print("output %d: element %d is %r, expected %r" % (j, i, got[i], want[i]))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
