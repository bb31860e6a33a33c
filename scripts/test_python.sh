#!/usr/bin/env bash
# The Python package, offline, from Debian's packages only: builds a wheel with `python3 -m build
# --no-isolation`, installs the source tree with `pip install --no-build-isolation .` into a venv that
# sees Debian's NumPy, PyTorch and pytest (--system-site-packages), checks the wheel installs too, runs
# examples/python/decode.py and multiaxis.py and the pytest suite (python/tests) against the installed
# package. Each pytest case counts in the closing "tests: N passed, M failed" line (python/tests/conftest.py
# writes them to $POSENC_RESULTS).
#   scripts/test_python.sh [--werror]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
# patchelf: meson-python lists it as a build requirement of the wheel (python3 -m build checks for it);
# python3-dev: Python.h, which pybind11's headers include
posenc_install_deps python3-mesonpy python3-dev pybind11-dev python3-numpy python3-pytest python3-torch python3-build \
  python3-venv python3-pip python3-gmpy2 patchelf

werror=false
[ "${1:-}" = --werror ] && werror=true
# Debian's packages belong to the system interpreter, whatever python3 comes first in PATH
py=/usr/bin/python3
root=$PWD
work=$PWD/build-python
rm -rf "$work"
mkdir -p "$work"
# warnings as errors: meson-python's setup-args, spelled --config-setting by python3-build 0.9 and
# --config-settings by pip
build_args=() pip_args=()
$werror && build_args=(--config-setting=setup-args=-Dwerror=true) pip_args=(--config-settings=setup-args=-Dwerror=true)

echo "== wheel: python3 -m build --no-isolation --wheel"
"$py" -m build --no-isolation --wheel --outdir "$work/dist" "${build_args[@]}" . >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; exit 1; }
ls "$work/dist"

echo "== venv: pip install --no-build-isolation ."
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --no-build-isolation "${pip_args[@]}" . >"$work/pip.log" 2>&1 ||
  { tail -40 "$work/pip.log"; exit 1; }
"$py" -m venv --system-site-packages "$work/venv-wheel"
"$work/venv-wheel/bin/pip" install --no-index "$work"/dist/posenc-*.whl >>"$work/pip.log" 2>&1 ||
  { tail -40 "$work/pip.log"; exit 1; }
"$work/venv-wheel/bin/python" -c 'import posenc, posenc.torch; print("wheel:", posenc.__version__, posenc.active_isa())'

echo "== the Python examples (examples/python/decode.py, multiaxis.py)"
(cd "$work" && "$work/venv/bin/python" "$root/examples/python/decode.py")
(cd "$work" && "$work/venv/bin/python" "$root/examples/python/multiaxis.py")

echo "== pytest (installed package)"
cd "$work"  # not the source tree: the tests import the installed posenc
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests"
