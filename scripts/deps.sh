#!/usr/bin/env bash
# Installs the Debian bookworm packages posenc needs, only those missing. Sourced by test.sh and
# report.sh; runs apt-get as root, or through sudo when not root.
set -euo pipefail

posenc_install_deps() {
  local want=(meson ninja-build g++ pkg-config python3 libxsimd-dev libsleef-dev catch2 libbenchmark-dev
              libmpfr-dev libgmp-dev "$@")
  local need_arm64=0 missing=() p
  for p in "${want[@]}"; do
    [[ $p == *:arm64 ]] && need_arm64=1
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  if [ $need_arm64 -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
  fi
  echo "installing: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Records one more case for the closing "tests: N passed, M failed" line (tools/test_summary.py reads the
# file as a meson test log): a step that is not a meson test, such as the install check or the fuzz run.
# Does nothing unless POSENC_RESULTS names the file (scripts/test.sh sets it).
posenc_record() {  # name OK|FAIL
  [ -n "${POSENC_RESULTS:-}" ] || return 0
  printf '{"name": "%s", "result": "%s"}\n' "$1" "$2" >>"$POSENC_RESULTS"
}

# The meson arguments that build the ggml integration, with its backend, against ggml d99724f2 from the shared
# tarball (scripts/build_ggml.sh, reused when built before): -Dggml_tree=build-ggml/src (ggml's source, where
# the backend finds ggml's internal headers) and -Dggml_libdir=PREFIX/lib, one per line. Prints nothing when
# the tarball is not beside the clone; returns non-zero when the build failed.
posenc_ggml_args() {
  [ -f ../shared/peers/ggml-d99724f2.tar.xz ] || return 0
  local prefix
  prefix=$(bash scripts/build_ggml.sh | tail -n 1) || return 1
  printf '%s\n' "-Dggml_tree=$PWD/build-ggml/src" "-Dggml_libdir=$prefix/lib"
}
