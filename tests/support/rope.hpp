// The RoPE functions of the C ABI behind one call description, and the rotation of posenc.h written out
// from its definition, independently of the library. Header only, so that the fuzz target (built by
// another compiler, without the test support library) shares it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "halves.hpp"
#include "posenc/posenc.h"

namespace ref {

// ---- the rotation -------------------------------------------------------------------------------------

// A finite or infinite double rounded to nearest-even in a 16-bit format of p significant bits (minimum
// normal exponent emin, maximum exponent emax, bias), once, from the double: no float32 step in between.
// Values that round past the largest finite one become infinities. NaN inputs give the format's default
// quiet NaN (callers compare NaN results by class, not by payload).
inline uint16_t narrow_half_from_double(double v, int p, int emin, int emax, int bias) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const uint16_t inf = uint16_t(((1u << (15 - (p - 1))) - 1) << (p - 1));  // exponent all ones
  if (std::isnan(v)) return uint16_t(inf | (1u << (p - 2)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return uint16_t(sign | inf);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  e -= 1;  // a = 1.f x 2^e
  if (e < emin) e = emin;
  double q = std::nearbyint(std::ldexp(a, (p - 1) - e));  // exact scaling; the rounding is the only one
  if (q == std::ldexp(1.0, p)) {
    q /= 2;
    e += 1;
  }
  if (e > emax) return uint16_t(sign | inf);
  const uint32_t mant = uint32_t(q);
  if (mant < (1u << (p - 1))) return uint16_t(sign | mant);  // subnormal (or rounded to zero)
  return uint16_t(sign | uint32_t(e + bias) << (p - 1) | (mant - (1u << (p - 1))));
}
inline uint16_t narrow_bf16_from_double(double v) { return narrow_half_from_double(v, 8, -126, 127, 127); }
inline uint16_t narrow_f16_from_double(double v) { return narrow_half_from_double(v, 11, -14, 15, 15); }

// The pair (x, y) rotated by the float32 cos c and sin s, before the final rounding: the products exact,
// one rounding of each sum to double (posenc.h: x' = fl(fl64(x c - y s)), y' = fl(fl64(y c + x s))).
struct Rotated {
  double x, y;
};
inline Rotated rotate_exact(float x, float y, float c, float s) {
  const double xd = x, yd = y, cd = c, sd = s;
  return Rotated{std::fma(xd, cd, -(yd * sd)), std::fma(yd, cd, xd * sd)};
}

// The element formats of rope_*: float32, bfloat16 and binary16 (uint16_t bit patterns).
enum class Format { kF32, kBF16, kF16 };

inline size_t format_size(Format f) { return f == Format::kF32 ? 4 : 2; }

// Element e of a row in format f, widened exactly to float32.
inline float load(Format f, const void *base, int64_t e) {
  if (f == Format::kF32) {
    float v;
    std::memcpy(&v, static_cast<const unsigned char *>(base) + 4 * e, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const unsigned char *>(base) + 2 * e, 2);
  return f == Format::kBF16 ? widen_bf16(h) : widen_f16(h);
}

// A rotated double rounded once to format f and stored as element e.
inline void store(Format f, void *base, int64_t e, double v) {
  unsigned char *p = static_cast<unsigned char *>(base);
  if (f == Format::kF32) {
    const float r = float(v);
    std::memcpy(p + 4 * e, &r, 4);
  } else {
    const uint16_t h = f == Format::kBF16 ? narrow_bf16_from_double(v) : narrow_f16_from_double(v);
    std::memcpy(p + 2 * e, &h, 2);
  }
}

// Rotates the first 2h elements of the head row src into the row dst (in place: the same row), with h cos
// and h sin values, as posenc.h defines it: pair i is (i, i + h) for POSENC_ROPE_HALVES, (2i, 2i + 1) for
// POSENC_ROPE_INTERLEAVED. Each pair is read before it is written.
inline void rotate_row(Format f, posenc_rope_pairs pairs, int64_t h, const float *cos, const float *sin,
                       const void *src, void *dst) {
  for (int64_t i = 0; i < h; ++i) {
    const int64_t ix = pairs == POSENC_ROPE_HALVES ? i : 2 * i, iy = pairs == POSENC_ROPE_HALVES ? i + h : 2 * i + 1;
    const Rotated r = rotate_exact(load(f, src, ix), load(f, src, iy), cos[i], sin[i]);
    store(f, dst, ix, r.x);
    store(f, dst, iy, r.y);
  }
}
inline void rotate_row(Format f, posenc_rope_pairs pairs, int64_t h, const float *cos, const float *sin, void *row) {
  rotate_row(f, pairs, h, cos, sin, row, row);
}

// ---- one call of any RoPE function --------------------------------------------------------------------

enum class RopeKernel { kCacheF32, kF32, kBF16, kF16, kQkF32, kQkBF16, kQkF16, kCopyF32, kCopyBF16, kCopyF16 };

inline constexpr int kRopeKernels = 10;
inline constexpr RopeKernel kAllRopeKernels[kRopeKernels] = {
    RopeKernel::kCacheF32, RopeKernel::kF32,   RopeKernel::kBF16,    RopeKernel::kF16,      RopeKernel::kQkF32,
    RopeKernel::kQkBF16,   RopeKernel::kQkF16, RopeKernel::kCopyF32, RopeKernel::kCopyBF16, RopeKernel::kCopyF16};

inline const char *rope_name(RopeKernel k) {
  static const char *const names[] = {"rope_cache_f32", "rope_f32",     "rope_bf16",   "rope_f16",
                                      "rope_qk_f32",    "rope_qk_bf16", "rope_qk_f16", "rope_copy_f32",
                                      "rope_copy_bf16", "rope_copy_f16"};
  return names[int(k)];
}
inline bool is_cache(RopeKernel k) { return k == RopeKernel::kCacheF32; }
inline bool is_qk(RopeKernel k) { return k >= RopeKernel::kQkF32 && k <= RopeKernel::kQkF16; }
inline bool is_copy(RopeKernel k) { return k >= RopeKernel::kCopyF32; }
inline Format rope_format(RopeKernel k) {
  switch (k) {
    case RopeKernel::kBF16:
    case RopeKernel::kQkBF16:
    case RopeKernel::kCopyBF16: return Format::kBF16;
    case RopeKernel::kF16:
    case RopeKernel::kQkF16:
    case RopeKernel::kCopyF16: return Format::kF16;
    default: return Format::kF32;
  }
}

// Every argument of every RoPE function. rope_* use x (heads, token_stride, head_stride); rope_qk_* use x
// as q and k; rope_copy_* read src (src_token_stride, src_head_stride) and write x; rope_cache_f32 uses x as
// cos_out with token_stride as cos_stride, and k as sin_out with k_token_stride as sin_stride.
struct RopeCall {
  RopeKernel kernel = RopeKernel::kF32;
  const posenc_rope *rope = nullptr;
  const int64_t *positions = nullptr;
  int64_t first = 0, n = 0;
  void *x = nullptr;
  int64_t heads = 0, token_stride = 0, head_stride = 0;
  void *k = nullptr;
  int64_t k_heads = 0, k_token_stride = 0, k_head_stride = 0;
  const void *src = nullptr;
  int64_t src_token_stride = 0, src_head_stride = 0;
  // part: the call goes through the function's _part twin with [begin, end) (posenc.h, "Parts of a call")
  bool part = false;
  int64_t begin = 0, end = 0;
  // real: the function's twin at real-valued positions (posenc_rope_*_real), with `times` for positions
  // (positions and first unused)
  bool real = false;
  const double *times = nullptr;
};

// A call at real-valued positions (RopeCall::real), whole or as a part.
inline posenc_status invoke_real(const RopeCall &c) {
  float *x32 = static_cast<float *>(c.x), *k32 = static_cast<float *>(c.k);
  uint16_t *x16 = static_cast<uint16_t *>(c.x), *k16 = static_cast<uint16_t *>(c.k);
  const float *s32 = static_cast<const float *>(c.src);
  const uint16_t *s16 = static_cast<const uint16_t *>(c.src);
  const int64_t b = c.part ? c.begin : 0, e = c.part ? c.end : c.n, sts = c.src_token_stride, shs = c.src_head_stride;
  const double *t = c.times;
  if (!c.part) {
    switch (c.kernel) {
      case RopeKernel::kCacheF32:
        return posenc_rope_cache_real_f32(c.rope, t, c.n, x32, c.token_stride, k32, c.k_token_stride);
      case RopeKernel::kF32: return posenc_rope_real_f32(c.rope, t, c.n, x32, c.heads, c.token_stride, c.head_stride);
      case RopeKernel::kBF16: return posenc_rope_real_bf16(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride);
      case RopeKernel::kF16: return posenc_rope_real_f16(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride);
      case RopeKernel::kQkF32:
        return posenc_rope_qk_real_f32(c.rope, t, c.n, x32, c.heads, c.token_stride, c.head_stride, k32, c.k_heads,
                                       c.k_token_stride, c.k_head_stride);
      case RopeKernel::kQkBF16:
        return posenc_rope_qk_real_bf16(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, k16, c.k_heads,
                                        c.k_token_stride, c.k_head_stride);
      case RopeKernel::kQkF16:
        return posenc_rope_qk_real_f16(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, k16, c.k_heads,
                                       c.k_token_stride, c.k_head_stride);
      case RopeKernel::kCopyF32:
        return posenc_rope_copy_real_f32(c.rope, t, c.n, s32, sts, shs, x32, c.heads, c.token_stride, c.head_stride);
      case RopeKernel::kCopyBF16:
        return posenc_rope_copy_real_bf16(c.rope, t, c.n, s16, sts, shs, x16, c.heads, c.token_stride, c.head_stride);
      case RopeKernel::kCopyF16:
        return posenc_rope_copy_real_f16(c.rope, t, c.n, s16, sts, shs, x16, c.heads, c.token_stride, c.head_stride);
    }
    return posenc_status(7);
  }
  switch (c.kernel) {
    case RopeKernel::kCacheF32:
      return posenc_rope_cache_real_f32_part(c.rope, t, c.n, x32, c.token_stride, k32, c.k_token_stride, b, e);
    case RopeKernel::kF32:
      return posenc_rope_real_f32_part(c.rope, t, c.n, x32, c.heads, c.token_stride, c.head_stride, b, e);
    case RopeKernel::kBF16:
      return posenc_rope_real_bf16_part(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, b, e);
    case RopeKernel::kF16:
      return posenc_rope_real_f16_part(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, b, e);
    case RopeKernel::kQkF32:
      return posenc_rope_qk_real_f32_part(c.rope, t, c.n, x32, c.heads, c.token_stride, c.head_stride, k32, c.k_heads,
                                          c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kQkBF16:
      return posenc_rope_qk_real_bf16_part(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, k16, c.k_heads,
                                           c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kQkF16:
      return posenc_rope_qk_real_f16_part(c.rope, t, c.n, x16, c.heads, c.token_stride, c.head_stride, k16, c.k_heads,
                                          c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kCopyF32:
      return posenc_rope_copy_real_f32_part(c.rope, t, c.n, s32, sts, shs, x32, c.heads, c.token_stride, c.head_stride,
                                            b, e);
    case RopeKernel::kCopyBF16:
      return posenc_rope_copy_real_bf16_part(c.rope, t, c.n, s16, sts, shs, x16, c.heads, c.token_stride, c.head_stride,
                                             b, e);
    case RopeKernel::kCopyF16:
      return posenc_rope_copy_real_f16_part(c.rope, t, c.n, s16, sts, shs, x16, c.heads, c.token_stride, c.head_stride,
                                            b, e);
  }
  return posenc_status(7);
}

inline posenc_status invoke_part(const RopeCall &c) {
  if (c.real) return invoke_real(c);
  float *x32 = static_cast<float *>(c.x), *k32 = static_cast<float *>(c.k);
  uint16_t *x16 = static_cast<uint16_t *>(c.x), *k16 = static_cast<uint16_t *>(c.k);
  const float *s32 = static_cast<const float *>(c.src);
  const uint16_t *s16 = static_cast<const uint16_t *>(c.src);
  const int64_t b = c.begin, e = c.end, sts = c.src_token_stride, shs = c.src_head_stride;
  switch (c.kernel) {
    case RopeKernel::kCacheF32:
      return posenc_rope_cache_f32_part(c.rope, c.positions, c.first, c.n, x32, c.token_stride, k32, c.k_token_stride,
                                        b, e);
    case RopeKernel::kF32:
      return posenc_rope_f32_part(c.rope, c.positions, c.first, c.n, x32, c.heads, c.token_stride, c.head_stride, b, e);
    case RopeKernel::kBF16:
      return posenc_rope_bf16_part(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride, b,
                                   e);
    case RopeKernel::kF16:
      return posenc_rope_f16_part(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride, b, e);
    case RopeKernel::kQkF32:
      return posenc_rope_qk_f32_part(c.rope, c.positions, c.first, c.n, x32, c.heads, c.token_stride, c.head_stride,
                                     k32, c.k_heads, c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kQkBF16:
      return posenc_rope_qk_bf16_part(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride,
                                      k16, c.k_heads, c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kQkF16:
      return posenc_rope_qk_f16_part(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride,
                                     k16, c.k_heads, c.k_token_stride, c.k_head_stride, b, e);
    case RopeKernel::kCopyF32:
      return posenc_rope_copy_f32_part(c.rope, c.positions, c.first, c.n, s32, sts, shs, x32, c.heads, c.token_stride,
                                       c.head_stride, b, e);
    case RopeKernel::kCopyBF16:
      return posenc_rope_copy_bf16_part(c.rope, c.positions, c.first, c.n, s16, sts, shs, x16, c.heads, c.token_stride,
                                        c.head_stride, b, e);
    case RopeKernel::kCopyF16:
      return posenc_rope_copy_f16_part(c.rope, c.positions, c.first, c.n, s16, sts, shs, x16, c.heads, c.token_stride,
                                       c.head_stride, b, e);
  }
  return posenc_status(7);
}

inline posenc_status invoke(const RopeCall &c) {
  if (c.real) return invoke_real(c);
  if (c.part) return invoke_part(c);
  float *x32 = static_cast<float *>(c.x), *k32 = static_cast<float *>(c.k);
  uint16_t *x16 = static_cast<uint16_t *>(c.x), *k16 = static_cast<uint16_t *>(c.k);
  const float *s32 = static_cast<const float *>(c.src);
  const uint16_t *s16 = static_cast<const uint16_t *>(c.src);
  const int64_t sts = c.src_token_stride, shs = c.src_head_stride;
  switch (c.kernel) {
    case RopeKernel::kCacheF32:
      return posenc_rope_cache_f32(c.rope, c.positions, c.first, c.n, x32, c.token_stride, k32, c.k_token_stride);
    case RopeKernel::kF32:
      return posenc_rope_f32(c.rope, c.positions, c.first, c.n, x32, c.heads, c.token_stride, c.head_stride);
    case RopeKernel::kBF16:
      return posenc_rope_bf16(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride);
    case RopeKernel::kF16:
      return posenc_rope_f16(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride);
    case RopeKernel::kQkF32:
      return posenc_rope_qk_f32(c.rope, c.positions, c.first, c.n, x32, c.heads, c.token_stride, c.head_stride, k32,
                                c.k_heads, c.k_token_stride, c.k_head_stride);
    case RopeKernel::kQkBF16:
      return posenc_rope_qk_bf16(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride, k16,
                                 c.k_heads, c.k_token_stride, c.k_head_stride);
    case RopeKernel::kQkF16:
      return posenc_rope_qk_f16(c.rope, c.positions, c.first, c.n, x16, c.heads, c.token_stride, c.head_stride, k16,
                                c.k_heads, c.k_token_stride, c.k_head_stride);
    case RopeKernel::kCopyF32:
      return posenc_rope_copy_f32(c.rope, c.positions, c.first, c.n, s32, sts, shs, x32, c.heads, c.token_stride,
                                  c.head_stride);
    case RopeKernel::kCopyBF16:
      return posenc_rope_copy_bf16(c.rope, c.positions, c.first, c.n, s16, sts, shs, x16, c.heads, c.token_stride,
                                   c.head_stride);
    case RopeKernel::kCopyF16:
      return posenc_rope_copy_f16(c.rope, c.positions, c.first, c.n, s16, sts, shs, x16, c.heads, c.token_stride,
                                  c.head_stride);
  }
  return posenc_status(7);  // not a kernel: never equal to an expected status
}

// Elements spanned by the rows of one tensor: rows (t, j) for t < n, j < heads, each `width` long
// (0 when there are no rows). Strides are assumed non-negative and the result to fit.
inline int64_t rope_extent(int64_t n, int64_t heads, int64_t token_stride, int64_t head_stride, int64_t width) {
  if (n <= 0 || heads <= 0) return 0;
  return (n - 1) * token_stride + (heads - 1) * head_stride + width;
}

}  // namespace ref
