// What every C ABI unit (api.cpp, rope_api.cpp) checks and how it keeps exceptions inside: the position
// range and the wrapper of each extern "C" body. Baseline-ISA units only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "posenc/posenc.h"

namespace posenc {
namespace detail {

constexpr int64_t kPositionLimit = int64_t(1) << 31;  // |p| < 2^31

inline bool position_ok(int64_t p) { return p == POSENC_PAD || (p > -kPositionLimit && p < kPositionLimit); }

// OUT_OF_RANGE for an explicit position with |p| >= 2^31 (POSENC_PAD aside), or for first + r outside that
// range for some r < n (n > 0).
inline posenc_status check_positions(const int64_t *positions, int64_t first, int64_t n) {
  if (positions) {
    for (int64_t r = 0; r < n; ++r)
      if (!position_ok(positions[r])) return POSENC_ERR_OUT_OF_RANGE;
    return POSENC_OK;
  }
  int64_t last;
  if (__builtin_add_overflow(first, n - 1, &last)) return POSENC_ERR_OUT_OF_RANGE;
  if (first <= -kPositionLimit || last >= kPositionLimit) return POSENC_ERR_OUT_OF_RANGE;
  return POSENC_OK;
}

// The extent of a lattice of rows: rows (a, b) for a < na, b < nb start at a sa + b sb elements, each
// `width` elements of `size` bytes (strides non-negative). Its elements and bytes must fit in int64, and its
// bytes in size_t (a buffer that large cannot exist). Nothing to hold (na or nb <= 0) always fits. The tables'
// row buffers are (n, stride, 1, 0), a RoPE tensor (tokens, token stride, heads, head stride), a cache
// (rows, stride, 1, 0).
inline bool extent_fits(int64_t na, int64_t sa, int64_t nb, int64_t sb, int64_t width, size_t size) {
  using i128 = __int128;
  if (na <= 0 || nb <= 0) return true;
  const i128 elems = i128(na - 1) * sa + i128(nb - 1) * sb + width;  // each product below 2^126: no overflow
  if (elems > std::numeric_limits<int64_t>::max()) return false;     // before the bytes: elems * size could
  const i128 bytes = elems * i128(size);                             // pass 2^127 (the fuzzer found it)
  return bytes <= std::numeric_limits<int64_t>::max() &&
         uint64_t(bytes) <= uint64_t(std::numeric_limits<size_t>::max());
}

// Wraps a call so that nothing thrown (there should be nothing) crosses the C ABI.
template <class Fn>
posenc_status guarded(Fn fn) noexcept {
  try {
    return fn();
  } catch (...) {
    return POSENC_ERR_NO_MEMORY;
  }
}

}  // namespace detail
}  // namespace posenc
