// Correctly rounded sin and cos of one element (exact.hpp).
//
// With u held to 256 bits (relative error < 2^-250), p u is formed exactly in 320 bits, the nearest
// integer k is split off exactly, and the remainder t in [-1/2, 1/2] quarter turns is turned into
// x = t pi/2 and fed to Taylor series at 320 bits. The only error that matters is u's: |p| < 2^31 and
// |u| <= 2 bound it by 2^-218 absolute when k != 0 and by 2^-218 relative when k == 0 (no wrap). The
// result is accepted when both ends of that error interval round to the same float; otherwise, which
// no input has been seen to reach, the nearest float of the computed value is returned.
#include "setup/exact.hpp"

#include <cmath>
#include <cstring>

#include "setup/mp.hpp"

namespace posenc {
namespace detail {
namespace {

constexpr int kLimbs = 5;
constexpr int64_t kErrorExponent = -214;  // 2^-214: four times the bound above
constexpr uint32_t kOneBits = 0x3F800000u;

// The float nearest m v, where v is within |v| 2^-214 (plus 2^-214 when the angle wrapped) of the exact
// value: the product with the 53-bit m is exact at kLimbs limbs but for a truncation of relative size
// 2^-319, so the interval scales by m and widens negligibly (the bound has a factor four to spare).
// near_unit: v is the cos series of an argument below 2^-100, so |v| = 1 - d with 0 < d < 2^-201. When
// the interval test cannot decide such a value, m itself is a float32 midpoint (the only rounding boundary
// that close to m, which has 53 bits), and the exact value lies just below it in magnitude: it rounds as
// m (1 - 2^-330) does.
uint32_t rounded_bits(const mp::Num &v, bool wrapped, const mp::Num &m, bool scaled, bool near_unit,
                      int64_t error_exponent = kErrorExponent) {
  const mp::Num mv = scaled ? mp::mul(v, m) : v;
  mp::Num err = mp::ldexp(mp::abs(mv), error_exponent);
  if (wrapped) err = mp::add(err, mp::ldexp(scaled ? mp::abs(m) : mp::from_u64(1, v.n), error_exponent));
  const uint32_t lo = mp::to_float_bits(mp::sub(mv, err));
  const uint32_t hi = mp::to_float_bits(mp::add(mv, err));
  if (lo == hi) return lo;
  if (near_unit && scaled) {
    const mp::Num below = mp::sub(mp::abs(m), mp::ldexp(mp::abs(m), -330));
    return mp::to_float_bits(v.neg ? mp::neg(below) : below);
  }
  return mp::to_float_bits(mv);
}

// sin and cos of the angle x quarter turns (x to whatever precision it has), split into the nearest
// integer k and the rest; wrapped: k != 0.
void sincos_quarter_turns(const mp::Num &x, mp::Num *s, mp::Num *c, bool *wrapped, bool *tiny, unsigned *quadrant_out) {
  int64_t k = 0;
  const mp::Num t = mp::split_nearest_integer(x, &k);
  const mp::Num arg = mp::mul(t, mp::ldexp(mp::pi(x.n), -1));
  mp::Num sn, cs;
  mp::sincos_small(arg, &sn, &cs);
  const unsigned quadrant = unsigned(uint64_t(k) & 3);
  *s = (quadrant & 1) ? cs : sn;
  *c = (quadrant & 1) ? sn : cs;
  if (quadrant == 2 || quadrant == 3) *s = mp::neg(*s);
  if (quadrant == 1 || quadrant == 2) *c = mp::neg(*c);
  *wrapped = k != 0;
  *tiny = arg.is_zero() || arg.e < -100;
  *quadrant_out = quadrant;
}

}  // namespace

// k u + f U at 8 limbs: k u is exact (31 + 256 bits), f U is exact (53 + 256 bits), and their sum is
// truncated below 2^(51 - 511). U's copy (relative error < 2^-250) dominates: |f U| < 2^51 makes it below
// 2^-199 absolute, and u's adds 2^-218; both scale with the angle when it does not wrap (k u and f U both
// small). The interval is 2^-190: absolute after a wrap, relative without one, as exact_sincos_bits's.
// With a scale m (RoPE), as exact_sincos_bits: m times the values before their one rounding, and the same
// rule for a cos next to 1 that the interval cannot decide (the interval here is wider, 2^-190, but m has 53
// bits, so no float32 midpoint other than m itself lies within it).
void exact_sincos_bits_real(const LaneExact &lane, const LaneExact &whole, int64_t k, double f, double scale,
                            uint32_t *sin_bits, uint32_t *cos_bits) {
  constexpr int kRealLimbs = 8;
  constexpr int64_t kRealErrorExponent = -190;
  const bool scaled = scale != 1.0;
  const mp::Num m = mp::from_double(scale, kRealLimbs);
  const uint32_t m_bits = scaled ? mp::to_float_bits(m) : kOneBits;
  if (k == 0 && f == 0.0) {  // the angle is exactly zero
    *sin_bits = 0;
    *cos_bits = m_bits;
    return;
  }
  if (lane.kind == kNegligible) {  // |s w| < 2^-1100, so |angle| < 2^-1069: sin rounds to a signed zero
    const bool t_neg = k != 0 ? k < 0 : std::signbit(f);
    *sin_bits = (t_neg != lane.neg) ? 0x80000000u : 0u;
    *cos_bits = scaled ? mp::to_float_bits(mp::sub(m, mp::ldexp(m, -330))) : kOneBits;  // as exact_sincos_bits
    return;
  }
  auto from_lane = [](const LaneExact &l) {
    mp::Num v = mp::zero(kRealLimbs);
    std::memcpy(v.m + kRealLimbs - 4, l.m, sizeof l.m);
    v.e = l.e;
    v.neg = l.neg;
    return v;
  };
  mp::Num x = mp::zero(kRealLimbs);
  const mp::Num u = from_lane(lane), uw = from_lane(whole);
  if (k != 0 && !u.is_zero()) {
    mp::Num ku = mp::mul_u64(u, k < 0 ? uint64_t(0) - uint64_t(k) : uint64_t(k));
    x = k < 0 ? mp::neg(ku) : ku;
  }
  if (f != 0.0 && !uw.is_zero()) x = mp::add(x, mp::mul(mp::from_double(f, kRealLimbs), uw));
  if (x.is_zero()) {  // k u + f U vanished (a zero frequency): the angle is exactly zero
    *sin_bits = 0;
    *cos_bits = m_bits;
    return;
  }
  mp::Num sn, cs;
  bool wrapped, tiny;
  unsigned quadrant;
  sincos_quarter_turns(x, &sn, &cs, &wrapped, &tiny, &quadrant);
  *sin_bits = rounded_bits(sn, wrapped, m, scaled, tiny && (quadrant & 1), kRealErrorExponent);
  *cos_bits = rounded_bits(cs, wrapped, m, scaled, tiny && !(quadrant & 1), kRealErrorExponent);
}

void exact_sincos_bits(const LaneExact &lane, int64_t p, double scale, uint32_t *sin_bits, uint32_t *cos_bits) {
  const bool scaled = scale != 1.0;
  const mp::Num m = mp::from_double(scale, kLimbs);
  // The float nearest m: cos of an exact zero angle, times m
  const uint32_t m_bits = scaled ? mp::to_float_bits(m) : kOneBits;
  if (p == 0) {  // the angle is exactly zero
    *sin_bits = 0;
    *cos_bits = m_bits;
    return;
  }
  if (lane.kind == kNegligible) {  // |angle| < 2^-1069: sin rounds to a zero of its sign, cos to 1
    *sin_bits = ((p < 0) != lane.neg) ? 0x80000000u : 0u;
    // m cos(angle) lies just below m, which decides a tie. m (1 - 2^-330) rounds as it does: no float32
    // midpoint lies strictly between them (m has 53 bits), and the subtraction is exact enough (add()
    // keeps 127 bits below the last limb, and truncates the result below m).
    *cos_bits = scaled ? mp::to_float_bits(mp::sub(m, mp::ldexp(m, -330))) : kOneBits;
    return;
  }
  mp::Num u = mp::zero(kLimbs);
  std::memcpy(u.m + 1, lane.m, sizeof lane.m);  // 256-bit mantissa in the top four of five limbs
  u.e = lane.e;
  u.neg = lane.neg;
  if (u.is_zero()) {
    *sin_bits = 0;
    *cos_bits = m_bits;
    return;
  }
  const uint64_t mag = p < 0 ? uint64_t(0) - uint64_t(p) : uint64_t(p);
  mp::Num x = mp::mul_u64(u, mag);  // exact: 256 + 31 bits fit in 320
  if (p < 0) x = mp::neg(x);
  int64_t k = 0;
  const mp::Num t = mp::split_nearest_integer(x, &k);
  const mp::Num arg = mp::mul(t, mp::ldexp(mp::pi(kLimbs), -1));
  mp::Num sn, cs;
  mp::sincos_small(arg, &sn, &cs);
  // angle = k pi/2 + arg
  const unsigned quadrant = unsigned(uint64_t(k) & 3);
  mp::Num s = (quadrant & 1) ? cs : sn;
  mp::Num c = (quadrant & 1) ? sn : cs;
  if (quadrant == 2 || quadrant == 3) s = mp::neg(s);
  if (quadrant == 1 || quadrant == 2) c = mp::neg(c);
  const bool wrapped = k != 0;
  // the output that takes the cos series of a tiny argument (rounded_bits, near_unit)
  const bool tiny = arg.is_zero() || arg.e < -100;
  *sin_bits = rounded_bits(s, wrapped, m, scaled, tiny && (quadrant & 1));
  *cos_bits = rounded_bits(c, wrapped, m, scaled, tiny && !(quadrant & 1));
}

}  // namespace detail
}  // namespace posenc
