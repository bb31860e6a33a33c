#!/usr/bin/env bash
# The memory-safety and concurrency checks of issue 5, on top of scripts/test.sh:
#  1. the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (GCC, -O0, no recovery), the
#     ggml integration's tests included when ggml's source is beside the clone;
#  2. valgrind memcheck over the scalar path (POSENC_ISA=scalar) on the suites that finish in a minute there;
#  3. the libFuzzer target fuzz/fuzz_api (clang, ASan + UBSan) from fuzz/corpus for POSENC_FUZZ_SECONDS (60);
#  4. the thread tests built with ThreadSanitizer (test_threads: first use and the parts of one call on
#     threads at once; test_work: posenc::run_parallel).
# Installs what it needs; exits non-zero on any failure; ends with "hardening: N passed, M failed", where N
# and M count Catch2 test cases from the meson logs (tools/test_summary.py), plus one case for the fuzz run
# and one failure for each build that did not complete.
#   scripts/test_hardening.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
posenc_install_deps clang-14 libclang-rt-14-dev llvm-14 valgrind

jobs=${POSENC_JOBS:-2}
fuzz_seconds=${POSENC_FUZZ_SECONDS:-60}
extra_passed=0 extra_failed=0  # what the meson logs do not count: builds, the fuzz run
logs=()
start=$SECONDS

# Reports name the source line, and any sanitizer finding ends the process with a failure.
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

configure() {  # dir [meson args]
  local dir=$1
  shift
  if [ -d "$dir" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

built() {  # name command...: runs a build step; a failure counts as one failed case
  local name=$1
  shift
  if "$@"; then
    return 0
  fi
  echo "hardening: build failed: $name"
  extra_failed=$((extra_failed + 1))
  posenc_record "hardening build: $name" FAIL
  return 1
}

elapsed() { echo "   ($((SECONDS - start)) s so far)"; }

# 1. ASan + UBSan, the whole suite: every test on every available path (all-paths), the POSENC_ISA
# tests (env) and the tools (posenc, posenc check). The once-per-forced-path reruns add no path the
# all-paths run has not taken; the 'build' check reads the optimised archive for out-of-line inline functions, which -O0 emits by design. -O0: the
# sanitizers see every access, and the build takes half the time of an optimised one (Catch2's runner
# alone takes minutes to optimise with instrumentation).
# The ggml integration's tests run there too (suite all-paths), the backend's included, against ggml built
# from the shared tarball (scripts/build_ggml.sh, reused from scripts/test.sh's run; ggml itself is not
# instrumented).
ggml_setup=(-Dggml=disabled)
if ggml_args=$(posenc_ggml_args) && [ -n "$ggml_args" ]; then
  mapfile -t ggml_setup <<<"$ggml_args"
fi
echo "== ASan + UBSan: the whole suite"
if built asan configure build-hard-asan --buildtype=debug -Dbenchmarks=disabled "${ggml_setup[@]}" \
     -Db_sanitize=address,undefined -Db_lundef=false \
     -Dcpp_args=-fno-sanitize-recover=all -Dcpp_link_args=-fno-sanitize-recover=all &&
   built asan ninja -C build-hard-asan -j "$jobs"; then
  meson test -C build-hard-asan --no-rebuild --num-processes "$jobs" --print-errorlogs --suite all-paths \
    --suite env --suite tools || true
  logs+=(build-hard-asan/meson-logs/testlog.json)
fi
elapsed

# 2. valgrind memcheck, scalar path only (valgrind does not run AVX-512), on an optimised build with debug
# information. Leaks that are definitely lost count as errors; the frequency caches stay reachable.
echo "== valgrind memcheck: scalar path"
# Not the thread test: under valgrind's serialised threads, the RoPE case of tests/test_threads.cpp gave
# rotation bytes that differ from the same call on one thread in about one run in six (2026-11-26, at the
# landed 0.2.0 kernel; never in 20 native runs, and the test is clean under ThreadSanitizer below and
# AddressSanitizer above): valgrind emulates the fused multiply-adds the rotation rounds with (and gets the
# sign of a zero from vfnmadd wrong, test_threads.cpp), so it cannot judge those bytes. Memory errors of that
# test are ASan's, races TSan's. The MPFR-heavy suites (timesteps, rope_axes, rope) take far more than the
# minute each has here under valgrind: ASan runs them.
vg_suites=(api hardening guard_pages paths seeds golden fpenv internals)
if built valgrind configure build-hard-plain --buildtype=debugoptimized -Db_ndebug=false -Dbenchmarks=disabled &&
   built valgrind ninja -C build-hard-plain -j "$jobs" "${vg_suites[@]/#/tests/test_}"; then
  meson test -C build-hard-plain --no-rebuild --num-processes "$jobs" --print-errorlogs \
    --wrapper "valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite" \
    "${vg_suites[@]/%/@scalar}" || true
  logs+=(build-hard-plain/meson-logs/testlog-valgrind.json)  # meson names it after the wrapper
fi
elapsed

# 3. libFuzzer: new inputs go to the build directory, the committed seeds stay as they are.
echo "== libFuzzer: fuzz_api for ${fuzz_seconds} s"
if CXX=clang++-14 built fuzz configure build-hard-fuzz --buildtype=debugoptimized -Dfuzz=enabled -Dtests=disabled \
     -Dbenchmarks=disabled -Db_sanitize=address,undefined -Db_lundef=false \
     "-Dcpp_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" &&
   built fuzz ninja -C build-hard-fuzz -j "$jobs" fuzz/fuzz_api; then
  mkdir -p build-hard-fuzz/corpus
  # inputs up to 512 bytes from the start: a row's position and token id take a few bytes each
  if build-hard-fuzz/fuzz/fuzz_api -max_total_time="$fuzz_seconds" -max_len=512 -len_control=0 -timeout=30 \
       -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build-hard-fuzz/ build-hard-fuzz/corpus fuzz/corpus \
       >build-hard-fuzz/fuzz.log 2>&1 && grep -q "stat::number_of_executed_units: [1-9]" build-hard-fuzz/fuzz.log; then
    grep -E "^#[0-9]+ +DONE|stat::(number_of_executed_units|average_exec_per_sec)" build-hard-fuzz/fuzz.log || true
    extra_passed=$((extra_passed + 1))
    posenc_record "libFuzzer ${fuzz_seconds} s" OK
  else
    tail -n 60 build-hard-fuzz/fuzz.log
    echo "hardening: the fuzz run failed; the input is in build-hard-fuzz/ (crash-*, timeout-*, oom-*)"
    extra_failed=$((extra_failed + 1))
    posenc_record "libFuzzer ${fuzz_seconds} s" FAIL
  fi
fi
elapsed

# 4. ThreadSanitizer on the thread tests: test_threads (its first kernel call is made by the racing threads;
# then seven parts of one call of every kernel at once, issue 26) and test_work (posenc::run_parallel's threads).
echo "== ThreadSanitizer: the thread tests"
if built tsan configure build-hard-tsan --buildtype=debug -Dbenchmarks=disabled -Db_sanitize=thread -Db_lundef=false &&
   built tsan ninja -C build-hard-tsan -j "$jobs" tests/test_threads tests/test_work; then
  meson test -C build-hard-tsan --no-rebuild --print-errorlogs threads work || true
  logs+=(build-hard-tsan/meson-logs/testlog.json)
fi
elapsed

summary=$(python3 tools/test_summary.py "${logs[@]}" || true)
echo "$summary" | sed '$d'
counts=$(echo "$summary" | tail -n 1 | sed -nE 's/^tests: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p')
read -r passed failed <<<"${counts:-0 1}"  # no summary line: count the summary itself as a failure
passed=$((passed + extra_passed))
failed=$((failed + extra_failed))
echo "hardening took $((SECONDS - start)) s"
echo "hardening: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
