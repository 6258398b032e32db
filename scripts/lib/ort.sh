# shellcheck shell=bash
# scripts/lib/ort.sh - ONNX Runtime 1.30 for the tests that compare with it.
# Source it, then:
#
#   mlcc_require_ort ROOT   # installs onnxruntime-node@1.30.0 (npm, once)
#                           # into ${MLCC_CACHE:-ROOT/.cache}/ort and exports
#                           # NODE_PATH; returns non-zero when it cannot
#
# Node.js and npm come from Debian (scripts/lib/deps.sh). The install is
# locked, so tests running at the same time share one copy. Without
# ONNXRUNTIME_NODE_INSTALL=skip the package's install script would try to
# download GPU binaries, which fails offline.

mlcc_require_ort() {
  local root=$1
  local dir="${MLCC_CACHE:-$root/.cache}/ort"
  local pkg="$dir/node_modules/onnxruntime-node/package.json"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    mlcc_require_packages nodejs npm || return 1
  fi
  if ! grep -qs '"version": *"1\.30\.0"' "$pkg"; then
    mkdir -p "$dir" || return 1
    (
      flock 9 # another test may be installing it right now
      if ! grep -qs '"version": *"1\.30\.0"' "$pkg"; then
        echo "Installing onnxruntime-node@1.30.0 into $dir" >&2
        cd "$dir" || exit 1
        [[ -f package.json ]] || echo '{ "private": true }' >package.json
        if ! ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund \
             --loglevel=error onnxruntime-node@1.30.0 >npm-install.log 2>&1; then
          tail -n 20 npm-install.log >&2
          exit 1
        fi
      fi
    ) 9>"$dir/.install.lock" || { echo "error: cannot install onnxruntime-node" >&2; return 1; }
  fi
  export NODE_PATH="$dir/node_modules"
}
