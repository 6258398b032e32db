#!/usr/bin/env bash
# The library contract, on every target preset:
#  - no mutable global state: no writable data in the object (.data/.bss);
#  - nothing needed from the target but libm (and memcpy/memset/memmove, or
#    their Arm run-time ABI names __aeabi_memcpy/memset/memclr...):
#    the undefined symbols are checked against that list (FPU-less targets
#    may also need the compiler's own soft-float helpers, which every gcc
#    link provides);
#  - the run function checks its arguments (status_checks.c, host);
#  - NAME_run_with through runtime-c/mlcc_pthread.c computes what NAME_run
#    computes (run_with_checks.c, host).
# Models: the digits example, and when ../shared is present a few
# conformance models that use many math functions.
#
# usage: tests/cli/library_contract.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
suite=$root/../shared/onnx-backend-tests/node
rm -rf "$work" && mkdir -p "$work"
failures=0

libm='acos|acosh|asin|asinh|atan|atanh|cos|cosh|erf|exp|exp2|expm1|fmod|log|log2|log10|log1p|pow|rint|round|roundeven|nearbyint|sin|sinh|tan|tanh|floor|ceil|trunc|fabs|sqrt|fmin|fmax|ldexp|frexp'
allowed="^(($libm)f?|memcpy|memset|memmove|__aeabi_mem(cpy|move|set|clr)[48]?)\$"
softfloat='^(__aeabi_[a-z0-9]+|__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|unord)[sd]f[23]|__(fix|fixuns)[sd]f[sd]i|__float(un)?[sd]i[sd]f|__(extend|trunc)[sd]f[sd]f2|__[a-z]+di3|__clzsi2)$'

models=("$root/examples/digits/digits.onnx")
for c in test_erf test_tanh test_softplus test_gelu_tanh_1 test_pow test_mod_mixed_sign_float32 test_acosh test_round; do
  [[ -f $suite/$c/model.onnx ]] && models+=("$suite/$c/model.onnx")
done

for target in host x86_64 aarch64-linux cortex-m0plus cortex-m4 cortex-m7 cortex-m55 riscv64-linux riscv64-linux-v riscv32 riscv32f; do
  undef_all=""
  for m in "${models[@]}"; do
    name=$(basename "$(dirname "$m")")
    [[ $m == */digits.onnx ]] && name=digits
    out=$work/$target-$name
    mkdir -p "$out"
    if ! "$mlcc" "$m" --target "$target" -o "$out/libm.a" --name m --report "$out/report.json" 2> "$out/err"; then
      echo "FAIL $target $name: $(cat "$out/err")"; failures=$((failures + 1)); continue
    fi
    w=$(grep -o '"writable_bytes": [0-9]*' "$out/report.json" | grep -o '[0-9]*$')
    if [[ $w != 0 ]]; then
      echo "FAIL $target $name: $w bytes of writable data"; failures=$((failures + 1))
    fi
    u=$(tr -d '\n' < "$out/report.json" | grep -o '"undefined_symbols": \[[^]]*\]' | grep -o '"[^"]*"' | tr -d '"' | grep -v undefined_symbols)
    for s in $u; do
      if [[ ! $s =~ $allowed ]]; then
        if [[ $target =~ ^(cortex-m0plus|riscv32)$ && $s =~ $softfloat ]]; then
          continue
        fi
        echo "FAIL $target $name: needs '$s'"; failures=$((failures + 1))
      fi
    done
    undef_all+=" $u"
  done
  echo "ok   $target: needs only:$(echo $undef_all | tr ' ' '\n' | sort -u | tr '\n' ' ')"
done

# The run function's argument checks, on the host.
mkdir -p "$work/status"
"$mlcc" "$root/examples/digits/digits.onnx" -o "$work/status/libdigits.a" &&
cc -std=c99 -Wall -Wextra -Werror -pedantic -I "$work/status" "$root/tests/cli/status_checks.c" \
   "$work/status/libdigits.a" -lm -o "$work/status/checks" &&
"$work/status/checks" || { echo "FAIL status checks"; failures=$((failures + 1)); }

# The parallel-for hook with the pthread pool, on a model whose kernels
# have parallel loops (the digits convolutions and Gemm).
mkdir -p "$work/run_with"
"$mlcc" "$root/examples/digits/digits.onnx" --name m -o "$work/run_with/libm.a" &&
cc -std=c99 -Wall -Wextra -Werror -I "$work/run_with" -I "$root/runtime-c" \
   "$root/tests/cli/run_with_checks.c" "$root/runtime-c/mlcc_pthread.c" \
   "$work/run_with/libm.a" -lm -pthread -o "$work/run_with/checks" &&
"$work/run_with/checks" || { echo "FAIL run_with checks"; failures=$((failures + 1)); }

[[ $failures -eq 0 ]] || { echo "library_contract: $failures problem(s)"; exit 1; }
echo "library_contract: every target keeps the contract"
