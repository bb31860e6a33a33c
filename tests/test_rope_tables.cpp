// posenc_rope_tables_* (posenc.h): the rotation by full-width tables, diffusers' apply_rotary_emb. Every element
// is held to MPFR on every path: the exact x c + x' s (products and sum in 1200 bits, exact for any floats)
// rounded by mpfr_get_flt, then to nearest-even bf16 / f16 by tests/support/halves.hpp's own conversion; NaN
// results by the rule (the first NaN of the pair, quieted, else 0x7fc00000). Data: random rows with NaN,
// infinities, zeros of both signs and subnormals; constructed sums whose double rounding lands on a float32
// midpoint (3 K 2^e with K odd: the products x c are midpoints, x' s a tiny push either way or exactly zero),
// in the normal and the subnormal range, where one rounding of the double sum to float32 is wrong. Shapes: d
// from 2 to 260 (partial vectors of every path), both pairings, 1 to 19 tokens, 1 to 4 heads, padded strides,
// table rows shared (stride 0); in place, from a separate source and in two parts. Then the bad input, with
// nothing written.
#include <mpfr.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "posenc/posenc.h"
#include "support/halves.hpp"
#include "support/paths.hpp"

namespace {

// The correctly rounded float32 of x c + p s (p the partner with the pair's sign), by MPFR.
float exact_sum(float x, float c, float p, float s) {
  mpfr_t a, b;
  mpfr_init2(a, 1200);
  mpfr_init2(b, 1200);
  mpfr_set_flt(a, x, MPFR_RNDN);
  mpfr_mul_d(a, a, double(c), MPFR_RNDN);  // exact: 48 bits
  mpfr_set_flt(b, p, MPFR_RNDN);
  mpfr_mul_d(b, b, double(s), MPFR_RNDN);
  mpfr_add(a, a, b, MPFR_RNDN);  // exact: 1200 bits hold any sum of two such products
  const float f = mpfr_get_flt(a, MPFR_RNDN);
  mpfr_clear(a);
  mpfr_clear(b);
  return f;
}

// The float32 result of element j: u, v the pair's elements, first whether j is u.
float want_f32(float u, float v, float c, float s, bool first) {
  const float x = first ? u : v, p = first ? -v : u;
  if (std::isnan(u)) return ref::float_of_bits(ref::bits_of_float(u) | 0x00400000u);
  if (std::isnan(v)) return ref::float_of_bits(ref::bits_of_float(v) | 0x00400000u);
  const double a = double(x) * double(c), b = double(p) * double(s);  // exact; NaN only from 0 * inf or a NaN table
  if (std::isnan(a) || std::isnan(b) || std::isnan(a + b)) return ref::float_of_bits(0x7FC00000u);
  if (std::isinf(a) || std::isinf(b)) return float(a + b);  // an infinity (inf - inf caught above)
  return exact_sum(x, c, p, s);
}

uint16_t round16(float f, bool bf16) {
  if (std::isnan(f)) return bf16 ? 0x7FC0 : 0x7E00;  // compared as NaN only
  const float a = std::fabs(f);
  if (std::isinf(f) || a >= (bf16 ? ref::float_of_bits(0x7F7F8000u) : 65520.0f))
    return uint16_t((std::signbit(f) ? 0x8000 : 0) | (bf16 ? 0x7F80 : 0x7C00));
  return bf16 ? ref::narrow_bf16(f) : ref::narrow_f16(f);
}

enum class Fmt { kF32, kBF16, kF16 };

struct Shape {
  int64_t d, n, heads, ts, hs, cs, ss;
  posenc_rope_pairs pairs;
};

// Element values: random floats in [-4, 4] with specials, or a constructed tie (see above) per pair.
struct Data {
  std::vector<float> x, cos, sin;  // x: n ts floats (the values the rows hold, before formatting)
};

void fill(const Shape &s, std::mt19937_64 &rng, Data &data, bool specials, bool narrow16) {
  std::uniform_real_distribution<float> u(-4.0f, 4.0f), t(-1.0f, 1.0f);
  auto value = [&]() -> float {
    if (specials) switch (rng() % 48) {
        case 0: return std::nanf("0x123");
        case 1: return INFINITY;
        case 2: return -INFINITY;
        case 3: return 1e-40f;
        case 4: return -0.0f;
        case 5: return 0.0f;
        default: break;
      }
    return u(rng);
  };
  data.x.assign(size_t(s.n * s.ts), 0.0f);
  for (auto &v : data.x) v = value();
  const int64_t crows = s.cs ? s.n : 1, srows = s.ss ? s.n : 1;
  data.cos.assign(size_t((crows - 1) * s.cs + s.d), 0.0f);
  data.sin.assign(size_t((srows - 1) * s.ss + s.d), 0.0f);
  // tables: mostly values in [-1, 1], now and then exactly +-0 and +-1 (position 0's sin is +0: the sign of a
  // zero result then comes from x' s alone)
  auto table = [&]() -> float {
    static const float exact[] = {0.0f, -0.0f, 1.0f, -1.0f};
    return rng() % 8 == 0 ? exact[rng() % 4] : t(rng);
  };
  for (auto &v : data.cos) v = table();
  for (auto &v : data.sin) v = table();
  if (narrow16) return;
  // ties: in about a third of the pairs of the first head, element u's x c is a float32 midpoint 3 K 2^e and
  // v s a push of +-2^-60 relative to it, or 0
  const int64_t h = s.d / 2;
  for (int64_t tok = 0; tok < s.n; ++tok)
    for (int64_t i = 0; i < h; ++i) {
      if (rng() % 3) continue;
      const int64_t ui = s.pairs == POSENC_ROPE_HALVES ? i : 2 * i,
                    vi = s.pairs == POSENC_ROPE_HALVES ? i + h : 2 * i + 1;
      // normal: K odd with 3 K in [2^24, 2^25), x c = 3 K 2^e a midpoint of floats near 2^(24 + e); subnormal:
      // K odd with 3 K < 2^24, x c = 3 K 2^-150, a midpoint of the subnormal floats (multiples of 2^-149)
      const bool sub = rng() % 4 == 0;
      const uint32_t k = sub ? uint32_t(1 + 2 * (rng() % ((1u << 24) / 6)))
                             : uint32_t((1u << 24) / 3 + 1 + 2 * (rng() % ((1u << 22) - 2))) | 1u;
      const int e = sub ? -150 : -24 - int(rng() % 8);
      float *row = &data.x[size_t(tok * s.ts)];
      row[ui] = std::ldexp(float(k), e / 2);
      if (!s.cs || !s.ss) continue;  // shared table rows: no ties
      data.cos[size_t(tok * s.cs + ui)] = std::ldexp(3.0f, e - e / 2);
      const int push = int(rng() % 3);
      // v s: v = 2^a, s = +-2^b with 2^(a+b) far below the midpoint's double ulp (or v = 0)
      const int ex = sub ? -200 : -80;
      row[vi] = push == 0 ? 0.0f : std::ldexp(1.0f, ex / 2);
      data.sin[size_t(tok * s.ss + ui)] = std::ldexp(push == 2 ? -1.0f : 1.0f, ex - ex / 2);
    }
}

template <class T>
T format(float v, Fmt f) {
  if constexpr (sizeof(T) == 4)
    return v;
  else
    return f == Fmt::kBF16 ? round16(v, true) : round16(v, false);
}
template <class T>
float value_of(T v, Fmt f) {
  if constexpr (sizeof(T) == 4)
    return v;
  else
    return f == Fmt::kBF16 ? ref::widen_bf16(v) : ref::widen_f16(v);
}

template <class T>
struct Call;
template <>
struct Call<float> {
  static constexpr auto whole = posenc_rope_tables_f32;
  static constexpr auto part = posenc_rope_tables_f32_part;
};
template <>
struct Call<uint16_t> {
  static posenc_status whole(Fmt f, int64_t d, posenc_rope_pairs pairs, const float *c, int64_t cs, const float *s,
                             int64_t ss, int64_t n, const uint16_t *src, int64_t sts, int64_t shs, uint16_t *x,
                             int64_t heads, int64_t ts, int64_t hs) {
    return (f == Fmt::kBF16 ? posenc_rope_tables_bf16 : posenc_rope_tables_f16)(d, pairs, c, cs, s, ss, n, src, sts,
                                                                                shs, x, heads, ts, hs);
  }
  static posenc_status part(Fmt f, int64_t d, posenc_rope_pairs pairs, const float *c, int64_t cs, const float *s,
                            int64_t ss, int64_t n, const uint16_t *src, int64_t sts, int64_t shs, uint16_t *x,
                            int64_t heads, int64_t ts, int64_t hs, int64_t b, int64_t e) {
    return (f == Fmt::kBF16 ? posenc_rope_tables_bf16_part : posenc_rope_tables_f16_part)(
        d, pairs, c, cs, s, ss, n, src, sts, shs, x, heads, ts, hs, b, e);
  }
};

template <class T, class... A>
posenc_status call(Fmt f, A... a) {
  if constexpr (sizeof(T) == 4)
    return Call<float>::whole(a...);
  else
    return Call<uint16_t>::whole(f, a...);
}
template <class T, class... A>
posenc_status call_part(Fmt f, A... a) {
  if constexpr (sizeof(T) == 4)
    return Call<float>::part(a...);
  else
    return Call<uint16_t>::part(f, a...);
}

// The expected rows of a source xs (formatted), for every head row of every token; elements outside the rows
// keep `keep`'s values.
template <class T>
std::vector<T> expected(const Shape &s, const std::vector<T> &xs, const Data &data, Fmt f, std::vector<T> keep,
                        int64_t dts, int64_t dhs) {
  const int64_t h = s.d / 2;
  for (int64_t tok = 0; tok < s.n; ++tok)
    for (int64_t hd = 0; hd < s.heads; ++hd) {
      const T *row = &xs[size_t(tok * s.ts + hd * s.hs)];
      T *out = &keep[size_t(tok * dts + hd * dhs)];
      const float *c = &data.cos[size_t(tok * s.cs)], *sn = &data.sin[size_t(tok * s.ss)];
      for (int64_t i = 0; i < h; ++i) {
        const int64_t ui = s.pairs == POSENC_ROPE_HALVES ? i : 2 * i,
                      vi = s.pairs == POSENC_ROPE_HALVES ? i + h : 2 * i + 1;
        const float u = value_of(row[ui], f), v = value_of(row[vi], f);
        const float ou = want_f32(u, v, c[ui], sn[ui], true), ov = want_f32(u, v, c[vi], sn[vi], false);
        out[ui] = format<T>(ou, f);
        out[vi] = format<T>(ov, f);
      }
    }
  return keep;
}

// Equal, or both NaN for the 16-bit formats (whose NaN payloads the conversions carry differently).
template <class T>
int64_t mismatches(const std::vector<T> &got, const std::vector<T> &want, Fmt f) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    if (sizeof(T) == 2 && std::isnan(value_of(got[i], f)) && std::isnan(value_of(want[i], f))) continue;
    if (bad < 5) {
      uint32_t g = 0, w = 0;
      std::memcpy(&g, &got[i], sizeof(T));
      std::memcpy(&w, &want[i], sizeof(T));
      UNSCOPED_INFO("element " << i << ": got 0x" << std::hex << g << ", want 0x" << w << std::dec);
    }
    ++bad;
  }
  return bad;
}

template <class T>
void check_format(Fmt f, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  static const int64_t dims[] = {2, 4, 6, 8, 10, 14, 16, 18, 30, 32, 34, 64, 126, 128, 130, 260};
  for (int round = 0; round < 60; ++round) {
    Shape s;
    s.d = dims[pick(0, 15)];
    s.pairs = pick(0, 1) ? POSENC_ROPE_HALVES : POSENC_ROPE_INTERLEAVED;
    s.n = pick(1, 19);
    s.heads = pick(1, 4);
    s.hs = s.d + pick(0, 3);
    s.ts = s.heads * s.hs + pick(0, 5);
    s.cs = pick(0, 7) == 0 ? 0 : s.d + pick(0, 3);
    s.ss = pick(0, 7) == 0 ? 0 : s.d + pick(0, 3);
    Data data;
    fill(s, rng, data, round % 2 == 1, sizeof(T) == 2);
    std::vector<T> xs(data.x.size());
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = format<T>(data.x[i], f);
    INFO("round " << round << ": d " << s.d << (s.pairs == POSENC_ROPE_HALVES ? " halves" : " interleaved") << ", n "
                  << s.n << ", heads " << s.heads << ", cs " << s.cs << ", ss " << s.ss);
    const std::vector<T> want = expected(s, xs, data, f, xs, s.ts, s.hs);
    // into rows of another layout, whose other elements stay as they are
    const int64_t dhs = s.d + 2, dts = s.heads * dhs + 1;
    std::vector<T> blank(size_t(s.n * dts), format<T>(-7.0f, f));
    const std::vector<T> cwant = expected(s, xs, data, f, blank, dts, dhs);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        INFO("path " << posenc_isa_name(isa));
        std::vector<T> got = xs;  // in place
        REQUIRE(call<T>(f, s.d, s.pairs, data.cos.data(), s.cs, data.sin.data(), s.ss, s.n, got.data(), s.ts, s.hs,
                        got.data(), s.heads, s.ts, s.hs) == POSENC_OK);
        CHECK(mismatches(got, want, f) == 0);
        std::vector<T> cgot = blank;  // from a separate source
        REQUIRE(call<T>(f, s.d, s.pairs, data.cos.data(), s.cs, data.sin.data(), s.ss, s.n, xs.data(), s.ts, s.hs,
                        cgot.data(), s.heads, dts, dhs) == POSENC_OK);
        CHECK(mismatches(cgot, cwant, f) == 0);
        std::vector<T> parts = blank;  // two parts, the later first
        const int64_t cut = s.n / 2;
        REQUIRE(call_part<T>(f, s.d, s.pairs, data.cos.data(), s.cs, data.sin.data(), s.ss, s.n, xs.data(), s.ts, s.hs,
                             parts.data(), s.heads, dts, dhs, cut, s.n) == POSENC_OK);
        REQUIRE(call_part<T>(f, s.d, s.pairs, data.cos.data(), s.cs, data.sin.data(), s.ss, s.n, xs.data(), s.ts, s.hs,
                             parts.data(), s.heads, dts, dhs, int64_t(0), cut) == POSENC_OK);
        CHECK(mismatches(parts, cwant, f) == 0);
      });
  }
}

}  // namespace

TEST_CASE("tables f32: every element the correctly rounded x c + x' s, ties and subnormals, every path",
          "[rope_tables]") {
  check_format<float>(Fmt::kF32, 20261205);
}

TEST_CASE("tables bf16 and f16: the float32 result rounded to nearest-even, every path", "[rope_tables]") {
  check_format<uint16_t>(Fmt::kBF16, 7);
  check_format<uint16_t>(Fmt::kF16, 8);
}

TEST_CASE("tables: the double sum's own float32 rounding is wrong on the constructed ties", "[rope_tables]") {
  // The case the TwoSum step exists for: x c = 3 (1 + 2^-23) is the midpoint between 3 + 2^-22 and 3 + 2^-21,
  // x' s = -2^-60 puts the exact sum below it, and the double sum rounds back onto the midpoint, whose float
  // rounding ties to even, upwards.
  const float x = 3.0f, c = 1.0f + 0x1p-23f, v = 0x1p-30f, s = 0x1p-30f;  // u c - v s = 3 (1 + 2^-23) - 2^-60
  const double dbl = double(x) * c - double(v) * s;
  CHECK(float(dbl) == 3.0f + 0x1p-21f);              // the one rounding of the double: ties to even
  CHECK(exact_sum(x, c, -v, s) == 3.0f + 0x1p-22f);  // the exact sum is below the midpoint
  const float cos[2] = {c, 1.0f}, sin[2] = {s, 0.0f}, row[2] = {x, v};
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      float out[2];
      REQUIRE(posenc_rope_tables_f32(2, POSENC_ROPE_INTERLEAVED, cos, 2, sin, 2, 1, row, 2, 2, out, 1, 2, 2) ==
              POSENC_OK);
      CHECK(out[0] == 3.0f + 0x1p-22f);
      CHECK(out[1] == v);  // v 1 + u 0
    });
}

TEST_CASE("tables: the sign of a zero result is IEEE's on every path", "[rope_tables]") {
  // u = -0, v = 1, cos = 1, sin = +0 (a table at position 0): u c - v s = (-0) + (-0) = -0; v c + u s = 1
  for (posenc_rope_pairs pairs : {POSENC_ROPE_HALVES, POSENC_ROPE_INTERLEAVED}) {
    const int64_t d = 16, h = d / 2;
    std::vector<float> row(d, 1.0f), cos(d, 1.0f), sin(d, 0.0f);
    for (int64_t i = 0; i < h; ++i) row[size_t(pairs == POSENC_ROPE_HALVES ? i : 2 * i)] = -0.0f;
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> out(d, 7.0f);
        REQUIRE(posenc_rope_tables_f32(d, pairs, cos.data(), d, sin.data(), d, 1, row.data(), d, d, out.data(), 1, d,
                                       d) == POSENC_OK);
        for (int64_t i = 0; i < h; ++i) {
          const int64_t ui = pairs == POSENC_ROPE_HALVES ? i : 2 * i;
          INFO("path " << posenc_isa_name(isa) << " pairs " << int(pairs) << " element " << ui);
          CHECK(ref::bits_of_float(out[size_t(ui)]) == 0x80000000u);
        }
      });
  }
}

TEST_CASE("tables: bad input returns the contract's status and writes nothing", "[rope_tables]") {
  const int64_t d = 8, n = 3;
  std::vector<float> cos(size_t(n * d), 0.5f), sin(size_t(n * d), 0.25f), x(size_t(n * d), 1.0f),
      out(size_t(n * d), -3.0f);
  const std::vector<float> before = out;
  auto run = [&](int64_t dd, posenc_rope_pairs p, const float *c, int64_t cs, const float *s, int64_t ss, int64_t nn,
                 const float *src, int64_t sts, float *dst, int64_t heads, int64_t ts) {
    return posenc_rope_tables_f32(dd, p, c, cs, s, ss, nn, src, sts, d, dst, heads, ts, d);
  };
  const posenc_rope_pairs H = POSENC_ROPE_HALVES;
  CHECK(run(d, H, cos.data(), d, sin.data(), d, -1, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, nullptr, d, sin.data(), d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_NULL);
  CHECK(run(d, H, cos.data(), d, nullptr, d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_NULL);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, nullptr, d, out.data(), 1, d) == POSENC_ERR_NULL);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, x.data(), d, nullptr, 1, d) == POSENC_ERR_NULL);
  CHECK(run(7, H, cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(0, H, cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, posenc_rope_pairs(5), cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), 1, d) ==
        POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), -d, sin.data(), d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, x.data(), -d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), -1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), 1, d / 2) ==
        POSENC_ERR_INVALID);  // rows meet
  // tables that overlap the destination; a source partly over the destination
  CHECK(run(d, H, out.data(), d, sin.data(), d, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, out.data() + 3, 0, n, x.data(), d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, out.data() + 2, d, out.data(), 1, d) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_tables_f32_part(d, H, cos.data(), d, sin.data(), d, n, x.data(), d, d, out.data(), 1, d, d, 2,
                                    n + 1) == POSENC_ERR_INVALID);
  CHECK(out == before);
  // n == 0 checks d and pairs only; heads == 0 writes nothing
  CHECK(run(d, H, nullptr, d, nullptr, d, 0, nullptr, d, nullptr, 1, d) == POSENC_OK);
  CHECK(run(3, H, nullptr, d, nullptr, d, 0, nullptr, d, nullptr, 1, d) == POSENC_ERR_INVALID);
  CHECK(run(d, H, cos.data(), d, sin.data(), d, n, x.data(), d, out.data(), 0, d) == POSENC_OK);
  CHECK(out == before);
}
