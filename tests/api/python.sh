#!/usr/bin/env bash
# python: the mlcc Python module's tests (python/tests, pytest) with the
# module built in MLCC_PYTHON_DIR, Debian's python3, numpy and pytest.
#
# usage: tests/api/python.sh MLCC_PYTHON_DIR MLCC_BINARY WORKDIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib/deps.sh
source "$root/scripts/lib/deps.sh"
mlcc_require_packages python3-numpy python3-pytest python3-onnx || exit 77
rm -rf "$3" && mkdir -p "$3"
export PYTHONPATH=$1 MLCC_BINARY=$2
cd "$root"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --basetemp="$(realpath "$3")/tmp" python/tests
