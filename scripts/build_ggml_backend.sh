#!/usr/bin/env bash
# Builds posenc's ggml backend, libggml-posenc.so (docs/ggml.md, include/posenc/ggml-backend.h), and prints
# the module's path as its last line.
#   scripts/build_ggml_backend.sh
#     the module for every ggml from 0.12.0 to 0.27.x, from this tree alone (no ggml needed): it reads the
#     running ggml's version when ggml loads it and answers with that version's interface. Built in release
#     mode by meson (-Dggml_backend=enabled) in build-ggml-backend/module, reused when called again.
#   scripts/build_ggml_backend.sh TREE [BUILD_DIR]
#     the same module from a build configured against one ggml source tree (-Dggml_tree, -Dggml_libdir; what
#     the twins and the integration's tests are built against): TREE is the folder holding ggml's include/ and
#     src/ (llama.cpp's ggml/, whisper.cpp's ggml/, or ggml's own repository), BUILD_DIR the program's CMake
#     build directory, below which its libggml-base.so is found (llama.cpp writes it to BUILD_DIR/bin);
#     without BUILD_DIR this script builds that ggml itself (CMake, shared libraries) under
#     build-ggml-backend/. One build per TREE and library folder, reused when called again.
# Then, for any llama.cpp built with -DGGML_BACKEND_DL=ON (its release archives, Debian's and Ubuntu's
# packages):
#   GGML_BACKEND_PATH=$(scripts/build_ggml_backend.sh | tail -n 1) llama-cli ...
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh

usage() { echo "usage: scripts/build_ggml_backend.sh [TREE [BUILD_DIR]]" >&2; exit 2; }
[ $# -le 2 ] || usage
jobs=${POSENC_JOBS:-2}
work=$PWD/build-ggml-backend
# meson setup (again) in $out with ${setup[@]}, the module built there, its path printed
build_module() {
  if [ -d "$out" ]; then
    meson setup --reconfigure "$out" "${setup[@]}" >"$work/setup.log" 2>&1 || { tail -n 30 "$work/setup.log" >&2; exit 1; }
  else
    meson setup "$out" "${setup[@]}" >"$work/setup.log" 2>&1 || { tail -n 30 "$work/setup.log" >&2; exit 1; }
  fi
  ninja -C "$out" -j "$jobs" integrations/ggml/libggml-posenc.so >"$work/build.log" 2>&1 ||
    { tail -n 40 "$work/build.log" >&2; echo "build_ggml_backend: the build failed ($work/build.log)" >&2; exit 1; }
  echo "$out/integrations/ggml/libggml-posenc.so"
}
if [ $# -eq 0 ]; then
  posenc_install_deps
  mkdir -p "$work"
  out=$work/module
  setup=(--buildtype=release -Dggml_backend=enabled -Dtests=disabled -Dbenchmarks=disabled -Dtools=disabled)
  echo "== posenc's backend for ggml 0.12.0 to 0.27.x in $out" >&2
  build_module
  exit 0
fi
posenc_install_deps cmake
tree=$(realpath -e "$1" 2>/dev/null) || { echo "build_ggml_backend: no folder $1" >&2; exit 2; }
[ -f "$tree/include/ggml.h" ] && [ -f "$tree/CMakeLists.txt" ] ||
  { echo "build_ggml_backend: $tree does not hold ggml's include/ggml.h and CMakeLists.txt" >&2; exit 2; }
mkdir -p "$work"

if [ $# -eq 2 ]; then
  build=$(realpath -e "$2" 2>/dev/null) || { echo "build_ggml_backend: no folder $2" >&2; exit 2; }
else
  # ggml's own CMake build of the tree: shared libraries, the default CPU backend (this machine's)
  build=$work/ggml-$(printf '%s' "$tree" | sha256sum | cut -c1-12)
  if [ ! -f "$build/.posenc-done" ]; then
    echo "== ggml from $tree (CMake, shared libraries) in $build" >&2
    rm -rf "$build"
    { cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BUILD_TESTS=OFF \
        -DGGML_BUILD_EXAMPLES=OFF -DGGML_CCACHE=OFF && cmake --build "$build" -j "$jobs"; } >"$work/ggml-build.log" 2>&1 ||
      { tail -n 40 "$work/ggml-build.log" >&2; echo "build_ggml_backend: the ggml build failed ($work/ggml-build.log)" >&2; exit 1; }
    touch "$build/.posenc-done"
  fi
fi

# libggml-base.so below BUILD_DIR: bin/ first (llama.cpp, whisper.cpp), then anywhere
base=$(find "$build/bin" -maxdepth 1 -name libggml-base.so 2>/dev/null | head -n 1 || true)
[ -n "$base" ] || base=$(find "$build" -name libggml-base.so -not -path '*/CMakeFiles/*' 2>/dev/null | head -n 1 || true)
[ -n "$base" ] || { echo "build_ggml_backend: no libggml-base.so below $build (build ggml with BUILD_SHARED_LIBS=ON)" >&2; exit 1; }
libdir=$(dirname "$(realpath "$base")")

out=$work/posenc-$(printf '%s %s' "$tree" "$libdir" | sha256sum | cut -c1-12)
setup=(--buildtype=release -Dtests=disabled -Dbenchmarks=disabled -Dtools=disabled "-Dggml_tree=$tree"
       "-Dggml_libdir=$libdir")
echo "== posenc's backend against $tree ($libdir) in $out" >&2
build_module
