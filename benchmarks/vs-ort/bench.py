#!/usr/bin/python3
"""The measuring half of benchmarks/vs-ort/run (which builds everything first).

  bench.py --work DIR --models a,b --threads 1,2 --rounds R --iters N
           --peak PEAK_BINARY [--mlcc-label TEXT] [--ort-version V] [--target-ms MS]
           [--tune [--tune-budget B]]

For every model DIR/models/NAME (model.onnx, input.bin, input.shape,
flops.json, mlcc/harness, mlcc/status, mlcc/calls, mlcc/threads) and every
thread count T, starts ONNX Runtime (node ort_bench.js) and the mlcc harness
as servers, then alternates them for R rounds, each engine running N timed
inferences per round (N 0: chosen from the warm-up time so that a round
takes about --target-ms per engine). The figure is the median over all
rounds. Outputs are compared with tests/models/compare.py (max |mlcc - ort|
<= 1e-4 * max |ort|, mlcc with T threads against ORT with T threads).
Prints the table on stdout and the progress on stderr.

--tune adds a third engine, "tuned": the harness in DIR/models/NAME/mlcc-tuned
(mlcc --tune's library; status, calls, threads, search_s, again written by
run), started and measured like mlcc, alternating with ORT and mlcc in the
same rounds (the order reverses every round) and compared with ORT like mlcc;
and a fourth, the default library's harness again in a process of its own.
The table then gains tuned ms, tuned/ORT, tuned/def (tuned ms / default mlcc
ms), noise (the default again / mlcc: two identical libraries), search s (the tuned compile's wall seconds) and the tuned check; after
it, per thread count, the geometric means of mlcc/ORT and ORT/mlcc, default
and tuned, over the fp32 models where both ran (and the same over the
NAME_qdq / NAME_int8 models on a line of their own), then per model the
compile reading the database back (mlcc-tuned-again/compile_s against
mlcc/compile_s, and whether its libm.a is identical: mlcc-tuned/again).
--tune-budget only labels the table.
"""
import argparse
import json
import math
import os
import platform
import re
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


def snr_db(x_bin, ref_bin):
    """10 log10(sum ref^2 / sum (x - ref)^2) of two float32 files."""
    import numpy as np
    x, r = np.fromfile(x_bin, "<f4").astype(np.float64), np.fromfile(ref_bin, "<f4")
    if x.size != r.size or x.size == 0:
        return float("nan")
    noise = float(((x - r) ** 2).sum())
    return float("inf") if noise == 0 else 10 * np.log10(float((r.astype(np.float64) ** 2).sum()) / noise)


def compare(mlcc_bin, ort_bin, kind=""):
    """kind: the model's `check` file: "quantized" (mlcc's int8 against ORT's
    float), "float16" (both run a float16 graph: 2e-3 of the largest output,
    about 4 float16 units: the two engines round differently), "dynq" (both
    run ONNX Runtime's dynamically quantized form: 1e-2; the activations'
    scales make rounding ties land apart) or "" (1e-4)."""
    if kind == "quantized":
        return compare_quantized(mlcc_bin, ort_bin)
    tol = {"float16": ["2e-3"], "dynq": ["1e-2"]}.get(kind, [])
    r = subprocess.run([sys.executable, COMPARE, mlcc_bin, ort_bin] + tol, capture_output=True,
                       text=True)
    words = r.stdout.split()
    # "max_abs_diff D max_abs_ort M ratio R PASS|FAIL [reason]"
    if len(words) >= 7 and words[6] in ("PASS", "FAIL"):
        return ("ok" if words[6] == "PASS" else "MISMATCH") + f" {float(words[5]):.0e}"
    return "MISMATCH ?"


def measure(name, d, threads, args):
    """Returns a dict: ort_ms, mlcc_ms (None when not run), check, note, and with
    --tune tuned_ms and tuned_check."""
    res = {"ort_ms": None, "mlcc_ms": None, "check": "-", "note": ""}
    shape = read(os.path.join(d, "input.shape"))
    inp = os.path.join(d, "input.bin")
    ort_out = os.path.join(d, f"ort{threads}.bin")
    # The mlcc engines: key, library directory, output file, harness log.
    libs = [("mlcc", os.path.join(d, "mlcc"), os.path.join(d, f"mlcc{threads}.bin"),
             os.path.join(d, f"harness{threads}.log"))]
    if args.tune:
        res.update({"tuned_ms": None, "tuned_check": "-"})
        libs.append(("tuned", os.path.join(d, "mlcc-tuned"),
                     os.path.join(d, f"tuned{threads}.bin"),
                     os.path.join(d, f"harness-tuned{threads}.log")))
        # The default library once more, in a process of its own: the
        # run's noise between two identical libraries (the noise column).
        res.update({"again_ms": None, "again_check": "-"})
        libs.append(("again", os.path.join(d, "mlcc"), os.path.join(d, f"again{threads}.bin"),
                     os.path.join(d, f"harness-again{threads}.log")))
    for p in [ort_out] + [out for _, _, out, _ in libs]:
        if os.path.exists(p):
            os.remove(p)
    notes = []
    run = {}
    for k, mdir, _, _ in libs:
        who = k
        status = read(os.path.join(mdir, "status"), "not compiled")
        mt = read(os.path.join(mdir, "threads"), "no")
        run[k] = status == "ok" and (threads == 1 or mt == "yes")
        if status != "ok":
            notes.append(f"{who}: {status}")
        elif not run[k]:
            notes.append(f"{who} {threads} threads: {mt}")

    def note():
        res["note"] = "; ".join(notes)

    servers = {}
    try:
        servers["ort"] = Server(["node", os.path.join(HERE, "ort_bench.js"),
                                 os.path.join(d, "model.onnx"), str(threads),
                                 f"{inp}:{shape}", "--", ort_out],
                                os.path.join(d, f"ort{threads}.log"))
    except (RuntimeError, OSError) as e:
        res["note"] = f"ONNX Runtime failed: {e}"
        return res
    for k, mdir, out, hlog in libs:
        if not run[k]:
            continue
        try:
            servers[k] = Server([os.path.join(mdir, "harness"), str(threads), inp, "--", out],
                                hlog)
        except (RuntimeError, OSError) as e:
            notes.append(f"{k} harness failed: {e}")
    note()
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
    kind = read(os.path.join(d, "check"), "")
    # A dynamically quantized NAME_dynq: both engines' SNR to ORT's float
    # NAME when it ran before in this run.
    base_out = os.path.join(os.path.dirname(d), name[:-len("_dynq")], f"ort{threads}.bin")
    for k, _, out, _ in libs:
        if samples.get(k):
            res[f"{k}_ms"] = statistics.median(samples[k])
            res["check" if k == "mlcc" else f"{k}_check"] = compare(out, ort_out, kind)
            if kind == "dynq" and os.path.exists(base_out):
                res["check" if k == "mlcc" else f"{k}_check"] += (
                    f", SNR to float: mlcc {snr_db(out, base_out):.1f} dB,"
                    f" ORT {snr_db(ort_out, base_out):.1f} dB")

    def engine(k, label):
        if k not in iters:
            return f"{label} n/a"
        check = res["check" if k == "mlcc" else f"{k}_check"]
        return (f"{label} {fmt(res[f'{k}_ms'], '.3f')} ms ({iters[k]} x {args.rounds}) "
                f"{check}")

    log(f"  {name}, {threads} thread{'s' if threads > 1 else ''}: ort "
        f"{fmt(res['ort_ms'], '.3f')} ms ({iters['ort']} x {args.rounds}), "
        + engine("mlcc", "mlcc")
        + (", " + engine("tuned", "tuned") + ", " + engine("again", "default again")
           if args.tune else ""))
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
    ap.add_argument("--tune", action="store_true",
                    help="also measure DIR/models/NAME/mlcc-tuned (mlcc --tune's library)")
    ap.add_argument("--tune-budget", default="", help="the --tune-budget it had (a label)")
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
        header = read(os.path.join(d, "mlcc", "m.h"), "")
        arena = re.search(r"#define M_ARENA_SIZE (\d+)", header)
        info[m] = {"flops": fl.get("flops"), "calls": read(os.path.join(d, "mlcc", "calls"), "-"),
                   "arena": arena and int(arena.group(1)),
                   "shape": read(os.path.join(d, "input.shape")).replace(",", "x"),
                   "status": read(os.path.join(d, "mlcc", "status"), "not compiled")}
        if args.tune:
            info[m].update({
                "search_s": read(os.path.join(d, "mlcc-tuned", "search_s"), ""),
                "compile_s": read(os.path.join(d, "mlcc", "compile_s"), ""),
                "again_s": read(os.path.join(d, "mlcc-tuned-again", "compile_s"), ""),
                "again": read(os.path.join(d, "mlcc-tuned", "again"), "n/a (not compiled)")})
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
    print((f"  {args.rounds} rounds alternating ORT and mlcc, " if not args.tune else
           f"  {args.rounds} rounds alternating ORT, mlcc, tuned and the default again (order "
           "reversed every round), ")
          + (f"{args.iters} inferences" if args.iters else
             f"~{args.target_ms / 1000:g} s of inferences") + " per engine per round")
    print(f"  GFLOP: 2 x MACs of Conv/Gemm/MatMul; %peak: mlcc GFLOP/s / fp32 peak at the "
          "same thread count;")
    print(f"  check: mlcc vs ORT, ok when max|mlcc-ort| <= 1e-4 max|ort| (relative error shown);"
          " calls: kernel calls (--emit kernels); arena: M_ARENA_SIZE, MB")
    if args.tune:
        print("  tuned: mlcc --tune" + (f" --tune-budget {args.tune_budget}" if args.tune_budget
                                          else "") + " (schedule search on this machine);"
              " tuned/def: tuned ms / mlcc ms;")
        print("  noise: the default library run again in a process of its own, its ms / mlcc ms"
              " (two identical libraries: the run's noise)")
        print("  search s: wall seconds of the tuned compile, search included; tuned check: the"
              " tuned library vs ORT, as check")
    if any(m.endswith("_fp16") for m in models):
        print("  NAME_fp16: NAME as a float16 graph (make_models.py), run as float16 by both engines;"
              " check to 2e-3 max|ort|; not in the fp32 geometric mean")
    if any(m.endswith("_dynq") for m in models):
        print("  NAME_dynq: NAME in ONNX Runtime's quantize_dynamic form (make_models.py), run by both"
              " engines; check to 1e-2 max|ort|, and each engine's SNR to ORT's float NAME when it"
              " ran; not in the fp32 geometric mean")
    if any(m.endswith(("_qdq", "_int8")) for m in models):
        print("  NAME_qdq: PyTorch's int8 QDQ export, int8 in both engines; NAME_int8: quantized by"
              " mlcc (--quantize int8),")
        if not args.tune:
            print("  ORT runs the float model (check: top-1 and max|diff| / max|ort|); neither is"
                  " in the geometric means")
        else:
            print("  ORT runs the float model (check: top-1 and max|diff| / max|ort|); neither is"
                  " in the fp32 geometric means")
    print()
    print(f"{'model':<{w}}{'input':>14}{'GFLOP':>8}{'calls':>7}{'arena':>9}")
    for m in models:
        fl, arena = info[m]["flops"], info[m]["arena"]
        print(f"{m:<{w}}{info[m]['shape']:>14}{fmt(fl and fl / 1e9, '.3f', '?'):>8}"
              f"{info[m]['calls']:>7}{fmt(arena and arena / 1e6, '.2f', '?'):>9}")
    ratios = {}
    half = {t: [] for t in threads}  # NAME_fp16: mlcc/ORT
    widened = {t: [] for t in threads}  # NAME_fp16 with NAME: (name, mlcc fp16 ms / mlcc fp32 ms)
    both = {}  # --tune: t -> quantized? -> [(mlcc/ORT, tuned/ORT)] where both ran
    for t in threads:
        print()
        title = f"{t} thread{'s' if t > 1 else ''}"
        ratios[t] = []
        both[t] = {False: [], True: []}
        peak = peaks[t][0]
        notes = [results[m, t]["note"] for m in models]
        shared = notes[0] if len(models) > 1 and len(set(notes)) == 1 else ""
        cw = max([len("check")] + [len(results[m, t]["check"]) for m in models])
        print(f"{title:<{w}}{'ORT ms':>10}{'mlcc ms':>10}{'mlcc/ORT':>10}{'ORT GF/s':>10}"
              f"{'mlcc GF/s':>11}{'%peak':>8}"
              + (f"{'tuned ms':>10}{'tuned/ORT':>11}{'tuned/def':>11}{'noise':>8}{'search s':>10}"
                 f"  {'check':<{cw}}  tuned check" if args.tune else "  check"))
        for m in models:
            r = results[m, t]
            fl = info[m]["flops"]
            quantized = m.endswith(("_qdq", "_int8"))
            ratio = r["mlcc_ms"] / r["ort_ms"] if r["mlcc_ms"] and r["ort_ms"] else None
            if ratio and not quantized and not m.endswith(("_fp16", "_dynq")):
                ratios[t].append(ratio)
            if ratio and m.endswith("_fp16"):
                half[t].append(ratio)
                base = results.get((m[: -len("_fp16")], t))
                if base and base["mlcc_ms"] and r["mlcc_ms"]:
                    widened[t].append((m, r["mlcc_ms"] / base["mlcc_ms"]))
            gf_ort = fl / r["ort_ms"] / 1e6 if fl and r["ort_ms"] else None
            gf_mlcc = fl / r["mlcc_ms"] / 1e6 if fl and r["mlcc_ms"] else None
            line = (f"{m:<{w}}{fmt(r['ort_ms'], '.3f'):>10}{fmt(r['mlcc_ms'], '.3f'):>10}"
                    f"{fmt(ratio, '.2f'):>9}{'x' if ratio else ' '}{fmt(gf_ort, '.1f'):>10}"
                    f"{fmt(gf_mlcc, '.1f'):>11}"
                    f"{fmt(gf_mlcc and 100 * gf_mlcc / peak, '.1f'):>7}{'%' if gf_mlcc else ' '}")
            if args.tune:
                tr = r["tuned_ms"] / r["ort_ms"] if r["tuned_ms"] and r["ort_ms"] else None
                td = r["tuned_ms"] / r["mlcc_ms"] if r["tuned_ms"] and r["mlcc_ms"] else None
                noise = r["again_ms"] / r["mlcc_ms"] if r["again_ms"] and r["mlcc_ms"] else None
                if ratio and tr:
                    both[t][quantized].append((ratio, tr))
                search = float(info[m]["search_s"]) if info[m]["search_s"] else None
                line += (f"{fmt(r['tuned_ms'], '.3f'):>10}"
                         f"{fmt(tr, '.2f'):>10}{'x' if tr else ' '}"
                         f"{fmt(td, '.2f'):>10}{'x' if td else ' '}"
                         f"{fmt(noise, '.2f'):>7}{'x' if noise else ' '}"
                         f"{fmt(search, '.1f', '-'):>10}"
                         f"  {r['check']:<{cw}}  {r['tuned_check']}")
            else:
                line += f"  {r['check']}"
            if r["note"] and not shared:
                line += f"  ({r['note']})"
            print(line.rstrip())
        if shared:
            print(f"  ({shared})")
    print()
    if not args.tune:
        print("geometric mean of mlcc/ORT: " + ", ".join(
            f"{t} thread{'s' if t > 1 else ''} "
            + (f"{geomean(ratios[t]):.2f}x ({len(ratios[t])} fp32 models)" if ratios[t] else "n/a")
            for t in threads))
        for t in threads:
            if half[t]:
                print(f"float16 graphs, {t} thread{'s' if t > 1 else ''}: geometric mean of mlcc/ORT "
                      f"{geomean(half[t]):.2f}x ({len(half[t])} models)"
                      + ("; mlcc float16 / mlcc fp32: " + ", ".join(
                          f"{m} {x:.2f}x" for m, x in widened[t]) if widened[t] else ""))
        return 0  # a benchmark: mismatches and failures are in the table

    # --tune: default and tuned against ORT, over the models where both ran.
    def means(pairs, kind):
        if not pairs:
            return f"n/a (no {kind} model with both default and tuned times)"
        d = geomean([a for a, _ in pairs])
        u = geomean([b for _, b in pairs])
        return (f"default {d:.2f}x, tuned {u:.2f}x ({len(pairs)} {kind} "
                f"model{'s' if len(pairs) > 1 else ''}); of ORT/mlcc: default {1 / d:.2f}x, "
                f"tuned {1 / u:.2f}x")

    has_quantized = any(m.endswith(("_qdq", "_int8")) for m in models)
    for t in threads:
        title = f"{t} thread{'s' if t > 1 else ''}"
        if any(not m.endswith(("_qdq", "_int8")) for m in models):
            print(f"{title}: geometric mean of mlcc/ORT: " + means(both[t][False], "fp32"))
        if has_quantized:
            print(f"{title}: geometric mean of mlcc/ORT: " + means(both[t][True], "QDQ/int8"))
    print()
    for m in models:
        a = float(info[m]["compile_s"]) if info[m]["compile_s"] else None
        b = float(info[m]["again_s"]) if info[m]["again_s"] else None
        again = info[m]["again"]
        if again in ("identical", "differs") and b is not None:
            print(f"{m}: compile default {fmt(a, '.1f', '?')} s, with the database {b:.1f} s"
                  f" ({fmt(a and b / a, '.2f', '?')}x), output {again}")
        else:
            print(f"{m}: compile default {fmt(a, '.1f', '?')} s, with the database: {again}")
    return 0  # a benchmark: mismatches and failures are in the table


if __name__ == "__main__":
    sys.exit(main())
