// The rotation step of RoPE (lib/kernel/sink_rope.hpp, Apply): P pairs (x, y) -> (x c - y s, y c + x s) by
// the c and s of one block, with the contract's two roundings (x c and y s exact in double, one fused
// rounding of each sum, then one to T: to nearest for float32, to odd for the 16-bit formats, whose
// nearest-even rounding of that float equals the double's; simd_scalar.hpp, narrow_odd). The sink is written
// once over these operations: RotateSteps<S, T, kBF16> is the generic form, P = W pairs a step from the
// operation set of docs/architecture.md; a path with a step of its own (S::kRotate8: simd_neon.hpp, eight
// pairs, whose 128-bit vectors hold only two doubles) gets the specialisation below, which calls it.
//
// A block holds what the steps of a piece read, made once per token by stage() and read in every head row:
// the halves form (and W = 1) c0 .. c(P-1) then s0 .. s(P-1); the generic interleaved form, per element,
// c0 c0 c1 c1 ... then -s0 s0 -s1 s1 ... (a vector of W elements is W/2 pairs: x' = v cdup + swap(v) sdup).
// A step whose results hold a NaN stores nothing and returns false; the sink redoes its pairs by the NaN
// rule, from the c and s that unpack() reads back. Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace posenc {

template <class S, class T, bool kBF16, class = void>
struct RotateSteps {
  using D = typename S::D;
  using H = typename S::H;
  static constexpr int W = S::W;
  static constexpr int64_t kPairs = W;  // P
  // doubles of one step's block
  template <bool kInter>
  static constexpr int64_t block() {
    return kInter && W > 1 ? 4 * W : 2 * W;
  }

  static H load_t(const T *p) {
    if constexpr (sizeof(T) == 4)
      return S::load_h(p);
    else if constexpr (kBF16)
      return S::load_h_bf16(p);
    else
      return S::load_h_f16(p);
  }
  static void store_t(T *p, H v) {
    if constexpr (sizeof(T) == 4)
      S::store_h(p, v);
    else if constexpr (kBF16)
      S::store_h_bf16(p, v);
    else
      S::store_h_f16(p, v);
  }
  // To nearest for float32; to odd for the 16-bit formats.
  static H narrow_t(const D &v) {
    if constexpr (sizeof(T) == 4)
      return S::narrow(v);
    else
      return S::narrow_odd(v);
  }
  // W results that hold no NaN, rounded once to T. bf16: the nearest float, and its nearest-even bf16, is the
  // nearest bf16 of the double unless that float is a bf16 midpoint (low 16 bits 0x8000; the double may lie
  // on either side of it), about one lane in 65,536, which takes the round-to-odd form. That saves the
  // round-to-odd's test and the NaN quieting of every other vector.
  [[gnu::always_inline]] static inline void put_t(T *p, const D &v) {
    if constexpr (sizeof(T) == 2 && kBF16) {
      const H f = S::narrow(v);
      if (__builtin_expect(!S::any_bf16_tie(f), 1)) return S::store_h_bf16_finite(p, f);
    }
    store_t(p, narrow_t(v));
  }

  // The blocks of n pairs from the float32 c and s of the stage (whole vectors: the stage's lanes up to the
  // next multiple of W are initialised), one block per step.
  [[gnu::always_inline]] static inline void stage(const float *c, const float *s, double *blk, int64_t n, bool inter) {
    for (int64_t v = 0; v < n; v += W) {
      const D cv = S::widen(S::load_h(c + v)), sv = S::widen(S::load_h(s + v));
      if (!inter || W == 1) {
        S::store(blk, cv);
        S::store(blk + W, sv);
        blk += 2 * W;
      } else {
        alignas(64) double ct[W], st[W];
        S::store(ct, cv);
        S::store(st, sv);
        for (int l = 0; l < W; ++l) {
          blk[2 * l] = blk[2 * l + 1] = ct[l];
          blk[2 * W + 2 * l] = -st[l];
          blk[2 * W + 2 * l + 1] = st[l];
        }
        blk += 4 * W;
      }
    }
  }
  // A block's P values of c and s.
  template <bool kInter>
  static void unpack(const double *blk, double *c, double *s) {
    for (int64_t l = 0; l < kPairs; ++l) {
      c[l] = kInter && W > 1 ? blk[2 * l] : blk[l];
      s[l] = kInter && W > 1 ? blk[2 * W + 2 * l + 1] : blk[W + l];
    }
  }

  // P pairs of the halves form: x at xs[0 .. P), y at ys[0 .. P), written to xd, yd (in place: the same).
  [[gnu::always_inline]] static inline bool halves(const T *xs, const T *ys, T *xd, T *yd, const double *blk) {
    const D x = S::widen(load_t(xs)), y = S::widen(load_t(ys));
    const D c = S::load(blk), s = S::load(blk + W);
    // x c - y s: both products exact, one rounding of the sum; as x c + (-(y s)), the way IEEE defines the
    // signed zero of a difference (NEON's fms is -(y s - x c), which gives -0 for +0)
    const D xn = S::fnma(y, s, x * c);
    const D yn = S::fma(y, c, x * s);  // y c + x s
    if (__builtin_expect(S::any_nan_d(xn, yn), 0)) return false;
    put_t(xd, xn);
    put_t(yd, yn);
    return true;
  }
  // P interleaved pairs x0 y0 x1 y1 ... at ps[0 .. 2P), written to p (in place: the same): two vectors of W
  // elements, each v cdup + swap(v) sdup (y (-s) and x s exact, one fused rounding each); W = 1: one pair.
  [[gnu::always_inline]] static inline bool interleaved(const T *ps, T *p, const double *blk) {
    if constexpr (W == 1) {
      return halves(ps, ps + 1, p, p + 1, blk);
    } else {
      const D v0 = S::widen(load_t(ps)), v1 = S::widen(load_t(ps + W));
      const D o0 = S::fma(v0, S::load(blk), S::swap_pairs(v0) * S::load(blk + 2 * W));
      const D o1 = S::fma(v1, S::load(blk + W), S::swap_pairs(v1) * S::load(blk + 3 * W));
      if (__builtin_expect(S::any_nan_d(o0, o1), 0)) return false;
      put_t(p, o0);
      put_t(p + W, o1);
      return true;
    }
  }
};

// A path with its own eight-pair step (S::kRotate8, simd_neon.hpp: stage8, rotate8_halves,
// rotate8_interleaved): P = 8, blocks of c0 .. c7 then s0 .. s7 in both forms (ld2 / st2 split and merge the
// interleaved pairs); the conversions to and from T are the generic ones, for the NaN rule.
template <class S, class T, bool kBF16>
struct RotateSteps<S, T, kBF16, std::enable_if_t<S::kRotate8>> : RotateSteps<S, T, kBF16, int> {
  static constexpr int64_t kPairs = 8;
  template <bool>
  static constexpr int64_t block() {
    return 16;
  }
  [[gnu::always_inline]] static inline void stage(const float *c, const float *s, double *blk, int64_t n, bool) {
    int64_t v = 0;
    for (; v + 8 <= n; v += 8, blk += 16) S::stage8(c + v, s + v, blk);
    if (v == n) return;
    alignas(16) float ct[8] = {}, st[8] = {};  // the last, partial block: its lanes past n are zeros
    std::memcpy(ct, c + v, sizeof(float) * size_t(n - v));
    std::memcpy(st, s + v, sizeof(float) * size_t(n - v));
    S::stage8(ct, st, blk);
  }
  template <bool>
  static void unpack(const double *blk, double *c, double *s) {
    std::memcpy(c, blk, 8 * sizeof(double));
    std::memcpy(s, blk + 8, 8 * sizeof(double));
  }
  [[gnu::always_inline]] static inline bool halves(const T *xs, const T *ys, T *xd, T *yd, const double *blk) {
    return S::template rotate8_halves<T, kBF16>(xs, ys, xd, yd, blk, blk + 8);
  }
  [[gnu::always_inline]] static inline bool interleaved(const T *ps, T *p, const double *blk) {
    return S::template rotate8_interleaved<T, kBF16>(ps, p, blk, blk + 8);
  }
};

}  // namespace posenc
