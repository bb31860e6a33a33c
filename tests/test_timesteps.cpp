// Real-valued positions (posenc.h, "Real-valued positions: timestep embeddings"; docs/timesteps.md). The
// reference is MPFR: the exact angle t * position_scale * base^(-i/D) for the double t, sin and cos rounded
// once to float32 (support/reference.cpp). Nothing expected comes from the library:
//  - every output correctly rounded on every path: fractional, integer-valued, negative, huge (up to
//    2^31 - 1 with fractions), tiny (subnormal products) timesteps, every layout, odd widths, bf16 / f16
//    rounded from the float32 value, the fused add as fmaf(scale, x, PE);
//  - an integer-valued t gives the bytes of posenc_rows_f32 at that integer;
//  - the frameworks' formulas (diffusers get_timestep_embedding, latent diffusion / DiT and Flux
//    timestep_embedding, ggml timestep_embedding, Whisper's sinusoids) evaluated as their code writes them,
//    exactly, equal the spec each maps to;
//  - bad input: the documented status, nothing written.
#include <mpfr.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/halves.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/spec.hpp"

namespace {

constexpr double k2p31 = 2147483648.0;

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit(uint64_t &s) { return double(splitmix(s) >> 11) * 0x1p-53; }

using ref::spec_of;

// Timesteps of every kind: diffusion's 0 .. 999 and half steps, flow matching's [0, 1) and sigma * 1000,
// integer-valued ones, negatives, huge ones with fractions, tiny and subnormal ones, signed zeros.
std::vector<double> timesteps(uint64_t seed) {
  std::vector<double> t = {0.0,     -0.0,      1.0,        999.0,         999.5,        0.25,           0.5,
                           0.75,    1e6 + 0.5, -1e6 - 0.5, 2147483647.0,  2147483646.5, -2147483647.75, 0x1p-60,
                           0x1p-61, -0x1p-70,  1e-300,     5e-324,        -5e-324,      0x1p-1022,      123.456,
                           0.001,   14.614641, 1e-5,       0.5 + 0x1p-52, 1.5,          -2.5,           3.5};
  for (int k = 0; k < 24; ++k) {
    const double u = unit(seed);
    t.push_back(u);                                   // flow matching: t in [0, 1)
    t.push_back(1000.0 * u);                          // sigma * 1000
    t.push_back(std::floor(1000 * u));                // DDPM steps
    t.push_back((unit(seed) - 0.5) * k2p31 * 0.999);  // anywhere, with a fraction
  }
  return t;
}

// posenc_timesteps_* on the current path, rows of d elements, row stride d + 3 (gaps keep a canary).
std::vector<float> library_f32(const posenc_spec &s, const std::vector<double> &t) {
  const int64_t d = s.d_model, stride = d + 3, n = int64_t(t.size());
  std::vector<float> buf(size_t(n * stride), -7.25f), out;
  REQUIRE(posenc_timesteps_f32(&s, t.data(), n, buf.data(), stride) == POSENC_OK);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t e = 0; e < d; ++e) out.push_back(buf[size_t(r * stride + e)]);
    for (int64_t e = d; e < stride; ++e) CHECK(ref::bits(buf[size_t(r * stride + e)]) == ref::bits(-7.25f));
  }
  return out;
}

std::vector<float> reference(const posenc_spec &s, const std::vector<double> &t) {
  std::vector<float> want(t.size() * size_t(s.d_model));
  for (size_t r = 0; r < t.size(); ++r) ref::exact_row_real(s, t[r], want.data() + r * size_t(s.d_model));
  return want;
}

void check_spec(const std::string &name, const posenc_spec &s, const std::vector<double> &t) {
  const std::vector<float> want = reference(s, t);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      const std::vector<float> got = library_f32(s, t);
      int64_t bad = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        if (ref::bits(got[k]) == ref::bits(want[k])) continue;
        if (++bad <= 5)
          UNSCOPED_INFO("t = " << t[k / size_t(s.d_model)] << " element " << k % size_t(s.d_model) << ": got " << got[k]
                               << " want " << want[k]);
      }
      INFO(name << " on " << posenc_isa_name(isa) << ": " << bad << " elements not correctly rounded");
      CHECK(bad == 0);
    });
}

}  // namespace

TEST_CASE("timesteps: correctly rounded on every path, every kind of t, every layout", "[timesteps]") {
  uint64_t seed = 1;
  struct Case {
    const char *name;
    posenc_spec s;
  };
  const Case cases[] = {
      {"diffusers 320, flip, shift 1", spec_of(320, POSENC_COS_SIN_HALVES, 10000.0, 159.0, 1.0)},
      {"diffusers 1280, shift 0", spec_of(1280, POSENC_SIN_COS_HALVES, 10000.0, 640.0, 1.0)},
      {"Flux 256 (t * 1000, cos first)", spec_of(256, POSENC_COS_SIN_HALVES, 10000.0, 128.0, 1000.0)},
      {"odd d 33, interleaved, base 1e4", spec_of(33, POSENC_INTERLEAVED, 1e4, 0.0, 1.0)},
      {"d 2, scale -0.75", spec_of(2, POSENC_SIN_COS_HALVES, 1e4, 0.0, -0.75)},
      {"d 70, base 2, scale 3", spec_of(70, POSENC_INTERLEAVED, 2.0, 0.0, 3.0)},
      {"d 64, base 0.5 (growing frequencies up to 2^31)", spec_of(64, POSENC_INTERLEAVED, 0.5, 1.0, 1.0)},
      {"d 16, frequencies near 2^51 (scale 2^50)", spec_of(16, POSENC_SIN_COS_HALVES, 1e4, 0.0, 0x1p50)},
      {"d 20, tiny frequencies (scale 1e-300)", spec_of(20, POSENC_INTERLEAVED, 1e4, 0.0, 1e-300)},
      {"d 12, base 1e300 (negligible lanes)", spec_of(12, POSENC_SIN_COS_HALVES, 1e300, 0.0, 1.0)},
  };
  for (const Case &c : cases) check_spec(c.name, c.s, timesteps(seed++));
}

TEST_CASE("timesteps: values near zero, where only a correct window keeps the fast form honest", "[timesteps]") {
  // The fast form (values_direct.hpp, anchor_real_at) is accepted where [v - 2^-49, v + 2^-49] rounds to one
  // float; its values are within 2^-51.1. Random timesteps almost never put a value where that matters (a float
  // spacing near the error: |v| < 2^-28), so these are built to: t = (pi j + eps) / w_i puts pair i's angle
  // within eps (|eps| <= 2^-26) of a multiple of pi, where sin (or cos, past pi/2) is tiny. A window narrower
  // than the error misrounds many of them.
  uint64_t seed = 77;
  const posenc_spec specs[] = {spec_of(320, POSENC_COS_SIN_HALVES, 10000.0, 160.0, 1.0),
                               spec_of(256, POSENC_INTERLEAVED, 10000.0, 128.0, 1000.0),
                               spec_of(34, POSENC_SIN_COS_HALVES, 2.0, 0.0, 3.0)};
  for (const posenc_spec &s : specs) {
    const int64_t h = s.d_model / 2;
    const double D = s.freq_denominator != 0.0 ? s.freq_denominator : double(h);
    std::vector<double> t;
    for (int k = 0; k < 160; ++k) {
      const int64_t i = int64_t(splitmix(seed) % uint64_t(h));
      const double w = s.position_scale * std::pow(s.base, -double(i) / D);
      const double eps = std::ldexp(unit(seed) - 0.5, -25 - int(splitmix(seed) % 20));
      const double j = double(splitmix(seed) % 64) + (k % 2 ? 0.5 : 0.0);  // sin (j whole) or cos (half) near 0
      const double x = (M_PI * j + eps) / w;
      if (std::fabs(x) < 0.5 * k2p31 && x != 0.0) t.push_back(x);
    }
    check_spec("near-zero values, d " + std::to_string(s.d_model), s, t);
  }
  // Where the fast form's own error is largest: a fractional t at a frequency near the 2^52 bound (fr U ~ 2^50
  // quarter turns). These t put t F within 2e-9 of a multiple of pi (found offline by a double-double search
  // of t F mod pi; tests/test_rope_real.cpp has the same), sin about 2^-30: a narrow window misrounds some.
  std::vector<double> near = {0x1.3333334081d69p-2, 0x1.333334eaa70cdp-2, 0x1.33333694cc431p-2, 0x1.3333383ef1795p-2,
                              0x1.333339e916af9p-2, 0x1.33333b933be5dp-2, 0x1.33333d3d611c1p-2};
  for (size_t k = 0, n = near.size(); k < n; ++k) near.push_back(-near[k]);
  check_spec("near-zero values at a frequency of 1.9 2^50",
             spec_of(2, POSENC_SIN_COS_HALVES, 1e4, 0.0, 0x1.e6a09e667f3bdp+50), near);
}

TEST_CASE("timesteps: an integer-valued t gives the integer position's bytes", "[timesteps]") {
  const posenc_spec specs[] = {spec_of(320, POSENC_COS_SIN_HALVES, 10000.0, 159.0, 1.0),
                               spec_of(67, POSENC_INTERLEAVED, 1e4, 0.0, 1.0),
                               spec_of(64, POSENC_SIN_COS_HALVES, 5e5, 0.0, -0.25)};
  std::vector<int64_t> p = {0, 1, -1, 999, 1000000, -1000000, 2147483647, -2147483647, 77777};
  std::vector<double> t(p.begin(), p.end());
  t.push_back(-0.0);
  p.push_back(0);
  for (const posenc_spec &s : specs)
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        const int64_t d = s.d_model, n = int64_t(p.size());
        std::vector<float> a(size_t(n * d)), b(size_t(n * d));
        REQUIRE(posenc_timesteps_f32(&s, t.data(), n, a.data(), d) == POSENC_OK);
        REQUIRE(posenc_rows_f32(&s, p.data(), n, b.data(), d) == POSENC_OK);
        INFO("d " << d << " on " << posenc_isa_name(isa));
        CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
        std::vector<uint16_t> a16(size_t(n * d)), b16(size_t(n * d));
        REQUIRE(posenc_timesteps_bf16(&s, t.data(), n, a16.data(), d) == POSENC_OK);
        REQUIRE(posenc_rows_bf16(&s, p.data(), n, b16.data(), d) == POSENC_OK);
        CHECK(a16 == b16);
        REQUIRE(posenc_timesteps_f16(&s, t.data(), n, a16.data(), d) == POSENC_OK);
        REQUIRE(posenc_rows_f16(&s, p.data(), n, b16.data(), d) == POSENC_OK);
        CHECK(a16 == b16);
      });
}

TEST_CASE("timesteps: bf16 and f16 are the float32 value rounded to nearest-even; the fused add is one fmaf",
          "[timesteps]") {
  const posenc_spec s = spec_of(96, POSENC_COS_SIN_HALVES, 10000.0, 48.0, 1000.0);
  uint64_t seed = 9;
  const std::vector<double> t = timesteps(seed);
  const std::vector<float> pe = reference(s, t);
  const int64_t d = 96, n = int64_t(t.size());
  std::vector<float> x(size_t(n * d));
  for (float &v : x) v = float(unit(seed) * 8.0 - 4.0);
  const float scale = 1.7f;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      std::vector<uint16_t> bf(size_t(n * d)), hf(size_t(n * d));
      REQUIRE(posenc_timesteps_bf16(&s, t.data(), n, bf.data(), d) == POSENC_OK);
      REQUIRE(posenc_timesteps_f16(&s, t.data(), n, hf.data(), d) == POSENC_OK);
      std::vector<float> out(size_t(n * d));
      REQUIRE(posenc_timesteps_add_f32(&s, x.data(), d, scale, t.data(), n, out.data(), d) == POSENC_OK);
      std::vector<float> inplace = x;
      REQUIRE(posenc_timesteps_add_f32(&s, inplace.data(), d, scale, t.data(), n, inplace.data(), d) == POSENC_OK);
      int64_t bad = 0;
      for (size_t k = 0; k < pe.size(); ++k) {
        bad += bf[k] != ref::narrow_bf16(pe[k]);
        bad += hf[k] != ref::narrow_f16(pe[k]);
        bad += ref::bits(out[k]) != ref::bits(std::fmaf(scale, x[k], pe[k]));
        bad += ref::bits(inplace[k]) != ref::bits(out[k]);
      }
      INFO("path " << posenc_isa_name(isa));
      CHECK(bad == 0);
    });
}

namespace {

// A framework's formula as its code writes it, evaluated exactly: the frequency of pair i from the
// expression's own terms (exp of a log, a quotient), the angle t * scale * frequency, and the layout of its
// concatenation; rounded once to float32. Compared with the spec it maps to (docs/timesteps.md).
struct Framework {
  const char *name;
  int64_t dim;
  // exponent of pair i: -ln(max_period) * num(i) / den, as the code has it
  double max_period;
  double den;          // the divisor of i in the exponent
  double time_factor;  // multiplies t (diffusers' scale, Flux's time_factor)
  bool cos_first;      // cat(cos, sin) instead of cat(sin, cos)
  posenc_spec spec;    // what posenc is asked for
};

std::vector<float> framework_row(const Framework &fw, double t) {
  const int64_t half = fw.dim / 2;
  std::vector<float> row(size_t(fw.dim), 0.0f);  // an odd dim ends with a zero column
  for (int64_t i = 0; i < half; ++i) {
    ref::Big e(2400), w(2400), a(2400), s(2400), c(2400);
    mpfr_set_d(w, fw.max_period, MPFR_RNDN);
    mpfr_log(w, w, MPFR_RNDN);               // ln(max_period)
    mpfr_mul_si(w, w, -long(i), MPFR_RNDN);  // -ln(max_period) * i
    mpfr_div_d(w, w, fw.den, MPFR_RNDN);     // / den
    mpfr_exp(e, w, MPFR_RNDN);               // exp(...): the frequency
    mpfr_mul_d(a, e, t, MPFR_RNDN);          // t * freq
    mpfr_mul_d(a, a, fw.time_factor, MPFR_RNDN);
    mpfr_sin_cos(s, c, a, MPFR_RNDN);
    const float sf = mpfr_get_flt(s, MPFR_RNDN), cf = mpfr_get_flt(c, MPFR_RNDN);
    row[size_t(i)] = fw.cos_first ? cf : sf;
    row[size_t(half + i)] = fw.cos_first ? sf : cf;
  }
  return row;
}

}  // namespace

TEST_CASE("timesteps: the frameworks' formulas evaluated exactly equal their specs", "[timesteps][conventions]") {
  const Framework fws[] = {
      // diffusers get_timestep_embedding(t, 320, flip_sin_to_cos=True, downscale_freq_shift=0, scale=1,
      // max_period=10000) (SD 1.x UNet's Timesteps(320, True, 0)): exponent -ln(max_period) i / (half - shift)
      {"diffusers SD UNet 320", 320, 10000.0, 160.0, 1.0, true, spec_of(320, POSENC_COS_SIN_HALVES, 1e4, 160.0, 1.0)},
      // diffusers default shift 1, no flip, odd dim, scale 2
      {"diffusers 257, shift 1, scale 2", 257, 10000.0, 127.0, 2.0, false,
       spec_of(257, POSENC_SIN_COS_HALVES, 1e4, 127.0, 2.0)},
      // latent diffusion / DiT timestep_embedding(t, 256, max_period=10000): freqs exp(-ln(mp) i / half), cat(cos, sin)
      {"DiT 256", 256, 10000.0, 128.0, 1.0, true, spec_of(256, POSENC_COS_SIN_HALVES, 1e4, 128.0, 1.0)},
      // Flux timestep_embedding(t, 256, time_factor=1000): t * 1000 first
      {"Flux 256", 256, 10000.0, 128.0, 1000.0, true, spec_of(256, POSENC_COS_SIN_HALVES, 1e4, 128.0, 1000.0)},
      // ggml timestep_embedding(timesteps, 1280, 10000): expf(-logf(max_period) j / half), cos then sin,
      // an odd dim's last column 0
      {"ggml 1281", 1281, 10000.0, 640.0, 1.0, true, spec_of(1281, POSENC_COS_SIN_HALVES, 1e4, 640.0, 1.0)},
      // Whisper sinusoids(length, 384, max_timescale=10000): inc = ln(max) / (channels / 2 - 1), cat(sin, cos)
      {"Whisper 384", 384, 10000.0, 191.0, 1.0, false, spec_of(384, POSENC_SIN_COS_HALVES, 1e4, 191.0, 1.0)},
  };
  const std::vector<double> t = {0.0, 1.0, 0.5, 999.0, 999.5, 0.04, 261.25, 1e6 + 0.5, 2147483647.0 - 0.25};
  for (const Framework &fw : fws) {
    std::vector<float> want;
    for (double v : t) {
      const std::vector<float> row = framework_row(fw, v);
      want.insert(want.end(), row.begin(), row.end());
    }
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> got(want.size());
        REQUIRE(posenc_timesteps_f32(&fw.spec, t.data(), int64_t(t.size()), got.data(), fw.dim) == POSENC_OK);
        int64_t bad = 0;
        for (size_t k = 0; k < want.size(); ++k) bad += ref::bits(got[k]) != ref::bits(want[k]);
        INFO(fw.name << " on " << posenc_isa_name(isa));
        CHECK(bad == 0);
      });
  }
}

TEST_CASE("timesteps: bad input gets its status and writes nothing", "[timesteps][bad]") {
  const posenc_spec good = spec_of(16, POSENC_SIN_COS_HALVES, 1e4, 0.0, 1.0);
  const double ok[3] = {0.5, 999.0, 1.25};
  std::vector<float> out(64, -3.0f), x(64, 1.0f);
  std::vector<uint16_t> out16(64, 0x1234);
  auto untouched = [&] {
    for (float v : out) CHECK(ref::bits(v) == ref::bits(-3.0f));
    for (uint16_t v : out16) CHECK(v == 0x1234);
  };
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      INFO("path " << posenc_isa_name(isa));
      for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL, k2p31, -k2p31, 1e300}) {
        const double t[3] = {0.5, bad, 1.0};
        CHECK(posenc_timesteps_f32(&good, t, 3, out.data(), 16) == POSENC_ERR_OUT_OF_RANGE);
        CHECK(posenc_timesteps_bf16(&good, t, 3, out16.data(), 16) == POSENC_ERR_OUT_OF_RANGE);
        CHECK(posenc_timesteps_f16(&good, t, 3, out16.data(), 16) == POSENC_ERR_OUT_OF_RANGE);
        CHECK(posenc_timesteps_add_f32(&good, x.data(), 16, 1.0f, t, 3, out.data(), 16) == POSENC_ERR_OUT_OF_RANGE);
      }
      CHECK(posenc_timesteps_f32(&good, nullptr, 3, out.data(), 16) == POSENC_ERR_NULL);
      CHECK(posenc_timesteps_f32(nullptr, ok, 3, out.data(), 16) == POSENC_ERR_NULL);
      CHECK(posenc_timesteps_f32(&good, ok, 3, nullptr, 16) == POSENC_ERR_NULL);
      CHECK(posenc_timesteps_add_f32(&good, nullptr, 16, 1.0f, ok, 3, out.data(), 16) == POSENC_ERR_NULL);
      CHECK(posenc_timesteps_f32(&good, ok, -1, out.data(), 16) == POSENC_ERR_INVALID);
      CHECK(posenc_timesteps_f32(&good, ok, 3, out.data(), 15) == POSENC_ERR_INVALID);
      CHECK(posenc_timesteps_add_f32(&good, x.data(), 15, 1.0f, ok, 3, out.data(), 16) == POSENC_ERR_INVALID);
      CHECK(posenc_timesteps_f32(&good, nullptr, 0, nullptr, 0) == POSENC_OK);  // n == 0: the spec only
      posenc_spec big = good;
      big.position_scale = 0x1p52;  // w_0 = 1: |s w_0| = 2^52
      CHECK(posenc_timesteps_f32(&big, ok, 3, out.data(), 16) == POSENC_ERR_INVALID);
      big.position_scale = -0x1p53;
      CHECK(posenc_timesteps_f32(&big, ok, 3, out.data(), 16) == POSENC_ERR_INVALID);
      CHECK(posenc_rows_f32(&big, nullptr, 0, nullptr, 16) == POSENC_OK);  // the integer calls take it
      posenc_spec bad = good;
      bad.base = -1.0;
      CHECK(posenc_timesteps_f32(&bad, ok, 3, out.data(), 16) == POSENC_ERR_INVALID);
      CHECK(posenc_timesteps_f32(&bad, ok, 0, out.data(), 16) == POSENC_ERR_INVALID);
      CHECK(posenc_timesteps_f32(&good, ok, int64_t(1) << 62, out.data(), int64_t(1) << 40) == POSENC_ERR_OVERFLOW);
      untouched();
    });
}
