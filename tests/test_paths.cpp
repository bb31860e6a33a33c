// Bit identity: every path against the scalar path on the same calls, any split of a call into row
// ranges against the whole call, and the same rows through posenc_table_f32 and posenc_rows_f32. Also
// strides, unaligned pointers and the bytes around each row, which must stay untouched.
#include <pthread.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "dispatch/cpu.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/spec.hpp"

namespace {

using ref::spec_of;

const float kCanary = -1234.5f;

// A table written with stride d + gap into a canary-filled buffer at an odd float offset.
std::vector<float> table(const posenc_spec &s, int64_t first, int64_t n, int64_t gap, int64_t offset) {
  const int64_t stride = s.d_model + gap;
  std::vector<float> buf(size_t(offset + n * stride + 16), kCanary);
  REQUIRE(posenc_table_f32(&s, first, n, buf.data() + offset, stride) == POSENC_OK);
  for (int64_t k = 0; k < offset; ++k) REQUIRE(buf[k] == kCanary);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < gap; ++g) REQUIRE(buf[offset + r * stride + s.d_model + g] == kCanary);
  for (size_t k = size_t(offset + n * stride); k < buf.size(); ++k) REQUIRE(buf[k] == kCanary);
  return buf;
}

const posenc_spec kSpecs[] = {
    spec_of(512, POSENC_INTERLEAVED),
    spec_of(7, POSENC_SIN_COS_HALVES),
    spec_of(130, POSENC_COS_SIN_HALVES, 1e6, 64.0),
    spec_of(33, POSENC_INTERLEAVED, 2.0, 0.5, -0.25),
    spec_of(1, POSENC_INTERLEAVED),
    spec_of(4097, POSENC_SIN_COS_HALVES, 10000.0, 2047.0, 1000.0),
    spec_of(18, POSENC_INTERLEAVED, 10000.0, 0.0, 1e-20),
};

}  // namespace

TEST_CASE("every path returns the scalar path's bytes", "[paths]") {
  const std::vector<posenc_isa> isas = ref::paths();
  for (const posenc_spec &s : kSpecs) {
    for (int64_t first : {int64_t(0), int64_t(-37), int64_t(999999), (int64_t(1) << 31) - 200}) {
      const int64_t n = s.d_model > 1000 ? 9 : 150;
      std::vector<float> want;
      ref::on_path(POSENC_ISA_SCALAR, [&] { want = table(s, first, n, 3, 1); });
      for (posenc_isa isa : isas)
        ref::on_path(isa, [&] {
          const std::vector<float> got = table(s, first, n, 3, 1);
          INFO("path " << posenc_isa_name(isa) << " d " << s.d_model << " first " << first);
          CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
        });
    }
  }
}

TEST_CASE("row ranges of a call equal the same rows of the whole call", "[paths]") {
  std::mt19937_64 rng(42);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (const posenc_spec &s : kSpecs) {
        const int64_t d = s.d_model, n = d > 1000 ? 70 : 300, first = -100;
        std::vector<float> whole(n * d);
        REQUIRE(posenc_table_f32(&s, first, n, whole.data(), d) == POSENC_OK);
        for (int split = 0; split < 6; ++split) {
          const int64_t a = int64_t(rng() % uint64_t(n)), b = a + int64_t(rng() % uint64_t(n - a)) + 1;
          std::vector<float> part((b - a) * d);
          REQUIRE(posenc_table_f32(&s, first + a, b - a, part.data(), d) == POSENC_OK);
          INFO("path " << posenc_isa_name(isa) << " rows [" << a << ", " << b << ")");
          CHECK(std::memcmp(part.data(), whole.data() + a * d, part.size() * sizeof(float)) == 0);
        }
        // the same rows one at a time through posenc_rows_f32, in reverse order
        std::vector<int64_t> pos(n);
        for (int64_t r = 0; r < n; ++r) pos[r] = first + (n - 1 - r);
        std::vector<float> rows(n * d);
        REQUIRE(posenc_rows_f32(&s, pos.data(), n, rows.data(), d) == POSENC_OK);
        bool same = true;
        for (int64_t r = 0; r < n; ++r)
          same = same && std::memcmp(&rows[r * d], &whole[(n - 1 - r) * d], d * sizeof(float)) == 0;
        CHECK(same);
      }
    });
}

TEST_CASE("explicit positions with padding, repeats and runs on every path", "[paths]") {
  std::mt19937_64 rng(8);
  const posenc_spec s = spec_of(96, POSENC_SIN_COS_HALVES);
  std::vector<int64_t> pos;
  for (int k = 0; k < 400; ++k) {
    const int kind = int(rng() % 5);
    if (kind == 0)
      pos.push_back(POSENC_PAD);
    else if (kind == 1 && !pos.empty() && pos.back() != POSENC_PAD && pos.back() < 2000000000)
      pos.push_back(pos.back() + 1);
    else if (kind == 2 && !pos.empty())
      pos.push_back(pos.back());
    else
      pos.push_back(int64_t(rng() % 4000000000ull) - 2000000000);
  }
  const int64_t n = int64_t(pos.size()), d = s.d_model;
  std::vector<float> want(n * d);
  ref::on_path(POSENC_ISA_SCALAR, [&] { REQUIRE(posenc_rows_f32(&s, pos.data(), n, want.data(), d) == POSENC_OK); });
  for (int64_t r = 0; r < n; ++r)
    if (pos[r] == POSENC_PAD)
      for (int64_t e = 0; e < d; ++e) REQUIRE(ref::bits(want[r * d + e]) == 0u);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<float> got(n * d);
      REQUIRE(posenc_rows_f32(&s, pos.data(), n, got.data(), d) == POSENC_OK);
      INFO("path " << posenc_isa_name(isa));
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    });
}

TEST_CASE("rows at a repeated position (a decode step of a batch or beam) equal one-row calls", "[paths]") {
  // A run of equal positions makes its values once and every row takes them (kernel.hpp: repeated); each
  // row must still be the one-row call's, for tables and for the fused embedding (whose reference is fmaf
  // over the one-row PE).
  std::vector<int64_t> pos;
  for (int k = 0; k < 150; ++k) pos.push_back(123457);  // longer than a block of 65
  pos.push_back(123458);
  pos.push_back(123458);
  pos.push_back(-77);
  for (int k = 0; k < 5; ++k) pos.push_back(0);
  pos.push_back(POSENC_PAD);
  pos.push_back(2000000000);
  pos.push_back(2000000000);
  const int64_t n = int64_t(pos.size()), vocab = 11;
  // d = 2051: 1025 pairs, three chunks of the kernel (the last a partial vector) and the odd column.
  for (const posenc_spec &s : {spec_of(512, POSENC_INTERLEAVED), spec_of(37, POSENC_COS_SIN_HALVES, 1e6, 16.0),
                               spec_of(2051, POSENC_SIN_COS_HALVES)}) {
    const int64_t d = s.d_model;
    std::vector<float> emb(static_cast<size_t>(vocab * d));
    for (size_t e = 0; e < emb.size(); ++e) emb[e] = float(int(e % 97) - 48) * 0.0625f;
    std::vector<int32_t> tok(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) tok[size_t(r)] = int32_t((r * 7) % vocab);
    const float scale = 3.5f;
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        INFO("path " << posenc_isa_name(isa) << " d " << d);
        std::vector<float> rows(static_cast<size_t>(n * d)), fused(static_cast<size_t>(n * d)),
            one(static_cast<size_t>(d));
        REQUIRE(posenc_rows_f32(&s, pos.data(), n, rows.data(), d) == POSENC_OK);
        REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tok.data(), scale, pos.data(), 0, n, fused.data(), d) ==
                POSENC_OK);
        int64_t bad_rows = 0, bad_fused = 0;
        for (int64_t r = 0; r < n; ++r) {
          REQUIRE(posenc_rows_f32(&s, &pos[size_t(r)], 1, one.data(), d) == POSENC_OK);
          if (std::memcmp(&rows[size_t(r * d)], one.data(), sizeof(float) * size_t(d)) != 0) ++bad_rows;
          for (int64_t e = 0; e < d; ++e) {
            const float want = std::fmaf(scale, emb[size_t(tok[size_t(r)] * d + e)], one[size_t(e)]);
            if (ref::bits(fused[size_t(r * d + e)]) != ref::bits(want)) ++bad_fused;
          }
        }
        CHECK(bad_rows == 0);
        CHECK(bad_fused == 0);
      });
  }
}

#if defined(__x86_64__)  // only the x86 paths stream; under qemu the size would only cost time
namespace {

// A number of d-float rows (a multiple of 64) whose output is past the library's streaming threshold
// (cpu.hpp; 99 MiB on a 2-vCPU slice of a 260 MiB L3), so that the whole call streams. Capped at 1 GiB:
// a machine with a larger threshold still checks the split, through the cache.
int64_t rows_past_stream_threshold(int64_t d) {
  const uint64_t t = posenc::detail::stream_threshold_bytes(), cap = uint64_t(1) << 30;
  if (t >= cap) WARN("streaming threshold " << t << " bytes: the big outputs stay below it");
  const uint64_t bytes = std::min(t + t / 16, cap);
  return int64_t((bytes / (sizeof(float) * uint64_t(d)) + 63) / 64 * 64);
}

}  // namespace

TEST_CASE("outputs larger than the caches (non-temporal stores) equal the same rows written in pieces",
          "[paths][big]") {
  // Past the streaming threshold, so the library streams the output; the pieces are small enough to be
  // written through the cache.
  const int64_t d = 3072, n = rows_past_stream_threshold(d);
  for (posenc_layout layout : {POSENC_INTERLEAVED, POSENC_COS_SIN_HALVES})
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        posenc_spec s = spec_of(d, layout);
        // offset 0: rows 64-byte aligned, streamed directly; offset 3: streamed through the L1 stage
        for (int64_t offset : {0, 3}) {
          std::vector<float> buf(size_t(n) * d + 16 + 2), piece(size_t(64) * d);
          const uintptr_t a = reinterpret_cast<uintptr_t>(buf.data());
          float *whole = buf.data() + ((64 - a % 64) % 64) / 4 + offset;
          REQUIRE(posenc_table_f32(&s, -5000, n, whole, d) == POSENC_OK);
          bool same = true;
          for (int64_t r = 0; r < n && same; r += 64) {
            REQUIRE(posenc_table_f32(&s, -5000 + r, 64, piece.data(), d) == POSENC_OK);
            same = std::memcmp(piece.data(), whole + r * d, piece.size() * sizeof(float)) == 0;
          }
          INFO("path " << posenc_isa_name(isa) << " layout " << int(layout) << " offset " << offset);
          CHECK(same);
        }
      });
}

TEST_CASE("gathered embeddings larger than the caches equal the same rows written in pieces", "[paths][big]") {
  // Past the streaming threshold again, from a small vocabulary and position table: posenc_embed_f32
  // (non-temporal stores, the next row's x prefetched) and posenc_embed_learned_f32 (the same for its own
  // loop), whose rows are also checked against fmaf of their inputs on a sample (it has no PE to compute).
  const int64_t d = 3072, n = rows_past_stream_threshold(d), vocab = 97, pos_rows = 61;
  std::mt19937 rng(11);
  std::vector<float> emb(size_t(vocab) * d), pos(size_t(pos_rows) * d);
  for (float &v : emb) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
  for (float &v : pos) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  std::vector<int32_t> tokens(n);
  std::vector<int64_t> positions(n);
  for (int64_t r = 0; r < n; ++r) {
    tokens[size_t(r)] = int32_t(rng() % uint32_t(vocab));
    positions[size_t(r)] = (r * 7) % pos_rows;
  }
  const posenc_spec s = spec_of(d, POSENC_INTERLEAVED);
  const float scale = 55.425625f;
  for (posenc_isa isa : ref::paths()) {
    if (isa == POSENC_ISA_SCALAR) continue;  // it never streams (and is slow under the sanitizers)
    ref::on_path(isa, [&] {
      for (int64_t offset : {0, 3}) {  // 64-byte aligned rows (streamed), and not
        std::vector<float> buf(size_t(n) * d + 16 + 2), piece(size_t(64) * d);
        const uintptr_t a = reinterpret_cast<uintptr_t>(buf.data());
        float *whole = buf.data() + ((64 - a % 64) % 64) / 4 + offset;
        INFO("path " << posenc_isa_name(isa) << " offset " << offset);
        // One quiet NaN with a payload in the embedding (token 5, element 7): the streaming loops leave such
        // a vector to after the loop (sink_pe.hpp, put_fast), and posenc.h's rule returns x's NaN.
        const uint32_t nan_bits = 0x7FC01234u;
        const float saved = emb[size_t(5 * d + 7)];
        std::memcpy(&emb[size_t(5 * d + 7)], &nan_bits, 4);
        auto nan_rows_ok = [&] {
          for (int64_t r = 0; r < n; ++r)
            if (tokens[size_t(r)] == 5 && ref::bits(whole[r * d + 7]) != nan_bits) return false;
          return true;
        };

        REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tokens.data(), scale, nullptr, 100, n, whole, d) ==
                POSENC_OK);
        CHECK(nan_rows_ok());
        bool same = true;
        for (int64_t r = 0; r < n && same; r += 64) {
          REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tokens.data() + r, scale, nullptr, 100 + r, 64,
                                   piece.data(), d) == POSENC_OK);
          same = std::memcmp(piece.data(), whole + r * d, piece.size() * sizeof(float)) == 0;
        }
        CHECK(same);

        // Runs of 64 rows at one position (the repeated-position path, kernel.hpp: repeated), streamed.
        std::vector<int64_t> steps(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r) steps[size_t(r)] = 1000 + r / 64;
        REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tokens.data(), scale, steps.data(), 0, n, whole, d) ==
                POSENC_OK);
        CHECK(nan_rows_ok());
        same = true;
        for (int64_t r = 0; r < n && same; r += 64) {
          REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tokens.data() + r, scale, steps.data() + r, 0, 64,
                                   piece.data(), d) == POSENC_OK);
          same = std::memcmp(piece.data(), whole + r * d, piece.size() * sizeof(float)) == 0;
        }
        CHECK(same);
        emb[size_t(5 * d + 7)] = saved;

        REQUIRE(posenc_embed_learned_f32(d, emb.data(), vocab, d, tokens.data(), scale, pos.data(), pos_rows, d,
                                         positions.data(), 0, n, whole, d) == POSENC_OK);
        same = true;
        for (int64_t r = 0; r < n && same; r += 64) {
          REQUIRE(posenc_embed_learned_f32(d, emb.data(), vocab, d, tokens.data() + r, scale, pos.data(), pos_rows, d,
                                           positions.data() + r, 0, 64, piece.data(), d) == POSENC_OK);
          same = std::memcmp(piece.data(), whole + r * d, piece.size() * sizeof(float)) == 0;
        }
        CHECK(same);
        bool exact = true;
        for (int64_t r = 0; r < n && exact; r += 31) {  // a sample of rows, element by element
          const float *x = emb.data() + int64_t(tokens[size_t(r)]) * d;
          const float *pe = pos.data() + positions[size_t(r)] * d;
          for (int64_t e = 0; e < d && exact; ++e) {
            const float want = std::fmaf(scale, x[e], pe[e]);
            exact = std::memcmp(&want, whole + r * d + e, sizeof(float)) == 0;
          }
        }
        CHECK(exact);
      }
    });
  }
}
#endif

namespace {

// Runs fn on a new thread whose whole stack is `bytes` (or the system minimum if that is larger).
template <class Fn>
bool run_on_small_stack(size_t bytes, Fn fn) {
  const long minimum = sysconf(_SC_THREAD_STACK_MIN);
  if (minimum > 0 && size_t(minimum) > bytes) bytes = size_t(minimum);
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, bytes) != 0) return false;
  pthread_t t;
  auto body = [](void *arg) -> void * {
    (*static_cast<Fn *>(arg))();
    return nullptr;
  };
  const bool started = pthread_create(&t, &attr, body, &fn) == 0;
  pthread_attr_destroy(&attr);
  return started && pthread_join(t, nullptr) == 0;
}

}  // namespace

TEST_CASE("calls fit in a 48 KiB thread stack (docs/api.md)", "[paths]") {
  // The kernels keep their working buffers on the caller's stack (about 30 KiB); a runtime's pool threads
  // may have small stacks. Sanitizer builds grow every frame, so they get more room; an overflow crashes.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const size_t stack = size_t(1) << 20;
#else
  const size_t stack = size_t(48) << 10;
#endif
  const int64_t d = 4096, n = 70, vocab = 5;  // 4 chunks of pairs, two blocks of rows
  const posenc_spec s = spec_of(d, POSENC_INTERLEAVED);
  std::vector<float> emb(size_t(vocab * d));
  for (size_t e = 0; e < emb.size(); ++e) emb[e] = float(int(e % 89) - 44) * 0.125f;
  std::vector<int32_t> tok(static_cast<size_t>(n));
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    tok[size_t(r)] = int32_t(r % vocab);
    pos[size_t(r)] = r < 40 ? 7 : 1000 + r;  // a repeated run, then consecutive positions
  }
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      INFO("path " << posenc_isa_name(isa));
      std::vector<float> table(size_t(n * d)), fused(size_t(n * d)), table2(size_t(n * d)), fused2(size_t(n * d));
      REQUIRE(posenc_table_f32(&s, 3, n, table.data(), d) == POSENC_OK);
      REQUIRE(posenc_embed_f32(&s, emb.data(), vocab, d, tok.data(), 2.0f, pos.data(), 0, n, fused.data(), d) ==
              POSENC_OK);
      posenc_status st1 = POSENC_ERR_UNSUPPORTED, st2 = POSENC_ERR_UNSUPPORTED;
      REQUIRE(run_on_small_stack(stack, [&] {  // no Catch2 assertion on this thread
        st1 = posenc_table_f32(&s, 3, n, table2.data(), d);
        st2 = posenc_embed_f32(&s, emb.data(), vocab, d, tok.data(), 2.0f, pos.data(), 0, n, fused2.data(), d);
      }));
      CHECK(st1 == POSENC_OK);
      CHECK(st2 == POSENC_OK);
      CHECK(table == table2);
      CHECK(fused == fused2);
    });
}
