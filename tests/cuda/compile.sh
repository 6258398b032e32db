#!/usr/bin/env bash
# compile.sh - the CUDA target without a GPU: what mlcc writes for --target
# cuda compiles with nvcc and links.
#
#   tests/cuda/compile.sh MLCC CONFORMANCE WORK SUITE HOST_CSV MODELS_DIR
#
# MLCC is the mlcc binary, CONFORMANCE the mlcc-conformance harness, WORK a
# scratch folder, SUITE the ONNX backend cases, HOST_CSV the CSV of the
# host's conformance run (its passed cases are the ones tried), MODELS_DIR
# the models that tests/models/compare_ort.sh exported (resnet18,
# mobilenet_v2, transformer_encoder; exported here when absent).
#
#  1. Every host-passing case is compiled with --target cuda to CUDA source
#     (the harness freezes inputs as on the host); the sources are compiled
#     by nvcc in batches (one translation unit per batch, -Werror
#     all-warnings, sm_75 and sm_90), and a program that refers to every
#     model's entry points links against them, cudart and cuBLAS. The count
#     is printed.
#  2. The three models are compiled to libraries by mlcc itself (nvcc, sm_75
#     and sm_90) and linked into a program; their headers compile with
#     cc -std=c99 -Wall -Wextra -Werror; their sources (kernels only: the
#     weights are NAME_weights.o) and weights objects are byte-identical
#     from run to run; resnet18's classifier is a cuBLAS call, and a
#     generated kernel with --no-library-dispatch; run-on-gpu.sh's driver
#     (gpu_driver.c) compiles and links with each. The sizes of the source
#     and the weights object and the time of the library build are printed.
#
# Exit status: 0 passed, 1 failed, 77 skipped (no nvcc, or no suite).
set -uo pipefail
mlcc=$(realpath "$1")
conformance=$(realpath "$2")
mkdir -p "$3"
work=$(realpath "$3")
suite=$4
host_csv=$5
models=$6
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# shellcheck source=nvcc.sh
source "$here/nvcc.sh"
if [[ -z $nvcc ]]; then
  echo "cuda: nvcc not found (CUDA_PATH, /usr/local/cuda, PATH): skipping the CUDA tests"
  exit 77
fi
echo "cuda: $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*'))"
jobs=$(nproc 2>/dev/null || echo 2)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
archs=(-gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90)
link_libs=(-L"$cuda_home/lib64" -lcudart -lcublas -lstdc++ -lm)

# --- 1. conformance cases -------------------------------------------------------
if [[ ! -d $suite ]]; then
  echo "cuda: $suite not found (../shared is absent): skipping the conformance cases"
elif [[ ! -f $host_csv ]]; then
  fail "no host conformance results in $host_csv"
else
  rm -rf "$work/cases"
  "$conformance" --suite "$suite" --mlcc "$mlcc" --runtime-include "$root/runtime-c" \
    --driver "$root/tools/conformance/driver.c" --work "$work/cases" --backend cuda \
    --csv "$work/cases.csv" --sample-passed "$host_csv" --compile-only --unique-names \
    --output m.cu --mlcc-arg=--target --mlcc-arg=cuda > "$work/cases.log" 2>&1
  host_passed=$(grep -c ',passed,' "$host_csv")
  generated=$(grep -c ',passed,' "$work/cases.csv")
  grep ',failed,' "$work/cases.csv" | head -5 | sed 's/^/  failed: /'
  grep ',unsupported,' "$work/cases.csv" | head -5 | sed 's/^/  unsupported: /'
  grep -q ',failed,' "$work/cases.csv" && fail "mlcc --target cuda failed on a case (see above)"
  # Batches of sources, one translation unit each.
  find "$work/cases" -name m.cu | sort > "$work/sources.txt"
  rm -rf "$work/batches" && mkdir -p "$work/batches"
  split -l 120 -d -a 3 "$work/sources.txt" "$work/batches/b"
  for list in "$work"/batches/b[0-9][0-9][0-9]; do
    while read -r f; do printf '#include "%s"\n' "$f"; done < "$list" > "$list.cu"
  done
  ls "$work"/batches/b*.cu | xargs -P "$jobs" -I{} sh -c \
    '"$0" -std=c++17 -O1 -Werror all-warnings "$@" -c "{}" -o "{}.o" > "{}.log" 2>&1 || echo "{}" >> "$1"' \
    "$nvcc" "${archs[@]}" 2>/dev/null
  compiled=0
  for list in "$work"/batches/b[0-9][0-9][0-9]; do
    n=$(wc -l < "$list")
    if [[ ! -f $list.cu.o ]]; then
      fail "nvcc failed on batch $(basename "$list"):"
      grep -m 8 -i "error" "$list.cu.log" | sed 's/^/    | /'
      continue
    fi
    # A program that refers to every model's entry points.
    {
      echo '#include <stdio.h>'
      echo '#include <stddef.h>'
      echo 'typedef int (*entry)(void);'
      while read -r f; do
        m=$(sed -n 's/^mlcc_status \([A-Za-z0-9_]*\)_load_weights(.*/\1/p' "$f")
        echo "extern int ${m}_run(); extern int ${m}_load_weights(); extern const void *${m}_info(void);"
      done < "$list"
      echo 'int main(void) { entry all[] = {'
      while read -r f; do
        m=$(sed -n 's/^mlcc_status \([A-Za-z0-9_]*\)_load_weights(.*/\1/p' "$f")
        echo "  (entry)${m}_run, (entry)${m}_load_weights, (entry)${m}_info,"
      done < "$list"
      echo '}; printf("%zu\n", sizeof all / sizeof all[0]); return 0; }'
    } > "$list.main.c"
    # Each case's weights image is an object of its own (NAME_weights.o).
    mapfile -t weights < <(while read -r f; do ls "$(dirname "$f")"/*_weights.o; done < "$list")
    if cc -std=gnu99 -w "$list.main.c" "$list.cu.o" "${weights[@]}" "${link_libs[@]}" -o "$list.run" \
         > "$list.link.log" 2>&1; then
      compiled=$((compiled + n))
    else
      fail "batch $(basename "$list") does not link:"; head -5 "$list.link.log" | sed 's/^/    | /'
    fi
  done
  echo "cuda: $compiled of $host_passed host-passing conformance cases compiled by nvcc" \
       "(sm_75, sm_90, -Werror) and linked with cudart and cuBLAS" \
       "($generated generated, $((host_passed - generated)) not supported by the CUDA target)"
  [[ $compiled -eq $generated ]] || fail "$((generated - compiled)) generated cases did not compile or link"
  # How the launches map (compiler/kernel/GpuSchedule.h): blocks whose
  # threads share work in phases (barriers, shared memory), single threads.
  xargs cat < "$work/sources.txt" | awk '
    /__global__/ { n++; shared = 0; if ($0 ~ /__launch_bounds__\(1\)/) single++ }
    /__syncthreads/ && !shared { shared = 1; phases++ }
    END { printf "cuda: %d kernels (launches): %d with block-wide phases (shared memory, barriers), %d on one thread\n", n, phases, single }'
fi

# --- 2. models ------------------------------------------------------------------------
wanted=(resnet18 mobilenet_v2 transformer_encoder)
missing=()
for m in "${wanted[@]}"; do [[ -f $models/$m/model.onnx ]] || missing+=("$m"); done
if ((${#missing[@]})); then
  echo "cuda: exporting ${missing[*]}"
  /usr/bin/python3 "$root/tests/models/make_models.py" "$models" "${missing[@]}" > "$work/export.log" 2>&1 ||
    { echo "cuda: the models could not be exported (python3-torch?): skipping them"; tail -3 "$work/export.log"; }
fi
for m in "${wanted[@]}"; do
  f=$models/$m/model.onnx
  [[ -f $f ]] || continue
  d=$work/built/$m
  rm -rf "$d" && mkdir -p "$d/lib" "$d/src1" "$d/src2" "$d/nolib"
  t0=$(date +%s.%N)
  if ! "$mlcc" "$f" --target cuda --cuda-arch sm_75,sm_90 -o "$d/lib/lib$m.a" --name "$m" > "$d/lib.log" 2>&1; then
    fail "$m: mlcc --target cuda -o lib$m.a failed:"; tail -5 "$d/lib.log" | sed 's/^/    | /'
    continue
  fi
  lib_seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  cat > "$d/main.c" <<EOC
#include "$m.h"
#include <stdio.h>
int main(void) {
  /* Without a GPU only the arguments are checked: NULL inputs. */
  mlcc_status s = ${m}_run(NULL, NULL, NULL, NULL, 0, NULL, NULL);
  printf("%s: %s, weights %u bytes, arena %u bytes\n", ${m}_info()->name,
         mlcc_status_string(s), (unsigned)${m^^}_WEIGHTS_SIZE, (unsigned)${m^^}_ARENA_SIZE);
  return s == MLCC_ERR_NULL_ARGUMENT ? 0 : 1;
}
EOC
  if ! cc -std=c99 -Wall -Wextra -Werror -I "$d/lib" "$d/main.c" "$d/lib/lib$m.a" "${link_libs[@]}" \
       -o "$d/run" > "$d/link.log" 2>&1; then
    fail "$m: the program does not build against lib$m.a:"; head -5 "$d/link.log" | sed 's/^/    | /'
    continue
  fi
  "$d/run" || fail "$m: the linked program failed"
  # The driver of run-on-gpu.sh (C, compiled as that script does, its m_
  # names mapped to this library's), so that it cannot stop building
  # unnoticed where no GPU runs it.
  if ! cc -std=c99 -O2 -Wall -Werror -I "$root/runtime-c" -I "$cuda_home/include" \
       -Dm_run_ptrs="${m}_run_ptrs" -Dm_load_weights="${m}_load_weights" -Dm_info="${m}_info" \
       -c "$here/gpu_driver.c" -o "$d/gpu_driver.o" > "$d/gpu_driver.log" 2>&1 ||
     ! "$nvcc" -o "$d/gpu_run" "$d/gpu_driver.o" "$d/lib/lib$m.a" "${link_libs[@]}" \
       >> "$d/gpu_driver.log" 2>&1; then
    fail "$m: tests/cuda/gpu_driver.c does not build with lib$m.a:"
    head -5 "$d/gpu_driver.log" | sed 's/^/    | /'
  fi
  "$mlcc" "$f" --target cuda -o "$d/src1/$m.cu" --name "$m" > /dev/null 2>&1 &&
    "$mlcc" "$f" --target cuda -o "$d/src2/$m.cu" --name "$m" > /dev/null 2>&1 ||
    fail "$m: mlcc -o $m.cu failed"
  cmp -s "$d/src1/$m.cu" "$d/src2/$m.cu" && cmp -s "$d/src1/$m.h" "$d/src2/$m.h" &&
    cmp -s "$d/src1/${m}_weights.o" "$d/src2/${m}_weights.o" ||
    fail "$m: the CUDA source or its weights object differs from run to run"
  # The weights are an object of their own, never source text for nvcc.
  echo "cuda: $m: $m.cu $(stat -c %s "$d/src1/$m.cu") bytes, ${m}_weights.o" \
       "$(stat -c %s "$d/src1/${m}_weights.o") bytes; lib$m.a (nvcc, sm_75 and sm_90) in $lib_seconds s"
  grep -q 'MLCC_ALIGNED = {' "$d/src1/$m.cu" && fail "$m: the CUDA source holds constant arrays"
  gemms=$(grep -c 'cublasSgemmStridedBatched(h' "$d/src1/$m.cu")
  launches=$(grep -c '<<<' "$d/src1/$m.cu")
  "$mlcc" "$f" --target cuda --no-library-dispatch -o "$d/nolib/$m.cu" --name "$m" > "$d/nolib.log" 2>&1 ||
    fail "$m: --no-library-dispatch failed"
  nolib_gemms=$(grep -c 'cublasSgemm\|cublas_v2.h' "$d/nolib/$m.cu")
  echo "cuda: $m: library and program built; $gemms cuBLAS calls and $launches launches;" \
       "--no-library-dispatch: $(grep -c '<<<' "$d/nolib/$m.cu") launches, $nolib_gemms cuBLAS calls"
  ((gemms > 0)) || fail "$m: no matrix product is a cuBLAS call"
  ((nolib_gemms == 0)) || fail "$m: --no-library-dispatch still calls cuBLAS"
  if [[ $m == resnet18 ]]; then
    # The classifier (Gemm 512 -> 1000): a cuBLAS call, or its own kernel.
    grep -A3 "cublasSgemmStridedBatched(h" "$d/src1/$m.cu" | grep -q "1000, 1, 512" ||
      fail "resnet18: the classifier is not a cuBLAS call of 1000 x 1 x 512"
    grep -q "_k[0-9]*_gemm_l0<<<" "$d/nolib/$m.cu" ||
      fail "resnet18: --no-library-dispatch has no generated kernel for the classifier"
  fi
done

[[ $failures -eq 0 ]] || { echo "cuda: $failures failure(s)"; exit 1; }
echo "cuda: all passed"
