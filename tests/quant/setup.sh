# setup.sh - the start every tests/quant script shares (sourced):
#   SCRIPT MLCC WORKDIR
# sets mlcc, work (created), here, root, cc, python, failed=0, skipped=(),
# require_ort_or_note and finish (below),
# ort_node (the command that runs ONNX Runtime's node: ORT_PREFIX, e.g.
# "qemu-x86_64 -cpu EPYC-Rome" for its AVX2 path, then node; see ort_int8.py);
# exits 2 on bad usage and 77 when /usr/bin/python3 lacks onnx or numpy.
if [[ $# -ne 2 ]]; then
  echo "usage: $0 MLCC WORKDIR (the comment at the top of this script says more)" >&2
  exit 2
fi
mlcc="$(realpath "$1")"
work="$2"
mkdir -p "$work" && work="$(realpath "$work")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cc="${CC:-cc}"
python=/usr/bin/python3
failed=0
skipped=()
read -r -a ort_node <<<"${ORT_PREFIX:-}"
ort_node+=("$(command -v node || echo node)")

if ! "$python" -c 'import onnx, numpy' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 cannot import onnx and numpy (python3-onnx, python3-numpy)"
  exit 77
fi

# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
# shellcheck source=../../scripts/lib/ort.sh
source "$root/scripts/lib/ort.sh"
# Sets ort=1 when onnxruntime-node 1.30 is there (installed if need be);
# else ort=0, a note, and "the ONNX Runtime comparisons" in skipped.
require_ort_or_note() {
  ort=0
  if mlcc_require_ort "$root"; then
    ort=1
  else
    echo "note: onnxruntime-node 1.30 cannot be installed: ONNX Runtime comparisons left out"
    skipped+=("the ONNX Runtime comparisons")
  fi
}

# The summary and exit status: 1 when a check failed, 77 when a part was
# skipped (and nothing failed), else 0.
finish() {
  echo
  if ((failed > 0)); then
    echo "$failed check(s) FAILED"
    exit 1
  fi
  if ((${#skipped[@]} > 0)); then
    echo "passed; skipped: ${skipped[*]}"
    exit 77
  fi
  echo "all passed"
  exit 0
}
