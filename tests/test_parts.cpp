// Parts of a call (posenc.h, "Parts of a call"; docs/threads.md): for every kernel, the bytes written by any
// set of disjoint _part calls that covers [0, n), run in any order, equal the bytes of the unsplit call, on
// every path. The unsplit call is the oracle: the claim is "the same bytes as the whole call", and the whole
// call is held to MPFR by the accuracy, fused, timesteps and RoPE suites.
//
// Splits: 1, 2, 3 and 7 equal pieces (run last piece first), cuts at the kernel's 65-row blocks and one row
// either side, every row alone in a shuffled order, and random covers (empty parts included) in a shuffled
// order. Shapes: n = 1, 2, 3, 7, primes, 64 to 66 and 130 to 131 (the block boundaries); odd and tiny
// widths; explicit positions with runs, repeated runs (a decode batch), POSENC_PAD and jumps, or first + r
// up to 2^31 - 1; strided rows, in-place add, bf16 / f16; multi-axis RoPE positions (axis-major, whose axes
// stay the whole call's n apart in every part), PAD on axis 0, q + k with GQA, fused QKV, [H,T,D], the
// vLLM cache layout. The parallel runs of the same parts are tests/test_threads.cpp's; the bad input of
// parts is tests/test_hardening.cpp's.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "support/calls.hpp"
#include "support/parts.hpp"
#include "support/paths.hpp"
#include "support/rope.hpp"

namespace {

using namespace ref::parts;
using ref::Kernel;
using ref::RopeKernel;

// The splits of n units every test runs.
std::vector<Split> splits(int64_t n, std::mt19937_64 &rng) {
  std::vector<Split> out;
  for (int64_t p : {1, 2, 3, 7}) {
    Split s;
    for (int64_t k = p - 1; k >= 0; --k) s.push_back({k * n / p, (k + 1) * n / p});  // the last piece first
    out.push_back(s);
  }
  {  // at the blocks of 65 rows and one row either side
    std::vector<int64_t> cuts = {0, n};
    for (int64_t b = 65; b < n + 2; b += 65)
      for (int64_t c : {b - 1, b, b + 1})
        if (c > 0 && c < n) cuts.push_back(c);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    Split s;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) s.push_back({cuts[i], cuts[i + 1]});
    std::shuffle(s.begin(), s.end(), rng);
    out.push_back(s);
  }
  if (n <= 140) {  // every row alone
    Split s;
    for (int64_t r = 0; r < n; ++r) s.push_back({r, r + 1});
    std::shuffle(s.begin(), s.end(), rng);
    out.push_back(s);
  }
  for (int k = 0; k < 3; ++k) {  // random covers, empty parts included (repeated cuts)
    std::vector<int64_t> cuts = {0, n};
    const int m = int(rng() % 9);
    for (int i = 0; i < m; ++i) cuts.push_back(int64_t(rng() % uint64_t(n + 1)));
    std::sort(cuts.begin(), cuts.end());
    Split s;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) s.push_back({cuts[i], cuts[i + 1]});
    std::shuffle(s.begin(), s.end(), rng);
    out.push_back(s);
  }
  return out;
}

// Element e where two outputs first differ, for the message.
template <class V>
std::ptrdiff_t first_difference(const V &a, const V &b) {
  for (size_t k = 0; k < a.size() && k < b.size(); ++k)
    if (a[k] != b[k]) return std::ptrdiff_t(k);
  return -1;
}

// Each of splits(n, rng) of a call (a PeCall or a RopeCallOf, es bytes an element) writes the bytes of the
// whole call, every part returning POSENC_OK; returns how many splits were compared.
template <class Of>
int64_t every_split_writes_whole(const Of &of, int64_t n, size_t es, std::mt19937_64 &rng) {
  posenc_status st;
  const std::vector<unsigned char> whole = of.run(nullptr, &st);
  REQUIRE(st == POSENC_OK);
  int64_t compared = 0;
  for (const Split &s : splits(n, rng)) {
    const std::vector<unsigned char> parts = of.run(&s, &st);
    INFO("parts " << describe(s));
    CHECK(st == POSENC_OK);
    const std::ptrdiff_t at = first_difference(parts, whole);
    if (at >= 0) FAIL_CHECK("byte " << at << " (element " << at / std::ptrdiff_t(es) << ") differs");
    ++compared;
  }
  return compared;
}

// An empty part [b, b) at every row or token b of a call of n (its buffer starting as init): POSENC_OK, and
// not one byte changed.
template <class Of>
void empty_parts_write_nothing(const Of &of, const std::vector<unsigned char> &init, int64_t n) {
  for (int64_t b = 0; b <= n; ++b) {
    const Split s = {{b, b}};
    posenc_status st;
    const std::vector<unsigned char> got = of.run(&s, &st);
    INFO("[" << b << ", " << b << ")");
    CHECK(st == POSENC_OK);
    CHECK(got == init);
  }
}

}  // namespace

TEST_CASE("every split of a table, rows, fused or timestep call writes the bytes of the whole call", "[parts]") {
  std::mt19937_64 rng(26);
  int64_t compared = 0;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : ref::kAllKernels)
        for (int64_t d : {1, 2, 13, 64, 67})
          for (int variant = 0; variant < 4; ++variant) {
            const posenc_layout layout = posenc_layout((d + variant) % 3);
            for (int64_t n : kRowCounts) {
              if ((n + d + variant) % 3 == 1 && n > 7) continue;  // a third of the larger shapes: time
              const PeCall pc(k, d, layout, n, variant, rng);
              INFO(pc.t.name << " d " << d << " n " << n << " variant " << variant << " path " << posenc_isa_name(isa));
              compared += every_split_writes_whole(pc, n, pc.t.out_size, rng);
            }
          }
    });
  CHECK(compared > 5000);
}

TEST_CASE("a part of a call writes its rows and nothing else", "[parts]") {
  // Every part [b, e) alone: the rows outside it keep their canary, the rows inside are the whole call's.
  std::mt19937_64 rng(7);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (Kernel k : ref::kAllKernels) {
        const PeCall pc(k, 13, POSENC_SIN_COS_HALVES, 131, 1, rng);
        posenc_status st;
        const std::vector<unsigned char> whole = pc.run(nullptr, &st);
        REQUIRE(st == POSENC_OK);
        const int64_t stride = pc.call.out_stride;
        const size_t es = pc.t.out_size;
        for (const Range &r : {Range{0, 1}, Range{0, 65}, Range{64, 66}, Range{65, 130}, Range{130, 131}, Range{3, 3},
                               Range{131, 131}, Range{0, 131}}) {
          const Split s = {r};
          const std::vector<unsigned char> got = pc.run(&s, &st);
          INFO(pc.t.name << " path " << posenc_isa_name(isa) << " part [" << r.first << ", " << r.second << ")");
          CHECK(st == POSENC_OK);
          bool ok = true;
          for (size_t b = 0; b < got.size() && ok; ++b) {
            const int64_t e = int64_t(b / es), row = e / stride;
            const bool mine = row >= r.first && row < r.second && e % stride < pc.call.d_model;
            ok = got[b] == (mine ? whole[b] : pc.out_init[b]);
          }
          CHECK(ok);
        }
      }
    });
}

// ---- RoPE ---------------------------------------------------------------------------------------------

TEST_CASE("every split of a RoPE call writes the bytes of the whole call", "[parts][rope]") {
  std::mt19937_64 rng(15);
  int64_t compared = 0;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (RopeKernel k : ref::kAllRopeKernels)
        for (int64_t r : {2, 14, 64, 128})
          for (int variant = 0; variant < 4; ++variant)
            for (int axes : {1, 3}) {
              const int layout = (variant + int(r)) % 3;
              for (int64_t n : kRowCounts) {
                if ((n + r + variant + axes) % 3 != 0 && n > 7) continue;  // a third of the larger shapes: time
                const RopeCallOf rc(k, r, n, layout, axes, variant, rng);
                INFO(ref::rope_name(k) << " r " << r << " n " << n << " layout " << layout << " axes " << axes
                                       << " variant " << variant << " path " << posenc_isa_name(isa));
                compared += every_split_writes_whole(rc, n, rc.es, rng);
              }
            }
    });
  CHECK(compared > 3000);
}

TEST_CASE("an empty part checks the whole call and writes nothing", "[parts]") {
  // begin == end at every row of a valid call: OK, not one byte changed; the parts still see the whole
  // call's positions (a bad one anywhere fails every part, tests/test_hardening.cpp).
  std::mt19937_64 rng(3);
  for (Kernel k : ref::kAllKernels) {
    const PeCall pc(k, 13, POSENC_INTERLEAVED, 70, 1, rng);
    INFO(pc.t.name);
    empty_parts_write_nothing(pc, pc.out_init, 70);
  }
  for (RopeKernel k : ref::kAllRopeKernels) {
    const RopeCallOf rc(k, 64, 70, 0, 3, 1, rng);
    INFO(ref::rope_name(k));
    empty_parts_write_nothing(rc, rc.init, 70);
  }
}
