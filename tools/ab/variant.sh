#!/bin/bash
# Builds one variant of the library as a shared object for tools/ab/ab.c:
#   tools/ab/variant.sh NAME "CPP_ARGS"   ->  /tmp/posenc-ab/NAME.so
# from the working tree (release, the given extra compiler arguments, e.g. "-DSOME_EXPERIMENT=1"). The
# static archive's objects are position-independent (meson's default), so they link into a .so as they are.
set -euo pipefail
name=$1
args=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=/tmp/posenc-ab
mkdir -p "$out"
build=$out/build-$name
if [ -d "$build" ]; then  # the same name again: take this call's arguments, not the first call's
  meson configure "$build" -Dcpp_args="$args" > /dev/null
else
  meson setup "$build" "$root" --buildtype=release -Dtests=disabled -Dbenchmarks=disabled -Dcpp_args="$args" > /dev/null
fi
ninja -C "$build" -j2 libposenc.a > /dev/null
g++ -shared -o "$out/$name.so" -Wl,--whole-archive "$build/libposenc.a" -Wl,--no-whole-archive -Wl,-Bsymbolic
echo "$out/$name.so"
