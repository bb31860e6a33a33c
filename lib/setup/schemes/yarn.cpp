// The YaRN family (docs/rope.md, "Every scheme", "vLLM's schemes"): HF's yarn, vLLM's deepseek_yarn and telechat3,
// Grok's yarn_log. The correction range [low, high] of beta_fast and beta_slow (floored / ceiled, HF's truncate
// or always for vLLM's), a ramp over it, and each member's blend of base^(-2i/r) and base^(-2i/r) / factor; the
// attention factor from get_mscale (HF) or vLLM's ratios.
#include "setup/rope_family.hpp"

namespace posenc {
namespace detail {
namespace scheme {
namespace {

// m ln f / d + 1 (HF's get_mscale for f > 1 with d = 10; TeleChat3's 0.07 is m = 7, d = 100), at n limbs.
Num mscale_num(int n, double f, double m, uint64_t d = 10) {
  return mp::add(one(n), mp::div_u64(mp::mul(mp::log(f, n), mp::from_double(m, n)), d));
}

posenc_status yarn_attention(const posenc_rope_scaling &s, double factor, double *out) {
  if (s.attention_factor != 0.0) return explicit_attention(s.attention_factor, out);
  if (!(factor > 1.0)) {  // get_mscale(f, m) = 1 for f <= 1, so the ratio is 1 as well
    *out = 1.0;
    return POSENC_OK;
  }
  const double lnf = std::log(factor);
  if (s.mscale != 0.0 && s.mscale_all_dim != 0.0) {
    const double m1 = s.mscale, m2 = s.mscale_all_dim;
    if (!std::isfinite(m1) || !std::isfinite(m2)) return POSENC_ERR_INVALID;
    if (m1 == m2) {  // x / x with x = 0.1 m ln f + 1 != 0 (ln f is irrational for a rational f != 1)
      *out = 1.0;
      return POSENC_OK;
    }
    // The numerator and the denominator can cancel (m near -10 / ln f); they never both vanish for m1 != m2
    // (their difference is 0.1 (m1 - m2) ln f, at least ~2^-120), so either is below 2^-300 only when the
    // ratio is far outside [2^-64, 2^64].
    const Num num6 = mscale_num(kLimbs[0], factor, m1), den6 = mscale_num(kLimbs[0], factor, m2);
    if (num6.is_zero() || den6.is_zero() || mp::exponent(num6) < -300 || mp::exponent(den6) < -300)
      return POSENC_ERR_INVALID;
    const double cond = (std::fabs(0.1 * m1 * lnf) + 1) / std::fabs(mp::to_double(num6)) +
                        (std::fabs(0.1 * m2 * lnf) + 1) / std::fabs(mp::to_double(den6));
    const double a = round_verified(
        [&](int k) {
          const int n = kLimbs[k];
          return div(mscale_num(n, factor, m1), mscale_num(n, factor, m2));
        },
        lost_bits(cond * 64));
    return explicit_attention(a, out);
  }
  *out = round_verified([&](int k) { return mscale_num(kLimbs[k], factor, 1.0); }, lost_bits(64));
  return POSENC_OK;
}

// vLLM's YaRN variants: attn (m1 ln f / d1 + 1) / (m2 ln f / d2 + 1) for f > 1, attn for f <= 1.
posenc_status vllm_attention(double f, double m1, uint64_t d1, double m2, uint64_t d2, double attn, double *out) {
  if (!positive_finite(attn) || !std::isfinite(m1) || !std::isfinite(m2)) return POSENC_ERR_INVALID;
  if (!(f > 1.0) || (m1 == m2 && d1 == d2)) return explicit_attention(attn, out);
  // As in yarn_attention: the two factors never both vanish, and one below 2^-300 is far out of range.
  const Num num6 = mscale_num(kLimbs[0], f, m1, d1), den6 = mscale_num(kLimbs[0], f, m2, d2);
  if (num6.is_zero() || den6.is_zero() || mp::exponent(num6) < -300 || mp::exponent(den6) < -300)
    return POSENC_ERR_INVALID;
  const double lnf = std::log(f);
  const double cond = (std::fabs(m1 * lnf / double(d1)) + 1) / std::fabs(mp::to_double(num6)) +
                      (std::fabs(m2 * lnf / double(d2)) + 1) / std::fabs(mp::to_double(den6));
  const double a = round_verified(
      [&](int k) {
        const int n = kLimbs[k];
        return mp::mul(div(mscale_num(n, f, m1, d1), mscale_num(n, f, m2, d2)), mp::from_double(attn, n));
      },
      lost_bits(cond * 64));
  return explicit_attention(a, out);
}

// The integer correction range [low_i, high_i] (truncate), or only the magnitude check of the correction
// dimensions (without truncate the unrounded range is built per level).
posenc_status yarn_range(Scheme &s) {
  bool ok_f = false, ok_s = false;
  int64_t fl = 0, ce = 0;
  for (int k = 0; k < kLevels && !(ok_f && ok_s); ++k) {
    const int n = kLimbs[k];
    for (int which = 0; which < 2; ++which) {
      bool &ok = which == 0 ? ok_f : ok_s;
      if (ok) continue;
      const double beta = which == 0 ? s.beta_fast : s.beta_slow;
      const Num c = s.cd(n, beta);
      if (k == 0 && !c.is_zero() && mp::exponent(c) > 52) return POSENC_ERR_INVALID;  // |cd| >= 2^52
      if (!s.truncate) {
        ok = true;
        continue;
      }
      int64_t near = 0;
      int side = 0;
      if (!locate(s, beta, k, c, &near, &side)) continue;
      if (which == 0)
        fl = side < 0 ? near - 1 : near;
      else
        ce = side > 0 ? near + 1 : near;
      ok = true;
    }
  }
  if (s.truncate) {
    s.low_i = fl < 0 ? 0 : fl;
    s.high_i = ce > s.r - 1 ? s.r - 1 : ce;
    s.equal_range = s.low_i == s.high_i;
  }
  return POSENC_OK;
}

// The parameters every YaRN scheme reads (factor, L0, the betas with HF's defaults), validated.
bool yarn_params(const posenc_rope_scaling &sc, Scheme &s) {
  if (!positive_finite(sc.factor) || sc.original_max_positions < 1) return false;
  if (s.base == 1.0) return false;  // ln(base) = 0 divides the correction dimensions
  s.factor = sc.factor;
  s.L0 = sc.original_max_positions;
  s.beta_fast = sc.beta_fast == 0.0 ? 32.0 : sc.beta_fast;
  s.beta_slow = sc.beta_slow == 0.0 ? 1.0 : sc.beta_slow;
  return positive_finite(s.beta_fast) && positive_finite(s.beta_slow) && s.beta_fast > s.beta_slow;
}

// ---- HF's yarn: f = inv ((1 - ramp) + ramp / factor), ramp = clamp((i - low) / (high - low), 0, 1) ----------

posenc_status read_yarn(const posenc_rope_scaling &sc, Scheme &s, double *attention) {
  if (!yarn_params(sc, s)) return POSENC_ERR_INVALID;
  s.truncate = sc.truncate != 0;
  const posenc_status st = yarn_attention(sc, s.factor, attention);
  if (st != POSENC_OK) return st;
  return yarn_range(s);
}

double amplification_yarn(const Scheme &s) {
  double amp = plain_amplification(s);
  if (s.truncate) return amp;
  // the unrounded range: the blend's weights cancel near a correction dimension
  const double fr = s.factor + 1.0 / s.factor + 2.0;
  const Num lo = s.cd(kLimbs[0], s.beta_fast), hi = s.cd(kLimbs[0], s.beta_slow);
  const double cf = mp::to_double(lo), cs = mp::to_double(hi);
  const double span = std::fabs(std::fmin(cs, double(s.r - 1)) - std::fmax(cf, 0.0));
  const double dcd =
      double(s.h) *
          (std::log(double(s.L0)) + 2.0 + std::fabs(std::log(s.beta_fast)) + std::fabs(std::log(s.beta_slow))) /
          std::fabs(std::log(s.base)) +
      std::fabs(cf) + std::fabs(cs) + double(s.r);
  return amp + 0x1p16 * dcd * fr / span;  // span == 0 gives inf: best effort at the highest precision
}

void constants_yarn(Scheme &s, Scheme::Level &l, int n) {
  if (s.truncate) return;
  Num lo = s.cd(n, s.beta_fast), hi = s.cd(n, s.beta_slow);
  if (lo.neg || lo.is_zero()) lo = mp::zero(n);  // max(low, 0)
  const Num top = mp::from_i64(s.r - 1, n);      // min(high, dim - 1)
  if (!hi.neg && mp::cmp_abs(hi, top) > 0) hi = top;
  l.low = lo;
  l.den = mp::sub(hi, lo);
  l.den_neg = l.den.neg;
  l.den = mp::abs(l.den);
}

Num freq_yarn(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv) {
  if (s.truncate) {
    if (s.equal_range) return i <= s.low_i ? inv : mp::mul(inv, l.inv_factor);  // (i - low) / 0.001
    int64_t num = i - s.low_i, den = s.high_i - s.low_i;
    if (den < 0) {
      num = -num;
      den = -den;
    }
    if (num <= 0) return inv;
    if (num >= den) return mp::mul(inv, l.inv_factor);
    const Num w = mp::add(mp::from_i64(den - num, n), mp::mul_u64(l.inv_factor, uint64_t(num)));
    return mp::mul(inv, mp::div_u64(w, uint64_t(den)));
  }
  Num num = mp::sub(mp::from_i64(i, n), l.low);
  if (l.den_neg) num = mp::neg(num);
  if (num.neg || num.is_zero()) return inv;
  if (mp::cmp_abs(num, l.den) >= 0) return mp::mul(inv, l.inv_factor);
  const Num w = mp::add(mp::sub(l.den, num), mp::mul(num, l.inv_factor));
  return mp::mul(inv, div(w, l.den));
}

// ---- vLLM's YaRN variants: yarn's range, always floored / ceiled, the mask times e --------------------------

posenc_status read_vllm_common(const posenc_rope_scaling &sc, Scheme &s) {
  if (!yarn_params(sc, s)) return POSENC_ERR_INVALID;
  s.truncate = true;
  s.ext_factor = sc.extrapolation_factor == 0.0 ? 1.0 : sc.extrapolation_factor;
  if (!(s.ext_factor > 0.0) || !(s.ext_factor <= 1.0)) return POSENC_ERR_INVALID;
  return POSENC_OK;
}

posenc_status read_deepseek(const posenc_rope_scaling &sc, Scheme &s, double *attention) {
  posenc_status st = read_vllm_common(sc, s);
  if (st != POSENC_OK) return st;
  const double attn = sc.attn_factor == 0.0 ? 1.0 : sc.attn_factor;
  // vLLM's defaults: mscale 1, mscale_all_dim 0
  st = vllm_attention(s.factor, sc.mscale == 0.0 ? 1.0 : sc.mscale, 10, sc.mscale_all_dim, 10, attn, attention);
  if (st != POSENC_OK) return st;
  return yarn_range(s);
}

posenc_status read_telechat3(const posenc_rope_scaling &sc, Scheme &s, double *attention) {
  posenc_status st = read_vllm_common(sc, s);
  if (st != POSENC_OK) return st;
  const double attn = sc.attn_factor == 0.0 ? 1.0 : sc.attn_factor;
  st = vllm_attention(s.factor, 7.0, 100, 0.0, 1, attn, attention);  // 0.07 ln s + 1
  if (st != POSENC_OK) return st;
  return yarn_range(s);
}

posenc_status read_yarn_log(const posenc_rope_scaling &sc, Scheme &s, double *) {
  const posenc_status st = read_vllm_common(sc, s);  // attention 1 (Grok's class leaves its mscale out)
  if (st != POSENC_OK) return st;
  return yarn_range(s);
}

double amplification_blend(const Scheme &s) {  // convex: the blend's weights add up to 1
  return plain_amplification(s) + 4.0 * (s.factor + 1.0 / s.factor + 2.0);
}
double amplification_yarn_log(const Scheme &s) {
  return plain_amplification(s) + 4.0 * (std::fabs(std::log(s.factor)) + 1.0);
}

// mask m = e (1 - ramp), f = inv ((1 - m) / s + m); e = 1 is HF's yarn
Num freq_blend(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv) {
  const Num m = mp::mul(mp::sub(one(n), s.ramp(n, i)), l.ext);
  return mp::mul(inv, mp::add(mp::mul(mp::sub(one(n), m), l.inv_factor), m));
}

// exp(ln(inv) m + ln(inv / s) (1 - m)) = inv s^(-(1 - m))
Num freq_yarn_log(Scheme &s, Scheme::Level &l, int n, int64_t i, const Num &inv) {
  const Num m = mp::mul(mp::sub(one(n), s.ramp(n, i)), l.ext);
  return mp::mul(inv, mp::exp(mp::neg(mp::mul(mp::sub(one(n), m), l.ln_s))));
}

}  // namespace

const Family kFamilyYARN{false,          nullptr,  read_yarn, never_plain, factor_top, amplification_yarn,
                         constants_yarn, freq_yarn};
const Family kFamilyDEEPSEEK_YARN{false,   nullptr,   read_deepseek, never_plain, factor_top, amplification_blend,
                                  nullptr, freq_blend};
const Family kFamilyTELECHAT3{false,   nullptr,   read_telechat3, never_plain, factor_top, amplification_blend,
                              nullptr, freq_blend};
const Family kFamilyYARN_LOG{false,   nullptr,      read_yarn_log, never_plain, factor_top, amplification_yarn_log,
                             nullptr, freq_yarn_log};

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
