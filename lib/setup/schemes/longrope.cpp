// LongRoPE (Phi-3; docs/rope.md, "Every scheme"): f_i = base^(-2i/r) / ext_i, the short factors up to the original
// length and the long ones past it; attention sqrt(1 + ln f / ln L0), or vLLM's short_mscale / long_mscale.
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

posenc_status pointers(const posenc_rope_scaling &sc) {
  return sc.short_factor == nullptr || sc.long_factor == nullptr ? POSENC_ERR_NULL : POSENC_OK;
}

posenc_status derived_attention(const posenc_rope_scaling &s, double *out) {
  if (s.attention_factor != 0.0) return explicit_attention(s.attention_factor, out);
  const double f = s.factor;
  if (!positive_finite(f)) return POSENC_ERR_INVALID;
  if (!(f > 1.0)) {
    *out = 1.0;
    return POSENC_OK;
  }
  if (s.original_max_positions < 2) return POSENC_ERR_INVALID;  // ln(1) = 0 in the denominator
  const int64_t L0 = s.original_max_positions;
  // sqrt(1 + ln f / ln L0): both logs positive, well conditioned
  const double a = round_verified(
      [&](int k) {
        const int n = kLimbs[k];
        return sqrt_num(mp::add(one(n), div(mp::log(f, n), ln_num(mp::from_i64(L0, n)))));
      },
      lost_bits(64));
  return explicit_attention(a, out);
}

posenc_status read(const posenc_rope_scaling &sc, Scheme &s, double *attention) {
  if (sc.original_max_positions < 1 || sc.seq_len < 0) return POSENC_ERR_INVALID;
  for (int64_t i = 0; i < s.h; ++i)
    if (!positive_finite(sc.short_factor[i]) || !positive_finite(sc.long_factor[i])) return POSENC_ERR_INVALID;
  s.L0 = sc.original_max_positions;
  const bool long_set = sc.seq_len > s.L0;
  s.ext = long_set ? sc.long_factor : sc.short_factor;
  // vLLM's short_mscale / long_mscale: the chosen set's magnitude, when given, is the attention scale
  const double ms = sc.short_mscale, ml = sc.long_mscale;
  if (ms != 0.0 || ml != 0.0) {
    double unused = 0;
    if (sc.attention_factor != 0.0) return POSENC_ERR_INVALID;  // two magnitudes for one scale
    if ((ms != 0.0 && explicit_attention(ms, &unused) != POSENC_OK) ||
        (ml != 0.0 && explicit_attention(ml, &unused) != POSENC_OK))
      return POSENC_ERR_INVALID;
  }
  const double chosen = long_set ? ml : ms;
  return chosen != 0.0 ? explicit_attention(chosen, attention) : derived_attention(sc, attention);
}

double top(const Scheme &s) {
  double m = 0;
  for (int64_t i = 0; i < s.h; ++i) m = std::fmax(m, -std::log2(s.ext[i]));
  return m;
}

Num freq(Scheme &s, Scheme::Level &, int n, int64_t i, const Num &inv) {
  return div(inv, mp::from_double(s.ext[i], n));
}

}  // namespace

const Family kFamilyLONGROPE{false, pointers, read, never_plain, top, plain_amplification, nullptr, freq};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
