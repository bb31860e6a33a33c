// The per-spec frequency table: for every pair i, the angle one position advances, in quarter turns
// modulo 4, u_i = frac4(2 * position_scale * w_i / pi), to about 300 bits. Built once per spec from the
// spec's doubles with integer multi-precision (mp.hpp), then cached and shared read-only by all threads.
#pragma once

#include <cstdint>
#include <memory>

#include "posenc/posenc.h"

namespace posenc {
namespace detail {

// The last-resort copy of u_i for exact.cpp: a 256-bit mantissa, relative error below 2^-250.
struct LaneExact {
  uint64_t m[4];
  int64_t e;
  bool neg;
  uint8_t kind;  // kNormal, or kNegligible: |w| so small that sin rounds to a signed zero and cos to 1
};
enum : uint8_t { kNormal = 0, kNegligible = 1 };

// Arrays of pairs, padded with harmless lanes (u = 0) to a multiple of kPad so vector loads never read
// past the end; 64-byte aligned.
struct Freq {
  static constexpr int64_t kPad = 16;
  double base, denominator, scale;  // the key; denominator already resolved (0 -> h)
  int64_t h;                        // pairs held
  int64_t padded;
  static constexpr int kSteps = 8;  // rotation tables: k steps and 8k steps, k < 8
  double *u0, *u1, *u2;  // u_i = u0 + u1 + u2, |u0| <= 2, to ~2^-158 relative
  double *slow;          // 0, or +inf for lanes the double methods must hand to exact.cpp
  // sin and cos of k position steps (near[k]) and of 8k steps (far[k]) for k in [0, 8), by the direct
  // method: absolute error below 2^-50. Row-major: near_sin + k * padded + i.
  double *near_sin, *near_cos, *far_sin, *far_cos;
  LaneExact *exact;
  void *storage;
  ~Freq();
};

// Classifies a spec without building anything: POSENC_OK or POSENC_ERR_INVALID (fields, enum, or a
// frequency of 2^1000 or more). The spec pointer is non-NULL.
posenc_status check_spec(const posenc_spec &spec);

// The table for a valid spec, from the calling thread's cache, the shared cache, or built now.
// Returns nullptr only when memory ran out. The pointer stays valid until this thread asks again.
const Freq *frequencies(const posenc_spec &spec);

// For tests: build a table outside the cache.
std::unique_ptr<Freq> build_frequencies(const posenc_spec &spec);

}  // namespace detail
}  // namespace posenc
