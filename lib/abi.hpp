// What every C ABI unit (api.cpp, rope_api.cpp) checks and how it keeps exceptions inside: the position
// range and the wrapper of each extern "C" body. Baseline-ISA units only.
#pragma once

#include <cstdint>

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
