#!/usr/bin/env bash
# report.sh - the per-kernel report, the budgets, the HTML page and the
# progress line, through the CLI.
#
#   tests/cli/report.sh MLCC WORKDIR
#
# 1. digits and resnet18 (made by tests/models/make_models.py with PyTorch):
#    the --report JSON is consistent (check_report.py: per-kernel figures sum
#    to the totals, the memory plan never overlaps live buffers; resnet18's
#    operation count within [1/2.25, 1.15] of its convolution/matrix FLOPs
#    as PyTorch counts them: Winograd's 3x3 convolutions do up to 2.25x
#    fewer), on the host, for cortex-m4 and with --backend c.
# 2. Budgets: one byte below the real arena, weights or code fails with exit
#    status 5, one line naming the figure and its largest contributors, and
#    no output file; the exact figure passes; k/M suffixes; bad values.
# 3. --report-html for resnet18 opens in headless Chromium: every arena
#    buffer and kernel call is in the rendered page and the screenshot shows
#    the coloured arena picture.
# 4. Progress: --progress always prints the passes and the code generation
#    count; the default prints nothing when stderr is a file, and on a
#    terminal (a pty from script(1)) draws a status line for resnet18 (over a
#    second) but nothing for digits.
# Exit status 77 (skipped) only for the parts that need PyTorch or Chromium
# when those are missing, after everything else passed.
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
work=$(realpath "$work")
python=/usr/bin/python3
digits=$root/examples/digits/digits.onnx
skipped=()

fail() { echo "cli-report: FAIL: $*"; exit 1; }
num() { $python -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

# --- 1. the report is consistent -------------------------------------------
for variant in host cortex-m4 c; do
  case $variant in
    host) args=() ;;
    cortex-m4) args=(--target cortex-m4) ;;
    c) args=(--backend c) ;;
  esac
  mkdir -p "$work/d-$variant"
  "$mlcc" "$digits" -o "$work/d-$variant/libdigits.a" ${args[@]+"${args[@]}"} \
    --report "$work/d-$variant.json" || fail "digits ($variant) did not compile"
  echo "cli-report: digits ($variant):"
  $python "$here/check_report.py" "$work/d-$variant.json" | sed 's/^/  /'
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "digits ($variant) report"
done

resnet=""
if $python -c "import torch, torchvision" 2>/dev/null; then
  $python "$root/tests/models/make_models.py" --flops "$work/models" resnet18 > "$work/make_models.log" 2>&1 ||
    { cat "$work/make_models.log"; fail "make_models.py resnet18"; }
  resnet=$work/models/resnet18/model.onnx
  mkdir -p "$work/res"
  "$mlcc" "$resnet" -o "$work/res/libres.a" --report "$work/res.json" \
    --report-html "$work/res.html" || fail "resnet18 did not compile"
  echo "cli-report: resnet18:"
  $python "$here/check_report.py" "$work/res.json" --flops "$work/models/resnet18/flops.json" | sed 's/^/  /'
  [[ ${PIPESTATUS[0]} -eq 0 ]] || fail "resnet18 report"
else
  skipped+=("resnet18 (PyTorch is not installed)")
fi

# --- 2. budgets ----------------------------------------------------------------
arena=$(num "$work/d-host.json" arena_bytes)
weights=$(num "$work/d-host.json" weight_bytes)
code=$(num "$work/d-host.json" code_bytes)
# budget FLAG FIGURE_NAME ACTUAL: one byte less fails; the figure and one
# byte more pass.
budget() {
  local flag=$1 what=$2 actual=$3 out=$work/budget$1 rc=0
  rm -rf "$out" && mkdir -p "$out"
  "$mlcc" "$digits" -o "$out/libdigits.a" "$flag" $((actual - 1)) 2> "$out/err" || rc=$?
  [[ $rc -eq 5 ]] || fail "$flag $((actual - 1)): exit $rc, expected 5"
  [[ $(wc -l < "$out/err") -eq 1 ]] || fail "$flag: not one line: $(cat "$out/err")"
  grep -q "^mlcc: error: the $what .* 1 byte over $flag $((actual - 1)); " "$out/err" ||
    fail "$flag: unexpected message: $(cat "$out/err")"
  [[ -z $(ls -A "$out" | grep -v '^err$') ]] || fail "$flag: left files behind: $(ls "$out")"
  echo "cli-report: $flag $((actual - 1)) -> exit 5: $(cat "$out/err")"
  for ok in "$actual" $((actual + 1)); do
    rm -f "$out/libdigits.a" "$out/digits.h"
    "$mlcc" "$digits" -o "$out/libdigits.a" "$flag" "$ok" || fail "$flag $ok failed"
    [[ -f $out/libdigits.a && -f $out/digits.h ]] || fail "$flag $ok: no output"
  done
}
budget --max-arena "arena is" "$arena"
budget --max-weights "weights are" "$weights"
budget --max-code "code is" "$code"
grep -q "largest buffers live at its peak (call [0-9]*, node '.*' (.*)\( + [0-9]* more\)\{0,1\}): '.*' [0-9]* B (calls [0-9]*-[0-9]*)" \
  "$work/budget--max-arena/err" || fail "the arena message names no buffer"
[[ $(grep -o "' [0-9]* B (" "$work/budget--max-weights/err" | wc -l) -eq 3 ]] ||
  fail "the weights message does not name three tensors"
[[ $(grep -o " [0-9]* B (node" "$work/budget--max-code/err" | wc -l) -eq 3 ]] ||
  fail "the code message does not name three kernels"
rc=0; "$mlcc" "$digits" -o "$work/k.a" --max-arena 2k 2> "$work/k.err" || rc=$?
[[ $rc -eq 5 ]] && grep -q "$((arena - 2048)) bytes over --max-arena 2048" "$work/k.err" ||
  fail "--max-arena 2k: exit $rc: $(cat "$work/k.err")"
"$mlcc" "$digits" -o "$work/m.a" --max-weights 1M --max-arena 1M --max-code 1M || fail "1M budgets"
for bad in 12q -5 k 1.5M; do
  rc=0; "$mlcc" "$digits" -o "$work/bad.a" --max-arena "$bad" 2> "$work/bad.err" || rc=$?
  [[ $rc -eq 2 ]] || fail "--max-arena $bad: exit $rc, expected 2"
done
rc=0; "$mlcc" "$digits" -o "$work/x.c" --max-code 1M 2> "$work/bad.err" || rc=$?
[[ $rc -eq 2 ]] || fail "--max-code with C output: exit $rc, expected 2"
echo "cli-report: budgets: exit 5 one byte below each figure, 0 at it and one byte above; suffixes and bad values OK"

# --- 4. progress ---------------------------------------------------------------
mkdir -p "$work/p"
"$mlcc" "$digits" -o "$work/p/libdigits.a" --progress always 2> "$work/p.err" ||
  fail "--progress always: $(cat "$work/p.err")"
# Every step of the pipeline once, numbered 1..N of the same N, from
# infer-and-fold to plan-memory (N is the pipeline's, not the test's).
steps=$(sed -n 's|^mlcc: [[]1/\([0-9]*\)[]] infer-and-fold$|\1|p' "$work/p.err")
[[ -n $steps ]] || fail "--progress always: no first pass: $(cat "$work/p.err")"
grep -q "^mlcc: [[]$steps/$steps[]] plan-memory$" "$work/p.err" || fail "--progress always: no last pass"
for ((i = 1; i <= steps; ++i)); do
  [[ $(grep -c "^mlcc: [[]$i/$steps[]] " "$work/p.err") -eq 1 ]] ||
    fail "--progress always: step $i of $steps not announced once: $(cat "$work/p.err")"
done
grep -Eq "^mlcc: code generation ([0-9]+)/\1$" "$work/p.err" || fail "--progress always: no code generation count"
"$mlcc" "$digits" -o "$work/p/libdigits.a" 2> "$work/p2.err"
[[ ! -s $work/p2.err ]] || fail "progress printed to a file: $(cat "$work/p2.err")"
if command -v script >/dev/null; then
  script -qec "'$mlcc' '$digits' -o '$work/p/libdigits.a'" /dev/null > "$work/pty-digits.log"
  ! grep -q "mlcc" "$work/pty-digits.log" || fail "progress for a fast compile: $(cat -v "$work/pty-digits.log")"
  if [[ -n $resnet ]]; then
    # The status line from the start (MLCC_PROGRESS_DELAY_MS=0): a fast
    # machine compiles resnet18 in about a second.
    MLCC_PROGRESS_DELAY_MS=0 script -qec "'$mlcc' '$resnet' -o '$work/p/libres.a'" /dev/null \
      > "$work/pty-res.log"
    grep -q $'\r\033\[Kmlcc: code generation' "$work/pty-res.log" ||
      fail "no status line on a terminal for resnet18: $(cat -v "$work/pty-res.log" | head -c 400)"
    tail -c 4 "$work/pty-res.log" | grep -q $'\033\[K' || fail "the status line is not erased at the end"
    echo "cli-report: progress on a terminal: $(tr '\r' '\n' < "$work/pty-res.log" | grep -c 'mlcc:') status updates for resnet18, none for digits"
  fi
else
  skipped+=("progress on a terminal (script(1) is missing)")
fi
echo "cli-report: progress: always -> $(wc -l < "$work/p.err") lines; a file -> nothing"

# --- 3. the HTML page in a headless browser ---------------------------------
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -n $resnet && -n $browser ]]; then
  html=$work/res.html
  ! grep -Eq '(src|href)="(https?:)?//' "$html" || fail "the page loads something from outside"
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
    --dump-dom "file://$html" > "$work/dom.html" 2> "$work/chromium.log" || { tail "$work/chromium.log"; fail "chromium --dump-dom"; }
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium" \
    --hide-scrollbars --window-size=1100,900 --screenshot="$work/res.png" "file://$html" \
    >> "$work/chromium.log" 2>&1 || { tail "$work/chromium.log"; fail "chromium --screenshot"; }
  $python - "$work/res.json" "$work/dom.html" "$work/res.png" <<'PY' || fail "the rendered page"
import json, re, sys
from PIL import Image
r = json.load(open(sys.argv[1]))
dom = open(sys.argv[2]).read()
bufs = sum(1 for b in r["memory_plan"] if b["first_call"] >= 0)
rects = len(re.findall(r'<rect class="buf"', dom))
calls = len(re.findall(r'<g class="call"', dom))
print(f"cli-report: chromium rendered {rects} arena buffers (plan: {bufs}) and {calls} kernel calls (report: {r['calls']})")
assert rects == bufs and calls == r["calls"], "the DOM does not match the report"
img = Image.open(sys.argv[3]).convert("RGB")
hues = set()
for y in range(0, img.height, 2):
    for x in range(0, img.width, 2):
        p = img.getpixel((x, y))
        if max(p) - min(p) > 60:  # saturated: a buffer (the text is grey)
            hues.add(tuple(c // 16 for c in p))
print(f"cli-report: the {img.width}x{img.height} screenshot has {len(hues)} distinct colours in the arena picture")
assert len(hues) >= 10, "the arena picture is not visible in the screenshot"
PY
else
  [[ -n $browser ]] || skipped+=("the HTML page in a browser (chromium is not installed)")
fi

if ((${#skipped[@]})); then
  printf 'cli-report: skipped: %s\n' "${skipped[@]}"
  exit 77
fi
echo "cli-report: all checks passed"
