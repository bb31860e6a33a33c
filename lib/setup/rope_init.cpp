// posenc_rope_init: the frequencies and attention scale of every HF transformers rope_type, evaluated from
// the real-valued formula (docs/rope.md, "Scalings") rather than from HF's float32 tensors.
//
// Each written f_i is the double nearest the formula's real value. The value is computed with the integer
// multi-precision of mp.hpp (the same bits on every architecture), with an a-priori bound on its relative
// error, and rounded only when the whole error interval rounds to one double (Ziv's strategy); otherwise the
// precision grows, 384 -> 768 -> 1536 bits. An interval that still straddles the midpoint of two doubles at
// 1536 bits is taken to be that midpoint (ties to even; a dynamic base can make one exactly); anything else
// left undecided there (absurd parameters) takes the nearest double of the 1536-bit value. libm is used only
// to size the precision and to decide whether the cheap frequency-range check suffices; neither choice can
// change a written bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/posenc.h"
#include "setup/enum_lists.hpp"
#include "setup/mp.hpp"
#include "setup/rope_powers.hpp"
#include "setup/rope_scheme.hpp"
#include "setup/rope_setup.hpp"

namespace posenc {
namespace detail {

using namespace scheme;

namespace {

int type_value(const posenc_rope_scaling &s) {
  int v = 0;
  static_assert(sizeof(s.type) == sizeof(int), "posenc_rope_type is int-sized");
  std::memcpy(&v, &s.type, sizeof v);
  return v;
}

posenc_status explicit_attention(double a, double *out) {
  if (!std::isfinite(a) || !(a >= kMinAttention) || !(a <= kMaxAttention)) return POSENC_ERR_INVALID;
  *out = a;
  return POSENC_OK;
}

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

posenc_status longrope_attention(const posenc_rope_scaling &s, double *out) {
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
        ok = true;  // only the magnitude check: the unrounded range is built per level
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

// The cheap frequency-range check in double: true when no f_i can reach 2^1000 (1 bit of margin for libm).
bool surely_in_range(const Scheme &s) {
  double top = std::fmax(0.0, -std::log2(s.base));  // base^(-2i/r) <= max(1, 1/base); a dynamic base' >= base
  switch (s.type) {
    case POSENC_ROPE_TYPE_LINEAR:
    case POSENC_ROPE_TYPE_PROPORTIONAL:
    case POSENC_ROPE_TYPE_YARN:
    case POSENC_ROPE_TYPE_LLAMA3:
    case POSENC_ROPE_TYPE_DEEPSEEK_YARN:
    case POSENC_ROPE_TYPE_YARN_LOG:
    case POSENC_ROPE_TYPE_TELECHAT3: top += std::fmax(0.0, -std::log2(s.factor)); break;
    case POSENC_ROPE_TYPE_NTK: top += 2.0 * std::fmax(0.0, -std::log2(s.factor)); break;  // s^(-(i+1)/h) <= 1/s
    case POSENC_ROPE_TYPE_THETA_SCALE: {  // exp(-(i/h) G) <= max(1, exp(-G))
      const double d = std::log(double(s.L0)) - std::log(2.0 * M_PI);
      top += std::fmax(0.0, -std::log2(s.base) * (d + std::log(s.factor)) / d);
      break;
    }
    case POSENC_ROPE_TYPE_LONGROPE: {
      double m = 0;
      for (int64_t i = 0; i < s.h; ++i) m = std::fmax(m, -std::log2(s.ext[i]));
      top += m;
      break;
    }
    case POSENC_ROPE_TYPE_DYNAMIC:  // base' = base X^(r/(r-2)), r/(r-2) <= 2; only alpha can make X < 1
      if (s.alpha != 0.0) top += 2.0 * std::fmax(0.0, -std::log2(s.alpha));
      break;
    default: break;
  }
  return top < 998.0;
}

// The parameters every YaRN scheme reads (factor, L0, the betas with HF's defaults), validated.
bool yarn_params(const posenc_rope_scaling &sc, double base, Scheme *s, int64_t *L0) {
  if (!positive_finite(sc.factor) || sc.original_max_positions < 1) return false;
  if (base == 1.0) return false;  // ln(base) = 0 divides the correction dimensions
  s->factor = sc.factor;
  *L0 = sc.original_max_positions;
  s->beta_fast = sc.beta_fast == 0.0 ? 32.0 : sc.beta_fast;
  s->beta_slow = sc.beta_slow == 0.0 ? 1.0 : sc.beta_slow;
  return positive_finite(s->beta_fast) && positive_finite(s->beta_slow) && s->beta_fast > s->beta_slow;
}

}  // namespace

posenc_status rope_init(posenc_rope *rope, int64_t rotary_dim, double base, const posenc_rope_scaling *scaling,
                        double *freq) {
  if (rope == nullptr) return POSENC_ERR_NULL;
  Scheme s;
  s.type = scaling == nullptr ? int(POSENC_ROPE_TYPE_DEFAULT) : type_value(*scaling);
#define POSENC_ONE(ENUM, ...) +1
  constexpr int kTypes = 0 POSENC_ROPE_TYPE_LIST(POSENC_ONE);  // lib/setup/rope_types.hpp
#undef POSENC_ONE
  if (int(s.type) < 0 || int(s.type) >= kTypes) return POSENC_ERR_INVALID;
  const bool explicit_freq =
      s.type != POSENC_ROPE_TYPE_DEFAULT && !(s.type == POSENC_ROPE_TYPE_LINEAR && freq == nullptr);
  if (explicit_freq && freq == nullptr) return POSENC_ERR_NULL;
  if (s.type == POSENC_ROPE_TYPE_LONGROPE && (scaling->short_factor == nullptr || scaling->long_factor == nullptr))
    return POSENC_ERR_NULL;
  if (rotary_dim < 2 || rotary_dim % 2 != 0) return POSENC_ERR_INVALID;
  if (!positive_finite(base)) return POSENC_ERR_INVALID;
  s.r = rotary_dim;
  s.h = rotary_dim / 2;
  s.base = base;

  double attention = 1.0;
  int64_t L0 = 0;
  switch (s.type) {
    case POSENC_ROPE_TYPE_DEFAULT: break;
    case POSENC_ROPE_TYPE_LINEAR:
      if (!positive_finite(scaling->factor) || !(1.0 / scaling->factor < kMaxFrequency)) return POSENC_ERR_INVALID;
      s.factor = scaling->factor;
      break;
    case POSENC_ROPE_TYPE_DYNAMIC:
      if (s.r == 2) return POSENC_ERR_INVALID;  // base' has the exponent r / (r - 2)
      if (scaling->alpha != 0.0) {              // base' = base alpha^(r / (r - 2)); factor and the lengths are not read
        if (!positive_finite(scaling->alpha)) return POSENC_ERR_INVALID;
        s.alpha = scaling->alpha;
        break;
      }
      if (!positive_finite(scaling->factor) || scaling->original_max_positions < 1 || scaling->seq_len < 0)
        return POSENC_ERR_INVALID;
      s.factor = scaling->factor;
      L0 = scaling->original_max_positions;
      s.L = scaling->seq_len > L0 ? scaling->seq_len : L0;
      break;
    case POSENC_ROPE_TYPE_YARN: {
      if (!yarn_params(*scaling, base, &s, &L0)) return POSENC_ERR_INVALID;
      s.truncate = scaling->truncate != 0;
      const posenc_status st = yarn_attention(*scaling, s.factor, &attention);
      if (st != POSENC_OK) return st;
      break;
    }
    case POSENC_ROPE_TYPE_LLAMA3:
      if (!positive_finite(scaling->factor) || scaling->original_max_positions < 1) return POSENC_ERR_INVALID;
      if (!positive_finite(scaling->low_freq_factor) || !positive_finite(scaling->high_freq_factor) ||
          !(scaling->high_freq_factor > scaling->low_freq_factor))
        return POSENC_ERR_INVALID;
      s.factor = scaling->factor;
      L0 = scaling->original_max_positions;
      s.lff = scaling->low_freq_factor;
      s.hff = scaling->high_freq_factor;
      break;
    case POSENC_ROPE_TYPE_PROPORTIONAL: {
      // HF's _compute_proportional_rope_parameters: int(p * head_dim // 2) pairs rotate at base^(-2i/r) /
      // factor (the linear scheme's values), the others have frequency 0; factor and p default to 1.
      const double f = scaling->factor == 0.0 ? 1.0 : scaling->factor;
      const double p = scaling->partial_rotary_factor == 0.0 ? 1.0 : scaling->partial_rotary_factor;
      if (!positive_finite(f) || !(1.0 / f < kMaxFrequency)) return POSENC_ERR_INVALID;
      if (!(p > 0.0) || !(p <= 1.0)) return POSENC_ERR_INVALID;
      s.factor = f;
      s.rotated = int64_t(std::floor(p * double(rotary_dim) / 2.0));  // Python's p * r // 2: floor(fl(p r) / 2)
      break;
    }
    case POSENC_ROPE_TYPE_LONGROPE: {
      if (scaling->original_max_positions < 1 || scaling->seq_len < 0) return POSENC_ERR_INVALID;
      for (int64_t i = 0; i < s.h; ++i)
        if (!positive_finite(scaling->short_factor[i]) || !positive_finite(scaling->long_factor[i]))
          return POSENC_ERR_INVALID;
      L0 = scaling->original_max_positions;
      const bool long_set = scaling->seq_len > L0;
      s.ext = long_set ? scaling->long_factor : scaling->short_factor;
      // vLLM's short_mscale / long_mscale: the chosen set's magnitude, when given, is the attention scale
      const double ms = scaling->short_mscale, ml = scaling->long_mscale;
      if (ms != 0.0 || ml != 0.0) {
        double unused = 0;
        if (scaling->attention_factor != 0.0) return POSENC_ERR_INVALID;  // two magnitudes for one scale
        if ((ms != 0.0 && explicit_attention(ms, &unused) != POSENC_OK) ||
            (ml != 0.0 && explicit_attention(ml, &unused) != POSENC_OK))
          return POSENC_ERR_INVALID;
      }
      const double chosen = long_set ? ml : ms;
      const posenc_status st =
          chosen != 0.0 ? explicit_attention(chosen, &attention) : longrope_attention(*scaling, &attention);
      if (st != POSENC_OK) return st;
      break;
    }
    case POSENC_ROPE_TYPE_NTK:
      if (!positive_finite(scaling->factor)) return POSENC_ERR_INVALID;
      if (scaling->mixed_b != 0.0 && !positive_finite(scaling->mixed_b)) return POSENC_ERR_INVALID;
      // ((i + 1) / h)^b = exp(b ln((i + 1) / h)): mp::exp takes |x| < 2^40; past b ln h = 2^30 every pair but
      // the last has lambda = 1 to far below any precision (a degenerate scheme), refused
      if (scaling->mixed_b != 0.0 && !(scaling->mixed_b * std::log(double(s.h)) < 0x1p30)) return POSENC_ERR_INVALID;
      s.factor = scaling->factor;
      s.mixed_b = scaling->mixed_b;
      break;
    case POSENC_ROPE_TYPE_DEEPSEEK_YARN:
    case POSENC_ROPE_TYPE_YARN_LOG:
    case POSENC_ROPE_TYPE_TELECHAT3: {
      // vLLM's YaRN variants: yarn's range, always floored / ceiled, the mask times e
      if (!yarn_params(*scaling, base, &s, &L0)) return POSENC_ERR_INVALID;
      s.truncate = true;
      s.ext_factor = scaling->extrapolation_factor == 0.0 ? 1.0 : scaling->extrapolation_factor;
      if (!(s.ext_factor > 0.0) || !(s.ext_factor <= 1.0)) return POSENC_ERR_INVALID;
      const double attn = scaling->attn_factor == 0.0 ? 1.0 : scaling->attn_factor;
      posenc_status st = POSENC_OK;
      if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN)  // vLLM's defaults: mscale 1, mscale_all_dim 0
        st = vllm_attention(s.factor, scaling->mscale == 0.0 ? 1.0 : scaling->mscale, 10, scaling->mscale_all_dim, 10,
                            attn, &attention);
      else if (s.type == POSENC_ROPE_TYPE_TELECHAT3)  // 0.07 ln s + 1
        st = vllm_attention(s.factor, 7.0, 100, 0.0, 1, attn, &attention);
      if (st != POSENC_OK) return st;
      break;
    }
    case POSENC_ROPE_TYPE_THETA_SCALE:
      // Grok-1: ln(L0 / 2 pi) must be positive (L0 >= 7)
      if (!positive_finite(scaling->factor) || scaling->original_max_positions < 7) return POSENC_ERR_INVALID;
      s.factor = scaling->factor;
      L0 = scaling->original_max_positions;
      break;
    default: return POSENC_ERR_INVALID;
  }
  s.L0 = L0;
  if (s.type == POSENC_ROPE_TYPE_YARN || s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN ||
      s.type == POSENC_ROPE_TYPE_YARN_LOG || s.type == POSENC_ROPE_TYPE_TELECHAT3) {
    const posenc_status st = yarn_range(s);
    if (st != POSENC_OK) return st;
  }

  // Plain base^(-2i/r): no explicit frequencies.
  const bool plain = s.type == POSENC_ROPE_TYPE_DEFAULT || (s.type == POSENC_ROPE_TYPE_LINEAR && freq == nullptr) ||
                     (s.type == POSENC_ROPE_TYPE_DYNAMIC && s.alpha == 0.0 && s.L == L0) ||
                     (s.type == POSENC_ROPE_TYPE_DYNAMIC && s.alpha == 1.0);
  if (plain) {
    posenc_rope out = posenc_rope_default(rotary_dim);
    out.base = base;
    if (s.type == POSENC_ROPE_TYPE_LINEAR) out.position_scale = 1.0 / s.factor;  // correctly rounded
    *rope = out;
    return POSENC_OK;
  }

  // The error amplification of each scheme (docs/rope.md): exp(-(i/h) G) loses |G| of relative accuracy
  // to G's error; the blends lose what their cancellations and clamps can cost.
  double G = std::fabs(std::log(base));
  if (s.type == POSENC_ROPE_TYPE_DYNAMIC)
    G += s.alpha != 0.0 ? 2.0 * std::fabs(std::log(s.alpha))
                        : 2.0 * std::log1p(s.factor * (double(s.L - L0) / double(L0)));
  if (s.type == POSENC_ROPE_TYPE_NTK) G += std::fabs(std::log(s.factor));
  if (s.type == POSENC_ROPE_TYPE_THETA_SCALE) {
    const double d = std::log(double(L0)) - std::log(2.0 * M_PI);
    G = std::fabs(std::log(base) * (d + std::log(s.factor)) / d);
  }
  double amp = 1.0 + G;
  const double fr = s.factor + 1.0 / s.factor + 2.0;
  if (s.type == POSENC_ROPE_TYPE_YARN && !s.truncate) {
    const Num lo = s.cd(kLimbs[0], s.beta_fast), hi = s.cd(kLimbs[0], s.beta_slow);
    const double cf = mp::to_double(lo), cs = mp::to_double(hi);
    const double span = std::fabs(std::fmin(cs, double(s.r - 1)) - std::fmax(cf, 0.0));
    const double dcd =
        double(s.h) *
            (std::log(double(L0)) + 2.0 + std::fabs(std::log(s.beta_fast)) + std::fabs(std::log(s.beta_slow))) /
            std::fabs(std::log(base)) +
        std::fabs(cf) + std::fabs(cs) + double(s.r);
    amp += 0x1p16 * dcd * fr / span;  // span == 0 gives inf: best effort at the highest precision
  }
  if (s.type == POSENC_ROPE_TYPE_LLAMA3) amp += 16.0 * (s.hff + s.lff) / (s.hff - s.lff) * fr;
  const double lns = std::fabs(std::log(s.factor));
  if (s.type == POSENC_ROPE_TYPE_NTK)  // G + ln s; mixed: ln s ((i+1)/h)^b through two exps
    amp += 4.0 * lns * (2.0 + s.mixed_b * (std::log(double(s.h)) + 1.0));
  if (s.type == POSENC_ROPE_TYPE_DEEPSEEK_YARN || s.type == POSENC_ROPE_TYPE_TELECHAT3) amp += 4.0 * fr;  // convex
  if (s.type == POSENC_ROPE_TYPE_YARN_LOG) amp += 4.0 * (lns + 1.0);
  if (s.type == POSENC_ROPE_TYPE_THETA_SCALE) {  // the cancellation in ln(L0 / 2 pi) scales G's error
    const double d = std::log(double(L0)) - std::log(2.0 * M_PI), num = d + std::log(s.factor);
    amp += std::fabs(std::log(base)) * (std::log(double(L0)) + 4.0 + lns) * (1.0 + std::fabs(num / d)) / d;
  }
  s.lost = lost_bits(amp * 16.0 * double(s.h));

  const int64_t nonzero = s.type == POSENC_ROPE_TYPE_PROPORTIONAL ? s.rotated : s.h;
  auto value = [&](int64_t i) { return round_verified([&](int k) { return s.freq(k, i); }, s.lost); };
  if (!surely_in_range(s))
    for (int64_t i = 0; i < nonzero; ++i)
      if (!(value(i) < kMaxFrequency)) return POSENC_ERR_INVALID;

  for (int64_t i = 0; i < s.h; ++i) freq[i] = i < nonzero ? value(i) : 0.0;
  posenc_rope out = posenc_rope_default(rotary_dim);
  out.base = base;
  out.freq = freq;
  out.attention_scale = attention;
  *rope = out;
  return POSENC_OK;
}

posenc_status rope_powers(int64_t rotary_dim, double base, int64_t n, PowerIndex index, double *out) {
  Scheme s;
  s.r = rotary_dim;
  s.h = rotary_dim / 2;
  s.base = base;
  int64_t top = 0;
  for (int64_t k = 0; k < n; ++k) top = std::max(top, index.of(index.ctx, k));
  // exp(-(i/h) G) loses (i/h) |G| of relative accuracy to G's error; the chain of products is not used
  // for indices out of sequence (each is exp of its own), so the usual count covers them
  const double G = std::fabs(std::log(base));
  s.lost = lost_bits((1.0 + G * (1.0 + double(top) / double(s.h))) * 16.0 * double(s.h));
  auto value = [&](int64_t i) { return round_verified([&](int k) { return s.freq(k, i); }, s.lost); };
  // The cheap range check (as surely_in_range): base^(-i/h) <= max(1, base^(-top/h))
  if (!(std::fmax(0.0, -std::log2(base)) * (double(top) / double(s.h)) < 998.0))
    for (int64_t k = 0; k < n; ++k)
      if (!(value(index.of(index.ctx, k)) < kMaxFrequency)) return POSENC_ERR_INVALID;
  for (int64_t k = 0; k < n; ++k) out[k] = value(index.of(index.ctx, k));
  return POSENC_OK;
}

}  // namespace detail
}  // namespace posenc
