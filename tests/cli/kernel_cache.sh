#!/usr/bin/env bash
# The kernel cache (--cache-dir, $MLCC_CACHE_DIR): a library made with a
# cold cache, a warm one, another thread count and no cache is the same
# bytes; a second model (here the same kernels under another library name)
# finds every kernel; two compiles sharing a cold folder at once both give
# that library and leave no temporary file; a bound trims the folder; a
# damaged entry is a miss, not a broken library. Also the library's
# objects apart: one per kernel, linked and run (digits' test set).
#
# usage: tests/cli/kernel_cache.sh MLCC WORKDIR
set -euo pipefail
mlcc=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work"
cd "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
same() { # NAME A B
  if cmp -s "$2" "$3"; then echo "ok   $1"; else fail "$1: $2 and $3 differ"; fi
}
found() { # LOG -> "H of N"
  sed -n 's/^mlcc: kernel cache: \([0-9]* of [0-9]*\) kernels found$/\1/p' "$1"
}
models=("$root/examples/digits/digits.onnx" "$root/tests/golden/models/conv_bn_relu_add.onnx")
for m in "${models[@]}"; do
  n=$(basename "$m" .onnx)
  mkdir -p "$n" && cd "$n"
  "$mlcc" "$m" -o none.a --name m
  "$mlcc" "$m" -o none-j1.a --name m -j 1
  same "$n: -j 1 and the default" none.a none-j1.a
  "$mlcc" "$m" -o cold.a --name m --cache-dir cache --time-passes 2>cold.log
  "$mlcc" "$m" -o warm.a --name m --cache-dir cache --time-passes 2>warm.log
  MLCC_CACHE_DIR=$PWD/cache "$mlcc" "$m" -o env.a --name m --time-passes 2>env.log
  same "$n: cold cache and no cache" none.a cold.a
  same "$n: warm cache and no cache" none.a warm.a
  same "$n: \$MLCC_CACHE_DIR and no cache" none.a env.a
  kernels=$(ar t none.a | grep -c '^mlcc_' || true)
  [ "$kernels" -ge 1 ] || fail "$n: no kernel objects in the library ($(ar t none.a | tr '\n' ' '))"
  [ "$(found cold.log)" = "0 of $kernels" ] || fail "$n: cold cache found '$(found cold.log)' (of $kernels)"
  [ "$(found warm.log)" = "$kernels of $kernels" ] || fail "$n: warm cache found '$(found warm.log)'"
  [ "$(found env.log)" = "$kernels of $kernels" ] || fail "$n: \$MLCC_CACHE_DIR found '$(found env.log)'"
  # Another library with the same kernels: every one found.
  "$mlcc" "$m" -o other.a --name other --cache-dir cache --time-passes 2>other.log
  [ "$(found other.log)" = "$kernels of $kernels" ] || fail "$n: another library found '$(found other.log)'"
  # Two compiles at once on a cold folder.
  "$mlcc" "$m" -o p1.a --name m --cache-dir shared -j 1 & p1=$!
  "$mlcc" "$m" -o p2.a --name m --cache-dir shared -j 1 & p2=$!
  wait $p1 || fail "$n: the first of two compiles sharing a cache failed"
  wait $p2 || fail "$n: the second of two compiles sharing a cache failed"
  same "$n: two processes, the first" none.a p1.a
  same "$n: two processes, the second" none.a p2.a
  left=$(find shared -name '*.tmp.*' | wc -l)
  [ "$left" = 0 ] || fail "$n: $left temporary files left in the shared cache"
  stored=$(find shared -name '*.o' | wc -l)
  [ "$stored" = "$kernels" ] || fail "$n: the shared cache holds $stored objects, not $kernels"
  # Damaged entries (empty, not an object) are misses.
  for f in $(find cache -name '*.o' | head -2); do : > "$f"; done
  for f in $(find cache -name '*.o' | tail -1); do echo garbage > "$f"; done
  "$mlcc" "$m" -o damaged.a --name m --cache-dir cache
  same "$n: damaged entries" none.a damaged.a
  cd ..
done

# A bound: the folder trimmed to it, the output unchanged.
m=${models[1]}
"$mlcc" "$m" -o bounded.a --name m --cache-dir small --cache-max 1k
same "bounded cache" conv_bn_relu_add/none.a bounded.a
bytes=$(find small -name '*.o' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
[ "$bytes" -le 1024 ] || fail "bounded cache: $bytes bytes kept past --cache-max 1k"
echo "ok   bounded cache: $bytes bytes kept"
if "$mlcc" "$m" -o x.a --cache-dir small --cache-max lots 2>bad.log; then
  fail "--cache-max lots was accepted"
elif ! grep -q -- "--cache-max" bad.log; then
  fail "--cache-max lots: the message does not name the option: $(cat bad.log)"
else
  echo "ok   --cache-max lots refused: $(head -1 bad.log)"
fi

# A cache folder that cannot be one: exit 1, the folder named, no output.
touch not-a-folder
if "$mlcc" "$m" -o nofolder.a --cache-dir not-a-folder 2>nofolder.log; then
  fail "--cache-dir naming a file was accepted"
elif ! grep -q "kernel cache folder 'not-a-folder'" nofolder.log || [ -e nofolder.a ]; then
  fail "--cache-dir naming a file: $(cat nofolder.log), output left: $(ls nofolder.* | tr '\n' ' ')"
else
  echo "ok   --cache-dir naming a file refused: $(head -1 nofolder.log)"
fi
if "$mlcc" "$m" -o x.a -j -1 2>jobs.log || ! grep -q -- "-j" jobs.log; then
  fail "-j -1: $(cat jobs.log)"
else
  echo "ok   -j -1 refused: $(head -1 jobs.log)"
fi

# The objects apart link and run, from the cache: digits' test set on the host.
mkdir -p run
"$mlcc" "${models[0]}" -o run/libdigits.a --cache-dir digits/cache
if cc -std=c99 -I run "$root/examples/digits/main.c" run/libdigits.a -lm -o run/digits &&
   ./run/digits "$root/examples/digits/test_set.bin" >run/log 2>&1; then
  echo "ok   digits from cached kernels: $(tail -1 run/log)"
else
  fail "digits from cached kernels: $(tail -3 run/log 2>/dev/null)"
fi
if [ "$failures" = 0 ]; then echo "kernel cache: all checks passed"; else echo "kernel cache: $failures failed"; exit 1; fi
