#!/usr/bin/python3
"""The measuring half of benchmarks/bounded/models.sh (see there).
Usage: models_run.py MLCC WORK MODELS ITERS ROUNDS [check]
With `check` (the ctest models-bounded): only the bounded library against
ONNX Runtime at each length, no fixed library and no timing; exit status 1
when a library does not compile or an output differs."""
import os
import re
import statistics
import subprocess
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
mlcc, work, names, iters, rounds = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), \
    int(sys.argv[5])
check_only = len(sys.argv) > 6 and sys.argv[6] == "check"
failures = 0
D, HEADS, DH, LAYERS = 128, 4, 32, 2
# name: (dimension, MIN, MAX, lengths); 70: a whole block of 64 query rows, then
# 6 rows in the attention's few-rows form
SPECS = {
    "encoder_ln": ("seq", 1, 256, [1, 7, 64, 70, 256]),
    "bert": ("seq", 1, 128, [1, 7, 64, 128]),
    "gpt_prompt": ("seq", 1, 256, [1, 7, 70, 128, 256]),
    "gpt_decode": ("past", 0, 255, [0, 7, 128, 255]),
}


def inputs(name, n, rng):
    """[(array, ort type)] for model `name` at length n."""
    if name == "encoder_ln":
        return [rng.standard_normal((1, n, D)).astype(np.float32)]
    if name == "bert":
        mask = np.ones((1, n), np.int64)
        mask[0, (n * 3) // 4 + 1:] = 0  # padding at the end
        return [rng.integers(0, 1000, (1, n)).astype(np.int64), mask]
    if name == "gpt_prompt":
        return [rng.integers(0, 2000, (1, n)).astype(np.int64)]
    return [rng.integers(0, 2000, (1, 1)).astype(np.int64)] + \
        [rng.standard_normal((1, HEADS, n, DH)).astype(np.float32) for _ in range(2 * LAYERS)]


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def library(model, dim, value, d):
    """Compiles `model` with --dim dim=value into directory d; returns the
    report (dict) and the timer's path."""
    import json
    os.makedirs(d, exist_ok=True)
    sh([mlcc, model, "--dim", "%s=%s" % (dim, value), "--name", "m", "-o", os.path.join(d, "libm.a"),
        "--report", os.path.join(d, "report.json")])
    sh(["cc", "-O2", "-I" + d, "-I" + os.path.join(root, "runtime-c"), "-o", os.path.join(d, "time"),
        os.path.join(here, "time_any.c"), os.path.join(d, "libm.a"), "-lm"])
    return json.load(open(os.path.join(d, "report.json"))), os.path.join(d, "time")


def timed(cmd):
    out = sh(cmd)
    return float(re.search(r"ms ([0-9.]+)", out).group(1))


def main():
    global failures
    sys.path.insert(0, here)
    import models as exporter
    rows = []
    if not check_only:
        print("%-11s %5s  %-4s %9s %9s %9s  %7s %7s" % ("model", "len", "ok", "bounded", "fixed", "ORT",
                                                        "b/fixed", "b/ORT"))
    for name in names:
        dim, lo, hi, lengths = SPECS[name]
        model = os.path.join(work, name + ".onnx")
        if not os.path.exists(model):
            exporter.export(name, model)
        try:
            brep, btime = library(model, dim, "%d..%d" % (lo, hi), os.path.join(work, name, "bounded"))
        except subprocess.CalledProcessError as e:
            print("%-11s  bounded library: %s" % (name, e.stderr.strip().splitlines()[-1]))
            failures += 1
            continue
        rng = np.random.default_rng(0)
        for n in lengths:
            d = os.path.join(work, name, "at%d" % n)
            os.makedirs(d, exist_ok=True)
            ins = inputs(name, n, rng)
            paths = []
            for i, a in enumerate(ins):
                p = os.path.join(d, "in%d.bin" % i)
                a.tofile(p)
                paths.append(p)
            specs = ["%s:%s@%s" % (p, ",".join(map(str, a.shape)), "int64" if a.dtype == np.int64 else "float32")
                     for p, a in zip(paths, ins)]
            if not check_only:
                frep, ftime = library(model, dim, str(n), os.path.join(d, "fixed"))
            nout = 1 if name in ("encoder_ln", "bert") else 1 + 2 * LAYERS
            ort_out = [os.path.join(d, "ort%d.bin" % i) for i in range(nout)]
            b_out = [os.path.join(d, "b%d.bin" % i) for i in range(nout)]
            f_out = [os.path.join(d, "f%d.bin" % i) for i in range(nout)]
            env = dict(os.environ)
            tb, tf, to = [], [], []
            for r in range(rounds):
                out = sh(["node", os.path.join(root, "tests", "models", "ort_run.js"), model, str(iters)] + specs +
                         ["--"] + ort_out, env=env)
                if check_only:  # outputs only
                    sh([btime, "-d", str(n), "1"] + paths + ["--"] + b_out)
                    continue
                to.append(float(re.search(r"ort_ms_per_inference ([0-9.]+)", out).group(1)))
                tb.append(timed([btime, "-d", str(n), str(iters)] + paths + ["--"] + b_out))
                tf.append(timed([ftime, str(iters)] + paths + ["--"] + f_out))
            ok = True
            worst = 0.0
            for o, b in zip(ort_out, b_out):
                ref = np.fromfile(o, np.float32)
                got = np.fromfile(b, np.float32)[:ref.size]
                scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1e-30)
                err = float(np.abs(got - ref).max()) / scale if ref.size else 0.0
                worst = max(worst, err)
                ok &= err <= 1e-4
            failures += not ok
            if check_only:
                print("%-11s %5d  %-4s (max|d|/max|ORT| %.1e)" % (name, n, "ok" if ok else "FAIL", worst))
                continue
            mb, mf, mo = statistics.median(tb), statistics.median(tf), statistics.median(to)
            print("%-11s %5d  %-4s %9.3f %9.3f %9.3f  %7.2f %7.2f   (max|d|/max|ORT| %.1e)" %
                  (name, n, "ok" if ok else "FAIL", mb, mf, mo, mb / mf, mb / mo, worst))
            sys.stdout.flush()
            if n == hi:
                rows.append((name, brep, frep))
    if check_only:
        return
    print()
    print("%-11s %12s %12s %6s %10s %10s %6s" % ("at MAX", "arena", "fixed arena", "ratio", "code", "fixed code",
                                                   "ratio"))
    for name, b, f in rows:
        print("%-11s %12d %12d %6.2f %10d %10d %6.2f" % (
            name, b["arena_bytes"], f["arena_bytes"], b["arena_bytes"] / max(f["arena_bytes"], 1),
            b["code_bytes"], f["code_bytes"], b["code_bytes"] / max(f["code_bytes"], 1)))


main()
sys.exit(1 if failures else 0)
