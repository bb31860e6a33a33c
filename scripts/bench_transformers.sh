#!/usr/bin/env bash
# posenc.torch inside transformers' own forward, timed (bench/python/bench_hf_models.py): a random-weight Llama
# 3.1 model of transformers 5.12.1 with and without posenc's rotary module, prefill 2048 then 64 decode steps
# with the cache, and the rotary module alone, at 1 and 2 threads in alternated rounds. Needs Debian unstable
# (python3-transformers); run it in a Debian unstable root:
#   scripts/test_fresh.sh --run-sid 'bash scripts/bench_transformers.sh'
# Installs what it uses, OpenBLAS among it: Debian's PyTorch takes its BLAS from the libblas.so.3 alternative,
# which without OpenBLAS is the reference BLAS (about 11 GFLOP/s here, a 2048-token prefill of this model in a
# minute instead of a second). The OpenMP build (libopenblas0-openmp), whose threads are torch's OpenMP team:
# the pthreads build keeps its own threads spinning beside torch's (2 torch threads were then slower than 1,
# and 1 was not one). Builds the package as docs/python.md gives it (pip install
# --no-build-isolation . in a venv), then prints the table docs/benchmarks.md quotes and keeps the JSON in
# build-transformers/bench.json and report/transformers.json (the report's Python section shows it when
# scripts/report.sh runs in this tree afterwards). Timings are never judged here.
#   scripts/bench_transformers.sh [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps python3-transformers python3-torch python3-safetensors python3-tokenizers python3-accelerate \
  python3-mesonpy python3-dev pybind11-dev python3-numpy python3-venv python3-pip libopenblas0-openmp

py=/usr/bin/python3
work=$PWD/build-transformers
mkdir -p "$work"
# this tree's package, built each time (a venv left by an earlier run may hold an older build)
rm -rf "$work/venv"
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-index --no-build-isolation . >"$work/pip.log" 2>&1 || { tail -40 "$work/pip.log"; exit 1; }
root=$PWD
cd "$work"  # not the source tree: the installed posenc
HF_HUB_OFFLINE=1 "$work/venv/bin/python" "$root/bench/python/bench_hf_models.py" --out "$work/bench.json" "$@"
# for the report's Python section (scripts/report.sh in this tree afterwards: "Inside transformers")
mkdir -p "$root/report"
cp "$work/bench.json" "$root/report/transformers.json"
echo "bench_transformers: $work/bench.json, and report/transformers.json for scripts/report.sh"
