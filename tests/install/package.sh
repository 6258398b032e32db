#!/usr/bin/env bash
# install-package: mlcc as a user gets it. Installs the build into a prefix,
# builds the CMake example (examples/cmake) against it with find_package and
# mlcc_add_model, runs the digits program, checks that the model is rebuilt
# exactly when it must be (Ninja and Makefiles), builds the example as
# Cortex-M4 firmware with its toolchain file and runs it under QEMU, and makes
# the .deb with cpack, checks its Depends and runs the mlcc it holds.
# Nothing is installed into the system.
#
# usage: tests/install/package.sh MLCC_BUILD_DIR WORKDIR
# The Cortex-M4 part is skipped (with a message) when arm-none-eabi-gcc or
# qemu-system-arm is missing, and the .deb part when dpkg-deb, dpkg-shlibdeps
# or file is missing; the rest always runs.
set -euo pipefail
build=$(realpath "$1")
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
example=$root/examples/cmake
testset=$root/examples/digits/test_set.bin
rm -rf "$work" && mkdir -p "$work"
work=$(realpath "$work")
prefix=$work/prefix

say() { echo "install-package: $*"; }
fail() { echo "install-package: FAIL: $*"; exit 1; }
# run LOG CMD...: runs CMD with its output in LOG, shown when it fails.
run() {
  local log=$1; shift
  "$@" > "$log" 2>&1 || { cat "$log"; fail "$* (log: $log)"; }
}
have() { command -v "$1" > /dev/null; }

# --- (a) cmake --install ----------------------------------------------------------
run "$work/install.log" cmake --install "$build" --prefix "$prefix"
version=$("$prefix/bin/mlcc" --version) || fail "the installed bin/mlcc --version failed"
say "installed $version into $prefix"
config=$(find "$prefix" -path '*/cmake/mlcc/mlccConfig.cmake' | head -n 1)
[[ -n $config ]] || fail "no lib/cmake/mlcc/mlccConfig.cmake under $prefix"
for f in include/mlcc/mlcc.h include/mlcc/mlcc_pthread.h share/mlcc/mlcc_pthread.c \
         "${config#"$prefix"/}" "$(dirname "${config#"$prefix"/}")/mlccConfigVersion.cmake" \
         "$(dirname "${config#"$prefix"/}")/MlccAddModel.cmake"; do
  [[ -f $prefix/$f ]] || fail "$prefix/$f is missing"
done
package_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$(dirname "$config")/mlccConfigVersion.cmake")
[[ $version == "mlcc $package_version" ]] ||
  fail "mlcc --version says '$version', the package version file '$package_version'"
say "headers, mlcc_pthread.c and the CMake package ${config#"$prefix"/} (version $package_version) are installed"

# --- a call without MODEL is a configure error that says so ------------------------
mkdir -p "$work/bad"
cat > "$work/bad/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(bad LANGUAGES C)
find_package(mlcc REQUIRED)
mlcc_add_model(m NAME m)
CMAKE
if cmake -S "$work/bad" -B "$work/bad/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/bad.log" 2>&1; then
  fail "mlcc_add_model without MODEL configured without an error"
fi
grep -q "MODEL <model.onnx> is required" "$work/bad.log" ||
  { cat "$work/bad.log"; fail "mlcc_add_model without MODEL: not the expected message"; }
say "mlcc_add_model without MODEL fails at configure time with a clear message"

# --- (b) the example on the host ---------------------------------------------------
host=$work/host
run "$work/host-configure.log" cmake -S "$example" -B "$host" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
grep -qx "mlcc_DIR:PATH=$(dirname "$config")" "$host/CMakeCache.txt" ||
  fail "the example did not find the installed package ($(grep '^mlcc_DIR' "$host/CMakeCache.txt"))"
run "$work/host-build.log" cmake --build "$host"
"$host/digits" "$testset" > "$work/host-run.log" 2>&1 ||
  { cat "$work/host-run.log"; fail "the host digits program failed"; }
say "host example: $(grep '^accuracy:' "$work/host-run.log")"

# --- (c) rebuilds ------------------------------------------------------------------
run "$work/host-rebuild.log" cmake --build "$host"
grep -q "no work to do" "$work/host-rebuild.log" ||
  { cat "$work/host-rebuild.log"; fail "a second build of the example was not a no-op"; }
run "$work/host-configure-O2.log" cmake "$host" -DMLCC_EXTRA_OPTIONS=-O2
run "$work/host-build-O2.log" cmake --build "$host"
grep -q "mlcc: compiling digits.onnx" "$work/host-build-O2.log" ||
  { cat "$work/host-build-O2.log"; fail "changing MLCC_EXTRA_OPTIONS did not recompile the model"; }
grep -qx -- "-O2" "$host/mlcc/digits_model/digits.cmdline" || fail "-O2 is not in digits.cmdline"
"$host/digits" "$testset" > "$work/host-run-O2.log" 2>&1 ||
  { cat "$work/host-run-O2.log"; fail "the host digits program (-O2) failed"; }
run "$work/host-rebuild-O2.log" cmake --build "$host"
grep -q "no work to do" "$work/host-rebuild-O2.log" ||
  { cat "$work/host-rebuild-O2.log"; fail "the build after -O2 was not a no-op"; }
say "Ninja: a second build is a no-op; -DMLCC_EXTRA_OPTIONS=-O2 recompiles the model and relinks"

# Makefiles do not track command lines: the .cmdline file must do it.
if have make; then
  mk=$work/host-make
  run "$work/make-configure.log" cmake -S "$example" -B "$mk" -G "Unix Makefiles" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix"
  run "$work/make-build.log" cmake --build "$mk"
  run "$work/make-rebuild.log" cmake --build "$mk"
  ! grep -q "mlcc: compiling" "$work/make-rebuild.log" ||
    { cat "$work/make-rebuild.log"; fail "Makefiles: a second build recompiled the model"; }
  run "$work/make-configure-O2.log" cmake "$mk" -DMLCC_EXTRA_OPTIONS=-O2
  run "$work/make-build-O2.log" cmake --build "$mk"
  grep -q "mlcc: compiling digits.onnx" "$work/make-build-O2.log" ||
    { cat "$work/make-build-O2.log"; fail "Makefiles: changing MLCC_EXTRA_OPTIONS did not recompile the model"; }
  "$mk/digits" "$testset" > "$work/make-run.log" 2>&1 ||
    { cat "$work/make-run.log"; fail "the digits program built with Makefiles failed"; }
  say "Makefiles: a second build leaves the model alone; -DMLCC_EXTRA_OPTIONS=-O2 recompiles it"
else
  say "skipping the Makefile rebuild check: make is not installed"
fi

# --- (d) Cortex-M4 firmware under QEMU ---------------------------------------------
missing=()
for tool in arm-none-eabi-gcc qemu-system-arm; do have "$tool" || missing+=("$tool"); done
if ((${#missing[@]})); then
  say "SKIPPED the Cortex-M4 firmware part: ${missing[*]} not installed"
else
  m4=$work/cortex-m4
  run "$work/m4-configure.log" cmake -S "$example" -B "$m4" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_TOOLCHAIN_FILE=toolchains/cortex-m4.cmake  # as in examples/cmake/README.md
  run "$work/m4-build.log" cmake --build "$m4"
  grep -qx "cortex-m4" "$m4/mlcc/digits_model/digits.cmdline" ||
    fail "the firmware's model was not compiled with --target cortex-m4"
  set +e
  timeout 300 qemu-system-arm -M mps2-an386 -nographic -semihosting -kernel "$m4/digits.elf" \
    > "$work/m4-run.log" 2>&1
  status=$?
  set -e
  [[ $status -eq 0 ]] || { cat "$work/m4-run.log"; fail "the Cortex-M4 firmware exited with status $status"; }
  say "Cortex-M4 firmware under qemu-system-arm: $(grep ' correct ' "$work/m4-run.log")"
  # The installed mlcc check finds its Cortex-M harness files in share/mlcc.
  [[ -f $prefix/share/mlcc/firmware/arm-mps.ld && -f $prefix/share/mlcc/firmware/cortex-m-startup.c ]] ||
    fail "share/mlcc/firmware is not installed"
  run "$work/m4-check.log" "$prefix/bin/mlcc" check "$root/examples/digits/digits.onnx" --target cortex-m4
  say "installed mlcc check on cortex-m4: $(grep 'kernel calls' "$work/m4-check.log")"
fi

# --- (e) the .deb ------------------------------------------------------------------
missing=()
for tool in cpack dpkg-deb dpkg-shlibdeps file; do have "$tool" || missing+=("$tool"); done
if ((${#missing[@]})); then
  say "SKIPPED the .deb part: ${missing[*]} not installed"
else
  run "$work/cpack.log" cpack --config "$build/CPackConfig.cmake" -B "$work/deb"
  debs=("$work"/deb/mlcc_*.deb)
  [[ -f ${debs[0]} ]] || { cat "$work/cpack.log"; fail "cpack made no mlcc_*.deb"; }
  deb=${debs[0]}
  depends=$(dpkg-deb -f "$deb" Depends)
  [[ -n $depends ]] || fail "$(basename "$deb") has no Depends"
  [[ $depends == *llvm* ]] || fail "$(basename "$deb"): Depends does not name LLVM: $depends"
  say "$(basename "$deb"): Depends: $depends"
  dpkg-deb -x "$deb" "$work/debroot"
  debversion=$("$work/debroot/usr/bin/mlcc" --version) ||
    fail "usr/bin/mlcc from the .deb does not run"
  [[ -f $work/debroot/usr/include/mlcc/mlcc.h ]] || fail "the .deb has no usr/include/mlcc/mlcc.h"
  say "the .deb's usr/bin/mlcc runs: $debversion"
fi

say "passed in $SECONDS s"
