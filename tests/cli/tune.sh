#!/usr/bin/env bash
# Schedule search (--tune, --tune-db, --tune-budget) on the digits model:
# the database it writes, a compile that reads it (no search, the same
# output every time), entries of another target or a plan no longer offered
# skipped and named by -v, a corrupt database and bad flags rejected with
# one line and no output file.
#
# usage: tests/cli/tune.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
digits=$root/examples/digits/digits.onnx
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $1"; failures=$((failures + 1)); }
ok() { echo "ok   $1"; }

# ir_within FILE: the search's summary line in FILE says the kept plans add
# at most 10% to the model's kernel IR (the compile-cost guard).
ir_within() {
  local share
  share=$(grep '^mlcc: tune ' "$1" | grep -o '[-+][0-9.]*% of [0-9]* kernel IR' | tr -d '+%' | cut -d' ' -f1)
  [[ -n $share ]] && awk -v s="$share" 'BEGIN { exit !(s <= 10) }'
}

cd "$work" || exit 1
# The search: a database with one entry per kernel signature.
mkdir tuned
if "$mlcc" "$digits" -o tuned/libd.a --tune --tune-db db.jsonl 2>tune.err && ir_within tune.err; then
  ok "--tune: $(grep '^mlcc: tune ' tune.err)"
else
  fail "--tune: status $?"; cat tune.err
fi
n=$(grep -c '"signature": ' db.jsonl 2>/dev/null || echo 0)
if [[ $n -ge 2 ]] && ! grep -vq '"measure": "host-ns".*"default": [0-9]*, "tuned": [0-9]*, "candidates": [0-9]*}$' db.jsonl; then
  ok "database: $n entries, each with its measures"
else
  fail "database: $n entries"; cat db.jsonl
fi

# Reading it: no search, the search's output, the same every time; the
# report gives each tuned call's default and tuned measures.
mkdir a b plain
"$mlcc" "$digits" -o a/libd.a --tune-db db.jsonl --report a/r.json -v 2>a.err
"$mlcc" "$digits" -o b/libd.a --tune-db db.jsonl 2>b.err
"$mlcc" "$digits" -o plain/libd.a 2>/dev/null
if cmp -s a/libd.a tuned/libd.a && cmp -s a/libd.a b/libd.a && cmp -s a/d.h tuned/d.h &&
   ! grep -q '^mlcc: tune ' a.err &&
   grep -q "tune-db $n kernel calls take plans from the database" a.err; then
  ok "--tune-db: no search, byte-identical to the --tune compile and across compiles"
else
  fail "--tune-db"; cat a.err | head -5
fi
tuned_calls=$(grep -o '"tune": {"measure": "host-ns", "default_plan": "plan{[^"]*}", "default": [0-9]*, "tuned": [0-9]*}' a/r.json | wc -l)
if [[ $tuned_calls -eq $n ]]; then
  ok "report: $tuned_calls calls with their default and tuned measures"
else
  fail "report: $tuned_calls calls with a tune member (want $n)"
fi

# An entry of another target and one whose plan is no longer offered are
# skipped, -v names them, and those kernels take the default plans.
sed '1s/"target": "[^"]*"/"target": "cortex-m4 thumbv7em-unknown-none-eabihf cortex-m4 +dsp"/' \
  db.jsonl >foreign.jsonl
sed '1s/"plan": "[^"]*"/"plan": "plan{tile=99x99 lanes=16}"/' db.jsonl >stale.jsonl
mkdir f s
"$mlcc" "$digits" -o f/libd.a --tune-db foreign.jsonl -v 2>f.err
"$mlcc" "$digits" -o s/libd.a --tune-db stale.jsonl -v 2>s.err
if grep -q "tune-db 1 entries for another target or compiler version skipped" f.err; then
  ok "foreign entry: $(grep 'another target' f.err)"
else
  fail "foreign entry"; head -3 f.err
fi
if grep -q "tune-db entry skipped, its plan plan{tile=99x99 lanes=16} is not one this compiler offers" s.err; then
  ok "stale entry: $(grep 'entry skipped' s.err | cut -c1-120)..."
else
  fail "stale entry"; head -3 s.err
fi
# With every entry foreign, the output is the untuned compile's.
sed 's/"compiler": "[^"]*"/"compiler": "0.0.0-other"/' db.jsonl >old.jsonl
mkdir o
"$mlcc" "$digits" -o o/libd.a --tune-db old.jsonl 2>/dev/null
if cmp -s o/libd.a plain/libd.a; then
  ok "entries of another compiler version: the untuned output"
else
  fail "entries of another compiler version change the output"
fi

# Bad input: one line, the status, no output file (not even the database).
expect() {
  local name=$1 want=$2 phrase=$3
  shift 4
  rm -rf out && mkdir out
  "$mlcc" "$@" 2>err >/dev/null
  local got=$? problem=""
  [[ $got -eq $want ]] || problem+=" exit status $got (want $want);"
  [[ $(wc -l <err) -eq 1 ]] || problem+=" $(wc -l <err) lines on stderr;"
  grep -qF -- "$phrase" err || problem+=" message lacks '$phrase';"
  [[ -z $(ls -A out) ]] || problem+=" left files: $(ls -A out);"
  if [[ -n $problem ]]; then
    fail "$name:$problem"; head -3 err
  else
    ok "$name: $(cat err)"
  fi
}
{ head -n 1 db.jsonl; echo '{"signature": "Conv", "target": '; } >out-corrupt.jsonl
expect corrupt-db 1 "out-corrupt.jsonl:2: not a tuning entry" -- \
  "$digits" -o out/libd.a --tune-db "$work/out-corrupt.jsonl"
cp out-corrupt.jsonl corrupt.jsonl
expect corrupt-db-tune 1 "corrupt.jsonl:2: not a tuning entry" -- \
  "$digits" -o out/libd.a --tune --tune-db "$work/corrupt.jsonl"
cmp -s corrupt.jsonl out-corrupt.jsonl || fail "a failed --tune rewrote its database"
expect budget-alone 2 "--tune-budget needs --tune" -- \
  "$digits" -o out/libd.a --tune-budget 5
expect budget-syntax 2 "--tune-budget 'soon': expected seconds (60s) or candidates per kernel (8)" -- \
  "$digits" -o out/libd.a --tune --tune-budget soon
expect tune-cross 3 "not for --target riscv32 (riscv32-unknown-none-elf" -- \
  "$digits" -o out/libd.a --tune --target riscv32
expect tune-graph 2 "--emit graph stops before the kernels are planned" -- \
  "$digits" -o out/g.txt --emit graph --tune-db "$work/db.jsonl"

# A budget of one candidate per kernel: the default plans only.
mkdir one
if "$mlcc" "$digits" -o one/libd.a --tune --tune-budget 1 --tune-db one.jsonl 2>one.err &&
   grep -q "1 rounds" one.err && cmp -s one/libd.a plain/libd.a; then
  ok "--tune-budget 1: one round, the default plans"
else
  fail "--tune-budget 1"; cat one.err
fi

# reproducible NAME DB-MEASURE ARGS...: two searches with ARGS write the
# same database, every entry measured in DB-MEASURE, and the same library.
reproducible() {
  local name=$1 measure=$2
  shift 2
  mkdir "$name-a" "$name-b"
  if "$mlcc" "$digits" "$@" -o "$name-a/libd.a" --tune-db "$name-a.jsonl" 2>"$name-a.err" &&
     "$mlcc" "$digits" "$@" -o "$name-b/libd.a" --tune-db "$name-b.jsonl" 2>"$name-b.err" &&
     [[ $(grep -c "\"measure\": \"$measure\"" "$name-a.jsonl") -ge 2 ]] &&
     ! grep -q '"measure": "host-ns"' "$name-a.jsonl" && cmp -s "$name-a.jsonl" "$name-b.jsonl" &&
     cmp -s "$name-a/libd.a" "$name-b/libd.a" && ir_within "$name-a.err" &&
     # Every candidate computes what the default does: no round dropped.
     ! grep -q "change the model's outputs" "$name-a.err"; then
    ok "$name: $(grep '^mlcc: tune ' "$name-a.err" | cut -c1-160); the same database twice"
  else
    fail "$name"; cat "$name-a.err" "$name-b.err" | head -5
    diff "$name-a.jsonl" "$name-b.jsonl" | head -4
  fi
}
# The instruction-count search on a Cortex-M4 (firmware under QEMU with
# -icount shift=0) and the llvm-mca estimate for a core this machine does
# not run (AArch64 Cortex-A76: block counts under qemu-aarch64, each
# block's cycles from llvm-mca): deterministic, no seed, no noise.
if command -v qemu-system-arm >/dev/null && command -v arm-none-eabi-gcc >/dev/null; then
  reproducible cortex-m4-search qemu-instructions --target cortex-m4 --tune
else
  echo "skip cortex-m4 search: qemu-system-arm or arm-none-eabi-gcc is not installed"
fi
if command -v qemu-aarch64 >/dev/null && command -v aarch64-linux-gnu-gcc >/dev/null &&
   command -v llvm-mca-19 >/dev/null; then
  reproducible cortex-a76-estimate mca-cycles --target aarch64-linux --cpu cortex-a76 --tune \
    --tune-budget 3
else
  echo "skip cortex-a76 estimate: qemu-aarch64, aarch64-linux-gnu-gcc or llvm-mca-19 is not installed"
fi

if [[ $failures -ne 0 ]]; then
  echo "tune: $failures case(s) failed"
  exit 1
fi
echo "tune: all cases passed"
