// The C++ wrapper (posenc.hpp): each named convention is the spec of docs/conventions.md's table (built here
// field by field, as tests/test_conventions.cpp builds them), every call returns the same bytes as its C
// function, and every refusal throws posenc::error with the C status while leaving the output untouched.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "posenc/posenc.hpp"
#include "support/wrapper.hpp"

namespace {

// A row of the contract table as the C struct: {d_model, layout, base, freq_denominator, position_scale}.
using C = posenc_spec;

// Field by field, bit for bit: "the same spec", not merely an equivalent one.
void same_spec(const posenc::spec &got, const posenc_spec &want) {
  const posenc_spec &c = got.c_spec();
  CHECK(c.d_model == want.d_model);
  CHECK(c.layout == want.layout);
  CHECK(std::memcmp(&c.base, &want.base, sizeof(double)) == 0);
  CHECK(std::memcmp(&c.freq_denominator, &want.freq_denominator, sizeof(double)) == 0);
  CHECK(std::memcmp(&c.position_scale, &want.position_scale, sizeof(double)) == 0);
  CHECK(got == posenc::spec(want));
}

using ref::same_bytes;
using ref::thrown;

// A wrapper call, cpp(view), and its C function, cfn(pointer), on n rows of d elements at `stride`, both
// buffers starting as `fill`: the C function returns POSENC_OK and the two write the same bytes.
template <class T, class Cpp, class C>
void same_as_c(int64_t n, int64_t d, int64_t stride, T fill, Cpp cpp, C cfn) {
  std::vector<T> a(size_t(n * stride), fill), b(size_t(n * stride), fill);
  cpp(posenc::rows_view<T>(a.data(), n, d, stride));
  REQUIRE(cfn(b.data()) == POSENC_OK);
  CHECK(same_bytes(a, b));
}

}  // namespace

TEST_CASE("named conventions are the specs of the contract table", "[cpp]") {
  for (int64_t d : {2, 3, 16, 17, 512}) {
    const int64_t h = d / 2;
    INFO("d_model " << d);
    same_spec(posenc::spec::vaswani(d), C{d, POSENC_INTERLEAVED, 1e4, 0.0, 1.0});
    same_spec(posenc::spec::marian(d), C{d, POSENC_SIN_COS_HALVES, 1e4, 0.0, 1.0});
    same_spec(posenc::spec(d), posenc_spec_default(d));
    same_spec(posenc::spec::fairseq(d), C{d, POSENC_SIN_COS_HALVES, 1e4, double(h - 1), 1.0});
    same_spec(posenc::spec::ctranslate2(d), C{d, POSENC_SIN_COS_HALVES, 1e4, double(h - 1), 1.0});
    const double t2t_den = double(std::max<int64_t>(h - 1, 1));
    same_spec(posenc::spec::tensor2tensor(d), C{d, POSENC_SIN_COS_HALVES, 1e4, t2t_den, 1.0});
    same_spec(posenc::spec::tensor2tensor(d, 0.5, 1e3), C{d, POSENC_SIN_COS_HALVES, 1e3 / 0.5, t2t_den, 0.5});
    same_spec(posenc::spec::ggml_timestep(d), C{d, POSENC_COS_SIN_HALVES, 1e4, 0.0, 1.0});
    same_spec(posenc::spec::ggml_timestep(d, 500.0), C{d, POSENC_COS_SIN_HALVES, 500.0, 0.0, 1.0});
    // diffusers' defaults: flip_sin_to_cos=False, downscale_freq_shift=1, scale=1, max_period=10000.
    same_spec(posenc::spec::diffusers(d), C{d, POSENC_SIN_COS_HALVES, 1e4, double(h) - 1.0, 1.0});
    same_spec(posenc::spec::diffusers(d, true, 0.0, 1000.0, 100.0),
              C{d, POSENC_COS_SIN_HALVES, 100.0, double(h), 1000.0});
    // latent diffusion / DiT timestep_embedding(t, dim, max_period=10000): cat(cos, sin), freqs
    // exp(-ln(max_period) i / half): D = h (0.0), scale 1
    same_spec(posenc::spec::dit(d), C{d, POSENC_COS_SIN_HALVES, 1e4, 0.0, 1.0});
    same_spec(posenc::spec::dit(d, 500.0), C{d, POSENC_COS_SIN_HALVES, 500.0, 0.0, 1.0});
    // Flux timestep_embedding(t, dim, max_period=10000, time_factor=1000.0): t * time_factor first
    same_spec(posenc::spec::flux(d), C{d, POSENC_COS_SIN_HALVES, 1e4, 0.0, 1000.0});
    same_spec(posenc::spec::flux(d, 2000.0, 1.0), C{d, POSENC_COS_SIN_HALVES, 2000.0, 0.0, 1.0});
    // Whisper sinusoids(length, channels, max_timescale=10000): increment ln(max) / (channels // 2 - 1),
    // cat(sin, cos)
    same_spec(posenc::spec::whisper(d), C{d, POSENC_SIN_COS_HALVES, 1e4, double(h - 1), 1.0});
    same_spec(posenc::spec::whisper(d, 500.0), C{d, POSENC_SIN_COS_HALVES, 500.0, double(h - 1), 1.0});
  }
}

TEST_CASE("the timestep conventions' specs encode as their frameworks' denominators say", "[cpp][timesteps]") {
  // D = 0.0 reads as h: dit / flux give the bytes of the spec with D = h written out (test_timesteps.cpp
  // checks those against the frameworks' formulas in MPFR), and whisper's D = h - 1 those of fairseq's
  // frequencies at base max_timescale.
  const std::vector<double> t = {0.0, 0.5, 999.0, 999.5, 0.04, 1e6 + 0.5, -3.25};
  const int64_t n = int64_t(t.size());
  for (int64_t d : {256, 33}) {
    const int64_t h = d / 2;
    const std::pair<posenc::spec, posenc_spec> pairs[] = {
        {posenc::spec::dit(d), C{d, POSENC_COS_SIN_HALVES, 1e4, double(h), 1.0}},
        {posenc::spec::flux(d, 5000.0), C{d, POSENC_COS_SIN_HALVES, 5000.0, double(h), 1000.0}},
        {posenc::spec::whisper(d, 3e4), C{d, POSENC_SIN_COS_HALVES, 3e4, double(h - 1), 1.0}},
    };
    for (const auto &[named, explicit_spec] : pairs) {
      std::vector<float> a(size_t(n * d)), b(size_t(n * d));
      posenc::timesteps_f32(named, t, posenc::rows_view<float>(a.data(), n, d));
      REQUIRE(posenc_timesteps_f32(&explicit_spec, t.data(), n, b.data(), d) == POSENC_OK);
      INFO("d " << d << ", base " << explicit_spec.base);
      CHECK(same_bytes(a, b));
    }
  }
}

TEST_CASE("setters change one field of a copy; validate() refuses what the C calls refuse", "[cpp]") {
  const posenc::spec s = posenc::spec::vaswani(8);
  const posenc::spec t = s.with_layout(posenc::layout::cos_sin_halves)
                             .with_base(2.0)
                             .with_freq_denominator(3.0)
                             .with_position_scale(0.25)
                             .with_d_model(10);
  same_spec(s, posenc_spec_default(8));
  same_spec(t, C{10, POSENC_COS_SIN_HALVES, 2.0, 3.0, 0.25});
  CHECK(t.d_model() == 10);
  CHECK(t.layout() == posenc::layout::cos_sin_halves);
  CHECK(t.base() == 2.0);
  CHECK(t.freq_denominator() == 3.0);
  CHECK(t.position_scale() == 0.25);
  CHECK(s != t);
  CHECK_NOTHROW(t.validate());
  for (const posenc::spec &bad : {s.with_base(0.0), s.with_d_model(0), s.with_freq_denominator(-1.0),
                                  s.with_position_scale(std::numeric_limits<double>::infinity()),
                                  s.with_layout(posenc::layout(7)), posenc::spec::fairseq(1)}) {
    try {
      bad.validate();
      FAIL("validate() accepted a bad spec");
    } catch (const posenc::error &e) {
      CHECK(e.status() == POSENC_ERR_INVALID);
    }
  }
}

TEST_CASE("fairseq_positions is fairseq's make_positions", "[cpp]") {
  // mask = tokens != padding_idx; positions = cumsum(mask) * mask + padding_idx; the padding row is zero.
  const std::vector<int32_t> tokens = {1, 1, 7, 7, 8, 1, 2};
  std::vector<int64_t> got(tokens.size());
  posenc::fairseq_positions(tokens, 1, got);
  CHECK(got == std::vector<int64_t>{POSENC_PAD, POSENC_PAD, 2, 3, 4, POSENC_PAD, 5});
  std::vector<int64_t> short_out(3, -1);
  CHECK(thrown(short_out, [&] { posenc::fairseq_positions(tokens, 1, short_out); }) == POSENC_ERR_INVALID);
}

TEST_CASE("views address rows, sub-ranges and elements as the C strides do", "[cpp]") {
  std::vector<float> buf(5 * 7);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = float(i);
  const posenc::rows_view<float> v(buf.data(), 5, 6, 7);
  CHECK(v(2, 3) == 17.0f);
  CHECK(v.row(4) == buf.data() + 28);
  const posenc::rows_view<float> mid = v.subrows(1, 3);
  CHECK(mid.rows() == 3);
  CHECK(mid.cols() == 6);
  CHECK(mid.stride() == 7);
  CHECK(mid(0, 0) == 7.0f);
  const posenc::rows_view<const float> ro = mid;
  CHECK(ro.data() == mid.data());

  std::vector<int64_t> p = {4, 5, 6, 7};
  const posenc::array_view<int64_t> a = p;
  CHECK(a.size() == 4);
  CHECK(a.subview(1, 2)[1] == 6);
  const posenc::array_view<const int64_t> ca = a;
  CHECK(ca.end() - ca.begin() == 4);
  const posenc::positions run(3), list(p);
  CHECK((!run.is_list() && run.first() == 3 && run.list() == nullptr));
  CHECK((list.is_list() && list.list() == p.data() && list.size() == 4));
}

TEST_CASE("every wrapper call returns the bytes of its C function", "[cpp]") {
  const int64_t d = 12, n = 5, stride = 15, vocab = 9;
  const posenc::spec s = posenc::spec::fairseq(d);
  const posenc_spec &c = s.c_spec();
  const std::vector<int64_t> pos = {3, POSENC_PAD, -40, 1000000, 0};
  const std::vector<int32_t> tok = {8, 0, 3, 3, 5};
  std::vector<float> table(vocab * stride), x(n * stride);
  std::vector<uint16_t> table16(vocab * stride);
  for (size_t i = 0; i < table.size(); ++i) {
    table[i] = std::sin(float(i)) * 0.1f;
    table16[i] = uint16_t(0x3c00 + (i % 97) * 3);  // finite in both bf16 and binary16
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(float(i));
  const posenc::rows_view<const float> tv(table.data(), vocab, d, stride), xv(x.data(), n, d, stride);
  const posenc::rows_view<const uint16_t> t16(table16.data(), vocab, d, stride);

  auto f32 = [&](auto cpp, auto cfn) { same_as_c<float>(n, d, stride, -3.0f, cpp, cfn); };
  auto u16 = [&](auto cpp, auto cfn) { same_as_c<uint16_t>(n, d, stride, 0xdead, cpp, cfn); };
  // The C side of each pair, spelled with short names: T table, H half table, K tokens, P positions.
  const float *T = table.data();
  const uint16_t *H = table16.data();
  const int32_t *K = tok.data();
  const int64_t *P = pos.data();
  f32([&](auto o) { posenc::table_f32(s, 7, o); }, [&](float *o) { return posenc_table_f32(&c, 7, n, o, stride); });
  u16([&](auto o) { posenc::table_bf16(s, 7, o); },
      [&](uint16_t *o) { return posenc_table_bf16(&c, 7, n, o, stride); });
  u16([&](auto o) { posenc::table_f16(s, 7, o); }, [&](uint16_t *o) { return posenc_table_f16(&c, 7, n, o, stride); });
  f32([&](auto o) { posenc::rows_f32(s, pos, o); }, [&](float *o) { return posenc_rows_f32(&c, P, n, o, stride); });
  u16([&](auto o) { posenc::rows_bf16(s, pos, o); },
      [&](uint16_t *o) { return posenc_rows_bf16(&c, P, n, o, stride); });
  u16([&](auto o) { posenc::rows_f16(s, pos, o); }, [&](uint16_t *o) { return posenc_rows_f16(&c, P, n, o, stride); });
  f32([&](auto o) { posenc::add_f32(s, xv, 2.5f, 11, o); },
      [&](float *o) { return posenc_add_f32(&c, x.data(), stride, 2.5f, nullptr, 11, n, o, stride); });
  f32([&](auto o) { posenc::add_f32(s, xv, 2.5f, pos, o); },
      [&](float *o) { return posenc_add_f32(&c, x.data(), stride, 2.5f, P, 0, n, o, stride); });
  f32([&](auto o) { posenc::embed_f32(s, tv, tok, 3.0f, 1, o); },
      [&](float *o) { return posenc_embed_f32(&c, T, vocab, stride, K, 3.0f, nullptr, 1, n, o, stride); });
  f32([&](auto o) { posenc::embed_f32(s, tv, tok, 3.0f, pos, o); },
      [&](float *o) { return posenc_embed_f32(&c, T, vocab, stride, K, 3.0f, P, 0, n, o, stride); });
  f32([&](auto o) { posenc::embed_bf16(s, t16, tok, 0.5f, pos, o); },
      [&](float *o) { return posenc_embed_bf16(&c, H, vocab, stride, K, 0.5f, P, 0, n, o, stride); });
  f32([&](auto o) { posenc::embed_f16(s, t16, tok, 0.5f, 2, o); },
      [&](float *o) { return posenc_embed_f16(&c, H, vocab, stride, K, 0.5f, nullptr, 2, n, o, stride); });
  // The forms written once over the element type, each against its C function: the default (float32) and an
  // explicit bf16 and f16 of each kind.
  using posenc::dtype;
  f32([&](auto o) { posenc::table(s, 7, o); }, [&](float *o) { return posenc_table_f32(&c, 7, n, o, stride); });
  u16([&](auto o) { posenc::table<dtype::f16>(s, 7, o); },
      [&](uint16_t *o) { return posenc_table_f16(&c, 7, n, o, stride); });
  u16([&](auto o) { posenc::rows<dtype::bf16>(s, pos, o); },
      [&](uint16_t *o) { return posenc_rows_bf16(&c, P, n, o, stride); });
  f32([&](auto o) { posenc::embed<dtype::bf16>(s, t16, tok, 0.5f, pos, o); },
      [&](float *o) { return posenc_embed_bf16(&c, H, vocab, stride, K, 0.5f, P, 0, n, o, stride); });
  f32([&](auto o) { posenc::embed(s, tv, tok, 3.0f, pos, o); },
      [&](float *o) { return posenc_embed_f32(&c, T, vocab, stride, K, 3.0f, P, 0, n, o, stride); });
  // Learned positions: the embedding table doubles as a 9-row position table.
  const std::vector<int64_t> learned = {0, 8, 4, 4, 1};
  f32([&](auto o) { posenc::embed_learned_f32(tv, tok, 1.5f, tv, learned, o); },
      [&](float *o) {
        const int64_t *L = learned.data();
        return posenc_embed_learned_f32(d, T, vocab, stride, K, 1.5f, T, vocab, stride, L, 0, n, o, stride);
      });
  f32([&](auto o) { posenc::embed_learned_f32(tv, tok, 1.5f, tv, 2, o); },
      [&](float *o) {
        return posenc_embed_learned_f32(d, T, vocab, stride, K, 1.5f, T, vocab, stride, nullptr, 2, n, o, stride);
      });

  // In place, as the C call allows, and a row split equal to the whole call.
  std::vector<float> inplace = x, whole(n * stride, -3.0f);
  const posenc::rows_view<float> iv(inplace.data(), n, d, stride);
  posenc::add_f32(s, iv, 2.5f, 11, iv);
  REQUIRE(posenc_add_f32(&c, x.data(), stride, 2.5f, nullptr, 11, n, whole.data(), stride) == POSENC_OK);
  for (int64_t r = 0; r < n; ++r) CHECK(std::memcmp(iv.row(r), whole.data() + r * stride, d * sizeof(float)) == 0);
  std::vector<float> split(n * stride, -3.0f);
  const posenc::rows_view<float> sv(split.data(), n, d, stride);
  posenc::embed_f32(s, tv, posenc::array_view<const int32_t>(tok).subview(0, 2), 3.0f, 1, sv.subrows(0, 2));
  posenc::embed_f32(s, tv, posenc::array_view<const int32_t>(tok).subview(2, 3), 3.0f, 3, sv.subrows(2, 3));
  std::vector<float> one(n * stride, -3.0f);
  posenc::embed_f32(s, tv, tok, 3.0f, 1, posenc::rows_view<float>(one.data(), n, d, stride));
  CHECK(same_bytes(split, one));
}

TEST_CASE("the timestep calls return the bytes of their C functions", "[cpp][timesteps]") {
  const int64_t d = 20, n = 6, stride = 23;
  const posenc::spec s = posenc::spec::flux(d);
  const posenc_spec &c = s.c_spec();
  const std::vector<double> t = {0.25, 999.5, -1e6 - 0.5, 0.0, 2147483646.5, 1e-3};
  std::vector<float> x(n * stride);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(float(i)) * 3.0f;
  const posenc::rows_view<const float> xv(x.data(), n, d, stride);
  const double *T = t.data();
  auto f32 = [&](auto cpp, auto cfn) { same_as_c<float>(n, d, stride, -3.0f, cpp, cfn); };
  auto u16 = [&](auto cpp, auto cfn) { same_as_c<uint16_t>(n, d, stride, 0xdead, cpp, cfn); };
  f32([&](auto o) { posenc::timesteps_f32(s, t, o); },
      [&](float *o) { return posenc_timesteps_f32(&c, T, n, o, stride); });
  u16([&](auto o) { posenc::timesteps_bf16(s, t, o); },
      [&](uint16_t *o) { return posenc_timesteps_bf16(&c, T, n, o, stride); });
  u16([&](auto o) { posenc::timesteps_f16(s, t, o); },
      [&](uint16_t *o) { return posenc_timesteps_f16(&c, T, n, o, stride); });
  f32([&](auto o) { posenc::timesteps_add_f32(s, xv, 0.5f, t, o); },
      [&](float *o) { return posenc_timesteps_add_f32(&c, x.data(), stride, 0.5f, T, n, o, stride); });
  // the values are not the integer calls': a fractional t is its own angle
  std::vector<float> frac(n * stride), whole(n * stride);
  posenc::timesteps_f32(s, t, posenc::rows_view<float>(frac.data(), n, d, stride));
  const std::vector<int64_t> rounded = {0, 1000, -1000000, 0, 2147483646, 0};
  posenc::rows_f32(s, rounded, posenc::rows_view<float>(whole.data(), n, d, stride));
  CHECK(std::memcmp(frac.data(), whole.data(), d * sizeof(float)) != 0);
  CHECK(std::memcmp(frac.data() + 3 * stride, whole.data() + 3 * stride, d * sizeof(float)) == 0);  // t = 0
  // in place, and a row split equal to the whole call
  std::vector<float> inplace = x, want(n * stride, -3.0f);
  const posenc::rows_view<float> iv(inplace.data(), n, d, stride);
  posenc::timesteps_add_f32(s, iv, 0.5f, t, iv);
  REQUIRE(posenc_timesteps_add_f32(&c, x.data(), stride, 0.5f, T, n, want.data(), stride) == POSENC_OK);
  for (int64_t r = 0; r < n; ++r) CHECK(std::memcmp(iv.row(r), want.data() + r * stride, d * sizeof(float)) == 0);
  std::vector<float> split(n * stride, -3.0f);
  const posenc::rows_view<float> sv(split.data(), n, d, stride);
  const posenc::array_view<const double> tv(t);
  posenc::timesteps_f32(s, tv.subview(0, 4), sv.subrows(0, 4));
  posenc::timesteps_f32(s, tv.subview(4, 2), sv.subrows(4, 2));
  std::vector<float> one(n * stride, -3.0f);
  posenc::timesteps_f32(s, t, posenc::rows_view<float>(one.data(), n, d, stride));
  CHECK(same_bytes(split, one));
}

TEST_CASE("timestep refusals throw posenc::error with the C status and write nothing", "[cpp][timesteps]") {
  const int64_t d = 8, n = 3;
  const posenc::spec s = posenc::spec::dit(d);
  std::vector<float> out(n * d, -7.25f), x(n * d, 1.0f);
  std::vector<uint16_t> out16(n * d, 0x1234);
  const posenc::rows_view<float> ov(out.data(), n, d);
  const posenc::rows_view<uint16_t> ov16(out16.data(), n, d);
  const posenc::rows_view<const float> xv(x.data(), n, d);
  const std::vector<double> ok = {0.5, 999.0, 1.25}, two = {0.5, 1.0};
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {std::nan(""), inf, -inf, 2147483648.0, -2147483648.0}) {
    const std::vector<double> t = {0.5, bad, 1.0};
    INFO("t " << bad);
    CHECK(thrown(out, [&] { posenc::timesteps_f32(s, t, ov); }) == POSENC_ERR_OUT_OF_RANGE);
    CHECK(thrown(out16, [&] { posenc::timesteps_bf16(s, t, ov16); }) == POSENC_ERR_OUT_OF_RANGE);
    CHECK(thrown(out16, [&] { posenc::timesteps_f16(s, t, ov16); }) == POSENC_ERR_OUT_OF_RANGE);
    CHECK(thrown(out, [&] { posenc::timesteps_add_f32(s, xv, 1.0f, t, ov); }) == POSENC_ERR_OUT_OF_RANGE);
  }
  // a frequency of 2^52: the integer calls take it, the timestep calls refuse it
  const posenc::spec fast = s.with_position_scale(0x1p52);
  CHECK_NOTHROW(fast.validate());
  CHECK(thrown(out, [&] { posenc::timesteps_f32(fast, ok, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::timesteps_f32(s.with_base(-1.0), ok, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::timesteps_f32(s, posenc::array_view<const double>(nullptr, n), ov); }) ==
        POSENC_ERR_NULL);
  CHECK(thrown(out, [&] { posenc::timesteps_f32(s, ok, posenc::rows_view<float>(out.data(), n, d, d - 1)); }) ==
        POSENC_ERR_INVALID);
  // shapes only the views know
  CHECK(thrown(out, [&] { posenc::timesteps_f32(s, two, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out16, [&] { posenc::timesteps_bf16(s, two, ov16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out16, [&] { posenc::timesteps_f16(s.with_d_model(d + 1), ok, ov16); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::timesteps_add_f32(s, xv, 1.0f, two, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] {
          posenc::timesteps_add_f32(s, posenc::rows_view<const float>(x.data(), 2, d), 1.0f, ok, ov);
        }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] {
          posenc::timesteps_add_f32(s, posenc::rows_view<const float>(x.data(), n, d - 1), 1.0f, ok, ov);
        }) == POSENC_ERR_INVALID);
}

TEST_CASE("refusals throw posenc::error with the C status and write nothing", "[cpp]") {
  const int64_t d = 8, n = 3;
  const posenc::spec s = posenc::spec::vaswani(d);
  std::vector<float> out(n * d, -7.25f), table(4 * d, 1.0f);
  const posenc::rows_view<float> ov(out.data(), n, d);
  const posenc::rows_view<const float> tv(table.data(), 4, d);
  const std::vector<int32_t> tok = {0, 1, 2}, bad_tok = {0, 4, 1};
  const std::vector<int64_t> far = {0, int64_t(1) << 31, 1}, two = {0, 1};

  CHECK(thrown(out, [&] { posenc::table_f32(s.with_base(-1.0), 0, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::table_f32(s, 0, posenc::rows_view<float>(nullptr, n, d)); }) == POSENC_ERR_NULL);
  CHECK(thrown(out, [&] { posenc::table_f32(s, 0, posenc::rows_view<float>(out.data(), n, d, d - 1)); }) ==
        POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::table_f32(s, 0, posenc::rows_view<float>(out.data(), int64_t(1) << 62, d)); }) ==
        POSENC_ERR_OVERFLOW);
  CHECK(thrown(out, [&] { posenc::rows_f32(s, far, ov); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out, [&] { posenc::embed_f32(s, tv, bad_tok, 1.0f, 0, ov); }) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(thrown(out, [&] { posenc::embed_learned_f32(tv, tok, 1.0f, tv, 2, ov); }) == POSENC_ERR_OUT_OF_RANGE);
  // Shapes only the views know: the wrapper refuses them before the C call.
  CHECK(thrown(out, [&] { posenc::table_f32(s.with_d_model(d + 1), 0, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::rows_f32(s, two, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::add_f32(s, posenc::rows_view<const float>(table.data(), 2, d), 1.0f, 0, ov); }) ==
        POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::add_f32(s, ov, 1.0f, two, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::embed_f32(s, tv, tok, 1.0f, two, ov); }) == POSENC_ERR_INVALID);
  const posenc::rows_view<const float> narrow(table.data(), 4, d - 1);
  const posenc::array_view<const int32_t> two_tokens = posenc::array_view<const int32_t>(tok).subview(0, 2);
  CHECK(thrown(out, [&] { posenc::embed_f32(s, narrow, tok, 1.0f, 0, ov); }) == POSENC_ERR_INVALID);
  CHECK(thrown(out, [&] { posenc::embed_f32(s, tv, two_tokens, 1.0f, 0, ov); }) == POSENC_ERR_INVALID);

  for (posenc::isa i : {posenc::isa::scalar, posenc::isa::avx2, posenc::isa::avx512, posenc::isa::neon}) {
    if (posenc::isa_available(i)) continue;
    const posenc::isa before = posenc::active_isa();
    try {
      posenc::force_isa(i);
      FAIL("forced a path this machine lacks: " << posenc::isa_name(i));
    } catch (const posenc::error &e) {
      CHECK(e.status() == POSENC_ERR_UNSUPPORTED);
    }
    CHECK(posenc::active_isa() == before);
  }
}

TEST_CASE("the small calls forward to the C ones", "[cpp]") {
  CHECK(std::string(posenc::version()) == posenc_version());
  CHECK(std::string(posenc::status_string(POSENC_ERR_NULL)) == posenc_status_string(POSENC_ERR_NULL));
  CHECK(int(posenc::active_isa()) == int(posenc_active_isa()));
  for (int v = 0; v < POSENC_ISA_COUNT; ++v) {
    CHECK(std::string(posenc::isa_name(posenc::isa(v))) == posenc_isa_name(posenc_isa(v)));
    CHECK(posenc::isa_available(posenc::isa(v)) == (posenc_isa_available(posenc_isa(v)) != 0));
  }
  CHECK_NOTHROW(posenc::check(POSENC_OK));
  CHECK_THROWS_AS(posenc::check(POSENC_ERR_NO_MEMORY), posenc::error);
}
