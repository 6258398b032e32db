#!/usr/bin/python3
"""The fused attention kernels' share of this machine's float peak, per model
(benchmarks/transformers/run, after benchmarks/vs-ort/run --profile):

  attention_share.py --work WORK --models a,b --mlcc MLCC

For each model: the attention calls (kernels named *_attention in
WORK/models/NAME/mlcc/call-labels, `--emit kernels` order) and their time
from WORK/models/NAME/mlcc/profile (one line "call I MS" per kernel call, the
mean of the profile's runs); their work is the batched products Q.K^T and
P.V that PyTorch ran for the model (flops.json "bmm": 2 operations per
multiply-add, the causal models' hidden half included); the fp32 peak of one
thread is measured by WORK/peak (peak.c). Prints, per model, the attention
calls, their ms per inference and share of the model's time, GFLOP/s and %
of peak.
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    peak = max(float(subprocess.run([os.path.join(args.work, "peak"), "1"], check=True,
                                    capture_output=True, text=True).stdout.split()[1])
               for _ in range(3))
    print(f"\nfused attention kernels, 1 thread (fp32 peak {peak:.1f} GFLOP/s):")
    print(f"{'model':<16} {'calls':>5} {'attn ms':>9} {'of model':>9} {'GFLOP/s':>8} {'%peak':>6}")
    for m in args.models.split(","):
        d = os.path.join(args.work, "models", m)
        prof = os.path.join(d, "mlcc", "profile")
        if not os.path.exists(prof):
            print(f"{m:<16} no profile")
            continue
        ms = {}
        for line in open(prof):
            w = line.split()
            ms[int(w[1])] = float(w[2])
        labels = [line.split("(")[0] for line in open(os.path.join(d, "mlcc", "call-labels"))]
        attn = [i for i, k in enumerate(labels) if k.endswith("_attention")]
        t = sum(ms.get(i, 0.0) for i in attn)
        ops = 2 * json.load(open(os.path.join(d, "flops.json")))["by_op"].get("bmm", 0)
        total = sum(ms.values())
        if not attn or t <= 0:
            print(f"{m:<16} {0:>5} (no fused attention)")
            continue
        gf = ops / (t * 1e-3) / 1e9
        print(f"{m:<16} {len(attn):>5} {t:>9.3f} {100 * t / total:>8.1f}% {gf:>8.1f} "
              f"{100 * gf / peak:>5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
