#!/usr/bin/env bash
# Debian's llama-bench with posenc's backend over without (docs/benchmarks.md, "Debian's llama.cpp"): run as
# root inside a Debian unstable root, as scripts/test_debian.sh is (it installs the same packages), e.g.
#   scripts/test_fresh.sh --run-sid 'bash scripts/bench_debian.sh'
# For each model of make_models.py --bench --n-layer 4 (the attention of Llama-3-8B, Qwen2, Qwen2-VL: NORMAL,
# NEOX, MROPE; F32; 4 layers, so that 8 RoPE nodes share each graph's positions) and each thread
# count (1, 2), ROUNDS rounds alternate the order without / with GGML_BACKEND_PATH; each run is one
# `llama-bench -p 128 -n 32 -r 1` (a prompt of 128 tokens, then 32 generated) whose tokens per second are read
# from its CSV. Prints, per row, the median over the rounds of with / without (above 1: faster with posenc),
# the medians and the spread (interquartile range of the ratios over their median), and the CPU. No
# assertion: a measurement, not a test.
#   scripts/bench_debian.sh [--backend libggml-posenc.so] [--rounds N] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

backend= rounds=5 work=$PWD/build-debian-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$(realpath "$2"); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: scripts/bench_debian.sh [--backend SO] [--rounds N] [--work DIR]" >&2; exit 2 ;;
  esac
done
pkgs=(llama.cpp llama.cpp-examples python3-gguf python3-numpy python3-yaml g++ pkg-config meson ninja-build
      libxsimd-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get -o Acquire::Check-Valid-Until=false update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
[ -n "$backend" ] || backend=$(bash scripts/build_ggml_backend.sh | tail -n 1)
mkdir -p "$work/models"
/usr/bin/python3 integrations/ggml/llama/make_models.py "$work/models" --bench --types f32 --n-layer 4 \
  --archs llama,qwen2,qwen2vl >/dev/null
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "== Debian llama.cpp $(dpkg-query -W -f='${Version}' llama.cpp), libggml0 $(dpkg-query -W -f='${Version}' libggml0);" \
  "$cpu; $rounds rounds; module sha256 $(sha256sum "$backend" | cut -c1-16)"

# tokens per second of the prompt and of the generation, one llama-bench run
tps() {  # model threads [env...]
  local m=$1 t=$2
  shift 2
  env "$@" llama-bench -m "$m" -p 128 -n 32 -r 1 -t "$t" -o csv 2>/dev/null | /usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
pp = [float(r["avg_ts"]) for r in rows if int(r["n_prompt"]) > 0]
tg = [float(r["avg_ts"]) for r in rows if int(r["n_gen"]) > 0]
print(pp[0], tg[0])'
}

printf '%-22s %-9s %-8s %10s %12s %12s %8s\n' model threads phase "with/without" "without t/s" "with t/s" spread
for m in "$work"/models/*.gguf; do
  for t in 1 2; do
    : >"$work/rounds.txt"
    for r in $(seq 1 "$rounds"); do
      if [ $((r % 2)) = 1 ]; then
        a=$(tps "$m" "$t"); b=$(tps "$m" "$t" GGML_BACKEND_PATH="$backend")
      else
        b=$(tps "$m" "$t" GGML_BACKEND_PATH="$backend"); a=$(tps "$m" "$t")
      fi
      echo "$a $b" >>"$work/rounds.txt"
    done
    /usr/bin/python3 - "$work/rounds.txt" "$(basename "$m" .gguf)" "$t" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
for phase, i in (("prompt", 0), ("generate", 1)):
    r = sorted(b[i + 2] / b[i] for b in rows)
    q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    med = statistics.median(r)
    print("%-22s %-9s %-8s %10.3f %12.1f %12.1f %7.1f%%" % (
        sys.argv[2], sys.argv[3], phase, med, statistics.median(b[i] for b in rows),
        statistics.median(b[i + 2] for b in rows), 100 * (q[2] - q[0]) / med))
PY
  done
done
