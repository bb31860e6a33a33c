// Kernels from several threads while everything lazy initialises. This binary's first kernel call happens
// inside the threads, so the ISA selection (an atomic resolved at first use), the CPU detection and the
// frequency cache (thread-local slots, the shared LRU under its mutex) all start up while the threads race.
// 40 distinct specs, more than the 16 shared and 4 thread-local slots hold, keep tables being evicted and
// rebuilt while other threads still use them; one more thread forces the available paths in turn. Every
// result must equal the same call made afterwards by one thread. scripts/test_hardening.sh also builds
// this test with ThreadSanitizer, which reports any data race the run goes through.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "support/calls.hpp"

namespace {

constexpr int kWorkers = 4, kRounds = 5, kSpecs = 40;
constexpr int64_t kRows = 70;  // two of the kernel's 65-row blocks

posenc_spec spec_number(int i) {
  posenc_spec s = posenc_spec_default(8 + (i * 37) % 90);
  s.layout = posenc_layout(i % 3);
  s.base = 1e4 * (1 + i % 5);
  s.position_scale = i % 3 == 0 ? 1.0 : 0.25 * (i % 7 + 1);
  return s;
}

// What one worker does at one step: a kernel, a spec, a variant of the call (strides, positions).
struct Step {
  int spec, variant;
  ref::Kernel kernel;
};
Step step_of(int worker, int round, int j) {
  const int s = (j * 7 + worker * 13 + round) % kSpecs;
  return Step{s, (worker + round) % 4, ref::kAllKernels[(s + round + worker) % 11]};
}

std::vector<unsigned char> run(const posenc_spec &spec, const Step &st, posenc_status *status) {
  const ref::SmallCall c(st.kernel, spec, st.variant, kRows);
  std::vector<unsigned char> out(c.out_elements() * ref::traits(st.kernel).out_size, 0x5C);
  ref::Call call = c.call;
  call.out = out.data();
  *status = ref::invoke(call);
  return out;
}

}  // namespace

TEST_CASE("kernels on many threads during first-use initialisation match one thread", "[threads]") {
  std::vector<posenc_spec> specs;
  for (int i = 0; i < kSpecs; ++i) specs.push_back(spec_number(i));
  // results[worker][round * kSpecs + j], written only by that worker
  std::vector<std::vector<std::vector<unsigned char>>> results(kWorkers);
  std::vector<std::vector<posenc_status>> statuses(kWorkers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, done{false};
  std::atomic<long> forced{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round)
        for (int j = 0; j < kSpecs; ++j) {
          const Step st = step_of(w, round, j);
          posenc_status s;
          results[size_t(w)].push_back(run(specs[size_t(st.spec)], st, &s));
          statuses[size_t(w)].push_back(s);
        }
    });
  std::thread forcer([&] {  // bit-identical paths: forcing them mid-run must not change any result
    ready.fetch_add(1);
    while (!go.load()) std::this_thread::yield();
    std::vector<posenc_isa> isas;
    for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
      if (posenc_isa_available(posenc_isa(v))) isas.push_back(posenc_isa(v));
    while (!done.load())
      for (posenc_isa isa : isas) {
        if (posenc_force_isa(isa) == POSENC_OK) forced.fetch_add(1);
        // a pause, not a spin: on a two-core machine the workers need the cores
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
  });
  while (ready.load() < kWorkers + 1) std::this_thread::yield();
  go.store(true);
  for (std::thread &t : threads) t.join();
  done.store(true);
  forcer.join();

  CHECK(forced.load() > 0);
  int compared = 0;
  for (int w = 0; w < kWorkers; ++w)
    for (int round = 0; round < kRounds; ++round)
      for (int j = 0; j < kSpecs; ++j) {
        const Step st = step_of(w, round, j);
        const size_t k = size_t(round * kSpecs + j);
        posenc_status want_status;
        const std::vector<unsigned char> want = run(specs[size_t(st.spec)], st, &want_status);
        INFO("worker " << w << " round " << round << " spec " << st.spec << " " << ref::traits(st.kernel).name);
        REQUIRE(want_status == POSENC_OK);
        CHECK(statuses[size_t(w)][k] == POSENC_OK);
        CHECK(results[size_t(w)][k] == want);
        ++compared;
      }
  CHECK(compared == kWorkers * kRounds * kSpecs);
}
