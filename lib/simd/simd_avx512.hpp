// The AVX-512 (F/CD/DQ/BW/VL) kernel interface, Simd<xsimd::avx512bw>: xsimd's operations (simd_xsimd.hpp)
// and the rest in intrinsics. Included only by isa_avx512.cpp, compiled with its -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "simd/fast_check.hpp"
#include "simd/simd_xsimd.hpp"

namespace posenc {

#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__)
template <>
struct Simd<xsimd::avx512bw> : SimdXsimd<xsimd::avx512bw> {
  using H = __m256;  // W = 8 floats

  static constexpr bool kCanStream = true;
  static constexpr bool kQuadPass = true;  // values_rows.hpp, quad_pass: 32 registers hold it
  // n floats from src to dst: plain stores up to the first cache-line boundary of dst and after the last,
  // non-temporal stores of whole lines between.
  static void stream_copy(float *dst, const float *src, int64_t n) {
    while (n > 0 && (reinterpret_cast<uintptr_t>(dst) & 63) != 0) {
      *dst++ = *src++;
      --n;
    }
    for (; n >= 16; n -= 16, dst += 16, src += 16) _mm512_stream_ps(dst, _mm512_loadu_ps(src));
    for (; n > 0; --n) *dst++ = *src++;
  }
  static void stream_f(float *p, const F &v) { _mm512_stream_ps(p, v); }
  static void stream_h(float *p, H v) { _mm256_stream_ps(p, v); }
  static void store_fence() { _mm_sfence(); }
  static D fma(const D &a, const D &b, const D &c) { return D(_mm512_fmadd_pd(a, b, c)); }
  static D fms(const D &a, const D &b, const D &c) { return D(_mm512_fmsub_pd(a, b, c)); }
  static D fnma(const D &a, const D &b, const D &c) { return D(_mm512_fnmadd_pd(a, b, c)); }
  static F fmaf(const F &a, const F &x, const F &y) { return F(_mm512_fmadd_ps(a, x, y)); }
  // As in simd_scalar.hpp: y = n + 1.5 2^52; bit 0 of its encoding swaps, bit 1 (of n, of n + 1) negates:
  // one ternary-logic instruction per result flips the sign (a ^ (b & c), table 0x78).
  static void quadrant(const D &y, const D &sn, const D &cs, D &s, D &c) {
    const __m512i k = _mm512_castpd_si512(y);
    const __mmask8 odd = _mm512_test_epi64_mask(k, _mm512_set1_epi64(1));
    const __m512i sign = _mm512_set1_epi64(INT64_MIN);
    const __m512i fs = _mm512_slli_epi64(k, 62);
    const __m512i fc = _mm512_slli_epi64(_mm512_add_epi64(k, _mm512_set1_epi64(1)), 62);
    const __m512i s0 = _mm512_castpd_si512(_mm512_mask_blend_pd(odd, sn, cs));
    const __m512i c0 = _mm512_castpd_si512(_mm512_mask_blend_pd(odd, cs, sn));
    s = D(_mm512_castsi512_pd(_mm512_ternarylogic_epi64(s0, fs, sign, 0x78)));
    c = D(_mm512_castsi512_pd(_mm512_ternarylogic_epi64(c0, fc, sign, 0x78)));
  }
  static bool any_nan(const F &v) { return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0; }

  static F narrow2(const D &s, const D &c) {
    return F(_mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(s)), _mm512_cvtpd_ps(c), 1));
  }
  static bool same_bits(const F &a, const F &b) {
    return _mm512_cmpneq_epi32_mask(_mm512_castps_si512(a), _mm512_castps_si512(b)) == 0;
  }
  static F zip(const F &v) {
    const __m512i idx = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    return F(_mm512_permutexvar_ps(idx, v));
  }
  // As on AVX2: the permutation indices of narrow2_zip, made once per loop and pinned.
  struct Consts {
    __m512i zip;
  };
  static Consts consts() { return Consts{_mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23)}; }
  static void pin_consts(Consts &k) { asm("" : "+v"(k.zip)); }
  // Both narrowings and the interleave in one permute.
  static F narrow2_zip(const D &s, const D &c, const Consts &k = consts()) {
    return F(_mm512_permutex2var_ps(_mm512_castps256_ps512(_mm512_cvtpd_ps(s)), k.zip,
                                    _mm512_castps256_ps512(_mm512_cvtpd_ps(c))));
  }
  // As on AVX2: the window test on the low 32-bit halves of all 16 doubles in one vector, and the
  // small-value test under its mask, so that one mask test answers for every lane (lane order does not
  // matter). The halves are gathered by an in-lane shuffle, not a two-source permute: on AMD Zen 4 the
  // permute took 1.04x the time of the whole table loop (docs/math.md section 7).
  static bool decided(const D &s, const D &c, const F &f, const Consts & = consts()) {
    const __mmask16 ok = _mm512_mask_cmpge_epu32_mask(
        outside_window(s, c), _mm512_and_si512(_mm512_castps_si512(f), _mm512_set1_epi32(0x7FFFFFFF)),
        _mm512_set1_epi32(int(fast_check::kSmallestBits)));
    return _kortestc_mask16_u8(ok, ok) != 0;  // every lane set
  }
  // The window half alone, for vectors whose values are known to be far from zero (values_rows.hpp, quad_pass).
  static bool decided_window(const D &s, const D &c, const Consts & = consts()) {
    const __mmask16 outside = outside_window(s, c);
    return _kortestc_mask16_u8(outside, outside) != 0;
  }
  // The lanes whose 29 low bits are outside the window around the midpoint pattern (fast_check.hpp).
  static __mmask16 outside_window(const D &s, const D &c) {
    const __m512i low = _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castpd_ps(s), _mm512_castpd_ps(c), 0x88));
    return _mm512_test_epi32_mask(_mm512_add_epi32(low, _mm512_set1_epi32(fast_check::kBias32)),
                                  _mm512_set1_epi32(fast_check::kMask32));
  }
  // Freq::reach: floor(min over lanes of (min(|s|, |c|) - 2^-12 - 2^-34) reach) - 1, at least -1 and at
  // most 64: how many steps from the anchor (s, c) no row holds a value near zero. One range instruction
  // takes the smaller magnitude of each pair; a lane whose product is not a number counts as no margin.
  static int64_t clear_steps(const D &s, const D &c, const D &reach) {
    const __m512d m = _mm512_range_pd(s, c, 0x0A);
    __m512d q = _mm512_mul_pd(_mm512_sub_pd(m, _mm512_set1_pd(0x1p-12 + 0x1p-34)), reach);
    q = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(q, q, _CMP_ORD_Q), _mm512_set1_pd(-1.0), q);
    const double least = _mm512_reduce_min_pd(_mm512_min_pd(q, _mm512_set1_pd(65.0)));
    return least < 0.0 ? -1 : int64_t(least) - 1;
  }

  // ---- the rotary apply (sink_rope.hpp): W floats to and from W doubles ----
  static F mulf(const F &a, const F &b) { return F(_mm512_mul_ps(a, b)); }
  static D widen(H h) { return D(_mm512_cvtps_pd(h)); }
  static D swap_pairs(const D &v) { return D(_mm512_permute_pd(v, 0x55)); }  // x0 y0 x1 y1 -> y0 x0 y1 x1
  static H narrow(const D &d) { return _mm512_cvtpd_ps(d); }
  // Round to odd (simd_scalar.hpp): truncate, then set the last bit where that was inexact.
  static H narrow_odd(const D &d) {
    const __m256 t = _mm512_cvt_roundpd_ps(d, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(t), d, _CMP_NEQ_OQ);
    const __m256i b = _mm256_castps_si256(t);
    return _mm256_castsi256_ps(_mm256_mask_or_epi32(b, inexact, b, _mm256_set1_epi32(1)));
  }
  static bool any_nan_d(const D &a, const D &b) { return _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q) != 0; }
  static H narrow_sum(const D &y, const D &lo) {  // simd_scalar.hpp
    const __m512d yd = y, l = lo;
    const __m512i b = _mm512_castpd_si512(yd), one = _mm512_set1_epi64(1);
    const __mmask8 inexact = _mm512_cmp_pd_mask(l, _mm512_setzero_pd(), _CMP_NEQ_OQ);
    const __mmask8 even = _mm512_testn_epi64_mask(b, one);
    const __mmask8 differ = _mm512_movepi64_mask(_mm512_castpd_si512(_mm512_xor_pd(yd, l)));  // sign bits
    const __m512i step = _mm512_mask_blend_epi64(differ, one, _mm512_set1_epi64(-1));
    return _mm512_cvtpd_ps(_mm512_castsi512_pd(_mm512_mask_add_epi64(b, __mmask8(inexact & even), b, step)));
  }
  static bool any_f32_tie(const D &v) {  // simd_scalar.hpp
    const __m512d d = v;
    const __m512i low = _mm512_and_si512(_mm512_castpd_si512(d), _mm512_set1_epi64(0x1FFFFFFF));
    const __mmask8 tie = _mm512_cmpeq_epi64_mask(low, _mm512_set1_epi64(0x10000000));
    const __m512d a = _mm512_abs_pd(d);
    const __mmask8 tiny = _mm512_cmp_pd_mask(a, _mm512_set1_pd(0x1p-126), _CMP_LT_OQ) &
                          _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_GT_OQ);
    return (tie | tiny) != 0;
  }
  static bool any_bf16_tie(H f) {  // simd_avx2.hpp
    const __m256i low = _mm256_and_si256(_mm256_castps_si256(f), _mm256_set1_epi32(0xFFFF));
    return _mm256_cmpeq_epi32_mask(low, _mm256_set1_epi32(0x8000)) != 0;
  }
  static void store_h_bf16_finite(uint16_t *p, H v) {
    const __m256i b = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtepi32_epi16(r));
  }
  static F combine(H lo, H hi) { return F(_mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1)); }
  static H lo(const F &v) { return _mm512_castps512_ps256(v); }
  static H hi(const F &v) { return _mm512_extractf32x8_ps(v, 1); }

  static H load_h(const float *p) { return _mm256_loadu_ps(p); }
  static void store_h(float *p, H v) { _mm256_storeu_ps(p, v); }
  static H load_h_bf16(const uint16_t *p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static void store_h_bf16(uint16_t *p, H v) {
    const __m256i b = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(0x7FFFFFFF));
    const __mmask8 nan = _mm256_cmpgt_epi32_mask(mag, _mm256_set1_epi32(0x7F800000));
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
    r = _mm256_mask_blend_epi32(nan, r, quiet);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtepi32_epi16(r));
  }
  static H load_h_f16(const uint16_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  // 2W lanes converted at once: [0, W) from a, [W, 2W) from b (one load when b follows a).
  static __m256i halves16(const uint16_t *a, const uint16_t *b) {
    if (b == a + W) return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a))),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i *>(b)), 1);
  }
  // bf16 to float32 is the 16 bits moved to the top of each 32-bit lane: one word permute of the two
  // halves, the low words zeroed by its mask (a zero extension and a shift took two micro-ops on the
  // port that the kernel's other permutes use).
  static F load2_bf16(const uint16_t *a, const uint16_t *b) {
    const __m512i idx = _mm512_set_epi16(39, 0, 38, 0, 37, 0, 36, 0, 35, 0, 34, 0, 33, 0, 32, 0,  //
                                         7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    const __m512i lo = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a)));
    const __m512i hi = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b)));
    return _mm512_castsi512_ps(_mm512_maskz_permutex2var_epi16(__mmask32(0xAAAAAAAAu), lo, idx, hi));
  }
  static F load2_f16(const uint16_t *a, const uint16_t *b) { return _mm512_cvtph_ps(halves16(a, b)); }
  // All 2W lanes converted at once; lanes [0, W) stored at a, [W, 2W) at b.
  static void store2_bf16(uint16_t *a, uint16_t *b, const F &v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    const __mmask16 nan =
        _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40)));
    store_halves(a, b, _mm512_cvtepi32_epi16(r));
  }
  static void store2_f16(uint16_t *a, uint16_t *b, const F &v) {
    store_halves(a, b, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  static void store_halves(uint16_t *a, uint16_t *b, __m256i h) {
    if (b == a + W) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(a), h);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i *>(a), _mm256_castsi256_si128(h));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(b), _mm256_extracti128_si256(h, 1));
    }
  }
  static void store_h_f16(uint16_t *p, H v) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

#endif

}  // namespace posenc
