// Llama 3.1's scaling (docs/rope.md, "Every scheme"): x = L0 / wavelength = L0 inv / (2 pi); below
// low_freq_factor the long waves are divided by factor, above high_freq_factor the short ones are kept, in between
// f = inv ((1 - s) / factor + s), s = (x - lff) / (hff - lff).
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status read(const posenc_rope_scaling &sc, Scheme &s, double *) {
  if (!positive_finite(sc.factor) || sc.original_max_positions < 1) return POSENC_ERR_INVALID;
  if (!positive_finite(sc.low_freq_factor) || !positive_finite(sc.high_freq_factor) ||
      !(sc.high_freq_factor > sc.low_freq_factor))
    return POSENC_ERR_INVALID;
  s.factor = sc.factor;
  s.L0 = sc.original_max_positions;
  s.lff = sc.low_freq_factor;
  s.hff = sc.high_freq_factor;
  return POSENC_OK;
}

double amplification(const Scheme &s) {
  return plain_amplification(s) + 16.0 * (s.hff + s.lff) / (s.hff - s.lff) * (s.factor + 1.0 / s.factor + 2.0);
}

void constants(Scheme &s, Scheme::Level &l, int n) {
  l.c = div(mp::from_i64(s.L0, n), mp::ldexp(mp::pi(n), 1));
  l.lff = mp::from_double(s.lff, n);
  l.hff = mp::from_double(s.hff, n);
  l.band = mp::sub(l.hff, l.lff);
}

Num freq(Scheme &, Scheme::Level &l, int, int64_t, const Num &inv) {
  const Num xr = mp::mul(inv, l.c);
  const bool below = mp::sub(xr, l.lff).neg, above = !mp::sub(xr, l.hff).neg;
  if (below) return mp::mul(inv, l.inv_factor);
  if (above) return inv;
  const Num one_minus_s = div(mp::sub(l.hff, xr), l.band), s = div(mp::sub(xr, l.lff), l.band);
  return mp::mul(inv, mp::add(mp::mul(one_minus_s, l.inv_factor), s));
}

}  // namespace

const Family kFamilyLLAMA3{false, nullptr, read, never_plain, factor_top, amplification, constants, freq};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
