#include "harness.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>

namespace bench {
namespace {

const char *message(posenc_status st) {
  return st == kSplitMismatch ? "rows split over threads differ from the whole call" : posenc_status_string(st);
}

std::string name_of(const Case &c) {
  std::string s = c.kernel + "/" + c.impl + "/d=" + std::to_string(c.d) + "/n=" + std::to_string(c.n);
  for (const auto &kv : c.extra) s += "/" + kv.first + "=" + kv.second;
  return s;
}

std::map<std::string, std::shared_ptr<const Case>> &registry() {
  static std::map<std::string, std::shared_ptr<const Case>> cases;
  return cases;
}

// The names whose one-time untimed call has been made.
bool first_run(const std::string &name) {
  static std::set<std::string> warmed;
  return warmed.insert(name).second;
}

// Runs the case: force the path, one untimed call the first time this case runs (the per-spec setup, the
// first touch of lazily built inputs), then the timed loop; the previous path is restored after.
void run(benchmark::State &state, const Case &c, const std::string &name) {
  const posenc_isa before = posenc_active_isa();
  if (c.forces_path && posenc_force_isa(c.isa) != POSENC_OK) {
    state.SkipWithError("path not available");
    return;
  }
  const Work work = c.prepare();
  posenc_status st = POSENC_OK;
  if (first_run(name)) st = work();
  if (st != POSENC_OK) {
    state.SkipWithError(message(st));
  } else {
    for (auto _ : state) {
      const posenc_status s = work();
      if (s != POSENC_OK) st = s;
      benchmark::ClobberMemory();
    }
    if (st != POSENC_OK) state.SkipWithError(message(st));
  }
  const auto iters = double(state.iterations());
  state.counters["bytes/s"] = benchmark::Counter(c.bytes * iters, benchmark::Counter::kIsRate);
  state.counters["elements/s"] = benchmark::Counter(c.elements * iters, benchmark::Counter::kIsRate);
  if (c.forces_path) posenc_force_isa(before);
}

}  // namespace

Case make_case(const std::string &kernel, const std::string &impl, int64_t d, int64_t n, double bytes_per_element) {
  Case c;
  c.kernel = kernel;
  c.impl = impl;
  c.d = d;
  c.n = n;
  c.elements = double(d) * double(n);
  c.bytes = c.elements * bytes_per_element;
  return c;
}

Case on_path(posenc_isa isa, Case c) {
  c.isa = isa;
  c.forces_path = true;
  return c;
}

void add(Case c) {
  if (!posenc_isa_available(c.isa)) return;
  const std::string name = name_of(c);
  auto shared = std::make_shared<const Case>(std::move(c));
  registry()[name] = shared;
  benchmark::RegisterBenchmark(name.c_str(), [shared, name](benchmark::State &state) {
    run(state, *shared, name);
  })->UseRealTime();
}

namespace {

double seconds(const Work &w, posenc_status &st) {
  const auto t0 = std::chrono::steady_clock::now();
  const posenc_status s = w();
  benchmark::ClobberMemory();
  const auto t1 = std::chrono::steady_clock::now();
  if (s != POSENC_OK) st = s;
  return std::chrono::duration<double>(t1 - t0).count();
}

void run_pair(benchmark::State &state, const Case &a, const Case &b, const std::string &name) {
  const posenc_isa before = posenc_active_isa();
  const Case &forcing = a.forces_path ? a : b;  // the posenc side(s) of a pair run on one path
  if (forcing.forces_path && posenc_force_isa(forcing.isa) != POSENC_OK) {
    state.SkipWithError("path not available");
    return;
  }
  Work wa = a.prepare();
  const Work wb = b.prepare();
  wa = a.prepare();  // again: b's buffers may have grown a shared one after a took its pointer
  posenc_status st = POSENC_OK;
  if (first_run(name)) {
    st = wa();
    if (st == POSENC_OK) st = wb();
  }
  std::vector<double> ratios;
  bool a_first = true;
  for (auto _ : state) {
    if (st != POSENC_OK) {
      state.SkipWithError(message(st));  // before leaving the loop, as Google Benchmark requires
      break;
    }
    double ta, tb;
    if (a_first) {
      ta = seconds(wa, st);
      tb = seconds(wb, st);
    } else {
      tb = seconds(wb, st);
      ta = seconds(wa, st);
    }
    a_first = !a_first;
    state.SetIterationTime(ta + tb);
    ratios.push_back(ta / tb);
  }
  if (st != POSENC_OK && !state.error_occurred()) state.SkipWithError(message(st));
  if (st == POSENC_OK && !ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const size_t m = ratios.size();
    state.counters["ratio"] = m % 2 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]);
  }
  if (forcing.forces_path) posenc_force_isa(before);
}

}  // namespace

bool add_pair(const std::string &a, const std::string &b) {
  const auto ia = registry().find(a), ib = registry().find(b);
  if (ia == registry().end() || ib == registry().end()) return false;
  const std::string name = "ratio/" + a + "|" + b;
  benchmark::RegisterBenchmark(name.c_str(), [ca = ia->second, cb = ib->second, name](benchmark::State &state) {
    run_pair(state, *ca, *cb, name);
  })->UseManualTime();
  return true;
}

std::vector<posenc_isa> paths() {
  std::vector<posenc_isa> out;
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) out.push_back(posenc_isa(v));
  return out;
}

}  // namespace bench
