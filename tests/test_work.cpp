// posenc::work and posenc/threads.hpp (docs/threads.md): every builder's work, run in pieces (1, 2, 3 and 7,
// through run_piece and through run on random ranges, in any order) and through run_parallel on 1 to 7
// threads, writes the bytes of the unsplit wrapper call (the oracle: the claim is "the same bytes"); a
// builder refuses what the unsplit call refuses, with its status, and writes nothing; units, grain,
// pieces, piece and the cost hold what posenc.hpp says of them; a work outlives the spec it was built
// from; a failing piece reaches run_parallel's caller as posenc::error after every thread joined.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "posenc/posenc.hpp"
#include "posenc/threads.hpp"
#include "support/paths.hpp"
#include "support/wrapper.hpp"

namespace {

using posenc::heads_view;
using posenc::positions;
using posenc::rows_view;
using posenc::work;

constexpr int64_t k2p31 = int64_t(1) << 31;

template <class T>
std::vector<T> filled(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (T &e : v) {
    if constexpr (sizeof(T) == 4)
      e = T(float(int64_t(rng() % 8001) - 4000) / 1024.0f);
    else
      e = T(uint16_t(0x3000 + rng() % 0x1000) | uint16_t(rng() & 0x8000));  // finite bf16 and f16
  }
  return v;
}

using ref::same_bytes;
using ref::thrown;

// The ways a work is run here, each from the same starting buffer.
std::vector<std::string> ways() {
  return {"run_piece 1",    "run_piece 2",    "run_piece 3",    "run_piece 7",   "random ranges",
          "run_parallel 1", "run_parallel 2", "run_parallel 3", "run_parallel 7"};
}
void run_way(const work &w, const std::string &way, std::mt19937_64 &rng) {
  if (way.rfind("run_piece", 0) == 0) {
    const int64_t p = std::stoll(way.substr(10));
    for (int64_t k = p - 1; k >= 0; --k) REQUIRE(w.run_piece(k, p) == POSENC_OK);  // the last piece first
  } else if (way == "random ranges") {
    std::vector<int64_t> cuts = {0, w.units()};
    for (int i = 0; i < 5; ++i) cuts.push_back(int64_t(rng() % uint64_t(w.units() + 1)));
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::pair<int64_t, int64_t>> parts;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) parts.push_back({cuts[i], cuts[i + 1]});
    std::shuffle(parts.begin(), parts.end(), rng);
    for (const auto &r : parts) REQUIRE(w.run(r.first, r.second) == POSENC_OK);
  } else {
    posenc::run_parallel(w, std::stoll(way.substr(13)));
  }
}

// For one call: `whole(buffer)` the unsplit wrapper call, `build(buffer)` its work; every way of running the
// work from the same starting bytes gives the whole call's bytes.
template <class T>
void same_as_whole(const char *what, const std::vector<T> &start, const std::function<void(std::vector<T> &)> &whole,
                   const std::function<work(std::vector<T> &)> &build, std::mt19937_64 &rng) {
  std::vector<T> want = start;
  whole(want);
  for (const std::string &way : ways()) {
    std::vector<T> got = start;
    const work w = build(got);
    INFO(what << ", " << way << ", " << w.units() << " units, path " << posenc_isa_name(posenc_active_isa()));
    REQUIRE(same_bytes(got, start));  // building writes nothing
    run_way(w, way, rng);
    CHECK(same_bytes(got, want));
  }
}

// same_as_whole for the wrapper call fn(args...) and its work, fn_work(args...): the call is spelled once, so
// the two cannot drift apart. The arguments name the buffer same_as_whole hands in as b; rng is the test's.
#define SAME_AS_WHOLE(T, what, start, fn, ...)                  \
  same_as_whole<T>(                                             \
      what, start, [&](std::vector<T> &b) { fn(__VA_ARGS__); }, \
      [&](std::vector<T> &b) { return fn##_work(__VA_ARGS__); }, rng)

}  // namespace

TEST_CASE("every table, rows, fused and timestep work writes the bytes of its wrapper call", "[work]") {
  std::mt19937_64 rng(1);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (int64_t n : {1, 2, 7, 65, 66, 131, 400}) {
        const int64_t d = n % 2 ? 67 : 16, stride = d + 3, vocab = 9;
        const posenc::spec s = posenc::spec::fairseq(d).with_layout(posenc::layout(n % 3));
        std::vector<int64_t> pos(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r) pos[size_t(r)] = r % 9 == 4 ? POSENC_PAD : r / 3 * 2 + (r > 60 ? 1000 : 0);
        std::vector<int32_t> tok(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r) tok[size_t(r)] = int32_t((r * 7) % vocab);
        std::vector<double> times(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r) times[size_t(r)] = 999.0 - 7.25 * double(r);
        const size_t out_el = size_t((n - 1) * stride + d);
        const std::vector<float> table32 = filled<float>(size_t(vocab * d), 5),
                                 pos_table = filled<float>(size_t((n + 3) * d), 6);
        const std::vector<uint16_t> table16 = filled<uint16_t>(size_t(vocab * d), 7);
        const std::vector<int64_t> learned_pos = [&] {
          std::vector<int64_t> p(static_cast<size_t>(n));
          for (int64_t r = 0; r < n; ++r) p[size_t(r)] = r % 5 == 3 ? POSENC_PAD : (r * 13) % (n + 3);
          return p;
        }();
        const rows_view<const float> emb32(table32.data(), vocab, d), lt(pos_table.data(), n + 3, d);
        const rows_view<const uint16_t> emb16(table16.data(), vocab, d);
        const std::vector<float> f0 = filled<float>(out_el, 2);
        const std::vector<uint16_t> h0 = filled<uint16_t>(out_el, 3);
        using VF = std::vector<float>;
        using VH = std::vector<uint16_t>;
        auto of = [&](VF &b) { return rows_view<float>(b.data(), n, d, stride); };
        auto oh = [&](VH &b) { return rows_view<uint16_t>(b.data(), n, d, stride); };
        SAME_AS_WHOLE(float, "table_f32", f0, posenc::table_f32, s, 11, of(b));
        SAME_AS_WHOLE(uint16_t, "table_bf16", h0, posenc::table_bf16, s, -3, oh(b));
        SAME_AS_WHOLE(uint16_t, "table_f16", h0, posenc::table_f16, s, k2p31 - n, oh(b));
        SAME_AS_WHOLE(float, "rows_f32", f0, posenc::rows_f32, s, pos, of(b));
        SAME_AS_WHOLE(uint16_t, "rows_bf16", h0, posenc::rows_bf16, s, pos, oh(b));
        SAME_AS_WHOLE(uint16_t, "rows_f16", h0, posenc::rows_f16, s, pos, oh(b));
        // in place: x is the output
        SAME_AS_WHOLE(float, "add_f32 in place", f0, posenc::add_f32, s, of(b), 0.5f, positions(pos), of(b));
        SAME_AS_WHOLE(float, "add_f32 first + r", f0, posenc::add_f32, s, of(b), -2.0f, positions(7), of(b));
        SAME_AS_WHOLE(float, "embed_f32", f0, posenc::embed_f32, s, emb32, tok, 1.5f, positions(pos), of(b));
        SAME_AS_WHOLE(float, "embed_bf16", f0, posenc::embed_bf16, s, emb16, tok, 1.0f, positions(5), of(b));
        SAME_AS_WHOLE(float, "embed_f16", f0, posenc::embed_f16, s, emb16, tok, 3.0f, positions(pos), of(b));
        SAME_AS_WHOLE(float, "embed_learned_f32", f0, posenc::embed_learned_f32, emb32, tok, 2.0f, lt,
                      positions(learned_pos), of(b));
        SAME_AS_WHOLE(float, "timesteps_f32", f0, posenc::timesteps_f32, s, times, of(b));
        SAME_AS_WHOLE(uint16_t, "timesteps_bf16", h0, posenc::timesteps_bf16, s, times, oh(b));
        SAME_AS_WHOLE(uint16_t, "timesteps_f16", h0, posenc::timesteps_f16, s, times, oh(b));
        SAME_AS_WHOLE(float, "timesteps_add_f32 in place", f0, posenc::timesteps_add_f32, s, of(b), 0.25f, times,
                      of(b));
      }
    });
}

TEST_CASE("every RoPE work writes the bytes of its wrapper call", "[work][rope]") {
  std::mt19937_64 rng(2);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (int64_t n : {1, 3, 65, 66, 197}) {
        const int64_t D = 64, qh = 4, kh = 2, h = D / 2;
        // Llama 3.1's frequencies, and Qwen2-VL's 3-axis M-RoPE with a PAD token and an image row
        const posenc::rope one = posenc::rope::llama3_1(64).with_attention_scale(1.25);
        const posenc::rope three =
            posenc::rope::init(64, 1e6).with_sections({8, 12, 12, 0}, posenc::rope_layout::chunked);
        std::vector<int64_t> p1(static_cast<size_t>(n)), p3(static_cast<size_t>(3 * n)), deltas(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) {
          p1[size_t(t)] = t == 2 ? POSENC_PAD : 100 + t;
          deltas[size_t(t)] = t % 4 == 0 ? -17 : 3;
          for (int a = 0; a < 3; ++a) p3[size_t(a * n + t)] = t % 3 == 1 && t != 1 ? 40 + a * (t / 5) : t;
        }
        p3[0] = POSENC_PAD;  // axis 0 only
        const std::vector<int64_t> d3(size_t(3 * n), 5);
        using VF = std::vector<float>;
        using VH = std::vector<uint16_t>;
        const size_t qkv = size_t(n * (qh + 2 * kh) * D);
        const VF f0 = filled<float>(qkv, 9);
        const VH h0 = filled<uint16_t>(qkv, 10);
        auto fq = [&](auto &b) {
          return heads_view<std::remove_reference_t<decltype(b[0])>>::fused_q(b.data(), n, qh, kh, D);
        };
        auto fk = [&](auto &b) {
          return heads_view<std::remove_reference_t<decltype(b[0])>>::fused_k(b.data(), n, qh, kh, D);
        };
        for (const posenc::rope *rp : {&one, &three}) {
          const posenc::rope &r = *rp;
          const positions pos = r.axes() == 1 ? positions(p1) : positions::axis_major(p3, 3);
          const std::string tag = r.axes() == 1 ? "one axis" : "three axes";
          SAME_AS_WHOLE(float, ("apply q+k " + tag).c_str(), f0, r.apply, pos, fq(b), fk(b));
          SAME_AS_WHOLE(float, ("apply q " + tag).c_str(), f0, r.apply, positions(9), fq(b));
          SAME_AS_WHOLE(uint16_t, ("apply_bf16 q+k " + tag).c_str(), h0, r.apply_bf16, pos, fq(b), fk(b));
          SAME_AS_WHOLE(uint16_t, ("apply_bf16 q " + tag).c_str(), h0, r.apply_bf16, pos, fq(b));
          SAME_AS_WHOLE(uint16_t, ("apply_f16 q+k " + tag).c_str(), h0, r.apply_f16, pos, fq(b), fk(b));
          SAME_AS_WHOLE(uint16_t, ("apply_f16 k " + tag).c_str(), h0, r.apply_f16, positions(0), fk(b));
          // out of place: x (the q heads) from the k heads' values in the same buffer, and in place
          auto src_of = [&](auto &b) {
            using T = std::remove_reference_t<decltype(b[0])>;
            return heads_view<const T>(b.data() + qh * D, n, qh, D, (qh + 2 * kh) * D, 0);  // every head from one row
          };
          SAME_AS_WHOLE(float, ("apply_copy " + tag).c_str(), f0, r.apply_copy, pos, src_of(b), fq(b));
          SAME_AS_WHOLE(uint16_t, ("apply_copy_bf16 " + tag).c_str(), h0, r.apply_copy_bf16, pos, src_of(b), fq(b));
          SAME_AS_WHOLE(uint16_t, ("apply_copy_f16 in place " + tag).c_str(), h0, r.apply_copy_f16, pos, fk(b), fk(b));
          // the cache: separate tables and vLLM's cos_sin_cache
          const VF c0 = filled<float>(size_t(n * (D + 3)), 11);
          auto cos_rows = [&](VF &b) { return rows_view<float>(b.data(), n, h, h + 1); };
          auto sin_rows = [&](VF &b) { return rows_view<float>(b.data() + n * (h + 1), n, h, h + 1); };
          SAME_AS_WHOLE(float, ("cache cos, sin " + tag).c_str(), c0, r.cache, pos, cos_rows(b), sin_rows(b));
          SAME_AS_WHOLE(float, ("cache cos_sin " + tag).c_str(), c0, r.cache, pos,
                        rows_view<float>(b.data(), n, D, D + 3));
          // the shift, by a list and by one delta
          const positions dl = r.axes() == 1 ? positions(deltas) : positions::axis_major(d3, 3);
          SAME_AS_WHOLE(float, ("shift list " + tag).c_str(), f0, r.shift, dl, fk(b));
          SAME_AS_WHOLE(float, ("shift -9 " + tag).c_str(), f0, r.shift, -9, fk(b));
          SAME_AS_WHOLE(uint16_t, ("shift_bf16 list " + tag).c_str(), h0, r.shift_bf16, dl, fk(b));
          SAME_AS_WHOLE(uint16_t, ("shift_bf16 4 " + tag).c_str(), h0, r.shift_bf16, 4, fk(b));
          SAME_AS_WHOLE(uint16_t, ("shift_f16 list " + tag).c_str(), h0, r.shift_f16, dl, fq(b));
          SAME_AS_WHOLE(uint16_t, ("shift_f16 -1 " + tag).c_str(), h0, r.shift_f16, -1, fq(b));
        }
      }
    });
}

TEST_CASE("a builder refuses what the unsplit call refuses, with its status, and writes nothing", "[work]") {
  const int64_t n = 70, d = 16;  // 70: the bad value in the last of two blocks
  const posenc::spec s(d);
  std::vector<float> out = filled<float>(size_t(n * d), 4);
  std::vector<uint16_t> out16 = filled<uint16_t>(size_t(n * d), 5);
  const rows_view<float> o(out.data(), n, d);
  const rows_view<uint16_t> o16(out16.data(), n, d);
  std::vector<int64_t> pos(size_t(n), 3);
  std::vector<int32_t> tok(size_t(n), 1);
  std::vector<double> times(size_t(n), 0.5);
  const std::vector<float> table = filled<float>(size_t(4 * d), 6);
  const rows_view<const float> emb(table.data(), 4, d), learned(table.data(), 4, d);
  // shapes (the wrapper's own checks)
  CHECK(thrown(out, [&] { posenc::table_f32_work(s, 0, rows_view<float>(out.data(), n, d - 1)); }) ==
        POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::rows_f32_work(s, posenc::array_view<const int64_t>(pos.data(), n - 1), o); }) ==
        POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] {
          posenc::embed_f32_work(s, emb, posenc::array_view<const int32_t>(tok.data(), 3), 1.0f, positions(0), o);
        }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::timesteps_f32_work(s, posenc::array_view<const double>(times.data(), 2), o); }) ==
        POSENC_ERR_INVALID);
  // the library's checks of the whole call: a bad spec, NULL, the last row's position, token, timestep,
  // learned position
  CHECK(thrown(out, [&] { posenc::table_f32_work(s.with_base(-1.0), 0, o); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::table_f32_work(s, 0, rows_view<float>(nullptr, n, d)); }) == POSENC_ERR_NULL);
  CHECK(thrown(out, [&] { posenc::table_f32_work(s, k2p31 - n + 1, o); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out16, [&] { posenc::table_bf16_work(s, k2p31 - n + 1, o16); }) == POSENC_ERR_OUT_OF_RANGE);
  pos.back() = k2p31;
  CHECK(thrown(out, [&] { posenc::rows_f32_work(s, pos, o); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out16, [&] { posenc::rows_f16_work(s, pos, o16); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out, [&] { posenc::add_f32_work(s, o, 1.0f, positions(pos), o); }) == POSENC_ERR_OUT_OF_RANGE);
  pos.back() = 3;
  tok.back() = 4;
  CHECK(thrown(out, [&] { posenc::embed_f32_work(s, emb, tok, 1.0f, positions(pos), o); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out, [&] { posenc::embed_learned_f32_work(emb, tok, 1.0f, learned, positions(pos), o); }) ==
        POSENC_ERR_OUT_OF_RANGE);
  tok.back() = 1;
  pos.back() = 4;  // past the learned table's 4 rows
  CHECK(thrown(out, [&] { posenc::embed_learned_f32_work(emb, tok, 1.0f, learned, positions(pos), o); }) ==
        POSENC_ERR_OUT_OF_RANGE);
  times.back() = std::numeric_limits<double>::quiet_NaN();
  CHECK(thrown(out, [&] { posenc::timesteps_f32_work(s, times, o); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out, [&] { posenc::timesteps_add_f32_work(s, o, 1.0f, times, o); }) == POSENC_ERR_OUT_OF_RANGE);
  // RoPE: a bad spec, PAD on axis 1, the last token's position, overlapping heads, a short head row
  const posenc::rope r3 = posenc::rope::qwen2_vl();
  std::vector<float> qk = filled<float>(size_t(n * 6 * 128), 8);
  const heads_view<float> q = heads_view<float>::fused_q(qk.data(), n, 4, 1, 128),
                          k = heads_view<float>::fused_k(qk.data(), n, 4, 1, 128);
  std::vector<int64_t> p3(size_t(3 * n), 7);
  p3[size_t(n + 5)] = POSENC_PAD;
  CHECK(thrown(qk, [&] { r3.apply_work(positions::axis_major(p3, 3), q, k); }) == POSENC_ERR_OUT_OF_RANGE);
  p3[size_t(n + 5)] = 7;
  p3.back() = -k2p31;
  CHECK(thrown(qk, [&] { r3.apply_work(positions::axis_major(p3, 3), q, k); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(qk, [&] { r3.shift_work(positions::axis_major(p3, 3), k); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(qk, [&] {
          r3.apply_work(positions(0), q, heads_view<float>(qk.data() + 64, n, 1, 128, 6 * 128, 128));
        }) == POSENC_ERR_INVALID);
  CHECK(thrown(qk, [&] { posenc::rope(128).with_attention_scale(0.0).apply_work(positions(0), q); }) ==
        POSENC_ERR_INVALID);
  CHECK(thrown(qk, [&] { posenc::rope(256).apply_work(positions(0), q); }) == POSENC_ERR_INVALID);  // head_dim 128 < r
  CHECK(thrown(qk, [&] { r3.shift_work(positions(0), k); }) == POSENC_ERR_INVALID);  // a shift takes a list
  CHECK(thrown(qk, [&] { r3.apply_copy_work(positions::axis_major(p3, 3), k, k); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(qk, [&] {
          r3.apply_copy_work(positions(0), heads_view<const float>(qk.data() + 1, n, 4, 128, 6 * 128, 128), q);
        }) == POSENC_ERR_INVALID);  // source rows one element off q's
  CHECK(thrown(qk, [&] { r3.apply_copy_work(positions(0), q.subtokens(0, n - 1), q); }) == POSENC_ERR_INVALID);
  CHECK(thrown(qk, [&] { r3.cache_work(positions(k2p31 - n + 1), rows_view<float>(qk.data(), n, 128)); }) ==
        POSENC_ERR_OUT_OF_RANGE);
}

TEST_CASE("units, grain, pieces, piece and cost", "[work]") {
  const int64_t d = 1024;
  std::vector<float> out(size_t(8192 * d));
  const posenc::spec s(d);
  // a large table: split up to the grains; a decode step of one row: never
  const work big = posenc::table_f32_work(s, 0, rows_view<float>(out.data(), 8192, d));
  CHECK(big.units() == 8192);
  CHECK(big.grain() == 65);
  CHECK(big.pieces(1) == 1);
  CHECK(big.pieces(0) == 1);
  CHECK(big.pieces(-3) == 1);
  CHECK(big.pieces(2) == 2);
  CHECK(big.pieces(7) == 7);
  CHECK(big.pieces(1000) <= (8192 + 64) / 65);  // never more than the grains
  CHECK(big.pieces(1000) >= 7);
  const work wide = posenc::table_f32_work(posenc::spec(65536), 0, rows_view<float>(out.data(), 128, 65536));
  CHECK(wide.pieces(1000) == 2);  // 128 rows: two grains, however much work each holds
  const work step = posenc::table_f32_work(s, 1000, rows_view<float>(out.data(), 1, d));
  CHECK(step.pieces(64) == 1);
  const work small = posenc::table_f32_work(posenc::spec(8), 0, rows_view<float>(out.data(), 300, 8));
  CHECK(small.pieces(2) == 1);  // 300 rows of 8 elements: far below a piece worth a thread
  // the cost: a float32 row of d written, d values, nothing read but the position
  CHECK(big.cost().bytes_written == 4.0 * double(d));
  CHECK(big.cost().values == double(d));
  CHECK(big.cost().cycles > 0.0);
  // grain 1 without blocks
  std::vector<double> times(300, 0.5);
  CHECK(posenc::timesteps_f32_work(s, times, rows_view<float>(out.data(), 300, d)).grain() == 1);
  // piece(): disjoint, in order, covering [0, units), on multiples of the grain but for the end
  for (int64_t units : {int64_t(0), int64_t(1), int64_t(64), int64_t(65), int64_t(66), int64_t(131), int64_t(8192)}) {
    const work w = posenc::table_f32_work(s, 0, rows_view<float>(out.data(), units, d));
    for (int64_t p : {int64_t(1), int64_t(2), int64_t(3), int64_t(7), int64_t(200)}) {
      int64_t at = 0;
      for (int64_t k = 0; k < p; ++k) {
        const auto r = w.piece(k, p);
        INFO("units " << units << " pieces " << p << " piece " << k);
        CHECK(r.first == at);
        CHECK(r.second >= r.first);
        CHECK((r.first % 65 == 0 || r.first == units));
        CHECK((r.second % 65 == 0 || r.second == units));
        at = r.second;
      }
      CHECK(at == units);
    }
    CHECK(w.piece(-1, 3) == std::make_pair(int64_t(0), int64_t(0)));
    CHECK(w.piece(3, 3) == std::make_pair(int64_t(0), int64_t(0)));
  }
  // pieces are as even as the grains allow: 8192 rows = 127 grains in 7 pieces of 18 or 19 grains
  for (int64_t k = 0; k < 7; ++k) {
    const auto r = big.piece(k, 7);
    const int64_t grains = (r.second - r.first + 64) / 65;
    CHECK((grains == 18 || grains == 19));
  }
}

TEST_CASE("run and run_piece refuse ranges outside the call and write nothing", "[work]") {
  const int64_t n = 70, d = 12;
  std::vector<float> out(size_t(n * d), 7.0f);
  const std::vector<float> before = out;
  const work w = posenc::table_f32_work(posenc::spec(d), 0, rows_view<float>(out.data(), n, d));
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  for (const auto &r : std::vector<std::pair<int64_t, int64_t>>{
           {-1, 0}, {0, -1}, {1, 0}, {0, n + 1}, {n, n + 1}, {n + 1, n + 1}, {kMin, 0}, {0, kMax}, {kMin, kMax}}) {
    INFO("run(" << r.first << ", " << r.second << ")");
    CHECK(w.run(r.first, r.second) == POSENC_ERR_INVALID);
  }
  for (const auto &r : std::vector<std::pair<int64_t, int64_t>>{{-1, 3}, {3, 3}, {0, 0}, {0, -2}, {kMax, kMax}}) {
    INFO("run_piece(" << r.first << ", " << r.second << ")");
    CHECK(w.run_piece(r.first, r.second) == POSENC_ERR_INVALID);
  }
  CHECK(same_bytes(out, before));
  for (int64_t b = 0; b <= n; ++b) CHECK(w.run(b, b) == POSENC_OK);
  CHECK(same_bytes(out, before));
  // a default work: nothing to do
  const work none;
  CHECK(none.units() == 0);
  CHECK(none.pieces(4) == 1);
  CHECK(none.run(0, 0) == POSENC_OK);
  CHECK(none.run(0, 1) == POSENC_ERR_INVALID);
  CHECK(none.run_piece(0, 1) == POSENC_OK);
  posenc::run_parallel(none, 4);
}

TEST_CASE("a work and its copies outlive the spec and rope they were built from", "[work][rope]") {
  const int64_t n = 130, D = 32;
  std::vector<float> want = filled<float>(size_t(n * 2 * D), 12), got = want;
  std::vector<int64_t> p2(static_cast<size_t>(2 * n));
  for (int64_t t = 0; t < n; ++t) p2[size_t(t)] = t, p2[size_t(n + t)] = t / 10;
  work copy;
  {
    // explicit frequencies and an axis map, owned by a rope that is gone before the work runs
    const posenc::rope r = posenc::rope::init(D, 1e4).with_sections({8, 8, 0, 0}, posenc::rope_layout::vision);
    r.apply(positions::axis_major(p2, 2), heads_view<float>::thd(want.data(), n, 2, D));
    const work w = r.apply_work(positions::axis_major(p2, 2), heads_view<float>::thd(got.data(), n, 2, D));
    copy = w;
  }
  std::vector<double> scratch(64, 1.0);  // reuse the freed memory
  std::vector<uint8_t> scratch8(64, 0xFF);
  posenc::run_parallel(copy, 3);
  CHECK(same_bytes(got, want));
}

TEST_CASE("run_parallel reports a failing piece after every thread joined", "[work]") {
  // Positions changed after the build break the lifetime rule on purpose: every piece checks the whole call
  // again, so every piece fails with OUT_OF_RANGE and none writes.
  const int64_t n = 4000, d = 256;  // enough work for 7 pieces
  std::vector<float> out = filled<float>(size_t(n * d), 13);
  const std::vector<float> before = out;
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) pos[size_t(r)] = r;
  const work w = posenc::rows_f32_work(posenc::spec(d), pos, rows_view<float>(out.data(), n, d));
  REQUIRE(w.pieces(7) == 7);
  pos.back() = k2p31;
  for (int threads : {1, 2, 7}) {
    posenc_status st = POSENC_OK;
    try {
      posenc::run_parallel(w, threads);
    } catch (const posenc::error &e) {
      st = e.status();
    }
    CHECK(st == POSENC_ERR_OUT_OF_RANGE);
    CHECK(same_bytes(out, before));
  }
}
