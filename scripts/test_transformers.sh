#!/usr/bin/env bash
# posenc's Python package inside the real transformers and PyTorch, as Debian unstable packages them
# (python3-transformers, python3-torch; Python 3.14, pybind11 3): run in a Debian unstable root
# (scripts/test_fresh.sh runs it in step 4's root; alone: scripts/test_fresh.sh --run-sid
# 'bash scripts/test_transformers.sh'). It installs what it uses, builds and installs the package the way
# docs/python.md gives it (`pip install --no-build-isolation .` in a venv made with --system-site-packages,
# warnings as errors), then runs the whole pytest suite against the installed package: the re-typed
# originals' tests, and python/tests/test_hf_models.py, which swaps the rotary modules of small models built
# from transformers' own config classes (every family with a RoPE of its own) and checks logits, generate(),
# cos/sin at far positions against MPFR, and half-precision models. Nothing is downloaded (HF_HUB_OFFLINE).
# Ends with "tests: N passed, M failed" (each pytest case one).
#   scripts/test_transformers.sh [-k PYTEST_EXPRESSION]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
[ -r /etc/debian_version ] && grep -q '^forky\|sid' /etc/debian_version ||
  echo "test_transformers: not Debian unstable ($(cat /etc/debian_version 2>/dev/null)); trying anyway"
# transformers and what its models import (safetensors, tokenizers, accelerate), PyTorch; the build's
# packages (meson-python, pybind11, Python.h) and the tests' (pytest, NumPy, gmpy2 for the MPFR references)
posenc_install_deps python3-transformers python3-torch python3-safetensors python3-tokenizers python3-accelerate \
  python3-mesonpy python3-dev pybind11-dev python3-numpy python3-pytest python3-venv python3-pip python3-gmpy2

py=/usr/bin/python3
root=$PWD
work=$PWD/build-transformers
rm -rf "$work"
mkdir -p "$work"
"$py" -c 'import sys, torch, transformers
print("test_transformers: Python %s, torch %s, transformers %s" % (sys.version.split()[0], torch.__version__,
      transformers.__version__))'
echo "test_transformers: pybind11 $(pkg-config --modversion pybind11 2>/dev/null || echo '(no pkg-config entry)'), $(g++ --version | head -n 1)"

echo "== pip install --no-build-isolation . (venv with --system-site-packages)"
start=$SECONDS
"$py" -m venv --system-site-packages "$work/venv"
if ! "$work/venv/bin/pip" install --no-index --no-build-isolation --config-settings=setup-args=-Dwerror=true . \
     >"$work/pip.log" 2>&1; then
  tail -40 "$work/pip.log"
  echo "tests: 0 passed, 1 failed"
  exit 1
fi
echo "built and installed in $((SECONDS - start)) s"
"$work/venv/bin/python" -c 'import posenc, posenc.torch; print("posenc", posenc.__version__, posenc.active_isa())'

echo "== pytest python/tests (installed package; test_hf_models.py: the models of transformers $(
  "$py" -c 'import transformers; print(transformers.__version__)'))"
export POSENC_RESULTS=$work/results.json POSENC_HF_NOTES=$work/measured.txt
: >"$POSENC_RESULTS"
status=0
cd "$work"  # not the source tree: the tests import the installed posenc
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -rfEs "$@" \
  "$root/python/tests" || status=1
echo "== what test_hf_models.py measured"
[ -f "$POSENC_HF_NOTES" ] && cat "$POSENC_HF_NOTES"
cd "$root"
"$py" tools/test_summary.py "$POSENC_RESULTS" | tail -n +2  # its FAILED lines, then the closing line
exit $status
