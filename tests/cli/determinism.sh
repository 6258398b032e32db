#!/usr/bin/env bash
# The same input must give byte-identical outputs: every output kind, both
# backends, a cross target, and from two different output folders.
#
# usage: tests/cli/determinism.sh MLCC WORKDIR
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$root/examples/digits/digits.onnx
rm -rf "$work" && mkdir -p "$work/a" "$work/b"
failures=0
check() { # NAME FILE ARGS...
  local name=$1 file=$2
  shift 2
  "$mlcc" "$model" -o "$work/a/$file" "$@"
  "$mlcc" "$model" -o "$work/b/$file" "$@"
  local f
  for f in "$work/a/"*; do
    if ! cmp -s "$f" "$work/b/$(basename "$f")"; then
      echo "FAIL $name: $(basename "$f") differs"
      failures=$((failures + 1))
    fi
  done
  echo "ok   $name: $(cd "$work/a" && ls | tr '\n' ' ')"
  rm -rf "$work/a"/* "$work/b"/*
}
check lib        libdigits.a
check obj        digits.o
check c          digits.c
check header     digits.h
check llvm-ir    digits.ll
check asm        digits.s
check c-backend  libdigits.a --backend c
check cortex-m4  libdigits.a --target cortex-m4
check riscv64    libdigits.a --target riscv64-linux
check graph      graph.txt --emit graph
check kernels    kernels.txt --emit kernels

# Reporting never changes what is built: -v, --report, --report-html and
# --progress give the same library, on the digits model and, when
# ../shared is there, on a network whose kernels run parallel tasks (the
# order of a task's context once followed heap addresses).
reporting() { # NAME MODEL
  local name=$1 m=$2
  "$mlcc" "$m" -o "$work/a/libm.a"
  "$mlcc" "$m" -o "$work/b/libm.a" -v --report "$work/b/r.json" --report-html "$work/b/r.html" \
    --progress always 2>/dev/null
  if cmp -s "$work/a/libm.a" "$work/b/libm.a" && cmp -s "$work/a/m.h" "$work/b/m.h"; then
    echo "ok   $name: the same library with -v --report --report-html --progress always"
  else
    echo "FAIL $name: -v/--report/--progress change the library"
    failures=$((failures + 1))
  fi
  rm -rf "$work/a"/* "$work/b"/*
}
reporting reporting-digits "$model"
squeezenet=$root/../shared/onnx-backend-tests/light/test_squeezenet/model.onnx
if [[ -f $squeezenet ]]; then
  reporting reporting-squeezenet "$squeezenet"
else
  echo "note: $squeezenet is absent: the parallel network's check is skipped"
fi
[[ $failures -eq 0 ]] || { echo "determinism: $failures output(s) differ"; exit 1; }
echo "determinism: all outputs are byte-identical"
