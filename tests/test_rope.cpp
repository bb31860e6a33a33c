// The RoPE suite (docs/contract.md section 4, posenc.h). The reference is MPFR: f_i = base^(-2i/r) (or the
// caller's doubles), the exact angle p * position_scale * f_i, and m cos, m sin of it rounded once to float32
// (mpfr_get_flt, nearest-even). The rotation is posenc.h's formula applied to those floats by
// support/rope.hpp, which shares no code with the library. Nothing expected is produced by the library:
//  - the cos/sin cache is correctly rounded on every path (default and explicit frequencies, attention
//    scales, position scales, random, adversarial and extreme positions, POSENC_PAD);
//  - rope_* and rope_qk_* in f32, bf16 and f16 equal the formula bit for bit, for both pairings, partial
//    rotary, GQA, [T,H,D], [H,T,D] and fused QKV layouts, explicit positions and first + t; every byte
//    outside the rotated r elements of each row keeps its value;
//  - any split of a call by tokens or heads, and rope_qk against rope on q then on k, give the same bytes;
//    NaN and infinities in x give the same bits on every path;
//  - golden digests: SHA-256 of MPFR's outputs for fixed calls, checked in, reproduced by every path;
//  - rope_copy_* (out of place): the formula on the source rows' values, the NaN rule, elements from r on
//    neither read nor written, PAD copying the r elements, the bytes of a copy rotated in place (source rows
//    that overlap, src == x), the rotation goldens from a separate source.
#include <mpfr.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/rope.hpp"
#include "support/rope_check.hpp"
#include "support/sha256.hpp"

using namespace rope_check;

namespace {

// Positions below 2^31 where p * |step| comes closest to a multiple of pi/2 (near-zeros of sin and cos):
// the continued-fraction convergents of step / (pi/2), one either side, and their negatives.
std::vector<int64_t> adversarial_positions(const Exact &ex, int64_t i) {
  Big w(64), x(64), a(64), pi(64);
  ex.step(i, w);
  std::vector<int64_t> out;
  if (mpfr_zero_p(w)) return out;
  const mpfr_prec_t prec = mpfr_get_prec(w) + 64;
  mpfr_set_prec(pi, prec);
  mpfr_set_prec(x, prec);
  mpfr_set_prec(a, prec);
  mpfr_const_pi(pi, MPFR_RNDN);
  mpfr_div(x, w, pi, MPFR_RNDN);
  mpfr_mul_2ui(x, x, 1, MPFR_RNDN);  // step / (pi/2)
  int64_t q_prev = 0, q = 1;
  mpfr_floor(a, x);
  for (int k = 0; k < 80; ++k) {
    mpfr_sub(x, x, a, MPFR_RNDN);
    if (mpfr_zero_p(x)) break;
    mpfr_ui_div(x, 1, x, MPFR_RNDN);
    mpfr_floor(a, x);
    if (mpfr_cmp_d(a, 4e9) > 0) break;
    const int64_t qn = int64_t(mpfr_get_d(a, MPFR_RNDN)) * q + q_prev;
    if (qn >= k2p31 - 2) break;
    q_prev = q;
    q = qn;
    for (int64_t p : {q - 1, q, q + 1})
      if (p > 0) {
        out.push_back(p);
        out.push_back(-p);
      }
  }
  return out;
}

// ---- (a) the cache ----------------------------------------------------------------------------------

const float kCanary = -1234.5f;

// rope_cache_f32 for the positions (explicit, or first + t when `implicit`), in vLLM's layout (one buffer,
// sin right after cos, both strides r) or in two canary-filled buffers with gaps; returns cos and sin as
// h + h floats per row, after checking that the gaps kept their canary.
std::vector<float> library_cache(const Rope &rope, const std::vector<int64_t> &pos, bool implicit, bool vllm) {
  const posenc_rope r = rope.get();
  const int64_t n = int64_t(pos.size());
  const auto write = [&](float *cos_out, int64_t cs, float *sin_out, int64_t ss) {
    return posenc_rope_cache_f32(&r, implicit ? nullptr : pos.data(), implicit ? pos[0] : 0, n, cos_out, cs, sin_out,
                                 ss);
  };
  return cache_between_canaries(rope.h(), n, vllm, kCanary, write);
}

// Every path, both cache layouts (and first + t for runs), against MPFR. `only_pair` >= 0 compares that
// pair alone (adversarial positions of one pair).
void check_cache(const Rope &rope, Exact &ex, const std::vector<int64_t> &pos, int64_t only_pair = -1) {
  const int64_t h = rope.h(), n = int64_t(pos.size());
  std::vector<float> want(size_t(n * 2 * h), 0.0f);
  for (int64_t t = 0; t < n; ++t) {
    if (only_pair >= 0) {
      if (pos[size_t(t)] != POSENC_PAD)
        ex.pair(only_pair, pos[size_t(t)], want[size_t(t * 2 * h + only_pair)],
                want[size_t(t * 2 * h + h + only_pair)]);
    } else {
      const std::vector<float> &row = ex.row(pos[size_t(t)]);
      std::copy(row.begin(), row.end(), want.begin() + t * 2 * h);
    }
  }
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (int variant = 0; variant < (is_run(pos) ? 3 : 2); ++variant) {
        const std::vector<float> got = library_cache(rope, pos, variant == 2, variant == 0);
        int64_t bad = 0;
        for (int64_t t = 0; t < n; ++t)
          for (int64_t e = 0; e < 2 * h; ++e) {
            if (only_pair >= 0 && e % h != only_pair) continue;
            const size_t k = size_t(t * 2 * h + e);
            if (ref::bits(got[k]) == ref::bits(want[k])) continue;
            if (++bad <= 5)
              UNSCOPED_INFO((e < h ? "cos" : "sin") << " of pair " << e % h << " at position " << pos[size_t(t)]
                                                    << ": got " << got[k] << " want " << want[k]);
          }
        INFO(rope.name << " on " << posenc_isa_name(isa) << (variant == 0 ? ", vLLM layout" : ", two buffers")
                       << (variant == 2 ? ", first + t" : ", explicit positions") << ": " << bad
                       << " values not correctly rounded");
        CHECK(bad == 0);
      }
    });
}

std::vector<Rope> cache_specs() {
  return {
      make_rope("default r=64 base 1e4", 64, POSENC_ROPE_HALVES, 1e4),
      make_rope("default r=128 base 5e5", 128, POSENC_ROPE_HALVES, 5e5),
      make_rope("default r=96 base 1e4 interleaved", 96, POSENC_ROPE_INTERLEAVED, 1e4),
      make_rope("r=128 base 5e5, m 1.369 (YaRN-like)", 128, POSENC_ROPE_HALVES, 5e5, 1.0, 1.369),
      make_rope("r=64 base 1e4, m 0.7, position_scale 0.25", 64, POSENC_ROPE_INTERLEAVED, 1e4, 0.25, 0.7),
      make_rope("r=32 base 5e5, m 3, position_scale -1.5", 32, POSENC_ROPE_HALVES, 5e5, -1.5, 3.0),
      make_rope("r=48 base 1e4, m 1e-3, position_scale 1/3", 48, POSENC_ROPE_HALVES, 1e4, 1.0 / 3.0, 1e-3),
      make_rope("r=2 base 1e4 (one pair)", 2, POSENC_ROPE_HALVES, 1e4),
      make_rope("explicit odd frequencies r=40", 40, POSENC_ROPE_HALVES, 1e4, 1.0, 1.0, odd_frequencies(20, 1)),
      make_rope("explicit odd frequencies r=30, m 2^-64, scale 0.75", 30, POSENC_ROPE_INTERLEAVED, 1e4, 0.75, 0x1p-64,
                odd_frequencies(15, 2)),
      make_rope("explicit odd frequencies r=24, m 2^64", 24, POSENC_ROPE_HALVES, 1e4, 1.0, 0x1p64,
                odd_frequencies(12, 3)),
      make_rope("base 2, r=16, m 1.369", 16, POSENC_ROPE_HALVES, 2.0, 1.0, 1.369),
  };
}

}  // namespace

TEST_CASE("the reference itself: within a float32 ulp of libm's double cos and sin at small angles", "[rope][ref]") {
  // Guards the goldens and every comparison below against a wrong reference (an exponent's sign, m applied
  // twice, halves swapped): the double evaluation is far more accurate than a float32 ulp here.
  for (const Rope &rope : {make_rope("", 64, POSENC_ROPE_HALVES, 1e4, 1.0, 1.369),
                           make_rope("", 10, POSENC_ROPE_INTERLEAVED, 5e5, -0.5, 0.7, {}),
                           make_rope("", 6, POSENC_ROPE_HALVES, 1e4, 2.0, 3.0, {0.5, -1.25, 1e-3})}) {
    Exact ex(rope);
    const int64_t h = rope.h();
    int64_t bad = 0;
    for (int64_t p = -50; p <= 50; ++p) {
      const std::vector<float> &row = ex.row(p);
      for (int64_t i = 0; i < h; ++i) {
        const double f = rope.freq.empty() ? std::pow(rope.r.base, -2.0 * double(i) / double(rope.r.rotary_dim))
                                           : rope.freq[size_t(i)];
        const double a = double(p) * rope.r.position_scale * f, m = rope.r.attention_scale;
        const double c = m * std::cos(a), s = m * std::sin(a);
        bad += std::fabs(row[size_t(i)] - c) > std::ldexp(std::fabs(c), -23) + 1e-30;
        bad += std::fabs(row[size_t(h + i)] - s) > std::ldexp(std::fabs(s), -23) + 1e-30;
      }
    }
    CHECK(bad == 0);
  }
  // and the rotation: pair 0 (7, 5) a quarter turn with m = 2 gives (-10, 14); pair 1 (-3, 1) no turn, m = 2
  float row[4] = {7.0f, -3.0f, 5.0f, 1.0f};
  const float cos[2] = {0.0f, 2.0f}, sin[2] = {2.0f, 0.0f};
  ref::rotate_row(Format::kF32, POSENC_ROPE_HALVES, 2, cos, sin, row);
  CHECK((row[0] == -10.0f && row[1] == -6.0f && row[2] == 14.0f && row[3] == 2.0f));
  float pairs[4] = {7.0f, 5.0f, -3.0f, 1.0f};
  ref::rotate_row(Format::kF32, POSENC_ROPE_INTERLEAVED, 2, cos, sin, pairs);
  CHECK((pairs[0] == -10.0f && pairs[1] == 14.0f && pairs[2] == -6.0f && pairs[3] == 2.0f));
}

TEST_CASE("cache: correctly rounded m cos and m sin on every path, random and extreme positions", "[rope][cache]") {
  uint64_t seed = 15;
  for (const Rope &rope : cache_specs()) {
    Exact ex(rope);
    std::vector<int64_t> scattered = {
        0, 1, -1, k2p31 - 1, -(k2p31 - 1), POSENC_PAD, 4096, 131072, 1 << 20, (1 << 24) + 1, 0, POSENC_PAD, 7};
    for (int k = 0; k < 40; ++k) scattered.push_back(uniform_position(seed));
    check_cache(rope, ex, scattered);
    check_cache(rope, ex, run_of(-5, 70));              // across zero, past one 65-row block
    check_cache(rope, ex, run_of(k2p31 - 1 - 69, 70));  // ending at the largest position
    check_cache(rope, ex, run_of(-(k2p31 - 1), 3));
  }
}

TEST_CASE("cache: adversarial positions, where p f_i is closest to a multiple of pi/2", "[rope][cache]") {
  for (const Rope &rope : cache_specs()) {
    Exact ex(rope);
    const int64_t h = rope.h();
    int64_t tried = 0;
    for (int64_t i : {int64_t(0), int64_t(1), h / 2, h - 1, int64_t(9)}) {
      if (i >= h) continue;
      const std::vector<int64_t> pos = adversarial_positions(ex, i);
      if (pos.empty()) continue;
      tried += int64_t(pos.size());
      INFO(rope.name << " pair " << i);
      check_cache(rope, ex, pos, i);
    }
    CHECK(tried > 20);
  }
}

TEST_CASE("cache: zero angles give +0 sin and m cos; POSENC_PAD rows are +0.0", "[rope][cache]") {
  // position 0, position_scale 0 and a zero frequency: sin exactly +0 even for a negative scale or frequency
  std::vector<double> f = {0.0, -0.0, -2.0, 1.0};
  for (const Rope &rope : {make_rope("negative scale", 8, POSENC_ROPE_HALVES, 1e4, -3.0, 1.369, f),
                           make_rope("scale 0", 8, POSENC_ROPE_HALVES, 1e4, 0.0, 0.7),
                           make_rope("scale -0", 8, POSENC_ROPE_INTERLEAVED, 1e4, -0.0, 1.0)}) {
    Exact ex(rope);
    check_cache(rope, ex, {0, 5, -5, POSENC_PAD, k2p31 - 1});
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        const std::vector<float> got = library_cache(rope, {0, POSENC_PAD}, false, false);
        const float m = float(rope.r.attention_scale);
        for (int64_t i = 0; i < 4; ++i) {
          INFO(rope.name << " pair " << i << " on " << posenc_isa_name(isa));
          CHECK(ref::bits(got[size_t(i)]) == ref::bits(m));
          CHECK(ref::bits(got[size_t(4 + i)]) == 0u);
          CHECK(ref::bits(got[size_t(8 + i)]) == 0u);
          CHECK(ref::bits(got[size_t(12 + i)]) == 0u);
        }
      });
  }
}

// ---- (b) the rotation -------------------------------------------------------------------------------

namespace {

std::vector<Rotation> rotations(int64_t r, int64_t tail) {
  const int64_t d = r + tail;
  std::vector<Rotation> v;
  {  // [T,H,D], 70 tokens from first + t
    Rotation c{"[T,H,D] H=4, first + t = 1000, 70 tokens", 0, thd(4, d), {}, false, false, 70, 1000, {}};
    c.elements = end_of(c.q, c.n, d) + 3;
    v.push_back(c);
  }
  {  // [H,T,D], packed sequences with repeats and padding
    Rotation c{"[H,T,D] H=3, packed sequences", 0, htd(3, 67, d, 5, 2), {}, false, false, 67, 0, packed(9, 67)};
    c.elements = end_of(c.q, c.n, d) + 1;
    v.push_back(c);
  }
  {  // token stride with a gap, scattered positions far apart, negative ones, the extremes
    Rotation c{"[T,H,D] H=2, gaps, scattered",
               0,
               thd(2, d, 7, 1),
               {},
               false,
               false,
               9,
               0,
               {k2p31 - 1, -(k2p31 - 1), 123456789, -5, 0, POSENC_PAD, 131072, 1 << 20, -77}};
    c.elements = end_of(c.q, c.n, d) + 2;
    v.push_back(c);
  }
  {  // a decode batch: one step for every sequence of a batch, and a padded slot
    Rotation c{"decode batch at 77777", 0, thd(5, d), {}, false, false, 9, 0, std::vector<int64_t>(9, 77777)};
    c.positions[4] = POSENC_PAD;
    c.elements = end_of(c.q, c.n, d);
    v.push_back(c);
  }
  {  // one token, one head
    Rotation c{"one row at -2^31 + 1", 0, thd(1, d), {}, false, false, 1, -(k2p31 - 1), {}};
    c.elements = d;
    v.push_back(c);
  }
  {  // GQA: 32 q heads, 8 k heads, separate tensors in one buffer, decode steps
    Rotation c{"qk GQA 32/8", 0, thd(32, d), {}, true, false, 3, 0, {4095, 4096, POSENC_PAD}};
    c.k = thd(8, d, 0, end_of(c.q, c.n, d) + 1);
    c.elements = end_of(c.k, c.n, d);
    v.push_back(c);
  }
  {  // fused QKV: q = qkv, k = qkv + Hq*D, token stride (Hq + 2 Hk) D; the V part stays untouched
    const int64_t hq = 4, hk = 2, ts = (hq + 2 * hk) * d;
    // a table, laid out by hand
    // clang-format off
    Rotation c{"qk fused QKV 4/2, first + t = -35", 0, Tensor{hq, ts, d, 0}, Tensor{hk, ts, d, hq * d},
               true, false, 70, -35, {}};
    // clang-format on
    c.elements = 70 * ts;
    v.push_back(c);
  }
  {  // GPT-NeoX's query_key_value: [T, H, 3, D], q and k of each head side by side with one token stride
    const int64_t heads = 3, ts = 3 * heads * d;
    // a table, laid out by hand
    // clang-format off
    Rotation c{"qk GPT-NeoX per-head QKV [T,H,3,D]", 0, Tensor{heads, ts, 3 * d, 0}, Tensor{heads, ts, 3 * d, d},
               true, false, 67, 0, packed(12, 67)};
    // clang-format on
    c.elements = 67 * ts;
    v.push_back(c);
  }
  {  // q [H,T,D] and k [T,H,D]: different strides in one call
    Rotation c{"qk q [H,T,D], k [T,H,D], packed", 0, htd(3, 66, d), {}, true, false, 66, 0, packed(4, 66)};
    c.k = thd(2, d, 1, end_of(c.q, c.n, d));
    c.elements = end_of(c.k, c.n, d);
    v.push_back(c);
  }
  {  // k NULL with k_heads 0
    Rotation c{"qk with k NULL", 0, thd(3, d), Tensor{0, 0, 0, 0}, true, true, 5, 31, {}};
    c.elements = end_of(c.q, c.n, d);
    v.push_back(c);
  }
  return v;
}

}  // namespace

TEST_CASE("rotation: every format, pairing and layout equals posenc.h's formula on MPFR's cos/sin", "[rope]") {
  const Rope specs[] = {
      make_rope("default r=128 base 5e5 halves", 128, POSENC_ROPE_HALVES, 5e5),
      make_rope("r=64 base 1e4 interleaved, m 1.369, partial (tail 16)", 64, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 1.369),
      make_rope("r=96 base 1e4 halves, position_scale 0.25, m 0.7, odd tail 7", 96, POSENC_ROPE_HALVES, 1e4, 0.25, 0.7),
      make_rope("explicit r=40 interleaved, m 3", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 3.0, odd_frequencies(20, 7)),
      make_rope("r=2 halves, odd tail 1", 2, POSENC_ROPE_HALVES, 1e4),
      make_rope("r=6 interleaved", 6, POSENC_ROPE_INTERLEAVED, 10.0),
      // pair counts that leave a partial vector after whole ones on every path (h = 50, 11, 18, 20)
      make_rope("r=100 halves, tail 2", 100, POSENC_ROPE_HALVES, 1e4),
      make_rope("r=22 interleaved, tail 3", 22, POSENC_ROPE_INTERLEAVED, 5e5),
      make_rope("r=36 halves, m 0.7", 36, POSENC_ROPE_HALVES, 1e4, 1.0, 0.7),
      make_rope("explicit r=40 halves", 40, POSENC_ROPE_HALVES, 1e4, 0.5, 1.0, odd_frequencies(20, 8)),
  };
  const int64_t tails[] = {0, 16, 7, 0, 1, 0, 2, 3, 0, 5};
  uint64_t seed = 100;
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; ++s) {
    Exact ex(specs[s]);
    for (const Rotation &c : rotations(specs[s].r.rotary_dim, tails[s])) check_rotation(specs[s], ex, c, seed++);
  }
}

TEST_CASE("rotation: partial rotary leaves the rest of each head row alone; PAD tokens are untouched", "[rope]") {
  // The comparison of whole buffers above covers this; here it is explicit, with a recognisable tail.
  const Rope rope = make_rope("r=8 halves", 8, POSENC_ROPE_HALVES, 1e4);
  const posenc_rope r = rope.get();
  const int64_t d = 13, heads = 3, n = 4;
  const std::vector<int64_t> pos = {5, POSENC_PAD, 6, 7};
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> x(size_t(n * heads * d));
      for (size_t e = 0; e < x.size(); ++e) x[e] = float(e % 7) + 0.5f;
      const std::vector<float> before = x;
      REQUIRE(posenc_rope_f32(&r, pos.data(), 0, n, x.data(), heads, heads * d, d) == POSENC_OK);
      int64_t changed_tail = 0, changed_pad = 0, changed_rot = 0;
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < heads; ++j)
          for (int64_t e = 0; e < d; ++e) {
            const size_t k = size_t(t * heads * d + j * d + e);
            const bool changed = ref::bits(x[k]) != ref::bits(before[k]);
            if (e >= 8)
              changed_tail += changed;
            else if (pos[size_t(t)] == POSENC_PAD)
              changed_pad += changed;
            else
              changed_rot += changed;
          }
      INFO("path " << posenc_isa_name(isa));
      CHECK(changed_tail == 0);
      CHECK(changed_pad == 0);
      CHECK(changed_rot > 0);
    });
}

TEST_CASE("bf16 and f16 round once, from the double: pairs where rounding through float32 would differ", "[rope]") {
  // Random pairs (x, y) until a hundred whose rotated double, rounded to float32 first, would land on a
  // midpoint of the 16-bit format and so round to the wrong neighbour (about one pair in 2^15). Each is
  // rotated at its own position; the library must give the direct rounding (posenc.h), on every path.
  const Rope rope = make_rope("r=2", 2, POSENC_ROPE_HALVES, 1e4, 1.0, 1.369);
  Exact ex(rope);
  uint64_t seed = 4242;
  for (Format f : {Format::kBF16, Format::kF16}) {
    std::vector<int64_t> pos;
    std::vector<uint16_t> rows;  // (x, y) per token
    const auto narrow = [f](double v) {
      return f == Format::kBF16 ? ref::narrow_bf16_from_double(v) : ref::narrow_f16_from_double(v);
    };
    for (int64_t p = 1; p < 200 && pos.size() < 100; ++p) {
      const std::vector<float> &cs = ex.row(p);
      for (int k = 0; k < 20000 && pos.size() < 100; ++k) {
        const uint64_t r = splitmix(seed);
        // sign, a mantissa, and an exponent near 1 (no overflow, no subnormal results)
        const uint16_t x = f == Format::kBF16 ? uint16_t((r & 0x807F) | ((0x3C00 + (r >> 16) % 0x400) & 0x7F80))
                                              : uint16_t((r & 0x83FF) | ((0x3000 + (r >> 16) % 0x1800) & 0x7C00));
        const uint16_t y = f == Format::kBF16
                               ? uint16_t(((r >> 32) & 0x807F) | ((0x3C00 + (r >> 48) % 0x400) & 0x7F80))
                               : uint16_t(((r >> 32) & 0x83FF) | ((0x3000 + (r >> 48) % 0x1800) & 0x7C00));
        const float xv = f == Format::kBF16 ? ref::widen_bf16(x) : ref::widen_f16(x);
        const float yv = f == Format::kBF16 ? ref::widen_bf16(y) : ref::widen_f16(y);
        const ref::Rotated rr = ref::rotate_exact(xv, yv, cs[0], cs[1]);
        if (narrow(rr.x) == narrow(float(rr.x)) && narrow(rr.y) == narrow(float(rr.y))) continue;
        pos.push_back(p);
        rows.push_back(x);
        rows.push_back(y);
      }
    }
    INFO(format_name(f) << ": " << pos.size() << " pairs found");
    REQUIRE(pos.size() >= 20);
    const int64_t n = int64_t(pos.size());
    std::vector<unsigned char> in(rows.size() * 2);
    std::memcpy(in.data(), rows.data(), in.size());
    const Rotation c{"double rounding", 2 * n, Tensor{1, 2, 2, 0}, {}, false, false, n, 0, pos};
    const std::vector<unsigned char> want = expected(rope, ex, c, f, in);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<unsigned char> got = in;
        REQUIRE(run(rope, c, f, got) == POSENC_OK);
        const int64_t e = first_difference(got, want, 2);
        INFO("path " << posenc_isa_name(isa));
        if (e >= 0)
          FAIL_CHECK("element " << e << " at position " << pos[size_t(e / 2)] << ": got " << element_text(f, got, e)
                                << ", want " << element_text(f, want, e) << ", input " << element_text(f, in, e));
      });
  }
}

// ---- (c) paths, splits, qk, NaN ---------------------------------------------------------------------

TEST_CASE("splits: token ranges and head ranges of a call give the bytes of the whole call", "[rope]") {
  const Rope specs[] = {
      make_rope("r=64 halves", 64, POSENC_ROPE_HALVES, 1e4, 1.0, 1.369),
      make_rope("r=40 interleaved explicit", 40, POSENC_ROPE_INTERLEAVED, 1e4, 0.5, 1.0, odd_frequencies(20, 11))};
  uint64_t seed = 5;
  for (const Rope &rope : specs) {
    const posenc_rope r = rope.get();
    const int64_t d = r.rotary_dim + 3, heads = 5, n = 140;
    const std::vector<int64_t> pos = packed(21, n);
    for (Format f : kFormats)
      for (bool explicit_positions : {false, true})
        for (posenc_isa isa : ref::paths())
          ref::on_path(isa, [&] {
            const size_t es = ref::format_size(f);
            const Rotation whole_call{"whole", n * heads * d, thd(heads, d),
                                      {},      false,         false,
                                      n,       -60,           explicit_positions ? pos : std::vector<int64_t>{}};
            std::vector<unsigned char> in(size_t(n * heads * d) * es);
            fill(f, in, seed++, false);
            std::vector<unsigned char> whole = in;
            REQUIRE(run(rope, whole_call, f, whole) == POSENC_OK);
            INFO(rope.name << " " << format_name(f) << (explicit_positions ? " explicit" : " first + t") << " on "
                           << posenc_isa_name(isa));
            // tokens [a, b): the rows from row a on, positions from a on
            for (int split = 0; split < 5; ++split) {
              const int64_t a = int64_t(splitmix(seed) % uint64_t(n)),
                            b = a + 1 + int64_t(splitmix(seed) % uint64_t(n - a));
              std::vector<unsigned char> part = in;
              Rotation c = whole_call;
              c.n = b - a;
              c.first = -60 + a;
              c.q.offset = a * heads * d;
              if (explicit_positions) c.positions.assign(pos.begin() + a, pos.begin() + b);
              // the rest of the buffer keeps the input, the range gets the whole call's bytes
              REQUIRE(run(rope, c, f, part) == POSENC_OK);
              const size_t lo = size_t(a * heads * d) * es, hi = size_t(b * heads * d) * es;
              CHECK(std::memcmp(part.data() + lo, whole.data() + lo, hi - lo) == 0);
              CHECK(std::memcmp(part.data(), in.data(), lo) == 0);
              CHECK(std::memcmp(part.data() + hi, in.data() + hi, part.size() - hi) == 0);
            }
            // heads [j0, j1), then every token one call at a time
            std::vector<unsigned char> pieces = in;
            for (int64_t j0 = 0; j0 < heads; j0 += 2) {
              Rotation c = whole_call;
              c.q.heads = std::min<int64_t>(2, heads - j0);
              c.q.offset = j0 * d;
              REQUIRE(run(rope, c, f, pieces) == POSENC_OK);
            }
            CHECK(first_difference(pieces, whole, es) == -1);
            std::vector<unsigned char> tokens = in;
            for (int64_t t = 0; t < n; ++t) {
              Rotation c = whole_call;
              c.n = 1;
              c.first = -60 + t;
              c.q.offset = t * heads * d;
              if (explicit_positions) c.positions = {pos[size_t(t)]};
              REQUIRE(run(rope, c, f, tokens) == POSENC_OK);
            }
            CHECK(first_difference(tokens, whole, es) == -1);
          });
  }
}

TEST_CASE("rope_qk equals rope on q then rope on k; explicit runs equal first + t", "[rope]") {
  const Rope rope = make_rope("r=32 interleaved, partial", 32, POSENC_ROPE_INTERLEAVED, 5e5, 1.0, 1.2);
  const int64_t d = 40, hq = 6, hk = 2, n = 70, ts = (hq + 2 * hk) * d;
  uint64_t seed = 77;
  for (Format f : kFormats)
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        const size_t es = ref::format_size(f);
        std::vector<unsigned char> in(size_t(n * ts) * es);
        fill(f, in, seed++, false);
        const Rotation fused{"fused", n * ts, Tensor{hq, ts, d, 0}, Tensor{hk, ts, d, hq * d}, true, false, n, 500, {}};
        std::vector<unsigned char> one = in, two = in, expl = in;
        REQUIRE(run(rope, fused, f, one) == POSENC_OK);
        Rotation q = fused, k = fused;
        q.qk = k.qk = false;
        q.k = k.k = Tensor{};
        k.q = fused.k;
        REQUIRE(run(rope, q, f, two) == POSENC_OK);
        REQUIRE(run(rope, k, f, two) == POSENC_OK);
        INFO(format_name(f) << " on " << posenc_isa_name(isa));
        CHECK(first_difference(one, two, es) == -1);
        Rotation e = fused;
        e.positions = run_of(500, n);
        REQUIRE(run(rope, e, f, expl) == POSENC_OK);
        CHECK(first_difference(expl, one, es) == -1);
      });
}

TEST_CASE("explicit frequencies: the values identify the spec, not the pointer", "[rope]") {
  // The same array changed in place between calls (dynamic NTK at each decode step) must give the new
  // values; equal values in another array must give the same bytes.
  std::vector<double> f = odd_frequencies(8, 31), g(8);
  posenc_rope r = posenc_rope_default(16);
  r.freq = f.data();
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (int step = 0; step < 4; ++step) {
        for (size_t i = 0; i < f.size(); ++i) f[i] = f[i] * 1.0001 + double(step) * 1e-3;
        g = f;
        const Rope fresh = make_rope("step", 16, POSENC_ROPE_HALVES, 1e4, 1.0, 1.0, g);
        Exact ex(fresh);
        std::vector<float> c1(8), s1(8);
        const int64_t p = 1000 + step;
        REQUIRE(posenc_rope_cache_f32(&r, &p, 0, 1, c1.data(), 8, s1.data(), 8) == POSENC_OK);
        const std::vector<float> &want = ex.row(p);
        INFO("step " << step << " on " << posenc_isa_name(isa));
        for (int64_t i = 0; i < 8; ++i) {
          CHECK(ref::bits(c1[size_t(i)]) == ref::bits(want[size_t(i)]));
          CHECK(ref::bits(s1[size_t(i)]) == ref::bits(want[size_t(8 + i)]));
        }
      }
    });
}

namespace {

// posenc.h's NaN rule (posenc_add_f32, "every fused call below"), for the two outputs of a pair (x, y): the
// first NaN among x and y, quieted; otherwise, for an invalid operation (inf * 0, inf - inf), the default
// +qNaN. The float32 NaN narrowed to bfloat16 and binary16 keeps sign and the top of the payload. Only the
// elements whose formula value is NaN are read.
std::vector<unsigned char> nan_results(const Rope &rope, const Rotation &c, Format f,
                                       const std::vector<unsigned char> &in) {
  std::vector<unsigned char> out = in;
  const int64_t h = rope.h();
  const size_t es = ref::format_size(f);
  for (int64_t t = 0; t < c.n; ++t) {
    if (position(c, t) == POSENC_PAD) {  // untouched, or (rope_copy_*) the source's values, NaN as they are
      for (int64_t j = 0; c.copy && j < c.q.heads; ++j)
        std::memcpy(&out[size_t(row_at(c.q, t, j)) * es], &in[size_t(source_row_at(c, c.q, t, j)) * es],
                    es * size_t(2 * h));
      continue;
    }
    for (const Tensor *x : {&c.q, &c.k})
      for (int64_t j = 0; j < x->heads; ++j)
        for (int64_t i = 0; i < h; ++i) {
          // read from the source row (rope_copy_*) or the row itself, written to the row
          const int64_t row = row_at(*x, t, j), from = source_row_at(c, *x, t, j);
          const int64_t ox = rope.r.pairs == POSENC_ROPE_HALVES ? i : 2 * i;
          const int64_t oy = rope.r.pairs == POSENC_ROPE_HALVES ? i + h : 2 * i + 1;
          const int64_t ix = row + ox, iy = row + oy;
          const float xv = ref::load(f, in.data(), from + ox), yv = ref::load(f, in.data(), from + oy);
          const uint32_t b = std::isnan(xv)   ? ref::bits_of_float(xv) | 0x00400000u
                             : std::isnan(yv) ? ref::bits_of_float(yv) | 0x00400000u
                                              : 0x7FC00000u;
          for (int64_t e : {ix, iy}) {
            if (f == Format::kF32) {
              std::memcpy(&out[size_t(e) * 4], &b, 4);
            } else {
              const uint16_t v =
                  f == Format::kBF16 ? uint16_t(b >> 16) : uint16_t((b >> 16 & 0x8000) | 0x7C00 | (b >> 13 & 0x3FF));
              std::memcpy(&out[size_t(e) * 2], &v, 2);
            }
          }
        }
  }
  return out;
}

// The call on every path: the first (scalar) against the formula, and where the formula is NaN, the NaN
// rule; the others against the first, bit for bit.
void check_nan_rule(const Rope &rope, Exact &ex, const Rotation &c, uint64_t &seed) {
  for (Format f : kFormats) {
    const size_t es = ref::format_size(f);
    std::vector<unsigned char> in(size_t(c.elements) * es);
    fill(f, in, seed++, true);
    const std::vector<unsigned char> formula = expected(rope, ex, c, f, in);
    const std::vector<unsigned char> nan_rule = nan_results(rope, c, f, in);
    std::vector<unsigned char> scalar;
    int64_t nans = 0;
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<unsigned char> got = in;
        REQUIRE(run(rope, c, f, got) == POSENC_OK);
        INFO(rope.name << ", " << c.name << ", " << format_name(f) << " on " << posenc_isa_name(isa));
        if (scalar.empty()) {
          int64_t bad = 0;
          for (int64_t e = 0; e < c.elements; ++e) {
            const float w = ref::load(f, formula.data(), e), g = ref::load(f, got.data(), e);
            if (std::isnan(w)) {
              ++nans;
              bad += !std::isnan(g) || std::memcmp(&got[size_t(e) * es], &nan_rule[size_t(e) * es], es) != 0;
            } else {
              bad += std::memcmp(&got[size_t(e) * es], &formula[size_t(e) * es], es) != 0;
            }
          }
          CHECK(bad == 0);
          scalar = got;
        } else {
          const int64_t e = first_difference(got, scalar, es);
          if (e >= 0)
            FAIL_CHECK("element " << e << ": " << element_text(f, got, e) << ", first path "
                                  << element_text(f, scalar, e) << ", input " << element_text(f, in, e));
        }
      });
    CHECK(nans > 10);
  }
}

}  // namespace

TEST_CASE("NaN and infinities in x: the same bits on every path, the formula where it is not NaN", "[rope][nan]") {
  const Rope specs[] = {make_rope("r=64 halves", 64, POSENC_ROPE_HALVES, 1e4),
                        make_rope("r=24 interleaved, m 1.369", 24, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 1.369)};
  uint64_t seed = 999;
  for (const Rope &rope : specs) {
    Exact ex(rope);
    const int64_t d = rope.r.rotary_dim + 5;
    // position 0: sin 0, so inf * 0 in the rotation (an invalid operation)
    Rotation c{"NaN inputs", 0, thd(3, d), {}, false, false, 70, 0, packed(3, 70)};
    c.positions[0] = 0;
    c.elements = end_of(c.q, c.n, d);
    check_nan_rule(rope, ex, c, seed);
    // rope_copy_*: the same rule on the source's values, which the call does not change
    Rotation cp = c;
    cp.name = "NaN inputs, rope_copy_* from [H,T,D]";
    cp.copy = true;
    cp.src = htd(3, 70, d, 1, c.elements);
    cp.elements = end_of(cp.src, cp.n, d);
    check_nan_rule(rope, ex, cp, seed);
  }
}

// ---- (d) golden digests -----------------------------------------------------------------------------

namespace {

struct Golden {
  const char *name;
  Rope rope;
  bool cache;  // rope_cache_f32 (vLLM layout), else rope_qk in `format`
  Format format;
  int64_t n, first;
  std::vector<int64_t> positions;
  const char *sha256;
};

// posenc_rope_init's proportional frequencies (test_rope_init checks each against MPFR): the first
// floor(p r / 2) pairs at base^(-2i/r), the others 0.
std::vector<double> proportional_frequencies(int64_t r, double base, double p) {
  posenc_rope_scaling s{};
  s.type = POSENC_ROPE_TYPE_PROPORTIONAL;
  s.partial_rotary_factor = p;
  std::vector<double> f(size_t(r / 2));
  posenc_rope rope;
  REQUIRE(posenc_rope_init(&rope, r, base, &s, f.data()) == POSENC_OK);
  return f;
}

// A posenc_rope_init scheme's frequencies and attention scale (test_rope_init checks each against MPFR).
struct Scheme {
  std::vector<double> freq;
  double attention;
};
Scheme scheme(int64_t r, double base, posenc_rope_scaling s) {
  Scheme out{std::vector<double>(size_t(r / 2)), 0.0};
  posenc_rope rope;
  REQUIRE(posenc_rope_init(&rope, r, base, &s, out.freq.data()) == POSENC_OK);
  out.attention = rope.attention_scale;
  return out;
}
posenc_rope_scaling vllm_scheme(posenc_rope_type t, double factor, int64_t original) {
  posenc_rope_scaling s{};
  s.type = t;
  s.factor = factor;
  s.original_max_positions = original;
  return s;
}
Rope scheme_rope(int64_t r, posenc_rope_pairs pairs, double base, const Scheme &sc) {
  return make_rope("", r, pairs, base, 1.0, sc.attention, sc.freq);
}

const std::vector<Golden> &goldens() {
  static const Scheme ntk = [] {  // vLLM's mixed NTK, b = 0.625, factor 8
    posenc_rope_scaling s = vllm_scheme(POSENC_ROPE_TYPE_NTK, 8.0, 0);
    s.mixed_b = 0.625;
    return scheme(128, 1e4, s);
  }();
  static const Scheme deepseek = [] {  // DeepSeek-V2 geometry, mscale alone (vLLM: 0.0707 ln 40 + 1)
    posenc_rope_scaling s = vllm_scheme(POSENC_ROPE_TYPE_DEEPSEEK_YARN, 40.0, 4096);
    s.mscale = 0.707;
    return scheme(64, 1e4, s);
  }();
  static const Scheme yarn_log = scheme(128, 208533496.0, vllm_scheme(POSENC_ROPE_TYPE_YARN_LOG, 16.0, 8192));
  static const Scheme theta = scheme(128, 208533496.0, vllm_scheme(POSENC_ROPE_TYPE_THETA_SCALE, 16.0, 8192));
  static const Scheme telechat = scheme(128, 1e6, vllm_scheme(POSENC_ROPE_TYPE_TELECHAT3, 4.0, 32768));
  static const Scheme v4 = [] {  // DeepSeek-V4's compressed layers as vLLM's dict gives them: mscale 0 both (1 / 1)
    posenc_rope_scaling s = vllm_scheme(POSENC_ROPE_TYPE_DEEPSEEK_YARN, 16.0, 65536);
    s.mscale = s.mscale_all_dim = 1.0;
    return scheme(64, 1.6e5, s);
  }();
  static const std::vector<Golden> g = {
      {"cache r=128 base 5e5, scattered and extreme positions",
       make_rope("", 128, POSENC_ROPE_HALVES, 5e5),
       true,
       Format::kF32,
       8,
       0,
       {0, 1, 4096, 131072, k2p31 - 1, -(k2p31 - 1), POSENC_PAD, 1234567},
       "3b15244a606cfe5e98ca2b8461ddb9bc74cf09c9284f279a07999586941b3722"},
      {"cache r=96 m 1.369 scale 0.25, positions -40..29",
       make_rope("", 96, POSENC_ROPE_HALVES, 1e4, 0.25, 1.369),
       true,
       Format::kF32,
       70,
       -40,
       {},
       "67ea95bcb8db282ae9fdd06dac21c08a193d62289c79ff410ce858943a90f520"},
      {"qk f32 halves r=64 fused QKV 4/2 d=72, first + t",
       make_rope("", 64, POSENC_ROPE_HALVES, 1e4),
       false,
       Format::kF32,
       66,
       1000,
       {},
       "1b86338b05beaef24b3b197048d7e380f827ea4e1ae56d3a224a634648758640"},
      {"qk bf16 interleaved r=40 explicit frequencies, m 0.7",
       make_rope("", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 0.7, odd_frequencies(20, 5)),
       false,
       Format::kBF16,
       5,
       0,
       {7, 7, POSENC_PAD, 2000000000, -3},
       "398cbf3d5453afab8633722afa3aa90fb98ea5369e3ffd7f137cf5c317dd7d2d"},
      {"qk f16 halves r=32 base 5e5 m 3, packed", make_rope("", 32, POSENC_ROPE_HALVES, 5e5, 1.0, 3.0), false,
       Format::kF16, 40, 0, packed(8, 40), "f8bd4ba0db04892d7a5c3bc6bb3364272ca7c50cc1854a4242db23a928f4282e"},
      {"qk bf16 halves r=64 proportional (Gemma 4's rule: 8 of 32 pairs), base 1e6",
       make_rope("", 64, POSENC_ROPE_HALVES, 1e6, 1.0, 1.0, proportional_frequencies(64, 1e6, 0.25)),
       false,
       Format::kBF16,
       6,
       0,
       {0, 1, 4095, 262143, 100000000, k2p31 - 1},
       "5874dec3b70e16b182eb360d35f9592146cc8939a5cb52d8dd7d9cf86dbd98a9"},
      {"qk f32 halves r=128 vLLM ntk mixed_b 0.625 factor 8",
       scheme_rope(128, POSENC_ROPE_HALVES, 1e4, ntk),
       false,
       Format::kF32,
       5,
       0,
       {0, 1, 32767, 1000000, k2p31 - 1},
       "f6dd77d5b5afcb4ca2bdea77d64430cf92aeeeae6a60adb5bf015355b726afc3"},
      {"qk bf16 interleaved r=64 vLLM deepseek_yarn factor 40, mscale 0.707 alone",
       scheme_rope(64, POSENC_ROPE_INTERLEAVED, 1e4, deepseek),
       false,
       Format::kBF16,
       5,
       0,
       {0, 5, 4096, 163840, 100000000},
       "a2e34a4bf45f7ee2fa80fe32bbabd72987409ea66de7a9027b3058eb55cd3a0e"},
      {"qk f32 halves r=128 Grok yarn_log base 208533496 factor 16",
       scheme_rope(128, POSENC_ROPE_HALVES, 208533496.0, yarn_log),
       false,
       Format::kF32,
       4,
       0,
       {0, 8191, 131071, 1 << 30},
       "2595c41564e9d2f77fcd2d1904ef0dddfa2c704c69823864bdc45d8c7fdb4687"},
      {"cache r=128 Grok theta_scale base 208533496 factor 16",
       scheme_rope(128, POSENC_ROPE_HALVES, 208533496.0, theta),
       true,
       Format::kF32,
       4,
       0,
       {0, 8191, 131071, 1 << 30},
       "96d545360d88d6a7c15431f172dc52007e81ba112b82be43fac48566df0ea40e"},
      {"qk f16 halves r=128 TeleChat3 factor 4 (attention 0.07 ln 4 + 1)",
       scheme_rope(128, POSENC_ROPE_HALVES, 1e6, telechat),
       false,
       Format::kF16,
       4,
       0,
       {0, 32767, 131071, 1 << 24},
       "9f3e3f5d747cc79fafa1edf6e100765e921d9bfa5a0944e3f612fe862cd9031d"},
      {"qk bf16 interleaved r=64 DeepSeek-V4 compress: yarn 16 from 65536, base 1.6e5, attention 1",
       scheme_rope(64, POSENC_ROPE_INTERLEAVED, 1.6e5, v4),
       false,
       Format::kBF16,
       6,
       0,
       {0, 1, 65535, 65536, 1048575, k2p31 - 1},
       "5b12a6c022e178e8f88d45ca55896ac109a3c4cdff053bcbc9661e0bd075a544"},
  };
  return g;
}

// The fused QKV layout of the rotation goldens: 4 q heads, 2 k heads, head_dim r + 8.
Rotation golden_rotation(const Golden &g) {
  const int64_t d = g.rope.r.rotary_dim + 8, ts = 8 * d;
  return Rotation{g.name, g.n * ts, Tensor{4, ts, d, 0}, Tensor{2, ts, d, 4 * d}, true, false,
                  g.n,    g.first,  g.positions};
}

std::vector<unsigned char> golden_input(const Golden &g) {
  std::vector<unsigned char> in(size_t(golden_rotation(g).elements) * ref::format_size(g.format));
  fill(g.format, in, 2026, false);
  return in;
}

}  // namespace

TEST_CASE("golden: the checked-in hashes are those of MPFR's values and posenc.h's formula", "[rope][golden]") {
  for (const Golden &g : goldens()) {
    Exact ex(g.rope);
    std::vector<unsigned char> want;
    if (g.cache) {
      std::vector<float> rows;
      for (int64_t t = 0; t < g.n; ++t) {
        const std::vector<float> &row = ex.row(g.positions.empty() ? g.first + t : g.positions[size_t(t)]);
        rows.insert(rows.end(), row.begin(), row.end());
      }
      want = as_bytes(rows);
    } else {
      want = expected(g.rope, ex, golden_rotation(g), g.format, golden_input(g));
    }
    INFO(g.name);
    CHECK(digest(want) == g.sha256);
  }
}

TEST_CASE("golden: every path of this build reproduces the hashes", "[rope][golden]") {
  every_path_reproduces(goldens(), [](const Golden &g) {
    if (!g.cache) return rotated(g.rope, golden_rotation(g), g.format, golden_input(g));
    const std::vector<int64_t> pos = g.positions.empty() ? run_of(g.first, g.n) : g.positions;
    return as_bytes(library_cache(g.rope, pos, g.positions.empty(), true));
  });
}

// ---- (e) out of place: rope_copy_* -------------------------------------------------------------------
// Each head row read from src and written rotated to x: the formula on the source's values (a POSENC_PAD
// token copies its r elements), every other byte of the buffer kept, the source itself unchanged; the bytes
// of a copy of src rotated in place; the goldens above.

namespace {

// Positions on `axes` axes, axis-major: axis 0 as given, axis 1 fixed, axis 2 consecutive, axis 3 fixed.
std::vector<int64_t> on_axes(std::vector<int64_t> p0, int axes) {
  const size_t n = p0.size();
  for (int a = 1; a < axes; ++a)
    for (size_t t = 0; t < n; ++t) p0.push_back(a == 2 ? 100 + int64_t(t) : 7 * a);
  return p0;
}

// Copy calls of one spec (rotary width r, head_dim r + tail, `axes` axes): q is the destination, src the
// rows read, in one buffer.
std::vector<Rotation> copy_rotations(int64_t r, int64_t tail, int axes) {
  const int64_t d = r + tail;
  std::vector<Rotation> v;
  const auto add = [&](Rotation c, Tensor src, int64_t elements) {
    c.copy = true;
    c.src = src;
    c.elements = elements;
    c.axes = axes;
    if (!c.positions.empty()) c.positions = on_axes(c.positions, axes);
    v.push_back(c);
  };
  {  // [T,H,D] from [T,H,D] with other strides, after it; first + t
    const Rotation c{
        "[T,H,D] from [T,H,D] elsewhere, first + t = 1000", 0, thd(4, d, 1), {}, false, false, 70, 1000, {}};
    const Tensor src = thd(4, d, 3, end_of(c.q, c.n, d) + 2);
    add(c, src, end_of(src, c.n, d) + 1);
  }
  {  // [T,H,D] from [H,T,D] before it; packed sequences with repeats and PAD
    const Tensor src = htd(3, 67, d, 5, 1);
    const Rotation c{"[T,H,D] from [H,T,D], packed",
                     0,
                     thd(3, d, 2, end_of(src, 67, d) + 3),
                     {},
                     false,
                     false,
                     67,
                     0,
                     packed(9, 67)};
    add(c, src, end_of(c.q, c.n, d));
  }
  {  // [H,T,D] with gaps from [T,H,D]; scattered, extreme, PAD
    const Rotation c{"[H,T,D] from [T,H,D], scattered",
                     0,
                     htd(2, 9, d, 4),
                     {},
                     false,
                     false,
                     9,
                     0,
                     {k2p31 - 1, -(k2p31 - 1), 123456789, -5, 0, POSENC_PAD, 131072, 1 << 20, -77}};
    const Tensor src = thd(2, d, 7, end_of(c.q, c.n, d));
    add(c, src, end_of(src, c.n, d) + 2);
  }
  {  // source rows that overlap: every head of a token reads one row (head stride 0); a decode batch
    // a table, laid out by hand
    // clang-format off
    Rotation c{"5 heads from one source row each (src head_stride 0), decode batch", 0, thd(5, d), {}, false, false,
               9, 0, std::vector<int64_t>(9, 77777)};
    // clang-format on
    c.positions[4] = POSENC_PAD;
    const Tensor src{0, d + 1, 0, end_of(c.q, c.n, d)};
    add(c, src, end_of(Tensor{1, d + 1, 0, src.offset}, c.n, d));
  }
  {  // source rows that overlap: tokens one element apart, heads three
    const Rotation c{
        "2 heads from rows one element apart (src token_stride 1)", 0, thd(2, d, 1), {}, false, false, 66, -35, {}};
    const Tensor src{0, 1, 3, end_of(c.q, c.n, d)};
    add(c, src, src.offset + 65 + 3 + d);
  }
  {  // in place: src == x with the same strides
    const Rotation c{"in place: src == x", 0, thd(3, d, 1, 2), {}, false, false, 70, 0, packed(5, 70)};
    add(c, c.q, end_of(c.q, c.n, d));
  }
  {  // one row
    const Rotation c{"one row at -2^31 + 1", 0, thd(1, d), {}, false, false, 1, -(k2p31 - 1), {}};
    add(c, Tensor{1, 0, 0, d}, 2 * d);
  }
  return v;
}

}  // namespace

TEST_CASE("copy: rope_copy_* equals posenc.h's formula on MPFR's cos/sin, read from the source rows", "[rope][copy]") {
  std::vector<Rope> specs = {
      make_rope("default r=128 base 5e5 halves", 128, POSENC_ROPE_HALVES, 5e5),
      make_rope("r=64 interleaved, m 1.369, partial (tail 16)", 64, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 1.369),
      make_rope("r=2 halves, odd tail 1", 2, POSENC_ROPE_HALVES, 1e4),
      make_rope("r=6 interleaved", 6, POSENC_ROPE_INTERLEAVED, 10.0),
      make_rope("r=130 halves, tail 3 (h = 65)", 130, POSENC_ROPE_HALVES, 1e4, 0.25, 0.7),
      make_rope("explicit r=40 interleaved, m 3", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 3.0, odd_frequencies(20, 7)),
      make_rope("3 axes r=48 halves (pair i on axis i % 3)", 48, POSENC_ROPE_HALVES, 1e4),
      make_rope("2 axes r=40 interleaved, m 1.369", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 1.369),
  };
  for (int64_t i = 0; i < 24; ++i) specs[6].axis.push_back(uint8_t(i % 3));
  specs[6].r.axes = 3;
  for (int64_t i = 0; i < 20; ++i) specs[7].axis.push_back(uint8_t(i < 10 ? 0 : 1));
  specs[7].r.axes = 2;
  const int64_t tails[] = {0, 16, 1, 0, 3, 0, 5, 2};
  uint64_t seed = 300;
  int64_t checked = 0;
  for (size_t s = 0; s < specs.size(); ++s) {
    Exact ex(specs[s]);
    for (const Rotation &c : copy_rotations(specs[s].r.rotary_dim, tails[s], specs[s].r.axes)) {
      check_rotation(specs[s], ex, c, seed++);
      ++checked;
    }
  }
  CHECK(checked == 56);
}

TEST_CASE("copy: elements from r on are neither read nor written; PAD copies the token's r elements", "[rope][copy]") {
  // The destination starts as a sentinel; the source's elements past r hold values the call must not carry over.
  for (posenc_rope_pairs pairs : {POSENC_ROPE_HALVES, POSENC_ROPE_INTERLEAVED}) {
    Rope rope = make_rope("r=8", 8, pairs, 1e4);
    const posenc_rope r = rope.get();
    const int64_t d = 13, heads = 3, n = 4, dts = heads * d + 2;
    const std::vector<int64_t> pos = {5, POSENC_PAD, 6, 7};
    for (Format f : kFormats)
      for (posenc_isa isa : ref::paths())
        ref::on_path(isa, [&] {
          const size_t es = ref::format_size(f);
          std::vector<unsigned char> src(size_t(n * heads * d) * es), dst(size_t(n * dts) * es, 0x5C);
          fill(f, src, 17, false);
          const std::vector<unsigned char> src_before = src;
          RopeCall c;
          c.kernel = kernel_of(f, false, true);
          c.rope = &r;
          c.positions = pos.data();
          c.n = n;
          c.src = src.data();
          c.src_token_stride = heads * d;
          c.src_head_stride = d;
          c.x = dst.data();
          c.heads = heads;
          c.token_stride = dts;
          c.head_stride = d;
          INFO(format_name(f) << (pairs == POSENC_ROPE_HALVES ? " halves" : " interleaved") << " on "
                              << posenc_isa_name(isa));
          REQUIRE(ref::invoke(c) == POSENC_OK);
          CHECK(src == src_before);
          int64_t sentinel_lost = 0, pad_wrong = 0, rotated_unwritten = 0;
          for (int64_t t = 0; t < n; ++t)
            for (int64_t e = 0; e < dts; ++e) {
              const size_t k = size_t(t * dts + e) * es;
              const bool sentinel = dst[k] == 0x5C && dst[k + es - 1] == 0x5C;
              const int64_t j = e / d, col = e % d;
              if (j >= heads || col >= 8) {
                sentinel_lost += !sentinel;  // past r, and the gap after the last head
              } else if (pos[size_t(t)] == POSENC_PAD) {
                pad_wrong += std::memcmp(&dst[k], &src[size_t(t * heads * d + j * d + col) * es], es) != 0;
              } else {
                rotated_unwritten += sentinel;
              }
            }
          CHECK(sentinel_lost == 0);
          CHECK(pad_wrong == 0);
          CHECK(rotated_unwritten == 0);
        });
  }
}

TEST_CASE("copy: the bytes of copying the source rows and rotating them in place, odd shapes", "[rope][copy]") {
  uint64_t seed = 4000;
  int64_t compared = 0;
  for (int64_t r : {2, 6, 130})
    for (posenc_rope_pairs pairs : {POSENC_ROPE_HALVES, POSENC_ROPE_INTERLEAVED}) {
      const Rope rope = make_rope("r=" + std::to_string(r), r, pairs, 1e4, 1.0, r == 6 ? 1.369 : 1.0);
      const int64_t d = r + 1 + r % 4;
      for (int64_t heads = 1; heads <= 5; ++heads)
        for (int layout = 0; layout < 5; ++layout) {
          // 0: [T,H,D] from [T,H,D] with gaps; 1: [H,T,D] from [T,H,D]; 2: [T,H,D] from [H,T,D];
          // 3: source rows overlapping (token stride 1, head stride 0 or 2); 4: in place (src == x)
          const int64_t n = layout == 0 ? 67 : 19;
          Rotation c{"layout " + std::to_string(layout),
                     0,
                     layout == 1 ? htd(heads, n, d, 3) : thd(heads, d, 1),
                     {},
                     false,
                     false,
                     n,
                     -20,
                     layout == 0 ? std::vector<int64_t>{} : packed(seed, n)};
          c.copy = true;
          const int64_t after = end_of(c.q, n, d) + 1;
          c.src = layout == 2   ? htd(heads, n, d, 1, after)
                  : layout == 3 ? Tensor{heads, 1, heads % 2 ? 0 : 2, after}
                  : layout == 4 ? c.q
                                : thd(heads, d, 5, after);
          Tensor extent = c.src;
          extent.heads = heads;
          c.elements = std::max(end_of(c.q, n, d), layout == 4 ? int64_t(0) : end_of(extent, n, d));
          Rotation in_place = c;
          in_place.copy = false;
          for (Format f : kFormats) {
            const size_t es = ref::format_size(f);
            std::vector<unsigned char> in(size_t(c.elements) * es);
            fill(f, in, seed++, f != Format::kBF16);
            std::vector<unsigned char> want = in;  // the source's r elements copied into x, then rotated there
            for (int64_t t = 0; t < n; ++t)
              for (int64_t j = 0; j < heads; ++j)
                std::memmove(&want[size_t(row_at(c.q, t, j)) * es], &in[size_t(source_row_at(c, c.q, t, j)) * es],
                             size_t(r) * es);
            for (posenc_isa isa : ref::paths())
              ref::on_path(isa, [&] {
                std::vector<unsigned char> expect = want, got = in;
                INFO("r " << r << (pairs == POSENC_ROPE_HALVES ? " halves" : " interleaved") << " heads " << heads
                          << " " << c.name << " " << format_name(f) << " on " << posenc_isa_name(isa));
                REQUIRE(run(rope, in_place, f, expect) == POSENC_OK);
                REQUIRE(run(rope, c, f, got) == POSENC_OK);
                const int64_t e = first_difference(got, expect, es);
                if (e >= 0)
                  FAIL_CHECK("element " << e << ": got " << element_text(f, got, e) << ", copy + in place "
                                        << element_text(f, expect, e));
                ++compared;
              });
          }
        }
    }
  CHECK(compared >= 3 * 2 * 5 * 5 * 3);
}

TEST_CASE("golden: rope_copy_* from a separate source reproduces the rotation hashes", "[rope][golden][copy]") {
  // The copy's bytes are by definition those of the in-place call on a copy of src, so the rotation goldens
  // are its goldens too: x starts as the input with every rotated element a sentinel, src is the input.
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (const Golden &g : goldens()) {
        if (g.cache) continue;
        const Rotation c = golden_rotation(g);
        const std::vector<unsigned char> src = golden_input(g);
        std::vector<unsigned char> x = src;
        const size_t es = ref::format_size(g.format);
        const int64_t r = g.rope.r.rotary_dim;
        for (const Tensor *t : {&c.q, &c.k})
          for (int64_t tok = 0; tok < g.n; ++tok)
            for (int64_t j = 0; j < t->heads; ++j)
              std::memset(&x[size_t(row_at(*t, tok, j)) * es], 0x5C, size_t(r) * es);
        for (const Tensor *t : {&c.q, &c.k}) {
          Rotation one{g.name, c.elements, *t, {}, false, false, g.n, g.first, g.positions};
          one.copy = true;
          one.src = *t;
          const posenc_rope rope = g.rope.get();
          RopeCall call;
          call.kernel = kernel_of(g.format, false, true);
          call.rope = &rope;
          call.positions = positions_of(one);
          call.first = g.first;
          call.n = g.n;
          call.src = src.data() + size_t(t->offset) * es;
          call.src_token_stride = t->token_stride;
          call.src_head_stride = t->head_stride;
          call.x = x.data() + size_t(t->offset) * es;
          call.heads = t->heads;
          call.token_stride = t->token_stride;
          call.head_stride = t->head_stride;
          REQUIRE(ref::invoke(call) == POSENC_OK);
        }
        INFO(g.name << " on " << posenc_isa_name(isa));
        CHECK(digest(x) == g.sha256);
      }
    });
}

// ---- (f) the inverse rotation: posenc_rope_inverse ----------------------------------------------------
// The inverse spec at p is the forward spec at -p (docs/contract.md section 4): every golden above, its spec
// inverted and its positions negated, reproduces the forward hash from MPFR's values and on every path; the
// rotations equal posenc.h's formula on MPFR's values of the inverse spec; the multi-axis and real-valued
// calls give the forward bytes at the negated positions.

namespace {

Rope inverted(const Rope &r) {
  Rope t = r;
  posenc_rope c = r.get();
  REQUIRE(posenc_rope_inverse(&c, &c) == POSENC_OK);
  t.r = c;  // get() points freq and axis at t's own copies
  return t;
}

std::vector<Golden> inverse_goldens() {
  std::vector<Golden> v;
  for (Golden g : goldens()) {
    std::vector<int64_t> pos = g.positions.empty() ? run_of(g.first, g.n) : g.positions;
    for (int64_t &p : pos)
      if (p != POSENC_PAD) p = -p;
    g.positions = pos;
    g.first = 0;
    g.rope = inverted(g.rope);
    v.push_back(g);
  }
  return v;
}

}  // namespace

TEST_CASE("inverse: the C call negates position_scale and nothing else; NULL writes nothing", "[rope][inverse]") {
  std::vector<double> freq = odd_frequencies(20, 3);
  std::vector<uint8_t> axis(20);
  for (size_t i = 0; i < axis.size(); ++i) axis[i] = uint8_t(i % 3);
  posenc_rope r = posenc_rope_default(40);
  r.pairs = POSENC_ROPE_INTERLEAVED;
  r.base = 5e5;
  r.position_scale = 0.375;
  r.freq = freq.data();
  r.attention_scale = 1.369;
  r.axes = 3;
  r.axis = axis.data();
  posenc_rope out;
  std::memset(&out, 0x5a, sizeof out);
  const posenc_rope untouched = out;
  CHECK(posenc_rope_inverse(nullptr, &out) == POSENC_ERR_NULL);
  CHECK(posenc_rope_inverse(&r, nullptr) == POSENC_ERR_NULL);
  CHECK(std::memcmp(&out, &untouched, sizeof out) == 0);
  // field by field: the struct's padding is not a value
  const auto same_but_scale = [&](const posenc_rope &o, double scale) {
    CHECK(o.rotary_dim == r.rotary_dim);
    CHECK(o.pairs == r.pairs);
    CHECK(std::memcmp(&o.base, &r.base, sizeof o.base) == 0);
    CHECK(std::memcmp(&o.position_scale, &scale, sizeof scale) == 0);
    CHECK(o.freq == r.freq);
    CHECK(std::memcmp(&o.attention_scale, &r.attention_scale, sizeof o.attention_scale) == 0);
    CHECK(o.axes == r.axes);
    CHECK(o.axis == r.axis);
  };
  REQUIRE(posenc_rope_inverse(&r, &out) == POSENC_OK);
  same_but_scale(out, -0.375);
  REQUIRE(posenc_rope_inverse(&out, &out) == POSENC_OK);  // in place; the inverse of the inverse
  same_but_scale(out, 0.375);
  r.position_scale = 0.0;  // a zero scale's inverse is -0.0 (its angles are all zero, as the forward's)
  REQUIRE(posenc_rope_inverse(&r, &out) == POSENC_OK);
  same_but_scale(out, -0.0);
}

TEST_CASE("inverse: the golden hashes at the negated positions, from MPFR and on every path",
          "[rope][inverse][golden]") {
  for (const Golden &g : inverse_goldens()) {
    Exact ex(g.rope);
    std::vector<unsigned char> want;
    if (g.cache) {
      std::vector<float> rows;
      for (int64_t p : g.positions) {
        const std::vector<float> &row = ex.row(p);
        rows.insert(rows.end(), row.begin(), row.end());
      }
      want = as_bytes(rows);
    } else {
      want = expected(g.rope, ex, golden_rotation(g), g.format, golden_input(g));
    }
    INFO(g.name << " (inverse spec at -p)");
    CHECK(digest(want) == g.sha256);
  }
  every_path_reproduces(inverse_goldens(), [](const Golden &g) {
    if (!g.cache) return rotated(g.rope, golden_rotation(g), g.format, golden_input(g));
    return as_bytes(library_cache(g.rope, g.positions, false, true));
  });
}

TEST_CASE("inverse: rotations equal posenc.h's formula on MPFR's values of the inverse spec", "[rope][inverse]") {
  const Rope specs[] = {
      make_rope("default r=128 base 5e5 halves", 128, POSENC_ROPE_HALVES, 5e5),
      make_rope("r=64 interleaved m 1.369", 64, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 1.369),
      make_rope("r=96 halves position_scale 0.25 m 0.7", 96, POSENC_ROPE_HALVES, 1e4, 0.25, 0.7),
      make_rope("explicit r=40 interleaved m 3", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 3.0, odd_frequencies(20, 7)),
      make_rope("explicit r=40 halves scale -0.5", 40, POSENC_ROPE_HALVES, 1e4, -0.5, 1.0, odd_frequencies(20, 8)),
  };
  const int64_t tails[] = {0, 16, 7, 0, 5};
  uint64_t seed = 4400;
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; ++s) {
    const Rope inv = inverted(specs[s]);
    Exact ex(inv);
    for (const Rotation &c : rotations(inv.r.rotary_dim, tails[s])) check_rotation(inv, ex, c, seed++);
  }
}

TEST_CASE("inverse: multi-axis and real-valued calls give the forward bytes at the negated positions",
          "[rope][inverse]") {
  std::vector<uint8_t> axis(32);
  posenc_rope mrope = posenc_rope_default(64);
  const int64_t sections[4] = {8, 12, 12, 0};
  REQUIRE(posenc_rope_sections(&mrope, sections, POSENC_SECTIONS_INTERLEAVED, axis.data(), nullptr) == POSENC_OK);
  mrope.attention_scale = 1.25;
  const int64_t n = 37, heads = 3, d = 72;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      INFO(posenc_isa_name(isa));
      posenc_rope inv;
      REQUIRE(posenc_rope_inverse(&mrope, &inv) == POSENC_OK);
      std::vector<int64_t> pos(size_t(3 * n)), neg(pos.size());
      std::vector<double> real(pos.size()), rneg(pos.size());
      for (size_t i = 0; i < pos.size(); ++i) {
        pos[i] = int64_t(i * 7919 % 100003) - 50000;
        neg[i] = -pos[i];
        real[i] = double(pos[i]) + 0.375 * double(i % 5);
        rneg[i] = -real[i];
      }
      std::vector<float> a(size_t(n * heads * d)), b;
      for (size_t i = 0; i < a.size(); ++i) a[i] = float(std::sin(double(i) * 0.37)) * 3.0f;
      b = a;
      REQUIRE(posenc_rope_f32(&inv, pos.data(), 0, n, a.data(), heads, heads * d, d) == POSENC_OK);
      REQUIRE(posenc_rope_f32(&mrope, neg.data(), 0, n, b.data(), heads, heads * d, d) == POSENC_OK);
      CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
      std::vector<uint16_t> x(a.size()), y;
      for (size_t i = 0; i < x.size(); ++i) x[i] = uint16_t(0x3f00u + (i * 37u) % 0x200u);
      y = x;
      REQUIRE(posenc_rope_real_bf16(&inv, real.data(), n, x.data(), heads, heads * d, d) == POSENC_OK);
      REQUIRE(posenc_rope_real_bf16(&mrope, rneg.data(), n, y.data(), heads, heads * d, d) == POSENC_OK);
      CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(uint16_t)) == 0);
      std::vector<float> c1(size_t(n * 32)), s1(c1.size()), c2(c1.size()), s2(c1.size());
      REQUIRE(posenc_rope_cache_real_f32(&inv, real.data(), n, c1.data(), 32, s1.data(), 32) == POSENC_OK);
      REQUIRE(posenc_rope_cache_real_f32(&mrope, rneg.data(), n, c2.data(), 32, s2.data(), 32) == POSENC_OK);
      CHECK(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(s1.data(), s2.data(), s1.size() * sizeof(float)) == 0);
    });
}
