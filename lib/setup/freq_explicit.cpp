// The frequency table of RoPE's explicit frequencies (freq.hpp, build_explicit): u_i = frac4(2 s f_i / pi)
// for each pair, by a Payne-Hanek reduction in 64-bit integer arithmetic. s f_i is an exact product of two
// doubles, M 2^E with M below 2^106; its product with the bits of 2/pi that can reach below 2^2 (those
// above make multiples of 4) is summed into a fixed-point accumulator of 450 bits, weight 2^-448 for its
// last bit. The bits of 2/pi past the accumulator and the truncation of each partial product cost below
// 2^-440 absolute, far inside the 2^-250 relative of the multi-precision builder it replaces here (which
// takes ~12,000 instructions a pair: a new spec at r = 128 took 43 us; a dynamic-NTK runtime makes one
// per decode step). Frequencies above 2^500 take that builder (freq.cpp, set_pair). The unreduced U_i of
// real-valued positions comes from the same product with the leading limbs of 2/pi (set_whole_pair).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "setup/freq_build.hpp"
#include "setup/mp.hpp"

namespace posenc {
namespace detail {
namespace {

using u128 = unsigned __int128;

constexpr int kAcc = 8;         // limbs of the accumulator: bits 0 .. 449 (the top limb keeps 2 bits: mod 4)
constexpr int kFracBits = 448;  // weight of bit b is 2^(b - 448): limb j starts at 2^(64 j - 448)
constexpr int kTopMin = 300;    // |u| >= 2^(300 - 448): the 256 bits kept lie inside the accumulator, whose
                                // truncations (< 2^-440) are then below 2^-290 relative
constexpr int kPiLimbs = mp::kMaxLimbs;

// The bits of 2/pi, most significant limb first: limb k holds the weights 2^-(64k + 1) .. 2^-(64k + 64).
struct TwoOverPi {
  uint64_t limb[kPiLimbs];
  TwoOverPi() {
    const mp::Num t = mp::two_over_pi(kPiLimbs);  // 0.M 2^0: 2/pi lies in [1/2, 1)
    for (int k = 0; k < kPiLimbs; ++k) limb[k] = t.m[kPiLimbs - 1 - k];
  }
};
const TwoOverPi &two_over_pi_bits() {
  static const TwoOverPi t;
  return t;
}

int top_bit(const uint64_t *a) {  // index of the highest set bit, -1 for zero
  for (int i = kAcc - 1; i >= 0; --i)
    if (a[i]) return 64 * i + 63 - __builtin_clzll(a[i]);
  return -1;
}
// The 64 bits with indices hi .. hi - 63 (those below 0 read as 0), the first of them the highest.
uint64_t bits64(const uint64_t *a, int hi) {
  const int lo = hi - 63;
  const int li = lo >= 0 ? lo / 64 : -((-lo + 63) / 64), sh = lo - 64 * li;
  const uint64_t w0 = li >= 0 && li < kAcc ? a[li] : 0, w1 = li + 1 >= 0 && li + 1 < kAcc ? a[li + 1] : 0;
  return sh == 0 ? w0 : (w0 >> sh) | (w1 << (64 - sh));
}
void negate(uint64_t *a, int n) {  // a = 2^(64 n) - a
  u128 carry = 1;
  for (int i = 0; i < n; ++i) {
    const u128 s = u128(~a[i]) + carry;
    a[i] = uint64_t(s);
    carry = s >> 64;
  }
}

// |d| = m 2^e with the integer m (below 2^53), for a finite nonzero d; subnormals included.
uint64_t mantissa(double d, int64_t *e) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  const int be = int((b >> 52) & 0x7FF);
  const uint64_t m = b & ((uint64_t(1) << 52) - 1);
  *e = be == 0 ? -1074 : be - 1075;
  return be == 0 ? m : m | (uint64_t(1) << 52);
}
// m 2^e as a double (m below 2^54, the result normal: |u| >= 2^-148 here)
double scaled(uint64_t m, int64_t e) {
  const double v = double(m);  // exact
  uint64_t b = uint64_t(e + 1023) << 52;
  double p;
  std::memcpy(&p, &b, sizeof p);
  return v * p;
}

// u = m 2^(x - 256) with m the 256-bit magnitude m[0] (most significant) .. m[3], m[0]'s top bit set:
// the three doubles u0 = RN(u), u1 = RN(u - u0), u2 = RN(u - u0 - u1), signed by sign.
void split3(const uint64_t in[4], int64_t x, double sign, double out[3]) {
  uint64_t m[4] = {in[0], in[1], in[2], in[3]};
  for (int k = 0; k < 3; ++k) {
    int lead = 0;
    while (lead < 4 && m[lead] == 0) ++lead;
    if (lead == 4) {
      for (; k < 3; ++k) out[k] = 0.0;
      return;
    }
    const int sh = 64 * lead + __builtin_clzll(m[lead]);  // normalise: top bit to bit 255
    if (sh > 0) {
      const int ws = sh / 64, bs = sh % 64;
      for (int i = 0; i < 4; ++i) {
        const uint64_t a = i + ws < 4 ? m[i + ws] : 0, b = i + ws + 1 < 4 ? m[i + ws + 1] : 0;
        m[i] = bs == 0 ? a : (a << bs) | (b >> (64 - bs));
      }
      x -= sh;
    }
    const uint64_t m53 = m[0] >> 11;
    const bool half = (m[0] >> 10) & 1, sticky = (m[0] & 0x3FF) || m[1] || m[2] || m[3];
    const bool up = half && (sticky || (m53 & 1));
    out[k] = sign * scaled(m53 + (up ? 1 : 0), x - 53);
    m[0] &= 0x7FF;  // the rest, below the 53 bits taken: under 2^203
    if (up) {       // rounded up: the rest is negative, 2^203 - rest in magnitude
      uint64_t r[4] = {m[3], m[2], m[1], m[0]};
      negate(r, 4);
      m[0] = r[3] + (uint64_t(1) << 11);
      m[1] = r[2];
      m[2] = r[1];
      m[3] = r[0];
      sign = -sign;
    }
  }
}

// The 256 bits of a (kAcc-limb) from bit t down as the lane's copy 0.m 2^e of sign neg, and as three doubles.
void set_lane(const uint64_t *a, int t, int64_t e, bool neg, LaneExact &ex, double *d0, double *d1, double *d2) {
  uint64_t m[4];
  for (int k = 0; k < 4; ++k) m[k] = bits64(a, t - 64 * k);
  for (int k = 0; k < 4; ++k) ex.m[3 - k] = m[k];
  ex.e = e;
  ex.neg = neg;
  ex.kind = kNormal;
  double u[3];
  split3(m, e, neg ? -1.0 : 1.0, u);
  *d0 = u[0];
  *d1 = u[1];
  *d2 = u[2];
}

// U_i = 2 s f / pi unreduced, for real-valued positions (freq.hpp): |s f| = M 2^e times the first five limbs
// of 2/pi, an exact product of 448 bits but for the bits of 2/pi past 320 (relative 2^-318); its top 256 bits
// (truncated: relative 2^-255) are the 256-bit copy `whole` and, split, U0 + U1 + U2.
void set_whole_pair(Freq &f, int64_t i, u128 M, int64_t e, bool neg) {
  const TwoOverPi &tp = two_over_pi_bits();
  constexpr int kT = 5;
  uint64_t P[kAcc] = {};  // M T 2^(e - 64 kT), T = limbs 0 .. kT-1 of 2/pi as an integer; little-endian limbs
  const uint64_t mw[2] = {uint64_t(M), uint64_t(M >> 64)};
  for (int a = 0; a < 2; ++a) {
    u128 carry = 0;
    for (int b = 0; b < kT; ++b) {
      const u128 p = u128(mw[a]) * tp.limb[kT - 1 - b] + P[a + b] + carry;
      P[a + b] = uint64_t(p);
      carry = p >> 64;
    }
    P[a + kT] = uint64_t(carry);
  }
  const int t = top_bit(P);  // M > 0 and T > 0: 0.m 2^(t + 1 + e - 64 kT)
  set_lane(P, t, t + 1 + e - 64 * kT, neg, f.whole[i], f.U0 + i, f.U1 + i, f.U2 + i);
}

// Sets pair i from w = s f (both nonzero; |s f| < 2^500): returns false when the fast path does not apply.
bool reduce_pair(Freq &f, int64_t i, double s, double fr) {
  int64_t es = 0, ef = 0;
  const uint64_t is = mantissa(s, &es), iff = mantissa(fr, &ef);
  const int64_t e = es + ef;  // |s f| = is iff 2^e exactly
  if (e + 106 > 500 || e + 106 < -900) return false;
  // M' = M 2^r with r = e mod 64, so that every partial product lands on whole limbs: |s f| = M' 2^(64 q)
  const u128 M = u128(is) * iff;
  const int r = int(((e % 64) + 64) % 64);
  const int64_t q = (e - r) / 64;
  const uint64_t m0 = uint64_t(M) << r;
  const uint64_t m1 = r == 0 ? uint64_t(M >> 64) : uint64_t(M >> (64 - r));
  const uint64_t m2 = r == 0 ? 0 : uint64_t((M >> 64) >> (64 - r));
  const uint64_t mw[3] = {m0, m1, m2};
  const TwoOverPi &tp = two_over_pi_bits();
  // Column sums first (at most 48 pieces below 2^64 a limb), carries once at the end. Limbs past the top
  // are multiples of 4 and dropped; pieces below limb 0 too (each a truncation below 2^-448).
  u128 col[kAcc] = {};
  for (int k = 0; k < kPiLimbs; ++k) {
    // M' T[k] 2^(64 (q - k - 1)): limb a of M' times T[k] at accumulator limb q - k - 1 + 7 + a
    const int64_t j0 = q - k + 6;
    if (j0 >= kAcc) continue;
    if (j0 + 3 < 0) break;  // below the accumulator, and so is every later limb
    for (int a = 0; a < 3; ++a) {
      const u128 p = u128(mw[a]) * tp.limb[k];
      const int64_t j = j0 + a;
      if (j >= 0 && j < kAcc) col[j] += uint64_t(p);
      if (j + 1 >= 0 && j + 1 < kAcc) col[j + 1] += uint64_t(p >> 64);
    }
  }
  uint64_t acc[kAcc];
  u128 carry = 0;
  for (int j = 0; j < kAcc; ++j) {
    const u128 t = col[j] + carry;
    acc[j] = uint64_t(t);
    carry = t >> 64;
  }
  acc[kAcc - 1] &= 3;  // modulo 4
  // acc 2^-448 = frac4(|s f| 2 / pi); the sign of s f turns it around, then centre into [-2, 2)
  if ((s < 0) != (fr < 0)) {
    negate(acc, kAcc);
    acc[kAcc - 1] &= 3;
  }
  bool neg = false;
  if ((acc[kAcc - 1] >> 1) & 1) {  // 2 or more: u - 4
    negate(acc, kAcc);
    acc[kAcc - 1] &= 3;
    neg = true;
  }
  const int t = top_bit(acc);
  if (t < kTopMin) return false;  // zero or tiny: the multi-precision builder
  set_lane(acc, t, t - kFracBits + 1, neg, f.exact[i], f.u0 + i, f.u1 + i, f.u2 + i);  // 0.m 2^(t - 447)
  set_whole_pair(f, i, M, e, (s < 0) != (fr < 0));
  return true;
}

}  // namespace

std::unique_ptr<Freq> build_explicit(const double *freq, int64_t h, double scale, FillTables fill) {
  std::unique_ptr<Freq> f = allocate(h, true);
  if (!f) return nullptr;
  f->base = 0.0;
  f->denominator = 0.0;
  f->scale = scale;
  std::memcpy(f->values, freq, sizeof(double) * size_t(h));
  // A zero frequency (HF's "proportional" pass-through pairs) keeps the zero lane of allocate(): the angle
  // is exactly 0, whose (+0, 1) every method returns, as with position_scale 0.
  int n = 0;
  mp::Num two_over_pi{}, ms{};
  for (int64_t i = 0; i < h; ++i) {
    if (freq[i] == 0.0 || scale == 0.0) continue;
    if (reduce_pair(*f, i, scale, freq[i])) continue;
    if (n == 0) {  // the multi-precision builder, for what the fast path left
      double top = -HUGE_VAL;
      for (int64_t j = 0; j < h; ++j)
        if (freq[j] != 0.0) top = std::fmax(top, std::log2(std::fabs(scale)) + std::log2(std::fabs(freq[j])));
      n = limbs_for(std::ceil(top) + 2.0, 0.0);
      two_over_pi = mp::two_over_pi(n);
      ms = mp::from_double(scale, n);
    }
    f->u0[i] = f->u1[i] = f->u2[i] = 0.0;
    set_pair(*f, i, mp::mul(ms, mp::from_double(freq[i], n)), false, (scale < 0) != (freq[i] < 0), two_over_pi, n);
  }
  finish(*f, fill);
  return f;
}

}  // namespace detail
}  // namespace posenc
