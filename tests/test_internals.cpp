// The building blocks, each against MPFR: the multi-precision arithmetic, the per-spec frequency table,
// the direct method's error bound (which the fast path's correctness rests on), the last-resort exact
// evaluation, and the fast acceptance test on every path.
#include <gmp.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "kernel/kernel.hpp"
#include "posenc/posenc.hpp"
#include "setup/exact.hpp"
#include "setup/freq.hpp"
#include "setup/mp.hpp"
#include "simd/simd_scalar.hpp"
#include "support/isa_hooks.hpp"
#include "support/reference.hpp"

// The splits of posenc.hpp's works and of the Python binding cut on whole blocks (posenc::cost_model): the
// wrapper's public grain is the frequency table's block (lib/ itself includes no part of the C++ wrapper).
static_assert(posenc::cost_model::block_grain == posenc::detail::Freq::kBlock, "the block the splits cut on");

namespace mp = posenc::mp;
using posenc::detail::Freq;

namespace {

void to_mpfr(mpfr_ptr out, const mp::Num &a) {
  mpz_t z;
  mpz_init(z);
  mpz_import(z, size_t(a.n), -1, sizeof(uint64_t), 0, 0, a.m);
  mpfr_set_prec(out, 64 * a.n + 8);
  mpfr_set_z_2exp(out, z, a.e - 64 * a.n, MPFR_RNDN);  // exact
  if (a.neg) mpfr_neg(out, out, MPFR_RNDN);
  mpz_clear(z);
}

// log2 of |a - b| / |b| (or of |a - b| when b == 0).
double rel_err_log2(const mp::Num &a, mpfr_srcptr b) {
  ref::Big x(2000), y(2000);
  to_mpfr(x, a);
  mpfr_set_prec(y, 4000);
  mpfr_sub(y, x, b, MPFR_RNDN);
  if (mpfr_zero_p(y)) return -100000;
  if (!mpfr_zero_p(b)) mpfr_div(y, y, b, MPFR_RNDN);
  mpfr_abs(y, y, MPFR_RNDN);
  long e;
  const double m = mpfr_get_d_2exp(&e, y, MPFR_RNDN);
  return std::log2(m) + double(e);
}

posenc_spec spec(int64_t d, double base, double den, double scale) {
  posenc_spec s = posenc_spec_default(d);
  s.base = base;
  s.freq_denominator = den;
  s.position_scale = scale;
  return s;
}

// frac4(2 s w_i / pi) centred in [-2, 2), from MPFR.
void exact_turns(mpfr_ptr out, const posenc_spec &s, int64_t i) {
  ref::Big a(100), pi(100), four(100);
  ref::angle(a, s, i, 1);
  const mpfr_prec_t prec = mpfr_get_prec(a) + 64;
  mpfr_set_prec(pi, prec);
  mpfr_set_prec(out, prec);
  mpfr_const_pi(pi, MPFR_RNDN);
  mpfr_mul_ui(out, a, 2, MPFR_RNDN);
  mpfr_div(out, out, pi, MPFR_RNDN);
  mpfr_set_prec(four, 8);
  mpfr_set_ui(four, 4, MPFR_RNDN);
  mpfr_fmod(out, out, four, MPFR_RNDN);  // (-4, 4), exact
  if (mpfr_cmp_si(out, 2) >= 0) mpfr_sub_ui(out, out, 4, MPFR_RNDN);
  if (mpfr_cmp_si(out, -2) < 0) mpfr_add_ui(out, out, 4, MPFR_RNDN);
}

}  // namespace

TEST_CASE("direct-method coefficients are the correctly rounded Taylor coefficients", "[internals]") {
  using E = posenc::Engine<posenc::Simd<posenc::scalar_arch>>;
  const double coef[] = {E::kC2,  E::kS3,  E::kC4,  E::kS5,  E::kC6,  E::kS7,  E::kC8,  E::kS9, E::kC10,
                         E::kS11, E::kC12, E::kS13, E::kC14, E::kS15, E::kC16, E::kS17, E::kC18};
  ref::Big hp(400), c(400), f(400);
  mpfr_const_pi(hp, MPFR_RNDN);
  mpfr_div_ui(hp, hp, 2, MPFR_RNDN);
  CHECK(E::kHalfPiHi == mpfr_get_d(hp, MPFR_RNDN));
  mpfr_sub_d(c, hp, E::kHalfPiHi, MPFR_RNDN);
  CHECK(E::kHalfPiLo == mpfr_get_d(c, MPFR_RNDN));
  for (int k = 2; k <= 18; ++k) {
    mpfr_pow_ui(c, hp, unsigned(k), MPFR_RNDN);
    mpfr_fac_ui(f, unsigned(k), MPFR_RNDN);
    mpfr_div(c, c, f, MPFR_RNDN);
    if ((k / 2) % 2 == 1) mpfr_neg(c, c, MPFR_RNDN);
    INFO("k = " << k);
    CHECK(coef[k - 2] == mpfr_get_d(c, MPFR_RNDN));
  }
}

TEST_CASE("multi-precision constants and operations against MPFR", "[internals][mp]") {
  const int n = mp::kMaxLimbs;
  ref::Big want(2000);
  mpfr_const_pi(want, MPFR_RNDN);
  CHECK(rel_err_log2(mp::pi(n), want) < -1525);
  mpfr_const_log2(want, MPFR_RNDN);
  CHECK(rel_err_log2(mp::ln2(n), want) < -1525);
  mpfr_const_pi(want, MPFR_RNDN);
  mpfr_ui_div(want, 2, want, MPFR_RNDN);
  CHECK(rel_err_log2(mp::two_over_pi(n), want) < -1525);

  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int limbs = 1 + int(rng() % mp::kMaxLimbs);
    const double x = std::ldexp(u(rng), int(rng() % 200) - 100), y = std::ldexp(u(rng), int(rng() % 200) - 100);
    const mp::Num a = mp::from_double(x, limbs), b = mp::from_double(y, limbs);
    ref::Big ma(200), mb(200), r(4000);
    mpfr_set_d(ma, x, MPFR_RNDN);
    mpfr_set_d(mb, y, MPFR_RNDN);
    const double bound = 1.0 - 64.0 * limbs;
    mpfr_mul(r, ma, mb, MPFR_RNDN);
    CHECK(rel_err_log2(mp::mul(a, b), r) < bound);
    mpfr_add(r, ma, mb, MPFR_RNDN);
    CHECK(rel_err_log2(mp::add(a, b), r) < bound + 2);  // relative to the sum: cancellation-free here
    const uint64_t k = rng() | 1;
    mpfr_div_ui(r, ma, 0, MPFR_RNDN);
    mpfr_set_d(r, x, MPFR_RNDN);
    mpfr_div_d(r, r, double(k >> 11), MPFR_RNDN);
    CHECK(rel_err_log2(mp::div_u64(a, k >> 11), r) < bound);
    // exp and log
    const double lx = std::ldexp(std::fabs(u(rng)) + 1e-300, int(rng() % 2000) - 1000);
    mpfr_set_d(r, lx, MPFR_RNDN);
    mpfr_log(r, r, MPFR_RNDN);
    CHECK(rel_err_log2(mp::log(lx, limbs), r) < bound + 12);
    const double ex = u(rng) * 700.0;
    mpfr_set_d(r, ex, MPFR_RNDN);
    mpfr_exp(r, r, MPFR_RNDN);
    CHECK(rel_err_log2(mp::exp(mp::from_double(ex, limbs)), r) < bound + 30);
  }
}

TEST_CASE("multi-precision rounding to float and double matches MPFR, subnormals and ties included",
          "[internals][mp]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    // random 120-bit mantissas, exponents across the float range and below; some exact ties
    mp::Num a = mp::zero(2);
    a.m[1] = rng() | (uint64_t(1) << 63);
    a.m[0] = (trial % 5 == 0) ? 0 : rng();
    if (trial % 7 == 0) a.m[1] &= ~((uint64_t(1) << 40) - 1), a.m[1] |= uint64_t(1) << 39, a.m[0] = 0;  // tie
    a.e = int64_t(rng() % 330) - 190;
    a.neg = rng() & 1;
    ref::Big m(200);
    to_mpfr(m, a);
    const float want = mpfr_get_flt(m, MPFR_RNDN);
    CHECK(mp::to_float_bits(a) == ref::bits(want));
    a.e = int64_t(rng() % 1800) - 900;
    to_mpfr(m, a);
    CHECK(mp::to_double(a) == mpfr_get_d(m, MPFR_RNDN));
  }
}

TEST_CASE("sincos_small, split and mod 4 against MPFR", "[internals][mp]") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const double x = std::ldexp(double(rng() >> 11), -53) * 0.785 * ((rng() & 1) ? 1 : -1);
    const mp::Num a = mp::from_double(x, 5);
    mp::Num s, c;
    mp::sincos_small(a, &s, &c);
    ref::Big ms(400), mc(400), mx(100);
    mpfr_set_d(mx, x, MPFR_RNDN);
    mpfr_sin_cos(ms, mc, mx, MPFR_RNDN);
    CHECK(rel_err_log2(s, ms) < -300);
    CHECK(rel_err_log2(c, mc) < -300);
    // split: a big number = k + f exactly
    const double big = std::ldexp(double(rng() >> 11), int(rng() % 40) - 53) * ((rng() & 1) ? 1 : -1);
    int64_t k;
    const mp::Num f = mp::split_nearest_integer(mp::from_double(big, 3), &k);
    ref::Big mf(200);
    to_mpfr(mf, f);
    CHECK(mpfr_cmp_d(mf, 0.5) <= 0);
    CHECK(mpfr_cmp_d(mf, -0.5) >= 0);
    mpfr_add_si(mf, mf, long(k), MPFR_RNDN);
    CHECK(mpfr_cmp_d(mf, big) == 0);
    const mp::Num r = mp::mod4_centered(mp::from_double(big * 1024.0, 3));
    ref::Big mr(200), want(400), four(8);
    to_mpfr(mr, r);
    mpfr_set_d(want, big * 1024.0, MPFR_RNDN);
    mpfr_set_ui(four, 4, MPFR_RNDN);
    mpfr_fmod(want, want, four, MPFR_RNDN);
    if (mpfr_cmp_si(want, 2) >= 0) mpfr_sub_ui(want, want, 4, MPFR_RNDN);
    if (mpfr_cmp_si(want, -2) < 0) mpfr_add_ui(want, want, 4, MPFR_RNDN);
    CHECK(mpfr_equal_p(mr, want));
  }
}

TEST_CASE("frequency table: u_i to 150+ bits, the exact copy to 245 bits, the lanes classified", "[internals][freq]") {
  const posenc_spec specs[] = {spec(512, 10000.0, 0.0, 1.0),   spec(64, 1e6, 1.0, 1000.0),
                               spec(40, 2.0, 0.5, -3.0),       spec(34, 10000.0, 0.0, 0x1p900),
                               spec(34, 10000.0, 0.0, 1e-300), spec(10, 1e300, 1.0, 1.0),
                               spec(8, 0.001, 2.0, 0x1p50),    spec(6, 3.0, 1e-3, 1.0)};
  for (const posenc_spec &s : specs) {
    const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
    REQUIRE(f);
    for (int64_t i = 0; i < f->h; ++i) {
      ref::Big want(100);
      exact_turns(want, s, i);
      const auto &ex = f->exact[i];
      INFO("spec d=" << s.d_model << " base=" << s.base << " scale=" << s.position_scale << " pair " << i);
      if (ex.kind == posenc::detail::kNegligible) {
        ref::Big a(100);
        ref::angle(a, s, i, 1);
        CHECK(mpfr_get_exp(a) < -1090);  // |s w| < 2^-1090
        continue;
      }
      mp::Num u = mp::zero(5);
      std::memcpy(u.m + 1, ex.m, sizeof ex.m);
      u.e = ex.e;
      u.neg = ex.neg;
      CHECK(rel_err_log2(u, want) < -245);
      if (f->slow[i] == 0.0) {
        ref::Big sum(400);
        mpfr_set_d(sum, f->u0[i], MPFR_RNDN);
        mpfr_add_d(sum, sum, f->u1[i], MPFR_RNDN);
        mpfr_add_d(sum, sum, f->u2[i], MPFR_RNDN);
        mpfr_sub(sum, sum, want, MPFR_RNDN);
        mpfr_div(sum, sum, want, MPFR_RNDN);
        CHECK(std::fabs(mpfr_get_d(sum, MPFR_RNDN)) < 0x1p-150);
      } else {
        CHECK(mpfr_get_exp(want) < -895);  // slow lanes are the tiny ones
      }
    }
  }
}

// values_rows.hpp, segment: a vector whose anchor has min(|sin|, |cos|) = m skips the small-value half of the
// acceptance test for the rows within K = floor((m - 2^-12 - 2^-34) reach) - 1 steps of it. That is sound
// when K |step angle| < m - 2^-12 - 2^-34 (docs/math.md section 5), which holds when reach <= 1 / (|step
// angle| (1 + 2^-21)) (the last 2^-21 covers the roundings of the product). The bound is also no looser than
// it needs to be (a looser one would cost speed only, but would mean the formula changed): reach >=
// 1 / (|step angle| (1 + 2^-19)). Slow lanes and zero steps have reach 0: nothing is skipped for them.
TEST_CASE("reach: the steps per radian of margin are below the exact step angle's inverse", "[internals][freq]") {
  const posenc_spec specs[] = {
      spec(512, 10000.0, 0.0, 1.0),    spec(64, 1e6, 1.0, 1000.0),     spec(40, 2.0, 0.5, -3.0),
      spec(34, 10000.0, 0.0, 0x1p900), spec(34, 10000.0, 0.0, 1e-300), spec(10, 1e300, 1.0, 1.0),
      spec(8, 0.001, 2.0, 0x1p50),     spec(6, 3.0, 1e-3, 1.0),        spec(8, 10000.0, 0.0, 0.0)};
  int64_t finite = 0;
  for (const posenc_spec &s : specs) {
    const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
    REQUIRE(f);
    for (int64_t i = 0; i < f->h; ++i) {
      INFO("spec d=" << s.d_model << " base=" << s.base << " scale=" << s.position_scale << " pair " << i);
      if (f->slow[i] != 0.0) {
        CHECK(f->reach[i] == 0.0);
        continue;
      }
      ref::Big angle(100), lo(100), hi(100);
      exact_turns(angle, s, i);
      mpfr_abs(angle, angle, MPFR_RNDN);
      if (mpfr_zero_p(angle)) {  // a zero step: no row ever leaves the anchor's exact (0, 1)
        CHECK(f->reach[i] == 0.0);
        continue;
      }
      mpfr_set_prec(lo, 200);
      mpfr_const_pi(lo, MPFR_RNDN);
      mpfr_mul(angle, angle, lo, MPFR_RNDN);
      mpfr_div_ui(angle, angle, 2, MPFR_RNDN);  // |step angle| = |u| pi / 2 radians
      mpfr_set_prec(lo, mpfr_get_prec(angle) + 64);
      mpfr_set_prec(hi, mpfr_get_prec(angle) + 64);
      mpfr_mul_d(lo, angle, 1.0 + 0x1p-21, MPFR_RNDN);
      mpfr_ui_div(lo, 1, lo, MPFR_RNDN);
      mpfr_mul_d(hi, angle, 1.0 + 0x1p-19, MPFR_RNDN);
      mpfr_ui_div(hi, 1, hi, MPFR_RNDN);
      CHECK(mpfr_cmp_d(lo, f->reach[i]) >= 0);
      CHECK(mpfr_cmp_d(hi, f->reach[i]) <= 0);
      ++finite;
    }
  }
  CHECK(finite > 300);
}

#if POSENC_HAVE_AVX512
// Simd<avx512>::clear_steps against the same formula in exact arithmetic: K is at most the exact
// floor((m - 2^-12 - 2^-34) reach) - 1 of every lane (so every skipped row is clear of zero), at least that
// less one (rounding may cost one step, no more), -1 when a lane has no margin, and 64 at the most.
TEST_CASE("clear_steps: how far from an anchor no row holds a value near zero", "[internals][freq]") {
  if (!posenc_isa_available(POSENC_ISA_AVX512)) return;
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), expo(-40.0, 2.0);
  int64_t checked = 0, clear = 0;
  for (int t = 0; t < 20000; ++t) {
    double s[8], c[8], reach[8];
    for (int l = 0; l < 8; ++l) {
      const double a = 3.2 * unit(rng);
      s[l] = std::sin(a);
      c[l] = std::cos(a);
      reach[l] = std::exp2(-expo(rng));  // steps per radian: step angles from 2^-40 to 4
      if (t % 7 == 0 && l == t % 8) s[l] = (0x1p-12 + 0x1p-34) * (1 + unit(rng) * 0x1p-40);  // at the edge
      if (t % 11 == 0) reach[l] = 0.0;                                                       // a slow lane
    }
    // the exact answer: min over lanes of floor((m - 2^-12 - 2^-34) reach), each in MPFR
    int64_t exact = 1 << 20;
    for (int l = 0; l < 8; ++l) {
      ref::Big q(300);
      mpfr_set_d(q, std::min(std::fabs(s[l]), std::fabs(c[l])), MPFR_RNDN);
      mpfr_sub_d(q, q, 0x1p-12 + 0x1p-34, MPFR_RNDN);
      mpfr_mul_d(q, q, reach[l], MPFR_RNDN);
      mpfr_floor(q, q);
      exact = std::min<int64_t>(exact, std::max<int64_t>(-1, std::min<int64_t>(mpfr_get_si(q, MPFR_RNDN), 65)));
    }
    const int64_t k = posenc::avx512::clear_steps(s, c, reach);
    INFO("trial " << t << " exact floor " << exact << " got " << k);
    CHECK(k <= std::max<int64_t>(-1, exact - 1));
    CHECK(k >= std::max<int64_t>(-1, exact - 2));
    CHECK(k <= 64);
    ++checked;
    clear += k >= 0;
  }
  CHECK(checked == 20000);
  CHECK(clear > 1000);  // the cases are not all trivial
}
#endif

// docs/math.md: relative 2^-50 from the polynomials and roundings, absolute 2^-104 from the reduction
// (the angle in quarter turns is known to 2^-105.9); the code's bound is 2^-47 |y| + 2^-97 min(1, |p u0|).
TEST_CASE("the direct method stays within 2^-50 |y| + 2^-104, the analysed bound", "[internals][direct]") {
  std::mt19937_64 rng(99);
  double worst = -1000;
  const posenc_spec specs[] = {spec(512, 10000.0, 0.0, 1.0), spec(64, 1e6, 0.0, 1.0), spec(30, 2.0, 3.0, 7.5),
                               spec(34, 10000.0, 0.0, 0x1p200)};
  for (const posenc_spec &s : specs) {
    const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
    for (int trial = 0; trial < 3000; ++trial) {
      const int64_t i = int64_t(rng() % uint64_t(f->h));
      int64_t p = int64_t(rng() % (uint64_t(1) << 31));
      if (trial % 3 == 0) p %= 100;
      if (trial % 2) p = -p;
      double out[4];
      posenc::scalar::direct_pair(*f, i, p, out);
      ref::Big es(100), ec(100);
      ref::exact_pair(s, i, p, es, ec);
      for (int k = 0; k < 2; ++k) {
        ref::Big diff(1200);
        mpfr_sub_d(diff, k == 0 ? (mpfr_srcptr)es : (mpfr_srcptr)ec, out[k], MPFR_RNDN);
        mpfr_abs(diff, diff, MPFR_RNDN);
        const double err = mpfr_get_d(diff, MPFR_RNDU);
        const double bound = std::ldexp(std::fabs(out[k]), -50) + 0x1p-104;
        INFO("pair " << i << " position " << p << " value " << out[k] << " error " << err);
        CHECK(err <= bound);
        if (out[k] != 0) worst = std::max(worst, std::log2(err / std::fabs(out[k])));
        CHECK(out[2 + k] >= std::ldexp(std::fabs(out[k]), -47));  // the code's bound: 8x the analysed one
      }
    }
  }
  WARN("direct method: worst relative error 2^" << worst);
  CHECK(worst < -51);
}

namespace {

// MPFR's sin and cos at an integer position p, or at a real one t (the timestep rows).
void exact_at(const posenc_spec &s, int64_t i, int64_t p, mpfr_ptr es, mpfr_ptr ec) {
  ref::exact_pair(s, i, p, es, ec);
}
void exact_at(const posenc_spec &s, int64_t i, double t, mpfr_ptr es, mpfr_ptr ec) {
  ref::exact_pair_real(s, i, t, es, ec);
}

struct Anchored {
  double worst = -1000;  // log2 of the largest absolute error
  int64_t compared = 0;
};

// Every path's anchor values (the sin and cos of every pair at one position, as doubles: `entry` of
// IsaTestEntries) against MPFR, 40 positions a spec from at(trial): each value within 2^-51 absolute, and
// whatever also(error) asserts of it. Wide specs compare every 7th pair, another one each trial.
template <class Pos, class At, class Also>
Anchored anchors_against_mpfr(void (*posenc::IsaTestEntries::*entry)(const Freq &, Pos, double *, double *),
                              std::initializer_list<posenc_spec> specs, At at, Also also) {
  struct Path {
    const char *name;
    void (*fn)(const Freq &, Pos, double *, double *);
  };
  std::vector<Path> paths;
  for (const posenc::IsaTestEntries &e : posenc::compiled_isas())
    if (posenc_isa_available(e.isa)) paths.push_back({posenc_isa_name(e.isa), e.*entry});
  Anchored a;
  for (const posenc_spec &s : specs) {
    const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
    const size_t bytes = sizeof(double) * size_t(f->padded);
    struct Free {
      void operator()(double *p) const { std::free(p); }
    };
    std::vector<std::unique_ptr<double, Free>> out;
    for (size_t k = 0; k < 2 * paths.size(); ++k)
      out.emplace_back(static_cast<double *>(std::aligned_alloc(64, bytes)));
    for (int trial = 0; trial < 40; ++trial) {
      const Pos p = at(trial);
      for (size_t k = 0; k < paths.size(); ++k) paths[k].fn(*f, p, out[2 * k].get(), out[2 * k + 1].get());
      const int64_t step = f->h > 64 ? 7 : 1;
      for (int64_t i = trial % step; i < f->h; i += step) {
        if (f->slow[i] != 0.0) continue;  // slow lanes never use these values (u = 0 there)
        ref::Big es(100), ec(100);
        exact_at(s, i, p, es, ec);
        for (size_t k = 0; k < paths.size(); ++k) {
          for (int m = 0; m < 2; ++m) {
            ref::Big diff(1200);
            mpfr_sub_d(diff, m == 0 ? (mpfr_srcptr)es : (mpfr_srcptr)ec, out[2 * k + m].get()[i], MPFR_RNDN);
            const double err = std::fabs(mpfr_get_d(diff, MPFR_RNDU));
            INFO(paths[k].name << " pair " << i << " position " << p << (m == 0 ? " sin " : " cos ")
                               << out[2 * k + m].get()[i] << " error " << err);
            CHECK(err <= 0x1p-51);
            also(err);
            if (err > 0) a.worst = std::max(a.worst, std::log2(err));
            ++a.compared;
          }
        }
      }
    }
  }
  return a;
}

}  // namespace

TEST_CASE("block anchors stay within 2^-51 absolute on every path", "[internals][direct]") {
  // docs/math.md section 3 ("Anchors"): the analysed bound is 2^-51.46 absolute; the rotation analysis of
  // section 4 assumes 2^-51. Random positions over the whole range (every quadrant, both signs, t near +-1/2),
  // small ones, and p = 0; each path's own code (its quadrant primitive in particular).
  std::mt19937_64 rng(4242);
  const Anchored a = anchors_against_mpfr(
      &posenc::IsaTestEntries::anchors,
      {spec(512, 10000.0, 0.0, 1.0), spec(64, 1e6, 0.0, 1.0), spec(30, 2.0, 3.0, 7.5), spec(34, 10000.0, 0.0, 0x1p200),
       spec(2, 10000.0, 0.0, -3.0)},
      [&](int trial) {
        int64_t p = int64_t(rng() % (uint64_t(1) << 31));
        if (trial % 3 == 0) p %= 1000;  // small positions of both signs
        if (trial % 2) p = -p;
        if (trial == 0) p = 0;
        return p;
      },
      [](double) {});
  WARN("block anchors: worst absolute error 2^" << a.worst << " over " << a.compared << " values");
  CHECK(a.compared > 5000);
}

TEST_CASE("the timestep rows' fast form stays within 2^-51 absolute on every path, its window 4x that",
          "[internals][direct][timesteps]") {
  // docs/math.md section 8, "The fast form": anchor_real_at's analysed bound is 2^-51.1 absolute; run_times
  // accepts its values where [v - kFastBound, v + kFastBound] rounds to one float, so kFastBound must cover
  // the error with room (4x the bound asserted here). Timesteps of every kind (fractional, near-integer,
  // huge, flow matching's [0, 1) times 1000), the specs of diffusion models and the extremes of |s w|.
  using Times = posenc::Times<posenc::Simd<posenc::scalar_arch>>;
  std::mt19937_64 rng(2525);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const Anchored a = anchors_against_mpfr(
      &posenc::IsaTestEntries::anchors_real,
      {spec(320, 10000.0, 160.0, 1.0), spec(256, 10000.0, 128.0, 1000.0), spec(64, 0.5, 1.0, 1.0),
       spec(16, 10000.0, 0.0, 0x1p50), spec(30, 2.0, 3.0, -7.5)},
      [&](int trial) {
        double t = 1000.0 * unit(rng);                                       // diffusion steps and half steps
        if (trial % 4 == 1) t = unit(rng);                                   // flow matching
        if (trial % 4 == 2) t = (unit(rng) - 0.5) * 4294967296.0 * 0.999;    // anywhere in the range
        if (trial % 4 == 3) t = std::floor(t) + std::ldexp(unit(rng), -50);  // just past an integer
        if (trial == 0) t = 999.5;
        return t;
      },
      [](double err) { CHECK(4 * err <= Times::kFastBound); });
  WARN("timestep fast form: worst absolute error 2^" << a.worst << " over " << a.compared << " values");
  CHECK(a.compared > 5000);
  CHECK(Times::kFastBound >= 4 * 0x1p-51);  // the window covers the analysed bound, not only what was seen
}

TEST_CASE("rotation table: 1 to 32 steps within 2^-50", "[internals][freq]") {
  const posenc_spec s = spec(128, 10000.0, 0.0, 1.0);
  const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
  int64_t checked = 0;
  for (int64_t i = 0; i < f->h; i += 5) {
    for (int64_t k = 1; k <= Freq::kSteps; ++k) {
      const double *t = f->step + f->step_at(i, k);
      ref::Big es(100), ec(100);
      ref::exact_pair(s, i, k, es, ec);
      mpfr_sub_d(es, es, t[0], MPFR_RNDN);
      mpfr_sub_d(ec, ec, t[Freq::kLanes], MPFR_RNDN);
      CHECK(std::fabs(mpfr_get_d(es, MPFR_RNDN)) <= 0x1p-50);
      CHECK(std::fabs(mpfr_get_d(ec, MPFR_RNDN)) <= 0x1p-50);
      ++checked;
    }
  }
  CHECK(checked == (f->h + 4) / 5 * Freq::kSteps);
}

TEST_CASE("the last resort is correctly rounded on its own", "[internals][exact]") {
  std::mt19937_64 rng(5);
  const posenc_spec specs[] = {spec(64, 10000.0, 0.0, 1.0), spec(34, 10000.0, 0.0, 0x1p900),
                               spec(34, 10000.0, 0.0, 1e-300), spec(10, 1e300, 1.0, -1.0)};
  for (const posenc_spec &s : specs) {
    const auto f = posenc::detail::build_frequencies(s, posenc::detail::fill_tables);
    for (int trial = 0; trial < 400; ++trial) {
      const int64_t i = int64_t(rng() % uint64_t(f->h));
      int64_t p = int64_t(rng() % (uint64_t(1) << 31)) * ((trial & 1) ? -1 : 1);
      if (trial % 10 == 0) p = 0;
      uint32_t sb, cb;
      posenc::detail::exact_sincos_bits(f->exact[i], p, &sb, &cb);
      const ref::Pair want = ref::exact_pair(s, i, p);
      INFO("pair " << i << " position " << p);
      CHECK(sb == ref::bits(want.s));
      CHECK(cb == ref::bits(want.c));
    }
  }
}

TEST_CASE("the fast acceptance test rejects values near a float32 midpoint or at most 2^-12, on every path",
          "[internals][fast]") {
  // y near the midpoint between two floats of [0.5, 1): 0.75 + 2^-25 is one.
  const double mid = 0.75 + 0x1p-25;
  // The window is 2^16 double ulps either side of a midpoint: 2^-37 in [0.5, 1), 2^-48 in [2^-12, 2^-11).
  const double s[] = {0.75, mid, mid + 0x1p-48, mid - 0x1p-47, mid + 0x1p-40, mid + 0x1p-30, -mid, 0x1p-13, 0x1p-12,
                      -0x1.fp-13, 1.0, 0.0, 0x1.8p-12 + 0x1p-36, 0x1.8p-12 + 0x1p-37,
                      // just below 2^-12, 2^-48.83 above the lower binade's top midpoint: outside the window of
                      // that binade (2^-49) but within the error bound (2^-48.69); f rounds to 2^-12
                      0x1p-12 - 0x1p-37 + 0x1.2p-49,
                      // the window's edges: 1.5 2^16 ulps out (accepted), 2^16 below (rejected), both binades
                      mid + 0x1.8p-37, mid - 0x1p-37, 0x1.8p-12 + 0x1p-36 + 0x1.8p-48, 0x1.8p-12 + 0x1p-36 - 0x1p-48,
                      // and a window shifted either way: 0.75 2^16 above (rejected), 1.25 2^16 below (accepted)
                      mid + 0x1.8p-38, mid - 0x1.4p-37};
  const bool reject[] = {false, true, true,  true, true,  false, true,  true, true, true, false,
                         true,  true, false, true, false, true,  false, true, true, false};
  const int64_t n = int64_t(sizeof s / sizeof s[0]);
  std::vector<double> c(n, 0.5);
  int64_t expected = 0;
  for (bool r : reject) expected += r;
  for (int64_t k = 0; k < n; ++k) {
    INFO("value " << s[k]);
    CHECK(posenc::scalar::fast_rejects(&s[k], &c[k], 1) == (reject[k] ? 1 : 0));
  }
  // every path this build has and this CPU runs, as sin lanes and as cos lanes
  std::vector<double> half(n, 0.5);
  for (const posenc::IsaTestEntries &e : posenc::compiled_isas()) {
    if (!posenc_isa_available(e.isa)) continue;
    INFO("path " << posenc_isa_name(e.isa));
    CHECK(e.fast_rejects(s, c.data(), n) == expected);
    CHECK(e.fast_rejects(half.data(), s, n) == expected);
  }
#if POSENC_HAVE_AVX512
  // The window half alone (the quads whose rows are clear of zero): the small values it leaves to the
  // other half pass here, the values near a midpoint do not, in every lane, as sin and as cos.
  const bool window[] = {false, true, true,  true,  true,  false, true,  false, false, false, false,
                         false, true, false, false, false, true,  false, true,  true,  false};
  static_assert(sizeof window == sizeof reject, "one answer per value");
  int64_t near = 0;
  for (bool w : window) near += w;
  if (posenc_isa_available(POSENC_ISA_AVX512)) {
    for (int64_t k = 0; k < n; ++k) {
      INFO("value " << s[k]);
      CHECK(posenc::avx512::window_rejects(&s[k], &c[k], 1) == (window[k] ? 1 : 0));
    }
    CHECK(posenc::avx512::window_rejects(s, c.data(), n) == near);
    CHECK(posenc::avx512::window_rejects(half.data(), s, n) == near);
  }
#endif
}
