// AVX2 (with FMA and F16C) and AVX-512 (F/CD/DQ/BW/VL) specialisations of the kernel interface.
// Arithmetic on doubles goes through xsimd; what xsimd 8.1 does not offer (narrowing two double vectors
// into one float vector, lane shuffles, half-precision conversions) is written with intrinsics here.
// Included only by isa_avx2.cpp / isa_avx512.cpp, each compiled with its own -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <xsimd/xsimd.hpp>

#include "fast_check.hpp"

namespace posenc {

template <class A>
struct Simd;

// Operations that only depend on xsimd, shared by the x86 specialisations through inheritance. Fused
// multiply-adds are not among them: xsimd 8.1 has no AVX-512 fma kernel and silently falls back to an
// unfused x * y + z, which breaks the error-free transformations; each specialisation writes its own.
template <class A>
struct SimdXsimd {
  using D = xsimd::batch<double, A>;
  using F = xsimd::batch<float, A>;
  static constexpr int W = int(D::size);

  static D set(double x) { return D(x); }
  static D load(const double *p) { return D::load_aligned(p); }
  static void store(double *p, const D &v) { v.store_aligned(p); }
  // Keeps a loaded value in its register: without it GCC folds the load into each instruction that
  // uses the value, loading it again for each (values_rows.hpp, row_pass). No effect on the value.
  static void pin(D &v) { asm("" : "+v"(v.data)); }
  static D abs(const D &a) { return xsimd::abs(a); }
  static D min(const D &a, const D &b) { return xsimd::min(a, b); }
  static F splat(float x) { return F(x); }
  static F load_f(const float *p) { return F::load_unaligned(p); }
  static void store_f(float *p, const F &v) { v.store_unaligned(p); }
};

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

  static F narrow2(const D &s, const D &c) {
    return F(_mm256_set_m128(_mm256_cvtpd_ps(c), _mm256_cvtpd_ps(s)));
  }
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
    const __m256i below = _mm256_castpd_si256(
        _mm256_cmp_pd(_mm256_and_pd(back, absmask), _mm256_and_pd(d, absmask), _CMP_LT_OQ));
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
  static bool any_nan_d(const D &a, const D &b) {
    return _mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_UNORD_Q)) != 0;
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
  static H load_h_f16(const uint16_t *p) {
    return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
  }
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
  static bool any_bf16_tie(H f) {  // simd_x86.hpp, AVX2
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
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
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
