// The plain family: HF's default, linear and Gemma 4's proportional (docs/rope.md, "Every scheme"). f_i =
// base^(-2i/r), divided by factor (linear; proportional's first floor(p r / 2) pairs, the others 0).
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status read_default(const posenc_rope_scaling &, Scheme &, double *) { return POSENC_OK; }
bool plain_default(const Scheme &, bool, double *) { return true; }
double top_default(const Scheme &) { return 0.0; }

posenc_status read_linear(const posenc_rope_scaling &sc, Scheme &s, double *) {
  if (!positive_finite(sc.factor) || !(1.0 / sc.factor < kMaxFrequency)) return POSENC_ERR_INVALID;
  s.factor = sc.factor;
  return POSENC_OK;
}
// Without an array: base^(-2i/r) at the position scale 1 / factor, rounded once (llama.cpp's freq_scale)
bool plain_linear(const Scheme &s, bool have_array, double *position_scale) {
  if (have_array) return false;
  *position_scale = 1.0 / s.factor;
  return true;
}
Num freq_divided(Scheme &, Scheme::Level &l, int, int64_t, const Num &inv) { return mp::mul(inv, l.inv_factor); }

// HF's _compute_proportional_rope_parameters: int(p * head_dim // 2) pairs rotate at base^(-2i/r) / factor (the
// linear scheme's values), the others have frequency 0; factor and p default to 1.
posenc_status read_proportional(const posenc_rope_scaling &sc, Scheme &s, double *) {
  const double f = sc.factor == 0.0 ? 1.0 : sc.factor;
  const double p = sc.partial_rotary_factor == 0.0 ? 1.0 : sc.partial_rotary_factor;
  if (!positive_finite(f) || !(1.0 / f < kMaxFrequency)) return POSENC_ERR_INVALID;
  if (!(p > 0.0) || !(p <= 1.0)) return POSENC_ERR_INVALID;
  s.factor = f;
  s.rotated = int64_t(std::floor(p * double(s.r) / 2.0));  // Python's p * r // 2: floor(fl(p r) / 2)
  return POSENC_OK;
}

}  // namespace

const Family kFamilyDEFAULT{true,    nullptr,   read_default, plain_default, top_default, plain_amplification,
                            nullptr, return_inv};
const Family kFamilyLINEAR{true,    nullptr,     read_linear, plain_linear, factor_top, plain_amplification,
                           nullptr, freq_divided};
const Family kFamilyPROPORTIONAL{false,   nullptr,     read_proportional, never_plain, factor_top, plain_amplification,
                                 nullptr, freq_divided};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
