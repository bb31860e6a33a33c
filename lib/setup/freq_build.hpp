// The pieces of a frequency table's one-time setup (freq.cpp) shared with the explicit-frequency builder
// (freq_explicit.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "setup/freq.hpp"
#include "setup/mp.hpp"

namespace posenc {
namespace detail {

constexpr int64_t kTinyExponent = -900;         // |u| below 2^-900: the double methods would underflow
constexpr int64_t kNegligibleExponent = -1100;  // |s w| below 2^-1100: sin(p s w) rounds to +-0

// The zeroed storage of a table of h pairs, key fields left to the caller; values: room for h explicit
// frequencies. nullptr when memory ran out or the size cannot exist.
std::unique_ptr<Freq> allocate(int64_t h, bool values);
// Limbs for frequencies up to 2^top with chain_bits of error growth in how they were formed.
int limbs_for(double top, double chain_bits);
// Pair i from w = s w_i (to n limbs): u_i = frac4(2 w / pi) as three doubles and a 256-bit copy, or marked
// for exact.cpp when negligible (then neg is the sign of w) or tiny.
void set_pair(Freq &f, int64_t i, const mp::Num &w, bool negligible, bool neg, const mp::Num &two_over_pi, int n);
// Clear-distance factors and the rotation table, once the u_i are set.
void finish(Freq &f, FillTables fill);

}  // namespace detail
}  // namespace posenc
