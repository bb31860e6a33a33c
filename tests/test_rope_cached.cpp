// posenc_rope_cached_* and posenc_rope_copy_cached_* (posenc.h): the rotation by given cos/sin rows. With the
// rows posenc_rope_cache_f32 wrote for a rope at some positions, every byte equals that of posenc_rope_f32 /
// _copy_f32 (bf16, f16) at those positions, on every path: that call is the oracle, held to MPFR by test_rope,
// test_rope_axes and test_accuracy. Shapes: r from 2 to 300 (partial vectors, more pairs than a chunk of the
// stage), halves and interleaved pairs, attention_scale 1 and not, multi-axis ropes, 1 to 37 tokens at random
// positions up to 2^31 - 1, 1 to 5 heads, strided rows and strided cache rows, rows holding NaN, infinities
// and subnormals; in place and from a separate source; the _part twins in two pieces. Then the bad input:
// NULL rows, short strides, cache rows that overlap the destination (nothing written on any of them).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "posenc/posenc.h"
#include "support/paths.hpp"

namespace {

struct Shape {
  posenc_rope rope;
  std::vector<uint8_t> axis;
  int64_t n, heads, ts, hs, cs, ss;
  std::vector<int64_t> pos;  // axes * n, axis-major
};

Shape random_shape(std::mt19937_64 &rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  static const int64_t dims[] = {2, 4, 6, 16, 30, 64, 96, 128, 130, 256, 300};
  Shape s;
  const int64_t r = dims[pick(0, 10)];
  s.rope = posenc_rope_default(r);
  s.rope.pairs = pick(0, 1) ? POSENC_ROPE_HALVES : POSENC_ROPE_INTERLEAVED;
  s.rope.base = pick(0, 1) ? 10000.0 : 1e6;
  if (pick(0, 2) == 0) s.rope.attention_scale = 1.2345;
  int axes = 1;
  if (pick(0, 3) == 0) {
    axes = int(pick(2, 4));
    s.axis.resize(size_t(r / 2));
    for (auto &a : s.axis) a = uint8_t(pick(0, axes - 1));
    s.rope.axes = axes;
    s.rope.axis = s.axis.data();
  }
  s.n = pick(1, 37);
  s.heads = pick(1, 5);
  s.hs = r + pick(0, 3);
  s.ts = s.heads * s.hs + pick(0, 5);
  s.cs = r / 2 + pick(0, 4);
  s.ss = r / 2 + pick(0, 4);
  s.pos.resize(size_t(axes * s.n));
  for (auto &p : s.pos) p = pick(0, 3) == 0 ? pick(0, 2147483647) : pick(0, 5000);
  return s;
}

template <class T>
T special(std::mt19937_64 &rng, std::uniform_real_distribution<float> &u);
template <>
float special<float>(std::mt19937_64 &rng, std::uniform_real_distribution<float> &u) {
  switch (rng() % 64) {
    case 0: return std::nanf("0x123");
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 1e-40f;
    default: return u(rng);
  }
}
template <>
uint16_t special<uint16_t>(std::mt19937_64 &rng, std::uniform_real_distribution<float> &) {
  const uint16_t v = uint16_t(rng());
  return v;  // every pattern: NaN, infinities and subnormals of both formats among them
}

// The four calls of one element type, by given rows and at positions.
template <class T>
struct Calls;
template <>
struct Calls<float> {
  static constexpr auto cached = posenc_rope_cached_f32;
  static constexpr auto cached_part = posenc_rope_cached_f32_part;
  static constexpr auto copy_cached = posenc_rope_copy_cached_f32;
  static constexpr auto at = posenc_rope_f32;
  static constexpr auto copy_at = posenc_rope_copy_f32;
};
template <bool kBF16>
struct Calls16 {
  static constexpr auto cached = kBF16 ? posenc_rope_cached_bf16 : posenc_rope_cached_f16;
  static constexpr auto cached_part = kBF16 ? posenc_rope_cached_bf16_part : posenc_rope_cached_f16_part;
  static constexpr auto copy_cached = kBF16 ? posenc_rope_copy_cached_bf16 : posenc_rope_copy_cached_f16;
  static constexpr auto at = kBF16 ? posenc_rope_bf16 : posenc_rope_f16;
  static constexpr auto copy_at = kBF16 ? posenc_rope_copy_bf16 : posenc_rope_copy_f16;
};

template <class T, class C>
void check_shape(const Shape &s, std::mt19937_64 &rng) {
  const int64_t size = s.n * s.ts;
  std::vector<float> cos(size_t(s.n * s.cs), -7.0f), sin(size_t(s.n * s.ss), -7.0f);
  REQUIRE(posenc_rope_cache_f32(&s.rope, s.pos.data(), 0, s.n, cos.data(), s.cs, sin.data(), s.ss) == POSENC_OK);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<T> x(static_cast<size_t>(size));
  for (auto &v : x) v = special<T>(rng, u);
  // in place
  std::vector<T> want = x, got = x, parts = x;
  REQUIRE(C::at(&s.rope, s.pos.data(), 0, s.n, want.data(), s.heads, s.ts, s.hs) == POSENC_OK);
  REQUIRE(C::cached(&s.rope, cos.data(), s.cs, sin.data(), s.ss, s.n, got.data(), s.heads, s.ts, s.hs) == POSENC_OK);
  CHECK(std::memcmp(want.data(), got.data(), sizeof(T) * want.size()) == 0);
  const int64_t cut = s.n / 2;
  REQUIRE(C::cached_part(&s.rope, cos.data(), s.cs, sin.data(), s.ss, s.n, parts.data(), s.heads, s.ts, s.hs, cut,
                         s.n) == POSENC_OK);
  REQUIRE(C::cached_part(&s.rope, cos.data(), s.cs, sin.data(), s.ss, s.n, parts.data(), s.heads, s.ts, s.hs, 0, cut) ==
          POSENC_OK);
  CHECK(std::memcmp(want.data(), parts.data(), sizeof(T) * want.size()) == 0);
  // from a separate source, into rows of another layout
  const int64_t dhs = s.rope.rotary_dim + 1, dts = s.heads * dhs;
  std::vector<T> cwant(size_t(s.n * dts), T(0x55)), cgot = cwant;
  REQUIRE(C::copy_at(&s.rope, s.pos.data(), 0, s.n, x.data(), s.ts, s.hs, cwant.data(), s.heads, dts, dhs) ==
          POSENC_OK);
  REQUIRE(C::copy_cached(&s.rope, cos.data(), s.cs, sin.data(), s.ss, s.n, x.data(), s.ts, s.hs, cgot.data(), s.heads,
                         dts, dhs) == POSENC_OK);
  CHECK(std::memcmp(cwant.data(), cgot.data(), sizeof(T) * cwant.size()) == 0);
}

}  // namespace

TEST_CASE("cached: the bytes of the rotation at the cache's positions, on every path") {
  for (posenc_isa isa : ref::paths()) {
    ref::on_path(isa, [&] {
      INFO("path " << posenc_isa_name(isa));
      std::mt19937_64 rng(20261204 + uint64_t(isa));
      for (int i = 0; i < 150; ++i) {
        const Shape s = random_shape(rng);
        INFO("shape " << i << ": r " << s.rope.rotary_dim << ", pairs " << int(s.rope.pairs) << ", axes " << s.rope.axes
                      << ", n " << s.n << ", heads " << s.heads);
        check_shape<float, Calls<float>>(s, rng);
        check_shape<uint16_t, Calls16<true>>(s, rng);
        check_shape<uint16_t, Calls16<false>>(s, rng);
      }
    });
  }
}

TEST_CASE("cached: bad input gets its status and nothing is written") {
  const posenc_rope rope = posenc_rope_default(8);
  const int64_t pos[3] = {5, 6, 7};
  std::vector<float> cos(12), sin(12), x(3 * 2 * 8, 1.5f);
  REQUIRE(posenc_rope_cache_f32(&rope, pos, 0, 3, cos.data(), 4, sin.data(), 4) == POSENC_OK);
  const std::vector<float> before = x;
  CHECK(posenc_rope_cached_f32(nullptr, cos.data(), 4, sin.data(), 4, 3, x.data(), 2, 16, 8) == POSENC_ERR_NULL);
  CHECK(posenc_rope_cached_f32(&rope, nullptr, 4, sin.data(), 4, 3, x.data(), 2, 16, 8) == POSENC_ERR_NULL);
  CHECK(posenc_rope_cached_f32(&rope, cos.data(), 4, nullptr, 4, 3, x.data(), 2, 16, 8) == POSENC_ERR_NULL);
  CHECK(posenc_rope_cached_f32(&rope, cos.data(), 3, sin.data(), 4, 3, x.data(), 2, 16, 8) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_cached_f32(&rope, cos.data(), 4, sin.data(), -4, 3, x.data(), 2, 16, 8) == POSENC_ERR_INVALID);
  // the cache inside the rows it would rotate
  CHECK(posenc_rope_cached_f32(&rope, x.data() + 4, 4, sin.data(), 4, 3, x.data(), 2, 16, 8) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_cached_f32_part(&rope, cos.data(), 4, sin.data(), 4, 3, x.data(), 2, 16, 8, 2, 1) ==
        POSENC_ERR_INVALID);  // a part past its call, through the _part twin's range check
  CHECK(x == before);
  // one token: strides separate nothing and are not read
  CHECK(posenc_rope_cached_f32(&rope, cos.data(), 0, sin.data(), 0, 1, x.data(), 2, 16, 8) == POSENC_OK);
  CHECK(posenc_rope_cached_f32(&rope, cos.data(), 4, sin.data(), 4, 0, nullptr, 0, 0, 0) == POSENC_OK);
}
