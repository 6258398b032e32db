#!/usr/bin/env bash
# Control flow on values known only at run time: an If whose condition is
# an input runs only the branch taken (both compiled, nested Ifs too, whose
# inner branches read values of the enclosing branch), a
# Loop whose condition is an input and then the body's own test stops
# computing where the loop ends, and a Loop whose trip count is an input
# bounded by --input-range runs that many iterations. Each model is compiled once, by LLVM and by
# the C backend, and run on several conditions against ONNX Runtime's
# outputs (tests/cli/make_control_flow.py). How many kernel calls ran is
# counted through the profiling hook (tests/cli/run_control_flow.c): a run
# that takes fewer branches or iterations makes fewer calls.
#
# usage: tests/cli/control_flow.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$root/tests/cli/data/control_flow
cc=${CC:-cc}
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
ok() { echo "ok   $1"; }

# library NAME MODEL ARGS...: WORK/NAME/libm.a and its runner, and the
# program's number of kernel calls in WORK/NAME/calls.
library() {
  local name=$1 model=$2
  shift 2
  mkdir -p "$work/$name"
  if ! "$mlcc" "$model" --name m -o "$work/$name/libm.a" "$@" 2>"$work/$name/mlcc.err" ||
     ! "$mlcc" "$model" --emit kernels -o "$work/$name/kernels.txt" "$@" 2>>"$work/$name/mlcc.err"; then
    fail "$name: mlcc status $?"; head -3 "$work/$name/mlcc.err"; return 1
  fi
  sed -n '/^calls:/,$p' "$work/$name/kernels.txt" | tail -n +2 > "$work/$name/calls.txt"
  wc -l < "$work/$name/calls.txt" > "$work/$name/calls"
  "$cc" -O1 -I"$work/$name" -I"$root/runtime-c" -o "$work/$name/run" \
    "$root/tests/cli/run_control_flow.c" "$work/$name/libm.a" -lm 2>"$work/$name/cc.err" ||
    { fail "$name: the runner does not build"; head -3 "$work/$name/cc.err"; return 1; }
}

# run NAME CASE IN... -- REF...: runs WORK/NAME/run against the references;
# the calls it made in WORK/NAME/CASE.calls.
run() {
  local name=$1 case=$2
  shift 2
  local log=$work/$name/$case.txt
  if "$work/$name/run" 1e-5 "$@" >"$log" 2>&1; then
    ok "$name, $case: $(cat "$log") of $(cat "$work/$name/calls")"
    sed -n 's/.* \([0-9]*\) kernel calls ran/\1/p' "$log" > "$work/$name/$case.calls"
  else
    fail "$name, $case: $(cat "$log")"
    echo -1 > "$work/$name/$case.calls"
  fi
}
calls() { cat "$work/$1/$2.calls"; }

for backend in llvm c; do
  # If on c (then: an If on c2; else: its own product).
  n=if-$backend
  if library "$n" "$data/if_nested.onnx" --backend "$backend"; then
    if grep -q '^  if ' "$work/$n/calls.txt"; then
      ok "$n: --emit kernels shows guarded calls ($(grep -c '^  if ' "$work/$n/calls.txt") of $(cat "$work/$n/calls"))"
    else
      fail "$n: no guarded call in --emit kernels"
    fi
    run "$n" then-then "$data/if_x.bin" "$data/c1.bin" "$data/c1.bin" -- "$data/if_y_11.bin"
    run "$n" then-else "$data/if_x.bin" "$data/c1.bin" "$data/c0.bin" -- "$data/if_y_10.bin"
    run "$n" else "$data/if_x.bin" "$data/c0.bin" "$data/c1.bin" -- "$data/if_y_01.bin"
    total=$(cat "$work/$n/calls")
    if (($(calls "$n" then-then) > 0 && $(calls "$n" then-then) < total &&
         $(calls "$n" then-else) < total && $(calls "$n" else) < $(calls "$n" then-then))); then
      ok "$n: each run skips the branches not taken"
    else
      fail "$n: calls run $(calls "$n" then-then), $(calls "$n" then-else), $(calls "$n" else) of $total"
    fi
  fi

  # ONNX scoping: the inner If's branches read a Constant and a node output
  # of the enclosing then-branch (tests/cli/make_if_scope.py).
  n=if-scope-$backend
  if library "$n" "$data/if_scope.onnx" --backend "$backend"; then
    run "$n" then-then "$data/if_scope_x.bin" "$data/c1.bin" "$data/c1.bin" -- "$data/if_scope_y_11.bin"
    run "$n" then-else "$data/if_scope_x.bin" "$data/c1.bin" "$data/c0.bin" -- "$data/if_scope_y_10.bin"
    run "$n" else "$data/if_scope_x.bin" "$data/c0.bin" "$data/c1.bin" -- "$data/if_scope_y_01.bin"
  fi

  # Loop of at most 12 iterations while go and sum(x) < limit: 3, 6, 12
  # and 0 iterations (ONNX Runtime's n).
  n=loop-$backend
  if library "$n" "$data/loop_until.onnx" --backend "$backend"; then
    for c in 1_10 1_60 1_1000000000 0_1000000000; do
      run "$n" "$c" "$data/loop_x.bin" "$data/go${c%%_*}.bin" "$data/limit${c#*_}.bin" -- \
        "$data/loop_x_$c.bin" "$data/loop_n_$c.bin"
    done
    total=$(cat "$work/$n/calls")
    if (($(calls "$n" 0_1000000000) < $(calls "$n" 1_10) && $(calls "$n" 1_10) < $(calls "$n" 1_60) &&
         $(calls "$n" 1_60) < $(calls "$n" 1_1000000000) && $(calls "$n" 1_1000000000) == total)); then
      ok "$n: the iterations after the loop ends are skipped"
    else
      fail "$n: calls run $(calls "$n" 0_1000000000), $(calls "$n" 1_10), $(calls "$n" 1_60), $(calls "$n" 1_1000000000) of $total"
    fi
  fi

  # Loop whose trip count is an input m, bounded by --input-range m=0..12:
  # 0, 3 and 12 iterations; 13 and -1 return MLCC_ERR_DIM_RANGE (7) and
  # write nothing.
  n=count-$backend
  if library "$n" "$data/loop_count.onnx" --input-range m=0..12 --backend "$backend"; then
    if grep -q "#define M_INPUT_M_MIN 0" "$work/$n/m.h" && grep -q "#define M_INPUT_M_MAX 12" "$work/$n/m.h"; then
      ok "$n: the header gives M_INPUT_M_MIN 0 and M_INPUT_M_MAX 12"
    else
      fail "$n: the header lacks M_INPUT_M_MIN/MAX"
    fi
    for m in 0 3 12; do
      run "$n" "m$m" "$data/loop_x.bin" "$data/m$m.bin" -- "$data/count_x_$m.bin" "$data/count_n_$m.bin"
    done
    if (($(calls "$n" m0) < $(calls "$n" m3) && $(calls "$n" m3) < $(calls "$n" m12))); then
      ok "$n: a run makes the iterations of its trip count only"
    else
      fail "$n: calls run $(calls "$n" m0), $(calls "$n" m3), $(calls "$n" m12)"
    fi
    for m in 13 -1; do
      if "$work/$n/run" status=7 "$data/loop_x.bin" "$data/m$m.bin" -- x x >"$work/$n/m$m.txt" 2>&1; then
        ok "$n, m=$m: $(cat "$work/$n/m$m.txt")"
      else
        fail "$n, m=$m: $(cat "$work/$n/m$m.txt")"
      fi
    done
  fi
done

# A Scan in a branch taken at run time: its iterations run under the
# branch's guard (the else branch makes fewer calls).
n=scan-in-if
if library "$n" "$data/scan_in_if.onnx"; then
  run "$n" then "$data/scan_x.bin" "$data/c1.bin" -- "$data/scan_in_if_y1.bin"
  run "$n" else "$data/scan_x.bin" "$data/c0.bin" -- "$data/scan_in_if_y0.bin"
  if (($(calls "$n" else) < $(calls "$n" then))); then
    ok "$n: the Scan runs only when its branch is taken"
  else
    fail "$n: calls run $(calls "$n" then) and $(calls "$n" else)"
  fi
fi

# A Loop whose carried value grows (y <- Concat(y, x), 3 iterations): the
# condition is known, so no selection stands between the iterations.
n=grow
if library "$n" "$data/loop_grow.onnx"; then
  run "$n" three "$data/loop_x.bin" -- "$data/grow_y.bin"
  if grep -q "Where\|^  if " "$work/$n/calls.txt"; then
    fail "$n: a selection or guard is left: $(grep -m1 "Where\|^  if " "$work/$n/calls.txt")"
  else
    ok "$n: no selection or guard left"
  fi
fi

# Loops over a bounded dimension, compiled once with --dim seq=1..16: a
# Loop of Shape(x)[0] iterations (`for i in range(x.shape[0])`) with a
# carried and a scan output, one of Shape(x)[0] - 1 (none at seq 1), a Loop
# of seq iterations in one of seq iterations, one of i + 1 iterations in
# iteration i of one of seq iterations, and a Scan over axis 1. Run
# at seq = 1, 5 and 16 against ONNX Runtime, nothing written past the
# run-time extent (tests/cli/run_bounded.c); 17 is out of range; a run
# makes the iterations of its length only.
for model in loop offset nested triangle scan; do
  for backend in llvm c; do
    n=frames-$model-$backend
    d=$work/$n
    mkdir -p "$d"
    "$mlcc" "$data/frames_$model.onnx" --dim seq=1..16 --backend "$backend" --name m \
      -o "$d/libm.a" 2>"$d/mlcc.err"
    rc=$?
    ((rc == 0)) || { fail "$n: mlcc status $rc: $(head -2 "$d/mlcc.err")"; continue; }
    "$cc" -O1 -I"$d" -o "$d/run" "$root/tests/cli/run_bounded.c" "$d/libm.a" -lm 2>"$d/cc.err" ||
      { fail "$n: the runner does not build"; head -3 "$d/cc.err"; continue; }
    for seq in 1 5 16; do
      if "$d/run" compare "$seq" "$data/frames_x$seq.bin" "$data/frames_${model}_y$seq.bin" 1e-5 \
           >"$d/seq$seq.txt" 2>&1; then
        ok "$n: $(cat "$d/seq$seq.txt")"
      else
        fail "$n: $(cat "$d/seq$seq.txt")"
      fi
    done
    if "$d/run" range 17 2>"$d/range.txt"; then
      ok "$n: seq=17 returns MLCC_ERR_DIM_RANGE, the output untouched"
    else
      fail "$n: seq=17: $(cat "$d/range.txt")"
    fi
    c1=$("$d/run" calls 1 "$data/frames_x1.bin") c5=$("$d/run" calls 5 "$data/frames_x5.bin")
    c16=$("$d/run" calls 16 "$data/frames_x16.bin")
    if ((c1 < c5 && c5 < c16)); then
      ok "$n: kernel calls at seq 1, 5, 16: $c1, $c5, $c16"
    else
      fail "$n: kernel calls at seq 1, 5, 16: $c1, $c5, $c16"
    fi
  done
done

# A trip count known only at run time needs --input-range; bad ranges are
# one line, exit status 2, and no library.
expect_error() { # NAME STATUS TEXT ARGS...
  local name=$1 status=$2 text=$3
  shift 3
  "$mlcc" "$@" -o "$work/$name.a" 2>"$work/$name.err"
  local rc=$?
  if ((rc == status)) && grep -qF -- "$text" "$work/$name.err" && [[ ! -e $work/$name.a ]] &&
     (($(wc -l < "$work/$name.err") == 1)); then
    ok "$name: exit $rc, $(cat "$work/$name.err")"
  else
    fail "$name: exit $rc (want $status): $(head -2 "$work/$name.err")"
  fi
}
expect_error count-unbounded 4 "input 0 ('m') must be known at compile time" "$data/loop_count.onnx"
# A trip count that follows seq must be affine in it and must not fall as
# it grows.
expect_error frames-square 3 "node 'Loop_0' runs 256 times at seq=16, 225 at 15, 196 at 14 and 1 at 1: its number of iterations is not an affine function of seq" \
  "$data/frames_loop_square.onnx" --dim seq=1..16
expect_error frames-falling 3 "node 'Loop_0' runs 4 times at seq=16, 5 at 15, 6 at 14 and 19 at 1: a number of iterations that falls as seq grows is not supported" \
  "$data/frames_loop_falling.onnx" --dim seq=1..16
expect_error range-empty 2 "--input-range m=5..2: the range is empty" "$data/loop_count.onnx" --input-range m=5..2
expect_error range-text 2 "expected a range MIN..MAX of integers" "$data/loop_count.onnx" --input-range m=a..3
expect_error range-float 2 "--input-range x: the input is float[8], not one integer" "$data/loop_count.onnx" --input-range x=0..3
expect_error range-unknown 2 "--input-range names 'q', which is not a graph input" "$data/loop_count.onnx" --input-range q=0..3
expect_error range-cuda 3 "--target cuda does not take input ranges yet" "$data/loop_count.onnx" --input-range m=0..3 --target cuda

# A Loop with scan outputs needs its condition at compile time (the scan's
# length would be the number of iterations): a clear error, no library.
if "$mlcc" "$data/loop_scan_until.onnx" -o "$work/scan.a" 2>"$work/scan.err"; then
  fail "loop with scan outputs and a run-time condition compiled"
elif grep -q "node 'Loop_0' (Loop): input 1 ('go') must be known at compile time" "$work/scan.err" &&
     [[ ! -e $work/scan.a ]]; then
  ok "loop with scan outputs and a run-time condition: $(head -1 "$work/scan.err")"
else
  fail "loop with scan outputs: $(head -2 "$work/scan.err")"
fi

# mlcc check marks the calls a run skipped.
if "$mlcc" check "$data/if_nested.onnx" >"$work/check.txt" 2>&1 &&
   grep -q "not run: its condition was false in this run" "$work/check.txt"; then
  ok "mlcc check: $(grep -c 'not run' "$work/check.txt") calls not run, $(tail -2 "$work/check.txt" | head -1)"
else
  fail "mlcc check: $(tail -3 "$work/check.txt")"
fi

if ((failures)); then
  echo "control-flow: $failures failure(s)"
  exit 1
fi
echo "control-flow: all passed"
