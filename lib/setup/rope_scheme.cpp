// The exact evaluation the RoPE schemes share (rope_scheme.hpp).
#include "setup/rope_scheme.hpp"

#include "setup/rope_family.hpp"

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
  l.ln_s = mp::log(factor, n);
  l.ext = mp::from_double(ext_factor, n);
  l.inv_factor = recip(mp::from_double(factor, n));
  const Family *f = family_of(type);
  if (f && f->constants) f->constants(*this, l, n);  // a family whose power has another base changes G here
  l.rho = mp::exp(mp::neg(mp::div_u64(l.G, uint64_t(h))));
  l.ready = true;
  return l;
}

// f_i at level k: base'^(-2i/r) from the chain of products (or exp, out of sequence), then the family's f_i.
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
  const Family *f = family_of(type);
  return f ? f->freq(*this, l, n, i, inv) : inv;
}

}  // namespace scheme
}  // namespace detail
}  // namespace posenc
