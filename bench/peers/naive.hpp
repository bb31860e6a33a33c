// The naive embedding a framework runs as separate kernels, each a full pass over the output. Written as
// plain loops over contiguous floats, which the compiler vectorises with the flags of the unit including
// this header; Tag is local to that unit, so each ISA's copy keeps its own symbols.
#pragma once

#include <cstdint>
#include <cstring>

namespace peers {

template <class Tag>
struct Naive {
  static void scale_pass(float *__restrict o, const float *__restrict x, float scale, int64_t m) {
    for (int64_t e = 0; e < m; ++e) o[e] = x[e] * scale;
  }
  static void add_pass(float *__restrict o, const float *__restrict pe, int64_t m) {
    for (int64_t e = 0; e < m; ++e) o[e] += pe[e];
  }
  // gather, scale (in place), add the PE table
  static void three_pass(const float *table, const int32_t *tokens, float scale, const float *pe, int64_t n, int64_t d,
                         float *out) {
    for (int64_t r = 0; r < n; ++r) std::memcpy(out + r * d, table + int64_t(tokens[r]) * d, sizeof(float) * size_t(d));
    for (int64_t e = 0; e < n * d; ++e) out[e] *= scale;
    add_pass(out, pe, n * d);
  }
  // the store bound of tables (value is not known at compile time, so this is not turned into memset)
  static void fill(float *__restrict o, float value, int64_t m) {
    for (int64_t e = 0; e < m; ++e) o[e] = value;
  }
  // scale into out, add the PE table
  static void two_pass(const float *x, float scale, const float *pe, int64_t n, int64_t d, float *out) {
    scale_pass(out, x, scale, n * d);
    add_pass(out, pe, n * d);
  }
};

}  // namespace peers
