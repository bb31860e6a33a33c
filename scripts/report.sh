#!/usr/bin/env bash
# The benchmark report: installs what is missing, builds in release mode, measures every kernel on every
# path against its peers and bounds (Google Benchmark, JSON), measures accuracy against MPFR, draws the
# charts and pictures of the encoding, writes report/ and prints report/summary.md.
#   scripts/report.sh           full run (under ~10 minutes on 2 cores)
#   scripts/report.sh --quick   small shapes, few repetitions (under 2 minutes): what CI runs
#   scripts/report.sh --docs    full run, and also writes docs/benchmarks.md (+ its charts)
# Exits non-zero when any step fails or the run is incomplete; it never judges the timings themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps python3-matplotlib python3-numpy

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

if [ -d "$build" ]; then
  meson setup --reconfigure "$build" --buildtype=release -Dtests=disabled -Dbenchmarks=enabled >/dev/null
else
  meson setup "$build" --buildtype=release -Dtests=disabled -Dbenchmarks=enabled >/dev/null
fi
ninja -C "$build" -j "$jobs"

if [ $mode = quick ]; then
  bench_args=(--quick --benchmark_repetitions=2 --benchmark_min_time=0.01)
else
  bench_args=(--benchmark_repetitions=9 --benchmark_min_time=0.05)  # many short repetitions: a robust median
fi
mkdir -p "$out"
echo "== accuracy against MPFR"
"$build/bench/posenc-accuracy" --json "$out/accuracy.json"
echo "== benchmarks ($mode; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
# the issues' target ratios are also timed as alternated pairs of calls (bench/report/targets.py)
quick_pairs=()
[ $mode = quick ] && quick_pairs=(--quick)
"$py" bench/report/targets.py --pairs "${quick_pairs[@]}" > "$out/pairs.txt"
"$build/bench/posenc-bench" "${bench_args[@]}" --pairs "$out/pairs.txt" --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out/bench.json" --benchmark_out_format=json --benchmark_counters_tabular=true
echo "== pictures of the encoding"
"$py" bench/report/pictures.py --cli "$build/bench/posenc-cli" --out "$out" --positions 512 --d-model 200
echo "== report"
docs=()
[ $mode = docs ] && docs=(--docs docs/benchmarks.md)
"$py" bench/report/make_report.py --bench "$out/bench.json" --accuracy "$out/accuracy.json" --out "$out" \
  --pictures "PE table, 512 positions x d = 200=pe_heatmap.svg" \
  --pictures "Cosine similarity of positions=pe_cosine_similarity.svg" "${docs[@]}"
