#!/usr/bin/env bash
# Replays every input in tests/fuzz/regressions/ (models that once crashed
# mlcc, see README.md there) through the CLI. Each must compile (status 0) or
# be rejected with one line on stderr and status 1, 3 or 4, leaving no output
# file; a signal, an internal error (70) or a usage error fails the test.
#
# usage: tests/fuzz/regressions.sh MLCC WORKDIR
set -uo pipefail
mlcc=$(realpath "$1")
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
failures=0 count=0
for f in "$here"/regressions/*.onnx; do
  count=$((count + 1))
  name=$(basename "$f")
  rm -rf "$work/out" && mkdir -p "$work/out"
  timeout 120 "$mlcc" "$f" -o "$work/out/libm.a" 2> "$work/stderr" > /dev/null
  st=$?
  lines=$(wc -l < "$work/stderr")
  problem=""
  case $st in
    0) ;;
    1|3|4)
      [[ $lines -eq 1 ]] || problem+=" $lines lines on stderr (want 1);"
      [[ -z $(ls -A "$work/out") ]] || problem+=" left files behind;" ;;
    *) problem+=" exit status $st;" ;;
  esac
  if [[ -n $problem ]]; then
    echo "FAIL $name:$problem"; head -3 "$work/stderr" | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok   $name: status $st $(head -c 300 "$work/stderr")"
  fi
done
if ((count == 0)); then
  echo "no regression inputs found in $here/regressions"; exit 1
fi
if ((failures)); then
  echo "fuzz regressions: $failures of $count fail"; exit 1
fi
echo "fuzz regressions: all $count pass"
