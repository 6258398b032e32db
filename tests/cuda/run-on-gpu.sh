#!/usr/bin/env bash
# run-on-gpu.sh - the CUDA target on a GPU, in two steps.
#
#   tests/cuda/run-on-gpu.sh prepare BUILD OUT [cases|models|all]
#       On the build machine (mlcc, ../shared, python3 with onnx and torch):
#       BUILD is the build folder (mlcc, mlcc-conformance and the host run's
#       conformance-llvm.csv). Writes to OUT:
#       - cases/: CUDA source (--target cuda --name m) of every node case
#         that passes on the host, with its inputs and expected outputs as
#         raw files (prepare_cases.py);
#       - models/NAME/: resnet18, mobilenet_v2 and transformer_encoder
#         (tests/models/make_models.py) as libraries for sm_90 (+PTX),
#         with and without --no-library-dispatch, their input and the host
#         library's output on it.
#   tests/cuda/run-on-gpu.sh run OUT
#       On the GPU machine (nvcc, a GPU, python3 with numpy and torch, the
#       first on PATH that has numpy, else /usr/bin/python3; no
#       mlcc needed): compiles each case with nvcc (-arch=native), links it
#       with gpu_driver.c and compares its outputs (tolerance as on the
#       host); runs each model (both builds) and compares it with the host
#       library's output (max |gpu - host| <= 1e-4 * max |host|); runs
#       compute-sanitizer's memcheck on the models; prints the latency of
#       each model at batch 1 next to PyTorch eager on the same GPU (the same
#       architecture and seeds as the exported ONNX model).
#
# Exit status of run: 0 when at least 95% of the cases and every model pass.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=${1:-}
models=(resnet18 mobilenet_v2 transformer_encoder)

if [[ $mode == prepare ]]; then
  build=$(realpath "$2")
  mkdir -p "$3"
  out=$(realpath "$3")
  what=${4:-all}
  if [[ $what == cases || $what == all ]]; then
    rm -rf "$out/cases"
    "$build/tools/conformance/mlcc-conformance" --suite "$root/../shared/onnx-backend-tests" \
      --mlcc "$build/mlcc" --runtime-include "$root/runtime-c" \
      --driver "$root/tools/conformance/driver.c" --work "$out/cases" --backend cuda \
      --csv "$out/cases.csv" --sample-passed "$build/conformance-llvm.csv" --folders node \
      --compile-only --output m.cu --mlcc-arg=--target --mlcc-arg=cuda | tail -3
    /usr/bin/python3 "$here/prepare_cases.py" "$root/../shared/onnx-backend-tests" \
      "$out/cases.csv" "$out/cases" || exit 1
  fi
  if [[ $what == models || $what == all ]]; then
    /usr/bin/python3 "$root/tests/models/make_models.py" "$out/onnx" "${models[@]}" || exit 1
    cc -std=c99 -O2 -I "$root/runtime-c" -c "$root/tools/conformance/driver.c" -o "$out/driver.o"
    for m in "${models[@]}"; do
      d=$out/models/$m
      rm -rf "$d" && mkdir -p "$d/lib" "$d/nolib" "$d/host"
      cp "$out/onnx/$m/input.bin" "$d/input.bin"
      "$build/mlcc" "$out/onnx/$m/model.onnx" --target cuda --cuda-arch sm_90 --name m \
        -o "$d/lib/libm.a" || exit 1
      "$build/mlcc" "$out/onnx/$m/model.onnx" --target cuda --cuda-arch sm_90 --name m \
        --no-library-dispatch -o "$d/nolib/libm.a" || exit 1
      "$build/mlcc" "$out/onnx/$m/model.onnx" --name m -o "$d/host/libm.a" || exit 1
      cc -o "$d/host/run" "$out/driver.o" "$d/host/libm.a" -lm &&
        "$d/host/run" "$d/input.bin" -- "$d/host.bin" || exit 1
      echo "prepared $m"
    done
  fi
  exit 0
fi

if [[ $mode != run || $# -lt 2 ]]; then
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
out=$(realpath "$2")
# The Python with numpy: the first python3 on PATH (a GPU machine's own,
# with PyTorch), else Debian's.
py=/usr/bin/python3
if command -v python3 > /dev/null && python3 -c 'import numpy' 2> /dev/null; then
  py=$(command -v python3)
fi
# shellcheck source=nvcc.sh
source "$here/nvcc.sh"
[[ -n $nvcc ]] || { echo "run-on-gpu: no nvcc"; exit 77; }
nvidia-smi -L || { echo "run-on-gpu: no GPU"; exit 77; }
libs=(-L"$cuda_home/lib64" -lcudart -lcublas -lstdc++ -lm)
# The driver is C (nvcc -x cu would compile it as C++, where its C
# declarations of the library's functions and malloc's void * do not hold).
"${CC:-cc}" -std=c99 -O2 -I "$root/runtime-c" -I "$cuda_home/include" -c "$here/gpu_driver.c" \
  -o "$out/gpu_driver.o" || exit 1
failures=0

# --- conformance cases ------------------------------------------------------------
if [[ -d $out/cases ]]; then
  export nvcc out here py
  export libs_str="${libs[*]}"
  run_case() { # CASE_DIR -> prints "pass", "fail REASON"
    local d=$1 k n
    cd "$d" || return
    if ! "$nvcc" -std=c++17 -O3 -arch=native -c m.cu -o m.o > nvcc.log 2>&1 ||
       ! "$nvcc" -o run m.o m_weights.o "$out/gpu_driver.o" $libs_str > link.log 2>&1; then
      echo "fail $d: does not build"; return
    fi
    n=$("$py" -c 'import json,sys; print(len(json.load(open("meta.json"))["sets"]))')
    for ((k = 0; k < n; k++)); do
      mapfile -t ins < <("$py" -c "import json; [print(p) for p in json.load(open('meta.json'))['sets'][$k]['inputs']]")
      mapfile -t outs < <("$py" -c "import json; [print('set$k'+'_gpu%d.bin' % j) for j, _ in enumerate(json.load(open('meta.json'))['sets'][$k]['outputs'])]")
      if ! timeout 120 ./run "${ins[@]}" -- "${outs[@]}" > run.log 2>&1; then
        echo "fail $d: run: $(head -c 200 run.log)"; return
      fi
      if ! "$py" "$here/compare_outputs.py" . "$k" > cmp.log 2>&1; then
        echo "fail $d: $(head -c 200 cmp.log)"; return
      fi
    done
    echo "pass $d"
  }
  export -f run_case
  find "$out/cases" -name m.cu -printf '%h\n' | sort |
    xargs -P "$(nproc)" -I{} bash -c 'run_case "$@"' _ {} > "$out/cases.results"
  total=$(wc -l < "$out/cases.results")
  passed=$(grep -c '^pass' "$out/cases.results")
  grep '^fail' "$out/cases.results" | head -20
  echo "run-on-gpu: $passed of $total conformance cases correct on the GPU"
  ((passed * 100 >= total * 95)) || { echo "run-on-gpu: below 95%"; failures=$((failures + 1)); }
fi

# --- models ------------------------------------------------------------------------
table=()
for m in "${models[@]}"; do
  d=$out/models/$m
  [[ -d $d ]] || continue
  for v in lib nolib; do
    # A variant left out of OUT (to fit a transfer limit) is skipped, said so.
    [[ -f $d/$v/libm.a ]] || { echo "$m ($v): not in $out, skipped"; continue; }
    "$nvcc" -o "$d/$v/run" "$out/gpu_driver.o" "$d/$v/libm.a" "${libs[@]}" || {
      echo "FAIL $m ($v): link"; failures=$((failures + 1)); continue; }
    if ! "$d/$v/run" --time 100 "$d/input.bin" -- "$d/$v/out.bin" > "$d/$v/time.log"; then
      echo "FAIL $m ($v): run"; failures=$((failures + 1)); continue
    fi
    "$py" - "$d/host.bin" "$d/$v/out.bin" "$m ($v)" <<'EOP' || failures=$((failures + 1))
import sys, numpy as np
host, gpu = (np.fromfile(p, dtype="<f4") for p in sys.argv[1:3])
err = float(np.max(np.abs(host - gpu))) / max(float(np.max(np.abs(host))), 1e-30)
print("%s: max |gpu - host| = %.3g of the largest output" % (sys.argv[3], err))
sys.exit(0 if err <= 1e-4 else 1)
EOP
    if command -v compute-sanitizer > /dev/null || [[ -x $cuda_home/bin/compute-sanitizer ]]; then
      cs=$(command -v compute-sanitizer || echo "$cuda_home/bin/compute-sanitizer")
      if "$cs" --tool memcheck --error-exitcode 9 "$d/$v/run" "$d/input.bin" -- "$d/$v/cs.bin" \
           > "$d/$v/memcheck.log" 2>&1; then
        echo "$m ($v): compute-sanitizer memcheck: no error"
      else
        echo "FAIL $m ($v): compute-sanitizer memcheck:"; tail -20 "$d/$v/memcheck.log"
        failures=$((failures + 1))
      fi
    fi
  done
  ms=$(awk '/gpu_ms_per_inference/ {print $2}' "$d/lib/time.log" 2>/dev/null)
  ms_nolib=$(awk '/gpu_ms_per_inference/ {print $2}' "$d/nolib/time.log" 2>/dev/null)
  torch_ms=$("$py" - "$root/tests/models" "$m" <<'EOP'
import sys, torch
sys.path.insert(0, sys.argv[1])
import make_models as mm
seed, make = mm.MODELS[sys.argv[2]]
torch.manual_seed(seed)
model, x = make(torch.Generator().manual_seed(1000 + seed))
model = model.eval().cuda()
x = x.cuda()
with torch.no_grad():
    for _ in range(10):
        model(x)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(100):
        model(x)
    stop.record()
    torch.cuda.synchronize()
print("%.4f" % (start.elapsed_time(stop) / 100))
EOP
)
  table+=("$(printf '| %-20s | %10s | %12s | %12s |' "$m" "${ms:--}" "${ms_nolib:--}" "${torch_ms:--}")")
done
if ((${#table[@]})); then
  echo
  echo "Latency at batch 1, ms per inference ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)):"
  printf '| %-20s | %10s | %12s | %12s |\n' model "mlcc" "mlcc no-lib" "torch eager"
  printf '%s\n' "${table[@]}"
fi
[[ $failures -eq 0 ]] || { echo "run-on-gpu: $failures failure(s)"; exit 1; }
echo "run-on-gpu: all passed"
