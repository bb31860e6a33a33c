// bfloat16 and binary16 written out from the formats' definitions, independently of the library's
// conversions: the exact float32 value of a bit pattern, and a float32 rounded to nearest-even. Header
// only, so that the fuzz target (built by another compiler, without the test support library) shares it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ref {

inline float float_of_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t bits_of_float(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline float widen_bf16(uint16_t h) { return float_of_bits(uint32_t(h) << 16); }

inline float widen_f16(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 0x1F && m) {  // NaN: sign and payload carried over (the payload's top bit is the quiet bit)
    const uint32_t b = uint32_t(h & 0x8000) << 16 | 0x7F800000u | uint32_t(m) << 13;
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  if (e == 0x1F) return sign * std::numeric_limits<float>::infinity();
  if (e == 0) return sign * std::ldexp(float(m), -24);
  return sign * std::ldexp(float(1024 + m), e - 25);
}

// A finite float rounded to nearest-even in a 16-bit format of p significant bits, minimum normal exponent
// emin and the given bias; values that round past the largest finite one are not handled (|v| <= 1 here).
inline uint16_t narrow_half(float v, int p, int emin, int bias) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(double(v));
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  e -= 1;  // a = 1.f x 2^e
  if (e < emin) e = emin;
  double q = std::nearbyint(std::ldexp(a, (p - 1) - e));  // exact in double; the rounding is the only one
  if (q == std::ldexp(1.0, p)) {
    q /= 2;
    e += 1;
  }
  const uint32_t mant = uint32_t(q);
  if (mant < (1u << (p - 1))) return uint16_t(sign | mant);  // subnormal (or rounded to zero)
  return uint16_t(sign | uint32_t(e + bias) << (p - 1) | (mant - (1u << (p - 1))));
}
inline uint16_t narrow_bf16(float v) { return narrow_half(v, 8, -126, 127); }
inline uint16_t narrow_f16(float v) { return narrow_half(v, 11, -14, 15); }

}  // namespace ref
