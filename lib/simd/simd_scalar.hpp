// The scalar "vector": one pair per step. Same interface as simd_avx2.hpp, simd_avx512.hpp and simd_neon.hpp, so that
// kernel.hpp is written once. Included only by isa_scalar.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "simd/fast_check.hpp"

namespace posenc {

struct scalar_arch {};  // the tag of the scalar path

template <class A>
struct Simd;

template <>
struct Simd<scalar_arch> {
  using D = double;  // W doubles: one per pair
  struct F {         // 2W floats: the sin lanes, then the cos lanes
    float v[2];
  };
  using H = float;  // W floats
  static constexpr int W = 1;

  static constexpr bool kCanStream = false;  // one float at a time: nothing to gain
  static constexpr bool kQuadPass = false;   // values_rows.hpp, quad_pass: the row-by-row form is simpler
  static void stream_copy(float *dst, const float *src, int64_t n) { std::memcpy(dst, src, sizeof(float) * size_t(n)); }
  static void stream_f(float *p, const F &v) { store_f(p, v); }
  static void stream_h(float *p, H v) { *p = v; }
  static void store_fence() {}
  static D set(double x) { return x; }
  static D load(const double *p) { return *p; }
  static void store(double *p, D v) { *p = v; }
  static void pin(D &) {}  // simd_xsimd.hpp's reason does not apply to scalar loads
  static D fma(D a, D b, D c) { return std::fma(a, b, c); }
  static D fms(D a, D b, D c) { return std::fma(a, b, -c); }
  static D fnma(D a, D b, D c) { return std::fma(-a, b, c); }
  static D abs(D a) { return std::fabs(a); }
  static D min(D a, D b) { return b < a ? b : a; }
  // (sin, cos) of n quarter turns plus a reduced angle whose sin and cos are sn and cs, where y = n + 1.5 2^52
  // (so the low bits of y's encoding are n mod 2^51, two's complement): bit 0 swaps sin and cos, bit 1
  // negates the sin, bit 1 of n + 1 negates the cos.
  static void quadrant(D y, D sn, D cs, D &s, D &c) {
    uint64_t k;
    std::memcpy(&k, &y, sizeof k);
    const bool odd = (k & 1) != 0;
    uint64_t sb, cb;
    const double s0 = odd ? cs : sn, c0 = odd ? sn : cs;
    std::memcpy(&sb, &s0, sizeof sb);
    std::memcpy(&cb, &c0, sizeof cb);
    sb ^= (k << 62) & 0x8000000000000000u;
    cb ^= ((k + 1) << 62) & 0x8000000000000000u;
    std::memcpy(&s, &sb, sizeof sb);
    std::memcpy(&c, &cb, sizeof cb);
  }

  static F narrow2(D s, D c) { return F{{float(s), float(c)}}; }
  static bool same_bits(const F &a, const F &b) { return std::memcmp(a.v, b.v, sizeof a.v) == 0; }
  static F zip(const F &v) { return v; }
  struct Consts {};  // simd_avx2.hpp
  static Consts consts() { return {}; }
  static void pin_consts(Consts &) {}
  static F narrow2_zip(D s, D c, const Consts & = {}) { return narrow2(s, c); }
  // The rotation path's acceptance test (fast_check.hpp): true when both values round safely.
  static bool near_midpoint(D y) {
    int64_t b;
    std::memcpy(&b, &y, sizeof b);
    return ((uint64_t(b) + uint64_t(fast_check::kBias)) & uint64_t(fast_check::kMask)) == 0;
  }
  static bool small(float x) {
    uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    return (b & 0x7FFFFFFFu) < fast_check::kSmallestBits;
  }
  static bool decided(D s, D c, const F &f, const Consts & = {}) {
    return !near_midpoint(s) && !near_midpoint(c) && !small(f.v[0]) && !small(f.v[1]);
  }
  static F combine(H lo, H hi) { return F{{lo, hi}}; }
  static H lo(const F &v) { return v.v[0]; }
  static H hi(const F &v) { return v.v[1]; }
  static F splat(float x) { return F{{x, x}}; }
  static F fmaf(const F &a, const F &x, const F &y) {
    return F{{std::fmaf(a.v[0], x.v[0], y.v[0]), std::fmaf(a.v[1], x.v[1], y.v[1])}};
  }
  static bool any_nan(const F &v) { return v.v[0] != v.v[0] || v.v[1] != v.v[1]; }
  static F load_f(const float *p) { return F{{p[0], p[1]}}; }
  static void store_f(float *p, const F &v) {
    p[0] = v.v[0];
    p[1] = v.v[1];
  }

  // ---- the rotary apply (sink_rope.hpp): W floats to and from W doubles ----
  static F mulf(const F &a, const F &b) { return F{{a.v[0] * b.v[0], a.v[1] * b.v[1]}}; }
  static D widen(H h) { return double(h); }
  static H narrow(D d) { return float(d); }
  // Round to odd: the float below or above d whose last bit is 1, unless d is a float. Rounding that to
  // nearest-even in bf16 or f16 equals rounding d there directly (both have at least 2 bits fewer).
  static H narrow_odd(D d) {
    const float f = float(d);
    if (!(double(f) != d) || d != d) return f;  // exact, or NaN
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    if ((b & 1) == 0) b = std::fabs(double(f)) < std::fabs(d) ? b + 1 : b - 1;
    float r;
    std::memcpy(&r, &b, sizeof r);
    return r;
  }
  static bool any_nan_d(D a, D b) { return a != a || b != b; }
  // The nearest float of y + lo, y = RN64(y + lo) (lo a TwoSum error, NaN where y is infinite): y rounded to
  // odd first (moved one step towards lo where lo is not zero and y is even), whose nearest float is that of the
  // exact sum, 53 bits being at least 24 + 2 (tables_rotate.hpp).
  static H narrow_sum(D y, D lo) {
    uint64_t b;
    std::memcpy(&b, &y, sizeof b);
    if (std::fabs(lo) > 0 && !(b & 1)) {  // false for a NaN lo
      b += (std::signbit(y) == std::signbit(lo)) ? 1 : ~uint64_t(0);
      std::memcpy(&y, &b, sizeof y);
    }
    return float(y);
  }
  // Whether a double may be a float32 midpoint, whose nearest float depends on what its rounding dropped
  // (tables_rotate.hpp): low 29 bits 0x10000000 (halfway between two floats of the normal range), or not zero
  // and below 2^-126, where the floats are subnormal and their midpoints have more zero bits.
  static bool any_f32_tie(D v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return (b & 0x1FFFFFFFu) == 0x10000000u || (v != 0 && std::fabs(v) < 0x1p-126);
  }
  // Whether the float's low 16 bits are 0x8000: a bfloat16 midpoint (sink_rope.hpp).
  static bool any_bf16_tie(H f) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return (b & 0xFFFFu) == 0x8000u;
  }
  static void store_h_bf16_finite(uint16_t *p, H v) { store_h_bf16(p, v); }

  // W-element conversions. bfloat16 and binary16 are rounded to nearest-even in integer arithmetic,
  // the same rule as the hardware conversions of the other paths.
  static H load_h(const float *p) { return *p; }
  static void store_h(float *p, H v) { *p = v; }
  static H load_h_bf16(const uint16_t *p) {
    const uint32_t b = uint32_t(*p) << 16;
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  static void store_h_bf16(uint16_t *p, H v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
      *p = uint16_t((b >> 16) | 0x40);  // NaN stays a quiet NaN
      return;
    }
    *p = uint16_t((b + 0x7FFFu + ((b >> 16) & 1)) >> 16);
  }
  static F load2_bf16(const uint16_t *a, const uint16_t *b) { return combine(load_h_bf16(a), load_h_bf16(b)); }
  static F load2_f16(const uint16_t *a, const uint16_t *b) { return combine(load_h_f16(a), load_h_f16(b)); }
  static void store2_bf16(uint16_t *a, uint16_t *b, const F &v) {
    store_h_bf16(a, v.v[0]);
    store_h_bf16(b, v.v[1]);
  }
  static void store2_f16(uint16_t *a, uint16_t *b, const F &v) {
    store_h_f16(a, v.v[0]);
    store_h_f16(b, v.v[1]);
  }
  static H load_h_f16(const uint16_t *p) {
    const uint32_t h = *p;
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    uint32_t b;
    if (e == 0x1F) {
      b = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
      b = sign | ((e + 112) << 23) | (m << 13);
    } else if (m == 0) {
      b = sign;
    } else {  // subnormal half: normalise
      int sh = 0;
      uint32_t mm = m;
      while ((mm & 0x400) == 0) {
        mm <<= 1;
        ++sh;
      }
      b = sign | uint32_t(113 - sh) << 23 | ((mm & 0x3FF) << 13);
    }
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  static void store_h_f16(uint16_t *p, H v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    const uint16_t sign = uint16_t((b >> 16) & 0x8000u);
    const uint32_t a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) {  // NaN: quiet, top payload bits kept
      *p = uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FF));
      return;
    }
    if (a >= 0x477FF000u) {  // rounds to 65520 or more: infinity
      *p = uint16_t(sign | 0x7C00u);
      return;
    }
    if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), quantum 2^-24
      const int e = int(a >> 23);
      if (e < 102) {  // below 2^-25: rounds to zero (2^-25 itself is the tie, to even: zero)
        *p = sign;
        return;
      }
      const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;  // value = m 2^(e - 150)
      const int shift = 126 - e;                       // to units of 2^-24
      const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
      const uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
      *p = uint16_t(sign | r);
      return;
    }
    // normal: rebias the exponent and round the 13 dropped bits to nearest-even
    const uint32_t r = a + 0x0FFFu + ((a >> 13) & 1) - (uint32_t(112) << 23);
    *p = uint16_t(sign | (r >> 13));
  }
};

}  // namespace posenc
