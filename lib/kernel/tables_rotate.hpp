// The rotation by full-width tables (posenc_rope_tables_*: diffusers' apply_rotary_emb). Element j of a head
// row becomes RN_T(RN_f32(x_j c_j + x'_j s_j)), x' its pair partner with the pair's sign (-v for the pair's
// first element u, +u for its second v), c and s the token's tables at j.
//
// Both products are exact in double (24-bit by 24-bit significands, and far from the double range's ends), so
// one fused rounding makes y = RN64(x c + x' s). The nearest float of y is the nearest float of the exact sum
// unless y is itself a float32 midpoint (a float lies between the sum and y only if it is y): then the
// rounding error of the sum decides the direction. S::any_f32_tie flags such a y (low 29 bits 0x10000000,
// about one lane in 2^29 of random float32 data, or a y below 2^-126, where the floats are subnormal); that
// vector takes the error from TwoSum and S::narrow_sum (y rounded to odd, then to the nearest float: the one
// rounding of the exact sum). bf16 and f16 rows, whose few-bit elements make midpoints common, take that form
// for every vector, without a branch. A vector whose results hold a NaN is made again from memory (nan_*), its
// NaN lanes by the NaN rule of docs/contract.md section 2: the first NaN of the pair (u, v), quieted, otherwise
// +qNaN. bf16 and f16 rows are the float rounded to nearest-even. Members of a template on S
// (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "posenc/posenc.h"
#include "simd/simd_rotate.hpp"

namespace posenc {

template <class S, class T, bool kBF16>
struct TablesRotate {
  using D = typename S::D;
  using H = typename S::H;
  using R = RotateSteps<S, T, kBF16>;
  static constexpr int W = S::W;
  static constexpr bool k16 = sizeof(T) == 2;

  static D wide(const T *p) { return S::widen(R::load_t(p)); }
  static D wide_f(const float *p) { return S::widen(S::load_h(p)); }

  static void put(T *p, const H &f, bool finite) {
    if constexpr (!k16)
      S::store_h(p, f);
    else if constexpr (kBF16) {
      if (finite)
        S::store_h_bf16_finite(p, f);
      else
        S::store_h_bf16(p, f);
    } else
      S::store_h_f16(p, f);
  }

  // The float of y = RN64(x c + p s) (b = p s, exact) that holds no NaN: the narrowing where it is right, else
  // the rounding to odd of y and its TwoSum error.
  [[gnu::always_inline]] static inline H narrow(const D &x, const D &c, const D &b, const D &y) {
    if constexpr (!k16)
      if (__builtin_expect(!S::any_f32_tie(y), 1)) return S::narrow(y);
    const D a = x * c, bb = y - a;
    return S::narrow_sum(y, (a - (y - bb)) + (b - bb));
  }

  // The NaN rule for an element whose result is NaN: the first NaN of its pair (u, v), quieted (the widening
  // from T quiets it), else +qNaN.
  static float nan_rule(double u, double v) {
    if (u != u) return float(u);
    if (v != v) return float(v);
    const uint32_t dflt = 0x7FC00000u;
    float f;
    std::memcpy(&f, &dflt, sizeof f);
    return f;
  }

  // W pairs of the halves form that hold a NaN result, made again from memory (the hot loop keeps nothing in
  // memory for this cold call): every lane as the vector makes it, the NaN lanes by the rule; read before
  // anything is written (in place: the same).
  [[gnu::noinline, gnu::cold]] static void nan_pairs(const T *us, const T *vs, const float *cu, const float *su,
                                                     const float *cv, const float *sv, T *ud, T *vd) {
    const D u = wide(us), v = wide(vs), c0 = wide_f(cu), c1 = wide_f(cv);
    const D b0 = v * (wide_f(su) * S::set(-1.0)), b1 = u * wide_f(sv);
    const D y0 = S::fma(u, c0, b0), y1 = S::fma(v, c1, b1);
    alignas(64) double ua[W], va[W], r0[W], r1[W];
    alignas(64) float fu[W], fv[W];
    S::store(ua, u);
    S::store(va, v);
    S::store(r0, y0);
    S::store(r1, y1);
    S::store_h(fu, narrow(u, c0, b0, y0));
    S::store_h(fv, narrow(v, c1, b1, y1));
    for (int l = 0; l < W; ++l) {
      if (r0[l] != r0[l]) fu[l] = nan_rule(ua[l], va[l]);
      if (r1[l] != r1[l]) fv[l] = nan_rule(ua[l], va[l]);
    }
    put(ud, S::load_h(fu), false);
    put(vd, S::load_h(fv), false);
  }
  // W interleaved elements (W/2 pairs) that hold a NaN result, likewise.
  [[gnu::noinline, gnu::cold]] static void nan_interleaved(const T *xs, const float *c, const float *s, T *xd,
                                                           const D &sign) {
    const D x = wide(xs), cv = wide_f(c);
    const D b = S::swap_pairs(x) * (wide_f(s) * sign);
    const D y = S::fma(x, cv, b);
    alignas(64) double xa[W], r[W];
    alignas(64) float f[W];
    S::store(xa, x);
    S::store(r, y);
    S::store_h(f, narrow(x, cv, b, y));
    for (int l = 0; l < W; ++l)
      if (r[l] != r[l]) f[l] = nan_rule(xa[l & ~1], xa[l | 1]);
    put(xd, S::load_h(f), false);
  }

  // W pairs of the halves form (u at us, v at vs; tables cu su at u's elements, cv sv at v's): both results
  // made before either is written (in place: ud = us, vd = vs).
  [[gnu::always_inline]] static inline void pairs(const T *us, const T *vs, const float *cu, const float *su,
                                                  const float *cv, const float *sv, T *ud, T *vd) {
    const D u = wide(us), v = wide(vs), c0 = wide_f(cu), c1 = wide_f(cv);
    // -s as s times -1 (exact): xsimd 8.1 negates an AVX-512 double as 0 - s, which makes -(+0) +0
    const D b0 = v * (wide_f(su) * S::set(-1.0)), b1 = u * wide_f(sv);
    const D y0 = S::fma(u, c0, b0), y1 = S::fma(v, c1, b1);  // u c - v s, v c + u s
    if (__builtin_expect(S::any_nan_d(y0, y1), 0)) return nan_pairs(us, vs, cu, su, cv, sv, ud, vd);
    const H f0 = narrow(u, c0, b0, y0), f1 = narrow(v, c1, b1, y1);
    put(ud, f0, true);
    put(vd, f1, true);
  }
  // The last m < W pairs of the halves form, through buffers of W.
  static void pairs_tail(const T *us, const T *vs, const float *cu, const float *su, const float *cv, const float *sv,
                         T *ud, T *vd, int64_t m) {
    alignas(64) T u[W] = {}, v[W] = {};
    alignas(64) float c0[W] = {}, s0[W] = {}, c1[W] = {}, s1[W] = {};
    const size_t bt = sizeof(T) * size_t(m), bf = sizeof(float) * size_t(m);
    std::memcpy(u, us, bt);
    std::memcpy(v, vs, bt);
    std::memcpy(c0, cu, bf);
    std::memcpy(s0, su, bf);
    std::memcpy(c1, cv, bf);
    std::memcpy(s1, sv, bf);
    pairs(u, v, c0, s0, c1, s1, u, v);
    std::memcpy(ud, u, bt);
    std::memcpy(vd, v, bt);
  }

  // One head row of d = 2h elements, halves: pair i is elements i and i + h.
  static void row_halves(const T *src, T *dst, const float *c, const float *s, int64_t h) {
    const int64_t full = h / W * W;
    for (int64_t e = 0; e < full; e += W)
      pairs(src + e, src + h + e, c + e, s + e, c + h + e, s + h + e, dst + e, dst + h + e);
    if (full < h)
      pairs_tail(src + full, src + h + full, c + full, s + full, c + h + full, s + h + full, dst + full, dst + h + full,
                 h - full);
  }

  // W interleaved elements (W >= 2: W/2 pairs): x' = swap(x), the signs -, +, -, + ... on s.
  [[gnu::always_inline]] static inline void elements(const T *xs, const float *c, const float *s, T *xd,
                                                     const D &sign) {
    const D x = wide(xs), cv = wide_f(c);
    const D b = S::swap_pairs(x) * (wide_f(s) * sign);
    const D y = S::fma(x, cv, b);
    if (__builtin_expect(S::any_nan_d(y, y), 0)) return nan_interleaved(xs, c, s, xd, sign);
    put(xd, narrow(x, cv, b, y), true);
  }

  // One head row, interleaved: pair i is elements 2i and 2i + 1.
  static void row_interleaved(const T *src, T *dst, const float *c, const float *s, int64_t d, const D &sign) {
    if constexpr (W == 1) {
      for (int64_t e = 0; e < d; e += 2)
        pairs(src + e, src + e + 1, c + e, s + e, c + e + 1, s + e + 1, dst + e, dst + e + 1);
    } else {
      const int64_t full = d / W * W;
      for (int64_t e = 0; e < full; e += W) elements(src + e, c + e, s + e, dst + e, sign);
      if (full < d) {  // m = d - full elements, an even count: whole pairs
        const int64_t m = d - full;
        alignas(64) T xt[W] = {};
        alignas(64) float ct[W] = {}, st[W] = {};
        std::memcpy(xt, src + full, sizeof(T) * size_t(m));
        std::memcpy(ct, c + full, sizeof(float) * size_t(m));
        std::memcpy(st, s + full, sizeof(float) * size_t(m));
        elements(xt, ct, st, xt, sign);
        std::memcpy(dst + full, xt, sizeof(T) * size_t(m));
      }
    }
  }

  // Every head row of tensor 0 of every token of the job (src rows read, x rows written; in place: the same).
  // Rows are visited in memory order: token by token when a token's heads lie together ([S, H, D]: one stream
  // each for the rows and the tables), head by head when each head's tokens do ([H, S, D], diffusers' [B, H, S,
  // D] layout: token-major order there would keep 2 H streams open at once, more than the prefetchers follow).
  static void run(const detail::RopeJob &job) {
    const detail::RopeTensor &t = job.t[0];
    const int64_t h = job.h;
    const bool halves = job.pairs == POSENC_ROPE_HALVES;
    alignas(64) double sg[W];
    for (int l = 0; l < W; ++l) sg[l] = l % 2 ? 1.0 : -1.0;
    const D sign = S::load(sg);
    auto row = [&](int64_t tok, int64_t hd) {
      const float *c = job.cos_in + tok * job.cos_in_stride, *s = job.sin_in + tok * job.sin_in_stride;
      const T *src = static_cast<const T *>(t.src) + tok * t.src_token_stride + hd * t.src_head_stride;
      T *dst = static_cast<T *>(t.x) + tok * t.token_stride + hd * t.head_stride;
      if (halves)
        row_halves(src, dst, c, s, h);
      else
        row_interleaved(src, dst, c, s, 2 * h, sign);
    };
    if (t.heads > 1 && job.n > 1 && t.head_stride > t.token_stride) {
      for (int64_t hd = 0; hd < t.heads; ++hd)
        for (int64_t tok = 0; tok < job.n; ++tok) row(tok, hd);
    } else {
      for (int64_t tok = 0; tok < job.n; ++tok)
        for (int64_t hd = 0; hd < t.heads; ++hd) row(tok, hd);
    }
  }
};

}  // namespace posenc
