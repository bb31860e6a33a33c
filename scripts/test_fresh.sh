#!/usr/bin/env bash
# The README's commands on a new machine: builds a minimal Debian bookworm root with debootstrap
# (--variant=minbase: apt, bash, coreutils and little else), copies a clean clone of this repository into
# it with ../shared beside it (as CI has them), and runs inside it, as root with no standard input:
#   1. scripts/test.sh --report [ARGS]: the test command, which first runs the report command
#      scripts/report.sh --quick as one of its cases;
#   2. then installs dpkg-dev (which changes meson's default libdir from lib64 to lib/<multiarch>) and runs
#      scripts/test_install.sh --cmake-only: the README's install line and find_package(posenc CONFIG) again.
# Every package either run needs must be installed by the scripts themselves: nothing from this machine
# reaches the root but the clone, ../shared, DNS settings and the apt sources.
# Prints the inner run's closing line "tests: N passed, M failed" (with step 2 as one more case) as its own
# last line and exits non-zero when any of it fails.
#
# The bootstrapped base is cached as a tarball (~/.cache/posenc/fresh/, or $POSENC_FRESH_CACHE) keyed by
# suite, architecture and mirror, so later runs skip debootstrap; the .deb files apt downloads inside the root
# are kept there too (a bind mount of /var/cache/apt/archives), so later runs download only what changed. Both
# only save downloads: every package is still installed into a new root by the scripts on every run.
# The mounts (/proc, /sys, /dev, the apt cache) live in a private mount namespace (unshare), so they vanish
# with it on every exit path, a kill included; the root itself is removed on exit unless POSENC_FRESH_KEEP=1.
#   scripts/test_fresh.sh [test.sh arguments, e.g. --werror]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps debootstrap git util-linux ca-certificates

src=$PWD
suite=bookworm
arch=$(dpkg --print-architecture)
cache=${POSENC_FRESH_CACHE:-$HOME/.cache/posenc/fresh}
mkdir -p "$cache/apt-archives/partial"

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
root=$tmp/root
cleanup() {
  local rc=$?
  # The mounts were made in the namespace of the unshare below and are gone with it; refuse to delete a
  # tree that still has anything mounted under it in this namespace.
  if findmnt -rno TARGET | grep -q "^$root"; then
    echo "test_fresh: mounts remain under $root; not removing it" >&2
  elif [ "${POSENC_FRESH_KEEP:-0}" = 1 ]; then
    echo "test_fresh: the root is kept in $root"
  else
    rm -rf --one-file-system "$tmp"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== a minimal Debian $suite root ($arch, $mirror)"
key=$(printf '%s' "$suite $arch minbase $mirror" | sha256sum | cut -c1-16)
base=$cache/$suite-$arch-minbase-$key.tar.gz
if [ ! -s "$base" ]; then
  echo "bootstrapping (cached afterwards as $base)"
  debootstrap --variant=minbase --arch="$arch" "$suite" "$tmp/boot" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
    { tail -30 "$tmp/debootstrap.log"; echo "test_fresh: debootstrap failed" >&2; exit 1; }
  rm -rf "$tmp/boot/var/cache/apt/archives/"*.deb
  tar -C "$tmp/boot" --numeric-owner -czf "$base.part" . && mv "$base.part" "$base"
  rm -rf --one-file-system "$tmp/boot"
fi
mkdir "$root"
tar -C "$root" --numeric-owner -xzf "$base"

# apt inside the root reads the same suites (updates and security included) as this machine, so it installs
# the same package versions as a run here would.
if [ -n "$sources" ] && [ -z "${POSENC_FRESH_MIRROR:-}" ]; then
  case "$sources" in
    *.sources) rm -f "$root/etc/apt/sources.list"; cp "$sources" "$root/etc/apt/sources.list.d/" ;;
    *) cp "$sources" "$root/etc/apt/sources.list" ;;
  esac
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -f /etc/hosts ] && cp /etc/hosts "$root/etc/hosts"

echo "== a clean clone of $(git rev-parse --short HEAD) in /work/main, ../shared beside it"
mkdir -p "$root/work"
git clone -q --no-hardlinks "$src" "$root/work/main"
if [ -d "$src/../shared" ]; then
  cp -a "$src/../shared" "$root/work/shared"
fi
# Nothing of the host's git configuration or history is needed inside: the clone is a plain directory tree
# to the scripts (they use no git command).

# The run inside, in a private mount namespace: /proc, /sys and /dev (with /dev/pts and /dev/shm, which
# PyTorch and the sanitizers use) from this machine, the download cache, and no standard input.
inner=$(cat <<'INNER'
set -euo pipefail
root=$1 cache=$2
shift 2
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
run() {  # command... inside the root, as a fresh login would have it
  chroot "$root" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$@"
}
# the closing line of the test command goes to a file the outer script reads
set +e
run 'cd /work/main && bash scripts/test.sh --report "$@" 2>&1 | tee /work/test.log; exit ${PIPESTATUS[0]}' \
  bash "$@" </dev/null
echo $? >"$root/work/test.rc"
echo "== dpkg-dev installed: meson's default libdir becomes lib/<multiarch>; the README's install line again"
run 'cd /work/main && . scripts/deps.sh && posenc_install_deps dpkg-dev && bash scripts/test_install.sh --cmake-only' \
  </dev/null
echo $? >"$root/work/cmake.rc"
INNER
)
unshare --mount --propagation private -- bash -c "$inner" bash "$root" "$cache" "$@" </dev/null || true

test_rc=$(cat "$root/work/test.rc" 2>/dev/null || echo 1)
cmake_rc=$(cat "$root/work/cmake.rc" 2>/dev/null || echo 1)
line=$(grep -E '^tests: [0-9]+ passed, [0-9]+ failed$' "$root/work/test.log" 2>/dev/null | tail -n 1 || true)
if [ -z "$line" ]; then
  echo "test_fresh: the test command inside the fresh root printed no closing line (exit $test_rc)" >&2
  echo "tests: 0 passed, 1 failed"
  exit 1
fi
read -r passed failed < <(sed -E 's/^tests: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' <<<"$line")
if [ "$cmake_rc" = 0 ]; then
  passed=$((passed + 1))
else
  echo "test_fresh: find_package after installing dpkg-dev failed" >&2
  failed=$((failed + 1))
fi
[ "$test_rc" = 0 ] || [ "$failed" -gt 0 ] || failed=1  # a failing run whose line says otherwise
echo "tests: $passed passed, $failed failed"
[ "$test_rc" = 0 ] && [ "$failed" -eq 0 ]
