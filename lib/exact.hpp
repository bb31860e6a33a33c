// The last resort: sin and cos of one element, correctly rounded to float32, with integer multi-precision.
// Used for the rare elements that the double-precision methods cannot prove correctly rounded (a value
// within their error bound of a rounding boundary, or far below 2^-20), and for lanes marked slow.
#pragma once

#include <cstdint>

#include "freq.hpp"

namespace posenc {
namespace detail {

// Bit patterns of m sin and m cos of p * u * pi/2 (u from the lane), each the float32 nearest the exact
// value; m is a positive double (RoPE's attention scale), 1 for the PE tables.
void exact_sincos_bits(const LaneExact &lane, int64_t p, double m, uint32_t *sin_bits, uint32_t *cos_bits);
inline void exact_sincos_bits(const LaneExact &lane, int64_t p, uint32_t *sin_bits, uint32_t *cos_bits) {
  exact_sincos_bits(lane, p, 1.0, sin_bits, cos_bits);
}

}  // namespace detail
}  // namespace posenc
