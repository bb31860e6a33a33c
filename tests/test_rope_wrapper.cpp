// The RoPE part of the C++ wrapper (posenc.hpp): each model preset is posenc_rope_init with the published
// parameters (spelled out here field by field, not taken from the header), a posenc::rope owns its frequencies
// through copies and moves, the heads views address what the C strides address and refuse bad shapes before
// anything is written, and every wrapper call returns the bytes of its C function.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "posenc/posenc.hpp"
#include "support/halves.hpp"
#include "support/wrapper.hpp"

namespace {

using ref::same_bytes;
using ref::thrown;

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

// Copies of `built` made every way a C++ caller makes them (copy, copy and move assignment, move, a with_*
// setter's copy), the original destroyed before any is used: each must point into storage of its own, never
// the original's (owned(rope) gives the C spec's pointer to the owned array and the wrapper's own array), be
// `fresh`, the same spec built anew, and write fresh's cache at p byte for byte. Self-assignment keeps the spec.
// The frequencies and the axis map are owned the same way, so one check serves both.
template <class Owned>
void copies_outlive_original(const posenc::rope &built, const posenc::rope &fresh, const posenc::positions &p,
                             int64_t n, Owned owned) {
  const int64_t r = fresh.rotary_dim();
  std::vector<float> want(size_t(n * r));
  fresh.cache(p, posenc::rows_view<float>(want.data(), n, r));

  auto original = std::make_unique<posenc::rope>(built);
  posenc::rope copy(*original);
  posenc::rope assigned = posenc::rope::gpt_j_6b();
  assigned = *original;
  posenc::rope moved_from = *original;
  posenc::rope moved(std::move(moved_from));
  posenc::rope move_assigned = posenc::rope::llama2();
  move_assigned = std::move(moved);
  const posenc::rope setter = original->with_position_scale(1.0);  // a with_* copy
  const void *storage = owned(*original).first;
  original.reset();  // the copies must not point into it

  const posenc::rope *const copies[] = {&copy, &assigned, &move_assigned, &setter};
  for (const posenc::rope *q : copies) {
    const auto [c, own] = owned(*q);
    REQUIRE(c != nullptr);
    CHECK(c == own);
    CHECK(c != storage);
    CHECK(q->axes() == fresh.axes());
    CHECK(*q == fresh);
    std::vector<float> got(size_t(n * r), -1.0f);
    q->cache(p, posenc::rows_view<float>(got.data(), n, r));
    CHECK(same_bytes(got, want));
  }
  posenc::rope &alias = copy;
  copy = alias;
  CHECK(copy == fresh);
  CHECK(owned(copy).first == owned(copy).second);
}

// The owned arrays as (the C spec's pointer, the wrapper's array).
std::pair<const void *, const void *> freq_of(const posenc::rope &q) { return {q.c_rope().freq, q.freq().data()}; }
std::pair<const void *, const void *> axis_of(const posenc::rope &q) { return {q.c_rope().axis, q.axis().data()}; }

// The calls the "every wrapper call returns the bytes of its C function" cases compare: the cache as two
// padded tables or as one cos||sin table; apply on [T, H, D] or [H, T, D] (8 heads of D), or on a fused QKV
// buffer (GQA: Hq query and Hkv key heads of D) against the qk function and against two single calls; bf16
// and f16 on [T, H, D] and on the fused buffer.
enum class Call { kCacheTables, kCacheCosSin, kThd, kHtd, kQk, kThdBf16, kThdF16, kQkBf16, kQkF16 };

// Positions as a wrapper call takes them and as its C function does: a list (axis-major for a multi-axis
// spec), or NULL and first.
struct At {
  posenc::positions p;
  const int64_t *list;
  int64_t first;
};
At list_at(const std::vector<int64_t> &l, int axes) {
  return {axes == 1 ? posenc::positions(l) : posenc::positions::axis_major(l, axes), l.data(), 0};
}
At run_at(int64_t first) { return {posenc::positions(first), nullptr, first}; }

// T tokens of a fused QKV row: Hq + 2 Hkv heads of D.
struct Qkv {
  int64_t T, Hq, Hkv, D;
};

// A wrapper call, cpp(buffer), and its C function, cfn(buffer), on copies of x0: the C function returns
// POSENC_OK and both write the same bytes. Returns the wrapper's bytes.
template <class E, class Cpp, class C>
std::vector<E> same_as_c(const std::vector<E> &x0, Cpp cpp, C cfn) {
  std::vector<E> a = x0, b = x0;
  cpp(a.data());
  REQUIRE(cfn(b.data()) == POSENC_OK);
  CHECK(same_bytes(a, b));
  return a;
}

// One of the calls at the positions `at`, against its C function.
void call_as_c(const posenc::rope &rp, Call call, const At &at, const Qkv &s) {
  using HF = posenc::heads_view<float>;
  using HH = posenc::heads_view<uint16_t>;
  const posenc_rope &c = rp.c_rope();
  const int64_t r = rp.rotary_dim(), h = r / 2, T = s.T, Hq = s.Hq, Hkv = s.Hkv, D = s.D;
  const int64_t row = (Hq + 2 * Hkv) * D;
  const std::vector<float> x0 = activations(size_t(T * row));
  const std::vector<uint16_t> y0 = halves(size_t(T * row));
  switch (call) {
    case Call::kCacheTables: {
      std::vector<float> cw(size_t(T * (h + 3)), -2.0f), sw = cw, cc = cw, sc = cw;
      rp.cache(at.p, posenc::rows_view<float>(cw.data(), T, h, h + 3),
               posenc::rows_view<float>(sw.data(), T, h, h + 3));
      REQUIRE(posenc_rope_cache_f32(&c, at.list, at.first, T, cc.data(), h + 3, sc.data(), h + 3) == POSENC_OK);
      CHECK(same_bytes(cw, cc));
      CHECK(same_bytes(sw, sc));
      return;
    }
    case Call::kCacheCosSin:
      same_as_c(
          std::vector<float>(size_t(T * r), -2.0f),
          [&](float *o) { rp.cache(at.p, posenc::rows_view<float>(o, T, r)); },
          [&](float *o) { return posenc_rope_cache_f32(&c, at.list, at.first, T, o, r, o + h, r); });
      return;
    case Call::kThd: {
      const std::vector<float> a = same_as_c(
          x0, [&](float *o) { rp.apply(at.p, HF::thd(o, T, 8, D)); },
          [&](float *o) { return posenc_rope_f32(&c, at.list, at.first, T, o, 8, 8 * D, D); });
      CHECK(!same_bytes(a, x0));
      return;
    }
    case Call::kHtd:
      same_as_c(
          x0, [&](float *o) { rp.apply(at.p, HF::htd(o, 8, T, D)); },
          [&](float *o) { return posenc_rope_f32(&c, at.list, at.first, T, o, 8, D, T * D); });
      return;
    case Call::kQk: {
      const std::vector<float> a = same_as_c(
          x0, [&](float *o) { rp.apply(at.p, HF::fused_q(o, T, Hq, Hkv, D), HF::fused_k(o, T, Hq, Hkv, D)); },
          [&](float *o) {
            return posenc_rope_qk_f32(&c, at.list, at.first, T, o, Hq, row, D, o + Hq * D, Hkv, row, D);
          });
      std::vector<float> two = x0;
      rp.apply(at.p, HF::fused_q(two.data(), T, Hq, Hkv, D));
      rp.apply(at.p, HF::fused_k(two.data(), T, Hq, Hkv, D));
      CHECK(same_bytes(a, two));
      return;
    }
    case Call::kThdBf16:
    case Call::kThdF16:
    case Call::kQkBf16:
    case Call::kQkF16: {  // the two half formats, on one tensor or on q and k
      const bool bf16 = call == Call::kThdBf16 || call == Call::kQkBf16;
      const auto apply = [&](auto... views) { bf16 ? rp.apply_bf16(at.p, views...) : rp.apply_f16(at.p, views...); };
      if (call == Call::kThdBf16 || call == Call::kThdF16) {
        const auto cfn = bf16 ? posenc_rope_bf16 : posenc_rope_f16;
        same_as_c(
            y0, [&](uint16_t *o) { apply(HH::thd(o, T, 8, D)); },
            [&](uint16_t *o) { return cfn(&c, at.list, at.first, T, o, 8, 8 * D, D); });
      } else {
        const auto cfn = bf16 ? posenc_rope_qk_bf16 : posenc_rope_qk_f16;
        same_as_c(
            y0, [&](uint16_t *o) { apply(HH::fused_q(o, T, Hq, Hkv, D), HH::fused_k(o, T, Hq, Hkv, D)); },
            [&](uint16_t *o) { return cfn(&c, at.list, at.first, T, o, Hq, row, D, o + Hq * D, Hkv, row, D); });
      }
      return;
    }
  }
}

}  // namespace

TEST_CASE("model presets are posenc_rope_init with the published parameters", "[rope][cpp]") {
  same_as_init(posenc::rope::llama2(), 128, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::llama2(64), 64, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::mistral_7b_v02(), 128, 1.0e6, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::qwen2(), 128, 1.0e6, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::gpt_neox_20b(), 24, 1.0e4, nullptr, POSENC_ROPE_HALVES);
  same_as_init(posenc::rope::gpt_j_6b(), 64, 1.0e4, nullptr, POSENC_ROPE_INTERLEAVED);
  same_as_init(posenc::rope::minimax_m3(), 64, 5.0e6, nullptr, POSENC_ROPE_HALVES);

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

  // DeepSeek-V4 (DeepseekV4Config of transformers 5.12.1): main plain RoPE at 1e4, compress yarn at 1.6e5 with
  // attention_factor 1; GLM-5's MLA and indexer at 1e6
  same_as_init(posenc::rope::deepseek_v4(), 64, 1.0e4, nullptr, POSENC_ROPE_INTERLEAVED);
  posenc_rope_scaling v4 = zeroed(POSENC_ROPE_TYPE_YARN);
  v4.factor = 16.0;
  v4.original_max_positions = 65536;
  v4.beta_fast = 32.0;
  v4.beta_slow = 1.0;
  v4.attention_factor = 1.0;
  v4.truncate = 1;
  same_as_init(posenc::rope::deepseek_v4_compress(), 64, 1.6e5, &v4, POSENC_ROPE_INTERLEAVED);
  CHECK(posenc::rope::deepseek_v4_compress().attention_scale() == 1.0);
  {  // vLLM's dict for the same layers (deepseek_yarn, mscale 0 and mscale_all_dim 0: the ratio 1 / 1)
    posenc_rope_scaling dy = zeroed(POSENC_ROPE_TYPE_DEEPSEEK_YARN);
    dy.factor = 16.0;
    dy.original_max_positions = 65536;
    dy.mscale = dy.mscale_all_dim = 1.0;
    CHECK(posenc::rope::init(64, 1.6e5, dy, posenc::rope_pairs::interleaved) == posenc::rope::deepseek_v4_compress());
  }
  same_as_init(posenc::rope::glm5(), 64, 1.0e6, nullptr, POSENC_ROPE_INTERLEAVED);
  same_as_init(posenc::rope::glm5_indexer(), 64, 1.0e6, nullptr, POSENC_ROPE_HALVES);

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
  copies_outlive_original(posenc::rope::llama3_1(), posenc::rope::llama3_1(), posenc::positions(100000), 5, freq_of);

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
  for (const posenc::rope &bad :
       {d.with_base(0.0), posenc::rope(3), d.with_attention_scale(0.0), d.with_pairs(posenc::rope_pairs(5))}) {
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

TEST_CASE("rope::inverse is posenc_rope_inverse: a copy that owns its frequencies, the forward bytes at -p",
          "[rope][cpp][inverse]") {
  const posenc::rope ds = posenc::rope::deepseek_v3();
  const posenc::rope inv = ds.inverse();
  CHECK(inv.position_scale() == -ds.position_scale());
  CHECK(inv.attention_scale() == ds.attention_scale());
  CHECK(inv.c_rope().freq == inv.freq().data());  // its own storage
  CHECK(std::equal(inv.freq().begin(), inv.freq().end(), ds.freq().begin()));
  CHECK(inv.inverse() == ds);
  const int64_t T = 5, D = ds.rotary_dim();
  std::vector<int64_t> p = {0, 1, 4096, 163839, -7}, neg(p.size());
  for (size_t i = 0; i < p.size(); ++i) neg[i] = -p[i];
  std::vector<float> a(size_t(T * 2 * D)), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) - 8.5f;
  b = a;
  inv.apply(posenc::positions(p), posenc::heads_view<float>::thd(a.data(), T, 2, D));
  ds.apply(posenc::positions(neg), posenc::heads_view<float>::thd(b.data(), T, 2, D));
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
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
  const Qkv shape{5, 4, 2, 72};  // every preset below rotates part of a 72-wide head
  const std::vector<int64_t> pos = {7, POSENC_PAD, -3, 131071, 1 << 20};
  const posenc::rope ropes[] = {posenc::rope::llama3_1(32), posenc::rope::gpt_j_6b().with_attention_scale(1.25),
                                posenc::rope::gpt_neox_20b(), posenc::rope::deepseek_v2()};
  for (const posenc::rope &rp : ropes) {
    INFO("rotary_dim " << rp.rotary_dim() << ", pairs " << int(rp.pairs()));
    // runs and lists
    const At list = list_at(pos, 1);
    const std::pair<Call, At> calls[] = {{Call::kCacheTables, list}, {Call::kCacheCosSin, run_at(40)},
                                         {Call::kThd, list},         {Call::kHtd, run_at(12)},
                                         {Call::kQk, list},          {Call::kThdBf16, list},
                                         {Call::kThdF16, run_at(3)}, {Call::kQkBf16, list},
                                         {Call::kQkF16, run_at(9)}};
    for (const auto &[call, at] : calls) call_as_c(rp, call, at, shape);
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
  CHECK(thrown(cache, [&] { rp.cache(0, cos_sin, sin); }) == POSENC_ERR_INVALID);  // 16 columns, not 8
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

TEST_CASE("apply_copy returns the bytes of posenc_rope_copy_*, and refuses what it refuses", "[rope][cpp][copy]") {
  const int64_t T = 5, H = 3, D = 72;
  const std::vector<int64_t> pos = {7, POSENC_PAD, -3, 131071, 1 << 20};
  for (const posenc::rope &rp : {posenc::rope::llama3_1(32), posenc::rope::gpt_j_6b().with_attention_scale(1.25)}) {
    const posenc_rope &c = rp.c_rope();
    INFO("rotary_dim " << rp.rotary_dim());
    // src [H, T, D] into x [T, H, D] (x starts as other values: its elements past r stay), and in place
    const std::vector<float> s0 = activations(size_t(T * H * D)), x0 = activations(size_t(2 * T * H * D));
    std::vector<float> a(x0.begin() + T * H * D, x0.end()), b = a;
    rp.apply_copy(pos, posenc::heads_view<const float>::htd(s0.data(), H, T, D),
                  posenc::heads_view<float>::thd(a.data(), T, H, D));
    REQUIRE(posenc_rope_copy_f32(&c, pos.data(), 0, T, s0.data(), D, T * D, b.data(), H, H * D, D) == POSENC_OK);
    CHECK(same_bytes(a, b));
    CHECK(!same_bytes(a, std::vector<float>(x0.begin() + T * H * D, x0.end())));
    std::vector<float> in_place = s0, rotated = s0;
    const auto v = posenc::heads_view<float>::thd(in_place.data(), T, H, D);
    rp.apply_copy(12, v, v);  // a view of float is a view of const float
    rp.apply(12, posenc::heads_view<float>::thd(rotated.data(), T, H, D));
    CHECK(same_bytes(in_place, rotated));
    const std::vector<uint16_t> y0 = halves(size_t(T * H * D));
    std::vector<uint16_t> u(y0.size(), 0x3C00), w = u;
    rp.apply_copy_bf16(pos, posenc::heads_view<const uint16_t>::thd(y0.data(), T, H, D),
                       posenc::heads_view<uint16_t>::htd(u.data(), H, T, D));
    REQUIRE(posenc_rope_copy_bf16(&c, pos.data(), 0, T, y0.data(), H * D, D, w.data(), H, D, T * D) == POSENC_OK);
    CHECK(same_bytes(u, w));
    u.assign(y0.size(), 0x3C00), w = u;
    rp.apply_copy_f16(9, posenc::heads_view<const uint16_t>::thd(y0.data(), T, H, D),
                      posenc::heads_view<uint16_t>::thd(u.data(), T, H, D));
    REQUIRE(posenc_rope_copy_f16(&c, nullptr, 9, T, y0.data(), H * D, D, w.data(), H, H * D, D) == POSENC_OK);
    CHECK(same_bytes(u, w));
  }
  // shapes only the views know, then the C function's own checks
  const posenc::rope rp(16);
  std::vector<float> x = activations(size_t(T * H * D)), src = activations(size_t(T * H * D));
  std::vector<uint16_t> y = halves(size_t(T * H * D));
  const auto xv = posenc::heads_view<float>::thd(x.data(), T, H, 16);
  const auto sv = posenc::heads_view<const float>::thd(src.data(), T, H, 16);
  const auto yv = posenc::heads_view<uint16_t>::thd(y.data(), T, H, 16);
  const posenc::heads_view<const float> short_src(src.data(), T, H, 8, H * 16, 16);  // rows of 8 < r 16
  CHECK(thrown(x, [&] { rp.apply_copy(0, short_src, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply_copy(0, sv.subtokens(0, T - 1), xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply_copy(0, posenc::heads_view<const float>::thd(src.data(), T, H - 1, 16), xv); }) ==
        POSENC_ERR_INVALID);
  const std::vector<int64_t> two = {0, 1}, far(size_t(T), int64_t(1) << 31);
  CHECK(thrown(y, [&] { rp.apply_copy_bf16(two, yv, yv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { rp.apply_copy(0, posenc::heads_view<const float>(nullptr, T, H, 16, H * 16, 16), xv); }) ==
        POSENC_ERR_NULL);
  CHECK(thrown(x, [&] { rp.apply_copy(0, posenc::heads_view<const float>(x.data() + 1, T, H, 16, H * 16, 16), xv); }) ==
        POSENC_ERR_INVALID);  // source rows one element off x's
  CHECK(thrown(y, [&] { rp.apply_copy_f16(far, yv, yv); }) == POSENC_ERR_OUT_OF_RANGE);
}

// ---- Multi-axis RoPE in the wrapper (issue 22) ---------------------------------------------------------

namespace {

// The multi-axis preset compared, field by field and bit for bit, with posenc_rope_sections on a spec built
// here from the cited values (rotary_dim, base, pairs, sections, layout), and the copy of it.
void same_as_sections(const posenc::rope &got, int64_t r, double base, posenc_rope_pairs pairs,
                      std::array<int64_t, 4> sections, posenc_rope_layout layout) {
  const size_t h = size_t(r / 2);
  std::vector<uint8_t> axis(h, 0xEE);
  std::vector<double> freq(h, -1.0);
  posenc_rope want = posenc_rope_default(r);
  want.base = base;
  want.pairs = pairs;
  REQUIRE(posenc_rope_sections(&want, sections.data(), layout, axis.data(), freq.data()) == POSENC_OK);
  const posenc_rope &c = got.c_rope();
  CHECK(c.rotary_dim == r);
  CHECK(c.pairs == pairs);
  CHECK(same_double(c.base, base));
  CHECK(same_double(c.position_scale, 1.0));
  CHECK(same_double(c.attention_scale, 1.0));
  CHECK(c.axes == want.axes);
  CHECK(got.axes() == want.axes);
  REQUIRE(c.axis != nullptr);
  CHECK(c.axis == got.axis().data());
  REQUIRE(got.axis().size() == int64_t(h));
  CHECK(std::memcmp(c.axis, axis.data(), h) == 0);
  CHECK((c.freq == nullptr) == (want.freq == nullptr));
  if (c.freq && want.freq) {
    CHECK(c.freq == got.freq().data());
    CHECK(std::memcmp(c.freq, freq.data(), h * sizeof(double)) == 0);
  }
  CHECK(got == posenc::rope(want));
}

// How many pairs each axis has, and whether every pair of an axis is contiguous (chunked layouts).
std::vector<int64_t> axis_counts(const posenc::rope &r) {
  std::vector<int64_t> n(size_t(r.axes()), 0);
  for (uint8_t a : r.axis()) ++n.at(a);
  return n;
}
bool chunked(const posenc::rope &r) {
  for (int64_t i = 1; i < r.axis().size(); ++i)
    if (r.axis()[i] < r.axis()[i - 1]) return false;
  return true;
}

// f == base^(-num/den) to within std::pow's error (its exponent -num/den is rounded, which ln(base) = 9.2
// amplifies); the library's value is the correctly rounded one, which tests/test_rope_axes.cpp checks bit for
// bit against MPFR.
bool power_of(double f, double base, double num, double den) {
  const double want = std::pow(base, -num / den);
  return std::fabs(f - want) <= 4e-15 * want;
}

// Multi-axis positions, axis-major: axis a of token t. Text tokens (every axis equal), an image block
// (temporal fixed, height and width varying), and a padding token.
std::vector<int64_t> mixed_positions(int64_t n, int axes, bool pad) {
  std::vector<int64_t> p(size_t(n * axes));
  for (int64_t t = 0; t < n; ++t)
    for (int a = 0; a < axes; ++a)
      p[size_t(a * n + t)] = t < n / 3 ? 40 + t : a == 0 ? 1000 : 1000 + (a == 1 ? t / 4 : t % 4) * 37 + a;
  if (pad) p[size_t(n / 2)] = POSENC_PAD;
  return p;
}

}  // namespace

TEST_CASE("multi-axis presets are posenc_rope_sections with the published parameters", "[rope][cpp][axes]") {
  // Qwen2-VL and Qwen2.5-VL text: head_dim 128, rope_theta 1e6, mrope_section [16, 24, 24], chunked.
  for (const posenc::rope &q : {posenc::rope::qwen2_vl(), posenc::rope::qwen2_5_vl()}) {
    same_as_sections(q, 128, 1.0e6, POSENC_ROPE_HALVES, {16, 24, 24, 0}, POSENC_SECTIONS_CHUNKED);
    CHECK(axis_counts(q) == std::vector<int64_t>{16, 24, 24});
    CHECK(chunked(q));
    CHECK(q.freq().size() == 0);  // base^(-2i/r) itself
  }
  // Qwen3-VL text: head_dim 128, rope_theta 5e6, mrope_section [24, 20, 20], interleaved: HF's
  // apply_interleaved_mrope puts frequency f on height when f % 3 == 1 and f < 3 * 20, on width when
  // f % 3 == 2 and f < 3 * 20, else on the temporal axis.
  const posenc::rope q3 = posenc::rope::qwen3_vl();
  same_as_sections(q3, 128, 5.0e6, POSENC_ROPE_HALVES, {24, 20, 20, 0}, POSENC_SECTIONS_INTERLEAVED);
  for (int64_t f = 0; f < 64; ++f) {
    INFO("Qwen3-VL pair " << f);
    CHECK(int(q3.axis()[f]) == (f < 60 && f % 3 == 1 ? 1 : f < 60 && f % 3 == 2 ? 2 : 0));
  }
  CHECK(axis_counts(q3) == std::vector<int64_t>{24, 20, 20});
  // GLM-4V: rotary dim 64 of head 128 (partial_rotary_factor 0.5), interleaved pairs, theta 1e4, chunked
  // [8, 12, 12] over the 32 pairs.
  const posenc::rope glm = posenc::rope::glm4v();
  same_as_sections(glm, 64, 1.0e4, POSENC_ROPE_INTERLEAVED, {8, 12, 12, 0}, POSENC_SECTIONS_CHUNKED);
  CHECK(axis_counts(glm) == std::vector<int64_t>{8, 12, 12});
  CHECK(chunked(glm));

  // The vision towers: 2-D, each axis restarting the frequency index (VISION) or taking every other one
  // (Pixtral's STRIDED).
  struct Tower {
    const char *name;
    posenc::rope r;
    int64_t head_dim;
    posenc_rope_pairs pairs;
    posenc_rope_layout layout;
  };
  const Tower towers[] = {
      {"Qwen2-VL ViT", posenc::rope::qwen2_vl_vision(), 80, POSENC_ROPE_HALVES, POSENC_SECTIONS_VISION},
      {"Qwen2.5-VL ViT", posenc::rope::qwen2_5_vl_vision(), 80, POSENC_ROPE_HALVES, POSENC_SECTIONS_VISION},
      {"Qwen3-VL ViT", posenc::rope::qwen3_vl_vision(), 72, POSENC_ROPE_HALVES, POSENC_SECTIONS_VISION},
      {"Pixtral", posenc::rope::pixtral(), 64, POSENC_ROPE_HALVES, POSENC_SECTIONS_STRIDED},
      {"Llama 4 vision", posenc::rope::llama4_vision(), 88, POSENC_ROPE_INTERLEAVED, POSENC_SECTIONS_VISION},
  };
  for (const Tower &t : towers) {
    INFO(t.name);
    const int64_t q = t.head_dim / 4;  // pairs per axis
    same_as_sections(t.r, t.head_dim, 1.0e4, t.pairs, {q, q, 0, 0}, t.layout);
    CHECK(t.r.axes() == 2);
    CHECK(axis_counts(t.r) == std::vector<int64_t>{q, q});
    CHECK(chunked(t.r));
    REQUIRE(t.r.freq().size() == 2 * q);
    for (int64_t k = 0; k < q; ++k) {
      INFO("k " << k);
      if (t.layout == POSENC_SECTIONS_VISION) {  // theta^(-2k / (head_dim / 2)) on both axes
        CHECK(power_of(t.r.freq()[k], 1.0e4, double(2 * k), double(t.head_dim / 2)));
        CHECK(t.r.freq()[q + k] == t.r.freq()[k]);
      } else {  // Pixtral: row freqs[::2], column freqs[1::2] of theta^(-2j / head_dim)
        CHECK(power_of(t.r.freq()[k], 1.0e4, double(2 * (2 * k)), double(t.head_dim)));
        CHECK(power_of(t.r.freq()[q + k], 1.0e4, double(2 * (2 * k + 1)), double(t.head_dim)));
      }
    }
  }
  CHECK(posenc::rope::qwen2_5_vl() == posenc::rope::qwen2_vl());
  CHECK(posenc::rope::qwen2_5_vl_vision() == posenc::rope::qwen2_vl_vision());
  CHECK(posenc::rope::pixtral().with_pairs(posenc::rope_pairs::interleaved) != posenc::rope::pixtral());
}

TEST_CASE("with_sections is posenc_rope_sections: the copy owns its map, frequencies kept or replaced",
          "[rope][cpp][axes]") {
  struct Case {
    posenc::rope base;
    std::array<int64_t, 4> sections;
    posenc::rope_layout layout;
    int axes;
  };
  const Case cases[] = {
      {posenc::rope::qwen2(128, true), {16, 24, 24, 0}, posenc::rope_layout::chunked, 3},  // yarn freqs kept
      {posenc::rope(64).with_attention_scale(1.5), {5, 6, 7, 0}, posenc::rope_layout::interleaved, 3},
      {posenc::rope(64), {4, 4, 4, 4}, posenc::rope_layout::interleaved_4, 4},
      {posenc::rope::llama3_1(), {10, 10, 10, 2}, posenc::rope_layout::vision, 4},  // llama3 freqs replaced
      {posenc::rope(48).with_base(500.0), {6, 6, 0, 0}, posenc::rope_layout::strided, 2},
      {posenc::rope::qwen3_vl(), {16, 24, 24, 0}, posenc::rope_layout::chunked, 3},       // a map replaced
      {posenc::rope::qwen2_vl_vision(), {40, 0, 0, 0}, posenc::rope_layout::chunked, 1},  // one axis: no map
  };
  for (const Case &k : cases) {
    const posenc::rope got = k.base.with_sections(k.sections, k.layout);
    const int64_t h = k.base.rotary_dim() / 2;
    INFO("rotary_dim " << k.base.rotary_dim() << ", layout " << int(k.layout));
    std::vector<uint8_t> axis(size_t(h), 0xEE);
    std::vector<double> freq(size_t(h), -1.0);
    posenc_rope want = k.base.c_rope();
    REQUIRE(posenc_rope_sections(&want, k.sections.data(), posenc_rope_layout(k.layout), axis.data(), freq.data()) ==
            POSENC_OK);
    CHECK(got.axes() == k.axes);
    CHECK(got.axes() == want.axes);
    CHECK(got == posenc::rope(want));
    CHECK(same_double(got.attention_scale(), k.base.attention_scale()));
    if (k.axes == 1) {
      CHECK(got.c_rope().axis == nullptr);
      CHECK(got.axis().size() == 0);
    } else {
      CHECK(got.c_rope().axis == got.axis().data());
      CHECK(std::memcmp(got.axis().data(), axis.data(), size_t(h)) == 0);
    }
    if (k.layout == posenc::rope_layout::vision || k.layout == posenc::rope_layout::strided) {
      REQUIRE(got.freq().size() == h);
      CHECK(std::memcmp(got.freq().data(), freq.data(), size_t(h) * 8) == 0);
    } else {
      CHECK(got.freq().size() == k.base.freq().size());  // kept, in the copy's own storage
      CHECK((got.freq().size() == 0 || got.freq().data() != k.base.freq().data()));
      CHECK(std::equal(got.freq().begin(), got.freq().end(), k.base.freq().begin()));
    }
    CHECK((got.freq().size() == 0 ? got.c_rope().freq == nullptr : got.c_rope().freq == got.freq().data()));
    // The same bytes as the C spec's cache at multi-axis positions.
    const int64_t n = 9;
    const std::vector<int64_t> pos = mixed_positions(n, k.axes, true);
    std::vector<float> a(size_t(n * 2 * h), -2.0f), b = a;
    got.cache(posenc::positions::axis_major(pos, k.axes), posenc::rows_view<float>(a.data(), n, 2 * h));
    REQUIRE(posenc_rope_cache_f32(&want, pos.data(), 0, n, b.data(), 2 * h, b.data() + h, 2 * h) == POSENC_OK);
    CHECK(same_bytes(a, b));
  }

  // Refusals, with the C status; the spec it was called on is unchanged.
  const posenc::rope d(64);
  auto status = [](const posenc::rope &r, std::array<int64_t, 4> s, posenc::rope_layout l) {
    try {
      r.with_sections(s, l);
    } catch (const posenc::error &e) {
      return e.status();
    }
    return POSENC_OK;
  };
  CHECK(status(d, {8, -1, 8, 0}, posenc::rope_layout::chunked) == POSENC_ERR_INVALID);       // negative
  CHECK(status(d, {0, 0, 0, 0}, posenc::rope_layout::chunked) == POSENC_ERR_INVALID);        // sum 0
  CHECK(status(d, {16, 16, 1, 0}, posenc::rope_layout::interleaved) == POSENC_ERR_INVALID);  // past r/2
  CHECK(status(d, {8, 8, 8, 0}, posenc::rope_layout(9)) == POSENC_ERR_INVALID);              // unknown layout
  CHECK(status(posenc::rope(3), {1, 0, 0, 0}, posenc::rope_layout::chunked) == POSENC_ERR_INVALID);
  CHECK(status(posenc::rope(0), {1, 0, 0, 0}, posenc::rope_layout::vision) == POSENC_ERR_INVALID);
  CHECK(status(d.with_base(-1.0), {8, 8, 0, 0}, posenc::rope_layout::vision) == POSENC_ERR_INVALID);
  CHECK(status(d.with_base(-1.0), {8, 8, 0, 0}, posenc::rope_layout::chunked) == POSENC_OK);  // base not read
  CHECK(status(d, {32, 0, 0, 0}, posenc::rope_layout::strided) == POSENC_OK);
  CHECK(d == posenc::rope(64));
  CHECK(d.axes() == 1);
}

TEST_CASE("a rope owns its axis map: copies and moves outlive the original", "[rope][cpp][axes]") {
  const int64_t n = 12;
  for (const posenc::rope &fresh : {posenc::rope::qwen2_vl_vision(), posenc::rope::qwen3_vl()}) {
    INFO("rotary_dim " << fresh.rotary_dim());
    const std::vector<int64_t> pos = mixed_positions(n, fresh.axes(), false);
    const posenc::rope built = fresh.rotary_dim() == 80 ? posenc::rope::qwen2_vl_vision() : posenc::rope::qwen3_vl();
    copies_outlive_original(built, fresh, posenc::positions::axis_major(pos, fresh.axes()), n, axis_of);
  }

  // A C spec's map is copied: changing the caller's array afterwards changes nothing.
  std::vector<uint8_t> mine = {0, 1, 1, 2};
  posenc_rope c = posenc_rope_default(8);
  c.axes = 3;
  c.axis = mine.data();
  const posenc::rope wrapped(c);
  mine.assign(4, 0);
  REQUIRE(wrapped.axis().size() == 4);
  CHECK(wrapped.axis()[3] == 2);
  CHECK(wrapped.c_rope().axis == wrapped.axis().data());
  CHECK(wrapped.axes() == 3);

  // operator== compares the axis count and the map's values, not where the map lives.
  std::vector<uint8_t> same = {0, 1, 1, 2}, other = {0, 1, 2, 2};
  posenc_rope cs = c, co = c, c4 = c;
  cs.axis = same.data();
  co.axis = other.data();
  c4.axes = 4;
  c4.axis = same.data();
  CHECK(posenc::rope(cs) == wrapped);
  CHECK(posenc::rope(co) != wrapped);
  CHECK(posenc::rope(c4) != wrapped);
  CHECK(posenc::rope(8) != wrapped);
  CHECK(posenc::rope::qwen2_vl() != posenc::rope::qwen3_vl().with_base(1.0e6));  // same axes, other map
}

TEST_CASE("multi-axis positions: every wrapper call returns the bytes of its C function", "[rope][cpp][axes]") {
  const int64_t T = 11;
  const Qkv shape{T, 4, 2, 128};
  const posenc::rope ropes[] = {posenc::rope::qwen2_vl(),
                                posenc::rope::qwen3_vl(),
                                posenc::rope::glm4v(),
                                posenc::rope::pixtral(),
                                posenc::rope::llama4_vision().with_attention_scale(0.75),
                                posenc::rope(64).with_sections({4, 4, 4, 4}, posenc::rope_layout::interleaved_4)};
  for (const posenc::rope &rp : ropes) {
    const int axes = rp.axes();
    INFO("rotary_dim " << rp.rotary_dim() << ", axes " << axes);
    REQUIRE(axes > 1);
    const std::vector<int64_t> list = mixed_positions(T, axes, true);
    const posenc::positions pos = posenc::positions::axis_major(list, axes);
    CHECK(pos.is_list());
    CHECK(pos.list() == list.data());
    CHECK(pos.axes() == axes);
    CHECK(pos.size() == T * axes);
    CHECK(pos.tokens() == T);

    const At at = list_at(list, axes);
    for (Call call : {Call::kCacheTables, Call::kCacheCosSin, Call::kThd, Call::kQk, Call::kThdBf16, Call::kThdF16,
                      Call::kQkBf16, Call::kQkF16})
      call_as_c(rp, call, at, shape);
    call_as_c(rp, Call::kCacheCosSin, run_at(77), shape);  // a run: every axis first + t
  }
  // A one-axis spec takes axis_major(list, 1) as a plain list.
  const std::vector<int64_t> one = {5, 9, POSENC_PAD};
  std::vector<float> a(3 * 16, -1.0f), b = a;
  posenc::rope(16).cache(posenc::positions::axis_major(one, 1), posenc::rows_view<float>(a.data(), 3, 16));
  posenc::rope(16).cache(one, posenc::rows_view<float>(b.data(), 3, 16));
  CHECK(same_bytes(a, b));
  CHECK(posenc::positions(one).axes() == 1);
  CHECK(posenc::positions(int64_t(4)).axes() == 1);
  CHECK(posenc::positions(int64_t(4)).size() == 0);
}

TEST_CASE("positions whose axes disagree with the spec throw a clear posenc::error and write nothing",
          "[rope][cpp][axes][bad]") {
  const int64_t T = 4, H = 2, D = 128;
  const posenc::rope vl = posenc::rope::qwen2_vl(), one = posenc::rope::llama2();
  std::vector<float> x = activations(size_t(T * H * D));
  std::vector<uint16_t> y = halves(size_t(T * H * D));
  const auto xv = posenc::heads_view<float>::thd(x.data(), T, H, D);
  const auto yv = posenc::heads_view<uint16_t>::thd(y.data(), T, H, D);
  std::vector<float> cache(size_t(T * D), -1.0f);
  const posenc::rows_view<float> cos_sin(cache.data(), T, D), cos(cache.data(), T, D / 2, D),
      sin(cache.data() + D / 2, T, D / 2, D);
  const std::vector<int64_t> four = {0, 1, 2, 3}, twelve = mixed_positions(T, 3, false),
                             eight = mixed_positions(T, 2, false), thirteen = mixed_positions(13, 1, false);
  const posenc::positions p1 = four, p2 = posenc::positions::axis_major(eight, 2),
                          p3 = posenc::positions::axis_major(twelve, 3),
                          p3_short =
                              posenc::positions::axis_major(posenc::array_view<const int64_t>(twelve.data(), 9), 3),
                          p3_odd = posenc::positions::axis_major(thirteen, 3);

  // The message names both counts.
  auto message = [&](auto fn) {
    try {
      fn();
    } catch (const posenc::error &e) {
      CHECK(e.status() == POSENC_ERR_INVALID);
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string m13 = message([&] { vl.apply(p1, xv); });
  CHECK(m13 == "posenc: " + std::string(posenc_status_string(POSENC_ERR_INVALID)) +
                   ": positions of 1 axis for a RoPE spec of 3 axes");
  CHECK(message([&] { vl.apply(p2, xv); }).find("positions of 2 axes for a RoPE spec of 3 axes") != std::string::npos);
  CHECK(message([&] { one.apply(p3, xv); }).find("positions of 3 axes for a RoPE spec of 1 axis") != std::string::npos);
  CHECK(message([&] { vl.apply(p3_short, xv); }).find("9 position values for 4 tokens of 3 axes") != std::string::npos);
  CHECK(message([&] { vl.apply(p3_odd, xv); }).find("13 position values for 4 tokens of 3 axes") != std::string::npos);

  // Every RoPE call, each mismatch, nothing written.
  for (const posenc::positions *bad : {&p1, &p2, &p3_short, &p3_odd}) {
    INFO("axes " << bad->axes() << ", values " << bad->size());
    CHECK(thrown(cache, [&] { vl.cache(*bad, cos, sin); }) == POSENC_ERR_INVALID);
    CHECK(thrown(cache, [&] { vl.cache(*bad, cos_sin); }) == POSENC_ERR_INVALID);
    CHECK(thrown(x, [&] { vl.apply(*bad, xv); }) == POSENC_ERR_INVALID);
    CHECK(thrown(x, [&] { vl.apply(*bad, xv.subtokens(0, 2), xv.subtokens(2, 2)); }) == POSENC_ERR_INVALID);
    CHECK(thrown(y, [&] { vl.apply_bf16(*bad, yv); }) == POSENC_ERR_INVALID);
    CHECK(thrown(y, [&] { vl.apply_f16(*bad, yv.subtokens(0, 2), yv.subtokens(2, 2)); }) == POSENC_ERR_INVALID);
    CHECK(thrown(x, [&] { vl.shift(*bad, xv); }) == POSENC_ERR_INVALID);
    CHECK(thrown(y, [&] { vl.shift_bf16(*bad, yv); }) == POSENC_ERR_INVALID);
    CHECK(thrown(y, [&] { vl.shift_f16(*bad, yv); }) == POSENC_ERR_INVALID);
  }
  CHECK(thrown(x, [&] { one.apply(p3, xv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(cache, [&] { one.cache(p2, cos_sin); }) == POSENC_ERR_INVALID);
  CHECK(thrown(x, [&] { one.shift(p3, xv); }) == POSENC_ERR_INVALID);
  // The well-shaped calls on the same buffers pass.
  CHECK_NOTHROW(vl.cache(p3, cos, sin));
  CHECK_NOTHROW(vl.apply(p3, xv));
  CHECK_NOTHROW(one.apply(p1, xv));

  // The one-axis calls (tables, add, embeddings) refuse multi-axis positions.
  const posenc::spec s(8);
  std::vector<float> out(size_t(T * 8), -1.0f);
  const std::vector<float> in = activations(size_t(T * 8));
  CHECK(thrown(out, [&] {
          posenc::add_f32(s, posenc::rows_view<const float>(in.data(), T, 8), 1.0f, p3,
                          posenc::rows_view<float>(out.data(), T, 8));
        }) == POSENC_ERR_INVALID);
  CHECK(message([&] {
          posenc::add_f32(s, posenc::rows_view<const float>(in.data(), T, 8), 1.0f,
                          posenc::positions::axis_major(twelve, 3), posenc::rows_view<float>(out.data(), T, 8));
        }).find("positions of 3 axes for a one-axis call") != std::string::npos);

  // posenc::error with a detail.
  const posenc::error e(POSENC_ERR_OUT_OF_RANGE, "why");
  CHECK(e.status() == POSENC_ERR_OUT_OF_RANGE);
  CHECK(std::string(e.what()) == "posenc: " + std::string(posenc_status_string(POSENC_ERR_OUT_OF_RANGE)) + ": why");
}

// ---- The context shift ----------------------------------------------------------------------------------
//
// The bound of one rotation of a pair v = (x, y) by the library, with the float32 c, s of cos a, sin a
// (attention scale 1) and the result rounded once to a format of unit roundoff u (2^-24 f32, 2^-8 bf16,
// 2^-11 f16):
//  - c and s are correctly rounded: each is within half an ulp of cos a, sin a. Both magnitudes are at most
//    1, and at most one of them lies below 1/2 with the other above, so |(c - cos a, s - sin a)| is at most
//    sqrt(2) 2^-25 = 2^-24.5 (both in [1/2, 1): half an ulp is 2^-25 each; one below 1/2: less). The matrix
//    [[c, -s], [s, c]] minus the rotation is 2^-24.5 times (at most) a rotation, so the exact product with
//    the rounded c, s, M v, is within 2^-24.5 |v| of R(a) v, and |M v| <= (1 + 2^-24.5) |v|.
//  - Each component of M v is rounded to double (2^-53) and then to the format (u): within
//    (u + 2^-52) of itself relatively, so the rounded pair is within (u + 2^-52)(1 + 2^-24.5) |v| of M v,
//    less than sqrt(2) u |v| (the form the issue states); subnormal results add at most half their spacing
//    per component, absolutely (the slack below).
// So one rotation is within b |v|, b = 2^-24.5 + sqrt(2) u, of the exact one. With an attention scale m the
// rounded m cos a, m sin a are only within 2^-24 m (a relative half ulp each), and b_m = m (2^-24 +
// sqrt(2) u). Chaining, with each exact rotation norm-preserving:
//  - shift by d, then by -d: |k2 - k0| <= b |k1| + b |k0| <= (2 b + b^2) |k0|;
//  - shift(rope_m(k, p), d) against rope_m(k, p + d): (2 b_m + b (m + b_m)) |k|, which is (3 b + b^2) |k|
//    for m = 1.

namespace {

struct Unit {
  double u, slack;  // unit roundoff of the format, and half its smallest subnormal spacing
};
const Unit kF32{0x1p-24, 0x1p-150}, kBF16{0x1p-8, 0x1p-134}, kF16{0x1p-11, 0x1p-25};

double one_rotation(const Unit &f, double m) {
  return m == 1.0 ? 0x1p-24 / std::sqrt(2.0) + std::sqrt(2.0) * f.u : m * (0x1p-24 + std::sqrt(2.0) * f.u);
}

// Every pair of every head row of got within factor |pair of ref0| (+ slack) of the same pair of want.
// Returns the largest ratio of the distance to the bound (<= 1 passes).
double worst(const std::vector<double> &got, const std::vector<double> &want, const std::vector<double> &ref0,
             int64_t rows, int64_t width, int64_t h, posenc::rope_pairs pairs, double factor, double slack) {
  double w = 0.0;
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t i = 0; i < h; ++i) {
      const int64_t ix = t * width + (pairs == posenc::rope_pairs::halves ? i : 2 * i);
      const int64_t iy = ix + (pairs == posenc::rope_pairs::halves ? h : 1);
      const double dist = std::hypot(got[size_t(ix)] - want[size_t(ix)], got[size_t(iy)] - want[size_t(iy)]);
      const double bound = factor * std::hypot(ref0[size_t(ix)], ref0[size_t(iy)]) + 4 * slack;
      w = std::max(w, dist / bound);
    }
  return w;
}

std::vector<double> widen(const std::vector<float> &v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<double> widen(const std::vector<uint16_t> &v, bool bf16) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16 ? ref::widen_bf16(v[i]) : ref::widen_f16(v[i]);
  return out;
}

// Keys of magnitude 1/2 .. 4 (normal in every format), in f32 and in a 16-bit format.
std::vector<float> keys(size_t n, unsigned seed) {
  std::vector<float> k(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float &v : k) {
    s = s * 1664525u + 1013904223u;
    const float mag = 0.5f + float(s >> 8) * 0x1p-24f * 3.5f;
    v = (s & 1) ? -mag : mag;
  }
  return k;
}
std::vector<uint16_t> keys16(size_t n, unsigned seed, bool bf16) {
  const std::vector<float> k = keys(n, seed);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = bf16 ? ref::narrow_bf16(k[i]) : ref::narrow_f16(k[i]);
  return out;
}

std::vector<int64_t> negated(std::vector<int64_t> d) {
  for (int64_t &v : d)
    if (v != POSENC_PAD) v = -v;
  return d;
}
std::vector<int64_t> added(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

}  // namespace

TEST_CASE("shift is the C rotation by the deltas with attention scale 1", "[rope][cpp][shift]") {
  const int64_t T = 6, H = 3, D = 128;
  const posenc::rope ropes[] = {posenc::rope::qwen2(128, true),  // yarn: attention scale 0.1 ln 4 + 1
                                posenc::rope::llama3_1().with_attention_scale(2.0),
                                posenc::rope::qwen2_vl().with_attention_scale(1.25), posenc::rope::glm4v()};
  CHECK(posenc::rope::qwen2(128, true).attention_scale() > 1.1);
  for (const posenc::rope &rp : ropes) {
    const int axes = rp.axes();
    INFO("rotary_dim " << rp.rotary_dim() << ", axes " << axes << ", m " << rp.attention_scale());
    posenc_rope unit = rp.c_rope();
    unit.attention_scale = 1.0;
    std::vector<int64_t> d(size_t(T * axes));
    for (size_t i = 0; i < d.size(); ++i) d[i] = int64_t(i * 7919 % 4001) - 2000;
    d[2] = POSENC_PAD;  // token 2 stays
    const posenc::positions dp = posenc::positions::axis_major(d, axes);

    const std::vector<float> k0 = keys(size_t(T * H * D), 1);
    std::vector<float> a = k0, b = k0, m = k0;
    rp.shift(dp, posenc::heads_view<float>::thd(a.data(), T, H, D));
    REQUIRE(posenc_rope_f32(&unit, d.data(), 0, T, b.data(), H, H * D, D) == POSENC_OK);
    CHECK(same_bytes(a, b));
    CHECK(std::equal(a.begin() + 2 * H * D, a.begin() + 3 * H * D, k0.begin() + 2 * H * D));  // the PAD token
    rp.apply(dp, posenc::heads_view<float>::thd(m.data(), T, H, D));
    if (rp.attention_scale() != 1.0) CHECK(!same_bytes(a, m));  // apply scales by m; shift must not

    // One delta for every token and axis.
    std::vector<float> u1 = k0, u2 = k0;
    const std::vector<int64_t> same(size_t(T * axes), -123457);
    rp.shift(int64_t(-123457), posenc::heads_view<float>::htd(u1.data(), H, T, D));
    REQUIRE(posenc_rope_f32(&unit, same.data(), 0, T, u2.data(), H, D, T * D) == POSENC_OK);
    CHECK(same_bytes(u1, u2));

    // bf16 and f16.
    for (bool bf16 : {true, false}) {
      INFO((bf16 ? "bf16" : "f16"));
      const std::vector<uint16_t> y0 = keys16(size_t(T * H * D), 2, bf16);
      std::vector<uint16_t> p = y0, q = y0, r = y0, s = y0;
      const auto pv = posenc::heads_view<uint16_t>::thd(p.data(), T, H, D);
      const auto rv = posenc::heads_view<uint16_t>::thd(r.data(), T, H, D);
      if (bf16) {
        rp.shift_bf16(dp, pv);
        REQUIRE(posenc_rope_bf16(&unit, d.data(), 0, T, q.data(), H, H * D, D) == POSENC_OK);
        rp.shift_bf16(int64_t(31), rv);
        REQUIRE(posenc_rope_bf16(&unit, nullptr, 31, 1, s.data(), H * T, D, D) == POSENC_OK);  // one position
      } else {
        rp.shift_f16(dp, pv);
        REQUIRE(posenc_rope_f16(&unit, d.data(), 0, T, q.data(), H, H * D, D) == POSENC_OK);
        rp.shift_f16(int64_t(31), rv);
        REQUIRE(posenc_rope_f16(&unit, nullptr, 31, 1, s.data(), H * T, D, D) == POSENC_OK);
      }
      CHECK(same_bytes(p, q));
      CHECK(same_bytes(r, s));
      CHECK(!same_bytes(p, y0));
    }
  }

  // A run is not a list of deltas; a shift with no tokens does nothing; the spec's own checks still apply.
  const posenc::rope rp = posenc::rope::llama2();
  std::vector<float> x = keys(size_t(T * H * D), 3);
  const auto xv = posenc::heads_view<float>::thd(x.data(), T, H, D);
  std::string what;
  const posenc_status st = thrown(x, [&] {
    try {
      rp.shift(posenc::positions(int64_t(5)), xv);
    } catch (const posenc::error &e) {
      what = e.what();
      throw;
    }
  });
  CHECK(st == POSENC_ERR_INVALID);
  CHECK(what.find("shift(int64_t delta") != std::string::npos);
  CHECK_NOTHROW(rp.shift(int64_t(5), xv.subtokens(0, 0)));
  const std::vector<int64_t> far = {1, 2, int64_t(1) << 31, 4, 5, 6};
  CHECK(thrown(x, [&] { rp.shift(far, xv); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(x, [&] { rp.shift(int64_t(1) << 31, xv); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(x, [&] { rp.with_base(-2.0).shift(int64_t(3), xv); }) == POSENC_ERR_INVALID);
  std::vector<uint16_t> y = keys16(size_t(T * H * D), 4, true);
  const auto yv = posenc::heads_view<uint16_t>::thd(y.data(), T, H, D);
  CHECK(thrown(y, [&] { rp.shift_bf16(posenc::positions(int64_t(0)), yv); }) == POSENC_ERR_INVALID);
  CHECK(thrown(y, [&] { rp.shift_f16(int64_t(3), posenc::heads_view<uint16_t>::thd(y.data(), T, H, D / 2)); }) ==
        POSENC_ERR_INVALID);  // head rows narrower than r
}

TEST_CASE("shift by d then by -d restores the keys within the rotation's rounding", "[rope][cpp][shift]") {
  const int64_t T = 64, H = 2, D = 128;
  const posenc::rope ropes[] = {posenc::rope::llama2(),   posenc::rope::qwen2(128, true), posenc::rope::gpt_j_6b(),
                                posenc::rope::qwen2_vl(), posenc::rope::qwen3_vl(),       posenc::rope::glm4v(),
                                posenc::rope::pixtral()};
  for (const posenc::rope &rp : ropes) {
    const int axes = rp.axes();
    const int64_t h = rp.rotary_dim() / 2;
    INFO("rotary_dim " << rp.rotary_dim() << ", axes " << axes);
    // Deltas up to 2^31 - 1 in size, different per token and axis.
    std::vector<int64_t> d(size_t(T * axes));
    for (size_t i = 0; i < d.size(); ++i)
      d[i] = (i % 5 == 0 ? 2147483647 - int64_t(i) : int64_t(i * i * 977)) * (i % 2 ? -1 : 1);
    const posenc::positions there = posenc::positions::axis_major(d, axes);
    const std::vector<int64_t> nd = negated(d);
    const posenc::positions back = posenc::positions::axis_major(nd, axes);

    const std::vector<float> k0 = keys(size_t(T * H * D), 5);
    std::vector<float> k = k0;
    const auto kv = posenc::heads_view<float>::thd(k.data(), T, H, D);
    rp.shift(there, kv);
    CHECK(!same_bytes(k, k0));
    rp.shift(back, kv);
    const double b = one_rotation(kF32, 1.0);
    const double w = worst(widen(k), widen(k0), widen(k0), T * H, D, h, rp.pairs(), 2 * b + b * b, kF32.slack);
    CHECK(w <= 1.0);
    CHECK(w > 0.0);  // the keys did go through two roundings
    // The rest of each head (past the rotary dim) keeps its bytes.
    for (int64_t row = 0; row < T * H; ++row)
      CHECK(std::memcmp(k.data() + row * D + 2 * h, k0.data() + row * D + 2 * h, size_t(D - 2 * h) * 4) == 0);

    for (bool bf16 : {true, false}) {
      INFO((bf16 ? "bf16" : "f16"));
      const Unit &f = bf16 ? kBF16 : kF16;
      const std::vector<uint16_t> y0 = keys16(size_t(T * H * D), 6, bf16);
      std::vector<uint16_t> y = y0;
      const auto yv = posenc::heads_view<uint16_t>::thd(y.data(), T, H, D);
      if (bf16)
        rp.shift_bf16(there, yv), rp.shift_bf16(back, yv);
      else
        rp.shift_f16(there, yv), rp.shift_f16(back, yv);
      const double b16 = one_rotation(f, 1.0);
      CHECK(worst(widen(y, bf16), widen(y0, bf16), widen(y0, bf16), T * H, D, h, rp.pairs(), 2 * b16 + b16 * b16,
                  f.slack) <= 1.0);
    }
  }
}

TEST_CASE("shift of keys rotated at p equals rotating them at p + d, within the bound", "[rope][cpp][shift]") {
  const int64_t T = 48, H = 2, D = 128;
  const posenc::rope ropes[] = {posenc::rope::llama3_1(),
                                posenc::rope::qwen2(128, true),
                                posenc::rope::deepseek_v2().with_attention_scale(0.8),
                                posenc::rope::qwen2_vl(),
                                posenc::rope::qwen3_vl().with_attention_scale(1.5),
                                posenc::rope::glm4v(),
                                posenc::rope::llama4_vision()};
  for (const posenc::rope &rp : ropes) {
    const int axes = rp.axes();
    const int64_t h = rp.rotary_dim() / 2;
    const double m = rp.attention_scale();
    INFO("rotary_dim " << rp.rotary_dim() << ", axes " << axes << ", m " << m);
    // Positions (text runs and an image block) and deltas of either sign, p + d within (-2^31, 2^31).
    std::vector<int64_t> p = mixed_positions(T, axes, false), d(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] = p[i] * 4099 + (i % 3 == 0 ? 1000000000 : 0);
      d[i] = i % 4 == 0 ? -int64_t(i) * 104729 : int64_t(i % 7) * 150000007 - 3;
    }
    const std::vector<int64_t> pd = added(p, d);
    const std::vector<float> k0 = keys(size_t(T * H * D), 7);
    std::vector<float> shifted = k0, direct = k0;
    rp.apply(posenc::positions::axis_major(p, axes), posenc::heads_view<float>::thd(shifted.data(), T, H, D));
    rp.shift(posenc::positions::axis_major(d, axes), posenc::heads_view<float>::thd(shifted.data(), T, H, D));
    rp.apply(posenc::positions::axis_major(pd, axes), posenc::heads_view<float>::thd(direct.data(), T, H, D));
    const double b = one_rotation(kF32, 1.0), bm = one_rotation(kF32, m);
    const double w =
        worst(widen(shifted), widen(direct), widen(k0), T * H, D, h, rp.pairs(), 2 * bm + b * (m + bm), kF32.slack);
    CHECK(w <= 1.0);

    // The same with the deltas given as one value for every token and axis.
    std::vector<float> s1 = k0, s2 = k0;
    rp.apply(posenc::positions::axis_major(p, axes), posenc::heads_view<float>::thd(s1.data(), T, H, D));
    rp.shift(int64_t(-999999937), posenc::heads_view<float>::thd(s1.data(), T, H, D));
    std::vector<int64_t> p2 = p;
    for (int64_t &v : p2) v -= 999999937;
    rp.apply(posenc::positions::axis_major(p2, axes), posenc::heads_view<float>::thd(s2.data(), T, H, D));
    CHECK(worst(widen(s1), widen(s2), widen(k0), T * H, D, h, rp.pairs(), 2 * bm + b * (m + bm), kF32.slack) <= 1.0);
  }
}

TEST_CASE("real positions: every wrapper call returns the bytes of its C function", "[rope][cpp][real]") {
  const int64_t T = 5, Hq = 4, Hkv = 2, D = 72;
  const std::vector<double> t = {7.5, 0.25, -3.0, 131071.125, 1e-3};
  const posenc::rope ropes[] = {posenc::rope::llama3_1(32).with_attention_scale(1.25), posenc::rope::flux(),
                                posenc::rope::wan()};
  for (const posenc::rope &rp : ropes) {
    const posenc_rope &c = rp.c_rope();
    const int64_t r = rp.rotary_dim(), h = r / 2, d = std::max<int64_t>(D, r);
    std::vector<double> at;  // axes() values per token: axis a at t shifted by a
    for (int a = 0; a < rp.axes(); ++a)
      for (double v : t) at.push_back(v + a);
    INFO("rotary_dim " << r << ", axes " << rp.axes());
    std::vector<float> cw(size_t(T * (h + 3)), -2.0f), sw = cw, cc = cw, sc = cw;
    rp.cache_at(at, posenc::rows_view<float>(cw.data(), T, h, h + 3), posenc::rows_view<float>(sw.data(), T, h, h + 3));
    REQUIRE(posenc_rope_cache_real_f32(&c, at.data(), T, cc.data(), h + 3, sc.data(), h + 3) == POSENC_OK);
    CHECK(same_bytes(cw, cc));
    CHECK(same_bytes(sw, sc));
    std::vector<float> both(size_t(T * r), -2.0f), both_c = both;
    rp.cache_at(at, posenc::rows_view<float>(both.data(), T, r));
    REQUIRE(posenc_rope_cache_real_f32(&c, at.data(), T, both_c.data(), r, both_c.data() + h, r) == POSENC_OK);
    CHECK(same_bytes(both, both_c));
    // the work of the cache, in two parts
    std::vector<float> cw2(cw.size(), -2.0f), sw2 = cw2;
    const posenc::work w = rp.cache_at_work(at, posenc::rows_view<float>(cw2.data(), T, h, h + 3),
                                            posenc::rows_view<float>(sw2.data(), T, h, h + 3));
    REQUIRE(w.run(2, T) == POSENC_OK);
    REQUIRE(w.run(0, 2) == POSENC_OK);
    CHECK(same_bytes(cw2, cc));
    CHECK(same_bytes(sw2, sc));

    const int64_t qrow = (Hq + 2 * Hkv) * d;
    const std::vector<float> x0 = activations(size_t(T * qrow));
    std::vector<float> a = x0, b = x0, e = x0;
    rp.apply_at(at, posenc::heads_view<float>::thd(a.data(), T, 8, d));
    REQUIRE(posenc_rope_real_f32(&c, at.data(), T, b.data(), 8, 8 * d, d) == POSENC_OK);
    CHECK(same_bytes(a, b));
    CHECK(!same_bytes(a, x0));
    REQUIRE(rp.apply_at_work(at, posenc::heads_view<float>::thd(e.data(), T, 8, d)).run(0, T) == POSENC_OK);
    CHECK(same_bytes(e, b));
    using HF = posenc::heads_view<float>;
    using HH = posenc::heads_view<uint16_t>;
    same_as_c(
        x0, [&](float *o) { rp.apply_at(at, HF::fused_q(o, T, Hq, Hkv, d), HF::fused_k(o, T, Hq, Hkv, d)); },
        [&](float *o) { return posenc_rope_qk_real_f32(&c, at.data(), T, o, Hq, qrow, d, o + Hq * d, Hkv, qrow, d); });
    // copy: the bytes apply_at leaves in a copy
    std::vector<float> dst(x0.size(), 9.0f), inplace = x0;
    rp.apply_copy_at(at, posenc::heads_view<const float>::thd(x0.data(), T, 8, d),
                     posenc::heads_view<float>::thd(dst.data(), T, 8, d));
    rp.apply_at(at, posenc::heads_view<float>::thd(inplace.data(), T, 8, d));
    for (int64_t k = 0; k < T * 8; ++k)
      CHECK(std::memcmp(dst.data() + k * d, inplace.data() + k * d, size_t(r) * 4) == 0);
    const std::vector<uint16_t> y0 = halves(size_t(T * qrow));
    same_as_c(
        y0, [&](uint16_t *o) { rp.apply_at_bf16(at, HH::thd(o, T, 8, d)); },
        [&](uint16_t *o) { return posenc_rope_real_bf16(&c, at.data(), T, o, 8, 8 * d, d); });
    same_as_c(
        y0, [&](uint16_t *o) { rp.apply_at_f16(at, HH::fused_q(o, T, Hq, Hkv, d), HH::fused_k(o, T, Hq, Hkv, d)); },
        [&](uint16_t *o) {
          return posenc_rope_qk_real_f16(&c, at.data(), T, o, Hq, qrow, d, o + Hq * d, Hkv, qrow, d);
        });
    // a position count that is not axes() per token throws before anything is written
    std::vector<double> short_t(at.begin(), at.end() - 1);
    a = x0;
    CHECK_THROWS_AS(rp.apply_at(short_t, posenc::heads_view<float>::thd(a.data(), T, 8, d)), posenc::error);
    CHECK(same_bytes(a, x0));
    // a NaN position: OUT_OF_RANGE from the C call, nothing written
    std::vector<double> bad = at;
    bad[1] = std::nan("");
    try {
      rp.apply_at(bad, posenc::heads_view<float>::thd(a.data(), T, 8, d));
      FAIL("no throw");
    } catch (const posenc::error &err) {
      CHECK(err.status() == POSENC_ERR_OUT_OF_RANGE);
    }
    CHECK(same_bytes(a, x0));
  }
}
