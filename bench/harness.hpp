// One benchmark case = one implementation of one kernel on one shape. Cases of the same kernel and shape
// are the columns the report compares; their names carry everything the report needs:
//   <kernel>/<impl>/d=<d>/n=<n>[/<key>=<value>...]
// impl is a posenc path name ("avx512"), a peer ("sleef_u35_avx2") or a bound ("memset").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/posenc.h"

namespace bench {

// The timed work: returns POSENC_OK, or the status that makes the case report an error.
using Work = std::function<posenc_status()>;
// Not a library status: a check of the benchmark itself failed (the 2-thread split's bytes differ).
constexpr posenc_status kSplitMismatch = posenc_status(100);

struct Case {
  std::string kernel, impl;
  int64_t d = 0, n = 0;
  std::vector<std::pair<std::string, std::string>> extra;  // vocab=32000, pos=packed, threads=2
  double bytes = 0;                    // bytes the ideal single pass moves (read + written), the same for every impl
  double elements = 0;                 // output elements
  posenc_isa isa = POSENC_ISA_SCALAR;  // posenc: the path forced while it runs; peers: the ISA they need
  bool forces_path = false;
  // Called once per run, outside the timing: fetches buffers and returns the work.
  std::function<Work()> prepare;
};

// A case of d x n output elements, moving bytes_per_element bytes per element (read + written).
Case make_case(const std::string &kernel, const std::string &impl, int64_t d, int64_t n, double bytes_per_element);

// c as a case of posenc's path isa: that path forced while it runs.
Case on_path(posenc_isa isa, Case c);

// Registers c with Google Benchmark, unless its ISA is unavailable on this machine. Every case is timed in
// wall-clock time, one rule for the single-threaded cases and the 2-thread split alike.
void add(Case c);

// Registers "ratio/<a>|<b>": a and b (names of registered cases) called alternately, the order swapped
// every iteration, each call timed; its counter "ratio" is the median of time(a) / time(b) over the
// iterations. Noise that lasts longer than one pair of calls hits both sides alike. False when a or b
// is not registered (not in this plan, or not available here).
bool add_pair(const std::string &a, const std::string &b);

// The posenc paths this build and this CPU can run, in enum order.
std::vector<posenc_isa> paths();

}  // namespace bench
