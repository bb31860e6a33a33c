// Kernels from several threads while everything lazy initialises. This binary's first kernel call happens
// inside the threads, so the ISA selection (an atomic resolved at first use), the CPU detection and the
// frequency cache (thread-local slots, the shared LRU under its mutex) all start up while the threads race.
// 40 distinct specs, more than the 16 shared and 4 thread-local slots hold, keep tables being evicted and
// rebuilt while other threads still use them; one more thread forces the available paths in turn. Every
// result must equal the same call made afterwards by one thread. Then the parts of one call of every kernel
// (posenc.h, "Parts of a call") on seven threads at once. scripts/test_hardening.sh also builds this test
// with ThreadSanitizer, which reports any data race the run goes through.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/calls.hpp"
#include "support/parts.hpp"
#include "support/paths.hpp"
#include "support/rope.hpp"

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
  constexpr int kinds = int(sizeof ref::kAllKernels / sizeof ref::kAllKernels[0]);
  return Step{s, (worker + round) % 4, ref::kAllKernels[(s + round + worker) % kinds]};
}

std::vector<unsigned char> run(const posenc_spec &spec, const Step &st, posenc_status *status) {
  const ref::SmallCall c(st.kernel, spec, st.variant, kRows);
  std::vector<unsigned char> out(c.out_elements() * ref::traits(st.kernel).out_size, 0x5C);
  ref::Call call = c.call;
  call.out = out.data();
  *status = ref::invoke(call);
  return out;
}

// The race both suites below run: kWorkers threads each make kRounds * specs calls, the call (round, j) of
// worker w being the one worker(w) returns makes (worker(w) runs on that thread before the start, so that what
// it copies is the thread's own), while one more thread forces the paths in `isas` in turn; all are released
// together. Then every result against the same call made again by this thread alone: alone(w, round, j,
// &status, &what) returns its bytes, `what` naming the call. Returns how many forcings returned POSENC_OK.
template <class Worker, class Alone>
long race(int specs, const std::vector<posenc_isa> &isas, Worker worker, Alone alone) {
  // results[worker][round * specs + j], written only by that worker
  std::vector<std::vector<std::vector<unsigned char>>> results(kWorkers);
  std::vector<std::vector<posenc_status>> statuses(kWorkers);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, done{false};
  std::atomic<long> forced{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      auto call = worker(w);
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round)
        for (int j = 0; j < specs; ++j) {
          posenc_status s;
          results[size_t(w)].push_back(call(round, j, &s));
          statuses[size_t(w)].push_back(s);
        }
    });
  std::thread forcer([&] {
    ready.fetch_add(1);
    while (!go.load()) std::this_thread::yield();
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

  int compared = 0;
  for (int w = 0; w < kWorkers; ++w)
    for (int round = 0; round < kRounds; ++round)
      for (int j = 0; j < specs; ++j) {
        const size_t k = size_t(round * specs + j);
        posenc_status want_status;
        std::string what;
        const std::vector<unsigned char> want = alone(w, round, j, &want_status, &what);
        INFO("worker " << w << " round " << round << " spec " << what);
        REQUIRE(want_status == POSENC_OK);
        CHECK(statuses[size_t(w)][k] == POSENC_OK);
        CHECK((results[size_t(w)][k] == want));
        ++compared;
      }
  CHECK(compared == kWorkers * kRounds * specs);
  return forced.load();
}

}  // namespace

TEST_CASE("kernels on many threads during first-use initialisation match one thread", "[threads]") {
  std::vector<posenc_spec> specs;
  for (int i = 0; i < kSpecs; ++i) specs.push_back(spec_number(i));
  std::vector<posenc_isa> isas;  // bit-identical paths: forcing them mid-run must not change any result
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) isas.push_back(posenc_isa(v));
  const long forced = race(
      kSpecs, isas,
      [&](int w) {
        return [&, w](int round, int j, posenc_status *status) {
          const Step st = step_of(w, round, j);
          return run(specs[size_t(st.spec)], st, status);
        };
      },
      [&](int w, int round, int j, posenc_status *status, std::string *what) {
        const Step st = step_of(w, round, j);
        *what = std::to_string(st.spec) + " " + ref::traits(st.kernel).name;
        return run(specs[size_t(st.spec)], st, status);
      });
  CHECK(forced > 0);
}

// ---- RoPE: the same race for the RoPE functions, whose specs (explicit frequencies included) are set up
// at first use too. Each worker holds its own copies of the frequency arrays: equal values at different
// addresses are the same spec, so the cache is shared across threads by value.

namespace {

constexpr int kRopeSpecs = 40;

struct RopeSpec {
  posenc_rope rope;
  std::vector<double> freq;  // empty: base^(-2i/r)
};

RopeSpec rope_spec_number(int i) {
  RopeSpec s{posenc_rope_default(2 * (1 + (i * 7) % 33)), {}};
  s.rope.pairs = i % 2 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  s.rope.base = 1e4 * (1 + i % 3) + (i % 4 == 0 ? 5e5 : 0.0);
  s.rope.position_scale = i % 4 == 0 ? 1.0 : 0.5 * (i % 3 + 1);
  s.rope.attention_scale = i % 5 == 0 ? 1.369 : 1.0;
  if (i % 3 == 1)
    for (int64_t j = 0; j < s.rope.rotary_dim / 2; ++j)
      s.freq.push_back(1.0 / double(j + 1 + i) - (j % 4 == 3 ? 0.75 : 0.0));
  return s;
}

std::vector<unsigned char> run_rope(const RopeSpec &spec, int variant, ref::RopeKernel kernel, posenc_status *status) {
  posenc_rope rope = spec.rope;
  rope.freq = spec.freq.empty() ? nullptr : spec.freq.data();
  const int64_t r = rope.rotary_dim, d = r + 1 + variant % 2, n = kRows, heads = 2;
  const size_t es = ref::format_size(ref::rope_format(kernel));
  const int64_t q_el = n * heads * d, k_el = n * heads * d;  // k: one head, or the source rows of rope_copy_*
  std::vector<unsigned char> buf(size_t(q_el + k_el) * es);
  for (size_t e = 0; e < buf.size() / es; ++e) {
    const float v = float(int(e * 37 % 101) - 50) / 32.0f;
    if (es == 4) {
      std::memcpy(&buf[4 * e], &v, 4);
    } else {
      const uint16_t h = uint16_t(0x3400 + e * 13 % 1024);  // finite as binary16 and as bfloat16
      std::memcpy(&buf[2 * e], &h, 2);
    }
  }
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) pos[size_t(t)] = t % 9 == 4 ? POSENC_PAD : 1000 * variant + t * (variant + 1);
  ref::RopeCall c;
  c.kernel = kernel;
  c.rope = &rope;
  c.positions = variant % 2 ? pos.data() : nullptr;
  c.first = -7 + variant;
  c.n = n;
  c.x = buf.data();
  c.k = buf.data() + size_t(q_el) * es;
  if (ref::is_cache(kernel)) {  // cos and sin rows of h floats, strides r + 1 and h
    c.token_stride = r + 1;
    c.k_token_stride = r / 2;
  } else {
    c.heads = heads;
    c.token_stride = heads * d;
    c.head_stride = d;
    c.k_heads = 1;
    c.k_token_stride = d;
    c.k_head_stride = d;
    c.src = c.k;  // rope_copy_*: [H,T,D] source rows after x
    c.src_token_stride = d;
    c.src_head_stride = n * d;
  }
  *status = ref::invoke(c);
  return buf;
}

}  // namespace

TEST_CASE("RoPE calls on many threads during first-use initialisation match one thread", "[threads][rope]") {
  std::vector<RopeSpec> specs;
  for (int i = 0; i < kRopeSpecs; ++i) specs.push_back(rope_spec_number(i));
  const auto kernel_of = [](int s, int round, int w) {
    return ref::kAllRopeKernels[(s + round + w) % ref::kRopeKernels];
  };
  const auto spec_of = [](int w, int round, int j) { return (j * 7 + w * 13 + round) % kRopeSpecs; };
  // The paths this run may use (POSENC_ISA pins one): a rotation's bits depend on the exact IEEE
  // behaviour of every instruction, and valgrind (which runs this suite on the scalar path) gets the
  // sign of a zero from vfnmadd wrong: -(y s) + (+0) with y s = +0 gives -0 under it, +0 on hardware.
  race(
      kRopeSpecs, ref::paths(),
      [&](int w) {
        // this thread's own frequency arrays
        return [&, w, mine = specs](int round, int j, posenc_status *status) {
          const int s = spec_of(w, round, j);
          return run_rope(mine[size_t(s)], (w + round) % 4, kernel_of(s, round, w), status);
        };
      },
      [&](int w, int round, int j, posenc_status *status, std::string *what) {
        const int s = spec_of(w, round, j);
        const ref::RopeKernel kernel = kernel_of(s, round, w);
        *what = std::to_string(s) + " " + ref::rope_name(kernel);
        return run_rope(specs[size_t(s)], (w + round) % 4, kernel, status);
      });
}

// ---- Parts of one call on threads at once (posenc.h, "Parts of a call") -------------------------------
// Every kernel's call cut into 7 parts (unequal, block boundaries crossed), each part on its own thread, all
// released together, several rounds: the bytes equal the unsplit call made by one thread, and every part
// returns OK. Nothing in the call path is shared mutable state (ThreadSanitizer checks it in
// scripts/test_hardening.sh); the output rows of the parts are disjoint, the inputs read by all.

namespace {

// Runs part(k) for k < count on count threads released at once.
template <class Part>
void on_threads_at_once(int count, const Part &part) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int k = 0; k < count; ++k)
    threads.emplace_back([&, k] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      part(k);
    });
  while (ready.load() < count) std::this_thread::yield();
  go.store(true);
  for (std::thread &t : threads) t.join();
}

// 7 unequal parts of n: a block boundary inside most of them.
ref::parts::Split seven_parts(int64_t n) {
  const int64_t cuts[] = {0, n / 11, n / 5, n / 3, n / 2, 2 * n / 3, 6 * n / 7, n};
  ref::parts::Split s;
  for (int k = 0; k < 7; ++k) s.push_back({cuts[k], cuts[k + 1]});
  return s;
}

// One call of n rows or tokens (a PeCall or a RopeCallOf of support/parts.hpp, its buffer starting as init),
// whole on this thread, then three rounds of its seven_parts(n) each on its own thread, all released at once:
// every part returns POSENC_OK and the buffer holds the whole call's bytes.
template <class Of>
void seven_threads_write_whole(const Of &of, const std::vector<unsigned char> &init, int64_t n) {
  posenc_status st;
  const std::vector<unsigned char> whole = of.run(nullptr, &st);
  REQUIRE(st == POSENC_OK);
  const ref::parts::Split s = seven_parts(n);
  for (int round = 0; round < 3; ++round) {
    std::vector<unsigned char> buf = init;
    auto c = of.pointed(buf);
    c.part = true;
    std::vector<posenc_status> status(7, posenc_status(7));  // 7: no status, inside the enum's range (UBSan)
    on_threads_at_once(7, [&](int p) {
      auto mine = c;
      mine.begin = s[size_t(p)].first;
      mine.end = s[size_t(p)].second;
      status[size_t(p)] = ref::invoke(mine);
    });
    INFO("round " << round);
    for (posenc_status ps : status) CHECK(ps == POSENC_OK);
    CHECK(buf == whole);
  }
}

}  // namespace

TEST_CASE("the parts of one call on seven threads at once write the bytes of the whole call", "[threads][parts]") {
  std::mt19937_64 rng(2026);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (ref::Kernel k : ref::kAllKernels) {
        const ref::parts::PeCall pc(k, 96, posenc_layout(int(k) % 3), 400, int(k) % 4, rng);
        INFO(ref::traits(k).name << " path " << posenc_isa_name(isa));
        seven_threads_write_whole(pc, pc.out_init, 400);
      }
      for (ref::RopeKernel k : ref::kAllRopeKernels)
        for (int axes : {1, 3}) {
          const ref::parts::RopeCallOf rc(k, 64, 300, int(k) % 3, axes, int(k) % 4, rng);
          INFO(ref::rope_name(k) << " axes " << axes << " path " << posenc_isa_name(isa));
          seven_threads_write_whole(rc, rc.init, 300);
        }
    });
}
