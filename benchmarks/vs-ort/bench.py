#!/usr/bin/python3
"""The measuring half of benchmarks/vs-ort/run (which builds everything first).

  bench.py --work DIR --models a,b --threads 1,2 --rounds R --iters N
           --peak PEAK_BINARY [--mlcc-label TEXT] [--ort-version V] [--target-ms MS]

For every model DIR/models/NAME (model.onnx, input.bin, input.shape,
flops.json, mlcc/harness, mlcc/status, mlcc/calls, mlcc/threads) and every
thread count T, starts ONNX Runtime (node ort_bench.js) and the mlcc harness
as servers, then alternates them for R rounds, each engine running N timed
inferences per round (N 0: chosen from the warm-up time so that a round
takes about --target-ms per engine). The figure is the median over all
rounds. Outputs are compared with tests/models/compare.py (max |mlcc - ort|
<= 1e-4 * max |ort|, mlcc with T threads against ORT with T threads).
Prints the table on stdout and the progress on stderr.
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPARE = os.path.join(ROOT, "tests", "models", "compare.py")
PAUSE_S = 0.03  # between two measurements: lets spinning pool threads sleep


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Server:
    """A harness.c or ort_bench.js process: 'ready MS', then 'time N' -> 'times ...'."""

    def __init__(self, argv, log_path):
        self.log = open(log_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, text=True, bufsize=1)
        self.warm_ms = float(self._expect("ready")[0])

    def _expect(self, word):
        line = self.p.stdout.readline()
        parts = line.split()
        if not parts or parts[0] != word:
            self.p.kill()
            self.p.wait()
            self.log.flush()
            with open(self.log.name) as f:
                tail = f.read().strip().splitlines()[-3:]
            raise RuntimeError(" | ".join(tail) or f"exit status {self.p.returncode}")
        return parts[1:]

    def time(self, n):
        self.p.stdin.write(f"time {n}\n")
        self.p.stdin.flush()
        return [float(t) for t in self._expect("times")]

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def probe_peak(binary, threads, tries=3):
    """Best of a few 0.3 s runs of peak.c: (GFLOP/s, description)."""
    best, desc = 0.0, ""
    for _ in range(tries):
        out = subprocess.run([binary, str(threads)], check=True, capture_output=True,
                             text=True).stdout.split()
        g = float(out[1])
        if g > best:
            best = g
            desc = f"{out[5]}, {out[7]} lanes, {out[9]} chains"
    return best, desc


def compare_quantized(mlcc_bin, ort_bin):
    """mlcc's int8 library against ORT's float run: top-1 and the largest
    difference relative to the largest output."""
    import numpy as np
    a, b = np.fromfile(mlcc_bin, "<f4"), np.fromfile(ort_bin, "<f4")
    if a.size != b.size or a.size == 0:
        return "MISMATCH ?"
    rel = float(np.abs(a.astype(np.float64) - b).max() / max(np.abs(b).max(), 1e-30))
    return ("int8 top1 " + ("same" if a.argmax() == b.argmax() else "DIFFERS") +
            f" {rel:.0e}")


def compare(mlcc_bin, ort_bin, quantized=False):
    if quantized:
        return compare_quantized(mlcc_bin, ort_bin)
    r = subprocess.run([sys.executable, COMPARE, mlcc_bin, ort_bin], capture_output=True,
                       text=True)
    words = r.stdout.split()
    # "max_abs_diff D max_abs_ort M ratio R PASS|FAIL [reason]"
    if len(words) >= 7 and words[6] in ("PASS", "FAIL"):
        return ("ok" if words[6] == "PASS" else "MISMATCH") + f" {float(words[5]):.0e}"
    return "MISMATCH ?"


def measure(name, d, threads, args):
    """Returns a dict: ort_ms, mlcc_ms (None when not run), check, note."""
    res = {"ort_ms": None, "mlcc_ms": None, "check": "-", "note": ""}
    shape = read(os.path.join(d, "input.shape"))
    inp = os.path.join(d, "input.bin")
    mdir = os.path.join(d, "mlcc")
    ort_out = os.path.join(d, f"ort{threads}.bin")
    mlcc_out = os.path.join(d, f"mlcc{threads}.bin")
    for p in (ort_out, mlcc_out):
        if os.path.exists(p):
            os.remove(p)
    status = read(os.path.join(mdir, "status"), "not compiled")
    mt = read(os.path.join(mdir, "threads"), "no")
    run_mlcc = status == "ok" and (threads == 1 or mt == "yes")
    if status != "ok":
        res["note"] = f"mlcc: {status}"
    elif not run_mlcc:
        res["note"] = f"mlcc {threads} threads: {mt}"

    servers = {}
    try:
        servers["ort"] = Server(["node", os.path.join(HERE, "ort_bench.js"),
                                 os.path.join(d, "model.onnx"), str(threads),
                                 f"{inp}:{shape}", "--", ort_out],
                                os.path.join(d, f"ort{threads}.log"))
    except (RuntimeError, OSError) as e:
        res["note"] = f"ONNX Runtime failed: {e}"
        return res
    if run_mlcc:
        try:
            servers["mlcc"] = Server([os.path.join(mdir, "harness"), str(threads), inp, "--",
                                      mlcc_out], os.path.join(d, f"harness{threads}.log"))
        except (RuntimeError, OSError) as e:
            res["note"] = f"mlcc harness failed: {e}"
    samples = {k: [] for k in servers}
    iters = {}
    for k, s in servers.items():
        iters[k] = args.iters or max(1, min(1000, round(args.target_ms / max(s.warm_ms, 1e-3))))
    order = list(servers)
    try:
        for r in range(args.rounds):
            for k in (order if r % 2 == 0 else order[::-1]):
                time.sleep(PAUSE_S)
                samples[k] += servers[k].time(iters[k])
    except (RuntimeError, OSError) as e:
        res["note"] = f"a run failed: {e}"
        return res
    finally:
        for s in servers.values():
            s.close()
    if samples.get("ort"):
        res["ort_ms"] = statistics.median(samples["ort"])
    if samples.get("mlcc"):
        res["mlcc_ms"] = statistics.median(samples["mlcc"])
        res["check"] = compare(mlcc_out, ort_out, read(os.path.join(d, "check"), "") == "quantized")
    log(f"  {name}, {threads} thread{'s' if threads > 1 else ''}: ort "
        f"{fmt(res['ort_ms'], '.3f')} ms ({iters['ort']} x {args.rounds}), mlcc "
        + (f"{fmt(res['mlcc_ms'], '.3f')} ms ({iters['mlcc']} x {args.rounds}) {res['check']}"
           if "mlcc" in iters else "n/a"))
    return res


def fmt(x, spec, none="n/a"):
    return none if x is None else format(x, spec)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def cpu_name():
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--target-ms", type=float, default=400)
    ap.add_argument("--peak", required=True)
    ap.add_argument("--mlcc-label", default="mlcc")
    ap.add_argument("--ort-version", default="?")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    threads = [int(t) for t in args.threads.split(",") if t]

    load = read("/proc/loadavg", "? ? ?").split()[:3]
    peaks = {}
    for t in threads:
        peaks[t] = probe_peak(args.peak, t)
    log(f"fp32 peak: " + ", ".join(f"{t} thread{'s' if t > 1 else ''} {peaks[t][0]:.1f} GFLOP/s"
                                   for t in threads))

    info = {}
    results = {}
    for m in models:
        d = os.path.join(args.work, "models", m)
        fl = json.loads(read(os.path.join(d, "flops.json"), "{}") or "{}")
        info[m] = {"flops": fl.get("flops"), "calls": read(os.path.join(d, "mlcc", "calls"), "-"),
                   "shape": read(os.path.join(d, "input.shape")).replace(",", "x"),
                   "status": read(os.path.join(d, "mlcc", "status"), "not compiled")}
        for t in threads:
            results[m, t] = measure(m, d, t, args)

    # --- the table ----------------------------------------------------------
    w = max(18, max(len(m) for m in models) + 2)
    print()
    print(f"mlcc vs ONNX Runtime {args.ort_version}: fp32, batch 1, median ms per inference")
    print(f"  machine: {cpu_name()}, {os.cpu_count()} CPUs, load average {' '.join(load)} "
          f"at start")
    print("  fp32 peak (FMA probe, " + peaks[threads[0]][1] + "): "
          + ", ".join(f"{t} thread{'s' if t > 1 else ''} {peaks[t][0]:.1f} GFLOP/s"
                      for t in threads))
    if 1 in peaks and 2 in peaks and peaks[2][0] < 1.6 * peaks[1][0]:
        print(f"  note: the 2-thread peak is only {peaks[2][0] / peaks[1][0]:.2f}x the "
              "1-thread peak: other processes are using the CPUs, 2-thread figures are noisy")
    print(f"  mlcc: {args.mlcc_label}")
    print(f"  ORT: intraOpNumThreads = threads, graph optimizations all, sequential")
    print(f"  {args.rounds} rounds alternating ORT and mlcc, "
          + (f"{args.iters} inferences" if args.iters else
             f"~{args.target_ms / 1000:g} s of inferences") + " per engine per round")
    print(f"  GFLOP: 2 x MACs of Conv/Gemm/MatMul; %peak: mlcc GFLOP/s / fp32 peak at the "
          "same thread count;")
    print(f"  check: mlcc vs ORT, ok when max|mlcc-ort| <= 1e-4 max|ort| (relative error shown);"
          " calls: kernel calls (--emit kernels)")
    if any(m.endswith(("_qdq", "_int8")) for m in models):
        print("  NAME_qdq: PyTorch's int8 QDQ export, int8 in both engines; NAME_int8: quantized by"
              " mlcc (--quantize int8),")
        print("  ORT runs the float model (check: top-1 and max|diff| / max|ort|); neither is in"
              " the geometric means")
    print()
    print(f"{'model':<{w}}{'input':>14}{'GFLOP':>8}{'calls':>7}")
    for m in models:
        fl = info[m]["flops"]
        print(f"{m:<{w}}{info[m]['shape']:>14}{fmt(fl and fl / 1e9, '.3f', '?'):>8}"
              f"{info[m]['calls']:>7}")
    ratios = {}
    for t in threads:
        print()
        title = f"{t} thread{'s' if t > 1 else ''}"
        print(f"{title:<{w}}{'ORT ms':>10}{'mlcc ms':>10}{'mlcc/ORT':>10}{'ORT GF/s':>10}"
              f"{'mlcc GF/s':>11}{'%peak':>8}  check")
        ratios[t] = []
        peak = peaks[t][0]
        notes = [results[m, t]["note"] for m in models]
        shared = notes[0] if len(models) > 1 and len(set(notes)) == 1 else ""
        for m in models:
            r = results[m, t]
            fl = info[m]["flops"]
            ratio = r["mlcc_ms"] / r["ort_ms"] if r["mlcc_ms"] and r["ort_ms"] else None
            if ratio and not m.endswith(("_qdq", "_int8")):
                ratios[t].append(ratio)
            gf_ort = fl / r["ort_ms"] / 1e6 if fl and r["ort_ms"] else None
            gf_mlcc = fl / r["mlcc_ms"] / 1e6 if fl and r["mlcc_ms"] else None
            line = (f"{m:<{w}}{fmt(r['ort_ms'], '.3f'):>10}{fmt(r['mlcc_ms'], '.3f'):>10}"
                    f"{fmt(ratio, '.2f'):>9}{'x' if ratio else ' '}{fmt(gf_ort, '.1f'):>10}"
                    f"{fmt(gf_mlcc, '.1f'):>11}"
                    f"{fmt(gf_mlcc and 100 * gf_mlcc / peak, '.1f'):>7}{'%' if gf_mlcc else ' '}"
                    f"  {r['check']}")
            if r["note"] and not shared:
                line += f"  ({r['note']})"
            print(line.rstrip())
        if shared:
            print(f"  ({shared})")
    print()
    print("geometric mean of mlcc/ORT: " + ", ".join(
        f"{t} thread{'s' if t > 1 else ''} "
        + (f"{geomean(ratios[t]):.2f}x ({len(ratios[t])} fp32 models)" if ratios[t] else "n/a")
        for t in threads))
    return 0  # a benchmark: mismatches and failures are in the table


if __name__ == "__main__":
    sys.exit(main())
