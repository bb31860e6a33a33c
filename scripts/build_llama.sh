#!/usr/bin/env bash
# Builds llama.cpp (libllama and ggml) from the trimmed source tarball beside the clone
# (../shared/peers/llama.cpp-0253fb21f.tar.xz: llama.cpp commit 0253fb21f, ggml 0.12.0, MIT; its PROVENANCE
# says what was kept), the way llama.cpp's Linux release binaries are built, so that posenc's ggml backend
# (integrations/ggml/llama/, scripts/test_llama.sh) is tested in the configuration its users run:
#   - shared libraries with dynamically loaded backends (-DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON): libllama
#     calls ggml_backend_load_all() in llama_backend_init(), which dlopens the CPU backend and then the
#     out-of-tree backend named by GGML_BACKEND_PATH;
#   - the release's rpath ('$ORIGIN', CMAKE_BUILD_WITH_INSTALL_RPATH) and Release build type, sources unchanged;
#   - one CPU backend variant instead of the release's ~14 (-DGGML_CPU_ALL_VARIANTS=ON builds every x86 level
#     from x64 to sapphirerapids, far too slow for 2 cores). GGML_NATIVE=ON is refused by ggml's CMake with
#     GGML_BACKEND_DL (the variant's feature score needs explicit ISA definitions), so GGML_NATIVE=OFF and the
#     ISA options of the release variant that ggml_backend_load_best() would pick on this machine: the
#     highest-scoring entry of ggml/src/CMakeLists.txt's x86 variant list whose features the CPU has (e.g.
#     zen4 = AVX2/FMA/F16C/BMI2 + AVX512 F/CD/VL/DQ/BW + VBMI/VNNI/BF16 on an AVX-512 AMD EPYC). Without
#     GGML_CPU_ALL_VARIANTS the library is libggml-cpu.so (no tag); load_best() finds no libggml-cpu-*.so
#     and falls back to libggml-cpu.so in the same search paths (the executable's directory, then the current
#     directory; GGML_BACKEND_DIR is a compile-time CMake path, unset here as in the release);
#   - no tests, tools, examples, server, common library, UI or OpenSSL: only the libraries (compiled through
#     ccache, which changes nothing that is built and makes a rebuild of the same sources take seconds). The
#     release also sets LLAMA_FATAL_WARNINGS (with Ubuntu 22.04's GCC 11); bookworm's GCC 12 warns ~800 times in
#     its own avx512fintrin.h (_mm512_reduce_add_ps: '__Y' may be used uninitialized), so it stays off. Ninja
#     instead of the release's Makefiles changes nothing that is built.
# About 6.5 minutes on 2 cores (AMD EPYC, zen4 variant; most of it libllama's sources).
# In the build area AREA (--build, default build-llama/, ignored by .gitignore): the unpacked source AREA/src
# (headers: src/include, src/ggml/include; gguf-py: src/gguf-py), the CMake build AREA/build, its log
# AREA/build.log. Every library and backend lands in AREA/build/bin (llama.cpp sets both output directories
# there): libllama.so, libggml.so, libggml-base.so, libggml-cpu.so. Nothing of llama.cpp enters the repository.
# A finished build whose stamp (tarball sha256, arguments, compiler and CMake versions) matches is reused.
# Prints the build directory AREA/build as the last line of stdout.
#   scripts/build_llama.sh [--build AREA] [--tarball FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
# ccache: a rebuild of the same sources (a new clone, CI's fresh root with the cache mounted) takes seconds
posenc_install_deps cmake ninja-build xz-utils g++ ccache

area=$PWD/build-llama
tarball=${POSENC_LLAMA_TARBALL:-$PWD/../shared/peers/llama.cpp-0253fb21f.tar.xz}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) area=$(realpath -m "$2"); shift 2 ;;
    --tarball) tarball=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: scripts/build_llama.sh [--build AREA] [--tarball FILE]" >&2; exit 2 ;;
  esac
done
[ -f "$tarball" ] || { echo "build_llama: no llama.cpp tarball at $tarball" >&2; exit 1; }
jobs=${POSENC_JOBS:-2}

# The CPU variant: ggml/src/CMakeLists.txt's x86 list (GGML_CPU_ALL_VARIANTS, non-MSVC), with the score of
# ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp; the best one this CPU runs is what the release loads here.
isa_opts=()
variant=none
if [ "$(uname -m)" = x86_64 ]; then
  flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  declare -A cpuflag=([SSE42]=sse4_2 [AVX]=avx [F16C]=f16c [FMA]=fma [AVX2]=avx2 [BMI2]=bmi2 [AVX_VNNI]=avx_vnni
    [AVX512]="avx512f avx512cd avx512vl avx512dq avx512bw" [AVX512_VBMI]=avx512vbmi [AVX512_VNNI]=avx512_vnni
    [AVX512_BF16]=avx512_bf16 [AMX_TILE]=amx_tile [AMX_INT8]=amx_int8)
  declare -A weight=([FMA]=1 [F16C]=2 [SSE42]=4 [BMI2]=8 [AVX]=16 [AVX2]=32 [AVX_VNNI]=64 [AVX512]=128
    [AVX512_VBMI]=256 [AVX512_BF16]=512 [AVX512_VNNI]=1024 [AMX_INT8]=2048 [AMX_TILE]=0)
  variants=(
    "x64"
    "sse42 SSE42"
    "sandybridge SSE42 AVX"
    "ivybridge SSE42 AVX F16C"
    "piledriver SSE42 AVX F16C FMA"
    "haswell SSE42 AVX F16C FMA AVX2 BMI2"
    "skylakex SSE42 AVX F16C FMA AVX2 BMI2 AVX512"
    "cannonlake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI"
    "cascadelake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VNNI"
    "icelake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI"
    "cooperlake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VNNI AVX512_BF16"
    "zen4 SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16"
    "alderlake SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI"
    "sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8")
  best=0
  for v in "${variants[@]}"; do
    read -r -a f <<<"$v"
    score=1 ok=1
    for feat in "${f[@]:1}"; do
      for cf in ${cpuflag[$feat]}; do [[ $flags == *" $cf "* ]] || ok=0; done
      score=$((score + weight[$feat]))
    done
    if [ $ok -eq 1 ] && [ $score -gt $best ]; then best=$score; variant=${f[0]}; chosen=("${f[@]:1}"); fi
  done
  for feat in SSE42 AVX AVX2 BMI2 AVX_VNNI FMA F16C AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8; do
    on=OFF
    for c in "${chosen[@]}"; do [ "$c" = "$feat" ] && on=ON; done
    isa_opts+=("-DGGML_$feat=$on")
  done
fi

args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF
      -DGGML_CPU_ALL_VARIANTS=OFF "${isa_opts[@]}"
      "-DCMAKE_INSTALL_RPATH=\$ORIGIN" -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
      -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_WEBUI=OFF -DLLAMA_OPENSSL=OFF
      -DGGML_CCACHE=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF)
stamp="$(sha256sum "$tarball" | cut -c1-64) ${args[*]} $(c++ --version | head -n 1) $(cmake --version | head -n 1)"
build=$area/build
if [ -f "$area/.posenc-stamp" ] && [ "$(cat "$area/.posenc-stamp")" = "$stamp" ] &&
   [ -f "$build/bin/libllama.so" ] && [ -f "$build/bin/libggml-cpu.so" ]; then
  echo "build_llama: reusing $build (CPU variant $variant)" >&2
  echo "$build"
  exit 0
fi

rm -rf "$area/src" "$build" "$area/.posenc-stamp"
mkdir -p "$area/src"
tar -xJf "$tarball" -C "$area/src" --strip-components=1
log=$area/build.log
echo "build_llama: building llama.cpp (CPU variant $variant, $jobs jobs; log: $log)" >&2
start=$(date +%s)
{
  echo "cmake ${args[*]}"
  cmake -S "$area/src" -B "$build" "${args[@]}" &&
  cmake --build "$build" -j "$jobs"
} >"$log" 2>&1 || { tail -n 40 "$log" >&2; echo "build_llama: the llama.cpp build failed (log: $log)" >&2; exit 1; }
for lib in libllama.so libggml.so libggml-base.so libggml-cpu.so; do
  [ -f "$build/bin/$lib" ] || { echo "build_llama: no $lib in $build/bin (log: $log)" >&2; exit 1; }
done
echo "build_llama: built in $(( $(date +%s) - start )) s" >&2
echo "$stamp" >"$area/.posenc-stamp"
echo "$build"
