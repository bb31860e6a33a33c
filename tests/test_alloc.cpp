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
      CHECK(posenc_embed_learned_f32(d, table.data(), vocab, d, tokens.data(), 1.0f, ptab.data(), n, d, nullptr, 0,
                                     n, out.data(), d) == POSENC_OK);
      CHECK(posenc_table_f32(&s, 0, n, nullptr, d) == POSENC_ERR_NULL);  // errors allocate nothing either
    }
  }
  CHECK(g_news.load() == before);
}
