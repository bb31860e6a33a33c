#!/usr/bin/env bash
# posenc as a meson subproject: builds examples/meson_subproject (a C99 project) with this source tree as
# subprojects/posenc and the fallback forced, runs its program, and checks that the subproject configured
# only the library (no test or benchmark targets) and that installing the parent installs nothing of posenc.
# Ends with "test_subproject: ok"; stops at the first failure with "test_subproject: FAILED: ...".
#   scripts/test_subproject.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps

src=$PWD
jobs=${POSENC_JOBS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/posenc-subproject.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "test_subproject: FAILED: $*" >&2
  exit 1
}
quiet() {  # runs a command, showing its output only when it fails
  "$@" >"$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "$*"; }
}

cp -r examples/meson_subproject "$tmp/consumer"
mkdir "$tmp/consumer/subprojects"
ln -s "$src" "$tmp/consumer/subprojects/posenc"
cd "$tmp/consumer"

echo "== a C project with posenc as its subproject"
quiet meson setup build --force-fallback-for=posenc --prefix="$tmp/prefix"
quiet ninja -C build -j "$jobs"
./build/meson_example || fail "the subproject example"

# Targets: the consumer's program and posenc's library units only.
meson introspect build --targets --tests --installed | python3 -c '
import json, os, sys
info = json.load(sys.stdin)
extra = [t["name"] for t in info["targets"] if t["name"] != "meson_example" and not t["name"].startswith("posenc")]
if extra or info["tests"]:
    sys.exit("subproject targets beyond the library: %s, tests: %s" % (extra, [t["name"] for t in info["tests"]]))
installed = sorted(os.path.basename(p) for p in info["installed"].values())
if installed != ["meson_example"]:
    sys.exit("installing the parent installs %s" % installed)
' || fail "the subproject configured or installs more than its library"

echo "test_subproject: ok"
