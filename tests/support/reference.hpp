// The accuracy suite's reference: the exact encoding from the spec's doubles, evaluated with MPFR at
// enough bits that the reduction of the largest angle keeps 256 bits below the point, and rounded to
// float32 by MPFR (nearest-even, subnormals included). Nothing here uses the library's own arithmetic.
#pragma once

#include <mpfr.h>

#include <cstdint>

#include "posenc/posenc.h"

namespace ref {

// An MPFR number that frees itself.
struct Big {
  mpfr_t v;
  explicit Big(mpfr_prec_t prec = 256) { mpfr_init2(v, prec); }
  ~Big() { mpfr_clear(v); }
  Big(const Big &) = delete;
  Big &operator=(const Big &) = delete;
  operator mpfr_ptr() { return v; }
  operator mpfr_srcptr() const { return v; }
};

// D of the spec: freq_denominator, or h when it is 0.
double denominator(const posenc_spec &s);

// The exact angle p * position_scale * base^(-i / D), to 256 bits below its binary point.
void angle(mpfr_ptr out, const posenc_spec &s, int64_t i, int64_t p);

// sin and cos of that angle at out's precision (set by angle_precision); an exactly zero angle gives
// sin = +0 and cos = 1.
struct Pair {
  float s, c;  // correctly rounded
};
Pair exact_pair(const posenc_spec &s, int64_t i, int64_t p);
// Also returns the unrounded values (precision >= 300 bits) for ULP measurements.
Pair exact_pair(const posenc_spec &s, int64_t i, int64_t p, mpfr_ptr sin_out, mpfr_ptr cos_out);

// The whole row of posenc_table_f32 / posenc_rows_f32 for position p (d_model floats, layout applied,
// POSENC_PAD -> zeros, odd width -> trailing 0).
void exact_row(const posenc_spec &s, int64_t p, float *row);

// The same at a real-valued position (posenc_timesteps_*): any finite double p.
void angle_real(mpfr_ptr out, const posenc_spec &s, int64_t i, double p);
Pair exact_pair_real(const posenc_spec &s, int64_t i, double p, mpfr_ptr sin_out, mpfr_ptr cos_out);
void exact_row_real(const posenc_spec &s, double p, float *row);

// |got - exact| in units of the float32 ulp at the exact value's binade, the unit floored at 2^-149.
double ulp_error(float got, mpfr_srcptr exact);
// The same for a binary format of `digits` significant bits whose smallest ulp is 2^min_exp (53 and -1074 for
// double), the difference taken at `prec` bits (enough to hold it exactly, or rounded once).
double ulp_error_in(double got, mpfr_srcptr exact, int digits, long min_exp, mpfr_prec_t prec);

// Bit patterns, for exact comparisons that tell -0 from +0.
uint32_t bits(float x);

}  // namespace ref
