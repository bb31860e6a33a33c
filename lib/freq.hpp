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

// Arrays of pairs, padded with harmless lanes (a generic angle, never written out) to a multiple of kPad
// so vector loads never read past the end; 64-byte aligned.
struct Freq {
  static constexpr int64_t kPad = 16;
  double base, denominator, scale;  // the key; denominator already resolved (0 -> h)
  int64_t h;                        // pairs held
  int64_t padded;
  double *u0, *u1, *u2;  // u_i = u0 + u1 + u2, |u0| <= 2, to ~2^-158 relative
  double *slow;          // 0, or +inf for lanes the double methods must hand to exact.cpp
  // For the group pass (kernel.hpp): when the computed sin and cos of a group state both exceed clear_i
  // in magnitude, every row of the group (at most kNear steps from the state) has |value| > 2^-12, so the
  // small-value half of the acceptance test can be skipped for that vector of the group:
  // clear_i = 2^-12 + 2^-34 + kNear |step angle| (1 + 2^-20), +inf for the lanes marked slow.
  double *clear;

  // The rotation tables (kernel.hpp, segment): sin and cos of kRows g + 1 position steps (far, g < kFar)
  // and of k steps (near, 0 < k <= kNear), by the direct method: absolute error below 2^-50. Row
  // kRows g + j + 1 of a block (j = -1 .. kRows - 2) is the anchor turned by far[g], then by near[j]
  // (near[-1] being near[1] turned back, near[0] no turn). Stored in blocks of kLanes pairs (the widest
  // vector): a block holds the sin of its pairs, then their cos, so that one pointer reaches both. The near blocks of all steps of a pair block follow each other (a group pass
  // reads them all); the far table is one run of blocks per step (a group pass reads one step).
  static constexpr int kLanes = 8;
  static constexpr int kRows = 4;   // rows turned together from one far step
  static constexpr int kFar = 16;   // far steps 1, 5, ..., 61: a block of kRows kFar = 64 rows
  static constexpr int kNear = kRows - 2;
  double *far, *near;
  // Where the sin of pair j sits for far entry g (near entry k, 1 <= k <= kNear); its cos is kLanes further.
  int64_t far_at(int64_t j, int64_t g) const { return block_at(j) + g * 2 * padded; }
  static constexpr int64_t block_at(int64_t j) { return (j / kLanes) * 2 * kLanes + j % kLanes; }
  static constexpr int64_t near_at(int64_t j, int64_t k) {
    return ((j / kLanes) * kNear + (k - 1)) * 2 * kLanes + j % kLanes;
  }
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
