// The rotation by full-width tables (posenc_rope_tables_*: diffusers' apply_rotary_emb). Element j of a head
// row becomes RN_T(RN_f32(x_j c_j + x'_j s_j)), x' its pair partner with the pair's sign (-v for the pair's
// first element u, +u for its second v), c and s the token's tables at j.
//
// Both products are exact in double (24-bit by 24-bit significands, and far from the double range's ends), so
// one fused rounding makes y = RN64(x c + x' s). The nearest float of y is the nearest float of the exact sum
// unless y is itself a float32 midpoint (a float lies between the sum and y only if it is y): then the
// rounding error of the sum decides the direction. S::any_f32_tie flags such a y (low 29 bits 0x10000000,
// about one lane in 2^29 of random data, or a y below 2^-126, where the floats are subnormal); that vector is
// redone lane by lane (lane()): the error from TwoSum, y moved to odd when the error is not zero (round to odd
// at 53 bits, then to nearest at 24 bits or fewer, is the one rounding to nearest), then the float. A vector
// whose results hold a NaN takes the same form and the NaN rule of docs/contract.md section 2 (the first NaN
// of the pair (u, v), quieted; otherwise +qNaN). bf16 and f16 rows are that float rounded to nearest-even.
// Members of a template on S (values_direct.hpp says why).
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

  // One element by the definition: x the element, p its partner (both as read), c its cos, s its sin with the
  // pair's sign; x_first: the element is the pair's first (u), for the NaN rule's order.
  static float lane(double x, double p, double c, double s, bool x_first) {
    const double a = x * c, b = p * s;  // exact
    double y = a + b;
    if (y != y) {
      const double u = x_first ? x : p, v = x_first ? p : x;
      if (u != u) return float(u);  // quiet already: widened from T
      if (v != v) return float(v);
      const uint32_t dflt = 0x7FC00000u;
      float f;
      std::memcpy(&f, &dflt, sizeof f);
      return f;
    }
    if (std::isfinite(y)) {
      const double bb = y - a, lo = (a - (y - bb)) + (b - bb);  // TwoSum: y + lo = a + b exactly
      uint64_t bits;
      std::memcpy(&bits, &y, sizeof bits);
      if (lo != 0 && !(bits & 1)) {  // inexact and even: the odd neighbour on the sum's side
        bits += (lo > 0) == (y > 0) ? 1 : ~uint64_t(0);
        std::memcpy(&y, &bits, sizeof y);
      }
    }
    return float(y);
  }

  static void put(T *p, const H &f, bool finite) {
    if constexpr (sizeof(T) == 4)
      S::store_h(p, f);
    else if constexpr (kBF16) {
      if (finite)
        S::store_h_bf16_finite(p, f);
      else
        S::store_h_bf16(p, f);
    } else
      S::store_h_f16(p, f);
  }

  // W results y = x c + p s of one vector into o: the fused rounding, or lane() where it is not enough. first:
  // the lanes whose element is its pair's first (u).
  [[gnu::always_inline]] static inline void vec(const D &x, const D &p, const D &c, const D &s, T *o,
                                                const bool *first) {
    const D y = S::fma(x, c, p * s);
    if (__builtin_expect(!S::any_nan_d(y, y) && !S::any_f32_tie(y), 1)) return put(o, S::narrow(y), true);
    slow(x, p, c, s, o, first);
  }
  [[gnu::noinline, gnu::cold]] static void slow(const D &x, const D &p, const D &c, const D &s, T *o,
                                                const bool *first) {
    alignas(64) double xa[W], pa[W], ca[W], sa[W];
    alignas(64) float f[W];
    S::store(xa, x);
    S::store(pa, p);
    S::store(ca, c);
    S::store(sa, s);
    for (int l = 0; l < W; ++l) f[l] = lane(xa[l], pa[l], ca[l], sa[l], first[l]);
    put(o, S::load_h(f), false);
  }

  static D wide(const T *p) { return S::widen(R::load_t(p)); }
  static D wide_f(const float *p) { return S::widen(S::load_h(p)); }

  // W pairs of the halves form (u at us, v at vs; tables cu su at u's elements, cv sv at v's), both vectors
  // read before either is written (in place: ud = us, vd = vs).
  [[gnu::always_inline]] static inline void pairs(const T *us, const T *vs, const float *cu, const float *su,
                                                  const float *cv, const float *sv, T *ud, T *vd) {
    alignas(64) bool yes[W], no[W];
    for (int l = 0; l < W; ++l) {
      yes[l] = true;
      no[l] = false;
    }
    const D u = wide(us), v = wide(vs);           // both in registers before anything is written
    vec(u, v, wide_f(cu), -wide_f(su), ud, yes);  // u c - v s
    vec(v, u, wide_f(cv), wide_f(sv), vd, no);    // v c + u s
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

  // One head row, interleaved: pair i is elements 2i and 2i + 1. A vector of W elements holds W/2 pairs,
  // x' = swap(x) with the signs -, +, -, + ... on s.
  static void row_interleaved(const T *src, T *dst, const float *c, const float *s, int64_t d) {
    if constexpr (W == 1) {
      for (int64_t e = 0; e < d; e += 2)
        pairs(src + e, src + e + 1, c + e, s + e, c + e + 1, s + e + 1, dst + e, dst + e + 1);
    } else {
      alignas(64) double sg[W];
      alignas(64) bool first[W];
      for (int l = 0; l < W; ++l) {
        sg[l] = l % 2 ? 1.0 : -1.0;
        first[l] = l % 2 == 0;
      }
      const D sign = S::load(sg);
      const int64_t full = d / W * W;
      for (int64_t e = 0; e < full; e += W) {
        const D x = wide(src + e);
        vec(x, S::swap_pairs(x), wide_f(c + e), wide_f(s + e) * sign, dst + e, first);
      }
      if (full < d) {  // m = d - full elements, an even count: whole pairs
        const int64_t m = d - full;
        alignas(64) T xt[W] = {}, ot[W];
        alignas(64) float ct[W] = {}, st[W] = {};
        std::memcpy(xt, src + full, sizeof(T) * size_t(m));
        std::memcpy(ct, c + full, sizeof(float) * size_t(m));
        std::memcpy(st, s + full, sizeof(float) * size_t(m));
        const D x = wide(xt);
        vec(x, S::swap_pairs(x), wide_f(ct), wide_f(st) * sign, ot, first);
        std::memcpy(dst + full, ot, sizeof(T) * size_t(m));
      }
    }
  }

  // Every head row of tensor 0 of every token of the job (src rows read, x rows written; in place: the same).
  static void run(const detail::RopeJob &job) {
    const detail::RopeTensor &t = job.t[0];
    const int64_t h = job.h;
    const bool halves = job.pairs == POSENC_ROPE_HALVES;
    for (int64_t tok = 0; tok < job.n; ++tok) {
      const float *c = job.cos_in + tok * job.cos_in_stride, *s = job.sin_in + tok * job.sin_in_stride;
      const T *src = static_cast<const T *>(t.src) + tok * t.src_token_stride;
      T *dst = static_cast<T *>(t.x) + tok * t.token_stride;
      for (int64_t hd = 0; hd < t.heads; ++hd) {
        if (halves)
          row_halves(src + hd * t.src_head_stride, dst + hd * t.head_stride, c, s, h);
        else
          row_interleaved(src + hd * t.src_head_stride, dst + hd * t.head_stride, c, s, 2 * h);
      }
    }
  }
};

}  // namespace posenc
