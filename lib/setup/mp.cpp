// Multi-precision arithmetic for the frequency setup and the last-resort evaluation (see mp.hpp).
// Every operation builds its exact (or long enough) result in a wide buffer and then truncates it to the
// operand precision with pack(); the error analysis in docs/math.md counts one relative 2^(1-64n) per call.
#include "setup/mp.hpp"

#include <cmath>
#include <cstring>

namespace posenc {
namespace mp {
namespace {

using u128 = unsigned __int128;

constexpr int kBufLimbs = 2 * kMaxLimbs + 4;

// Bits [start, start + 64) of the len-limb integer a; bits outside [0, 64 len) read as zero.
uint64_t bits64(const uint64_t *a, int len, int64_t start) {
  if (start >= 64 * int64_t(len) || start <= -64) return 0;
  if (start < 0) return a[0] << (-start);
  const int64_t li = start / 64;
  const int sh = int(start % 64);
  uint64_t v = a[li] >> sh;
  if (sh != 0 && li + 1 < len) v |= a[li + 1] << (64 - sh);
  return v;
}

int top_bit(uint64_t x) { return 63 - __builtin_clzll(x); }

// The value (-1)^neg * buf * 2^(e - 64 len), normalised and truncated to n limbs.
Num pack(const uint64_t *buf, int len, int64_t e, bool neg, int n) {
  Num r;
  r.n = n;
  r.neg = neg;
  int t = len - 1;
  while (t >= 0 && buf[t] == 0) --t;
  if (t < 0) {
    std::memset(r.m, 0, sizeof(uint64_t) * size_t(n));
    r.e = 0;
    r.neg = false;
    return r;
  }
  const int64_t pos = 64 * int64_t(t) + top_bit(buf[t]);  // index of the leading one
  const int64_t lowest = pos - 64 * int64_t(n) + 1;       // index that becomes bit 0 of the result
  for (int j = 0; j < n; ++j) r.m[j] = bits64(buf, len, lowest + 64 * j);
  r.e = pos + 1 + e - 64 * int64_t(len);
  return r;
}

Num one(int n) { return from_u64(1, n); }

}  // namespace

Num zero(int n) {
  Num r;
  std::memset(r.m, 0, sizeof(r.m));
  r.n = n;
  r.e = 0;
  r.neg = false;
  return r;
}

Num from_u64(uint64_t v, int n) { return pack(&v, 1, 64, false, n); }

Num from_i64(int64_t v, int n) {
  const uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  return pack(&mag, 1, 64, v < 0, n);
}

Num from_double(double d, int n) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  const bool neg = (bits >> 63) != 0;
  const int be = int((bits >> 52) & 0x7FF);
  uint64_t mant = bits & ((uint64_t(1) << 52) - 1);
  int64_t e2;  // d = mant * 2^e2
  if (be == 0) {
    e2 = -1074;
  } else {
    mant |= uint64_t(1) << 52;
    e2 = int64_t(be) - 1075;
  }
  return pack(&mant, 1, 64 + e2, neg, n);
}

Num resize(const Num &a, int n) {
  if (a.is_zero()) return zero(n);
  uint64_t buf[kBufLimbs];
  for (int j = 0; j < a.n; ++j) buf[j] = a.m[j];
  return pack(buf, a.n, a.e, a.neg, n);
}

Num neg(Num a) {
  if (!a.is_zero()) a.neg = !a.neg;
  return a;
}

Num abs(Num a) {
  a.neg = false;
  return a;
}

Num ldexp(Num a, int64_t k) {
  if (!a.is_zero()) a.e += k;
  return a;
}

int cmp_abs(const Num &a, const Num &b) {
  const bool za = a.is_zero(), zb = b.is_zero();
  if (za || zb) return za == zb ? 0 : (za ? -1 : 1);
  if (a.e != b.e) return a.e < b.e ? -1 : 1;
  for (int j = a.n - 1, k = b.n - 1; j >= 0 || k >= 0; --j, --k) {
    const uint64_t x = j >= 0 ? a.m[j] : 0, y = k >= 0 ? b.m[k] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

Num add(const Num &a, const Num &b) {
  const int n = a.n;
  if (b.is_zero()) return resize(a, n);
  if (a.is_zero()) return resize(b, n);
  const bool a_big = cmp_abs(a, b) >= 0;
  const Num &x = a_big ? a : b;
  const Num &y = a_big ? b : a;
  // Both magnitudes placed in an (n+2)-limb buffer whose top bit has weight 2^x.e: one bit of headroom
  // for the carry, 127 bits below x's last bit so the truncation of y costs at most 2^-127 of x's ulp.
  const int len = n + 2;
  const int64_t e_buf = x.e + 1;
  uint64_t bx[kBufLimbs], by[kBufLimbs];
  const int64_t sx = x.e - 64 * int64_t(x.n) - e_buf + 64 * int64_t(len);
  const int64_t sy = y.e - 64 * int64_t(y.n) - e_buf + 64 * int64_t(len);
  for (int k = 0; k < len; ++k) {
    bx[k] = bits64(x.m, x.n, 64 * int64_t(k) - sx);
    by[k] = bits64(y.m, y.n, 64 * int64_t(k) - sy);
  }
  uint64_t r[kBufLimbs];
  if (x.neg == y.neg) {
    u128 carry = 0;
    for (int k = 0; k < len; ++k) {
      const u128 s = u128(bx[k]) + by[k] + carry;
      r[k] = uint64_t(s);
      carry = s >> 64;
    }
  } else {  // |x| >= |y|, so no borrow out of the top
    uint64_t borrow = 0;
    for (int k = 0; k < len; ++k) {
      const uint64_t d1 = bx[k] - by[k];
      const uint64_t b1 = bx[k] < by[k];
      r[k] = d1 - borrow;
      borrow = b1 | (d1 < borrow);
    }
  }
  return pack(r, len, e_buf, x.neg, n);
}

Num sub(const Num &a, const Num &b) { return add(a, neg(b)); }

Num mul(const Num &a, const Num &b) {
  const int n = a.n;
  if (a.is_zero() || b.is_zero()) return zero(n);
  uint64_t p[kBufLimbs];
  std::memset(p, 0, sizeof(uint64_t) * size_t(a.n + b.n));
  for (int i = 0; i < a.n; ++i) {
    u128 carry = 0;
    for (int j = 0; j < b.n; ++j) {
      const u128 t = u128(a.m[i]) * b.m[j] + p[i + j] + carry;
      p[i + j] = uint64_t(t);
      carry = t >> 64;
    }
    p[i + b.n] = uint64_t(carry);
  }
  return pack(p, a.n + b.n, a.e + b.e, a.neg != b.neg, n);
}

Num mul_u64(const Num &a, uint64_t k) {
  const int n = a.n;
  if (a.is_zero() || k == 0) return zero(n);
  uint64_t p[kBufLimbs];
  u128 carry = 0;
  for (int j = 0; j < n; ++j) {
    const u128 t = u128(a.m[j]) * k + carry;
    p[j] = uint64_t(t);
    carry = t >> 64;
  }
  p[n] = uint64_t(carry);
  return pack(p, n + 1, a.e + 64, a.neg, n);
}

Num div_u64(const Num &a, uint64_t k) {
  const int n = a.n;
  if (a.is_zero()) return zero(n);
  // Quotient of M * 2^128 by k, limb by limb from the top: two extra limbs keep n full limbs after the
  // leading zeros are shifted away.
  uint64_t num[kBufLimbs], q[kBufLimbs];
  num[0] = 0;
  num[1] = 0;
  for (int j = 0; j < n; ++j) num[j + 2] = a.m[j];
  u128 rem = 0;
  for (int i = n + 1; i >= 0; --i) {
    const u128 cur = (rem << 64) | num[i];
    q[i] = uint64_t(cur / k);
    rem = cur % k;
  }
  return pack(q, n + 2, a.e, a.neg, n);
}

double to_double(const Num &a) {
  if (a.is_zero()) return 0.0;
  const int64_t top = 64 * int64_t(a.n);
  uint64_t q = bits64(a.m, a.n, top - 53) & ((uint64_t(1) << 53) - 1);
  const bool round = (bits64(a.m, a.n, top - 54) & 1) != 0;
  bool sticky = false;
  for (int64_t start = 0; start < top - 54 && !sticky; start += 64) {
    uint64_t w = bits64(a.m, a.n, start);
    if (top - 54 - start < 64) w &= (uint64_t(1) << (top - 54 - start)) - 1;
    sticky = w != 0;
  }
  int64_t e = a.e;
  if (round && (sticky || (q & 1))) {
    ++q;
    if (q == (uint64_t(1) << 53)) {
      q >>= 1;
      ++e;
    }
  }
  const double r = std::ldexp(double(q), int(e - 53));
  return a.neg ? -r : r;
}

uint32_t to_float_bits(const Num &a) {
  const uint32_t sign = a.neg ? 0x80000000u : 0u;
  if (a.is_zero()) return 0;
  // |a| lies in [2^(e-1), 2^e); float32 keeps the bits of weight >= 2^-149, at most 24 of them.
  const int64_t e = a.e;
  const int64_t kept = e >= -125 ? 24 : e + 149;
  if (kept < 0) return sign;  // below 2^-150: rounds to zero
  const int64_t top = 64 * int64_t(a.n);
  uint64_t q = kept == 0 ? 0 : bits64(a.m, a.n, top - kept) & ((uint64_t(1) << kept) - 1);
  const int64_t rpos = top - kept - 1;
  const bool round = (bits64(a.m, a.n, rpos) & 1) != 0;
  bool sticky = false;
  for (int64_t start = 0; start < rpos && !sticky; start += 64) {
    uint64_t w = bits64(a.m, a.n, start);
    if (rpos - start < 64) w &= (uint64_t(1) << (rpos - start)) - 1;
    sticky = w != 0;
  }
  if (round && (sticky || (q & 1))) ++q;
  if (kept < 24) return sign | uint32_t(q);  // subnormal; a carry into 2^23 is the smallest normal
  int64_t be = e - 1 + 127;
  if (q == (uint64_t(1) << 24)) {
    q >>= 1;
    ++be;
  }
  if (be >= 255) return sign | 0x7F800000u;  // overflows to infinity
  return sign | uint32_t(be) << 23 | uint32_t(q & 0x7FFFFF);
}

Num split_nearest_integer(const Num &a, int64_t *k) {
  const int n = a.n;
  *k = 0;
  if (a.is_zero() || a.e < 0) return a;  // |a| < 1/2
  uint64_t ip = 0;
  if (a.e >= 1) ip = bits64(a.m, a.n, 64 * int64_t(n) - a.e) & ((uint64_t(1) << a.e) - 1);
  Num f = sub(abs(a), from_u64(ip, n));  // exact: removes the leading bits
  if (!f.is_zero() && f.e >= 0) {        // fraction >= 1/2
    ++ip;
    f = sub(f, one(n));
  }
  *k = a.neg ? -int64_t(ip) : int64_t(ip);
  return a.neg ? neg(f) : f;
}

Num mod4_centered(const Num &a) {
  const int n = a.n;
  if (a.is_zero() || a.e <= 1) return a;          // |a| < 2 already
  const int64_t cut = 64 * int64_t(n) - a.e + 2;  // bits at or above this index weigh 4 or more
  if (cut <= 0) return zero(n);
  uint64_t buf[kBufLimbs];
  for (int j = 0; j < n; ++j) {
    const int64_t lo = 64 * int64_t(j);
    if (lo >= cut)
      buf[j] = 0;
    else if (cut - lo >= 64)
      buf[j] = a.m[j];
    else
      buf[j] = a.m[j] & ((uint64_t(1) << (cut - lo)) - 1);
  }
  Num r = pack(buf, n, a.e, a.neg, n);  // |r| in [0, 4)
  const Num two = from_u64(2, n);
  const int c = cmp_abs(r, two);
  if (!r.neg && c >= 0)
    r = sub(r, from_u64(4, n));
  else if (r.neg && c > 0)
    r = add(r, from_u64(4, n));
  return r;
}

namespace {

// sum_{k>=0} s^k * z^(2k+1) / (2k+1) for |z| < 1; s = -1 gives atan, s = +1 gives atanh.
Num odd_series(const Num &z, bool alternate) {
  const int n = z.n;
  const Num z2 = mul(z, z);
  Num term = z, sum = z;
  for (uint64_t k = 1;; ++k) {
    term = mul(term, z2);
    if (term.is_zero() || term.e < sum.e - 64 * int64_t(n) - 8) break;
    const Num t = div_u64(term, 2 * k + 1);
    sum = (alternate && (k & 1)) ? sub(sum, t) : add(sum, t);
  }
  return sum;
}

// atan(1/m) for an integer m >= 2, with divisions only.
Num atan_inv(uint64_t m, int n) {
  Num term = div_u64(one(n), m), sum = term;
  for (uint64_t k = 1;; ++k) {
    term = div_u64(term, m * m);
    if (term.e < sum.e - 64 * int64_t(n) - 8) break;
    const Num t = div_u64(term, 2 * k + 1);
    sum = (k & 1) ? sub(sum, t) : add(sum, t);
  }
  return sum;
}

struct Constants {
  Num ln2, pi, two_over_pi;
  Constants() {
    const int n = kMaxLimbs;
    ln2 = ldexp(odd_series(div_u64(one(n), 3), false), 1);  // ln 2 = 2 atanh(1/3)
    // Machin: pi = 16 atan(1/5) - 4 atan(1/239)
    pi = sub(ldexp(atan_inv(5, n), 4), ldexp(atan_inv(239, n), 2));
    // 1/pi by Newton's iteration y <- y + y (1 - pi y), from the double estimate; 53 bits doubling past 1536.
    Num y = from_double(0.31830988618379067154, n);
    for (int it = 0; it < 7; ++it) y = add(y, mul(y, sub(one(n), mul(pi, y))));
    two_over_pi = ldexp(y, 1);
  }
};

const Constants &constants() {
  static const Constants c;  // thread-safe initialisation (C++11)
  return c;
}

}  // namespace

Num ln2(int n) { return resize(constants().ln2, n); }
Num pi(int n) { return resize(constants().pi, n); }
Num two_over_pi(int n) { return resize(constants().two_over_pi, n); }

Num log(double x, int n) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int be = int((bits >> 52) & 0x7FF);
  uint64_t mant = bits & ((uint64_t(1) << 52) - 1);
  int64_t ex;     // x = mant * 2^(ex - 52), mant in [2^52, 2^53)
  if (be == 0) {  // subnormal: normalise
    const int sh = 52 - top_bit(mant);
    mant <<= sh;
    ex = -1022 - sh;
  } else {
    mant |= uint64_t(1) << 52;
    ex = be - 1023;
  }
  // m = mant / scale in [1/sqrt2, sqrt2): ln x = ex ln2 + ln m, ln m = 2 atanh((m-1)/(m+1)), |z| <= 0.172
  uint64_t scale = uint64_t(1) << 52;
  if (mant > 6369051672525772ull) {  // 2^52 * sqrt(2) = 6369051672525772.8...
    scale <<= 1;
    ++ex;
  }
  const bool below = mant < scale;
  const Num num = from_u64(below ? scale - mant : mant - scale, n);
  Num z = div_u64(num, mant + scale);
  if (below) z = neg(z);
  Num r = ldexp(odd_series(z, false), 1);
  if (ex != 0) {
    Num t = mul_u64(ln2(n), uint64_t(ex < 0 ? -ex : ex));
    r = ex < 0 ? sub(r, t) : add(r, t);
  }
  return r;
}

Num exp(const Num &x) {
  const int n = x.n;
  if (x.is_zero() || x.e < -64 * int64_t(n) - 8) return add(one(n), x);
  // x = k ln2 + y with |y| <= ~0.35, then exp(y) = exp(y / 2^16)^(2^16): the series converges in ~W/17
  // terms and the 16 squarings cost 16 bits, paid for by the guard limbs of the caller.
  const double xd = x.e > 48 ? 0.0 : to_double(x);
  const int64_t k = int64_t(std::nearbyint(xd / 0.69314718055994530942));
  Num y = x;
  if (k != 0) {
    const Num t = mul_u64(ln2(n), uint64_t(k < 0 ? -k : k));
    y = k < 0 ? add(y, t) : sub(y, t);
  }
  y = ldexp(y, -16);
  Num sum = add(one(n), y), term = y;
  for (uint64_t j = 2;; ++j) {
    term = div_u64(mul(term, y), j);
    if (term.is_zero() || term.e < -64 * int64_t(n) - 8) break;
    sum = add(sum, term);
  }
  for (int s = 0; s < 16; ++s) sum = mul(sum, sum);
  return ldexp(sum, k);
}

void sincos_small(const Num &x, Num *s, Num *c) {
  const int n = x.n;
  const Num x2 = mul(x, x);
  Num ts = x, sum_s = x;
  Num tc = one(n), sum_c = one(n);
  const int64_t stop_s = x.e - 64 * int64_t(n) - 8, stop_c = -64 * int64_t(n) - 8;
  for (uint64_t k = 2;; k += 2) {
    // ts: x^(k+1)/(k+1)!, tc: x^k/k!, both with alternating signs handled below
    tc = div_u64(mul(tc, x2), (k - 1) * k);
    ts = div_u64(mul(ts, x2), k * (k + 1));
    const bool minus = (k / 2) & 1;
    const bool small_c = tc.is_zero() || tc.e < stop_c, small_s = ts.is_zero() || ts.e < stop_s;
    if (!small_c) sum_c = minus ? sub(sum_c, tc) : add(sum_c, tc);
    if (!small_s) sum_s = minus ? sub(sum_s, ts) : add(sum_s, ts);
    if (small_c && small_s) break;
  }
  *s = sum_s;
  *c = sum_c;
}

}  // namespace mp
}  // namespace posenc
