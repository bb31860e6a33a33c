// The sinks of the RoPE calls (docs/contract.md section 4, docs/rope.md): the cos/sin cache, and the in-place
// rotation of q and k head rows, which takes each token's correctly rounded m cos, m sin from the rows
// engine (values_rows.hpp) into an L1 stage and applies them to every head of the token while they are
// hot; no cache is materialised in memory. Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "kernel/lanes.hpp"
#include "posenc/posenc.h"
#include "simd/simd_rotate.hpp"

namespace posenc {

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
    static constexpr int64_t kPiece = 128;    // pairs of cos and sin held as doubles at once (2 or 4 KiB)
    static constexpr int64_t kCopyAhead = 2;  // tokens a rotation from a separate source prefetches ahead
    static_assert(kPiece % 8 == 0 && kChunk % kPiece == 0, "pieces tile a chunk in whole blocks");
    using R = RotateSteps<S, T, kBF16>;      // the rotation step: its own on a path that has one, else W pairs
    static constexpr int64_t P = R::kPairs;  // pairs a step
    static_assert(kPiece % P == 0, "a piece is whole steps");
    using Out = RopeSinks::Out;

    alignas(64) float stage[2 * kChunk];  // the sin run, then (at kChunk) the cos run of the current row
    // the piece's c and s as the blocks of its steps (simd_rotate.hpp: at most four doubles a pair)
    alignas(64) double blocks[4 * kPiece];
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

    // posenc_rope_cached_*: every token's c and s from the job's given rows (a posenc_rope_cache_f32 cache holds
    // the very floats the rows engine writes to the stage), a chunk at a time copied into the stage, whose lanes
    // up to the next whole vector are zeroed (the blocks are made from whole vectors), and rotated by flush():
    // the bytes of the call that made the values itself.
    void given() {
      for (int64_t r = 0; r < job.n; ++r) {
        row(r);
        const float *c = job.cos_in + r * job.cos_in_stride, *s = job.sin_in + r * job.sin_in_stride;
        for (int64_t j0 = 0; j0 < job.h; j0 += kChunk) {
          const int64_t m = job.h - j0 < kChunk ? job.h - j0 : kChunk, whole = (m + W - 1) / W * W;
          std::memcpy(stage, s + j0, sizeof(float) * size_t(m));
          std::memcpy(stage + kChunk, c + j0, sizeof(float) * size_t(m));
          std::memset(stage + m, 0, sizeof(float) * size_t(whole - m));
          std::memset(stage + kChunk + m, 0, sizeof(float) * size_t(whole - m));
          flush(j0, m);
        }
      }
    }

    // The chunk of pairs [j0, j0 + n) of the current token is in the stage: rotate it everywhere.
    void flush(int64_t j0, int64_t n) {
      const bool inter = job.pairs == POSENC_ROPE_INTERLEAVED;
      for (int64_t p0 = 0; p0 < n; p0 += kPiece) {
        const int64_t pn = n - p0 < kPiece ? n - p0 : kPiece;
        R::stage(stage + kChunk + p0, stage + p0, blocks, pn, inter);
        if (!inter)
          rows<false>(j0 + p0, pn);
        else
          rows<true>(j0 + p0, pn);
      }
    }

    // The piece's pairs [j, j + n) in every head row of every tensor, from its blocks, P pairs a step: the
    // halves form (x at row[i], y at row[h + i]) or interleaved pairs (x at row[2i], y at row[2i + 1]); in
    // place, or from the source rows. The loops are inlined into the flush (a call per row, its frame and
    // tail buffers, cost about as many instructions on NEON as the rotation of 16 pairs), the tests that
    // do not change within a tensor out of them (a test per step cost NEON 0.1 instructions an element). A
    // source pair is read before its destination is written, so a row rotated in place and one rotated from
    // a copy get the same bytes.
    template <bool kInter>
    [[gnu::always_inline]] inline void rows(int64_t j, int64_t n) {
      constexpr int64_t E = kInter ? 2 : 1;   // elements of a pair along the row
      const int64_t yo = kInter ? 0 : job.h;  // where a pair's y is, from its x (interleaved: the step finds it)
      const int64_t full = n / P * P;
      for (const detail::RopeTensor &t : job.t) {
        if (t.heads == 0) continue;  // a call of one tensor: the second is empty, its pointers NULL
        T *row = static_cast<T *>(t.x) + token * t.token_stride + E * j;
        const T *src = static_cast<const T *>(t.src) + token * t.src_token_stride + E * j;
        // the same source row of the next token, which comes next in every layout but [H, T, D]; from a
        // separate source, two tokens ahead, and the destination's row too (tools/ab/rope.c: 7-12% off a
        // Llama-2-7B NEOX prefill's one-pass rotation, 2048 x 32 x 128, on an AMD EPYC)
        const bool apart = t.src != t.x;
        const int64_t k = apart ? kCopyAhead : 1;
        const int64_t ahead = token + k < job.n ? k * t.src_token_stride : 0;
        const int64_t dahead = apart && token + kCopyAhead < job.n ? kCopyAhead * t.token_stride : 0;
        if (dahead)
          heads<kInter, true>(t, row, src, yo, full, ahead, dahead);
        else
          heads<kInter, false>(t, row, src, yo, full, ahead, 0);
        if (full == n) continue;
        // the last m < P pairs of each row, through buffers: nothing outside the row's pairs is read or written
        const double *blk = blocks + full / P * R::template block<kInter>();
        const int64_t m = n - full;
        for (int64_t hd = 0; hd < t.heads; ++hd) {
          T *xd = row + hd * t.head_stride + E * full;
          const T *xs = src + hd * t.src_head_stride + E * full;
          alignas(64) T bx[E * P] = {}, by[P] = {};
          std::memcpy(bx, xs, sizeof(T) * size_t(E * m));
          if (!kInter) std::memcpy(by, xs + yo, sizeof(T) * size_t(m));
          if (!step<kInter>(bx, by, bx, by, blk)) nan_step<kInter>(bx, by, bx, by, blk, m);
          std::memcpy(xd, bx, sizeof(T) * size_t(E * m));
          if (!kInter) std::memcpy(xd + yo, by, sizeof(T) * size_t(m));
        }
      }
    }
    // The whole steps, pairs [0, full), of every head row of tensor t from row (and src).
    template <bool kInter, bool kDest>
    [[gnu::always_inline]] inline void heads(const detail::RopeTensor &t, T *row, const T *src, int64_t yo,
                                             int64_t full, int64_t ahead, int64_t dahead) const {
      constexpr int64_t E = kInter ? 2 : 1;
      constexpr int64_t kBlock = R::template block<kInter>();
      for (int64_t hd = 0; hd < t.heads; ++hd) {
        // each head's row from the tensor's first: a pointer stepped past the last head would wrap where
        // heads is 1 and its stride is anything (UBSan, fuzz_api)
        const double *blk = blocks;
        const T *xs = src + hd * t.src_head_stride, *ys = xs + yo, *const end = xs + E * full;
        T *xd = row + hd * t.head_stride, *yd = xd + yo;
        for (; xs != end; xs += E * P, ys += E * P, xd += E * P, yd += E * P, blk += kBlock) {
          // the next token's row into L1 while this one is rotated: the loop is bound by its arithmetic, and
          // without it the loads of a prefill waited on L2 and L3 (1.3x the in-place pass's time)
          __builtin_prefetch(xs + ahead, 1, 3);
          if (!kInter) __builtin_prefetch(ys + ahead, 1, 3);
          if (kDest) {
            __builtin_prefetch(xd + dahead, 1, 3);
            if (!kInter) __builtin_prefetch(yd + dahead, 1, 3);
          }
          if (__builtin_expect(!step<kInter>(xs, ys, xd, yd, blk), 0)) nan_step<kInter>(xs, ys, xd, yd, blk, P);
        }
      }
    }
    template <bool kInter>
    [[gnu::always_inline]] static inline bool step(const T *xs, const T *ys, T *xd, T *yd, const double *blk) {
      if constexpr (kInter)
        return R::interleaved(xs, xd, blk);
      else
        return R::halves(xs, ys, xd, yd, blk);
    }
    // The first m pairs of a step whose results hold a NaN, by the NaN rule, W pairs at a time.
    template <bool kInter>
    [[gnu::noinline, gnu::cold]] static void nan_step(const T *xs, const T *ys, T *xd, T *yd, const double *blk,
                                                      int64_t m) {
      alignas(64) double c[P], s[P];
      R::template unpack<kInter>(blk, c, s);
      for (int64_t v = 0; v < m; v += W) {
        const int64_t k = v + W <= m ? W : m - v;
        if (kInter)
          nan_vector(xs + 2 * v, xs + 2 * v + 1, xd + 2 * v, xd + 2 * v + 1, 2, c + v, s + v, k);
        else
          nan_vector(xs + v, ys + v, xd + v, yd + v, 1, c + v, s + v, k);
      }
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
      S::store(a, S::widen(R::load_t(in)));
      for (int64_t l = 0; l < m; ++l) in[l] = ys[k * l];
      S::store(b, S::widen(R::load_t(in)));
      for (int64_t l = 0; l < m; ++l) {
        u[l] = std::fma(a[l], c[l], -(b[l] * s[l]));
        v[l] = std::fma(b[l], c[l], a[l] * s[l]);
        const double first = a[l] != a[l] ? a[l] : b[l] != b[l] ? b[l] : dflt;
        if (u[l] != u[l]) u[l] = first;
        if (v[l] != v[l]) v[l] = first;
      }
      R::store_t(out, R::narrow_t(S::load(u)));
      for (int64_t l = 0; l < m; ++l) xd[k * l] = out[l];
      R::store_t(out, R::narrow_t(S::load(v)));
      for (int64_t l = 0; l < m; ++l) yd[k * l] = out[l];
    }
  };
};

}  // namespace posenc
