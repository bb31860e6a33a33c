#!/usr/bin/env bash
# Runs posenc's ggml backend inside the real llama.cpp (integrations/ggml/llama/): builds llama.cpp the way its
# release binaries are built (scripts/build_llama.sh), the driver llama_check (libllama's public API), and the
# small GGUF models of make_models.py (llama NORMAL + rope_freqs, qwen2 NEOX, qwen2vl MROPE, qwen3vl IMROPE; F32
# and F16), then runs every model through llama_check's prompt, far and shift subcommands on vanilla llama.cpp
# and, with --backend, again with GGML_BACKEND_PATH naming posenc's backend (ggml_backend_load_all() loads it
# after the CPU backend), and compares the dumps with compare.py (logits within 1e-4 / 2e-3 of vanilla's, every
# ROPE node computed by posenc, RoPE inputs unchanged) and exact.py (every captured RoPE output the correctly
# rounded rotation, against MPFR, near positions 0, 10^6 and 2^30 and in the context shift; the keys after a
# shift within the rotation's rounding of the directly rotated ones; ggml's errors reported beside). Without --backend the vanilla dumps are compared with
# themselves, which validates the driver and the comparison. --threads-check also runs vanilla on 1 thread and
# compares it with the 2-thread run. Each check is a case of posenc_record; exits non-zero when one failed.
# --system runs the same on the llama.cpp installed in the system instead (Debian's libllama-dev and
# python3-gguf, which scripts/test_debian.sh installs): nothing is built but the driver and the stub.
#   scripts/test_llama.sh [--backend libggml-posenc.so] [--threads-check] [--threads N] [--work DIR]
#                         [--llama-build DIR] [--tarball FILE] [--system]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
system=0
for arg in "$@"; do [ "$arg" = --system ] && system=1; done
# python3-gmpy2: MPFR for exact.py's correctly rounded reference
[ $system = 1 ] || posenc_install_deps python3-numpy python3-yaml python3-gmpy2

backend=
threads_check=0
threads=${POSENC_LLAMA_THREADS:-2}
work=$PWD/build-llama/test
build_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$(realpath "$2"); shift 2 ;;
    --threads-check) threads_check=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    --llama-build) build_args+=(--build "$2"); shift 2 ;;
    --tarball) build_args+=(--tarball "$2"); shift 2 ;;
    --system) shift ;;
    *) echo "usage: scripts/test_llama.sh [--backend SO] [--threads-check] [--threads N] [--work DIR]" \
            "[--llama-build DIR] [--tarball FILE]" >&2; exit 2 ;;
  esac
done
[ -z "$backend" ] || [ -f "$backend" ] || { echo "test_llama: no backend at $backend" >&2; exit 1; }

failed=0
record() {  # name OK|FAIL
  posenc_record "$1" "$2"
  [ "$2" = OK ] || failed=$((failed + 1))
}
now() { date +%s%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

drv_src=integrations/ggml/llama/llama_check.cpp
if [ $system = 1 ]; then
  # the system's llama.cpp: headers and libraries where the packages put them, gguf-py as python3-gguf
  src= bin=$work/bin gguf_path=
  mkdir -p "$bin"
  drv=$bin/llama_check
  inc=() libs=(-lllama -lggml -lggml-base)
  echo "test_llama: the system's llama.cpp ($(command -v llama-cli || echo 'no llama-cli'))"
else
  # llama.cpp
  t=$(now)
  build=$(scripts/build_llama.sh "${build_args[@]}" | tail -n 1)
  src=$(dirname "$build")/src
  bin=$build/bin
  gguf_path=$src/gguf-py
  echo "test_llama: llama.cpp in $build ($(elapsed "$t") s)"
  # the driver, beside the libraries as llama.cpp's own executables are (ggml_backend_load_all() looks for
  # libggml-cpu.so in the executable's directory; rpath $ORIGIN as in the release)
  drv=$bin/llama_check
  inc=(-I"$src/include" -I"$src/ggml/include")
  # shellcheck disable=SC2016  # a literal $ORIGIN for the linker
  libs=(-L"$bin" -lllama -lggml -lggml-base -Wl,-rpath,'$ORIGIN')
fi

t=$(now)
if [ ! -x "$drv" ] || [ "$drv_src" -nt "$drv" ] || { [ $system = 0 ] && [ "$bin/libllama.so" -nt "$drv" ]; }; then
  c++ -std=c++17 -O2 -Wall -Wextra "${inc[@]}" "$drv_src" "${libs[@]}" -o "$drv"
fi
echo "test_llama: driver $drv ($(elapsed "$t") s)"

# the models
t=$(now)
models=$work/models
rm -rf "$work/models" "$work/vanilla" "$work/vanilla-t1" "$work/posenc" "$work/stub" "$work/stub-ref"
mkdir -p "$models"
PYTHONPATH=$gguf_path /usr/bin/python3 integrations/ggml/llama/make_models.py "$models" >/dev/null
echo "test_llama: models in $models ($(elapsed "$t") s)"

# runs: NAME ARGS...
runs=(
  "prompt"
  "prompt-nocb --no-eval-cb"
  "prompt-f32 --kv f32 --fa off"
  "far"
  "shift-f16-d1000000 --delta 1000000"
  "shift-f16-d1073741760 --delta 1073741760"
  "shift-f32-d1000000 --kv f32 --delta 1000000"
  "shift-f32-d1073741760 --kv f32 --delta 1073741760"
)
run_all() {  # OUTROOT LABEL THREADS [env...]
  local root=$1 label=$2 nthreads=$3
  shift 3
  local t0 m stem r name args t1
  t0=$(now)
  for m in "$models"/*.gguf; do
    stem=$(basename "$m" .gguf)
    mkdir -p "$root/$stem"
    for r in "${runs[@]}"; do
      read -r name args <<<"$r"
      local cmd=${name%%-*}
      t1=$(now)
      # shellcheck disable=SC2086
      if env "$@" "$drv" "$cmd" --model "$m" --out "$root/$stem/$name" --threads "$nthreads" $args \
           >"$root/$stem/$name.out" 2>&1; then
        record "llama $label $stem/$name" OK
        printf '  %-10s %-12s %-22s %6s s\n' "$label" "$stem" "$name" "$(elapsed "$t1")"
      else
        record "llama $label $stem/$name" FAIL
        echo "  $label $stem/$name FAILED:"; tail -n 20 "$root/$stem/$name.out"
      fi
    done
  done
  echo "test_llama: $label runs ($(elapsed "$t0") s)"
}
compare() {  # LABEL A B
  local label=$1 out
  out=$(/usr/bin/python3 integrations/ggml/llama/compare.py "$2" "$3") || true
  echo "$out" | grep -E '^(OK|FAIL) ' | while read -r res name rest; do echo "$res $name"; done >"$work/compare-$label.cases"
  echo "$out" >"$work/compare-$label.txt"
  local n_ok n_fail
  n_ok=$(grep -c '^OK ' "$work/compare-$label.cases" || true)
  n_fail=$(grep -c '^FAIL ' "$work/compare-$label.cases" || true)
  while read -r res name; do
    record "llama compare $label $name" "$res"
  done <"$work/compare-$label.cases"
  echo "test_llama: compare $label: $n_ok passed, $n_fail failed (details: $work/compare-$label.txt)"
  grep -E '^FAIL ' <<<"$out" || true
}

run_all "$work/vanilla" vanilla "$threads"

# the harness itself, with a stub backend named posenc that computes nothing (stub_backend.cpp): the driver
# must find it and read its counters, the logits must not move, and compare.py must report the missing offload
t=$(now)
stub=$work/libggml-posenc-stub.so
c++ -std=c++17 -O2 -Wall -Wextra -shared -fPIC -Iintegrations/ggml integrations/ggml/llama/stub_backend.cpp \
    integrations/ggml/abi.cpp -o "$stub"
for r in prompt prompt-nocb; do
  mkdir -p "$work/stub/llama-f32" "$work/stub-ref/llama-f32"
  cp -r "$work/vanilla/llama-f32/$r" "$work/stub-ref/llama-f32/"
  # shellcheck disable=SC2046
  GGML_BACKEND_PATH=$stub "$drv" prompt --model "$models/llama-f32.gguf" --out "$work/stub/llama-f32/$r" \
    --threads "$threads" $([ $r = prompt-nocb ] && echo --no-eval-cb) >"$work/stub/llama-f32/$r.out" 2>&1 || true
done
out=$(/usr/bin/python3 integrations/ggml/llama/compare.py "$work/stub-ref" "$work/stub" || true)
echo "$out" >"$work/compare-stub.txt"
if [ "$(grep -c '^OK logits' <<<"$out")" = 2 ] && [ "$(grep -c '^FAIL counts_posenc' <<<"$out")" = 2 ] &&
   grep -q '"posenc_backend": true' "$work/stub/llama-f32/prompt/index.json"; then
  record "llama stub backend: counters read, logits unchanged, missing offload reported" OK
  echo "test_llama: stub backend: harness OK ($(elapsed "$t") s)"
else
  record "llama stub backend: counters read, logits unchanged, missing offload reported" FAIL
  echo "test_llama: stub backend: unexpected comparison:"; echo "$out" | grep -E '^(OK|FAIL)'
fi
if [ -n "$backend" ]; then
  run_all "$work/posenc" posenc "$threads" GGML_BACKEND_PATH="$backend"
  compare posenc "$work/vanilla" "$work/posenc"
  # (c) and (d): every captured RoPE node's output the correctly rounded rotation (MPFR), the keys after a
  # context shift within the rotation's rounding of the directly rotated ones; ggml's errors beside
  t=$(now)
  out=$(/usr/bin/python3 integrations/ggml/llama/exact.py "$work/vanilla" "$work/posenc") || true
  echo "$out" >"$work/exact.txt"
  n_ok=0 n_fail=0
  while read -r res name; do
    record "llama exact $name" "$res"
    if [ "$res" = OK ]; then n_ok=$((n_ok + 1)); else n_fail=$((n_fail + 1)); fi
  done < <(grep -E '^(OK|FAIL) ' <<<"$out" | sed -E 's/^(OK|FAIL) ([^:]*):.*/\1 \2/')
  [ $((n_ok + n_fail)) -gt 0 ] || record "llama exact: exact.py checked nothing" FAIL
  echo "test_llama: exact (MPFR): $n_ok passed, $n_fail failed ($(elapsed "$t") s; details: $work/exact.txt)"
  grep -E '^FAIL ' <<<"$out" || true
  grep -E '^OK (exact [^ ]+ far@1073741824|shift)' <<<"$out" | head -n 6 || true
else
  compare self "$work/vanilla" "$work/vanilla"
fi
if [ $threads_check -eq 1 ]; then
  run_all "$work/vanilla-t1" vanilla-t1 1
  compare threads "$work/vanilla-t1" "$work/vanilla"
fi

if [ $failed -ne 0 ]; then
  echo "test_llama: $failed case(s) failed"
  exit 1
fi
echo "test_llama: all cases passed"
