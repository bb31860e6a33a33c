#!/usr/bin/env bash
# The ggml peer of the report's NEON section: builds ggml for aarch64 from the tarball of its source beside the
# clone (../shared/peers/ggml-d99724f2.tar.xz: ggml commit d99724f2, MIT; CMake build, headers, CPU backend)
# with CMake and Debian's cross tool chain (static libraries, the CPU backend at the armv8-a baseline that
# posenc's NEON path also assumes, no OpenMP: one thread), then links bench/neon/count_ggml.c against it.
# Nothing of ggml enters the repository: the source is unpacked under DIR. Prints the driver's path last; a
# DIR whose stamp names the same tarball, arguments and compiler is reused.
#   bench/neon/build_ggml.sh DIR [TARBALL]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: bench/neon/build_ggml.sh DIR [TARBALL]" >&2; exit 2; }
work=$(realpath -m "$1")
tarball=${2:-$here/../../../shared/peers/ggml-d99724f2.tar.xz}
[ -f "$tarball" ] || { echo "build_ggml: no ggml tarball at $tarball" >&2; exit 1; }
jobs=${POSENC_JOBS:-2}
cc=aarch64-linux-gnu-gcc
driver=$work/posenc-count-ggml
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF
      -DGGML_CCACHE=OFF -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8-a -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF
      -DGGML_CPU_REPACK=OFF -DGGML_BACKEND_DL=OFF)
stamp="$(sha256sum "$tarball" | cut -c1-64) ${args[*]} $($cc --version | head -n 1)"
stamp+=" $(sha256sum "$here/count_ggml.c" | cut -c1-16)"
if [ -x "$driver" ] && [ -f "$work/.posenc-stamp" ] && [ "$(cat "$work/.posenc-stamp")" = "$stamp" ]; then
  echo "$driver"
  exit 0
fi

rm -rf "$work"
mkdir -p "$work/src"
tar -xJf "$tarball" -C "$work/src" --strip-components=1
cat >"$work/aarch64.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
EOF
log=$work/build.log
lib=$work/build/src
{
  cmake -S "$work/src" -B "$work/build" -DCMAKE_TOOLCHAIN_FILE="$work/aarch64.cmake" "${args[@]}" &&
  cmake --build "$work/build" -j "$jobs" --target ggml ggml-base ggml-cpu &&
  # static: qemu-user 7.2 runs it without the target's loader, and ggml's one-thread compute starts no thread
  $cc -O2 -static -I"$work/src/include" -o "$driver" "$here/count_ggml.c" \
    "$lib/libggml.a" "$lib/libggml-cpu.a" "$lib/libggml-base.a" -lstdc++ -lm -lpthread
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "build_ggml: the ggml build failed (log: $log)" >&2; exit 1; }
echo "$stamp" >"$work/.posenc-stamp"
echo "$driver"
