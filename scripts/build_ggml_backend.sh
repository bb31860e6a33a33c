#!/usr/bin/env bash
# Builds posenc's ggml backend, libggml-posenc.so (docs/ggml.md, include/posenc/ggml-backend.h), against the
# ggml a program runs on, and prints the module's path as its last line. A backend reads ggml's internal
# interface structs and operation numbers, so it must be built from the same ggml source as the program's
# libggml-base.so (the module checks the operations' names when it registers).
#   scripts/build_ggml_backend.sh TREE [BUILD_DIR]
#     TREE       the folder holding ggml's include/ and src/: llama.cpp's ggml/, whisper.cpp's ggml/, or ggml's
#                own repository
#     BUILD_DIR  the program's CMake build directory; its libggml-base.so is found below it (llama.cpp writes it
#                to BUILD_DIR/bin). Without it, this script builds that ggml itself (CMake, shared libraries)
#                under build-ggml-backend/.
# Then, for a llama.cpp built with -DGGML_BACKEND_DL=ON (as its release binaries are):
#   GGML_BACKEND_PATH=$(scripts/build_ggml_backend.sh llama.cpp/ggml llama.cpp/build | tail -n 1) llama-cli ...
# The module is built in release mode by meson (-Dggml_tree, -Dggml_libdir) under build-ggml-backend/, one
# build per TREE and library folder, reused when called again.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps cmake

usage() { echo "usage: scripts/build_ggml_backend.sh TREE [BUILD_DIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
tree=$(realpath -e "$1" 2>/dev/null) || { echo "build_ggml_backend: no folder $1" >&2; exit 2; }
[ -f "$tree/include/ggml.h" ] && [ -f "$tree/src/ggml-backend-impl.h" ] ||
  { echo "build_ggml_backend: $tree does not hold ggml's include/ggml.h and src/ggml-backend-impl.h" >&2; exit 2; }
jobs=${POSENC_JOBS:-2}
work=$PWD/build-ggml-backend
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
if [ -d "$out" ]; then
  meson setup --reconfigure "$out" "${setup[@]}" >"$work/setup.log" 2>&1 || { tail -n 30 "$work/setup.log" >&2; exit 1; }
else
  meson setup "$out" "${setup[@]}" >"$work/setup.log" 2>&1 || { tail -n 30 "$work/setup.log" >&2; exit 1; }
fi
ninja -C "$out" -j "$jobs" integrations/ggml/libggml-posenc.so >"$work/build.log" 2>&1 ||
  { tail -n 40 "$work/build.log" >&2; echo "build_ggml_backend: the build failed ($work/build.log)" >&2; exit 1; }
echo "$out/integrations/ggml/libggml-posenc.so"
