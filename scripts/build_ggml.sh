#!/usr/bin/env bash
# Builds ggml for the ggml integration (docs/ggml.md) from the tarball of ggml's source that sits beside the
# clone (../shared/peers/ggml-d99724f2.tar.xz: ggml commit d99724f2, MIT; its CMake build, headers and CPU
# backend), with CMake and no network: shared libraries, the CPU backend for this machine (GGML_NATIVE, ggml's
# default), OpenMP where the compiler has it (ggml's default, as llama.cpp builds it). Installs into PREFIX
# (build-ggml/prefix by default) and prints the prefix as its last line. Nothing of ggml enters the repository:
# the source is unpacked under build-ggml/src and stays there. A prefix whose stamp names the same tarball and
# arguments is reused.
#   scripts/build_ggml.sh [--prefix DIR] [--tarball FILE]
# Then: meson setup build -Dggml=enabled -Dpkg_config_path=PREFIX/lib/pkgconfig (the call-site twins), or, for
# the backend too, meson setup build -Dggml_tree=build-ggml/src -Dggml_libdir=PREFIX/lib
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps cmake xz-utils ccache  # ccache: a rebuild of the same sources takes seconds

prefix=$PWD/build-ggml/prefix
tarball=${POSENC_GGML_TARBALL:-$PWD/../shared/peers/ggml-d99724f2.tar.xz}
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$(realpath -m "$2"); shift 2 ;;
    --tarball) tarball=$2; shift 2 ;;
    *) echo "usage: scripts/build_ggml.sh [--prefix DIR] [--tarball FILE]" >&2; exit 2 ;;
  esac
done
[ -f "$tarball" ] || { echo "build_ggml: no ggml tarball at $tarball" >&2; exit 1; }
jobs=${POSENC_JOBS:-2}
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF
      -DGGML_CCACHE=ON -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib)
stamp="$(sha256sum "$tarball" | cut -c1-64) ${args[*]} $(c++ --version | head -n 1)"
if [ -f "$prefix/.posenc-stamp" ] && [ "$(cat "$prefix/.posenc-stamp")" = "$stamp" ] &&
   [ -f "$PWD/build-ggml/src/src/ggml-backend-impl.h" ]; then
  echo "$prefix"
  exit 0
fi

work=$PWD/build-ggml
rm -rf "$work/src" "$work/build" "$prefix"
mkdir -p "$work/src"
tar -xJf "$tarball" -C "$work/src" --strip-components=1
log=$work/build.log
{
  cmake -S "$work/src" -B "$work/build" "${args[@]}" &&
  cmake --build "$work/build" -j "$jobs" &&
  cmake --install "$work/build"
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "build_ggml: the ggml build failed (log: $log)" >&2; exit 1; }
[ -f "$prefix/lib/pkgconfig/ggml.pc" ] || { echo "build_ggml: no ggml.pc in $prefix/lib/pkgconfig" >&2; exit 1; }
echo "$stamp" >"$prefix/.posenc-stamp"
echo "$prefix"
