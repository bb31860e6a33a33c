// The fused kernels (issue 3) on every path: out = fmaf(scale, x, pe) with pe the correctly rounded PE
// from MPFR (tests/support/reference.cpp), so each output has exactly one right bit pattern. Covers
// random tokens, strides wider than d, odd and tiny d, unaligned pointers, in-place add, POSENC_PAD,
// first > 0, the half-precision tables and embedding tables, learned positions, and row-range splits
// across threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"

namespace {

posenc_spec make(int64_t d, posenc_layout layout) {
  posenc_spec s = posenc_spec_default(d);
  s.layout = layout;
  return s;
}

// PE rows from MPFR for the given positions.
std::vector<float> pe_rows(const posenc_spec &s, const std::vector<int64_t> &pos) {
  std::vector<float> pe(pos.size() * s.d_model);
  for (size_t r = 0; r < pos.size(); ++r) ref::exact_row(s, pos[r], &pe[r * s.d_model]);
  return pe;
}

// Independent float32 -> bfloat16 / binary16 rounding (nearest-even), for the expected values.
uint16_t to_bf16(float f) {
  const uint32_t b = ref::bits(f);
  const uint32_t lsb = (b >> 16) & 1;
  return uint16_t((b + 0x7FFF + lsb) >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint16_t to_f16(float f) {  // in double arithmetic: scale to integer units of the half's ulp, round even
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (a < 0x1p-14) return uint16_t(sign | uint16_t(std::nearbyint(a * 0x1p24)));  // 0x400 is 2^-14 itself
  int e;
  std::frexp(a, &e);                                 // a in [2^(e-1), 2^e)
  double q = std::nearbyint(std::ldexp(a, 11 - e));  // 11 significant bits
  if (q == 2048.0) {
    q = 1024.0;
    ++e;
  }
  if (e - 1 + 15 >= 31) return uint16_t(sign | 0x7C00);
  return uint16_t(sign | uint16_t((e - 1 + 15) << 10) | uint16_t(q - 1024.0));
}
float from_f16(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return float((h & 0x8000) ? -v : v);
}

}  // namespace

TEST_CASE("posenc_embed_f32: gathered rows times scale plus PE, one rounding", "[fused]") {
  std::mt19937 rng(1);
  for (posenc_layout layout : {POSENC_INTERLEAVED, POSENC_SIN_COS_HALVES, POSENC_COS_SIN_HALVES})
    for (int64_t d : {1, 2, 3, 17, 64, 130, 512}) {
      const int64_t vocab = 97, ts = d + 5, os = d + 3, n = 70, first = 1000;
      std::vector<float> table(vocab * ts + 1);
      std::normal_distribution<float> g(0.0f, 1.0f);
      for (float &v : table) v = g(rng);
      std::vector<int32_t> tokens(n);
      for (auto &t : tokens) t = int32_t(rng() % vocab);
      const posenc_spec s = make(d, layout);
      const float scale = std::sqrt(float(d));
      std::vector<int64_t> pos(n);
      for (int64_t r = 0; r < n; ++r) pos[r] = first + r;
      const std::vector<float> pe = pe_rows(s, pos);
      for (posenc_isa isa : ref::paths())
        ref::on_path(isa, [&] {
          // unaligned: both the table and the output start one float past an aligned address
          std::vector<float> out(n * os + 2, -3.0f);
          REQUIRE(posenc_embed_f32(&s, table.data() + 1, vocab, ts, tokens.data(), scale, nullptr, first, n,
                                   out.data() + 1, os) == POSENC_OK);
          int64_t bad = 0;
          for (int64_t r = 0; r < n; ++r) {
            for (int64_t e = 0; e < d; ++e) {
              const float want = std::fmaf(scale, table[1 + tokens[r] * ts + e], pe[r * d + e]);
              bad += ref::bits(out[1 + r * os + e]) != ref::bits(want);
            }
            for (int64_t e = d; e < os && r + 1 < n; ++e) bad += out[1 + r * os + e] != -3.0f;  // the gap
          }
          bad += out[0] != -3.0f;
          INFO("path " << posenc_isa_name(isa) << " d " << d << " layout " << int(layout));
          CHECK(bad == 0);
        });
    }
}

TEST_CASE("posenc_add_f32 in place and out of place, explicit positions with padding", "[fused]") {
  std::mt19937 rng(2);
  for (int64_t d : {3, 64, 257}) {
    const posenc_spec s = make(d, POSENC_SIN_COS_HALVES);
    const int64_t n = 50;
    std::vector<int64_t> pos(n);
    for (int64_t r = 0; r < n; ++r) pos[r] = (r % 7 == 3) ? POSENC_PAD : int64_t(rng() % 100000) - 50000;
    const std::vector<float> pe = pe_rows(s, pos);
    std::vector<float> x(n * d);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (float &v : x) v = u(rng);
    const float scale = 0.5f;
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> out(n * d), inplace = x;
        REQUIRE(posenc_add_f32(&s, x.data(), d, scale, pos.data(), 0, n, out.data(), d) == POSENC_OK);
        REQUIRE(posenc_add_f32(&s, inplace.data(), d, scale, pos.data(), 0, n, inplace.data(), d) == POSENC_OK);
        int64_t bad = 0;
        for (int64_t k = 0; k < n * d; ++k) {
          const float want = std::fmaf(scale, x[k], pe[k]);
          bad += ref::bits(out[k]) != ref::bits(want);
          bad += ref::bits(inplace[k]) != ref::bits(want);
        }
        INFO("path " << posenc_isa_name(isa) << " d " << d);
        CHECK(bad == 0);
      });
  }
}

TEST_CASE("half-precision tables: nearest-even from the correctly rounded float, within 1 ulp", "[fused][half]") {
  for (int64_t d : {1, 6, 64, 99}) {
    const posenc_spec s = make(d, POSENC_INTERLEAVED);
    std::vector<int64_t> pos = {0, 1, 2, 100, 12345, 1000000, 2147483647, -99, POSENC_PAD};
    const std::vector<float> pe = pe_rows(s, pos);
    const int64_t n = int64_t(pos.size());
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<uint16_t> bf(n * d), hf(n * d);
        REQUIRE(posenc_rows_bf16(&s, pos.data(), n, bf.data(), d) == POSENC_OK);
        REQUIRE(posenc_rows_f16(&s, pos.data(), n, hf.data(), d) == POSENC_OK);
        int64_t bad = 0;
        for (int64_t k = 0; k < n * d; ++k) {
          bad += bf[k] != to_bf16(pe[k]);
          bad += hf[k] != to_f16(pe[k]);
          // within 1 ulp of the format: bf16 ulp <= 2^-7 |v|, f16 ulp <= 2^-10 |v| (floor 2^-24)
          CHECK(std::fabs(from_bf16(bf[k]) - pe[k]) <= std::ldexp(std::fabs(pe[k]), -7) + 1e-38f);
          CHECK(std::fabs(from_f16(hf[k]) - pe[k]) <= std::max(std::ldexp(std::fabs(pe[k]), -10), 0x1p-24f));
        }
        INFO("path " << posenc_isa_name(isa) << " d " << d);
        CHECK(bad == 0);
        std::vector<uint16_t> tb(3 * d), th(3 * d);  // the contiguous variants agree with the rows ones
        REQUIRE(posenc_table_bf16(&s, 0, 3, tb.data(), d) == POSENC_OK);
        REQUIRE(posenc_table_f16(&s, 0, 3, th.data(), d) == POSENC_OK);
        CHECK(std::memcmp(tb.data(), bf.data(), tb.size() * 2) == 0);
        CHECK(std::memcmp(th.data(), hf.data(), th.size() * 2) == 0);
      });
  }
}

TEST_CASE("posenc_embed_bf16 / _f16 read half-precision tables and write float32", "[fused][half]") {
  std::mt19937 rng(3);
  const int64_t d = 70, vocab = 50, n = 40;
  const posenc_spec s = make(d, POSENC_COS_SIN_HALVES);
  std::vector<uint16_t> tb(vocab * d), th(vocab * d);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t k = 0; k < vocab * d; ++k) {
    tb[k] = to_bf16(u(rng));
    th[k] = to_f16(u(rng) * ((k % 17 == 0) ? 1e-6f : 1.0f));  // some half subnormals
  }
  std::vector<int32_t> tokens(n);
  for (auto &t : tokens) t = int32_t(rng() % vocab);
  std::vector<int64_t> pos(n);
  for (int64_t r = 0; r < n; ++r) pos[r] = r % 9 == 0 ? POSENC_PAD : 3 * r;
  const std::vector<float> pe = pe_rows(s, pos);
  const float scale = 8.0f;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> ob(n * d), oh(n * d);
      REQUIRE(posenc_embed_bf16(&s, tb.data(), vocab, d, tokens.data(), scale, pos.data(), 0, n, ob.data(), d) ==
              POSENC_OK);
      REQUIRE(posenc_embed_f16(&s, th.data(), vocab, d, tokens.data(), scale, pos.data(), 0, n, oh.data(), d) ==
              POSENC_OK);
      int64_t bad = 0;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t e = 0; e < d; ++e) {
          const int64_t t = tokens[r] * d + e;
          bad += ref::bits(ob[r * d + e]) != ref::bits(std::fmaf(scale, from_bf16(tb[t]), pe[r * d + e]));
          bad += ref::bits(oh[r * d + e]) != ref::bits(std::fmaf(scale, from_f16(th[t]), pe[r * d + e]));
        }
      INFO("path " << posenc_isa_name(isa));
      CHECK(bad == 0);
    });
}

TEST_CASE("posenc_embed_learned_f32: learned position rows, POSENC_PAD adds zero", "[fused]") {
  std::mt19937 rng(4);
  for (int64_t d : {1, 5, 48, 100}) {
    const int64_t vocab = 30, rows = 64, n = 33;
    std::vector<float> table(vocab * d), ptab(rows * (d + 2));
    std::normal_distribution<float> g;
    for (float &v : table) v = g(rng);
    for (float &v : ptab) v = g(rng);
    std::vector<int32_t> tokens(n);
    std::vector<int64_t> pos(n);
    for (int64_t r = 0; r < n; ++r) {
      tokens[r] = int32_t(rng() % vocab);
      pos[r] = r == 7 ? POSENC_PAD : int64_t(rng() % rows);
    }
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> out(n * d), out2(n * d);
        REQUIRE(posenc_embed_learned_f32(d, table.data(), vocab, d, tokens.data(), 2.0f, ptab.data(), rows, d + 2,
                                         pos.data(), 0, n, out.data(), d) == POSENC_OK);
        int64_t bad = 0;
        for (int64_t r = 0; r < n; ++r)
          for (int64_t e = 0; e < d; ++e) {
            const float p = pos[r] == POSENC_PAD ? 0.0f : ptab[pos[r] * (d + 2) + e];
            bad += ref::bits(out[r * d + e]) != ref::bits(std::fmaf(2.0f, table[tokens[r] * d + e], p));
          }
        // contiguous positions from first = 10
        REQUIRE(posenc_embed_learned_f32(d, table.data(), vocab, d, tokens.data(), 1.0f, ptab.data(), rows, d + 2,
                                         nullptr, 10, n, out2.data(), d) == POSENC_OK);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t e = 0; e < d; ++e)
            bad += ref::bits(out2[r * d + e]) !=
                   ref::bits(std::fmaf(1.0f, table[tokens[r] * d + e], ptab[(10 + r) * (d + 2) + e]));
        INFO("path " << posenc_isa_name(isa) << " d " << d);
        CHECK(bad == 0);
        // a learned position outside [0, pos_rows) as the last row: refused, nothing written
        std::vector<int64_t> badpos = pos;
        badpos.back() = rows;
        std::vector<float> canary(n * d, 5.0f);
        CHECK(posenc_embed_learned_f32(d, table.data(), vocab, d, tokens.data(), 1.0f, ptab.data(), rows, d + 2,
                                       badpos.data(), 0, n, canary.data(), d) == POSENC_ERR_OUT_OF_RANGE);
        for (float v : canary) REQUIRE(v == 5.0f);
      });
  }
}

TEST_CASE("a bad token id, even the last, is refused before anything is written", "[fused]") {
  const posenc_spec s = posenc_spec_default(16);
  std::vector<float> table(10 * 16, 1.0f), out(4 * 16, 7.0f);
  for (int32_t badtok : {-1, 10, 2147483647}) {
    std::vector<int32_t> tokens = {1, 2, 3, badtok};
    CHECK(posenc_embed_f32(&s, table.data(), 10, 16, tokens.data(), 1.0f, nullptr, 0, 4, out.data(), 16) ==
          POSENC_ERR_OUT_OF_RANGE);
    for (float v : out) REQUIRE(v == 7.0f);
  }
}

TEST_CASE("row ranges split across two threads equal one call", "[fused][threads]") {
  std::mt19937 rng(5);
  const int64_t d = 256, vocab = 500, n = 301;
  std::vector<float> table(vocab * d);
  std::normal_distribution<float> g;
  for (float &v : table) v = g(rng);
  std::vector<int32_t> tokens(n);
  for (auto &t : tokens) t = int32_t(rng() % vocab);
  const posenc_spec s = posenc_spec_default(d);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> whole(n * d), split(n * d);
      REQUIRE(posenc_embed_f32(&s, table.data(), vocab, d, tokens.data(), 16.0f, nullptr, 77, n, whole.data(), d) ==
              POSENC_OK);
      const int64_t cut = 123;  // not a multiple of any block size
      posenc_status a = POSENC_ERR_NULL, b = POSENC_ERR_NULL;
      std::thread t1([&] {
        a = posenc_embed_f32(&s, table.data(), vocab, d, tokens.data(), 16.0f, nullptr, 77, cut, split.data(), d);
      });
      std::thread t2([&] {
        b = posenc_embed_f32(&s, table.data(), vocab, d, tokens.data() + cut, 16.0f, nullptr, 77 + cut, n - cut,
                             split.data() + cut * d, d);
      });
      t1.join();
      t2.join();
      CHECK(a == POSENC_OK);
      CHECK(b == POSENC_OK);
      CHECK(std::memcmp(whole.data(), split.data(), whole.size() * 4) == 0);
    });
}
