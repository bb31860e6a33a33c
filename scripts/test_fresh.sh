#!/usr/bin/env bash
# The README's commands on a new machine. Builds minimal Debian bookworm roots with debootstrap
# (--variant=minbase: apt, bash, coreutils and little else), copies a clean clone of this repository into each
# with ../shared beside it (as CI has them) and runs commands inside, as root with no standard input. Nothing
# from this machine reaches a root but the clone, ../shared, DNS settings and the apt sources: every package a
# command needs must come from the scripts' own apt-get install (scripts/deps.sh).
#
#   scripts/test_fresh.sh           what CI runs (.ci/run): the README's two commands as a user runs them
#     1. in a fresh root, `scripts/test.sh`, exactly as the README writes it, with nothing installed before it;
#     2. in a second fresh root, `scripts/report.sh --quick` (the report command on small shapes), so that
#        neither command can install what the other needs (one more case);
#     3. in the first root, dpkg-dev installed (meson's default libdir becomes lib/<multiarch>), the README's
#        install line and find_package(posenc CONFIG) again: scripts/test_install.sh --cmake-only (one more);
#     4. in a fresh Debian unstable root (debootstrap's sid script), the ggml backend module that step 1 built,
#        the same file, in Debian's packaged llama.cpp and ggml: scripts/test_debian.sh (its cases added);
#     5. in that root, posenc's Python package built with its Python and pybind11 and its rotary modules inside
#        Debian's transformers and PyTorch: scripts/test_transformers.sh (each pytest case added).
#     Prints the test command's own closing line, then "tests: N passed, M failed" with 2 to 5 added.
#   scripts/test_fresh.sh --each    every script a user may run alone, each in its own fresh root (report.sh
#     --quick, test_python.sh, build_ggml.sh, build_ggml_backend.sh, build_llama.sh, test_llama.sh,
#     test_install.sh, test_subproject.sh, test_hardening.sh; test_debian.sh and test_transformers.sh in a Debian
#     unstable root): a script that uses a package it does not install
#     fails here. test.sh itself is the default mode's step 1. Run before each release (docs/releasing.md);
#     one case per script.
#   scripts/test_fresh.sh --run 'COMMAND'   one command in a fresh root (for a look inside, POSENC_FRESH_KEEP=1)
#   scripts/test_fresh.sh --run-sid 'COMMAND'   the same in a fresh Debian unstable root
#
# The bootstrapped base is cached as a tarball (~/.cache/posenc/fresh/, or $POSENC_FRESH_CACHE) keyed by
# suite, architecture and mirror, so later runs skip debootstrap; the .deb files apt downloads inside a root
# are kept there too (a bind mount of /var/cache/apt/archives), so later runs download only what changed, and
# so is ccache's cache (/root/.cache/ccache), through which the scripts compile llama.cpp's and ggml's sources
# (not posenc's), so that a second run recompiles only what changed. These only save downloads and
# recompilation of the same sources: every package is still installed into each new root by the scripts, and
# every build still runs, every run.
# The mounts (/proc, /sys, /dev, the apt cache) live in a private mount namespace (unshare), so they vanish
# with it on every exit path, a kill included; the roots are removed on exit unless POSENC_FRESH_KEEP=1.
# Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps debootstrap git util-linux ca-certificates

mode=ci run_cmd=
case "${1:-}" in
  "") ;;
  --each) mode=each ;;
  --run) mode=run run_cmd=${2:?"usage: scripts/test_fresh.sh --run 'COMMAND'"} ;;
  --run-sid) mode=run-sid run_cmd=${2:?"usage: scripts/test_fresh.sh --run-sid 'COMMAND'"} ;;
  *) echo "usage: scripts/test_fresh.sh [--each | --run 'COMMAND' | --run-sid 'COMMAND']" >&2; exit 2 ;;
esac

src=$PWD
suite=bookworm
arch=$(dpkg --print-architecture)
cache=${POSENC_FRESH_CACHE:-$HOME/.cache/posenc/fresh}
mkdir -p "$cache/apt-archives/partial" "$cache/ccache"

# The Debian mirror apt already uses here (deb822 or one-line sources), unless POSENC_FRESH_MIRROR says.
host_sources() {
  local f
  for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -s "$f" ] && grep -qE '^(URIs:|deb )' "$f" && { echo "$f"; return 0; }
  done
  return 1
}
sources=$(host_sources || true)
mirror=${POSENC_FRESH_MIRROR:-}
if [ -z "$mirror" ] && [ -n "$sources" ]; then
  mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit} /^deb / && $2 !~ /security/ {print $2; exit}' "$sources")
fi
mirror=${mirror:-http://deb.debian.org/debian}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/posenc-fresh.XXXXXX")
cleanup() {
  local rc=$?
  # The mounts were made in the namespaces of the unshares below and are gone with them; refuse to delete a
  # tree that still has anything mounted under it in this namespace.
  if findmnt -rno TARGET | grep -q "^$tmp"; then
    echo "test_fresh: mounts remain under $tmp; not removing it" >&2
  elif [ "${POSENC_FRESH_KEEP:-0}" = 1 ]; then
    echo "test_fresh: the roots are kept in $tmp"
  else
    rm -rf --one-file-system "$tmp"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A cached base root per suite: bookworm for the README's commands, sid (Debian unstable) for the packaged
# llama.cpp and ggml that scripts/test_debian.sh proves the module in.
base_of() {  # suite: prints the cached base tarball's path, bootstrapping it first when missing
  local suite=$1 key base
  key=$(printf '%s' "$suite $arch minbase $mirror" | sha256sum | cut -c1-16)
  base=$cache/$suite-$arch-minbase-$key.tar.gz
  if [ ! -s "$base" ]; then
    echo "bootstrapping $suite (cached afterwards as $base)" >&2
    debootstrap --variant=minbase --arch="$arch" "$suite" "$tmp/boot-$suite" "$mirror" >"$tmp/debootstrap-$suite.log" 2>&1 ||
      { tail -30 "$tmp/debootstrap-$suite.log" >&2; echo "test_fresh: debootstrap $suite failed" >&2; return 1; }
    rm -rf "$tmp/boot-$suite/var/cache/apt/archives/"*.deb
    tar -C "$tmp/boot-$suite" --numeric-owner -czf "$base.part" . && mv "$base.part" "$base"
    rm -rf --one-file-system "$tmp/boot-$suite"
  fi
  echo "$base"
}
echo "== minimal Debian $suite roots ($arch, $mirror)"
base=$(base_of "$suite")

new_root() {  # name [sid]: a root from the cached base, with this machine's apt sources and a clean clone inside
  local root=$tmp/$1
  mkdir "$root"
  if [ "${2:-}" = sid ]; then
    # Debian unstable from the same mirror; a snapshot mirror may serve a Release past its Valid-Until, which
    # this root alone accepts
    local sid_base
    sid_base=$(base_of sid) || return 1
    tar -C "$root" --numeric-owner -xzf "$sid_base" || return 1
    rm -f "$root/etc/apt/sources.list.d/"*
    echo "deb $mirror sid main" >"$root/etc/apt/sources.list"
    echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99posenc-snapshot"
  else
    tar -C "$root" --numeric-owner -xzf "$base"
    # apt inside the root reads the same suites (updates and security included) as this machine, so it
    # installs the same package versions as a run here would.
    if [ -n "$sources" ] && [ -z "${POSENC_FRESH_MIRROR:-}" ]; then
      case "$sources" in
        *.sources) rm -f "$root/etc/apt/sources.list"; cp "$sources" "$root/etc/apt/sources.list.d/" ;;
        *) cp "$sources" "$root/etc/apt/sources.list" ;;
      esac
    fi
  fi
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  [ -f /etc/hosts ] && cp /etc/hosts "$root/etc/hosts"
  mkdir -p "$root/work"
  # Nothing of the host's git configuration or history is needed inside: the clone is a plain directory
  # tree to the scripts (they use no git command).
  git clone -q --no-hardlinks "$src" "$root/work/main" || return 1
  if [ -d "$src/../shared" ]; then
    cp -a "$src/../shared" "$root/work/shared" || return 1
  fi
  echo "root $1: ${2:-$suite}, a clean clone of $(git rev-parse --short HEAD) in /work/main, ../shared beside it"
}

# One command inside a root, in a private mount namespace: /proc, /sys and /dev (with /dev/pts and /dev/shm,
# which PyTorch and the sanitizers use) from this machine, the download and compiler caches, no standard input, and the
# environment of a fresh login. Its output goes to the terminal and to /work/NAME.log inside the root; its
# exit status is this function's.
inner=$(cat <<'INNER'
set -uo pipefail
root=$1 cache=$2 name=$3 cmd=$4
mkdir -p "$root/root/.cache/ccache"
mount -t proc proc "$root/proc" && mount --rbind /sys "$root/sys" && mount --rbind /dev "$root/dev" &&
  mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives" &&
  mount --bind "$cache/ccache" "$root/root/.cache/ccache" || exit 1
chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c 'cd /work/main && { '"$cmd"'; } 2>&1 | tee "/work/$0.log"; exit ${PIPESTATUS[0]}' "$name" </dev/null
INNER
)
run_in() {  # root name command
  echo "== [$1] $3"
  unshare --mount --propagation private -- bash -c "$inner" bash "$tmp/$1" "$cache" "$2" "$3" </dev/null
}

closing() {  # log: the last "tests: N passed, M failed" line of a log, as "N M", or nothing
  grep -E '^tests: [0-9]+ passed, [0-9]+ failed$' "$1" 2>/dev/null | tail -n 1 |
    sed -E 's/^tests: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' || true
}

counted() {  # root name command: runs it (its output to the terminal, through stderr), then prints "N M LINE":
  # its closing line's counts (a missing line is one failure; so is a failing exit its line does not count) and
  # "tests: N passed, M failed (exit RC)"
  local rc=0 p f
  run_in "$1" "$2" "$3" >&2 || rc=$?
  read -r p f < <(closing "$tmp/$1/work/$2.log"; echo)
  if [ -z "${p:-}" ]; then p=0 f=1; fi
  [ "$rc" = 0 ] || [ "$f" -gt 0 ] || f=$((f + 1))
  echo "$p $f tests: $p passed, $f failed (exit $rc)"
}

case $mode in
run)
  new_root run
  run_in run run "$run_cmd"
  ;;

run-sid)
  new_root run sid
  run_in run run "$run_cmd"
  ;;

each)
  # Each script alone, as a user would run it after a clone: one root each, one case each.
  scripts=("scripts/report.sh --quick" scripts/test_python.sh scripts/build_ggml.sh
           # ggml's source unpacked by hand (xz-utils for that alone), ggml built by the script itself
           "apt-get update -q && apt-get install -y -q --no-install-recommends xz-utils && mkdir -p /tmp/ggml &&
            tar -xJf ../shared/peers/ggml-d99724f2.tar.xz -C /tmp/ggml --strip-components=1 &&
            scripts/build_ggml_backend.sh /tmp/ggml"
           scripts/build_llama.sh scripts/test_llama.sh scripts/test_install.sh scripts/test_subproject.sh
           scripts/test_hardening.sh "sid: scripts/test_debian.sh" "sid: scripts/test_transformers.sh")
  passed=0 failed=0 i=0 results=()
  for cmd in "${scripts[@]}"; do
    i=$((i + 1))
    case $cmd in
      "sid: "*) cmd=${cmd#sid: }; new_root "each$i" sid ;;
      *) new_root "each$i" ;;
    esac
    start=$SECONDS
    case $cmd in scripts/*) run=(bash $cmd) ;; *) run=("$cmd") ;; esac
    if run_in "each$i" "each$i" "${run[*]}"; then
      passed=$((passed + 1)) results+=("ok    $cmd ($((SECONDS - start)) s)")
    else
      failed=$((failed + 1)) results+=("FAIL  $cmd ($((SECONDS - start)) s)")
    fi
    [ "${POSENC_FRESH_KEEP:-0}" = 1 ] || rm -rf --one-file-system "${tmp:?}/each$i"
  done
  echo "== each script alone in a fresh root"
  printf '%s\n' "${results[@]}"
  echo "tests: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;

ci)
  # 1. The test command exactly as the README writes it.
  new_root tests
  start=$SECONDS
  test_rc=0
  run_in tests test "scripts/test.sh" || test_rc=$?
  test_s=$((SECONDS - start))
  read -r passed failed < <(closing "$tmp/tests/work/test.log"; echo)
  if [ -z "${passed:-}" ]; then
    echo "test_fresh: scripts/test.sh printed no closing line (exit $test_rc)" >&2
    passed=0 failed=1
  fi
  [ "$test_rc" = 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))  # a failing run whose line says otherwise
  test_line="tests: $passed passed, $failed failed"

  # 2. The report command in a root of its own.
  new_root report
  start=$SECONDS
  if run_in report report "scripts/report.sh --quick"; then
    passed=$((passed + 1)) report_result=ok
  else
    failed=$((failed + 1)) report_result=FAIL
  fi
  report_s=$((SECONDS - start))
  rm -rf --one-file-system "${tmp:?}/report"

  # 3. The install line and find_package with meson's Debian libdir, after the tests' packages.
  start=$SECONDS
  if run_in tests cmake '. scripts/deps.sh && posenc_install_deps dpkg-dev && bash scripts/test_install.sh --cmake-only'
  then
    passed=$((passed + 1)) cmake_result=ok
  else
    failed=$((failed + 1)) cmake_result=FAIL
  fi
  cmake_s=$((SECONDS - start))

  # 4. The module step 1 built, the same file, in Debian unstable's llama.cpp and ggml.
  start=$SECONDS
  module=$tmp/tests/work/main/build-ggml-backend/module/integrations/ggml/libggml-posenc.so
  debian_line="no module from step 1"
  if [ ! -f "$module" ]; then
    d_passed=0 d_failed=1
  elif ! new_root debian sid; then
    d_passed=0 d_failed=1 debian_line="no Debian unstable root (debootstrap or the mirror failed)"
  else
    cp "$module" "$tmp/debian/work/libggml-posenc.so"
    echo "the module from step 1, sha256 $(sha256sum "$module" | cut -c1-16), into the Debian unstable root"
    read -r d_passed d_failed debian_line < <(counted debian debian \
      "bash scripts/test_debian.sh --backend /work/libggml-posenc.so") || true
    [ -n "${d_failed:-}" ] || d_passed=0 d_failed=1 debian_line="scripts/test_debian.sh: no counts"
    debian_fails=$(grep -E '^FAIL ' "$tmp/debian/work/debian.log" | head -n 20 || true)
    debian_s=$((SECONDS - start))
    # 5. In the same root: posenc's Python package built there (Python 3.14, pybind11 3) the documented way, and
    # its rotary modules inside Debian's transformers and PyTorch (scripts/test_transformers.sh).
    start=$SECONDS
    read -r t_passed t_failed tf_line < <(counted debian transformers "bash scripts/test_transformers.sh") || true
    [ -n "${t_failed:-}" ] || t_passed=0 t_failed=1 tf_line="scripts/test_transformers.sh: no counts"
    tf_fails=$(grep -E '^FAILED ' "$tmp/debian/work/transformers.log" | head -n 20 || true)
    tf_s=$((SECONDS - start))
    passed=$((passed + t_passed)) failed=$((failed + t_failed))
    rm -rf --one-file-system "${tmp:?}/debian"
  fi
  passed=$((passed + d_passed)) failed=$((failed + d_failed))
  debian_s=${debian_s:-$((SECONDS - start))}

  echo "== the README's commands in fresh roots"
  echo "scripts/test.sh: $test_line ($test_s s, exit $test_rc)"
  # what failed, from tools/test_summary.py's lines, where the tail of CI's log shows it
  grep -E '^(FAILED |  case: )' "$tmp/tests/work/test.log" 2>/dev/null | head -n 20 | sed 's/^/  /' || true
  echo "scripts/report.sh --quick, its own root: $report_result ($report_s s)"
  echo "dpkg-dev, the install line and find_package again: $cmake_result ($cmake_s s)"
  echo "the module in Debian unstable (scripts/test_debian.sh): $debian_line ($debian_s s)"
  [ -z "${debian_fails:-}" ] || printf '%s\n' "$debian_fails" | sed 's/^/  /'
  echo "posenc's Python package in transformers and PyTorch there (scripts/test_transformers.sh): ${tf_line:-not run} (${tf_s:-0} s)"
  [ -z "${tf_fails:-}" ] || printf '%s\n' "$tf_fails" | sed 's/^/  /'
  echo "tests: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  ;;
esac
