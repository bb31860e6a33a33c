// Constants of the rotation path's acceptance test (values_rows.hpp, docs/math.md "Deciding the rounding").
// A double y with |y - v| <= 2^-48.69 (the rotation path's bound) is accepted as rounding to the same
// float32 as v when
//  - the float f = RN(y) has |f| > 2^-12 (strictly: y just below 2^-12 may round up to it, and in y's own
//    binade a double ulp is only 2^-65), so that y >= 2^-12 and its double ulp is at least 2^-64, and
//  - the 29 low bits L of y (the bits float32 drops) are not within 2^16 of 2^28, the midpoint pattern:
//    2^16 double ulps are at least 2^-48 > 2^-48.69, so no float rounding boundary lies within the error.
// The test on L is ((bits(y) + kBias) & kMask) == 0 for rejected values: one add and one mask test.
#pragma once

#include <cstdint>

namespace posenc {
namespace fast_check {

constexpr int64_t kWindow = int64_t(1) << 16;                             // half-width, in double ulps
constexpr int64_t kBias = kWindow - (int64_t(1) << 28);                   // shifts the window to start at 0
constexpr int64_t kMask = ((int64_t(1) << 29) - 1) & ~(2 * kWindow - 1);  // bits that must not all be 0
// The same test on the low 32 bits of the double alone (bits 17 to 28 of a sum do not depend on the bits
// above 31 of its operands), as the vector paths run it.
constexpr int32_t kBias32 = int32_t(kBias);
constexpr int32_t kMask32 = int32_t(kMask);
static_assert(kBias32 == kBias && kMask32 == kMask, "the window constants fit in 32 bits");
constexpr uint32_t kSmallestBits = 0x39800001u;  // float32 bits of the float after 2^-12: |f| below is rejected

}  // namespace fast_check
}  // namespace posenc
