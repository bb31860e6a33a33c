// An MPFR re-trace of ggml's RoPE (its CPU backend: ggml-cpu/ops.cpp's rope_yarn, rope_yarn_ramp,
// ggml_rope_cache_init, ggml_mrope_cache_init; ggml.c's ggml_rope_yarn_corr_dims) with every float operation
// replaced by its real value: the reference for posenc's ggml frequencies (tests/test_rope_ggml.cpp) and for
// the ggml integration's exactness tests (integrations/ggml/tests/). Where ggml's correction dimension is not
// finite it takes ggml's own IEEE value (n_ctx_orig = 0, as test-backend-ops passes, gives low = 0 and
// high = -inf). Nothing here uses posenc's arithmetic.
#pragma once

#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "support/reference.hpp"

namespace ggml_ref {

using ref::Big;

constexpr mpfr_prec_t kPrec = 640;

// ggml's parameters: n_dims, the pairs rotated (n_dims / 2, or n_dims for VISION), each pair's theta index
// (empty: the pair's own), the freq_factors (empty: none) and ggml's floats.
struct Params {
  int64_t n_dims, pairs;
  std::vector<int64_t> index;
  std::vector<float> factors;
  float base, fs, ef, af, bf, bs;
  int64_t n_ctx_orig;
};

// ggml's correction dimension: its float value, as ggml_rope_yarn_corr_dim computes it.
inline float float_cd(const Params &c, float beta) {
  return float(c.n_dims) * logf(float(c.n_ctx_orig) / (beta * 2 * float(M_PI))) / (2 * logf(c.base));
}

// The real correction dimension, floored (or ceiled); the float one when ggml's is not finite.
inline double corr_dim(const Params &c, float beta, bool ceil) {
  const float f = float_cd(c, beta);
  if (!std::isfinite(f)) return ceil ? std::ceil(double(f)) : std::floor(double(f));
  Big x(kPrec), t(kPrec), lb(kPrec);
  mpfr_const_pi(t, MPFR_RNDN);
  mpfr_mul_d(t, t, 2.0 * double(beta), MPFR_RNDN);
  mpfr_set_si(x, long(c.n_ctx_orig), MPFR_RNDN);
  mpfr_div(x, x, t, MPFR_RNDN);
  mpfr_log(x, x, MPFR_RNDN);
  mpfr_mul_si(x, x, long(c.n_dims), MPFR_RNDN);
  mpfr_set_d(lb, double(c.base), MPFR_RNDN);
  mpfr_log(lb, lb, MPFR_RNDN);
  mpfr_mul_ui(lb, lb, 2, MPFR_RNDN);
  mpfr_div(x, x, lb, MPFR_RNDN);
  if (ceil)
    mpfr_ceil(x, x);
  else
    mpfr_floor(x, x);
  return mpfr_get_d(x, MPFR_RNDN);  // an integer of at most ~2^60 here: exact
}

// ggml's MAX and MIN macros (a NaN second operand passes through).
inline double gmax(double a, double b) { return a > b ? a : b; }
inline double gmin(double a, double b) { return a < b ? a : b; }

struct Expect {
  bool valid = true;
  std::vector<double> freq;
  double m = 0;
};

inline Expect reference(const Params &c) {
  Expect e;
  double low = 0, high = 0;
  if (c.ef != 0.0f) {
    low = gmax(0.0, corr_dim(c, c.bf, false));
    high = gmin(double(c.n_dims - 1), corr_dim(c, c.bs, true));
    if (std::isnan(low) || std::isnan(high)) {
      e.valid = false;
      return e;
    }
  }
  Big f(kPrec), t(kPrec), ramp(kPrec), lnb(kPrec), blend(kPrec);
  mpfr_set_d(lnb, double(c.base), MPFR_RNDN);
  mpfr_log(lnb, lnb, MPFR_RNDN);
  for (int64_t i = 0; i < c.pairs; ++i) {
    const int64_t k = c.index.empty() ? i : c.index[size_t(i)];
    // theta_extrap = base^(-2k/n_dims) / c_i
    mpfr_mul_si(f, lnb, -2 * long(k), MPFR_RNDN);
    mpfr_div_si(f, f, long(c.n_dims), MPFR_RNDN);
    mpfr_exp(f, f, MPFR_RNDN);
    if (!c.factors.empty()) mpfr_div_d(f, f, double(c.factors[size_t(i)]), MPFR_RNDN);
    // ramp_mix = (1 - min(1, max(0, (i - low) / max(0.001, high - low)))) * ext_factor
    mpfr_set_si(ramp, 0, MPFR_RNDN);
    if (c.ef != 0.0f) {
      mpfr_set_d(t, high - low, MPFR_RNDN);
      mpfr_set_str(blend, "0.001", 10, MPFR_RNDN);
      if (mpfr_cmp(blend, t) > 0) mpfr_set(t, blend, MPFR_RNDN);
      mpfr_set_si(ramp, long(i), MPFR_RNDN);
      mpfr_sub_d(ramp, ramp, low, MPFR_RNDN);
      mpfr_div(ramp, ramp, t, MPFR_RNDN);
      if (mpfr_cmp_si(ramp, 0) < 0) mpfr_set_si(ramp, 0, MPFR_RNDN);
      if (mpfr_cmp_si(ramp, 1) > 0) mpfr_set_si(ramp, 1, MPFR_RNDN);
      mpfr_si_sub(ramp, 1, ramp, MPFR_RNDN);
      mpfr_mul_d(ramp, ramp, double(c.ef), MPFR_RNDN);
    }
    // theta = theta_extrap * (freq_scale (1 - ramp_mix) + ramp_mix)
    mpfr_si_sub(blend, 1, ramp, MPFR_RNDN);
    mpfr_mul_d(blend, blend, double(c.fs), MPFR_RNDN);
    mpfr_add(blend, blend, ramp, MPFR_RNDN);
    mpfr_mul(f, f, blend, MPFR_RNDN);
    e.freq.push_back(mpfr_get_d(f, MPFR_RNDN));
  }
  // mscale = attn_factor (1 + 0.1 ln(1 / freq_scale)) when ext_factor != 0
  mpfr_set_d(t, double(c.af), MPFR_RNDN);
  if (c.ef != 0.0f) {
    mpfr_set_d(f, double(c.fs), MPFR_RNDN);
    mpfr_log(f, f, MPFR_RNDN);
    mpfr_div_si(f, f, -10, MPFR_RNDN);
    mpfr_add_si(f, f, 1, MPFR_RNDN);
    mpfr_mul(t, t, f, MPFR_RNDN);
  }
  e.m = mpfr_get_d(t, MPFR_RNDN);
  if (!(e.m >= 0x1p-64 && e.m <= 0x1p64)) e.valid = false;
  return e;
}

// The axis and theta index of every pair of a multi mode, as ggml_mrope_cache_init assigns them (sector = i mod
// the sections' sum; IMROPE interleaves with a fourth slot; VISION restarts the index where its else-if chain
// of sector comparisons finds a section's start). mode: GGML_ROPE_TYPE_MROPE (8), _VISION (24), _IMROPE (40).
struct PairMap {
  std::vector<int> axis;
  std::vector<int64_t> index;
};
inline PairMap pair_map(int mode, const int64_t s[4], int64_t pairs) {
  const int64_t sum = s[0] + s[1] + s[2] + s[3], w = s[0] + s[1], e = w + s[2];
  PairMap out;
  int64_t start[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < pairs; ++i) {
    const int64_t sector = i % sum;
    int axis = 0;
    if (mode == 40) {
      if (sector % 3 == 1 && sector < 3 * s[1])
        axis = 1;
      else if (sector % 3 == 2 && sector < 3 * s[2])
        axis = 2;
      else if (sector % 3 == 0 && sector < 3 * s[0])
        axis = 0;
      else
        axis = 3;
    } else {
      axis = sector < s[0] ? 0 : sector < w ? 1 : sector < e ? 2 : 3;
    }
    if (mode == 24) {
      if (sector == 0)
        start[0] = i;
      else if (sector == s[0])
        start[1] = i;
      else if (sector == w)
        start[2] = i;
      else if (sector == e)
        start[3] = i;
    }
    out.axis.push_back(axis);
    out.index.push_back(mode == 24 ? i - start[axis] : i);
  }
  return out;
}

inline std::vector<int64_t> vision_index(const int64_t s[4], int64_t pairs) { return pair_map(24, s, pairs).index; }

}  // namespace ggml_ref
