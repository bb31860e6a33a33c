// The exact evaluation the RoPE schemes share (rope_scheme.hpp).
#include "setup/rope_scheme.hpp"

#include <algorithm>

namespace posenc {
namespace detail {
namespace scheme {

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

bool positive_finite(double x) { return x > 0.0 && std::isfinite(x); }

Num Scheme::cd(int n, double beta) const {
  // cd(beta) = r ln(L0 / (2 pi beta)) / (2 ln base) = h (ln L0 - ln 2 pi - ln beta) / ln base
  const Num t = mp::sub(mp::sub(ln_num(mp::from_i64(L0, n)), ln_num(mp::ldexp(mp::pi(n), 1))), mp::log(beta, n));
  return div(mp::mul_u64(t, uint64_t(h)), mp::log(base, n));
}

// The attention factors. Each returns INVALID when the factor is not a double in [2^-64, 2^64].

// Where a correction dimension c = cd(beta), computed at level k, lies among the integers: its nearest integer
// and the side of the rest (-1, 0, 1). False while the error interval still holds an integer (cd is
// transcendental, so it never is one); the last level decides all the same.
bool locate(const Scheme &s, double beta, int k, const Num &c, int64_t *near, int *side) {
  const int n = kLimbs[k];
  const Num frac = mp::split_nearest_integer(c, near);
  const double scale =
      double(s.h) * (std::log(double(s.L0)) + 2.0 + std::fabs(std::log(beta))) / std::fabs(std::log(s.base)) +
      std::fabs(mp::to_double(c)) + 1.0;
  const Num err = mp::ldexp(mp::from_double(scale, n), lost_bits(1) - 64 * int64_t(n));
  if (k + 1 < kLevels && !frac.is_zero() && mp::cmp_abs(frac, err) <= 0) return false;  // too close to an integer
  *side = frac.is_zero() ? 0 : frac.neg ? -1 : 1;
  return true;
}

// YaRN's integer correction range, floor / ceil of the real correction dimensions, clamped as HF does.
// Each is decided only when its error interval holds no integer (never exactly one: cd is transcendental).
Num Scheme::ramp(int n, int64_t i) const {
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

Scheme::Level &Scheme::level(int k) {
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
    if (lo.neg || lo.is_zero()) lo = mp::zero(n);  // max(low, 0)
    const Num top = mp::from_i64(r - 1, n);        // min(high, dim - 1)
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
Num Scheme::freq(int k, int64_t i) {
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

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
