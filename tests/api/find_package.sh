#!/usr/bin/env bash
# api-find-package: a program outside the tree (tests/api/consumer) finds the
# installed package with find_package(mlcc COMPONENTS compiler), links
# mlcc::compiler, compiles the digits model for the host and for Cortex-M4
# through the library, and the host library classifies the digits test set
# (examples/digits/main.c). The header's figures must equal what the API
# reported, and a bad model must fail with the command line's message and
# exit status.
#
# usage: tests/api/find_package.sh MLCC_BUILD_DIR WORKDIR
set -euo pipefail
build=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
work=$(realpath "$work")
fail() { echo "api-find-package: FAIL: $*"; exit 1; }
say() { echo "api-find-package: $*"; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "cmake --install"; }
for f in include/mlcc/Compiler.h include/mlcc/Check.h include/mlcc/Error.h; do
  [[ -f $work/prefix/$f ]] || fail "$f is not installed"
done
# The public headers need nothing but the standard library.
for h in "$work"/prefix/include/mlcc/{Compiler,Check,Error}.h; do
  if grep -E '^#include' "$h" | grep -vE '#include (<[a-z_]+>|"mlcc/(Compiler|Error)\.h")$'; then
    fail "$h includes more than the standard library and mlcc's public headers"
  fi
done

cmake -S "$root/tests/api/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; fail "configuring the consumer"; }
ninja -C "$work/consumer" > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the consumer"; }
say "built $(basename "$work/consumer/compile_model") against $work/prefix (mlcc::compiler)"

prog=$work/consumer/compile_model
mkdir -p "$work/host" "$work/m4"
"$prog" "$root/examples/digits/digits.onnx" "$work/host/libdigits.a" host > "$work/host.txt"
"$prog" "$root/examples/digits/digits.onnx" "$work/m4/libdigits.a" cortex-m4 > "$work/m4.txt"
for t in host m4; do
  [[ -f $work/$t/libdigits.a && -f $work/$t/digits.h ]] || fail "$t: no libdigits.a and digits.h"
  arena=$(awk '$1 == "arena" {print $2}' "$work/$t.txt")
  weights=$(awk '$1 == "weights" {print $2}' "$work/$t.txt")
  grep -q "^#define DIGITS_ARENA_SIZE ${arena}u\?\b" "$work/$t/digits.h" ||
    fail "$t: the API says arena $arena; the header: $(grep ARENA_SIZE "$work/$t/digits.h")"
  grep -q "^#define DIGITS_WEIGHTS_SIZE ${weights}u\?\b" "$work/$t/digits.h" ||
    fail "$t: the API says weights $weights; the header: $(grep WEIGHTS_SIZE "$work/$t/digits.h")"
  say "$t: arena $arena, weights $weights, code $(awk '$1 == "code" {print $2}' "$work/$t.txt") bytes (as the header says)"
done
file "$work/m4/libdigits.a" > /dev/null
cc -std=c99 -O2 -I "$work/host" "$root/examples/digits/main.c" "$work/host/libdigits.a" -lm \
  -o "$work/digits"
"$work/digits" "$root/examples/digits/test_set.bin" > "$work/run.txt" || { cat "$work/run.txt"; fail "digits"; }
say "$(grep '^accuracy:' "$work/run.txt")"

# A bad model: the command line's message and exit status.
printf 'not a model' > "$work/bad.onnx"
rc=0; "$prog" "$work/bad.onnx" "$work/bad.a" host 2> "$work/bad-api.txt" || rc=$?
cli=0; "$build/mlcc" "$work/bad.onnx" -o "$work/bad-cli.a" 2> "$work/bad-cli.txt" || cli=$?
[[ $rc -ne 0 && $rc -eq $cli ]] || fail "a bad model: exit $rc through the API, $cli from mlcc"
[[ "$(sed 's/^compile_model: //' "$work/bad-api.txt")" == "$(sed 's/^mlcc: error: //' "$work/bad-cli.txt")" ]] ||
  fail "a bad model: '$(cat "$work/bad-api.txt")' against '$(cat "$work/bad-cli.txt")'"
[[ ! -e $work/bad.a && ! -e $work/bad.h ]] || fail "a bad model left an output file"
say "a bad model: exit $rc, $(cat "$work/bad-cli.txt")"
say "passed"
