#!/usr/bin/env bash
# The consumers' view of a clean install: builds posenc with its installed tools (no tests), installs it
# into a temporary prefix, then builds and runs the four examples against that prefix alone. The example
# sources are copied out of the tree first, and every posenc header the compilers read must come from the
# prefix. Also checks the installed file list (and the library's alone with -Dtools=disabled
# -Dbenchmarks=disabled), that --destdir stages the same files, that the installed text files name
# neither the source nor the build tree, and that every version is meson.build's. Then runs the tools
# from the prefix (docs/tools.md): posenc's commands, and posenc-bench --report --quick from a moved copy
# of the prefix, which must find its scripts and programs relative to itself.
# find_package(posenc CONFIG) is also checked for installs with libdir lib, lib64 and lib/<multiarch> (meson's
# default is lib64 on x86_64 without dpkg-dev, lib/<multiarch> with it; Debian's CMake never searches lib64).
# --cmake-only: only the README's install line as written (default libdir) and find_package from the
# examples (scripts/test_fresh.sh runs it after installing dpkg-dev).
# Ends with "test_install: ok"; stops at the first failure with "test_install: FAILED: ...".
#   scripts/test_install.sh [--cmake-only]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps cmake

cmake_only=false
case "${1:-}" in
  "") ;;
  --cmake-only) cmake_only=true ;;
  *) echo "usage: scripts/test_install.sh [--cmake-only]" >&2; exit 2 ;;
esac
src=$PWD
jobs=${POSENC_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/posenc-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() {
  echo "test_install: FAILED: $*" >&2
  exit 1
}
quiet() {  # runs a command, showing its output only when it fails
  "$@" >"$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "$*"; }
}
# Every posenc header in a dependency list must be the installed one.
headers_from_prefix() {  # what, dependency listing
  local found
  found=$(grep -oE '[^ :]*posenc/(posenc\.hp*|ggml\.h|threads\.hpp)' <<<"$2" | sort -u)
  [ -n "$found" ] || fail "$1: no posenc header among its dependencies"
  grep -v "^$prefix/include/" <<<"$found" && fail "$1 read posenc headers from outside the prefix"
  return 0
}

# Builds an example program (compiler, flags and pkg-config's words given), checks that it read the installed
# headers alone, runs it and checks that a line of its output starts with `reports`.
pkgconfig_example() {  # what, program, reports, compiler command...
  local what=$1 program=$2 reports=$3
  shift 3
  quiet "$@" -MD -MF "$program.d" -o "$program"
  headers_from_prefix "$what" "$(cat "$program.d")"
  "./$program" >"$program.out" || { cat "$program.out"; fail "$what"; }
  cat "$program.out"
  grep -q "^$reports" "$program.out" || fail "$what did not report '$reports'"
}

# The package directory find_package must find for a libdir (cmake/meson.build's rule): CMake searches
# <prefix>/lib/cmake and <prefix>/lib/<multiarch>/cmake everywhere, <prefix>/lib64/cmake not on Debian.
cmake_dir_for() {  # libdir relative to the prefix
  case "$1" in
    lib | lib/*) echo "$1/cmake/posenc" ;;
    *) echo "lib/cmake/posenc" ;;
  esac
}
# Configures, builds and runs an example (copied to $tmp/examples) against the posenc installed in a prefix.
cmake_example() {  # folder, program, prefix, build directory
  local pfx=${3:-$prefix} dir=${4:-build-$1} found
  echo "== ($1) through find_package(posenc CONFIG) from $pfx"
  quiet cmake -S "$tmp/examples/$1" -B "$dir" -G Ninja -DCMAKE_PREFIX_PATH="$pfx" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_COMPILE_WARNING_AS_ERROR=ON -DCMAKE_CXX_FLAGS="-Wall -Wextra"
  found=$(sed -n 's/^posenc_DIR:PATH=//p' "$dir/CMakeCache.txt")
  case "$found" in
    "$pfx"/*) ;;
    *) fail "$1: CMake found posenc at '$found', not in $pfx" ;;
  esac
  echo "found $found"
  quiet cmake --build "$dir" -j "$jobs"
  prefix=$pfx headers_from_prefix "$1" "$(ninja -C "$dir" -t deps)"
  "$dir/$2" >"$2.out" || { cat "$2.out"; fail "$1"; }
  cat "$2.out"
}

if $cmake_only; then
  # The README's line, with a temporary prefix for /opt/posenc; meson picks the libdir.
  cp -r examples "$tmp/examples"
  echo "== meson setup build --prefix=$prefix -Dtests=disabled && meson install -C build"
  quiet meson setup "$tmp/build" --prefix="$prefix" -Dtests=disabled
  quiet meson install -C "$tmp/build"
  echo "meson's libdir: $(meson introspect --buildoptions "$tmp/build" |
    python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"][0])')"
  cd "$tmp"
  cmake_example cpp_cmake cpp_example
  echo "test_install: ok"
  exit 0
fi

# The ggml integration (issue 23, docs/ggml.md) when ggml's source is beside the clone: ggml built from it
# (scripts/build_ggml.sh), the integration installed with the rest, its example built against the prefix.
ggml_prefix="" ggml_setup=() ggml_files=""
if [ -f ../shared/peers/ggml-d99724f2.tar.xz ]; then
  ggml_prefix=$(bash scripts/build_ggml.sh | tail -n 1) || fail "scripts/build_ggml.sh"
  ggml_setup=(-Dggml=enabled "-Dpkg_config_path=$ggml_prefix/lib/pkgconfig")
else
  echo "== no ../shared/peers/ggml-d99724f2.tar.xz beside the clone: the ggml integration is not checked"
fi

echo "== build posenc and its tools and install them into $prefix"
quiet meson setup "$tmp/build" --prefix="$prefix" --buildtype=release -Dtests=disabled -Dbenchmarks=enabled \
  -Dtools=enabled "${ggml_setup[@]}"
quiet ninja -C "$tmp/build" -j "$jobs"
quiet meson install -C "$tmp/build"
quiet meson install -C "$tmp/build" --destdir "$tmp/stage"
version=$(meson introspect --projectinfo "$tmp/build" | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')

pc=$(find "$prefix" -name posenc.pc)
[ -n "$pc" ] || fail "posenc.pc not installed"
libdir=${pc%/pkgconfig/posenc.pc}
libdir=${libdir#"$prefix/"}
cmakedir=$(cmake_dir_for "$libdir")
echo "meson's libdir: $libdir; the CMake package: $cmakedir"
# the twins, and the backend (module and archive), which a build that finds ggml also builds
[ -n "$ggml_prefix" ] && ggml_files=$(printf '%s\n' include/posenc/ggml.h "$libdir/libposenc_ggml.a" \
  "$libdir/pkgconfig/posenc-ggml.pc" include/posenc/ggml-backend.h "$libdir/libggml-posenc.a" \
  "$libdir/libggml-posenc.so")
library_files=$(printf '%s\n' include/posenc/posenc.h include/posenc/parts.h include/posenc/posenc.hpp \
  include/posenc/types.hpp include/posenc/work.hpp include/posenc/presets.hpp include/posenc/threads.hpp \
  "$libdir/libposenc.a" \
  "$libdir/pkgconfig/posenc.pc" "$cmakedir/posenc-config.cmake" "$cmakedir/posenc-config-version.cmake")
expected=$( (echo "$library_files"; [ -z "$ggml_files" ] || echo "$ggml_files"
  printf '%s\n' bin/posenc bin/posenc-bench libexec/posenc/posenc-accuracy
  # the Python section's timer and originals (issues 16 and 25) come with the report scripts
  # (and the NEON, ggml and llama.cpp sections' renderers, issues 28, 23 and 31, which make_report imports)
  for f in bench_torch charts ggml_section llama_section machine make_report neon_section originals originals_timesteps \
           pictures python_section report results summary targets; do echo "share/posenc/report/$f.py"; done
  ) | sort)
installed=$(cd "$prefix" && find . -type f | sed 's|^\./||' | sort)
[ "$installed" = "$expected" ] || fail "installed files: got"$'\n'"$installed"$'\n'"expected"$'\n'"$expected"
staged=$(cd "$tmp/stage$prefix" && find . -type f | sed 's|^\./||' | sort)
[ "$staged" = "$installed" ] || fail "meson install --destdir staged other files:"$'\n'"$staged"
grep -rl -e "$src" -e "$tmp/build" "$prefix/include" "$prefix/$libdir/pkgconfig" "$prefix/$cmakedir" \
  "$prefix/share/posenc" && fail "installed files name the source or build tree"
# -Dtools=disabled -Dbenchmarks=disabled (the README's library-only install, ggml off by default): the library's
# files alone
quiet meson configure "$tmp/build" -Dtools=disabled -Dbenchmarks=disabled -Dggml=disabled
quiet meson install -C "$tmp/build" --destdir "$tmp/library-only"
library_only=$(cd "$tmp/library-only$prefix" && find . -type f | sed 's|^\./||' | sort)
[ "$library_only" = "$(sort <<<"$library_files")" ] || fail "-Dtools=disabled installed:"$'\n'"$library_only"

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[ "$(pkg-config --modversion posenc)" = "$version" ] || fail "posenc.pc version is not $version"
requires=$(pkg-config --print-requires posenc; pkg-config --print-requires-private posenc)
[ -z "$requires" ] || fail "posenc.pc requires other packages: $requires"
echo "installed posenc $version: $(pkg-config --libs posenc)"

cp -r examples "$tmp/examples"
cd "$tmp"

echo "== (a) C99 through pkg-config"
# Only what pkg-config says, without --static: the static archive must link with its Libs alone.
pkgconfig_example "the C example" c_example "posenc $version," \
  "${CC:-cc}" -std=c99 -pedantic-errors -Wall -Wextra -Werror examples/c_pkgconfig/main.c \
  $(pkg-config --cflags --libs posenc)

echo "== (rope_decode) the RoPE step of a decode loop, C99 through pkg-config"
pkgconfig_example "the RoPE example" rope_decode "rope_decode: ok" \
  "${CC:-cc}" -std=c99 -pedantic-errors -Wall -Wextra -Werror examples/rope_decode/main.c \
  $(pkg-config --cflags --libs posenc)

if [ -n "$ggml_prefix" ]; then
  echo "== (ggml_rope) one attention block's q/k RoPE, ggml's and posenc's drop-in, C11 through pkg-config"
  # ggml.pc names only libggml: the program adds the CPU backend it computes graphs with, and a run path
  ggml_pkg=$PKG_CONFIG_PATH:$ggml_prefix/lib/pkgconfig
  [ "$(PKG_CONFIG_PATH=$ggml_pkg pkg-config --modversion posenc-ggml)" = "$version" ] ||
    fail "posenc-ggml.pc version is not $version"
  pkgconfig_example "the ggml example" ggml_rope "ggml_rope: ok" \
    "${CC:-cc}" -std=c11 -pedantic-errors -Wall -Wextra -Werror examples/ggml_rope/main.c \
    $(PKG_CONFIG_PATH=$ggml_pkg pkg-config --cflags --libs posenc-ggml) -lggml-cpu -Wl,-rpath,"$ggml_prefix/lib"
fi

echo "== (threads) posenc::work split over std::threads by posenc/threads.hpp, C++17 through pkg-config"
cat >threads_example.cpp <<'CPP'
#include <posenc/threads.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

int main() {  // a 4096 x 512 table on 4 threads: the bytes of the unsplit call
  const posenc::spec s(512);
  std::vector<float> whole(4096 * 512), split(4096 * 512, 1.0f);
  posenc::table_f32(s, 0, posenc::rows_view<float>(whole.data(), 4096, 512));
  const posenc::work w = posenc::table_f32_work(s, 0, posenc::rows_view<float>(split.data(), 4096, 512));
  posenc::run_parallel(w, 4);
  const bool same = std::memcmp(whole.data(), split.data(), whole.size() * sizeof(float)) == 0;
  std::printf("threads: %s, %lld pieces\n", same ? "ok" : "differs", (long long)w.pieces(4));
  return same ? 0 : 1;
}
CPP
pkgconfig_example "the threads example" threads_example "threads: ok" \
  "${CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -pthread threads_example.cpp $(pkg-config --cflags --libs posenc)

cmake_example cpp_cmake cpp_example
grep -q "^posenc $version (CMake package $version)" cpp_example.out || fail "the CMake package is not version $version"
cmake_example inference_runtime embed_sentence

# Every libdir meson may pick (or a user may give): the library-only install staged with --destdir (the
# package is relocatable), found by find_package from that staged prefix.
multiarch=$("${CC:-cc}" -print-multiarch 2>/dev/null || true)
for layout in lib lib64 ${multiarch:+lib/$multiarch}; do
  quiet meson configure "$tmp/build" -Dlibdir="$layout"
  quiet meson install -C "$tmp/build" --destdir "$tmp/layout-${layout//\//-}"
  staged=$tmp/layout-${layout//\//-}$prefix
  [ -f "$staged/$(cmake_dir_for "$layout")/posenc-config.cmake" ] || fail "libdir $layout: no CMake package in $(cmake_dir_for "$layout")"
  cmake_example cpp_cmake cpp_example "$staged" "build-layout-${layout//\//-}"
done

echo "== the installed posenc command"
# Only the prefix: no build tree, no source tree on the way.
export PATH=$prefix/bin:$PATH
[ "$(command -v posenc)" = "$prefix/bin/posenc" ] || fail "posenc is not $prefix/bin/posenc"
[ "$(posenc --version)" = "posenc $version" ] || fail "posenc --version is not $version"
seeds=$(posenc table --d-model 6 --positions 10 --decimals 4) || fail "posenc table"
[ "$(sed -n '2p;10p' <<<"$seeds")" = "0.8415 0.5403 0.0464 0.9989 0.0022 1.0000
0.4121 -0.9111 0.4057 0.9140 0.0194 0.9998" ] || fail "posenc table: not the seeds' table"$'\n'"$seeds"
posenc rope --preset llama3.1 --position-list 0,131071,pad --format npy -o rope.npy || fail "posenc rope"
[ "$(head -c 6 rope.npy | tail -c 5)" = NUMPY ] || fail "posenc rope wrote no .npy"
posenc info >info.out || fail "posenc info"
head -4 info.out
grep -q "^posenc $version$" info.out || fail "posenc info"
posenc check --quiet || fail "posenc check"
status=0
posenc table --d-model 6 --no-such-option 2>/dev/null || status=$?
[ $status -eq 2 ] || fail "posenc: a bad option exited $status, not 2"

echo "== posenc-bench --report --quick from a moved copy of the prefix"
# The configured paths no longer exist: the report must find its scripts and programs from its own place.
mv "$prefix" "$tmp/moved"
export PATH=$tmp/moved/bin:${PATH#"$prefix/bin:"}
py=/usr/bin/python3  # Debian's matplotlib and NumPy, as scripts/report.sh
[ -x "$py" ] || py=python3
POSENC_PYTHON=$py quiet "$tmp/moved/bin/posenc-bench" --report "$tmp/report" --quick
grep -q '^Generated by `posenc-bench --report '"$tmp/report"' --quick`' "$tmp/report/summary.md" ||
  fail "posenc-bench --report: no summary"
if "$py" -c 'import matplotlib, numpy' 2>/dev/null; then
  for f in table_throughput_vs_d.svg accuracy_vs_position.svg pe_heatmap.svg pe_cosine_similarity.svg; do
    [ -s "$tmp/report/$f" ] || fail "posenc-bench --report drew no $f"
  done
fi
echo "report: $(grep -c '' "$tmp/report/summary.md") lines, $(ls "$tmp/report" | grep -c '\.svg$') charts"

echo "test_install: ok"
