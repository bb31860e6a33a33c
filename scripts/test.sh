#!/usr/bin/env bash
# The whole test suite on a fresh Debian bookworm machine: installs what is missing, builds, runs every
# test natively (each x86 path, and the suite again once per forced path), with the ggml integration's tests
# (the twins and the backend) against ggml d99724f2 and against llama.cpp's ggml 0.12.0, and posenc's backend
# module, built once from this tree alone, loaded into both and inside llama.cpp built as its release binaries
# are (scripts/test_llama.sh); cross-builds for aarch64 and
# runs the same suite under qemu (the NEON path); installs into a temporary prefix and builds the examples
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
posenc_install_deps g++-aarch64-linux-gnu qemu-user clang-format-14 libsleef-dev:arm64 libmpfr-dev:arm64 libgmp-dev:arm64

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

# The ggml integration (docs/ggml.md) against ggml d99724f2, built from its source beside the clone
# (scripts/build_ggml.sh, one case): the call-site twins' tests (test-backend-ops' RoPE matrix, exactness) and
# the backend's, with the native suite.
ggml_setup=(-Dggml=disabled)
if [ -f ../shared/peers/ggml-d99724f2.tar.xz ]; then
  echo "== ggml from ../shared/peers/ggml-d99724f2.tar.xz (scripts/build_ggml.sh)"
  if ggml_args=$(posenc_ggml_args); then
    posenc_record "ggml built from the shared tarball" OK
    mapfile -t ggml_setup <<<"$ggml_args"
  else
    posenc_record "ggml built from the shared tarball" FAIL
    status=1
  fi
else
  echo "== no ../shared/peers/ggml-d99724f2.tar.xz beside the clone: the ggml integration is not tested"
fi

echo "== native build ($(uname -m))"
configure build-test --buildtype=release -Db_ndebug=false -Dtests=enabled "${ggml_setup[@]}"
ninja -C build-test -j "$jobs"
meson test -C build-test --num-processes "$jobs" --print-errorlogs || status=1

# posenc's ggml backend, one module for every ggml (scripts/build_ggml_backend.sh, from this tree alone): this
# file, byte for byte, is loaded below into ggml d99724f2 (0.21.0) and llama.cpp 0253fb21f (ggml 0.12.0), and by
# scripts/test_fresh.sh into Debian unstable's llama.cpp (scripts/test_debian.sh).
echo "== the ggml backend module (scripts/build_ggml_backend.sh)"
module=
if module=$(bash scripts/build_ggml_backend.sh | tail -n 1) && [ -f "$module" ]; then
  posenc_record "scripts/build_ggml_backend.sh: one module, no ggml" OK
  echo "the module: $module, sha256 $(sha256sum "$module" | cut -c1-16)"
else
  posenc_record "scripts/build_ggml_backend.sh: one module, no ggml" FAIL
  status=1 module=
fi
# module_in NAME BUILD: the module loaded by ggml's own loader (GGML_BACKEND_PATH) in a program on that build's
# ggml (test_ggml_backend_dl), one case
module_in() {
  local exe=$2/integrations/ggml/test_ggml_backend_dl
  [ -n "$module" ] && [ -x "$exe" ] || { posenc_record "the module in $1" FAIL; status=1; return; }
  if POSENC_GGML_BACKEND_SO=$module "$exe"; then
    posenc_record "the module in $1" OK
  else
    posenc_record "the module in $1" FAIL
    status=1
  fi
}
[ "${ggml_setup[0]}" = -Dggml=disabled ] || module_in "ggml d99724f2 (0.21.0)" build-test

# llama.cpp as its release binaries are built (scripts/build_llama.sh: shared libraries, GGML_BACKEND_DL),
# from the tarball beside the clone (ggml 0.12.0): the twins' and the backend's tests against that ggml, then
# the module inside the real llama.cpp with no source change (scripts/test_llama.sh: GGML_BACKEND_PATH, every
# RoPE node computed by posenc, logits against vanilla, the exact rotation against MPFR, the context shift).
if [ -f ../shared/peers/llama.cpp-0253fb21f.tar.xz ]; then
  echo "== llama.cpp from ../shared/peers/llama.cpp-0253fb21f.tar.xz (scripts/build_llama.sh)"
  if llama_build=$(bash scripts/build_llama.sh | tail -n 1); then
    posenc_record "llama.cpp built as its release binaries are" OK
    llama_tree=$(dirname "$llama_build")/src/ggml
    echo "== the ggml integration's tests against llama.cpp's ggml (0.12.0)"
    configure build-test-ggml012 --buildtype=release -Db_ndebug=false -Dtests=enabled -Dbenchmarks=disabled -Dtools=disabled \
      "-Dggml_tree=$llama_tree" "-Dggml_libdir=$llama_build/bin"
    ninja -C build-test-ggml012 -j "$jobs" integrations/ggml/libggml-posenc.so $(cd integrations/ggml/tests &&
      ls test_ggml_*.cpp | sed 's|^|integrations/ggml/|; s|\.cpp$||')
    meson test -C build-test-ggml012 --no-rebuild --suite ggml --num-processes "$jobs" --print-errorlogs || status=1
    module_in "llama.cpp 0253fb21f's ggml (0.12.0)" build-test-ggml012
    echo "== the module inside llama.cpp (scripts/test_llama.sh)"
    if [ -n "$module" ]; then
      bash scripts/test_llama.sh --backend "$module" || status=1
    else
      posenc_record "scripts/test_llama.sh: no module" FAIL
      status=1
    fi
  else
    posenc_record "llama.cpp built as its release binaries are" FAIL
    status=1
  fi
else
  echo "== no ../shared/peers/llama.cpp-0253fb21f.tar.xz beside the clone: the backend is not tried in llama.cpp"
fi

echo "== aarch64 build, tests under qemu"
configure build-test-neon --cross-file cross/aarch64-linux-gnu.ini --buildtype=release -Db_ndebug=false -Dtests=enabled \
  -Dbenchmarks=disabled
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
[ -f build-test-ggml012/meson-logs/testlog.json ] && logs+=(build-test-ggml012/meson-logs/testlog.json)
for f in build-hard-asan/meson-logs/testlog.json build-hard-plain/meson-logs/testlog-valgrind.json \
         build-hard-tsan/meson-logs/testlog.json; do
  [ -f "$f" ] && logs+=("$f")
done
python3 tools/test_summary.py "${logs[@]}" || status=1
exit $status
