// Multi-precision binary floating point: just enough for the one-time frequency setup of a spec and for
// the last-resort, correctly rounded evaluation of a single element. Integer arithmetic only, so it gives
// the same bits on every architecture and under any floating-point environment.
//
// A number is (-1)^neg * 0.M * 2^e, where M is the n-limb integer m[n-1]..m[0] with the top bit of m[n-1]
// set (normalised); zero has every limb zero. Every operation truncates its exact result to n limbs, so
// its relative error is below 2^(1 - 64 n).
#pragma once

#include <cstdint>

namespace posenc {
namespace mp {

constexpr int kMaxLimbs = 24;  // 1536 bits: enough for a frequency of 2^1000 and 256 bits below the point

struct Num {
  uint64_t m[kMaxLimbs];
  int64_t e;
  int n;
  bool neg;

  bool is_zero() const { return m[n - 1] == 0; }
};

Num zero(int n);
Num from_u64(uint64_t v, int n);
Num from_i64(int64_t v, int n);
Num from_double(double d, int n);  // d finite
Num resize(const Num &a, int n);   // truncate or zero-extend the mantissa

Num neg(Num a);
Num abs(Num a);
Num ldexp(Num a, int64_t k);
Num add(const Num &a, const Num &b);
Num sub(const Num &a, const Num &b);
Num mul(const Num &a, const Num &b);
Num mul_u64(const Num &a, uint64_t k);
Num div_u64(const Num &a, uint64_t k);  // k > 0
int cmp_abs(const Num &a, const Num &b);

// log2 of |a| as an integer: |a| lies in [2^(e-1), 2^e). Undefined for zero.
inline int64_t exponent(const Num &a) { return a.e; }

// Round to nearest, ties to even. |a| must lie in the normal double range or be zero.
double to_double(const Num &a);
// The float32 bit pattern nearest to a (ties to even), subnormals and signed zero included.
uint32_t to_float_bits(const Num &a);

// a = k + f with k the nearest integer (ties away from zero are fine: |f| <= 1/2 either way) and f exact.
// |a| < 2^62. Returns f; k goes to *k.
Num split_nearest_integer(const Num &a, int64_t *k);
// a modulo 4, centred into [-2, 2), exact.
Num mod4_centered(const Num &a);

// Constants, correct to the precision asked for (n <= kMaxLimbs); computed once, then truncated.
Num ln2(int n);
Num pi(int n);
Num two_over_pi(int n);

// Natural logarithm of a positive finite double; exp of a number with |x| < 2^40.
Num log(double x, int n);
Num exp(const Num &x);

// sin and cos of x with |x| <= pi/4 (Taylor series; relative error below 2^(8 - 64 n)).
void sincos_small(const Num &x, Num *s, Num *c);

}  // namespace mp
}  // namespace posenc
