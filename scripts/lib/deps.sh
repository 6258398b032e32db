# shellcheck shell=bash
# scripts/lib/deps.sh - installs missing Debian packages. Source it, then:
#
#   mlcc_require_packages cmake ninja-build ...
#
# Packages already installed (checked with dpkg-query) are left alone and
# nothing is printed; otherwise the missing ones are installed with apt-get,
# through sudo when not running as root. apt-get's output goes to a log that
# is shown only if the installation fails. Returns non-zero on failure.

# The apt-get package lists are refreshed at most once per shell.
_mlcc_apt_updated=0

# mlcc_missing_packages PKG... : prints the packages that are not installed.
mlcc_missing_packages() {
  local p
  for p in "$@"; do
    if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" != ii* ]]; then
      printf '%s\n' "$p"
    fi
  done
}

# mlcc_require_packages PKG... : installs the packages that are not installed.
mlcc_require_packages() {
  local missing log rc=0
  local -a as_root=()
  mapfile -t missing < <(mlcc_missing_packages "$@")
  ((${#missing[@]} > 0)) || return 0

  if [[ "$(id -u)" -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "error: missing Debian packages: ${missing[*]}; install them as root (sudo is not available)" >&2
      return 1
    fi
    as_root=(sudo)
  fi
  echo "Installing Debian packages: ${missing[*]}" >&2
  log="$(mktemp "${TMPDIR:-/tmp}/mlcc-apt.XXXXXX")"
  if ((_mlcc_apt_updated == 0)); then
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$log" 2>&1 || rc=$?
    ((rc == 0)) && _mlcc_apt_updated=1
  fi
  if ((rc == 0)); then
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || rc=$?
  fi
  if ((rc != 0)); then
    echo "error: apt-get failed (status $rc) installing: ${missing[*]}" >&2
    tail -n 30 "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
  mapfile -t missing < <(mlcc_missing_packages "$@")
  if ((${#missing[@]} > 0)); then
    echo "error: still not installed after apt-get: ${missing[*]}" >&2
    return 1
  fi
}
