#!/usr/bin/env bash
# The benchmark report: installs what is missing, builds in release mode, measures every kernel on every
# path against its peers and bounds (Google Benchmark, JSON), measures accuracy against MPFR, draws the
# charts and pictures of the encoding, writes report/ and prints report/summary.md. The steps are those of
# bench/report/report.py, the same pipeline as an installed `posenc-bench --report DIR` (docs/tools.md).
#   scripts/report.sh           full run (~10 minutes on 2 cores, and ~7 more for the llama.cpp section; building
#                               llama.cpp the first time adds ~6.5)
#   scripts/report.sh --quick   small shapes, few repetitions (under 2 minutes): what CI runs
#   scripts/report.sh --docs    full run, and also writes docs/benchmarks.md (+ its charts)
# Exits non-zero when any step fails or the run is incomplete; it never judges the timings themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
# the Python section (bench/python/bench_torch.py): Debian's PyTorch, the package's build dependencies and gmpy2 (the
# MPFR counts of the diffusion tables)
posenc_install_deps python3-matplotlib python3-numpy python3-torch python3-dev pybind11-dev python3-gmpy2

mode=full
case "${1:-}" in
  "") ;;
  --quick) mode=quick ;;
  --docs) mode=docs ;;
  *) echo "usage: scripts/report.sh [--quick|--docs]" >&2; exit 2 ;;
esac
jobs=${POSENC_JOBS:-2}
build=build-report
out=report
# Debian's matplotlib and NumPy belong to the system interpreter, whatever python3 comes first in PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# -Dpython=enabled: the extension module for the Python section (meson runs under /usr/bin/python3, so the
# module is built for the interpreter below)
setup=(--buildtype=release -Dtests=disabled -Dbenchmarks=enabled -Dtools=enabled -Dpython=enabled)
# The ggml section (issue 23, docs/ggml.md): ggml built from the shared tarball beside the clone
# (scripts/build_ggml.sh; reused when built before) and the integration's benchmark, posenc-ggml-bench.
ggml_tarball=../shared/peers/ggml-d99724f2.tar.xz
ggml_setup=(-Dggml=disabled)
if [ ! -f "$ggml_tarball" ]; then
  echo "report: no $ggml_tarball beside the clone: no ggml section" >&2
elif ggml_args=$(posenc_ggml_args); then
  mapfile -t ggml_setup <<<"$ggml_args"  # the backend too: posenc-ggml-bench times ggml's graph on it
else
  echo "report: the ggml build failed: no ggml section" >&2
fi
setup+=("${ggml_setup[@]}")
if [ -d "$build" ]; then
  meson setup --reconfigure "$build" "${setup[@]}" >/dev/null
else
  meson setup "$build" "${setup[@]}" >/dev/null
fi
ninja -C "$build" -j "$jobs"

# The pipeline itself is bench/report/report.py, which `posenc-bench --report DIR` runs from an install.
args=(--out "$out" --bench "$build/bench/posenc-bench" --accuracy "$build/bench/posenc-accuracy"
      --posenc "$build/cli/posenc" --posenc-python "$build" --command scripts/report.sh)
if [ "${ggml_setup[0]}" != -Dggml=disabled ]; then
  args+=(--ggml-bench "$build/integrations/ggml/posenc-ggml-bench")
fi

# The NEON section (issue 28, bench/neon/): no ARM host here, so the NEON path's cost is counted, not timed: an
# aarch64 build of posenc-count (the kernels and their NEON peers), the qemu plugin that counts its guest
# instructions (built for this machine), and ggml's own RoPE built from the shared tarball (the full plans);
# report.py's NEON step runs them under qemu-aarch64 (bench/neon/counts.py).
posenc_install_deps g++-aarch64-linux-gnu qemu-user libsleef-dev:arm64 cmake xz-utils
neon=build-report-neon
neon_setup=(--cross-file cross/aarch64-linux-gnu.ini --buildtype=release -Dtests=disabled -Dtools=disabled)
if [ -d "$neon" ]; then
  meson setup --reconfigure "$neon" "${neon_setup[@]}" >/dev/null
else
  meson setup "$neon" "${neon_setup[@]}" >/dev/null
fi
ninja -C "$neon" -j "$jobs" bench/posenc-count
cc -O2 -Wall -shared -fPIC -o "$neon/insn_count.so" bench/neon/insn_count.c
args+=(--neon-count "$neon/bench/posenc-count" --neon-plugin "$neon/insn_count.so"
       --neon-sysroot /usr/aarch64-linux-gnu --neon-libdir /usr/lib/aarch64-linux-gnu)
if [ $mode = quick ]; then
  args+=(--neon-ggml-note "the quick plan builds no ggml")
elif [ ! -f "$ggml_tarball" ]; then
  args+=(--neon-ggml-note "no $ggml_tarball beside the clone")
elif ggml=$(bench/neon/build_ggml.sh "$neon/ggml" "$ggml_tarball" | tail -n 1); then
  args+=(--neon-ggml "$ggml")
else
  echo "report: the aarch64 ggml build failed; the NEON section goes without ggml" >&2
  args+=(--neon-ggml-note "its aarch64 build failed")
fi
# The llama.cpp section (issue 31, bench/report/llama_section.py): llama.cpp built as its release binaries are
# (scripts/build_llama.sh, from the shared tarball beside the clone; ~6.5 minutes once, then reused), posenc's
# backend module (scripts/build_ggml_backend.sh, the one for every ggml) and the driver llama_check beside its libraries
# (as scripts/test_llama.sh builds it); report.py's llama step writes the models and times them. The quick plan
# (CI) builds none of it: the step says so.
llama_tarball=../shared/peers/llama.cpp-0253fb21f.tar.xz
if [ $mode = quick ]; then
  args+=(--llama-note "the quick plan builds no llama.cpp (scripts/report.sh and --docs run this section)")
elif [ ! -f "$llama_tarball" ]; then
  args+=(--llama-note "no $llama_tarball beside the clone")
elif llama=$(scripts/build_llama.sh | tail -n 1) &&
     llama_backend=$(scripts/build_ggml_backend.sh | tail -n 1); then
  llama_src=$(dirname "$llama")/src
  drv=$llama/bin/llama_check
  # shellcheck disable=SC2016  # a literal $ORIGIN for the linker
  c++ -std=c++17 -O2 -Wall -Wextra -I"$llama_src/include" -I"$llama_src/ggml/include" \
      integrations/ggml/llama/llama_check.cpp -L"$llama/bin" -lllama -lggml -lggml-base -Wl,-rpath,'$ORIGIN' -o "$drv"
  args+=(--llama-check "$drv" --llama-backend "$llama_backend" --llama-gguf-py "$llama_src/gguf-py"
         --llama-models "$(dirname "$llama")/bench-models" --llama-version 0253fb21f
         --llama-ggml-version "$(readlink -f "$llama/bin/libggml-base.so" | sed 's/.*libggml-base\.so\.//')")
else
  echo "report: the llama.cpp or backend build failed; no llama.cpp section" >&2
  args+=(--llama-note "the llama.cpp or posenc backend build failed")
fi
[ $mode = quick ] && args+=(--quick)
[ $mode = docs ] && args+=(--docs docs/benchmarks.md)
"$py" bench/report/report.py "${args[@]}"
