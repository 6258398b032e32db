#!/usr/bin/env bash
# Float-to-integer casts of vectors saturate like the scalar ones: NaN to 0,
# values beyond the integer type's range to its limits (the LLVM backend
# converts f32 vectors with vector operations, see saturatingVectorToInt in
# targets/llvm/LLVMEmitter.cpp). A Cast of 32 floats (NaN, infinities, the
# limits of every integer type and values around them) to int8, uint8,
# int32, uint32 and int64 is compiled with both backends and its output
# compared with the saturating conversion computed in Python integers.
#
# usage: tests/cli/cast_saturation.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
if ! /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
  echo "cast-saturation: SKIPPED (python3-onnx or numpy missing)"
  exit 77
fi
/usr/bin/python3 - <<'PY' || exit 1
import numpy as np, onnx
from onnx import helper, TensorProto as T
x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483520.0, -2147483648.0, 1.5,
              -1.5, 255.9, 256.0, -0.5, 127.9, 128.0, -128.0, -129.0, 4294967040.0,
              4294967296.0, 1e20, -1e20, 0.0, -0.0, 65535.5, 7.0, 8.0, 9.99, -9.99,
              100.0, 200.0, 300.0, -300.0, 42.0], dtype=np.float32)
x.tofile("x.bin")
for name, to, dt in [("i8", T.INT8, np.int8), ("u8", T.UINT8, np.uint8), ("i32", T.INT32, np.int32),
                     ("u32", T.UINT32, np.uint32), ("i64", T.INT64, np.int64)]:
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=to)], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, [32])],
                          [helper.make_tensor_value_info("y", to, [32])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, f"cast_{name}.onnx")
    info = np.iinfo(dt)
    # In Python integers: NaN to 0, toward zero, clamped to the type's range.
    sat = lambda v: 0 if np.isnan(v) else (info.max if v == np.inf else info.min if v == -np.inf
                                           else min(max(int(v), int(info.min)), int(info.max)))
    np.array([sat(float(v)) for v in x], dtype=dt).tofile(f"want_{name}.bin")
PY
cat > driver.c <<'C'
#include <stdint.h>
#include <stdio.h>
#include "m.h"
mlcc_status m_run_ptrs(const void *const *, void *const *, void *, size_t);
int main(void) {
  float x[32];
  int64_t y[32];
  static unsigned char arena[1 << 16] __attribute__((aligned(64)));
  FILE *f = fopen("x.bin", "rb");
  if (!f || fread(x, 4, 32, f) != 32) return 2;
  fclose(f);
  const void *in[1] = {x};
  void *out[1] = {y};
  if (m_run_ptrs(in, out, arena, sizeof arena)) return 3;
  fwrite(y, 1, sizeof y, stdout);
  return 0;
}
C
failures=0
for t in i8 u8 i32 u32 i64; do
  for backend in llvm c; do
    d=$t-$backend
    mkdir -p "$d"
    if ! "$mlcc" "cast_$t.onnx" --name m --backend "$backend" -o "$d/libm.a" ||
       ! cc -I "$d" -I "$root/runtime-c" driver.c "$d/libm.a" -lm -o "$d/run" ||
       ! "$d/run" > "$d/out.bin"; then
      echo "FAIL $t ($backend): did not compile or run"
      failures=$((failures + 1))
      continue
    fi
    size=$(stat -c %s "want_$t.bin")
    if ! cmp -s -n "$size" "$d/out.bin" "want_$t.bin"; then
      echo "FAIL $t ($backend): $(cmp -n "$size" "$d/out.bin" "want_$t.bin")"
      failures=$((failures + 1))
    else
      echo "ok   $t ($backend)"
    fi
  done
done
if ((failures > 0)); then
  echo "cast-saturation: $failures failure(s)"
  exit 1
fi
echo "cast-saturation: all casts saturate on both backends"
