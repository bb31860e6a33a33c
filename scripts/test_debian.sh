#!/usr/bin/env bash
# posenc's ggml backend in the llama.cpp and ggml a user installs from Debian (docs/ggml.md, "Debian's and
# Ubuntu's llama.cpp"): run as root inside a Debian unstable root (scripts/test_fresh.sh makes one with
# debootstrap's sid script), where `llama.cpp` is a GGML_BACKEND_DL build on libggml0 (0.27 when this was
# written). Installs the packages, then, with the module named by --backend (CI passes the file the bookworm
# root built, so that one file is proven in every ggml; without --backend, scripts/build_ggml_backend.sh
# builds it here):
#   1. ggml's own conformance test, unchanged: Debian's test-backend-ops `test -b posenc -o OP` for ROPE,
#      ROPE_BACK and TIMESTEP_EMBEDDING runs every case (none "not supported") and passes;
#   2. Debian's programs, unchanged, on the small GGUF models of make_models.py (python3-gguf), with and
#      without GGML_BACKEND_PATH: llama-simple and llama-completion (greedy; llama-completion past its context,
#      through a context shift), llama-server (one /completion request on 127.0.0.1) and llama-bench. Each with
#      the module: every ROPE node of every graph the scheduler prints (GGML_SCHED_DEBUG=2: the prompt, the
#      decode steps, the K-shift) assigned to posenc, none to the CPU; POSENC_GGML_STATS=1's line present with
#      no node handed back; the same text as without (llama-completion: the same as far as both printed, see
#      check()); and the scheduler's splits per graph 4 n_layer + 1 (the two RoPE nodes of each layer and
#      nothing else split off; 1 without the module). llama-bench silences ggml's log: its statistics alone;
#   3. scripts/test_llama.sh --system: llama_check on Debian's libllama (logits against vanilla, every ROPE node
#      counted, layer 0's q/k exact against MPFR at 0, 10^6 and 2^30, the context shift);
#   4. the call-site twins against Debian's libggml-dev by pkg-config (the route docs/ggml.md gives), which
#      also checks integrations/ggml/abi.hpp's ggml_tensor against this ggml's ggml.h at compile time;
#   5. docs/ggml.md's install route as written (meson -Dggml_backend=enabled, meson install), the installed
#      file taken by llama-simple.
# Ends with "tests: N passed, M failed"; exits non-zero when a case failed.
#   scripts/test_debian.sh [--backend libggml-posenc.so] [--work DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

backend= work=$PWD/build-debian
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$(realpath "$2"); shift 2 ;;
    --work) work=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: scripts/test_debian.sh [--backend SO] [--work DIR]" >&2; exit 2 ;;
  esac
done

# Debian's mirror may serve a snapshot whose Release file is past its Valid-Until: accepted here, in this root
# only (this script runs in a root of its own).
pkgs=(llama.cpp llama.cpp-examples libllama-dev libggml-dev python3-gguf python3-numpy python3-yaml
      python3-gmpy2 g++ pkg-config meson ninja-build libxsimd-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get -o Acquire::Check-Valid-Until=false update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "== Debian: llama.cpp $(dpkg-query -W -f='${Version}' llama.cpp), libggml0 $(dpkg-query -W -f='${Version}' libggml0)"

if [ -z "$backend" ]; then
  backend=$(bash scripts/build_ggml_backend.sh | tail -n 1)
fi
[ -f "$backend" ] || { echo "test_debian: no module at $backend" >&2; exit 1; }
echo "== the module: $backend, sha256 $(sha256sum "$backend" | cut -c1-16)"

passed=0 failed=0
record() {  # name OK|FAIL
  if [ "$2" = OK ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  echo "$2 $1"
}
rm -rf "$work"
mkdir -p "$work"

# 1. test-backend-ops
tbo=$(ls /usr/libexec/*/ggml/test-backend-ops 2>/dev/null | head -n 1 || true)
if [ -z "$tbo" ]; then
  record "test-backend-ops: not found in libggml0" FAIL
else
  for op in ROPE ROPE_BACK TIMESTEP_EMBEDDING; do
    log=$work/test-backend-ops-$op.log
    rc=0
    GGML_BACKEND_PATH=$backend "$tbo" test -b posenc -o "$op" >"$log" 2>&1 || rc=$?
    line=$(grep -E '^ *[0-9]+/[0-9]+ tests passed' "$log" | head -n 1 | tr -s ' ' || true)
    n=$(sed -E 's|^ *([0-9]+)/([0-9]+).*|\1 \2|' <<<"$line")
    read -r ok total <<<"${n:-0 0}"
    if [ $rc = 0 ] && [ "${total:-0}" -gt 0 ] && [ "$ok" = "$total" ] && ! grep -q "not supported" "$log" &&
       grep -q "Backend posenc: .*OK" "$log"; then
      record "test-backend-ops test -b posenc -o $op: $ok/$total" OK
    else
      record "test-backend-ops test -b posenc -o $op: '$line' (exit $rc; $log)" FAIL
      tail -n 15 "$log"
    fi
  done
fi

# 2. Debian's programs
models=$work/models
mkdir -p "$models"
/usr/bin/python3 integrations/ggml/llama/make_models.py "$models" >/dev/null
n_layer=2  # make_models.py's default

# run NAME CMD...: the command's stdout to NAME.out, stderr to NAME.err, without and with the module
run_both() {
  local name=$1
  shift
  "$@" >"$work/$name.vanilla.out" 2>"$work/$name.vanilla.err" </dev/null || return 1
  GGML_BACKEND_PATH=$backend POSENC_GGML_STATS=1 GGML_SCHED_DEBUG=2 "$@" >"$work/$name.posenc.out" \
    2>"$work/$name.posenc.err" </dev/null || return 1
}
# The backend of every ROPE node in the scheduler's assignments (GGML_SCHED_DEBUG=2), one per line: the first
# [...] after "node #  8 (      ROPE): NAME (SIZE)"; NAME may hold spaces and parentheses ("cache_k_l0 (view)").
rope_backends() {  # log [name-pattern]
  sed -nE 's/.*node # *[0-9]+ \( *ROPE\): *('"${2:-}"'[^[]*)\[ *([A-Za-z0-9_-]+).*/\2/p' "$1"
}
# check NAME [text|nolog]: the module's run assigned every ROPE node to posenc (the scheduler's assignments,
# "node #  8 (      ROPE):  Qcur-0 (   1K) [posen  ]", behind the program's log prefix), printed its statistics
# with no node handed back, and split each graph 4 n_layer + 1 ways; with `text`, the same stdout as vanilla;
# `nolog` for a program that silences ggml's log (llama-bench): the statistics alone
check() {
  local name=$1 err=$work/$1.posenc.err what=()
  local on_posenc on_cpu stats splits
  on_posenc=$(rope_backends "$err" | grep -c '^posen' || true)
  on_cpu=$(rope_backends "$err" | grep -vc '^posen' || true)
  stats=$(grep -E '^posenc: ggml ' "$err" | tail -n 1 || true)
  # the model's graph as llama.cpp reserves it ("sched_reserve: graph: nodes = 71, splits = 9"); the K-shift
  # graph, ROPE nodes alone, is one split on posenc
  splits=$(grep -aoE 'graph: nodes = [0-9]+, splits = [0-9]+' "$err" | grep -oE 'splits = [0-9]+' | sort -u | tr '\n' ' ' || true)
  if [ "${2:-}" = nolog ]; then
    [ "$on_posenc$on_cpu" = 00 ] || what+=("scheduler lines where none were expected")
  else
    [ "$on_posenc" -gt 0 ] && [ "$on_cpu" = 0 ] || what+=("ROPE nodes on posenc $on_posenc, elsewhere $on_cpu")
  fi
  grep -qE 'ROPE [1-9][0-9]*.*handed to ggml.s CPU backend 0 ' <<<"$stats" || what+=("statistics: '$stats'")
  if [ "${2:-}" != nolog ] && [ "$splits" != "splits = $((4 * n_layer + 1)) " ]; then
    what+=("splits: '${splits:-no sched_reserve line}'")
  fi
  if [ "${2:-}" = prefix ]; then
    # llama-completion's text reaches a pipe through an asynchronous log thread that exit can cut short
    # (Debian's 0.7.0: two vanilla runs print different lengths): the shorter output must begin the longer
    local a=$work/$name.vanilla.out b=$work/$name.posenc.out n
    n=$(( $(stat -c %s "$a") < $(stat -c %s "$b") ? $(stat -c %s "$a") : $(stat -c %s "$b") ))
    [ "$n" -gt 0 ] || what+=("no text")
    cmp -s -n "$n" "$a" "$b" || what+=("text differs within the first $n bytes")
  fi
  if [ "${2:-}" = text ] && ! cmp -s "$work/$name.vanilla.out" "$work/$name.posenc.out"; then
    what+=("text differs: '$(head -c 120 "$work/$name.vanilla.out")' vs '$(head -c 120 "$work/$name.posenc.out")'")
  fi
  if [ ${#what[@]} -eq 0 ]; then
    record "$name: $on_posenc ROPE nodes on posenc, none elsewhere; ${splits:-splits not logged}; $(sed -E 's/^posenc: //' <<<"$stats" | cut -c1-90)" OK
  else
    record "$name: ${what[*]}" FAIL
  fi
}

server_completion() {  # model port: one greedy /completion from llama-server on 127.0.0.1, printed
  local model=$1 port=$2 pid i
  llama-server -m "$model" --host 127.0.0.1 --port "$port" -c 512 -t 2 -lv 10 &
  pid=$!
  for i in $(seq 1 100); do
    /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
      2>/dev/null && break
    sleep 0.2
  done
  /usr/bin/python3 - "$port" <<'PY' || { kill -TERM $pid; wait $pid || true; return 1; }
import json, sys, urllib.request
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/completion",
                             data=json.dumps({"prompt": "the quick brown fox", "n_predict": 16, "temperature": 0,
                                              "cache_prompt": False}).encode(),
                             headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=60))["content"])
PY
  kill -TERM $pid
  wait $pid || true
}

port=18500
for m in "$models"/*.gguf; do
  stem=$(basename "$m" .gguf)
  if run_both "$stem.llama-simple" llama-simple -m "$m" -n 16 "the quick brown fox"; then
    check "$stem.llama-simple" text
  else record "$stem.llama-simple: the program failed ($work/$stem.llama-simple.*.err)" FAIL; fi
  # past the context: 300 tokens in a context of 256 (llama.cpp's smallest), with its context shift (the
  # K-shift graph, whose ROPE nodes rotate the cache in place)
  if run_both "$stem.llama-completion" llama-completion -m "$m" -n 300 -c 256 --context-shift --ignore-eos \
       -p "the quick brown fox" -no-cnv --temp 0 -t 2 -lv 10 --no-warmup; then
    check "$stem.llama-completion" prefix
  else record "$stem.llama-completion: the program failed ($work/$stem.llama-completion.*.err)" FAIL; fi
  port=$((port + 1))
  if run_both "$stem.llama-server" server_completion "$m" "$port"; then
    check "$stem.llama-server" text
  else record "$stem.llama-server: the server or its request failed ($work/$stem.llama-server.*.err)" FAIL; fi
  if run_both "$stem.llama-bench" llama-bench -m "$m" -p 64 -n 16 -r 2 -t 2 -o csv; then
    check "$stem.llama-bench" nolog
  else record "$stem.llama-bench: the program failed ($work/$stem.llama-bench.*.err)" FAIL; fi
done
# the K-shift: each llama-completion run applied it, and its ROPE nodes (on the cache, cache_k_l*) were posenc's
# (llama.cpp shifts no M-RoPE model's cache, qwen2vl and qwen3vl: their generation stops at the context's end)
for f in "$work"/llama-*.llama-completion.posenc.err "$work"/qwen2-*.llama-completion.posenc.err; do
  stem=$(basename "$f" .llama-completion.posenc.err)
  n=$(rope_backends "$f" 'cache_k_l' | grep -c '^posen' || true)
  if grep -aq 'applying K-shift' "$f" && [ "$n" -ge "$n_layer" ]; then
    record "$stem.llama-completion: the context shift's K-shift, $n ROPE nodes on the cache, all posenc's" OK
  else
    record "$stem.llama-completion: the context shift's K-shift ($n ROPE nodes of the cache on posenc)" FAIL
  fi
done

# 3. llama_check on Debian's libllama
if bash scripts/test_llama.sh --system --backend "$backend" --work "$work/llama"; then
  record "scripts/test_llama.sh --system: llama_check on Debian's libllama" OK
else
  record "scripts/test_llama.sh --system: llama_check on Debian's libllama" FAIL
fi

# 4. the twins by pkg-config against libggml-dev
if meson setup "$work/twins" -Dggml=enabled -Dtests=disabled -Dbenchmarks=disabled -Dtools=disabled \
     >"$work/twins.log" 2>&1 && ninja -C "$work/twins" integrations/ggml/libposenc_ggml.a >>"$work/twins.log" 2>&1; then
  record "the twins against Debian's libggml-dev (pkg-config), abi.hpp checked against its ggml.h" OK
else
  record "the twins against Debian's libggml-dev (pkg-config)" FAIL
  tail -n 20 "$work/twins.log"
fi

# 5. docs/ggml.md's install route, as written there: meson install, then Debian's program on the installed file
if (meson setup "$work/install" -Dggml_backend=enabled --buildtype=release && meson install -C "$work/install") \
     >"$work/install.log" 2>&1; then
  installed=$(sed -nE 's|^Installing .*libggml-posenc\.so to (.*)$|\1|p' "$work/install.log" | head -n 1)
  installed=$installed/libggml-posenc.so
  if [ -f "$installed" ] &&
     GGML_BACKEND_PATH=$installed POSENC_GGML_STATS=1 llama-simple -m "$models/llama-f32.gguf" -n 4 "the quick" \
       2>"$work/install-run.err" >/dev/null </dev/null &&
     grep -qE '^posenc: ggml .*ROPE [1-9][0-9]*.*handed to ggml.s CPU backend 0 ' "$work/install-run.err"; then
    record "meson setup -Dggml_backend=enabled && meson install: $installed, taken by llama-simple" OK
  else
    record "meson install: no working module at '$installed' ($work/install-run.err)" FAIL
  fi
else
  record "meson setup -Dggml_backend=enabled && meson install ($work/install.log)" FAIL
  tail -n 20 "$work/install.log"
fi

echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
