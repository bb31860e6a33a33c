#!/usr/bin/env bash
# The whole test suite on a fresh Debian bookworm machine: installs what is missing, builds, runs every
# test natively (each x86 path, and the suite again once per forced path), cross-builds for aarch64 and
# runs the same suite under qemu (the NEON path), with the ggml integration's tests against ggml built from the
# shared tarball (scripts/build_ggml.sh), installs into a temporary prefix and builds the examples
# against it, builds and tests the Python package (scripts/test_python.sh), then the hardening runs
# (sanitizers, valgrind, fuzzing, TSan). Ends with "tests: N passed, M failed", which counts the Catch2 test
# cases of every meson log, each pytest case, plus one case for each step that is not a meson test (the
# install and subproject checks, the Python build, the fuzz run, each build of the hardening script, and
# with --report the quick benchmark report).
# Warnings are errors: the supported machine is Debian bookworm's g++ 12, where a warning is a bug.
#   scripts/test.sh [--no-werror] [--report]
#     --no-werror  warnings stay warnings (another compiler, a local experiment)
#     --report     first runs scripts/report.sh --quick (CI runs the report in a root of its own instead)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps g++-aarch64-linux-gnu qemu-user libsleef-dev:arm64 libmpfr-dev:arm64 libgmp-dev:arm64

werror=true report=false
for arg in "$@"; do
  case "$arg" in
    --werror) werror=true ;;  # the default; accepted for old command lines
    --no-werror) werror=false ;;
    --report) report=true ;;
    *) echo "usage: scripts/test.sh [--no-werror] [--report]" >&2; exit 2 ;;
  esac
done
jobs=${POSENC_JOBS:-2}
status=0
export POSENC_RESULTS=$PWD/build-steps.json  # the steps that are not meson tests
: >"$POSENC_RESULTS"

step() {  # name command...: a step that is not a meson test counts as one case
  local name=$1
  shift
  if "$@"; then
    posenc_record "$name" OK
  else
    posenc_record "$name" FAIL
    status=1
  fi
}

if $report; then
  echo "== the benchmark report on small shapes (scripts/report.sh --quick)"
  step "report --quick" bash scripts/report.sh --quick
fi

configure() {  # dir [extra meson args]
  local dir=$1
  shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" -Dwerror=$werror "$@" >/dev/null
  else
    meson setup "$dir" -Dwerror=$werror "$@" >/dev/null
  fi
}

# The ggml integration (issue 23, docs/ggml.md): ggml built from its source beside the clone
# (scripts/build_ggml.sh, one case), then the integration's tests (test-backend-ops' RoPE matrix, exactness)
# run with the native suite.
ggml_setup=(-Dggml=disabled)
if [ -f ../shared/peers/ggml-d99724f2.tar.xz ]; then
  echo "== ggml from ../shared/peers/ggml-d99724f2.tar.xz (scripts/build_ggml.sh)"
  if ggml_prefix=$(bash scripts/build_ggml.sh | tail -n 1); then
    posenc_record "ggml built from the shared tarball" OK
    ggml_setup=(-Dggml=enabled "-Dpkg_config_path=$ggml_prefix/lib/pkgconfig")
  else
    posenc_record "ggml built from the shared tarball" FAIL
    status=1
  fi
else
  echo "== no ../shared/peers/ggml-d99724f2.tar.xz beside the clone: the ggml integration is not tested"
fi

echo "== native build ($(uname -m))"
configure build-test --buildtype=release -Db_ndebug=false "${ggml_setup[@]}"
ninja -C build-test -j "$jobs"
meson test -C build-test --num-processes "$jobs" --print-errorlogs || status=1

echo "== aarch64 build, tests under qemu"
configure build-test-neon --cross-file cross/aarch64-linux-gnu.ini --buildtype=release -Db_ndebug=false -Dbenchmarks=disabled
ninja -C build-test-neon -j "$jobs"
meson test -C build-test-neon --num-processes "$jobs" --print-errorlogs || status=1

echo "== install into a temporary prefix and build the examples against it; meson subproject"
step "install + examples" bash scripts/test_install.sh
step "meson subproject" bash scripts/test_subproject.sh

echo "== the Python package: wheel and pip install offline, pytest (NumPy, posenc.torch), the Python example"
py_args=()
$werror && py_args=(--werror)
step "python: build, install, pytest" bash scripts/test_python.sh "${py_args[@]}"

echo "== hardening: ASan+UBSan, valgrind, libFuzzer, TSan"
bash scripts/test_hardening.sh || status=1

logs=(build-test/meson-logs/testlog.json build-test-neon/meson-logs/testlog.json "$POSENC_RESULTS")
for f in build-hard-asan/meson-logs/testlog.json build-hard-plain/meson-logs/testlog-valgrind.json \
         build-hard-tsan/meson-logs/testlog.json; do
  [ -f "$f" ] && logs+=("$f")
done
python3 tools/test_summary.py "${logs[@]}" || status=1
exit $status
