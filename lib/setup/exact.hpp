// The last resort: sin and cos of one element, correctly rounded to float32, with integer multi-precision.
// Used for the rare elements that the double-precision methods cannot prove correctly rounded (a value
// within their error bound of a rounding boundary, or far below 2^-20), and for lanes marked slow.
#pragma once

#include <cstdint>

#include "setup/freq.hpp"

namespace posenc {
namespace detail {

// Bit patterns of m sin and m cos of p * u * pi/2 (u from the lane), each the float32 nearest the exact
// value; m is a positive double (RoPE's attention scale), 1 for the PE tables.
void exact_sincos_bits(const LaneExact &lane, int64_t p, double m, uint32_t *sin_bits, uint32_t *cos_bits);
inline void exact_sincos_bits(const LaneExact &lane, int64_t p, uint32_t *sin_bits, uint32_t *cos_bits) {
  exact_sincos_bits(lane, p, 1.0, sin_bits, cos_bits);
}

// The same for a real position t = k + f (k an integer, |k| < 2^31; f exact, |f| <= 1/2): the angle in
// quarter turns is k u + f U, u from `lane` (U reduced modulo 4), U = 2 s w / pi whole (|U| < 2^52) from
// `whole` (Freq::whole); m as above (RoPE at real-valued positions), 1 for the tables.
void exact_sincos_bits_real(const LaneExact &lane, const LaneExact &whole, int64_t k, double f, double m,
                            uint32_t *sin_bits, uint32_t *cos_bits);
inline void exact_sincos_bits_real(const LaneExact &lane, const LaneExact &whole, int64_t k, double f,
                                   uint32_t *sin_bits, uint32_t *cos_bits) {
  exact_sincos_bits_real(lane, whole, k, f, 1.0, sin_bits, cos_bits);
}

}  // namespace detail
}  // namespace posenc
