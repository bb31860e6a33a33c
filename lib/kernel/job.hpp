// What a kernel call is asked to do, after api.cpp has validated every argument. Plain data only: this
// header is shared by translation units compiled for different ISAs.
#pragma once

#include <cstdint>

#include "setup/freq.hpp"

namespace posenc {
namespace detail {

enum class Src : uint8_t { kNone, kActivations, kTableF32, kTableBF16, kTableF16 };
enum class Dst : uint8_t { kF32, kBF16, kF16 };

struct Job {
  const Freq *freq;
  int64_t d, h;
  int layout;                // posenc_layout value
  const int64_t *positions;  // nullptr: position of row r is first + r
  int64_t first, n;
  const double *times;  // real-valued positions (timesteps): row r at times[r]; nullptr otherwise
  Src src;              // what is added to scale * x: nothing, activations, or gathered table rows
  const void *x;
  int64_t x_stride;       // elements
  const int32_t *tokens;  // for the table sources
  float scale;
  Dst dst;
  void *out;
  int64_t out_stride;  // elements
  bool stream;         // the output is large enough to bypass the caches (float32 only)
};

// The positions a call's rows stand for, as the rows engine (values_rows.hpp) walks them.
struct Stream {
  const Freq *freq;
  int64_t h;                 // pairs made per row
  const int64_t *positions;  // nullptr: position of row r is first + r (on every axis)
  int64_t first, n;
  // Multi-axis RoPE: with axes > 1 (0 or 1: one position per row), row r's position on axis a is
  // positions[a axis_stride + r], and pair i takes the position of axis axis[i] (h entries). axis_stride
  // is the whole call's n: a part of a call (posenc_*_part) starts its positions at the part's first token
  // and makes n = end - begin rows, but the axes of the caller's array are still the whole call's n apart.
  int axes;
  const uint8_t *axis;
  int64_t axis_stride;
};

// The magnitude m of a RoPE call's values (attention_scale): m = mu 2^e with mu in (0.75, 1.5], so that
// the rotation path's error bound, which scales with mu, stays within the acceptance test's window
// (values_rows.hpp), and post = 2^e scales the floats it accepted exactly. 1, 1, 1 for everything else.
struct Mag {
  double m, mu;
  float post;
};

// A RoPE call: the cos/sin cache, or the rotation of up to two tensors of head rows (q, k), in place or from
// source rows (posenc_rope_copy_*: each row read from src and written to x in one pass).
struct RopeTensor {
  void *x;  // float or uint16_t rows; nullptr when heads == 0
  int64_t heads;
  int64_t token_stride, head_stride;          // elements
  const void *src;                            // the rows read: x itself in place
  int64_t src_token_stride, src_head_stride;  // elements
};
struct RopeJob {
  const Freq *freq;
  // r / 2: the pairs whose cos and sin each token makes, and, for HALVES pairs, the distance between the
  // two elements of a pair (pair i is elements i and i + h; INTERLEAVED: 2i and 2i + 1).
  int64_t h;
  int pairs;  // posenc_rope_pairs value
  Mag mag;
  const int64_t *positions;  // nullptr: first + t on every axis; else axis-major, token t of axis a at
                             // positions[a axis_stride + t]
  int64_t first, n;
  const double *times;  // real-valued positions (posenc_rope_*_real): laid out as positions, which are
                        // then unused; nullptr for integer positions
  int64_t axis_stride;  // the whole call's n (Stream::axis_stride)
  int axes;             // positions per token: 1, or up to 4 (multi-axis RoPE)
  const uint8_t *axis;  // axes > 1: the axis of each of the h pairs, whose position its angle takes
  bool cache;           // posenc_rope_cache_f32: cos_out / sin_out; otherwise the tensors
  Dst dst;              // the rows' format (rotation)
  RopeTensor t[2];      // q, k
  float *cos_out, *sin_out;
  int64_t cos_stride, sin_stride;
  // posenc_rope_cached_*: each token's h cos and h sin given (rows of a posenc_rope_cache_f32 cache), in place
  // of the values made from positions; nullptr otherwise
  const float *cos_in, *sin_in;
  int64_t cos_in_stride, sin_in_stride;
  // posenc_rope_tables_*: cos_in / sin_in rows hold 2h values, one per element of the row (freq is nullptr)
  bool full_tables;
};

struct LearnedJob {
  int64_t d;
  const float *table;
  int64_t table_stride;
  const int32_t *tokens;
  float scale;
  const float *pos_table;
  int64_t pos_stride;
  const int64_t *positions;  // nullptr: first + r
  int64_t first, n;
  float *out;
  int64_t out_stride;
  bool stream;  // the output is large enough to bypass the caches
};

}  // namespace detail
}  // namespace posenc
