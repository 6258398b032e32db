#!/usr/bin/env bash
# Models of a size that once crashed or stalled the compiler (issue 30), run
# with the 8 MiB stack a user's shell has, whatever this machine's limit:
#  - windows, reductions and a convolution of thousands of taps, and a chain
#    of 600 fused elementwise nodes (large_windows.py writes them with numpy
#    references), through mlcc-conformance on the LLVM backend, the C
#    backend (with ASan and UBSan) and aarch64 under qemu-user when its
#    cross compiler is installed; each kernel's deepest expression is
#    printed from --report and must stay within kir::kMaxExprDepth (256);
#  - an initializer that declares int64[2147483647] but holds one value:
#    one clear line, exit 1, in under a second and 100 MB.
#
# usage: tests/cli/large_windows.sh MLCC MLCC-CONFORMANCE WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
runner=$(realpath "$2")
work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
soft=$(ulimit -S -s)
if [[ $soft == unlimited || $soft -gt 8192 ]]; then ulimit -S -s 8192; fi
echo "stack limit: $(ulimit -S -s) KiB"
if ! /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
  echo "SKIPPED: needs python3-onnx and python3-numpy"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work/suite"
/usr/bin/python3 "$root/tests/cli/large_windows.py" "$work/suite" || exit 1
failures=0

# The deepest expression of every case's kernels.
deepest=0
for m in "$work"/suite/node/*/model.onnx; do
  name=$(basename "$(dirname "$m")")
  if ! "$mlcc" "$m" -o "$work/$name.o" --report "$work/$name.json" 2> "$work/$name.err"; then
    echo "FAIL $name: $(cat "$work/$name.err")"
    failures=$((failures + 1))
    continue
  fi
  d=$(grep -o '"max_expr_depth": [0-9]*' "$work/$name.json" | grep -o '[0-9]*$')
  echo "$name: deepest expression $d levels, $(stat -c %s "$work/$name.o") bytes of object"
  ((d > deepest)) && deepest=$d
done
echo "deepest expression: $deepest levels (bound 256)"
((deepest <= 256)) || failures=$((failures + 1))

conformance() {
  local label=$1
  shift
  "$runner" --suite "$work/suite" --folders node --mlcc "$mlcc" \
    --runtime-include "$root/runtime-c" --driver "$root/tools/conformance/driver.c" \
    --work "$work/conformance-$label" --backend "$label" --min-pass node=11 "$@" \
    | tail -n 3 || failures=$((failures + 1))
}
conformance llvm
ASAN_OPTIONS=detect_leaks=0 conformance c --mlcc-arg=--backend --mlcc-arg=c \
  "--cflags=-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null; then
  conformance aarch64-linux --mlcc-arg=--target --mlcc-arg=aarch64-linux \
    --cc aarch64-linux-gnu-gcc --run-prefix "qemu-aarch64 -L /usr/aarch64-linux-gnu"
else
  echo "note: no aarch64-linux-gnu-gcc or qemu-aarch64: the aarch64 run is skipped"
fi

# The lying initializer: refused at the per-tensor limit by default, and
# against the bytes it holds when the limit is raised; quickly, in little
# memory, with no output file.
/usr/bin/python3 - "$mlcc" "$work" <<'PY' || failures=$((failures + 1))
import os, resource, subprocess, sys, time
mlcc, work = sys.argv[1], sys.argv[2]
model = os.path.join(work, "suite", "lying_initializer.onnx")
bad = 0
for extra, phrase in (([], "more than mlcc's limit of 4294967296 bytes per tensor"),
                      (["--max-tensor", "32G"],
                       "initializer 'pos_insert' (int64[2147483647]) holds 1 values where "
                       "2147483647 are expected")):
    out = os.path.join(work, "liar.a")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.monotonic()
    p = subprocess.run([mlcc, model, "-o", out] + extra, capture_output=True, text=True)
    seconds = time.monotonic() - t
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ok = (p.returncode == 1 and phrase in p.stderr and p.stderr.count("\n") == 1 and
          seconds < 1 and rss_mb < 100 and not os.path.exists(out))
    print(f"{'ok  ' if ok else 'FAIL'} lying initializer {' '.join(extra)}: exit {p.returncode}, "
          f"{seconds:.2f} s, peak {rss_mb:.0f} MB: {p.stderr.strip()}")
    bad += not ok
sys.exit(1 if bad else 0)
PY

if ((failures)); then
  echo "large-windows: $failures failure(s)"
  exit 1
fi
echo "large-windows: all passed"
