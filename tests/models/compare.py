#!/usr/bin/python3
"""Compares two raw float32 files: mlcc's output against ONNX Runtime's.

  compare.py MLCC.bin ORT.bin [REL_TOL]

Passes when max |mlcc - ort| <= REL_TOL * max |ort| (REL_TOL default 1e-4)
and neither output holds NaN or infinity. Prints one line:

  max_abs_diff D max_abs_ort M ratio R PASS|FAIL [reason]

and, on failure, the first element that exceeds the tolerance. Exit status:
0 pass, 1 fail, 2 bad usage or unreadable files.
"""
import sys

import numpy as np


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    tol = float(argv[3]) if len(argv) == 4 else 1e-4
    try:
        got = np.fromfile(argv[1], dtype="<f4").astype(np.float64)
        ref = np.fromfile(argv[2], dtype="<f4").astype(np.float64)
    except OSError as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    if got.size != ref.size or ref.size == 0:
        print(f"max_abs_diff nan max_abs_ort nan ratio nan FAIL "
              f"(mlcc has {got.size} elements, ort {ref.size})")
        return 1
    diff = np.abs(got - ref)
    max_ref = float(np.max(np.abs(ref)))
    max_diff = float(np.max(diff))
    ratio = max_diff / max_ref if max_ref > 0 else (0.0 if max_diff == 0 else float("inf"))
    reason = ""
    if not np.all(np.isfinite(ref)):
        reason = "ONNX Runtime output is not finite"
    elif not np.all(np.isfinite(got)):
        reason = f"mlcc output has {int(np.sum(~np.isfinite(got)))} NaN/inf elements"
    elif max_diff > tol * max_ref:
        i = int(np.argmax(diff > tol * max_ref))
        reason = (f"first element over tolerance: [{i}] mlcc {got[i]:.9g} "
                  f"ort {ref[i]:.9g} (tolerance {tol * max_ref:.3g})")
    ok = not reason
    print(f"max_abs_diff {max_diff:.3e} max_abs_ort {max_ref:.3e} ratio {ratio:.3e} "
          f"{'PASS' if ok else 'FAIL'}" + (f" ({reason})" if reason else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
