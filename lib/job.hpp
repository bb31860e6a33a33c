// What a kernel call is asked to do, after api.cpp has validated every argument. Plain data only: this
// header is shared by translation units compiled for different ISAs.
#pragma once

#include <cstdint>

#include "freq.hpp"

namespace posenc {
namespace detail {

enum class Src : uint8_t { kNone, kActivations, kTableF32, kTableBF16, kTableF16 };
enum class Dst : uint8_t { kF32, kBF16, kF16 };

struct Job {
  const Freq *freq;
  int64_t d, h;
  int layout;                 // posenc_layout value
  const int64_t *positions;   // nullptr: position of row r is first + r
  int64_t first, n;
  Src src;                    // what is added to scale * x: nothing, activations, or gathered table rows
  const void *x;
  int64_t x_stride;           // elements
  const int32_t *tokens;      // for the table sources
  float scale;
  Dst dst;
  void *out;
  int64_t out_stride;         // elements
  bool stream;                // the output is large enough to bypass the caches (float32 only)
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
