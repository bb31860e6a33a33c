// AArch64 Advanced SIMD specialisation of the kernel interface (W = 2 pairs: float64x2 / float32x4).
// Included only by isa_neon.cpp.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <xsimd/xsimd.hpp>

#include "simd/fast_check.hpp"

namespace posenc {

template <class A>
struct Simd;

template <>
struct Simd<xsimd::neon64> {
  using A = xsimd::neon64;
  using D = xsimd::batch<double, A>;
  using F = xsimd::batch<float, A>;
  using H = float32x2_t;
  static constexpr int W = 2;

  static constexpr bool kCanStream = false;  // no non-temporal vector store worth using here
  // values_rows.hpp, quad_pass: not measurable here (qemu), so the row-by-row form that AVX2 uses
  static constexpr bool kQuadPass = false;
  static void stream_copy(float *dst, const float *src, int64_t n) { std::memcpy(dst, src, sizeof(float) * size_t(n)); }
  static void stream_f(float *p, const F &v) { store_f(p, v); }
  static void stream_h(float *p, H v) { vst1_f32(p, v); }
  static void store_fence() {}
  static D set(double x) { return D(x); }
  static D load(const double *p) { return D::load_aligned(p); }
  static void store(double *p, const D &v) { v.store_aligned(p); }
  static void pin(D &v) { asm("" : "+w"(v.data)); }                                              // as in simd_xsimd.hpp
  static D fma(const D &a, const D &b, const D &c) { return D(vfmaq_f64(c, a, b)); }             // fused, always
  static D fms(const D &a, const D &b, const D &c) { return D(vnegq_f64(vfmsq_f64(c, a, b))); }  // -(c - ab)
  static D fnma(const D &a, const D &b, const D &c) { return D(vfmsq_f64(c, a, b)); }            // c - ab, fused
  static D abs(const D &a) { return xsimd::abs(a); }
  static D min(const D &a, const D &b) { return xsimd::min(a, b); }
  // As in simd_scalar.hpp: y = n + 1.5 2^52; bit 0 of its encoding swaps, bit 1 (of n, of n + 1) negates.
  static void quadrant(const D &y, const D &sn, const D &cs, D &s, D &c) {
    const uint64x2_t k = vreinterpretq_u64_f64(y);
    const uint64x2_t odd = vtstq_u64(k, vdupq_n_u64(1));
    const uint64x2_t sign = vdupq_n_u64(0x8000000000000000u);
    const uint64x2_t fs = vandq_u64(vshlq_n_u64(k, 62), sign);
    const uint64x2_t fc = vandq_u64(vshlq_n_u64(vaddq_u64(k, vdupq_n_u64(1)), 62), sign);
    const float64x2_t s0 = vbslq_f64(odd, cs, sn), c0 = vbslq_f64(odd, sn, cs);
    s = D(vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(s0), fs)));
    c = D(vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(c0), fc)));
  }
  static F splat(float x) { return F(x); }
  static F fmaf(const F &a, const F &x, const F &y) { return F(vfmaq_f32(y, a, x)); }
  static bool any_nan(const F &v) {  // FMAXV returns a NaN when any lane is one (fmaxv, fcmp, branch)
    const float m = vmaxvq_f32(v);
    return m != m;
  }
  static F load_f(const float *p) { return F::load_unaligned(p); }
  static void store_f(float *p, const F &v) { v.store_unaligned(p); }

  static F narrow2(const D &s, const D &c) { return F(vcvt_high_f32_f64(vcvt_f32_f64(s), c)); }
  static bool same_bits(const F &a, const F &b) {
    return vmaxvq_u32(veorq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b))) == 0;
  }
  static F zip(const F &v) {  // s0 s1 c0 c1 -> s0 c0 s1 c1
    const float32x4_t x = v;
    return F(vzip1q_f32(x, vextq_f32(x, x, 2)));
  }
  // The acceptance test's constants, made once per loop and pinned in registers (as simd_avx2.hpp does):
  // left to GCC, they were loaded from the literal pool again for every vector in the larger loops.
  struct Consts {
    uint32x4_t bias, mask;
    float32x4_t smallest;  // 2^-12
  };
  static Consts consts() {
    return {vdupq_n_u32(uint32_t(fast_check::kBias32)), vdupq_n_u32(uint32_t(fast_check::kMask32)),
            vdupq_n_f32(0x1p-12f)};
  }
  static void pin_consts(Consts &k) { asm("" : "+w"(k.bias), "+w"(k.mask), "+w"(k.smallest)); }
  // s0 c0 s1 c1: each pair narrowed into the low half of a register, then one zip (fcvtn, fcvtn, zip1: three
  // instructions, where narrow2 and zip take four). In asm because GCC clears the upper halves of the
  // intrinsics' 64-bit results with two more moves before the zip, which reads only the lower ones.
  static F narrow2_zip(const D &s, const D &c, const Consts & = consts()) {
    float32x4_t fs, fc;
    asm("fcvtn %0.2s, %1.2d" : "=w"(fs) : "w"(s.data));
    asm("fcvtn %0.2s, %1.2d" : "=w"(fc) : "w"(c.data));
    return F(vzip1q_f32(fs, fc));
  }
  // The acceptance test of fast_check.hpp on all four values at once: the doubles' low 32 bits gathered into
  // one vector (uzp1), the window by one add and one bit test on them (fast_check says why 32 bits suffice),
  // the small-value half as |f| > 2^-12 by one absolute compare (FACGT, in asm: GCC splits vcagtq_f32 with a
  // positive constant into fabs and fcmgt; a NaN, which no table value is, would be rejected, never
  // accepted). Seven instructions and the branch, where lane-by-lane 64-bit tests took 13.
  static bool decided(const D &s, const D &c, const F &f, const Consts &k = consts()) {
    const uint32x4_t lo = vuzp1q_u32(vreinterpretq_u32_f64(s), vreinterpretq_u32_f64(c));
    const uint32x4_t outside = vtstq_u32(vaddq_u32(lo, k.bias), k.mask);
    uint32x4_t big;
    asm("facgt %0.4s, %1.4s, %2.4s" : "=w"(big) : "w"(f.data), "w"(k.smallest));
    return vminvq_u32(vandq_u32(outside, big)) != 0;
  }
  static F combine(H lo, H hi) { return F(vcombine_f32(lo, hi)); }
  static H lo(const F &v) { return vget_low_f32(v); }
  static H hi(const F &v) { return vget_high_f32(v); }

  // ---- the rotary apply (sink_rope.hpp): W floats to and from W doubles ----
  static F mulf(const F &a, const F &b) { return F(vmulq_f32(a, b)); }
  static D widen(H h) { return D(vcvt_f64_f32(h)); }
  static D swap_pairs(const D &v) { return D(vextq_f64(v, v, 1)); }  // x0 y0 -> y0 x0
  static H narrow(const D &d) { return vcvt_f32_f64(d); }
  static H narrow_odd(const D &d) { return vcvtx_f32_f64(d); }  // FCVTXN: round to odd (simd_scalar.hpp)
  static bool any_nan_d(const D &a, const D &b) {
    const uint64x2_t ok = vandq_u64(vceqq_f64(a, a), vceqq_f64(b, b));
    return vminvq_u32(vreinterpretq_u32_u64(ok)) == 0;
  }
  static H narrow_sum(const D &y, const D &lo) {  // simd_scalar.hpp
    const float64x2_t yd = y, l = lo;
    const uint64x2_t b = vreinterpretq_u64_f64(yd);
    const uint64x2_t inexact = vcltq_f64(vdupq_n_f64(0.0), vabsq_f64(l));  // false for NaN
    const uint64x2_t even = vceqq_u64(vandq_u64(b, vdupq_n_u64(1)), vdupq_n_u64(0));
    const int64x2_t differ = vshrq_n_s64(vreinterpretq_s64_u64(veorq_u64(b, vreinterpretq_u64_f64(l))), 63);
    const int64x2_t step = vorrq_s64(vshlq_n_s64(differ, 1), vdupq_n_s64(1));
    const uint64x2_t r = vaddq_u64(b, vandq_u64(vreinterpretq_u64_s64(step), vandq_u64(inexact, even)));
    return vcvt_f32_f64(vreinterpretq_f64_u64(r));
  }
  static bool any_f32_tie(const D &v) {  // simd_scalar.hpp
    const float64x2_t d = v;
    const uint64x2_t low = vandq_u64(vreinterpretq_u64_f64(d), vdupq_n_u64(0x1FFFFFFF));
    const uint64x2_t tie = vceqq_u64(low, vdupq_n_u64(0x10000000));
    const float64x2_t a = vabsq_f64(d);
    const uint64x2_t tiny = vandq_u64(vcltq_f64(a, vdupq_n_f64(0x1p-126)), vcgtq_f64(a, vdupq_n_f64(0.0)));
    return vmaxvq_u32(vreinterpretq_u32_u64(vorrq_u64(tie, tiny))) != 0;
  }
  static bool any_bf16_tie(H f) {  // simd_scalar.hpp
    const uint32x2_t low = vand_u32(vreinterpret_u32_f32(f), vdup_n_u32(0xFFFF));
    return vmaxv_u32(vceq_u32(low, vdup_n_u32(0x8000))) != 0;
  }
  static void store_h_bf16_finite(uint16_t *p, H v) { store_h_bf16(p, v); }

  // ---- the rotary apply, eight pairs a step (sink_rope.hpp: rotate_halves and rotate_interleaved take this
  // form wherever S has kRotate8). The contract's two roundings as in the W-pair loop: x c and y s exact in
  // double, one fused rounding of each sum, then one to T (to nearest for float32; to odd for the 16-bit
  // formats, then to nearest-even there, simd_scalar.hpp). What makes it cheaper than four W-pair steps:
  // whole 128-bit loads and stores of the rows (ld2 / st2 split and merge interleaved pairs), the 16-bit rows
  // widened and narrowed by vector instructions (shll, fcvtl, fcvtxn, addhn) instead of through the stack,
  // and one NaN test (a float max chain and one reduction) for all eight pairs. A step whose results hold a
  // NaN stores nothing and returns false: the caller redoes its pairs by the NaN rule. (The hardware's own
  // NaN is not that rule: at position 0, x = inf and a NaN y, the fused operation returns the default NaN of
  // inf * 0 where the rule wants y's payload; test_rope's NaN case fails without the test.)
  static constexpr bool kRotate8 = true;

  // 8 values of T as two float32x4 (exact: bf16 and f16 widen exactly)
  template <class T, bool kBF16>
  [[gnu::always_inline]] static inline void widen8(const T *p, float32x4_t &a, float32x4_t &b) {
    if constexpr (sizeof(T) == 4) {
      a = vld1q_f32(p);
      b = vld1q_f32(p + 4);
    } else {
      widen8_16<kBF16>(vld1q_u16(p), a, b);
    }
  }
  template <bool kBF16>
  [[gnu::always_inline]] static inline void widen8_16(uint16x8_t v, float32x4_t &a, float32x4_t &b) {
    if constexpr (kBF16) {
      a = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16));
      b = vreinterpretq_f32_u32(vshll_high_n_u16(v, 16));
    } else {
      const float16x8_t h = vreinterpretq_f16_u16(v);
      a = vcvt_f32_f16(vget_low_f16(h));
      b = vcvt_high_f32_f16(h);
    }
  }
  // two float32x4 (rounded to odd from the double) -> 8 values of the 16-bit format, to nearest-even
  template <bool kBF16>
  [[gnu::always_inline]] static inline uint16x8_t narrow8_16(float32x4_t a, float32x4_t b) {
    if constexpr (kBF16) {  // (bits + 0x7FFF + bit 16) >> 16, as store_h_bf16 for a value that is no NaN:
      // bit 16 moved to the top and added back shifted down (shl, usra), the rest by one add-high-narrow
      const uint32x4_t half = vdupq_n_u32(0x7FFF);
      const uint32x4_t ua = vreinterpretq_u32_f32(a), ub = vreinterpretq_u32_f32(b);
      const uint32x4_t ta = vsraq_n_u32(ua, vshlq_n_u32(ua, 15), 31), tb = vsraq_n_u32(ub, vshlq_n_u32(ub, 15), 31);
      return vaddhn_high_u32(vaddhn_u32(ta, half), tb, half);
    } else {
      return vreinterpretq_u16_f16(vcvt_high_f16_f32(vcvt_f16_f32(a), b));
    }
  }

  // The c and s of eight pairs, float32 in the stage, as the block of doubles the steps read: c0..c7 s0..s7.
  [[gnu::always_inline]] static inline void stage8(const float *c, const float *s, double *cs) {
    const float32x4_t c0 = vld1q_f32(c), c1 = vld1q_f32(c + 4), s0 = vld1q_f32(s), s1 = vld1q_f32(s + 4);
    vst1q_f64(cs, vcvt_f64_f32(vget_low_f32(c0)));
    vst1q_f64(cs + 2, vcvt_high_f64_f32(c0));
    vst1q_f64(cs + 4, vcvt_f64_f32(vget_low_f32(c1)));
    vst1q_f64(cs + 6, vcvt_high_f64_f32(c1));
    vst1q_f64(cs + 8, vcvt_f64_f32(vget_low_f32(s0)));
    vst1q_f64(cs + 10, vcvt_high_f64_f32(s0));
    vst1q_f64(cs + 12, vcvt_f64_f32(vget_low_f32(s1)));
    vst1q_f64(cs + 14, vcvt_high_f64_f32(s1));
  }

  // The eight rotations: x[0] holds the x of pairs 0..3, x[1] of pairs 4..7 (y likewise), c and s the pairs'
  // doubles. xo, yo: the results rounded to float32, to nearest (kOdd false) or to odd. False when any is NaN.
  template <bool kOdd>
  [[gnu::always_inline]] static inline bool rotate8(const float32x4_t (&x)[2], const float32x4_t (&y)[2],
                                                    const double *c, const double *s, float32x4_t (&xo)[2],
                                                    float32x4_t (&yo)[2]) {
    float64x2_t xn[4], yn[4];
    for (int h = 0; h < 2; ++h) {
      const float64x2_t xd[2] = {vcvt_f64_f32(vget_low_f32(x[h])), vcvt_high_f64_f32(x[h])};
      const float64x2_t yd[2] = {vcvt_f64_f32(vget_low_f32(y[h])), vcvt_high_f64_f32(y[h])};
      for (int l = 0; l < 2; ++l) {
        const float64x2_t cv = vld1q_f64(c + 4 * h + 2 * l), sv = vld1q_f64(s + 4 * h + 2 * l);
        xn[2 * h + l] = vfmsq_f64(vmulq_f64(xd[l], cv), yd[l], sv);  // x c + (-(y s)), as fnma in rotate_halves
        yn[2 * h + l] = vfmaq_f64(vmulq_f64(xd[l], sv), yd[l], cv);  // y c + x s
      }
    }
    for (int h = 0; h < 2; ++h) {
      if constexpr (kOdd) {
        xo[h] = vcvtx_high_f32_f64(vcvtx_f32_f64(xn[2 * h]), xn[2 * h + 1]);
        yo[h] = vcvtx_high_f32_f64(vcvtx_f32_f64(yn[2 * h]), yn[2 * h + 1]);
      } else {
        xo[h] = vcvt_high_f32_f64(vcvt_f32_f64(xn[2 * h]), xn[2 * h + 1]);
        yo[h] = vcvt_high_f32_f64(vcvt_f32_f64(yn[2 * h]), yn[2 * h + 1]);
      }
    }
    // FMAX and FMAXV return a NaN when any operand is one (FMAXNM would not); every result rounds from its
    // double, and the narrowing keeps NaNs, so this sees every NaN result
    const float m = vmaxvq_f32(vmaxq_f32(vmaxq_f32(xo[0], xo[1]), vmaxq_f32(yo[0], yo[1])));
    return m == m;
  }

  // Eight pairs of the halves form: x read at xs[0..7], y at ys[0..7], written to xr, yr (in place: the same).
  template <class T, bool kBF16>
  [[gnu::always_inline]] static inline bool rotate8_halves(const T *xs, const T *ys, T *xr, T *yr, const double *c,
                                                           const double *s) {
    float32x4_t x[2], y[2], xo[2], yo[2];
    widen8<T, kBF16>(xs, x[0], x[1]);
    widen8<T, kBF16>(ys, y[0], y[1]);
    if (__builtin_expect(!rotate8<sizeof(T) == 2>(x, y, c, s, xo, yo), 0)) return false;
    if constexpr (sizeof(T) == 4) {
      vst1q_f32(xr, xo[0]);
      vst1q_f32(xr + 4, xo[1]);
      vst1q_f32(yr, yo[0]);
      vst1q_f32(yr + 4, yo[1]);
    } else {
      vst1q_u16(xr, narrow8_16<kBF16>(xo[0], xo[1]));
      vst1q_u16(yr, narrow8_16<kBF16>(yo[0], yo[1]));
    }
    return true;
  }

  // Eight interleaved pairs x0 y0 x1 y1 ... read at ps[0..15], written to p[0..15] (in place: the same).
  template <class T, bool kBF16>
  [[gnu::always_inline]] static inline bool rotate8_interleaved(const T *ps, T *p, const double *c, const double *s) {
    float32x4_t x[2], y[2], xo[2], yo[2];
    if constexpr (sizeof(T) == 4) {
      const float32x4x2_t a = vld2q_f32(ps), b = vld2q_f32(ps + 8);
      x[0] = a.val[0], y[0] = a.val[1], x[1] = b.val[0], y[1] = b.val[1];
    } else {
      const uint16x8x2_t v = vld2q_u16(ps);
      widen8_16<kBF16>(v.val[0], x[0], x[1]);
      widen8_16<kBF16>(v.val[1], y[0], y[1]);
    }
    if (__builtin_expect(!rotate8<sizeof(T) == 2>(x, y, c, s, xo, yo), 0)) return false;
    if constexpr (sizeof(T) == 4) {
      vst2q_f32(p, float32x4x2_t{{xo[0], yo[0]}});
      vst2q_f32(p + 8, float32x4x2_t{{xo[1], yo[1]}});
    } else {
      vst2q_u16(p, uint16x8x2_t{{narrow8_16<kBF16>(xo[0], xo[1]), narrow8_16<kBF16>(yo[0], yo[1])}});
    }
    return true;
  }

  static H load_h(const float *p) { return vld1_f32(p); }
  static void store_h(float *p, H v) { vst1_f32(p, v); }
  static H load_h_bf16(const uint16_t *p) {
    uint32_t w[2] = {uint32_t(p[0]) << 16, uint32_t(p[1]) << 16};
    return vreinterpret_f32_u32(vld1_u32(w));
  }
  static void store_h_bf16(uint16_t *p, H v) {
    const uint32x2_t b = vreinterpret_u32_f32(v);
    const uint32x2_t lsb = vand_u32(vshr_n_u32(b, 16), vdup_n_u32(1));
    uint32x2_t r = vshr_n_u32(vadd_u32(b, vadd_u32(lsb, vdup_n_u32(0x7FFF))), 16);
    const uint32x2_t nan = vcgt_u32(vand_u32(b, vdup_n_u32(0x7FFFFFFF)), vdup_n_u32(0x7F800000));
    r = vbsl_u32(nan, vorr_u32(vshr_n_u32(b, 16), vdup_n_u32(0x40)), r);
    p[0] = uint16_t(vget_lane_u32(r, 0));
    p[1] = uint16_t(vget_lane_u32(r, 1));
  }
  // Four 16-bit values, two at a and two at b, as one uint16x4: one 8-byte load where b follows a (the
  // interleaved rows; lanes.hpp's load2 passes a + W, which GCC sees once inlined), else two 4-byte ones.
  static uint16x4_t load4_16(const uint16_t *a, const uint16_t *b) {
    if (__builtin_constant_p(b == a + W) && b == a + W) return vld1_u16(a);
    uint32_t wa, wb;
    std::memcpy(&wa, a, sizeof wa);
    std::memcpy(&wb, b, sizeof wb);
    return vreinterpret_u16_u32(vset_lane_u32(wb, vdup_n_u32(wa), 1));
  }
  static void store4_16(uint16_t *a, uint16_t *b, uint16x4_t r) {
    if (__builtin_constant_p(b == a + W) && b == a + W) return vst1_u16(a, r);
    const uint32x2_t w = vreinterpret_u32_u16(r);
    const uint32_t wa = vget_lane_u32(w, 0), wb = vget_lane_u32(w, 1);
    std::memcpy(a, &wa, sizeof wa);
    std::memcpy(b, &wb, sizeof wb);
  }
  // Widened exactly by one shift (bf16) or one conversion (f16) of all four lanes.
  static F load2_bf16(const uint16_t *a, const uint16_t *b) {
    return F(vreinterpretq_f32_u32(vshll_n_u16(load4_16(a, b), 16)));
  }
  static F load2_f16(const uint16_t *a, const uint16_t *b) {
    return F(vcvt_f32_f16(vreinterpret_f16_u16(load4_16(a, b))));
  }
  // Nearest-even bf16 of four floats, (bits + 0x7FFF + bit 16) >> 16 as in store_h_bf16 (shl, usra and one
  // add-high-narrow); a vector holding a NaN (FMAXV returns one then; no table value is NaN) takes
  // store_h_bf16's quieting form.
  static void store2_bf16(uint16_t *a, uint16_t *b, const F &v) {
    const float m = vmaxvq_f32(v);
    if (__builtin_expect(m != m, 0)) {
      store_h_bf16(a, lo(v));
      store_h_bf16(b, hi(v));
      return;
    }
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    store4_16(a, b, vaddhn_u32(vsraq_n_u32(u, vshlq_n_u32(u, 15), 31), vdupq_n_u32(0x7FFF)));
  }
  static void store2_f16(uint16_t *a, uint16_t *b, const F &v) {
    store4_16(a, b, vreinterpret_u16_f16(vcvt_f16_f32(v)));
  }
  static H load_h_f16(const uint16_t *p) {
    uint16_t w[4] = {p[0], p[1], 0, 0};
    return vget_low_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(w))));
  }
  static void store_h_f16(uint16_t *p, H v) {
    const uint16x4_t r = vreinterpret_u16_f16(vcvt_f16_f32(vcombine_f32(v, v)));
    p[0] = vget_lane_u16(r, 0);
    p[1] = vget_lane_u16(r, 1);
  }
};

}  // namespace posenc
