// The accuracy suite: every output of every path against MPFR. The library promises the float32
// nearest to the exact value (docs/contract.md section 2 asks for 1 ULP; posenc returns 0.5 ULP, correctly rounded),
// so the check is bit equality with MPFR's correctly rounded value, and the ULP error of any mismatch
// is reported against the contract's 1 ULP.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/spec.hpp"

namespace {

using ref::spec_of;

struct Tally {
  int64_t elements = 0, mismatches = 0;
  double max_ulp = 0;
};

// Compares rows the library wrote (one path) with MPFR's rows, element by element.
void compare(const posenc_spec &s, const std::vector<int64_t> &pos, const std::vector<float> &want,
             const std::vector<float> &got, Tally &t) {
  const int64_t d = s.d_model, h = d / 2;
  for (size_t r = 0; r < pos.size(); ++r)
    for (int64_t e = 0; e < d; ++e) {
      const float g = got[r * d + e], w = want[r * d + e];
      ++t.elements;
      if (ref::bits(g) == ref::bits(w)) continue;
      ++t.mismatches;
      // the element's pair and whether it is the sin or the cos
      int64_t i = e;
      bool is_sin = true;
      if (e == d - 1 && (d & 1)) {
        t.max_ulp = std::max(t.max_ulp, 1e9);  // the odd column must be exactly 0
        continue;
      }
      if (s.layout == POSENC_INTERLEAVED) {
        i = e / 2;
        is_sin = (e % 2) == 0;
      } else {
        i = e % h;
        is_sin = (e < h) == (s.layout == POSENC_SIN_COS_HALVES);
      }
      ref::Big sv, cv;
      ref::exact_pair(s, i, pos[r], sv, cv);
      const double u = ref::ulp_error(g, is_sin ? (mpfr_srcptr)sv : (mpfr_srcptr)cv);
      t.max_ulp = std::max(t.max_ulp, u);
      UNSCOPED_INFO("mismatch at position " << pos[r] << " element " << e << ": got " << g << " want " << w << " (" << u
                                            << " ulp)");
    }
}

// Every path, through posenc_rows_f32 (and through posenc_table_f32 when the positions are a run).
void check_positions(const posenc_spec &s, const std::vector<int64_t> &pos) {
  const int64_t d = s.d_model;
  std::vector<float> want(pos.size() * d);
  for (size_t r = 0; r < pos.size(); ++r) ref::exact_row(s, pos[r], &want[r * d]);
  bool run = !pos.empty();
  for (size_t r = 1; r < pos.size() && run; ++r) run = pos[r] == pos[r - 1] + 1;
  for (posenc_isa isa : ref::paths()) {
    ref::on_path(isa, [&] {
      std::vector<float> got(pos.size() * d, -7.0f);
      // what the call wrote, every element correctly rounded
      const auto check = [&](const char *call) {
        Tally t;
        compare(s, pos, want, got, t);
        INFO("path " << posenc_isa_name(isa) << ", " << call << ": " << t.mismatches << " of " << t.elements
                     << " not correctly rounded, max " << t.max_ulp << " ulp");
        CHECK(t.max_ulp <= 1.0);
        CHECK(t.mismatches == 0);
      };
      REQUIRE(posenc_rows_f32(&s, pos.data(), int64_t(pos.size()), got.data(), d) == POSENC_OK);
      check("rows");
      if (run) {
        std::fill(got.begin(), got.end(), -7.0f);
        REQUIRE(posenc_table_f32(&s, pos[0], int64_t(pos.size()), got.data(), d) == POSENC_OK);
        check("table");
      }
    });
  }
}

std::vector<int64_t> run_of(int64_t first, int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t r = 0; r < n; ++r) v[r] = first + r;
  return v;
}

// Denominators of the continued-fraction convergents of x (x > 0) below 2^31: the positions where
// p x comes closest to an integer.
std::vector<int64_t> convergents(mpfr_srcptr x0) {
  std::vector<int64_t> out;
  ref::Big x(mpfr_get_prec(x0)), a(mpfr_get_prec(x0));
  mpfr_set(x, x0, MPFR_RNDN);
  int64_t q_prev = 0, q = 1;  // q_{-1} = 0, q_0 = 1
  mpfr_floor(a, x);
  for (int k = 0; k < 60; ++k) {
    mpfr_sub(x, x, a, MPFR_RNDN);  // fractional part
    if (mpfr_zero_p(x)) break;
    mpfr_ui_div(x, 1, x, MPFR_RNDN);
    mpfr_floor(a, x);
    if (mpfr_cmp_d(a, 4e9) > 0) break;
    const int64_t ak = int64_t(mpfr_get_d(a, MPFR_RNDN));
    const int64_t qn = ak * q + q_prev;
    if (qn >= (int64_t(1) << 31) - 2) break;
    q_prev = q;
    q = qn;
    out.push_back(q);
  }
  return out;
}

// Positions where sin or cos of pair i comes closest to zero: convergents of w/pi and 2w/pi (w the
// pair's angle per position), one either side of each, and their negatives.
std::vector<int64_t> adversarial_positions(const posenc_spec &s, int64_t i) {
  ref::Big w(2000), pi(2000);
  ref::angle(w, s, i, 1);
  mpfr_set_prec(pi, mpfr_get_prec(w) + 64);
  mpfr_const_pi(pi, MPFR_RNDN);
  std::vector<int64_t> pos;
  mpfr_abs(w, w, MPFR_RNDN);
  if (mpfr_zero_p(w)) return pos;
  for (int twice = 0; twice < 2; ++twice) {
    ref::Big x(mpfr_get_prec(w) + 64);
    mpfr_div(x, w, pi, MPFR_RNDN);
    if (twice) mpfr_mul_ui(x, x, 2, MPFR_RNDN);
    for (int64_t q : convergents(x))
      for (int64_t p : {q - 1, q, q + 1})
        if (p > 0 && p < (int64_t(1) << 31)) {
          pos.push_back(p);
          pos.push_back(-p);
        }
  }
  return pos;
}

}  // namespace

TEST_CASE("dense small positions, Vaswani spec d=512", "[accuracy]") {
  check_positions(posenc_spec_default(512), run_of(0, 160));
}

TEST_CASE("runs far from zero and across zero", "[accuracy]") {
  const posenc_spec s = posenc_spec_default(96);
  check_positions(s, run_of(1000000, 70));
  check_positions(s, run_of(-40, 90));
  check_positions(s, run_of((int64_t(1) << 31) - 130, 129));
  check_positions(s, run_of(-(int64_t(1) << 31) + 1, 75));
}

TEST_CASE("random positions over the whole |p| < 2^31 range", "[accuracy]") {
  std::mt19937_64 rng(20261121);
  std::uniform_int_distribution<int64_t> any(-(int64_t(1) << 31) + 1, (int64_t(1) << 31) - 1);
  for (int64_t d : {2, 64, 300}) {
    std::vector<int64_t> pos(d == 300 ? 100 : 600);
    for (auto &p : pos) p = any(rng);
    check_positions(posenc_spec_default(d), pos);
  }
}

TEST_CASE("adversarial positions: continued-fraction convergents of w/pi and 2w/pi", "[accuracy]") {
  // Only the targeted pair is compared for the wide spec (its reference rows would be expensive).
  const posenc_spec s = posenc_spec_default(512);
  for (int64_t i : {0, 1, 2, 7, 40, 128, 200, 255}) {
    const std::vector<int64_t> pos = adversarial_positions(s, i);
    REQUIRE(pos.size() > 20);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<float> got(pos.size() * 512);
        REQUIRE(posenc_rows_f32(&s, pos.data(), int64_t(pos.size()), got.data(), 512) == POSENC_OK);
        int64_t bad = 0;
        for (size_t r = 0; r < pos.size(); ++r) {
          const ref::Pair want = ref::exact_pair(s, i, pos[r]);
          bad += ref::bits(got[r * 512 + 2 * i]) != ref::bits(want.s);
          bad += ref::bits(got[r * 512 + 2 * i + 1]) != ref::bits(want.c);
        }
        INFO("pair " << i << " path " << posenc_isa_name(isa) << ": " << pos.size() << " positions");
        CHECK(bad == 0);
      });
  }
  // A narrow spec gets whole rows at every pair's convergents.
  const posenc_spec n = posenc_spec_default(8);
  std::vector<int64_t> pos;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t p : adversarial_positions(n, i)) pos.push_back(p);
  check_positions(n, pos);
}

TEST_CASE("widths 1, 2, 3, odd and wide; every layout", "[accuracy]") {
  for (posenc_layout layout : {POSENC_INTERLEAVED, POSENC_SIN_COS_HALVES, POSENC_COS_SIN_HALVES}) {
    for (int64_t d : {1, 2, 3, 5, 17, 63, 64, 65, 130}) {
      const posenc_spec s = spec_of(d, layout, 10000.0, 0.0, 1.0);
      check_positions(s, run_of(-3, 20));
      check_positions(s, {7, POSENC_PAD, 123456789, -5, POSENC_PAD});
    }
  }
  check_positions(spec_of(8192, POSENC_SIN_COS_HALVES, 10000.0, 0.0, 1.0), {0, 1, 99999});
  check_positions(spec_of(8191, POSENC_INTERLEAVED, 10000.0, 0.0, 1.0), {2047483647});
}

TEST_CASE("bases from 2 to 1e6 and beyond, any denominator", "[accuracy]") {
  struct Case {
    double base, den;
  };
  const Case cases[] = {{2.0, 0.0},        {10.0, 0.0}, {10000.0, 31.0}, {1e6, 0.0},   {1e6, 1.0},
                        {1.0001, 0.0},     {0.5, 0.0},  {0.01, 4.0},     {1e300, 1.0}, {10000.0, 0.5},
                        {10000.0, 1000.5}, {1.0, 0.0},  {3.0, 1e-3},     {1e-300, 1e3}};
  for (const Case &c : cases) {
    INFO("base " << c.base << " denominator " << c.den);
    const posenc_spec s = spec_of(66, POSENC_INTERLEAVED, c.base, c.den, 1.0);
    check_positions(s, run_of(-2, 40));
    check_positions(s, {1999999999, -77777777, 123, POSENC_PAD});
  }
}

TEST_CASE("position scales: tiny, huge, negative, zero", "[accuracy]") {
  const double scales[] = {1e-3,         1000.0, -2.5, 1e-30, 0x1p100, 0x1p900,
                           -0x1.fffp998, 5e-324, 0.0,  -0.0,  3.0e-7,  0.3333333333333333};
  for (double sc : scales) {
    INFO("position_scale " << sc);
    const posenc_spec s = spec_of(34, POSENC_SIN_COS_HALVES, 10000.0, 0.0, sc);
    check_positions(s, run_of(-3, 30));
    check_positions(s, {2147483647, -2147483647, 65536, POSENC_PAD});
  }
}
