// The RoPE part of the C++ wrapper (posenc.hpp): each model preset is posenc_rope_init with the published
// parameters (spelled out here field by field, not taken from the header), a posenc::rope owns its frequencies
// through copies and moves, the heads views address what the C strides address and refuse bad shapes before
// anything is written, and every wrapper call returns the bytes of its C function.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "posenc/posenc.hpp"

namespace {

template <class T>
bool same_bytes(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

bool same_double(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// posenc_rope_init as a C caller writes it, and the preset compared with it field by field, bit for bit,
// frequencies included.
void same_as_init(const posenc::rope &got, int64_t r, double base, const posenc_rope_scaling *scaling,
                  posenc_rope_pairs pairs) {
  std::vector<double> freq(size_t(r / 2), -1.0);
  posenc_rope want;
  REQUIRE(posenc_rope_init(&want, r, base, scaling, freq.data()) == POSENC_OK);
  want.pairs = pairs;
  const posenc_rope &c = got.c_rope();
  CHECK(c.rotary_dim == want.rotary_dim);
  CHECK(c.pairs == want.pairs);
  CHECK(same_double(c.base, want.base));
  CHECK(same_double(c.position_scale, want.position_scale));
  CHECK(same_double(c.attention_scale, want.attention_scale));
  CHECK((c.freq == nullptr) == (want.freq == nullptr));
  if (c.freq && want.freq) {
    CHECK(c.freq == got.freq().data());
    CHECK(std::memcmp(c.freq, want.freq, size_t(r / 2) * sizeof(double)) == 0);
  }
  CHECK(got == posenc::rope(want));
}

posenc_rope_scaling zeroed(posenc_rope_type type) {
  posenc_rope_scaling s;
  std::memset(&s, 0, sizeof s);
  s.type = type;
  return s;
}

// Runs a call that must throw; returns its status, and checks that buf kept every byte.
template <class T, class Fn>
posenc_status thrown(const std::vector<T> &buf, Fn fn) {
  const std::vector<T> before = buf;
  posenc_status st = POSENC_OK;
  try {
    fn();
  } catch (const posenc::error &e) {
    st = e.status();
  }
  CHECK(same_bytes(buf, before));
  return st;
}

std::vector<float> activations(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = std::sin(float(i) * 0.37f) * 3.0f;
  return x;
}

std::vector<uint16_t> halves(size_t n) {
  std::vector<uint16_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = uint16_t(0x3c00 + (i * 37) % 1500);  // finite in bf16 and binary16
  return x;
}

}  // namespace

TEST_CASE("model presets are posenc_rope_init with the published parameters", "[rope][cpp]") {
  same_as_init(posenc::rope::llama2(), 128, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::llama2(64), 64, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::mistral_7b_v02(), 128, 1.0e6, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::qwen2(), 128, 1.0e6, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::gpt_neox_20b(), 24, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::gpt_j_6b(), 64, 1.0e4, nullptr, POSENC_ROPE_INTERLEAVED);

  posenc_rope_scaling llama3 = zeroed(POSENC_ROPE_TYPE_LLAMA3);
  llama3.factor = 8.0;
  llama3.low_freq_factor = 1.0;
  llama3.high_freq_factor = 4.0;
  llama3.original_max_positions = 8192;
  same_as_init(posenc::rope::llama3_1(), 128, 500000.0, &llama3, POSENC_ROPE_HALVES);
  CHECK(posenc::rope::llama3_1().freq().size() == 64);

  posenc_rope_scaling qwen = zeroed(POSENC_ROPE_TYPE_YARN);
  qwen.factor = 4.0;
  qwen.original_max_positions = 32768;
  qwen.truncate = 1;
  same_as_init(posenc::rope::qwen2(128, true), 128, 1.0e6, &qwen, POSENC_ROPE_HALVES);

  posenc_rope_scaling ds = zeroed(POSENC_ROPE_TYPE_YARN);
  ds.factor = 40.0;
  ds.original_max_positions = 4096;
  ds.beta_fast = 32.0;
  ds.beta_slow = 1.0;
  ds.mscale = 0.707;
  ds.mscale_all_dim = 0.707;
  ds.truncate = 1;
  same_as_init(posenc::rope::deepseek_v2(), 64, 1.0e4, &ds, POSENC_ROPE_INTERLEAVED);
  ds.mscale = ds.mscale_all_dim = 1.0;
  same_as_init(posenc::rope::deepseek_v3(), 64, 1.0e4, &ds, POSENC_ROPE_INTERLEAVED);
  CHECK(posenc::rope::deepseek_v3() == posenc::rope::deepseek_v2());  // equal mscales cancel in both
  CHECK(posenc::rope::deepseek_v2().attention_scale() == 1.0);

  // Phi-3-mini-128k: the preset's factor arrays, spot-checked against the config's values here; the rest of
  // the preset compared with posenc_rope_init on those arrays, below and past the original 4096.
  const posenc::rope phi_short = posenc::rope::phi3_mini_128k(4096), phi_long = posenc::rope::phi3_mini_128k(4097);
  for (int64_t seq_len : {int64_t(1), int64_t(4096), int64_t(4097), int64_t(131072)}) {
    posenc_rope_scaling phi = zeroed(POSENC_ROPE_TYPE_LONGROPE);
    phi.factor = 32.0;
    phi.original_max_positions = 4096;
    phi.seq_len = seq_len;
    phi.short_factor = posenc::detail::kPhi3Mini128kShort;
    phi.long_factor = posenc::detail::kPhi3Mini128kLong;
    INFO("seq_len " << seq_len);
    same_as_init(posenc::rope::phi3_mini_128k(seq_len), 96, 1.0e4, &phi, POSENC_ROPE_HALVES);
  }
  CHECK(posenc::detail::kPhi3Mini128kShort[0] == 1.05);
  CHECK(posenc::detail::kPhi3Mini128kShort[47] == 3.049999999999997);
  CHECK(posenc::detail::kPhi3Mini128kLong[0] == 1.0299999713897705);
  CHECK(posenc::detail::kPhi3Mini128kLong[24] == 30.009998321533203);
  CHECK(posenc::detail::kPhi3Mini128kLong[47] == 64.81001281738281);
  CHECK(phi_short.rotary_dim() == 96);
  CHECK(phi_short != phi_long);  // the long factors take over past the original length
}

TEST_CASE("rope::init is posenc_rope_init, and refuses what it refuses", "[rope][cpp]") {
  posenc_rope_scaling lin = zeroed(POSENC_ROPE_TYPE_LINEAR);
  lin.factor = 4.0;
  same_as_init(posenc::rope::init(32, 2.0e4, &lin), 32, 2.0e4, &lin, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::init(32, 2.0e4, lin, posenc::rope_pairs::interleaved), 32, 2.0e4, &lin,
               POSENC_ROPE_INTERLEAVED);
  posenc_rope_scaling dyn = posenc::rope_scaling_of(posenc::rope_type::dynamic);
  CHECK(dyn.type == POSENC_ROPE_TYPE_DYNAMIC);
  CHECK((dyn.factor == 0.0 && dyn.truncate == 0 && dyn.short_factor == nullptr));
  dyn.factor = 2.0;
  dyn.original_max_positions = 2048;
  dyn.seq_len = 5000;
  same_as_init(posenc::rope::init(64, 1.0e4, dyn), 64, 1.0e4, &dyn, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::init(16, 10.0), 16, 10.0, nullptr, POSENC_ROPE_HALVES);

  for (int64_t r : {int64_t(0), int64_t(3), int64_t(-2)}) {
    INFO("rotary_dim " << r);
    try {
      posenc::rope::init(r, 1.0e4);
      FAIL("init accepted a bad rotary_dim");
    } catch (const posenc::error &e) {
      CHECK(e.status() == POSENC_ERR_INVALID);
    }
  }
  posenc_rope_scaling no_factors = zeroed(POSENC_ROPE_TYPE_LONGROPE);
  no_factors.factor = 32.0;
  no_factors.original_max_positions = 4096;
  no_factors.seq_len = 10;
  CHECK_THROWS_AS(posenc::rope::init(96, 1.0e4, no_factors), posenc::error);
}

TEST_CASE("a rope owns its frequencies: copies and moves outlive the original", "[rope][cpp]") {
  const int64_t r = 128, n = 5;
  const posenc::rope fresh = posenc::rope::llama3_1();
  std::vector<float> want(size_t(n * r));
  fresh.cache(100000, posenc::rows_view<float>(want.data(), n, r));

  auto original = std::make_unique<posenc::rope>(posenc::rope::llama3_1());
  posenc::rope copy(*original);
  posenc::rope assigned = posenc::rope::gpt_j_6b();
  assigned = *original;
  posenc::rope moved_from = *original;
  posenc::rope moved(std::move(moved_from));
  posenc::rope move_assigned = posenc::rope::llama2();
  move_assigned = std::move(moved);
  const double *storage = original->c_rope().freq;
  original.reset();  // the copies must not point into it

  for (const posenc::rope *p : {&copy, &assigned, &move_assigned}) {
    REQUIRE(p->c_rope().freq != nullptr);
    CHECK(p->c_rope().freq == p->freq().data());
    CHECK(p->c_rope().freq != storage);
    CHECK(*p == fresh);
    std::vector<float> got(size_t(n * r), -1.0f);
    p->cache(100000, posenc::rows_view<float>(got.data(), n, r));
    CHECK(same_bytes(got, want));
  }
  // Self-assignment keeps the spec.
  posenc::rope &alias = copy;
  copy = alias;
  CHECK(copy == fresh);
  CHECK(copy.c_rope().freq == copy.freq().data());

  // A C spec's frequencies are copied: changing the caller's array afterwards changes nothing.
  std::vector<double> mine = {1.0, 0.5, 0.25, 0.125};
  posenc_rope c = posenc_rope_default(8);
  c.freq = mine.data();
  const posenc::rope wrapped(c);
  mine.assign(4, 7.0);
  REQUIRE(wrapped.freq().size() == 4);
  CHECK(wrapped.freq()[1] == 0.5);
  CHECK(wrapped.c_rope().freq == wrapped.freq().data());
  const posenc::rope plain(posenc_rope_default(8));
  CHECK(plain.c_rope().freq == nullptr);
  CHECK(plain.freq().size() == 0);
}

TEST_CASE("accessors and with_* setters", "[rope][cpp]") {
  const posenc::rope d(32);
  CHECK(d.rotary_dim() == 32);
  CHECK(d.pairs() == posenc::rope_pairs::halves);
  CHECK(d.base() == 1.0e4);
  CHECK(d.position_scale() == 1.0);
  CHECK(d.attention_scale() == 1.0);
  const posenc::rope t =
      d.with_pairs(posenc::rope_pairs::interleaved).with_base(5.0).with_position_scale(0.5).with_attention_scale(2.0);
  CHECK(t.pairs() == posenc::rope_pairs::interleaved);
  CHECK(t.base() == 5.0);
  CHECK(t.position_scale() == 0.5);
  CHECK(t.attention_scale() == 2.0);
  CHECK(d != t);
  CHECK(d == posenc::rope(32));
  const posenc::rope ds = posenc::rope::deepseek_v2().with_pairs(posenc::rope_pairs::halves);
  CHECK(ds.c_rope().freq == ds.freq().data());  // a setter's copy points into its own storage
  CHECK_NOTHROW(d.validate());
  for (const posenc::rope &bad : {d.with_base(0.0), posenc::rope(3), d.with_attention_scale(0.0),
                                  d.with_pairs(posenc::rope_pairs(5))}) {
    try {
      bad.validate();
      FAIL("validate() accepted a bad spec");
    } catch (const posenc::error &e) {
      CHECK(e.status() == POSENC_ERR_INVALID);
    }
  }
  for (int v = POSENC_ROPE_TYPE_DEFAULT; v <= POSENC_ROPE_TYPE_LONGROPE; ++v)
    CHECK(posenc::rope_scaling_of(posenc::rope_type(v)).type == posenc_rope_type(v));
}

TEST_CASE("heads views address what the C strides address", "[rope][cpp]") {
  std::vector<float> buf(200);
  float *b = buf.data();
  const auto thd = posenc::heads_view<float>::thd(b, 3, 4, 8);  // [T, H, D]
  CHECK((thd.tokens() == 3 && thd.heads() == 4 && thd.head_dim() == 8));
  CHECK((thd.token_stride() == 32 && thd.head_stride() == 8));
  CHECK(thd.head(2, 1) == b + 72);
  const auto htd = posenc::heads_view<float>::htd(b, 4, 3, 8);  // [H, T, D]
  CHECK((htd.tokens() == 3 && htd.heads() == 4 && htd.token_stride() == 8 && htd.head_stride() == 24));
  CHECK(htd.head(2, 1) == b + 24 + 16);
  // Fused QKV, 4 q heads and 2 kv heads of 8: per token q0..q3 k0 k1 v0 v1.
  const auto q = posenc::heads_view<float>::fused_q(b, 3, 4, 2, 8);
  const auto k = posenc::heads_view<float>::fused_k(b, 3, 4, 2, 8);
  CHECK((q.heads() == 4 && k.heads() == 2 && q.token_stride() == 64 && k.token_stride() == 64));
  CHECK(q.head(1, 3) == b + 64 + 24);
  CHECK(k.head(1, 1) == b + 64 + 40);
  const auto sub = k.subtokens(1, 2);
  CHECK((sub.tokens() == 2 && sub.head(0, 0) == k.head(1, 0) && sub.head_stride() == 8));
  const posenc::heads_view<float> any(b, 2, 3, 5, 40, 6);
  CHECK(any.head(1, 2) == b + 52);
  const posenc::heads_view<float> none;
  CHECK((none.data() == nullptr && none.tokens() == 0 && none.heads() == 0));
}

TEST_CASE("every RoPE wrapper call returns the bytes of its C function", "[rope][cpp]") {
  const int64_t T = 5, Hq = 4, Hkv = 2, D = 72;  // every preset below rotates part of a 72-wide head
  const int64_t row = (Hq + 2 * Hkv) * D;
  const std::vector<int64_t> pos = {7, POSENC_PAD, -3, 131071, 1 << 20};
  const posenc::rope ropes[] = {posenc::rope::llama3_1(32), posenc::rope::gpt_j_6b().with_attention_scale(1.25),
                                posenc::rope::gpt_neox_20b(), posenc::rope::deepseek_v2()};
  for (const posenc::rope &rp : ropes) {
    const posenc_rope &c = rp.c_rope();
    const int64_t r = rp.rotary_dim(), h = r / 2;
    INFO("rotary_dim " << r << ", pairs " << int(rp.pairs()));

    // The cache: separate tables with padded rows, and the cos||sin table.
    std::vector<float> cw(size_t(T * (h + 3)), -2.0f), sw = cw, cc = cw, sc = cw;
    rp.cache(pos, posenc::rows_view<float>(cw.data(), T, h, h + 3), posenc::rows_view<float>(sw.data(), T, h, h + 3));
    REQUIRE(posenc_rope_cache_f32(&c, pos.data(), 0, T, cc.data(), h + 3, sc.data(), h + 3) == POSENC_OK);
    CHECK(same_bytes(cw, cc));
    CHECK(same_bytes(sw, sc));
    std::vector<float> both(size_t(T * r), -2.0f), both_c = both;
    rp.cache(40, posenc::rows_view<float>(both.data(), T, r));
    REQUIRE(posenc_rope_cache_f32(&c, nullptr, 40, T, both_c.data(), r, both_c.data() + h, r) == POSENC_OK);
    CHECK(same_bytes(both, both_c));

    // apply on [T, H, D] and [H, T, D], runs and lists.
    const std::vector<float> x0 = activations(size_t(T * row));
    std::vector<float> a = x0, b = x0;
    rp.apply(pos, posenc::heads_view<float>::thd(a.data(), T, 8, D));
    REQUIRE(posenc_rope_f32(&c, pos.data(), 0, T, b.data(), 8, 8 * D, D) == POSENC_OK);
    CHECK(same_bytes(a, b));
    CHECK(!same_bytes(a, x0));
    a = x0, b = x0;
    rp.apply(12, posenc::heads_view<float>::htd(a.data(), 8, T, D));
    REQUIRE(posenc_rope_f32(&c, nullptr, 12, T, b.data(), 8, D, T * D) == POSENC_OK);
    CHECK(same_bytes(a, b));

    // apply(q, k) on a fused QKV buffer (GQA), against posenc_rope_qk_f32 and against two single calls.
    a = x0, b = x0;
    std::vector<float> two = x0;
    rp.apply(pos, posenc::heads_view<float>::fused_q(a.data(), T, Hq, Hkv, D),
             posenc::heads_view<float>::fused_k(a.data(), T, Hq, Hkv, D));
    REQUIRE(posenc_rope_qk_f32(&c, pos.data(), 0, T, b.data(), Hq, row, D, b.data() + Hq * D, Hkv, row, D) ==
            POSENC_OK);
    CHECK(same_bytes(a, b));
    rp.apply(pos, posenc::heads_view<float>::fused_q(two.data(), T, Hq, Hkv, D));
    rp.apply(pos, posenc::heads_view<float>::fused_k(two.data(), T, Hq, Hkv, D));
    CHECK(same_bytes(a, two));

    // bf16 and f16, one tensor and q/k.
    const std::vector<uint16_t> y0 = halves(size_t(T * row));
    std::vector<uint16_t> u = y0, v = y0;
    rp.apply_bf16(pos, posenc::heads_view<uint16_t>::thd(u.data(), T, 8, D));
    REQUIRE(posenc_rope_bf16(&c, pos.data(), 0, T, v.data(), 8, 8 * D, D) == POSENC_OK);
    CHECK(same_bytes(u, v));
    u = y0, v = y0;
    rp.apply_f16(3, posenc::heads_view<uint16_t>::thd(u.data(), T, 8, D));
    REQUIRE(posenc_rope_f16(&c, nullptr, 3, T, v.data(), 8, 8 * D, D) == POSENC_OK);
    CHECK(same_bytes(u, v));
    u = y0, v = y0;
    rp.apply_bf16(pos, posenc::heads_view<uint16_t>::fused_q(u.data(), T, Hq, Hkv, D),
                  posenc::heads_view<uint16_t>::fused_k(u.data(), T, Hq, Hkv, D));
    REQUIRE(posenc_rope_qk_bf16(&c, pos.data(), 0, T, v.data(), Hq, row, D, v.data() + Hq * D, Hkv, row, D) ==
            POSENC_OK);
    CHECK(same_bytes(u, v));
    u = y0, v = y0;
    rp.apply_f16(9, posenc::heads_view<uint16_t>::fused_q(u.data(), T, Hq, Hkv, D),
                 posenc::heads_view<uint16_t>::fused_k(u.data(), T, Hq, Hkv, D));
    REQUIRE(posenc_rope_qk_f16(&c, nullptr, 9, T, v.data(), Hq, row, D, v.data() + Hq * D, Hkv, row, D) ==
            POSENC_OK);
    CHECK(same_bytes(u, v));
  }
}

TEST_CASE("RoPE refusals throw with the C status and write nothing", "[rope][cpp]") {
  const int64_t T = 3, H = 2, D = 16;
  const posenc::rope rp = posenc::rope(16);
  std::vector<float> x = activations(size_t(T * H * D));
  std::vector<uint16_t> y = halves(size_t(T * H * D));
  const std::vector<int64_t> two = {0, 1}, three = {0, 1, 2}, far = {0, int64_t(1) << 31, 1};
  const auto xv = posenc::heads_view<float>::thd(x.data(), T, H, D);
  const auto yv = posenc::heads_view<uint16_t>::thd(y.data(), T, H, D);
  const auto narrow = posenc::heads_view<float>::thd(x.data(), T, H * 2, D / 2);  // head_dim 8 < r 16
  const auto narrow16 = posenc::heads_view<uint16_t>::thd(y.data(), T, H * 2, D / 2);

  // Shapes only the views know. A lone head row of 8 elements 16 apart: the C call would rotate 16 of them.
  const posenc::heads_view<float> short_row(x.data(), 1, 1, 8, 16, 16);
  const posenc::heads_view<uint16_t> short_row16(y.data(), 1, 1, 8, 16, 16);
  CHECK(thrown(x, [&] { rp.apply(0, short_row); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, short_row, xv.subtokens(2, 1)); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, xv.subtokens(2, 1), short_row); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_bf16(0, short_row16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_f16(0, short_row16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_f16(0, yv.subtokens(2, 1), short_row16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, narrow); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(two, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, xv, narrow); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, narrow, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(two, xv, xv.subtokens(0, 2)); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, xv.subtokens(0, 1), xv.subtokens(1, 2)); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_bf16(0, narrow16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_f16(two, yv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_bf16(three, yv, narrow16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.apply_f16(0, yv.subtokens(0, 1), yv.subtokens(1, 2)); }) == POSENC_ERR_INVALID);
  std::vector<float> cache(size_t(T * 16), -1.0f);
  const posenc::rows_view<float> cos_sin(cache.data(), T, 16), cos(cache.data(), T, 8, 16),
      sin(cache.data() + 8, T, 8, 16);
  CHECK(thrown(cache, [&] { rp.cache(0, cos_sin, sin); }) == POSENC_ERR_INVALID);   // 16 columns, not 8
  CHECK(thrown(cache, [&] { rp.cache(0, cos, sin.subrows(0, T - 1)); }) == POSENC_ERR_INVALID);
  CHECK(thrown(cache, [&] { rp.cache(two, cos, sin); }) == POSENC_ERR_INVALID);
  CHECK(thrown(cache, [&] { rp.cache(two, cos_sin); }) == POSENC_ERR_INVALID);
  CHECK(thrown(cache, [&] { rp.cache(0, posenc::rows_view<float>(cache.data(), T, 15)); }) == POSENC_ERR_INVALID);
  CHECK_NOTHROW(rp.cache(0, cos, sin));  // the same buffers, well shaped

  // The C function's own checks, with their own statuses.
  CHECK(thrown(x, [&] { rp.apply(far, xv); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(x, [&] { rp.with_base(-1.0).apply(0, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, posenc::heads_view<float>(x.data(), T, H, D, D, D)); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply(0, posenc::heads_view<float>(nullptr, T, H, D, H * D, D)); }) == POSENC_ERR_NULL);
  // q and k rows that collide: the same tensor twice.
  CHECK(thrown(x, [&] { rp.apply(0, xv, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(cache, [&] { rp.cache(far, cos_sin); }) == POSENC_ERR_OUT_OF_RANGE);
}
