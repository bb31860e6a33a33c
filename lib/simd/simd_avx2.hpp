// The AVX2 (with FMA and F16C) kernel interface, Simd<xsimd::fma3<xsimd::avx2>>: xsimd's operations
// (simd_xsimd.hpp) and the rest in intrinsics. Included only by isa_avx2.cpp, compiled with its -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "simd/fast_check.hpp"
#include "simd/simd_xsimd.hpp"

namespace posenc {

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
template <>
struct Simd<xsimd::fma3<xsimd::avx2>> : SimdXsimd<xsimd::fma3<xsimd::avx2>> {
  using H = __m128;  // W = 4 floats

  static constexpr bool kCanStream = true;
  // values_rows.hpp, quad_pass: four rows' worth of live vectors do not fit in 16 registers with the fused
  // operation's (measured on the earlier grouped form: the fused embedding took 1.25-1.36x the time of
  // row by row).
  static constexpr bool kQuadPass = false;
  // n floats from src to dst: plain stores up to the first 32-byte boundary of dst and after the last,
  // non-temporal stores between.
  static void stream_copy(float *dst, const float *src, int64_t n) {
    while (n > 0 && (reinterpret_cast<uintptr_t>(dst) & 31) != 0) {
      *dst++ = *src++;
      --n;
    }
    for (; n >= 8; n -= 8, dst += 8, src += 8) _mm256_stream_ps(dst, _mm256_loadu_ps(src));
    for (; n > 0; --n) *dst++ = *src++;
  }
  static void stream_f(float *p, const F &v) { _mm256_stream_ps(p, v); }
  static void stream_h(float *p, H v) { _mm_stream_ps(p, v); }
  static void store_fence() { _mm_sfence(); }
  static D fma(const D &a, const D &b, const D &c) { return D(_mm256_fmadd_pd(a, b, c)); }
  static D fms(const D &a, const D &b, const D &c) { return D(_mm256_fmsub_pd(a, b, c)); }
  static D fnma(const D &a, const D &b, const D &c) { return D(_mm256_fnmadd_pd(a, b, c)); }
  static F fmaf(const F &a, const F &x, const F &y) { return F(_mm256_fmadd_ps(a, x, y)); }
  // As in simd_scalar.hpp: y = n + 1.5 2^52; bit 0 of its encoding swaps (moved to the sign bit, which
  // is all blendv reads), bit 1 (of n, of n + 1) negates.
  static void quadrant(const D &y, const D &sn, const D &cs, D &s, D &c) {
    const __m256i k = _mm256_castpd_si256(y);
    const __m256d odd = _mm256_castsi256_pd(_mm256_slli_epi64(k, 63));
    const __m256d sign = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MIN));
    const __m256d fs = _mm256_and_pd(_mm256_castsi256_pd(_mm256_slli_epi64(k, 62)), sign);
    const __m256d fc =
        _mm256_and_pd(_mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(k, _mm256_set1_epi64x(1)), 62)), sign);
    s = D(_mm256_xor_pd(_mm256_blendv_pd(sn, cs, odd), fs));
    c = D(_mm256_xor_pd(_mm256_blendv_pd(cs, sn, odd), fc));
  }
  static bool any_nan(const F &v) { return _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0; }

  static F narrow2(const D &s, const D &c) { return F(_mm256_set_m128(_mm256_cvtpd_ps(c), _mm256_cvtpd_ps(s))); }
  static bool same_bits(const F &a, const F &b) {
    const __m256i x = _mm256_xor_si256(_mm256_castps_si256(a), _mm256_castps_si256(b));
    return _mm256_testz_si256(x, x) != 0;
  }
  // The loops' vector constants that are not broadcasts (values_rows.hpp, row_pass): made once and pinned in
  // registers; GCC otherwise loads them again from the constant pool on every iteration.
  struct Consts {
    __m256i zip;
  };
  static Consts consts() { return Consts{_mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)}; }
  static void pin_consts(Consts &k) { asm("" : "+v"(k.zip)); }
  static F zip(const F &v, const Consts &k = consts()) {  // s0..s3 c0..c3 -> s0 c0 s1 c1 s2 c2 s3 c3
    return F(_mm256_permutevar8x32_ps(v, k.zip));
  }
  static F narrow2_zip(const D &s, const D &c, const Consts &k = consts()) { return zip(narrow2(s, c), k); }
  // The window test looks at the 29 low bits of each double only, so it runs on the low 32-bit halves of
  // all 8 doubles gathered into one vector (fast_check.hpp: the masked bits of the sum are the same in 32
  // bits). Lane order does not matter: the answer is whether any value is rejected.
  static bool decided(const D &s, const D &c, const F &f, const Consts & = consts()) {
    const __m256i low = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castpd_ps(s), _mm256_castpd_ps(c), 0x88));
    const __m256i window = _mm256_and_si256(_mm256_add_epi32(low, _mm256_set1_epi32(fast_check::kBias32)),
                                            _mm256_set1_epi32(fast_check::kMask32));
    const __m256i near_mid = _mm256_cmpeq_epi32(window, _mm256_setzero_si256());
    // |f| - smallest is negative exactly for the small values (no overflow: both are below 2^31), and
    // near_mid is all ones where it holds: the sign bits of the or answer for every lane, and one
    // movemask reads them (vptest took two micro-ops, and GCC turned the signed compare into two).
    const __m256i mag = _mm256_and_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i small = _mm256_sub_epi32(mag, _mm256_set1_epi32(int(fast_check::kSmallestBits)));
    return _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_or_si256(near_mid, small))) == 0;
  }

  // ---- the rotary apply (sink_rope.hpp): W floats to and from W doubles ----
  static F mulf(const F &a, const F &b) { return F(_mm256_mul_ps(a, b)); }
  static D widen(H h) { return D(_mm256_cvtps_pd(h)); }
  static D swap_pairs(const D &v) { return D(_mm256_permute_pd(v, 0x5)); }  // x0 y0 x1 y1 -> y0 x0 y1 x1
  static H narrow(const D &d) { return _mm256_cvtpd_ps(d); }
  // Round to odd (simd_scalar.hpp): the nearest float, moved one step towards d when it is inexact and even.
  static H narrow_odd(const D &d) {
    const __m128 f = _mm256_cvtpd_ps(d);
    const __m256d back = _mm256_cvtps_pd(f);
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    const __m256i inexact = _mm256_castpd_si256(_mm256_cmp_pd(back, d, _CMP_NEQ_OQ));
    const __m256i below =
        _mm256_castpd_si256(_mm256_cmp_pd(_mm256_and_pd(back, absmask), _mm256_and_pd(d, absmask), _CMP_LT_OQ));
    const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m128i in32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(inexact, pick));
    const __m128i up32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(below, pick));
    const __m128i b = _mm_castps_si128(f);
    const __m128i even = _mm_cmpeq_epi32(_mm_and_si128(b, _mm_set1_epi32(1)), _mm_setzero_si128());
    const __m128i adj = _mm_and_si128(in32, even);
    // +1 where the float is below d in magnitude, -1 where above: (up ? 1 : -1) = (up & 2) - 1
    const __m128i step = _mm_sub_epi32(_mm_and_si128(up32, _mm_set1_epi32(2)), _mm_set1_epi32(1));
    return _mm_castsi128_ps(_mm_add_epi32(b, _mm_and_si128(adj, step)));
  }
  static bool any_nan_d(const D &a, const D &b) { return _mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_UNORD_Q)) != 0; }
  static H narrow_sum(const D &y, const D &lo) {  // simd_scalar.hpp
    const __m256d yd = y, l = lo;
    const __m256i b = _mm256_castpd_si256(yd), one = _mm256_set1_epi64x(1);
    const __m256i inexact = _mm256_castpd_si256(_mm256_cmp_pd(l, _mm256_setzero_pd(), _CMP_NEQ_OQ));
    const __m256i even = _mm256_cmpeq_epi64(_mm256_and_si256(b, one), _mm256_setzero_si256());
    // -1 where the signs differ (towards zero), +1 where they agree
    const __m256i differ = _mm256_cmpgt_epi64(_mm256_setzero_si256(), _mm256_castpd_si256(_mm256_xor_pd(yd, l)));
    const __m256i step = _mm256_or_si256(_mm256_slli_epi64(differ, 1), one);
    const __m256i r = _mm256_add_epi64(b, _mm256_and_si256(step, _mm256_and_si256(inexact, even)));
    return _mm256_cvtpd_ps(_mm256_castsi256_pd(r));
  }
  static bool any_f32_tie(const D &v) {  // simd_scalar.hpp
    const __m256d d = v;
    const __m256i low = _mm256_and_si256(_mm256_castpd_si256(d), _mm256_set1_epi64x(0x1FFFFFFF));
    const __m256d tie = _mm256_castsi256_pd(_mm256_cmpeq_epi64(low, _mm256_set1_epi64x(0x10000000)));
    const __m256d a = _mm256_and_pd(d, _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX)));
    const __m256d tiny = _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(0x1p-126), _CMP_LT_OQ),
                                       _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_GT_OQ));
    return _mm256_movemask_pd(_mm256_or_pd(tie, tiny)) != 0;
  }
  // Whether a lane's low 16 bits are 0x8000: a float that is a bfloat16 midpoint (sink_rope.hpp).
  static bool any_bf16_tie(H f) {
    const __m128i low = _mm_and_si128(_mm_castps_si128(f), _mm_set1_epi32(0xFFFF));
    return _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(low, _mm_set1_epi32(0x8000)))) != 0;
  }
  // Nearest-even bfloat16 of W floats that are not NaN.
  static void store_h_bf16_finite(uint16_t *p, H v) {
    const __m128i b = _mm_castps_si128(v);
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
    const __m128i r = _mm_srli_epi32(_mm_add_epi32(b, _mm_add_epi32(lsb, _mm_set1_epi32(0x7FFF))), 16);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_packus_epi32(r, r));
  }
  static F combine(H lo, H hi) { return F(_mm256_set_m128(hi, lo)); }
  static H lo(const F &v) { return _mm256_castps256_ps128(v); }
  static H hi(const F &v) { return _mm256_extractf128_ps(v, 1); }

  static H load_h(const float *p) { return _mm_loadu_ps(p); }
  static void store_h(float *p, H v) { _mm_storeu_ps(p, v); }
  static H load_h_bf16(const uint16_t *p) {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16));
  }
  static void store_h_bf16(uint16_t *p, H v) {
    const __m128i b = _mm_castps_si128(v);
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(1));
    __m128i r = _mm_srli_epi32(_mm_add_epi32(b, _mm_add_epi32(lsb, _mm_set1_epi32(0x7FFF))), 16);
    const __m128i mag = _mm_and_si128(b, _mm_set1_epi32(0x7FFFFFFF));
    const __m128i nan = _mm_cmpgt_epi32(mag, _mm_set1_epi32(0x7F800000));
    const __m128i quiet = _mm_or_si128(_mm_srli_epi32(b, 16), _mm_set1_epi32(0x40));
    r = _mm_blendv_epi8(r, quiet, nan);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_packus_epi32(r, r));
  }
  static H load_h_f16(const uint16_t *p) { return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))); }
  // 2W lanes converted at once: [0, W) from a, [W, 2W) from b (one load when b follows a).
  static __m128i halves16(const uint16_t *a, const uint16_t *b) {
    if (b == a + W) return _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
    return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(a)),
                              _mm_loadl_epi64(reinterpret_cast<const __m128i *>(b)));
  }
  static F load2_bf16(const uint16_t *a, const uint16_t *b) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves16(a, b)), 16));
  }
  static F load2_f16(const uint16_t *a, const uint16_t *b) { return _mm256_cvtph_ps(halves16(a, b)); }
  // All 2W lanes converted at once; lanes [0, W) stored at a, [W, 2W) at b.
  static void store2_bf16(uint16_t *a, uint16_t *b, const F &v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7F800000));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40)), nan);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);  // 8 x u16 in lane 0
    const __m128i h = _mm256_castsi256_si128(packed);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(a), h);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(b), _mm_unpackhi_epi64(h, h));
  }
  static void store2_f16(uint16_t *a, uint16_t *b, const F &v) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(a), h);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(b), _mm_unpackhi_epi64(h, h));
  }
  static void store_h_f16(uint16_t *p, H v) {
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

#endif

}  // namespace posenc
