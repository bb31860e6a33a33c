// AArch64 Advanced SIMD specialisation of the kernel interface (W = 2 pairs: float64x2 / float32x4).
// Included only by isa_neon.cpp.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <xsimd/xsimd.hpp>

#include "fast_check.hpp"

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
  // kernel.hpp, quad_pass: not measurable here (qemu), so the row-by-row form that AVX2 uses
  static constexpr bool kQuadPass = false;
  static void stream_copy(float *dst, const float *src, int64_t n) { std::memcpy(dst, src, sizeof(float) * size_t(n)); }
  static void stream_f(float *p, const F &v) { store_f(p, v); }
  static void stream_h(float *p, H v) { vst1_f32(p, v); }
  static void store_fence() {}
  static D set(double x) { return D(x); }
  static D load(const double *p) { return D::load_aligned(p); }
  static void store(double *p, const D &v) { v.store_aligned(p); }
  static void pin(D &v) { asm("" : "+w"(v.data)); }  // as in simd_x86.hpp
  static D fma(const D &a, const D &b, const D &c) { return D(vfmaq_f64(c, a, b)); }  // fused, always
  static D fms(const D &a, const D &b, const D &c) { return D(vnegq_f64(vfmsq_f64(c, a, b))); }  // -(c - ab)
  static D fnma(const D &a, const D &b, const D &c) { return D(vfmsq_f64(c, a, b)); }  // c - ab, fused
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
  static bool any_nan(const F &v) { return vminvq_u32(vceqq_f32(v, v)) == 0; }
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
  struct Consts {};  // simd_x86.hpp: no loop constant here that is not a broadcast
  static Consts consts() { return {}; }
  static void pin_consts(Consts &) {}
  static F narrow2_zip(const D &s, const D &c, const Consts & = {}) { return zip(narrow2(s, c)); }
  static bool decided(const D &s, const D &c, const F &f, const Consts & = {}) {
    const uint64x2_t bias = vdupq_n_u64(uint64_t(fast_check::kBias)), mask = vdupq_n_u64(uint64_t(fast_check::kMask));
    const uint64x2_t ms = vceqzq_u64(vandq_u64(vaddq_u64(vreinterpretq_u64_f64(s), bias), mask));
    const uint64x2_t mc = vceqzq_u64(vandq_u64(vaddq_u64(vreinterpretq_u64_f64(c), bias), mask));
    const uint32x4_t mag = vandq_u32(vreinterpretq_u32_f32(f), vdupq_n_u32(0x7FFFFFFFu));
    const uint32x4_t small = vcltq_u32(mag, vdupq_n_u32(fast_check::kSmallestBits));
    return vmaxvq_u32(vorrq_u32(vreinterpretq_u32_u64(vorrq_u64(ms, mc)), small)) == 0;
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
  static bool any_bf16_tie(H f) {  // simd_scalar.hpp
    const uint32x2_t low = vand_u32(vreinterpret_u32_f32(f), vdup_n_u32(0xFFFF));
    return vmaxv_u32(vceq_u32(low, vdup_n_u32(0x8000))) != 0;
  }
  static void store_h_bf16_finite(uint16_t *p, H v) { store_h_bf16(p, v); }

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
  static F load2_bf16(const uint16_t *a, const uint16_t *b) { return combine(load_h_bf16(a), load_h_bf16(b)); }
  static F load2_f16(const uint16_t *a, const uint16_t *b) { return combine(load_h_f16(a), load_h_f16(b)); }
  static void store2_bf16(uint16_t *a, uint16_t *b, const F &v) {
    store_h_bf16(a, lo(v));
    store_h_bf16(b, hi(v));
  }
  static void store2_f16(uint16_t *a, uint16_t *b, const F &v) {
    const uint16x4_t r = vreinterpret_u16_f16(vcvt_f16_f32(v));
    a[0] = vget_lane_u16(r, 0);
    a[1] = vget_lane_u16(r, 1);
    b[0] = vget_lane_u16(r, 2);
    b[1] = vget_lane_u16(r, 3);
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
