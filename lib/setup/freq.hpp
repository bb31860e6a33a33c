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
  // For the quad pass (kernel.hpp): how many steps from the anchor of a block no row can hold a value
  // near zero. reach_i = 1 / (|step angle| (1 + 2^-20)), in steps per radian (0 for the lanes marked
  // slow, and for a zero step); from the anchor's computed sin and cos, every row within
  // floor((min(|sin|, |cos|) - 2^-12 - 2^-34) reach_i) - 1 steps has |value| > 2^-12 (docs/math.md
  // section 5).
  double *reach;

  // The rotation table (values_rows.hpp, segment): sin and cos of k position steps, 0 < k <= kSteps, by the
  // anchors' form of the direct method (kernel.hpp, fill_tables): absolute error below 2^-51.4. Row c + k
  // of a block is its anchor (the row in the middle, c) turned by entry |k|, forwards or backwards. Stored
  // in blocks of kLanes pairs (the widest vector): a block holds the sin of its pairs, then their cos, so
  // that one pointer reaches both; one run of blocks per step, so a vector finds its entry for every step
  // at the same displacement.
  static constexpr int kLanes = 8;
  static constexpr int kBlock = 65;          // rows of a block, turned from its one anchor in the middle
  static constexpr int kSteps = kBlock / 2;  // the rows of a block are at most kSteps from its middle
  double *step;
  // Where the sin of pair j sits in the entry of k steps, relative to step; its cos is kLanes further.
  int64_t step_at(int64_t j, int64_t k) const { return block_at(j) + (k - 1) * 2 * padded; }
  static constexpr int64_t block_at(int64_t j) { return (j / kLanes) * 2 * kLanes + j % kLanes; }
  LaneExact *exact;
  // Real-valued positions (timesteps, values_times.hpp): U_i = 2 s w_i / pi itself, not reduced (a
  // fractional position needs its integer part too), as U0 + U1 + U2 (relative error below 2^-150) and a
  // 256-bit copy in `whole` (kind kNegligible where exact holds it so). Filled by set_pair, and for RoPE's
  // explicit frequencies by freq_explicit.cpp (RoPE at real-valued positions).
  double *U0, *U1, *U2;
  LaneExact *whole;
  // RoPE with explicit frequencies: the h doubles f_i (u_i = frac4(2 s f_i / pi)), which with scale are
  // the key; nullptr for a spec's base^(-i/D).
  double *values;
  void *storage;
  ~Freq();
};

// Classifies a spec without building anything: POSENC_OK or POSENC_ERR_INVALID (fields, enum, or a
// frequency of 2^1000 or more). The spec pointer is non-NULL.
posenc_status check_spec(const posenc_spec &spec);

// Real-valued positions (timesteps) take specs whose frequencies |position_scale w_i| stay below 2^52 (as
// estimated in double: the kernel is exact below 2^52.6): POSENC_OK or POSENC_ERR_INVALID. The spec is
// valid (check_spec).
posenc_status check_real_positions_spec(const posenc_spec &spec);

// The last step of a new table, its rotation table (from u_i and the clear distances), which the kernel fills
// with the active path's vectors: the caller above the setup layer passes it (the C ABI passes dispatch's
// fill_tables), so that setup, the bottom of lib/'s stack, calls up into no path (docs/architecture.md,
// "Who may include what").
using FillTables = void (*)(Freq &);

// The table for a valid spec, from the calling thread's cache, the shared cache, or built now (its rotation
// table by fill). Returns nullptr only when memory ran out. The pointer stays valid until this thread asks
// again.
const Freq *frequencies(const posenc_spec &spec, FillTables fill);

// For tests: build a table outside the cache.
std::unique_ptr<Freq> build_frequencies(const posenc_spec &spec, FillTables fill);

// RoPE's explicit frequencies: POSENC_OK, or POSENC_ERR_INVALID for a value that is not finite or a
// frequency |scale f_i| of 2^1000 or more (scale finite, checked by the caller).
posenc_status check_explicit(const double *freq, int64_t h, double scale);
// The table of h explicit frequencies scaled by scale (valid), cached like frequencies(): the values are
// the key, not the pointer. nullptr only when memory ran out. Costs a few microseconds for h = 64 when new
// (a dynamic-NTK runtime changes the frequencies as the sequence grows).
const Freq *explicit_frequencies(const double *freq, int64_t h, double scale, FillTables fill);
std::unique_ptr<Freq> build_explicit(const double *freq, int64_t h, double scale, FillTables fill);

}  // namespace detail
}  // namespace posenc
