#include "harness.hpp"

#include <benchmark/benchmark.h>

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

// Runs the case: force the path, one untimed call the first time this case runs (the per-spec setup, the
// first touch of lazily built inputs), then the timed loop; the previous path is restored after.
void run(benchmark::State &state, const Case &c, std::set<std::string> &warmed, const std::string &name) {
  const posenc_isa before = posenc_active_isa();
  if (c.forces_path && posenc_force_isa(c.isa) != POSENC_OK) {
    state.SkipWithError("path not available");
    return;
  }
  const Work work = c.prepare();
  posenc_status st = POSENC_OK;
  if (warmed.insert(name).second) st = work();
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

void add(Case c) {
  if (!posenc_isa_available(c.isa)) return;
  static std::set<std::string> warmed;
  const std::string name = name_of(c);
  auto shared = std::make_shared<const Case>(std::move(c));
  benchmark::RegisterBenchmark(name.c_str(), [shared, name](benchmark::State &state) {
    run(state, *shared, warmed, name);
  })->UseRealTime();
}

std::vector<posenc_isa> paths() {
  std::vector<posenc_isa> out;
  for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
    if (posenc_isa_available(posenc_isa(v))) out.push_back(posenc_isa(v));
  return out;
}

}  // namespace bench
