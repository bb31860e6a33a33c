#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ref {

double denominator(const posenc_spec &s) {
  const int64_t h = s.d_model / 2;
  return s.freq_denominator == 0.0 ? double(h) : s.freq_denominator;
}

namespace {

// log2 of |angle|, estimated in double, to size the working precision.
double log2_angle(const posenc_spec &s, int64_t i, double p) {
  if (p == 0 || s.position_scale == 0.0) return -1e9;
  return std::log2(std::fabs(p)) + std::log2(std::fabs(s.position_scale)) -
         double(i) / denominator(s) * std::log2(s.base);
}

mpfr_prec_t working_precision(const posenc_spec &s, int64_t i, double p) {
  const double top = std::max(0.0, log2_angle(s, i, p));
  // exp(x) loses |x|-ish bits of absolute accuracy in its argument: add the size of the exponent.
  const double ex = std::fabs(double(i) / denominator(s) * std::log(s.base));
  return mpfr_prec_t(320 + top + std::log2(1.0 + ex) + 64);
}

}  // namespace

void angle(mpfr_ptr out, const posenc_spec &s, int64_t i, int64_t p) { angle_real(out, s, i, double(p)); }

// p * position_scale * base^(-i/D) with p any finite double (an int64 position below 2^31 is exact in it):
// the product of the double p with the working-precision w keeps its relative precision.
void angle_real(mpfr_ptr out, const posenc_spec &s, int64_t i, double p) {
  const mpfr_prec_t prec = working_precision(s, i, p);
  mpfr_set_prec(out, prec);
  if (p == 0 || s.position_scale == 0.0) {
    mpfr_set_zero(out, 1);
    return;
  }
  Big e(prec), w(prec);
  mpfr_set_si(e, -i, MPFR_RNDN);                // exact
  mpfr_div_d(e, e, denominator(s), MPFR_RNDN);  // -i/D
  mpfr_set_d(w, s.base, MPFR_RNDN);             // exact
  mpfr_pow(w, w, e, MPFR_RNDN);                 // base^(-i/D)
  mpfr_mul_d(w, w, s.position_scale, MPFR_RNDN);
  mpfr_mul_d(out, w, p, MPFR_RNDN);
}

Pair exact_pair(const posenc_spec &s, int64_t i, int64_t p, mpfr_ptr sin_out, mpfr_ptr cos_out) {
  return exact_pair_real(s, i, double(p), sin_out, cos_out);
}

Pair exact_pair_real(const posenc_spec &s, int64_t i, double p, mpfr_ptr sin_out, mpfr_ptr cos_out) {
  Big a;
  angle_real(a, s, i, p);
  const mpfr_prec_t prec = std::max<mpfr_prec_t>(300, mpfr_get_prec(a));
  mpfr_set_prec(sin_out, prec);
  mpfr_set_prec(cos_out, prec);
  if (mpfr_zero_p(a)) {
    mpfr_set_zero(sin_out, 1);
    mpfr_set_ui(cos_out, 1, MPFR_RNDN);
  } else {
    mpfr_sin_cos(sin_out, cos_out, a, MPFR_RNDN);
  }
  // Round to float32 in one step from the high-precision value: mpfr_get_flt rounds correctly,
  // subnormals included.
  return Pair{mpfr_get_flt(sin_out, MPFR_RNDN), mpfr_get_flt(cos_out, MPFR_RNDN)};
}

Pair exact_pair(const posenc_spec &s, int64_t i, int64_t p) {
  Big sv, cv;
  return exact_pair(s, i, p, sv, cv);
}

void exact_row(const posenc_spec &s, int64_t p, float *row) {
  if (p == POSENC_PAD) {
    for (int64_t e = 0; e < s.d_model; ++e) row[e] = 0.0f;
    return;
  }
  exact_row_real(s, double(p), row);
}

void exact_row_real(const posenc_spec &s, double p, float *row) {
  const int64_t d = s.d_model, h = d / 2;
  for (int64_t e = 0; e < d; ++e) row[e] = 0.0f;
  for (int64_t i = 0; i < h; ++i) {
    Big sv, cv;
    const Pair v = exact_pair_real(s, i, p, sv, cv);
    switch (s.layout) {
      case POSENC_INTERLEAVED:
        row[2 * i] = v.s;
        row[2 * i + 1] = v.c;
        break;
      case POSENC_SIN_COS_HALVES:
        row[i] = v.s;
        row[h + i] = v.c;
        break;
      case POSENC_COS_SIN_HALVES:
        row[i] = v.c;
        row[h + i] = v.s;
        break;
    }
  }
}

double ulp_error_in(double got, mpfr_srcptr exact, int digits, long min_exp, mpfr_prec_t prec) {
  Big diff(prec), unit(64);
  mpfr_sub_d(diff, exact, got, MPFR_RNDN);
  mpfr_abs(diff, diff, MPFR_RNDN);
  // |exact| in [2^(e-1), 2^e); zero takes the floor
  const long e = mpfr_zero_p(exact) ? min_exp + digits : long(mpfr_get_exp(exact));
  mpfr_set_ui_2exp(unit, 1, std::max(e - digits, min_exp), MPFR_RNDN);
  mpfr_div(diff, diff, unit, MPFR_RNDN);
  return mpfr_get_d(diff, MPFR_RNDU);
}

double ulp_error(float got, mpfr_srcptr exact) {
  return ulp_error_in(double(got), exact, 24, -149, mpfr_get_prec(exact) + 64);  // got is exact in double
}

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

}  // namespace ref
