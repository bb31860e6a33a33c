// Element conversions and the fused operation shared by the sinks (sink_pe.hpp, sink_rope.hpp), as
// members of a template on the ISA's Simd<A> (values_direct.hpp says why).
#pragma once

#include <cstdint>
#include <cstring>

// For a lambda, where GCC takes the attribute after the parameters only in its own spelling.
#define POSENC_ALWAYS_INLINE __attribute__((always_inline))

namespace posenc {

template <class S>
struct Lanes {
  using F = typename S::F;
  static constexpr int W = S::W;
  // Pairs a row is made in at once (the rows engine's chunk, the sinks' stages). The quad pass reads each
  // row's x in pieces of a chunk, where longer pieces measured faster (the fused embedding at d = 4096:
  // 0.92x the time with 1024 pairs instead of 512; 2048 no better); row by row, the anchors and tables of
  // 1024 pairs overflow L1.
  static constexpr int64_t kChunk = S::kQuadPass ? 1024 : 512;

  // v into o's pairs [jj, jj + W), or only its first n - jj lanes when that is the last, partial vector of a
  // run of n pairs (the lanes past n are padding, never written)
  template <class O>
  [[gnu::always_inline]] static inline void put_upto(O &o, int64_t jj, const F &v, int64_t n) {
    if (n - jj >= W)
      o.put(jj, v);
    else
      o.put_partial(jj, v, n - jj);
  }

  // ---- the fused operation -----------------------------------------------------------------------

  // fmaf(scale, x, y), with a NaN result made the same on every path and architecture: which operand's
  // payload an FMA propagates depends on the instruction form the compiler picked and on the ISA, and
  // 0 * inf gives -qNaN on x86 but +qNaN on ARM. The rule: the first NaN among x, y, scale, quieted;
  // otherwise (an invalid operation) +qNaN, 0x7fc00000.
  // Inlined into the row loops (a call there would push their constants out of registers); NaN results
  // take the out-of-line path.
  [[gnu::always_inline]] static inline F fused(const F &scale, const F &x, const F &y) {
    const F r = S::fmaf(scale, x, y);
    if (__builtin_expect(!S::any_nan(r), 1)) return r;
    return fused_nan(r, scale, x, y);
  }
  // The lanes are stored as floats and their bits read with memcpy: reading a float store through a
  // uint32_t array is undefined, and GCC did drop this whole function for the scalar path on aarch64.
  [[gnu::noinline, gnu::cold]] static F fused_nan(F r, F scale, F x, F y) {
    alignas(64) float rv[2 * W], xv[2 * W], yv[2 * W], sv[2 * W];
    S::store_f(rv, r);
    S::store_f(xv, x);
    S::store_f(yv, y);
    S::store_f(sv, scale);
    auto bits = [](float f) {
      uint32_t b;
      std::memcpy(&b, &f, sizeof b);
      return b;
    };
    auto is_nan = [](uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; };
    for (int l = 0; l < 2 * W; ++l) {
      if (!is_nan(bits(rv[l]))) continue;
      const uint32_t xb = bits(xv[l]), yb = bits(yv[l]), sb = bits(sv[l]);
      const uint32_t src = (is_nan(xb) ? xb : is_nan(yb) ? yb : is_nan(sb) ? sb : 0x7FC00000u) | 0x00400000u;
      std::memcpy(&rv[l], &src, sizeof src);
    }
    return S::load_f(rv);
  }

  // Loads and stores of 2W elements, contiguous or as two runs of W, converting to and from float32.
  // load_split: lanes [0, W) from a, [W, 2W) from b.
  template <class T, bool kBF16>
  static F load_split(const T *a, const T *b) {
    if constexpr (sizeof(T) == 4)
      return S::combine(S::load_h(a), S::load_h(b));
    else if constexpr (kBF16)
      return S::load2_bf16(a, b);
    else
      return S::load2_f16(a, b);
  }
  template <class T, bool kBF16>
  static F load2(const T *p) {
    if constexpr (sizeof(T) == 4)
      return S::load_f(p);
    else
      return load_split<T, kBF16>(p, p + W);
  }
  // Lanes [0, W) of v to a, lanes [W, 2W) to b; half-precision outputs convert all 2W lanes at once.
  template <class T, bool kBF16>
  static void store_split(T *a, T *b, const F &v) {
    if constexpr (sizeof(T) == 4) {
      S::store_h(a, S::lo(v));
      S::store_h(b, S::hi(v));
    } else if constexpr (kBF16) {
      S::store2_bf16(a, b, v);
    } else {
      S::store2_f16(a, b, v);
    }
  }
  template <class T, bool kBF16>
  static void store2(T *p, const F &v) {
    if constexpr (sizeof(T) == 4)
      S::store_f(p, v);
    else
      store_split<T, kBF16>(p, p + W, v);
  }
};

}  // namespace posenc
