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

#include "enum_lists.hpp"
#include "mp.hpp"
#include "posenc/posenc.h"
#include "rope_powers.hpp"

namespace posenc {
namespace detail {
namespace {

using mp::Num;

constexpr int kLevels = 3;
constexpr int kLimbs[kLevels] = {6, 12, 24};  // 384, 768, 1536 bits
constexpr double kMaxFrequency = 0x1p1000;    // the same bound as posenc_spec's |position_scale * w_i|
constexpr double kMinAttention = 0x1p-64, kMaxAttention = 0x1p64;

Num one(int n) { return mp::from_u64(1, n); }

// The double nearest a, ties to even, subnormals included; |a| < 2^1024.
double round_double(const Num &a) {
  if (a.is_zero()) return 0.0;
  if (mp::exponent(a) >= -1021) return mp::to_double(a);  // |a| >= 2^-1022: the result is normal
  // On the subnormal grid: the integer nearest a * 2^1074 (below 2^53), ties to even.
  int64_t k = 0;
  const Num frac = mp::split_nearest_integer(mp::ldexp(a, 1074), &k);
  const Num half = mp::ldexp(one(a.n), -1);
  if (mp::cmp_abs(frac, half) == 0 && (k & 1) != 0) k += frac.neg ? -1 : 1;  // a tie rounded away: go even
  return std::ldexp(double(k), -1074);
}

// 1/b by Newton's iteration y <- y + y (1 - b y) from the double estimate (IEEE division: the same
// everywhere); each step doubles the correct bits, so the result has relative error below 2^(4 - 64 n).
Num recip(const Num &b) {
  const int n = b.n;
  const int64_t e = mp::exponent(b);
  const Num bs = mp::abs(mp::ldexp(b, -e));  // [1/2, 1)
  Num y = mp::from_double(1.0 / mp::to_double(bs), n);
  for (int64_t bits = 50; bits < 64 * int64_t(n) + 16; bits *= 2)
    y = mp::add(y, mp::mul(y, mp::sub(one(n), mp::mul(bs, y))));
  y = mp::ldexp(y, -e);
  return b.neg ? mp::neg(y) : y;
}

Num div(const Num &a, const Num &b) { return mp::mul(a, recip(b)); }

// sqrt(z), z > 0, from 1/sqrt by Newton's iteration y <- y + y (1 - z y^2) / 2.
Num sqrt_num(const Num &z) {
  const int n = z.n;
  int64_t e = mp::exponent(z);
  if (e & 1) ++e;  // even, so that sqrt(2^e) = 2^(e/2); zs in [1/4, 1)
  const Num zs = mp::ldexp(z, -e);
  Num y = mp::from_double(1.0 / std::sqrt(mp::to_double(zs)), n);
  for (int64_t bits = 50; bits < 64 * int64_t(n) + 16; bits *= 2) {
    const Num t = mp::sub(one(n), mp::mul(zs, mp::mul(y, y)));
    y = mp::add(y, mp::ldexp(mp::mul(y, t), -1));
  }
  return mp::ldexp(mp::mul(zs, y), e / 2);
}

// ln x for a positive Num: ln d + log1p(x/d - 1) + e ln 2, d the double nearest the mantissa. The absolute
// error stays below (|e| + 8) 2^(16 - 64 n), which is what the callers need (they feed exp or add to 1).
Num ln_num(const Num &x) {
  const int n = x.n;
  const int64_t e = mp::exponent(x);
  const Num xs = mp::ldexp(x, -e);  // [1/2, 1)
  const double d = mp::to_double(xs);
  Num y = mp::log(d, n);
  const Num q = mp::mul(mp::sub(xs, mp::from_double(d, n)), mp::exp(mp::neg(y)));  // |q| <= 2^-53
  if (!q.is_zero()) {
    Num term = q, sum = q;
    for (uint64_t k = 2;; ++k) {
      term = mp::mul(term, q);
      if (term.is_zero() || mp::exponent(term) < -64 * int64_t(n) - 8) break;
      const Num t = mp::div_u64(term, k);
      sum = (k & 1) ? mp::add(sum, t) : mp::sub(sum, t);
    }
    y = mp::add(y, sum);
  }
  if (e != 0) {
    const Num t = mp::mul_u64(mp::ln2(n), uint64_t(e < 0 ? -e : e));
    y = e < 0 ? mp::sub(y, t) : mp::add(y, t);
  }
  return y;
}

// Bits of relative error a value computed at any precision may carry, from an amplification estimate
// (condition number times op count); 48 bits cover mp::exp's squarings and the op chains.
int lost_bits(double amplification) {
  if (!(amplification < 0x1p1000)) return 2000;
  return 48 + int(std::ceil(std::log2(std::fmax(amplification, 1.0))));
}

// The correctly rounded double of a quantity: eval(level) returns it at kLimbs[level] limbs with relative
// error below 2^(lost - 64 limbs). Verified levels start where that leaves 128 bits.
template <class Eval>
double round_verified(Eval &&eval, int lost) {
  int level = 0;
  while (level + 1 < kLevels && 64 * kLimbs[level] - lost < 128) ++level;
  for (;; ++level) {
    const Num a = eval(level);
    const bool last = level + 1 == kLevels;
    const int64_t k = 64 * int64_t(kLimbs[level]) - lost;
    if (k < 60) {
      if (last) return round_double(a);  // no useful bound: the best value there is
      continue;
    }
    const Num d = mp::ldexp(mp::abs(a), -k);
    const double lo = round_double(mp::sub(a, d)), hi = round_double(mp::add(a, d));
    if (std::memcmp(&lo, &hi, sizeof lo) == 0) return lo;
    // Still straddling the midpoint of two adjacent doubles at 1536 bits: the value is that midpoint (the
    // dynamic base can make one exactly), so ties go to even. Were it only within 2^-1400 of it, either
    // neighbour would still be within 1 ULP.
    if (last) {
      if (std::nextafter(lo, hi) != hi) return round_double(a);
      uint64_t b;
      std::memcpy(&b, &lo, sizeof b);
      return (b & 1) == 0 ? lo : hi;
    }
  }
}

int type_value(const posenc_rope_scaling &s) {
  int v = 0;
  static_assert(sizeof(s.type) == sizeof(int), "posenc_rope_type is int-sized");
  std::memcpy(&v, &s.type, sizeof v);
  return v;
}

bool positive_finite(double x) { return x > 0.0 && std::isfinite(x); }

// Everything a scheme needs, validated; then the per-precision constants, built on first use.
struct Scheme {
  int type = POSENC_ROPE_TYPE_DEFAULT;
  int64_t r = 0, h = 0;
  double base = 0, factor = 1;
  int64_t L0 = 0;
  // dynamic: L = max(seq_len, L0); or vLLM's NTK alpha (HunYuan), which replaces the length rule
  int64_t L = 0;
  double alpha = 0;
  // yarn
  double beta_fast = 32, beta_slow = 1;
  bool truncate = true;
  int64_t low_i = 0, high_i = 0;  // truncate: the clamped integer range
  bool equal_range = false;       // truncate: low == high (HF adds 0.001 to high)
  // llama3
  double lff = 0, hff = 0;
  // longrope
  const double *ext = nullptr;
  // proportional: the pairs below it rotate (as linear), the others have frequency 0
  int64_t rotated = 0;
  // vLLM's schemes: ntk's mixed_b (0: fixed NTK); the YaRN variants' extrapolation factor e in [0, 1]
  double mixed_b = 0, ext_factor = 1;
  int lost = 48;  // for the frequencies

  struct Level {
    bool ready = false;
    Num G;           // ln of the base of the power: base^(-2i/r) = exp(-(i/h) G)
    Num inv_factor;  // 1 / factor
    Num low, den;    // yarn without truncate: low and den = high - low (made positive, sign in den_neg)
    bool den_neg = false;
    Num c, lff, hff, band;  // llama3: c = L0 / (2 pi); band = hff - lff
    Num ln_s, ntk_c, ln_h, b, ext;  // ntk: ln factor, factor^(-1/h), ln h, mixed_b; the YaRN variants' e
    // base^(-2i/r) for consecutive i as a chain of products by rho = exp(-G / h): one multiplication per
    // pair instead of an exp, i relative roundings more (lost counts log2(h) bits for them)
    Num rho, cur;
    int64_t cur_i = -1;
  } lv[kLevels];

  Num cd(int n, double beta) const;  // YaRN's correction dimension for beta, at n limbs

  // The ramp of the floored / ceiled correction range: clamp((i - low) / (high - low), 0, 1), with HF's and
  // vLLM's high + 0.001 when low == high.
  Num ramp(int n, int64_t i) const {
    if (equal_range) return i <= low_i ? mp::zero(n) : one(n);
    int64_t num = i - low_i, den = high_i - low_i;
    if (den < 0) {
      num = -num;
      den = -den;
    }
    if (num <= 0) return mp::zero(n);
    if (num >= den) return one(n);
    return mp::div_u64(mp::from_i64(num, n), uint64_t(den));
  }

  Level &level(int k) {
    Level &l = lv[k];
    if (l.ready) return l;
    const int n = kLimbs[k];
    l.G = mp::log(base, n);
    if (type == POSENC_ROPE_TYPE_DYNAMIC) {
      // X = factor (L - L0) / L0 + 1 >= 1 (or vLLM's alpha), then G = ln base + (r / (r - 2)) ln X
      Num x;
      if (alpha != 0.0) {
        x = mp::from_double(alpha, n);
      } else {
        x = mp::mul(mp::from_double(factor, n), mp::from_i64(L - L0, n));
        x = mp::add(mp::div_u64(x, uint64_t(L0)), one(n));
      }
      const Num lx = mp::div_u64(mp::mul_u64(ln_num(x), uint64_t(h)), uint64_t(h - 1));
      l.G = mp::add(l.G, lx);
    }
    l.ln_s = mp::log(factor, n);
    l.ext = mp::from_double(ext_factor, n);
    if (type == POSENC_ROPE_TYPE_NTK && mixed_b == 0.0) {  // (base s)^(-2i/r) s^(-2/r)
      l.G = mp::add(l.G, l.ln_s);
      l.ntk_c = mp::exp(mp::neg(mp::div_u64(l.ln_s, uint64_t(h))));
    }
    if (type == POSENC_ROPE_TYPE_NTK && mixed_b != 0.0) {
      l.ln_h = ln_num(mp::from_i64(h, n));
      l.b = mp::from_double(mixed_b, n);
    }
    if (type == POSENC_ROPE_TYPE_THETA_SCALE) {  // ln base' = ln base ln(L0 s / 2 pi) / ln(L0 / 2 pi)
      const Num d = mp::sub(ln_num(mp::from_i64(L0, n)), ln_num(mp::ldexp(mp::pi(n), 1)));
      l.G = div(mp::mul(l.G, mp::add(d, l.ln_s)), d);
    }
    l.rho = mp::exp(mp::neg(mp::div_u64(l.G, uint64_t(h))));
    l.inv_factor = recip(mp::from_double(factor, n));
    if (type == POSENC_ROPE_TYPE_YARN && !truncate) {
      Num lo = cd(n, beta_fast), hi = cd(n, beta_slow);
      if (lo.neg || lo.is_zero()) lo = mp::zero(n);                 // max(low, 0)
      const Num top = mp::from_i64(r - 1, n);                       // min(high, dim - 1)
      if (!hi.neg && mp::cmp_abs(hi, top) > 0) hi = top;
      l.low = lo;
      l.den = mp::sub(hi, lo);
      l.den_neg = l.den.neg;
      l.den = mp::abs(l.den);
    }
    if (type == POSENC_ROPE_TYPE_LLAMA3) {
      l.c = div(mp::from_i64(L0, n), mp::ldexp(mp::pi(n), 1));
      l.lff = mp::from_double(lff, n);
      l.hff = mp::from_double(hff, n);
      l.band = mp::sub(l.hff, l.lff);
    }
    l.ready = true;
    return l;
  }

  // f_i at level k.
  Num freq(int k, int64_t i) {
    Level &l = level(k);
    const int n = kLimbs[k];
    if (l.cur_i >= 0 && i == l.cur_i + 1) {
      l.cur = mp::mul(l.cur, l.rho);
    } else if (i != l.cur_i) {  // out of sequence (a fallback, or the second pass): straight from exp
      l.cur = mp::exp(mp::neg(mp::div_u64(mp::mul_u64(l.G, uint64_t(i)), uint64_t(h))));
    }
    l.cur_i = i;
    const Num inv = l.cur;  // base^(-2i/r), exactly 1 for i = 0
    switch (type) {
      case POSENC_ROPE_TYPE_LINEAR:
      case POSENC_ROPE_TYPE_PROPORTIONAL: return mp::mul(inv, l.inv_factor);
      case POSENC_ROPE_TYPE_YARN: {
        // f = inv ((1 - ramp) + ramp / factor), ramp = clamp((i - low) / (high - low), 0, 1)
        if (truncate) {
          if (equal_range) return i <= low_i ? inv : mp::mul(inv, l.inv_factor);  // (i - low) / 0.001
          int64_t num = i - low_i, den = high_i - low_i;
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
      case POSENC_ROPE_TYPE_LLAMA3: {
        // x = L0 / wavelen = L0 inv / (2 pi): below lff the long waves are divided by factor, above hff the
        // short ones are kept, in between f = inv ((1 - s) / factor + s), s = (x - lff) / (hff - lff).
        const Num xr = mp::mul(inv, l.c);
        const bool below = mp::sub(xr, l.lff).neg, above = !mp::sub(xr, l.hff).neg;
        if (below) return mp::mul(inv, l.inv_factor);
        if (above) return inv;
        const Num one_minus_s = div(mp::sub(l.hff, xr), l.band), s = div(mp::sub(xr, l.lff), l.band);
        return mp::mul(inv, mp::add(mp::mul(one_minus_s, l.inv_factor), s));
      }
      case POSENC_ROPE_TYPE_LONGROPE: return div(inv, mp::from_double(ext[i], n));
      case POSENC_ROPE_TYPE_NTK: {
        if (mixed_b == 0.0) return mp::mul(inv, l.ntk_c);
        // inv / lambda_i, lambda_i = exp(a (i + 1)^b) with a = ln s / h^b: s^(((i + 1) / h)^b)
        const Num t = mp::exp(mp::mul(l.b, mp::sub(ln_num(mp::from_i64(i + 1, n)), l.ln_h)));
        return mp::mul(inv, mp::exp(mp::neg(mp::mul(l.ln_s, t))));
      }
      case POSENC_ROPE_TYPE_DEEPSEEK_YARN:
      case POSENC_ROPE_TYPE_TELECHAT3: {
        // vLLM's blend: mask m = e (1 - ramp), f = inv ((1 - m) / s + m); e = 1 is HF's yarn
        const Num m = mp::mul(mp::sub(one(n), ramp(n, i)), l.ext);
        return mp::mul(inv, mp::add(mp::mul(mp::sub(one(n), m), l.inv_factor), m));
      }
      case POSENC_ROPE_TYPE_YARN_LOG: {
        // exp(ln(inv) m + ln(inv / s) (1 - m)) = inv s^(-(1 - m))
        const Num m = mp::mul(mp::sub(one(n), ramp(n, i)), l.ext);
        return mp::mul(inv, mp::exp(mp::neg(mp::mul(mp::sub(one(n), m), l.ln_s))));
      }
      default: return inv;  // dynamic, theta_scale: the base is in G
    }
  }
};

Num Scheme::cd(int n, double beta) const {
  // cd(beta) = r ln(L0 / (2 pi beta)) / (2 ln base) = h (ln L0 - ln 2 pi - ln beta) / ln base
  const Num t = mp::sub(mp::sub(ln_num(mp::from_i64(L0, n)), ln_num(mp::ldexp(mp::pi(n), 1))), mp::log(beta, n));
  return div(mp::mul_u64(t, uint64_t(h)), mp::log(base, n));
}

// The attention factors. Each returns INVALID when the factor is not a double in [2^-64, 2^64].
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

// Where a correction dimension c = cd(beta), computed at level k, lies among the integers: its nearest integer
// and the side of the rest (-1, 0, 1). False while the error interval still holds an integer (cd is
// transcendental, so it never is one); the last level decides all the same.
bool locate(const Scheme &s, double beta, int k, const Num &c, int64_t *near, int *side) {
  const int n = kLimbs[k];
  const Num frac = mp::split_nearest_integer(c, near);
  const double scale = double(s.h) * (std::log(double(s.L0)) + 2.0 + std::fabs(std::log(beta))) /
                           std::fabs(std::log(s.base)) +
                       std::fabs(mp::to_double(c)) + 1.0;
  const Num err = mp::ldexp(mp::from_double(scale, n), lost_bits(1) - 64 * int64_t(n));
  if (k + 1 < kLevels && !frac.is_zero() && mp::cmp_abs(frac, err) <= 0) return false;  // too close to an integer
  *side = frac.is_zero() ? 0 : frac.neg ? -1 : 1;
  return true;
}

// YaRN's integer correction range, floor / ceil of the real correction dimensions, clamped as HF does.
// Each is decided only when its error interval holds no integer (never exactly one: cd is transcendental).
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
      if (which == 0) fl = side < 0 ? near - 1 : near;
      else ce = side > 0 ? near + 1 : near;
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

posenc_status rope_init(posenc_rope *rope, int64_t rotary_dim, double base, const posenc_rope_scaling *scaling,
                        double *freq) {
  if (rope == nullptr) return POSENC_ERR_NULL;
  Scheme s;
  s.type = scaling == nullptr ? int(POSENC_ROPE_TYPE_DEFAULT) : type_value(*scaling);
#define POSENC_ONE(ENUM, name) +1
  constexpr int kTypes = 0 POSENC_ROPE_TYPE_LIST(POSENC_ONE);  // lib/enum_lists.hpp
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
      if (scaling->alpha != 0.0) {  // base' = base alpha^(r / (r - 2)); factor and the lengths are not read
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
      if (scaling->mixed_b != 0.0 && !(scaling->mixed_b * std::log(double(s.h)) < 0x1p30))
        return POSENC_ERR_INVALID;
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
        st = vllm_attention(s.factor, scaling->mscale == 0.0 ? 1.0 : scaling->mscale, 10, scaling->mscale_all_dim,
                            10, attn, &attention);
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
    G += s.alpha != 0.0 ? 2.0 * std::fabs(std::log(s.alpha)) : 2.0 * std::log1p(s.factor * (double(s.L - L0) / double(L0)));
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
    const double dcd = double(s.h) * (std::log(double(L0)) + 2.0 + std::fabs(std::log(s.beta_fast)) +
                                      std::fabs(std::log(s.beta_slow))) / std::fabs(std::log(base)) +
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

}  // namespace

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

namespace {

// ggml_rope_frequencies (rope_powers.hpp). A correction dimension beyond +-2^40 acts on every pair index as
// +-infinity does; kFar stands for both.
constexpr int64_t kFar = int64_t(1) << 40;

// The extended real value of ggml's cd(beta) = n_dims ln(n_ctx_orig / (2 pi beta)) / (2 ln base), classified:
// kFinite (computed exactly by the caller), kPlusInf, kMinusInf, or kNaN, with IEEE's rules for the divisions
// by zero and logarithms of 0 or infinity that ggml's float arithmetic meets. The real ratio is never 1 (pi is
// transcendental), so ln never vanishes where the operands are finite and non-zero.
enum class Cd { kFinite, kPlusInf, kMinusInf, kNaN };
Cd classify_cd(float beta, int64_t n_ctx_orig, float base) {
  if (std::isnan(beta)) return Cd::kNaN;
  int log_sign;  // the sign of the ratio's log, -inf, +inf or finite: -1, 0 or 1
  bool finite = false;
  if (n_ctx_orig == 0) {
    if (beta == 0.0f) return Cd::kNaN;  // 0 / 0
    log_sign = -1;                      // +-0: ln is -inf
  } else if (beta == 0.0f || std::isinf(beta)) {
    if (std::isinf(beta)) log_sign = -1;                          // n / inf = +-0
    else if ((n_ctx_orig > 0) != std::signbit(beta)) log_sign = 1;  // n / +-0 = +inf
    else return Cd::kNaN;                                         // ln(-inf)
  } else {
    if ((n_ctx_orig > 0) != (beta > 0.0f)) return Cd::kNaN;  // ln of a negative ratio
    finite = true;
    // the sign of ln(|n| / (2 pi |beta|)): |n| against 2 pi |beta|, never equal (pi is transcendental)
    const int n = kLimbs[0];
    const Num two_pi_beta = mp::mul(mp::ldexp(mp::pi(n), 1), mp::from_double(std::fabs(beta), n));
    const uint64_t an = n_ctx_orig < 0 ? uint64_t(0) - uint64_t(n_ctx_orig) : uint64_t(n_ctx_orig);
    log_sign = mp::cmp_abs(mp::from_u64(an, n), two_pi_beta) > 0 ? 1 : -1;
  }
  if (base == 1.0f) return log_sign < 0 ? Cd::kMinusInf : Cd::kPlusInf;  // ln base = +0: x / +0 keeps x's sign
  if (finite) return Cd::kFinite;
  return (log_sign > 0) == (base > 1.0f) ? Cd::kPlusInf : Cd::kMinusInf;
}

// ggml_rope_yarn_corr_dims on the real values: low = max(0, floor(cd(beta_fast))), or with ceil = false,
// high = min(n_dims - 1, ceil(cd(beta_slow))); an infinity becomes +-kFar. False where ggml's value is NaN.
bool ggml_corr_dim(Scheme &s, float beta, bool ceil, int64_t *out) {
  const int64_t top = s.r - 1;
  auto clamp = [&](int64_t v) { return ceil ? std::min(top, v) : std::max<int64_t>(0, v); };
  switch (classify_cd(beta, s.L0, float(s.base))) {
    case Cd::kNaN: return false;
    case Cd::kPlusInf: *out = clamp(kFar); return true;
    case Cd::kMinusInf: *out = clamp(-kFar); return true;
    case Cd::kFinite: break;
  }
  Scheme a = s;  // the ratio n_ctx_orig / (2 pi beta) as |n_ctx_orig| / (2 pi |beta|)
  a.L0 = s.L0 < 0 ? -s.L0 : s.L0;
  beta = std::fabs(beta);
  for (int k = 0;; ++k) {
    const Num c = a.cd(kLimbs[k], beta);
    if (!c.is_zero() && mp::exponent(c) > 41) {  // |cd| >= 2^40
      *out = clamp(c.neg ? -kFar : kFar);
      return true;
    }
    int64_t near = 0;
    int side = 0;
    if (!locate(a, beta, k, c, &near, &side)) continue;
    *out = clamp(ceil ? (side > 0 ? near + 1 : near) : (side < 0 ? near - 1 : near));
    return true;
  }
}

// The YaRN blend's factor (freq_scale + (1 - freq_scale) ext_factor ramp) times den, for ramp = num / den
// (integers): exact at 768 bits for float inputs (every product and the sum span fewer bits).
Num ggml_blend(int n, float fs, float ef, int64_t num, int64_t den) {
  const Num f = mp::from_double(fs, n);
  Num t = mp::mul_u64(f, uint64_t(den));
  if (num != 0) t = mp::add(t, mp::mul(mp::mul_u64(mp::from_double(ef, n), uint64_t(num)), mp::sub(one(n), f)));
  return t;
}

}  // namespace

posenc_status ggml_rope_frequencies(const GgmlRope &g, double *freq, double *attention) {
  if (g.n_dims < 2 || g.n_dims % 2 != 0 || g.pairs < 1) return POSENC_ERR_INVALID;
  if (g.n_ctx_orig < -(int64_t(1) << 31) || g.n_ctx_orig >= (int64_t(1) << 31)) return POSENC_ERR_INVALID;
  const float fs = g.freq_scale, ef = g.ext_factor;
  if (!positive_finite(g.freq_base) || !positive_finite(fs) || !std::isfinite(ef) ||
      !positive_finite(g.attn_factor))
    return POSENC_ERR_INVALID;
  int64_t top = 0;
  for (int64_t i = 0; i < g.pairs; ++i) {
    const int64_t k = g.index ? g.index[i] : i;
    if (k < 0 || k >= (int64_t(1) << 31)) return POSENC_ERR_INVALID;
    top = std::max(top, k);
    if (g.factors && (!std::isfinite(g.factors[i]) || g.factors[i] == 0.0f)) return POSENC_ERR_INVALID;
  }
  Scheme s;
  s.r = g.n_dims;
  s.h = g.n_dims / 2;
  s.base = g.freq_base;
  s.L0 = g.n_ctx_orig;  // cd uses |n_ctx_orig| and |beta|: where it is finite, their signs agree

  // The ramp: low, high from the real correction dimensions; (high - i) / (high - low) between them when
  // high - low >= 1, else ggml's max(0.001, .) makes it a step at low (1 up to low, 0 after).
  int64_t low = 0, high = 0;
  if (ef != 0.0f && (!ggml_corr_dim(s, g.beta_fast, false, &low) || !ggml_corr_dim(s, g.beta_slow, true, &high)))
    return POSENC_ERR_INVALID;
  auto ramp = [&](int64_t i, int64_t *num, int64_t *den) {
    *den = 1;
    if (ef == 0.0f) *num = 0;
    else if (high - low >= 1) {
      *den = high - low;
      *num = std::min(std::max<int64_t>(high - i, 0), *den);
    } else {
      *num = i <= low ? 1 : 0;
    }
  };

  // The magnitude: attn_factor (1 - ln(freq_scale) / 10); it cancels only near freq_scale = e^10.
  double m = g.attn_factor;
  if (ef != 0.0f && fs != 1.0f) {
    const double t = std::fabs(std::log(double(fs))) / 10.0;
    m = round_verified(
        [&](int k) {
          const int n = kLimbs[k];
          return mp::mul(mp::from_double(g.attn_factor, n), mp::sub(one(n), mp::div_u64(mp::log(fs, n), 10)));
        },
        lost_bits(64.0 * (1.0 + t) / std::fmax(std::fabs(1.0 - t), 0x1p-900)));
  }
  if (!(m >= kMinAttention) || !(m <= kMaxAttention)) return POSENC_ERR_INVALID;

  // Each frequency: the power (as rope_powers, index k_i), times the blend (exact at 768 bits; the sum
  // cancels only when the blend is near 0, which its condition number pays for), over den c_i.
  const double G = std::fabs(std::log(double(g.freq_base)));
  const double power_amp = (1.0 + G * (1.0 + double(top) / double(s.h))) * 16.0 * double(s.h);
  auto value = [&](int64_t i) {
    int64_t num = 0, den = 1;
    ramp(i, &num, &den);
    const Num exact = ggml_blend(kLimbs[1], fs, ef, num, den);
    if (exact.is_zero()) return 0.0;
    const double terms = std::fabs(double(fs)) * double(den) +
                         std::fabs(double(ef)) * double(num) * std::fabs(1.0 - double(fs));
    const double cond = terms / std::fabs(mp::to_double(exact));
    const int64_t k = g.index ? g.index[i] : i;
    const double c = g.factors ? double(g.factors[i]) : 1.0;
    return round_verified(
        [&](int lv) {
          const int n = kLimbs[lv];
          const Num v = mp::mul(s.freq(lv, k), ggml_blend(n, fs, ef, num, den));
          return div(v, mp::mul_u64(mp::from_double(c, n), uint64_t(den)));
        },
        lost_bits(power_amp * (1.0 + cond) * 8.0));
  };
  // The cheap range check in double: base^(-2k/n_dims) <= max(1, base^(-2 top / n_dims)), the blend below
  // 2^(128 + 31 + 129) / den, 1 / c_i below 2^149.
  if (!(std::fmax(0.0, -std::log2(double(g.freq_base))) * (double(top) / double(s.h)) + 289.0 + 149.0 < 998.0))
    for (int64_t i = 0; i < g.pairs; ++i)
      if (!(std::fabs(value(i)) < kMaxFrequency)) return POSENC_ERR_INVALID;
  for (int64_t i = 0; i < g.pairs; ++i) freq[i] = value(i);
  *attention = m;
  return POSENC_OK;
}

}  // namespace detail
}  // namespace posenc

extern "C" posenc_status posenc_rope_init(posenc_rope *rope, int64_t rotary_dim, double base,
                                          const posenc_rope_scaling *scaling, double *freq) {
  try {
    return posenc::detail::rope_init(rope, rotary_dim, base, scaling, freq);
  } catch (...) {  // nothing here throws; no exception may cross the C ABI all the same
    return POSENC_ERR_NO_MEMORY;
  }
}

extern "C" posenc_status posenc_rope_ggml_frequencies(const posenc_ggml_rope_params *params, double *freq,
                                                      double *attention_scale) {
  if (!params || !freq || !attention_scale) return POSENC_ERR_NULL;
  try {
    posenc::detail::GgmlRope g;
    g.n_dims = params->n_dims;
    g.pairs = params->pairs;
    g.index = params->index;
    g.factors = params->factors;
    g.freq_base = params->freq_base;
    g.freq_scale = params->freq_scale;
    g.ext_factor = params->ext_factor;
    g.attn_factor = params->attn_factor;
    g.beta_fast = params->beta_fast;
    g.beta_slow = params->beta_slow;
    g.n_ctx_orig = params->n_ctx_orig;
    return posenc::detail::ggml_rope_frequencies(g, freq, attention_scale);
  } catch (...) {  // as posenc_rope_init
    return POSENC_ERR_NO_MEMORY;
  }
}
