// The sinks of the RoPE calls (docs/contract.md section 4, docs/rope.md): the cos/sin cache, and the in-place
// rotation of q and k head rows, which takes each token's correctly rounded m cos, m sin from the rows
// engine (values_rows.hpp) into an L1 stage and applies them to every head of the token while they are
// hot; no cache is materialised in memory. Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel/job.hpp"
#include "kernel/lanes.hpp"
#include "posenc/posenc.h"

namespace posenc {

namespace detail {
// S::kRotate8: the path rotates eight pairs a step by its own code (simd_neon.hpp: 128-bit vectors hold only
// two doubles, so the W-pair loop pays its loads, loop and NaN test for every two pairs); false elsewhere.
template <class S, class = void>
struct Rotate8 : std::false_type {};
template <class S>
struct Rotate8<S, std::void_t<decltype(S::kRotate8)>> : std::bool_constant<S::kRotate8> {};
}  // namespace detail

template <class S>
struct RopeSinks {
  using D = typename S::D;
  using F = typename S::F;
  using H = typename S::H;
  using L = Lanes<S>;
  static constexpr int W = S::W;
  static constexpr int64_t kChunk = Lanes<S>::kChunk;

  // Where a chunk's values go: W sin lanes to os + jj, W cos lanes to oc + jj (the halves form).
  struct Out {
    static constexpr bool kZipped = false;
    static constexpr bool kHasX = false;
    static constexpr bool kScaled = true;  // emit() multiplies accepted floats by post (detail::Mag)
    float *os, *oc;
    F post;
    bool whole;  // the stage of Apply: a partial vector is stored whole (its lanes past the row are padding)

    template <bool kNt = false>
    [[gnu::always_inline]] inline void put(int64_t jj, const F &v) const {
      S::store_h(os + jj, S::lo(v));
      S::store_h(oc + jj, S::hi(v));
    }
    template <bool kNt = false>
    [[gnu::always_inline]] inline bool put_fast(int64_t jj, const F &v) const {
      put(jj, v);
      return true;
    }
    void put_partial(int64_t jj, const F &v, int64_t m) const {
      if (whole) return put(jj, v);  // so that every lane the rotation widens is initialised
      alignas(64) float t[2 * W];
      S::store_f(t, v);
      std::memcpy(os + jj, t, sizeof(float) * size_t(m));
      std::memcpy(oc + jj, t + W, sizeof(float) * size_t(m));
    }
  };

  // posenc_rope_cache_f32: row t's h sin values at sin_out + t sin_stride, its cos at cos_out + t cos_stride.
  // Written like a PE table (quad passes where the path has them), with the full acceptance test: the
  // clear distances of Freq::reach hold for unscaled values only.
  struct Cache {
    static constexpr bool kInterleaved = false;
    static constexpr bool kHasX = false;
    static constexpr bool kScaled = true;
    static constexpr bool kUseClear = false;
    static constexpr bool kAxes = true;  // multi-axis specs: a position per axis (values_axes.hpp, run_axes)
    using Out = RopeSinks::Out;
    const detail::RopeJob &job;
    detail::Mag mag;
    bool staged = false, direct = false;
    float *srow = nullptr, *crow = nullptr, *os = nullptr, *oc = nullptr;

    explicit Cache(const detail::RopeJob &j) : job(j), mag(j.mag) {}
    void row(int64_t r, int64_t = 1) {
      srow = job.sin_out + r * job.sin_stride;
      crow = job.cos_out + r * job.cos_stride;
    }
    void chunk(int64_t j0) {
      os = srow + j0;
      oc = crow + j0;
    }
    Out out() const { return Out{os, oc, S::splat(mag.post), false}; }
    void put(int64_t jj, const F &v) const { out().put(jj, v); }
    void put_partial(int64_t jj, const F &v, int64_t m) const { out().put_partial(jj, v, m); }
    void flush(int64_t, int64_t) {}
    void finish() {}
    void pad(int64_t r) {  // POSENC_PAD: +0.0 cos and sin
      row(r);
      std::memset(srow, 0, sizeof(float) * size_t(job.h));
      std::memset(crow, 0, sizeof(float) * size_t(job.h));
    }
  };

  // posenc_rope_*: T is float or uint16_t (bf16 when kBF16, else f16). The rows engine writes a token's
  // values into the stage (it never takes the quad path for a staged sink), and flush() rotates that
  // chunk's pairs in every head of every tensor, kPiece pairs at a time from doubles kept in L1.
  template <class T, bool kBF16>
  struct Apply {
    static constexpr bool kInterleaved = false;
    static constexpr bool kHasX = true;  // no clear distances (values_rows.hpp)
    static constexpr bool kScaled = true;
    static constexpr bool kUseClear = false;
    static constexpr bool kAxes = true;
    static constexpr int64_t kPiece = 128;    // pairs of cos and sin held as doubles at once (2 KiB, 4 KiB dup)
    static constexpr int64_t kCopyAhead = 2;  // tokens a rotation from a separate source prefetches ahead
    static_assert(kPiece % 8 == 0 && kChunk % kPiece == 0, "pieces tile a chunk in whole blocks");
    using Out = RopeSinks::Out;

    alignas(64) float stage[2 * kChunk];        // the sin run, then (at kChunk) the cos run of the current row
    alignas(64) double cd[kPiece], sd[kPiece];  // the piece's c and s
    alignas(64) double cdup[2 * kPiece], sdup[2 * kPiece];  // interleaved pairs: per element
    const detail::RopeJob &job;
    detail::Mag mag;
    bool staged = true, direct = false;
    int64_t token = 0;

    explicit Apply(const detail::RopeJob &j) : job(j), mag(j.mag) {}
    void row(int64_t r, int64_t = 1) { token = r; }
    void chunk(int64_t) {}
    Out out() const {
      return Out{const_cast<float *>(stage), const_cast<float *>(stage) + kChunk, S::splat(mag.post), true};
    }
    void put(int64_t jj, const F &v) const { out().put(jj, v); }
    void put_partial(int64_t jj, const F &v, int64_t m) const { out().put_partial(jj, v, m); }
    void finish() {}
    // POSENC_PAD: the token stays as it is; from source rows, its rotated elements are copied unchanged
    void pad(int64_t r) {
      for (const detail::RopeTensor &t : job.t)
        if (t.src != t.x)
          for (int64_t j = 0; j < t.heads; ++j)
            std::memcpy(static_cast<T *>(t.x) + r * t.token_stride + j * t.head_stride,
                        static_cast<const T *>(t.src) + r * t.src_token_stride + j * t.src_head_stride,
                        sizeof(T) * size_t(2 * job.h));
    }

    // The chunk of pairs [j0, j0 + n) of the current token is in the stage: rotate it everywhere.
    void flush(int64_t j0, int64_t n) {
      const bool inter = job.pairs == POSENC_ROPE_INTERLEAVED;
      for (int64_t p0 = 0; p0 < n; p0 += kPiece) {
        const int64_t pn = n - p0 < kPiece ? n - p0 : kPiece;
        for (int64_t v = 0; v < pn; v += W) {  // whole vectors: the stage's lanes past n are initialised
          const D c = S::widen(S::load_h(stage + kChunk + p0 + v)), s = S::widen(S::load_h(stage + p0 + v));
          S::store(cd + v, c);
          S::store(sd + v, s);
        }
        // per element: c0 c0 c1 c1 ..., -s0 s0 -s1 s1 ... (not needed where eight-pair steps cover the piece)
        if (inter && W > 1 && !(detail::Rotate8<S>::value && pn % 8 == 0)) {
          for (int64_t i = 0; i < (pn + W - 1) / W * W; ++i) {
            cdup[2 * i] = cdup[2 * i + 1] = cd[i];
            sdup[2 * i] = -sd[i];
            sdup[2 * i + 1] = sd[i];
          }
        }
        if constexpr (detail::Rotate8<S>::value) {
          if (pn % 8 == 0) {  // NEON: c and s as blocks of eight pairs, in cdup's storage
            for (int64_t v = 0; v < pn; v += 8) S::stage8(stage + kChunk + p0 + v, stage + p0 + v, cdup + 2 * v);
            rotate8_rows(j0 + p0, pn, inter);
            continue;
          }
        }
        for (const detail::RopeTensor &t : job.t) {
          T *base = static_cast<T *>(t.x);
          const T *sbase = static_cast<const T *>(t.src);
          for (int64_t j = 0; j < t.heads; ++j) {
            T *row = base + token * t.token_stride + j * t.head_stride;
            const T *src = sbase + token * t.src_token_stride + j * t.src_head_stride;
            // the same source row of the next token, which comes next in every layout but [H, T, D]; from a
            // separate source, two tokens ahead, and the destination's row too (tools/ab/rope.c: 7-12% off a
            // Llama-2-7B NEOX prefill's one-pass rotation, 2048 x 32 x 128, on an AMD EPYC)
            const bool apart = src != row;
            const int64_t k = apart ? kCopyAhead : 1;
            const int64_t ahead = token + k < job.n ? k * t.src_token_stride : 0;
            const int64_t dahead = apart && token + kCopyAhead < job.n ? kCopyAhead * t.token_stride : 0;
            if (!inter)
              rotate_halves<1>(src + j0 + p0, src + job.h + j0 + p0, row + j0 + p0, row + job.h + j0 + p0, pn, ahead,
                               dahead);
            else if constexpr (W > 1)
              rotate_interleaved(src + 2 * (j0 + p0), row + 2 * (j0 + p0), pn, ahead, dahead);
            else
              rotate_halves<2>(src + 2 * (j0 + p0), src + 2 * (j0 + p0) + 1, row + 2 * (j0 + p0),
                               row + 2 * (j0 + p0) + 1, pn, ahead);
          }
        }
      }
    }

    // NEON (S::kRotate8): the piece's pairs [j, j + pn), pn a multiple of 8, in every head row, eight pairs a
    // step from the blocks of c and s in cdup, the loops inlined here: a call of rotate_halves per row (its
    // frame, its tail buffers) cost about as many instructions as the rotation of 16 pairs.
    [[gnu::always_inline]] inline void rotate8_rows(int64_t j, int64_t pn, bool inter) {
      for (const detail::RopeTensor &t : job.t) {
        T *row = static_cast<T *>(t.x) + token * t.token_stride + (inter ? 2 * j : j);
        const T *srow = static_cast<const T *>(t.src) + token * t.src_token_stride + (inter ? 2 * j : j);
        const int64_t ahead = token + 1 < job.n ? t.src_token_stride : 0;  // as in flush
        if (!inter) {
          for (int64_t hd = 0; hd < t.heads; ++hd, row += t.head_stride, srow += t.src_head_stride) {
            const double *cs = cdup;
            const T *xs = srow, *ys = srow + job.h, *const end = xs + pn;
            T *x = row, *y = row + job.h;
            for (; xs != end; xs += 8, ys += 8, x += 8, y += 8, cs += 16) {
              __builtin_prefetch(xs + ahead, 1, 3);
              __builtin_prefetch(ys + ahead, 1, 3);
              if (__builtin_expect(!S::template rotate8_halves<T, kBF16>(xs, ys, x, y, cs, cs + 8), 0))
                nan8(xs, ys, x, y, 1, cs);
            }
          }
        } else {
          for (int64_t hd = 0; hd < t.heads; ++hd, row += t.head_stride, srow += t.src_head_stride) {
            const double *cs = cdup;
            T *p = row;
            for (const T *ps = srow, *const end = srow + 2 * pn; ps != end; ps += 16, p += 16, cs += 16) {
              __builtin_prefetch(ps + ahead, 1, 3);
              if (__builtin_expect(!S::template rotate8_interleaved<T, kBF16>(ps, p, cs, cs + 8), 0))
                nan8(ps, ps + 1, p, p + 1, 2, cs);
            }
          }
        }
      }
    }
    // Eight pairs (x at xs[k l], y at ys[k l], written to xd, yd; c and s in the block cs) whose results hold a
    // NaN, by the NaN rule, W pairs at a time.
    [[gnu::noinline, gnu::cold]] static void nan8(const T *xs, const T *ys, T *xd, T *yd, int64_t k, const double *cs) {
      for (int64_t v = 0; v < 8; v += W)
        nan_vector(xs + k * v, ys + k * v, xd + k * v, yd + k * v, k, cs + v, cs + 8 + v, W);
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
    // To nearest for float32; to odd for the 16-bit formats, whose nearest-even rounding of that float
    // then equals the one of the double (simd_scalar.hpp, narrow_odd).
    static H narrow_t(const D &v) {
      if constexpr (sizeof(T) == 4)
        return S::narrow(v);
      else
        return S::narrow_odd(v);
    }

    // W results that hold no NaN, rounded once to T. bf16: the nearest float, and its nearest-even bf16,
    // is the nearest bf16 of the double unless that float is a bf16 midpoint (low 16 bits 0x8000; the
    // double may lie on either side of it), about one lane in 65,536, which takes the round-to-odd form.
    // That saves the round-to-odd's test and the NaN quieting of every other vector.
    [[gnu::always_inline]] static inline void put_t(T *p, const D &v) {
      if constexpr (sizeof(T) == 2 && kBF16) {
        const H f = S::narrow(v);
        if (__builtin_expect(!S::any_bf16_tie(f), 1)) return S::store_h_bf16_finite(p, f);
      }
      store_t(p, narrow_t(v));
    }

    // n pairs (x, y) read with x at xs[kStep i], y at ys[kStep i] and written to xd, yd at the same offsets
    // (kStep 1: the halves; 2: interleaved pairs on the scalar path; in place, xd = xs and yd = ys):
    // (x, y) -> (fl(x c - y s), fl(y c + x s)), each one rounding of the exact value to double (the products are
    // exact: 24 by 24 bits), then one to T. cd, sd: the piece's c and s. A source pair is read before its
    // destination is written, so a row rotated in place and a row rotated from a copy get the same bytes.
    template <int kStep>
    void rotate_halves(const T *xs, const T *ys, T *xd, T *yd, int64_t n, int64_t ahead, int64_t dahead = 0) const {
      const int64_t full = kStep == 1 ? n / W * W : n;  // kStep 2 only with W = 1
      int64_t i = 0;
      if constexpr (detail::Rotate8<S>::value && kStep == 1) {  // NEON: eight pairs a step (simd_neon.hpp)
        for (; i + 8 <= n; i += 8) {
          __builtin_prefetch(xs + i + ahead, 1, 3);
          __builtin_prefetch(ys + i + ahead, 1, 3);
          if (__builtin_expect(!S::template rotate8_halves<T, kBF16>(xs + i, ys + i, xd + i, yd + i, cd + i, sd + i),
                               0)) {
            for (int64_t v = i; v < i + 8; v += W) nan_vector(xs + v, ys + v, xd + v, yd + v, 1, cd + v, sd + v);
          }
        }
      }
      for (; i < full; i += W) {
        // the next token's row into L1 while this one is rotated: the loop is bound by its arithmetic,
        // and without it the loads of a prefill waited on L2 and L3 (1.3x the in-place pass's time)
        __builtin_prefetch(xs + kStep * i + ahead, 1, 3);
        __builtin_prefetch(ys + kStep * i + ahead, 1, 3);
        if (dahead) {
          __builtin_prefetch(xd + kStep * i + dahead, 1, 3);
          __builtin_prefetch(yd + kStep * i + dahead, 1, 3);
        }
        const D x = S::widen(load_t(xs + kStep * i)), y = S::widen(load_t(ys + kStep * i));
        const D c = S::load(cd + i), s = S::load(sd + i);
        // x c - y s: both products exact, one rounding of the sum; as x c + (-(y s)), the way IEEE
        // defines the signed zero of a difference (NEON's fms is -(y s - x c), which gives -0 for +0)
        const D xn = S::fnma(y, s, x * c);
        const D yn = S::fma(y, c, x * s);  // y c + x s
        if (__builtin_expect(S::any_nan_d(xn, yn), 0)) {
          // out of line, from memory (the source is unchanged yet): passing these vectors by reference
          // made GCC store all four on the stack in every iteration
          nan_vector(xs + kStep * i, ys + kStep * i, xd + kStep * i, yd + kStep * i, kStep, cd + i, sd + i);
          continue;
        }
        put_t(xd + kStep * i, xn);
        put_t(yd + kStep * i, yn);
      }
      if (full == n) return;
      // the last m < W pairs, through buffers: nothing outside the row's pairs is read or written
      const int64_t m = n - full;
      alignas(64) T bx[W] = {}, by[W] = {};
      alignas(64) double c[W] = {}, s[W] = {};
      std::memcpy(bx, xs + full, sizeof(T) * size_t(m));
      std::memcpy(by, ys + full, sizeof(T) * size_t(m));
      std::memcpy(c, cd + full, sizeof(double) * size_t(m));
      std::memcpy(s, sd + full, sizeof(double) * size_t(m));
      const D x = S::widen(load_t(bx)), y = S::widen(load_t(by));
      const D xn = S::fnma(y, S::load(s), x * S::load(c));
      const D yn = S::fma(y, S::load(c), x * S::load(s));
      if (S::any_nan_d(xn, yn)) {
        nan_vector(bx, by, bx, by, 1, c, s);
      } else {
        store_t(bx, narrow_t(xn));
        store_t(by, narrow_t(yn));
      }
      std::memcpy(xd + full, bx, sizeof(T) * size_t(m));
      std::memcpy(yd + full, by, sizeof(T) * size_t(m));
    }

    // n interleaved pairs from src to dst (W > 1; in place, dst = src): W elements (W / 2 pairs) a vector,
    // v (x0 y0 x1 y1 ...) -> v cdup + swap(v) sdup with cdup = c0 c0 c1 c1 ..., sdup = -s0 s0 -s1 s1 ...: the
    // same two roundings as rotate_halves (y (-s) and x s exact, one fused rounding each).
    void rotate_interleaved(const T *src, T *dst, int64_t n, int64_t ahead, int64_t dahead = 0) const {
      const int64_t e = 2 * n, full = e / W * W;
      int64_t i = 0;
      if constexpr (detail::Rotate8<S>::value) {  // NEON: eight pairs (16 elements) a step (simd_neon.hpp)
        for (; i + 16 <= e; i += 16) {
          __builtin_prefetch(src + i + ahead, 1, 3);
          if (__builtin_expect(!S::template rotate8_interleaved<T, kBF16>(src + i, dst + i, cd + i / 2, sd + i / 2),
                               0)) {
            for (int64_t v = i; v < i + 16; v += W)
              nan_vector(src + v, src + v + 1, dst + v, dst + v + 1, 2, cd + v / 2, sd + v / 2, W / 2);
          }
        }
      }
      for (; i < full; i += W) {
        __builtin_prefetch(src + i + ahead, 1, 3);  // as in rotate_halves
        if (dahead) __builtin_prefetch(dst + i + dahead, 1, 3);
        pair_vector(src + i, dst + i, i);
      }
      if (full == e) return;
      alignas(64) T b[W] = {};
      std::memcpy(b, src + full, sizeof(T) * size_t(e - full));
      pair_vector(b, b, full);
      std::memcpy(dst + full, b, sizeof(T) * size_t(e - full));
    }
    [[gnu::always_inline]] inline void pair_vector(const T *ps, T *pd, int64_t i) const {
      const D v = S::widen(load_t(ps));
      const D o = S::fma(v, S::load(cdup + i), S::swap_pairs(v) * S::load(sdup + i));
      if (__builtin_expect(S::any_nan_d(o, o), 0))
        return nan_vector(ps, ps + 1, pd, pd + 1, 2, cd + i / 2, sd + i / 2, W / 2);
      put_t(pd, o);
    }

    // A vector whose results hold a NaN: m pairs (x at xs[k i], y at ys[k i], written to xd[k i], yd[k i])
    // computed again one at a time, the same two roundings, and then the NaN rule: a NaN result is the same on
    // every path and architecture (which operand's payload an FMA returns depends on the instruction form and
    // the ISA): the first NaN among x and y, quieted (by the widening); otherwise, an invalid operation
    // (inf - inf, 0 * inf), the float32 default +qNaN 0x7fc00000. Every source element is read before any
    // destination element is written.
    [[gnu::noinline, gnu::cold]] static void nan_vector(const T *xs, const T *ys, T *xd, T *yd, int64_t k,
                                                        const double *c, const double *s, int64_t m = W) {
      alignas(64) T in[W] = {}, out[W];
      alignas(64) double a[W], b[W], u[W] = {}, v[W] = {};
      const uint64_t quiet = 0x7FF8000000000000u;
      double dflt;
      std::memcpy(&dflt, &quiet, sizeof dflt);
      for (int64_t l = 0; l < m; ++l) in[l] = xs[k * l];
      S::store(a, S::widen(load_t(in)));
      for (int64_t l = 0; l < m; ++l) in[l] = ys[k * l];
      S::store(b, S::widen(load_t(in)));
      for (int64_t l = 0; l < m; ++l) {
        u[l] = std::fma(a[l], c[l], -(b[l] * s[l]));
        v[l] = std::fma(b[l], c[l], a[l] * s[l]);
        const double first = a[l] != a[l] ? a[l] : b[l] != b[l] ? b[l] : dflt;
        if (u[l] != u[l]) u[l] = first;
        if (v[l] != v[l]) v[l] = first;
      }
      store_t(out, narrow_t(S::load(u)));
      for (int64_t l = 0; l < m; ++l) xd[k * l] = out[l];
      store_t(out, narrow_t(S::load(v)));
      for (int64_t l = 0; l < m; ++l) yd[k * l] = out[l];
    }
  };
};

}  // namespace posenc
