// "Kernels allocate nothing per call": after the first use of a spec (its one-time frequency setup),
// no call of any kernel reaches operator new. This binary replaces the global operator new to count.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "support/paths.hpp"

namespace {
std::atomic<long> g_news{0};
}

void *operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new(std::size_t n, std::align_val_t a) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  if (void *p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (n + al - 1) / al * al);
}
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }

TEST_CASE("no allocation per call once a spec is set up", "[alloc]") {
  const int64_t d = 130, n = 70, vocab = 20;
  posenc_spec s = posenc_spec_default(d);
  s.layout = POSENC_SIN_COS_HALVES;
  std::vector<float> out(n * d), x(n * d, 0.5f), table(vocab * d, 0.25f), ptab(n * d, 0.125f);
  std::vector<uint16_t> half(n * d), htab(vocab * d, 0x3c00);
  std::vector<int32_t> tokens(n, 3);
  std::vector<int64_t> pos(n);
  for (int64_t r = 0; r < n; ++r) pos[r] = r % 5 ? r * 1000 : POSENC_PAD;
  const std::vector<posenc_isa> isas = ref::paths();
  // first use: the setup allocates its table (which also shows the counting hook is in place)
  const long fresh = g_news.load();
  REQUIRE(posenc_table_f32(&s, 0, 1, out.data(), d) == POSENC_OK);
  CHECK(g_news.load() > fresh);
  const long before = g_news.load();
  for (posenc_isa isa : isas) {
    REQUIRE(posenc_force_isa(isa) == POSENC_OK);
    for (int rep = 0; rep < 3; ++rep) {
      CHECK(posenc_table_f32(&s, -35, n, out.data(), d) == POSENC_OK);
      CHECK(posenc_rows_f32(&s, pos.data(), n, out.data(), d) == POSENC_OK);
      CHECK(posenc_table_bf16(&s, 9, n, half.data(), d) == POSENC_OK);
      CHECK(posenc_rows_f16(&s, pos.data(), n, half.data(), d) == POSENC_OK);
      CHECK(posenc_add_f32(&s, x.data(), d, 2.0f, pos.data(), 0, n, out.data(), d) == POSENC_OK);
      CHECK(posenc_embed_f32(&s, table.data(), vocab, d, tokens.data(), 2.0f, nullptr, 5, n, out.data(), d) ==
            POSENC_OK);
      CHECK(posenc_embed_bf16(&s, htab.data(), vocab, d, tokens.data(), 1.0f, pos.data(), 0, n, out.data(), d) ==
            POSENC_OK);
      CHECK(posenc_embed_learned_f32(d, table.data(), vocab, d, tokens.data(), 1.0f, ptab.data(), n, d, nullptr, 0, n,
                                     out.data(), d) == POSENC_OK);
      CHECK(posenc_table_f32(&s, 0, n, nullptr, d) == POSENC_ERR_NULL);  // errors allocate nothing either
    }
  }
  CHECK(g_news.load() == before);
}

TEST_CASE("no allocation per RoPE call once a spec is set up", "[alloc][rope]") {
  const int64_t r = 64, d = 80, heads = 4, k_heads = 2, n = 70;
  posenc_rope def = posenc_rope_default(r);
  def.attention_scale = 1.369;
  std::vector<double> freq(r / 2);
  for (size_t i = 0; i < freq.size(); ++i) freq[i] = 1.0 / double(i + 3);
  posenc_rope expl = posenc_rope_default(r);
  expl.pairs = POSENC_ROPE_INTERLEAVED;
  expl.freq = freq.data();
  std::vector<float> q(n * heads * d, 0.5f), k(n * k_heads * d, -0.25f), cs(n * r);
  std::vector<uint16_t> q16(n * heads * d, 0x3c00), k16(n * k_heads * d, 0x3800);
  std::vector<int64_t> pos(n);
  for (int64_t t = 0; t < n; ++t) pos[t] = t % 7 ? t * 1000 : POSENC_PAD;
  // first use of each spec: its setup may allocate
  for (const posenc_rope *rope : {&def, &expl})
    REQUIRE(posenc_rope_cache_f32(rope, nullptr, 0, 1, cs.data(), r, cs.data() + r / 2, r) == POSENC_OK);
  const std::vector<double> same_values = freq;  // equal values at another address: the same spec
  posenc_rope copy = expl;
  copy.freq = same_values.data();
  const std::vector<posenc_isa> isas = ref::paths();
  const long before = g_news.load();
  for (posenc_isa isa : isas) {
    REQUIRE(posenc_force_isa(isa) == POSENC_OK);
    for (int rep = 0; rep < 3; ++rep)
      for (posenc_rope *rope : {&def, &expl, &copy}) {
        CHECK(posenc_rope_cache_f32(rope, pos.data(), 0, n, cs.data(), r, cs.data() + r / 2, r) == POSENC_OK);
        CHECK(posenc_rope_f32(rope, nullptr, 5, n, q.data(), heads, heads * d, d) == POSENC_OK);
        CHECK(posenc_rope_bf16(rope, pos.data(), 0, n, q16.data(), heads, d, n * d) == POSENC_OK);
        CHECK(posenc_rope_f16(rope, pos.data(), 0, n, q16.data(), heads, heads * d, d) == POSENC_OK);
        CHECK(posenc_rope_qk_f32(rope, pos.data(), 0, n, q.data(), heads, heads * d, d, k.data(), k_heads, k_heads * d,
                                 d) == POSENC_OK);
        CHECK(posenc_rope_qk_bf16(rope, nullptr, -3, n, q16.data(), heads, heads * d, d, k16.data(), k_heads,
                                  k_heads * d, d) == POSENC_OK);
        CHECK(posenc_rope_qk_f16(rope, pos.data(), 0, n, q16.data(), heads, heads * d, d, nullptr, 0, 0, 0) ==
              POSENC_OK);
        CHECK(posenc_rope_f32(rope, pos.data(), 0, n, nullptr, heads, d, d) == POSENC_ERR_NULL);  // errors too
      }
  }
  CHECK(g_news.load() == before);
}
