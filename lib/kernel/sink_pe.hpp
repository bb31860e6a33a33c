// The sinks of the positional-encoding calls: PE tables (float32, bf16, f16) and the fused operations
// fmaf(scale, x, PE) with x from activations or gathered embedding-table rows (posenc_table_*, _rows_*,
// _add_f32, _embed_*). values_rows.hpp drives them row by row and chunk by chunk.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernel/job.hpp"
#include "kernel/lanes.hpp"
#include "posenc/posenc.h"

namespace posenc {

template <class S>
struct PeSinks {
  using F = typename S::F;
  using L = Lanes<S>;
  static constexpr int W = S::W;
  static constexpr int64_t kChunk = Lanes<S>::kChunk;
  static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
  static F fused(const F &scale, const F &x, const F &y) { return L::fused(scale, x, y); }
  template <class T, bool kBF16>
  static F load_split(const T *a, const T *b) {
    return L::template load_split<T, kBF16>(a, b);
  }
  template <class T, bool kBF16>
  static F load2(const T *p) {
    return L::template load2<T, kBF16>(p);
  }
  template <class T, bool kBF16>
  static void store_split(T *a, T *b, const F &v) {
    L::template store_split<T, kBF16>(a, b, v);
  }
  template <class T, bool kBF16>
  static void store2(T *p, const F &v) {
    L::template store2<T, kBF16>(p, v);
  }

  // Writes rows of one call: PE alone, or fmaf(scale, x, PE) with x from activations or a gathered table.
  // kZip: the interleaved layout (values arrive interleaved); otherwise the halves, at soff and coff.
  // Rows are written chunk by chunk (at most kChunk pairs): chunk() points the puts at the chunk's place in
  // the row, or, for float32 outputs far larger than the caches, at an L1 stage that flush() then copies
  // out with non-temporal stores (whatever the destination's alignment).
  template <detail::Src kSrc, detail::Dst kDst, bool kZip>
  struct Sink {
    using OutT = typename std::conditional<kDst == detail::Dst::kF32, float, uint16_t>::type;
    using InT = typename std::conditional<kSrc == detail::Src::kTableBF16 || kSrc == detail::Src::kTableF16, uint16_t,
                                          float>::type;
    static constexpr bool kHasX = kSrc != detail::Src::kNone;
    static constexpr bool kOutBF16 = kDst == detail::Dst::kBF16;
    static constexpr bool kInBF16 = kSrc == detail::Src::kTableBF16;
    static constexpr bool kInterleaved = kZip;
    static constexpr bool kScaled = false;  // values_rows.hpp: plain sin and cos
    static constexpr bool kUseClear = true;
    static constexpr bool kAxes = false;  // values_rows.hpp: one position per row

    alignas(64) float stage[2 * kChunk];  // interleaved values, or the sin run then (at kChunk) the cos run
    const detail::Job &job;
    int64_t soff, coff;  // halves: where the sin and the cos run of a row start
    F scale;
    bool staged;              // far larger than the caches: non-temporal stores, through the stage unless aligned
    bool direct;              // ... and every full vector store is aligned: non-temporal stores straight to the row
    OutT *row_out = nullptr;  // the current row
    const InT *row_x = nullptr;
    const InT *next_x = nullptr;        // the x row of row r + ahead (row()), which takes this row's place next
    OutT *os = nullptr, *oc = nullptr;  // the current chunk: where its sin (or all) and cos values go
    const InT *xs = nullptr, *xc = nullptr;
    const InT *pfs = nullptr, *pfc = nullptr;  // the same chunk of next_x

    explicit Sink(const detail::Job &j)
        : job(j),
          soff(j.layout == POSENC_COS_SIN_HALVES ? j.h : 0),
          coff(j.layout == POSENC_COS_SIN_HALVES ? 0 : j.h),
          scale(S::splat(j.scale)),
          staged(kDst == detail::Dst::kF32 && S::kCanStream && j.stream),
          direct(staged && aligned_rows()) {}

    // Every full vector store of the call lands on a multiple of its own size (runtimes usually allocate
    // 64-byte aligned rows): then the stage copy can be skipped.
    bool aligned_rows() const {
      const size_t unit = sizeof(float) * (kZip ? 2 * W : W);
      const auto addr = reinterpret_cast<uintptr_t>(job.out);
      bool ok = addr % unit == 0 && (size_t(job.out_stride) * sizeof(float)) % unit == 0;
      if (!kZip) ok = ok && (size_t(job.h) * sizeof(float)) % unit == 0 && (kChunk * sizeof(float)) % unit == 0;
      return ok;
    }

    // Row r; its puts prefetch the x of row r + ahead (ahead may be negative), the row that takes its
    // place next.
    void row(int64_t r, int64_t ahead = 1) {
      row_out = static_cast<OutT *>(job.out) + r * job.out_stride;
      const int64_t next = r + ahead >= 0 && r + ahead < job.n ? r + ahead : r;
      if constexpr (kSrc == detail::Src::kActivations) {
        row_x = static_cast<const InT *>(job.x) + r * job.x_stride;
        next_x = static_cast<const InT *>(job.x) + next * job.x_stride;
      } else if constexpr (kHasX) {
        row_x = static_cast<const InT *>(job.x) + int64_t(job.tokens[r]) * job.x_stride;
        next_x = static_cast<const InT *>(job.x) + int64_t(job.tokens[next]) * job.x_stride;
      }
    }

    // The chunk of pairs from j0 of the current row; puts take pair indices relative to j0.
    void chunk(int64_t j0) {
      if constexpr (kHasX) {
        xs = kZip ? row_x + 2 * j0 : row_x + soff + j0;
        xc = row_x + coff + j0;
        pfs = kZip ? next_x + 2 * j0 : next_x + soff + j0;
        pfc = next_x + coff + j0;
      }
      if constexpr (kDst == detail::Dst::kF32) {
        if (staged && !direct) {
          os = stage;
          oc = stage + kChunk;
          return;
        }
      }
      os = kZip ? row_out + 2 * j0 : row_out + soff + j0;
      oc = row_out + coff + j0;
    }

    // The chunk's n pairs from j0 are complete: copy them out of the stage.
    void flush(int64_t j0, int64_t n) {
      if constexpr (kDst == detail::Dst::kF32) {
        if (!staged || direct) return;
        if (kZip) {
          S::stream_copy(row_out + 2 * j0, stage, 2 * n);
        } else {
          S::stream_copy(row_out + soff + j0, stage, n);
          S::stream_copy(row_out + coff + j0, stage + kChunk, n);
        }
      }
    }

    static F combine_x(const F &scale, const F &pe, const F &xv) { return fused(scale, xv, pe); }
    F combine_x(const F &pe, const F &xv) const { return combine_x(scale, pe, xv); }
    // Inlined always: an out-of-line copy has no side effect GCC can see, so it was found to be a const
    // function and every call to it deleted.
    [[gnu::always_inline]] static inline void prefetch_x(const InT *p) { __builtin_prefetch(p, 0, 1); }

    // Where the current chunk's full vectors go, as a value: the row loops copy it into a local, which no
    // store of theirs can alias, so that its pointers stay in registers (stores through the vector types,
    // which may alias anything, made GCC reload them from the sink after every store).
    struct Out {
      static constexpr bool kZipped = kZip;
      static constexpr bool kHasX = Sink::kHasX;
      static constexpr bool kScaled = false;
      OutT *os, *oc;
      const InT *xs, *xc, *pfs, *pfc;
      F scale;

      // pe holds the W pairs from j0 + jj (interleaved, or [sin lanes | cos lanes] for the halves).
      // kNt: non-temporal stores straight to the row (only when direct).
      template <bool kNt = false>
      [[gnu::always_inline]] inline void put(int64_t jj, const F &pe) const {
        put_impl<kNt, false>(jj, pe);
      }
      // The same, except that a NaN result is not written: false then (the loops leave such a vector to
      // put(), whose NaN rule is a call that would push their constants out of registers).
      template <bool kNt = false>
      [[gnu::always_inline]] inline bool put_fast(int64_t jj, const F &pe) const {
        return put_impl<kNt, true>(jj, pe);
      }
      template <bool kNt, bool kFast>
      [[gnu::always_inline]] inline bool put_impl(int64_t jj, const F &pe) const {
        F v = pe;
        if constexpr (kZip) {
          if constexpr (kHasX) {
            // x rows are read in chunk-sized pieces of rows far apart (gathered tokens): too short for the
            // hardware prefetcher, so ask for the same piece of the next row's x (a row's time ahead).
            // Into L2 only (prefetcht2), where a row's piece waits for its turn without taking L1 space;
            // measured no slower than prefetcht0, and not clearly faster (docs/math.md section 7).
            prefetch_x(pfs + 2 * jj);
            if (!combine<kFast>(v, load2<InT, kInBF16>(xs + 2 * jj))) return false;
          }
          if constexpr (kNt && kDst == detail::Dst::kF32)
            S::stream_f(os + 2 * jj, v);
          else
            store2<OutT, kOutBF16>(os + 2 * jj, v);
        } else {
          if constexpr (kHasX) {
            prefetch_x(pfs + jj);
            prefetch_x(pfc + jj);
            if (!combine<kFast>(v, load_split<InT, kInBF16>(xs + jj, xc + jj))) return false;
          }
          if constexpr (kNt && kDst == detail::Dst::kF32) {
            S::stream_h(os + jj, S::lo(v));
            S::stream_h(oc + jj, S::hi(v));
          } else {
            store_split<OutT, kOutBF16>(os + jj, oc + jj, v);
          }
        }
        return true;
      }
      // v = fmaf(scale, x, v); with kFast, false instead of the NaN rule when the result has a NaN.
      template <bool kFast>
      [[gnu::always_inline]] inline bool combine(F &v, const F &x) const {
        if constexpr (kFast) {
          v = S::fmaf(scale, x, v);
          return !S::any_nan(v);
        } else {
          v = combine_x(scale, v, x);
          return true;
        }
      }
      // The same for the last vector of a chunk when only its first m < W pairs are real: through buffers,
      // so that nothing outside the row is read or written.
      void put_partial(int64_t jj, const F &pe, int64_t m) const {
        F v = pe;
        alignas(64) OutT o[2 * W];
        if constexpr (kZip) {
          if constexpr (kHasX) {
            alignas(64) InT t[2 * W] = {};
            std::memcpy(t, xs + 2 * jj, sizeof(InT) * size_t(2 * m));
            v = combine_x(scale, v, load2<InT, kInBF16>(t));
          }
          store2<OutT, kOutBF16>(o, v);
          std::memcpy(os + 2 * jj, o, sizeof(OutT) * size_t(2 * m));
        } else {
          if constexpr (kHasX) {
            alignas(64) InT t[2 * W] = {};
            std::memcpy(t, xs + jj, sizeof(InT) * size_t(m));
            std::memcpy(t + W, xc + jj, sizeof(InT) * size_t(m));
            v = combine_x(scale, v, load2<InT, kInBF16>(t));
          }
          store2<OutT, kOutBF16>(o, v);
          std::memcpy(os + jj, o, sizeof(OutT) * size_t(m));
          std::memcpy(oc + jj, o + W, sizeof(OutT) * size_t(m));
        }
      }
    };
    Out out() const { return Out{os, oc, xs, xc, pfs, pfc, scale}; }

    template <bool kNt = false>
    void put(int64_t jj, const F &pe) const {
      out().template put<kNt>(jj, pe);
    }

    void put_partial(int64_t jj, const F &pe, int64_t m) const { out().put_partial(jj, pe, m); }

    // The 0.0 column of an odd d_model (with x added when there is an x).
    void finish() {
      if ((job.d & 1) == 0) return;
      const int64_t e = job.d - 1;
      if constexpr (!kHasX) {
        row_out[e] = OutT(0);
      } else {
        alignas(64) InT t[2 * W] = {};
        t[0] = row_x[e];
        const F v = combine_x(S::splat(0.0f), load2<InT, kInBF16>(t));
        alignas(64) OutT o[2 * W];
        store2<OutT, kOutBF16>(o, v);
        row_out[e] = o[0];
      }
    }

    // The same value vector for all n pairs of the current chunk.
    void fill(const F &val, int64_t n) {
      for (int64_t jj = 0; jj < n; jj += W) Lanes<S>::put_upto(*this, jj, val, n);
    }

    // A POSENC_PAD row: PE is +0.0 everywhere.
    void pad(int64_t r) {
      row(r);
      for (int64_t j0 = 0; j0 < job.h; j0 += kChunk) {
        const int64_t jn = min64(kChunk, job.h - j0);
        chunk(j0);
        fill(S::splat(0.0f), jn);
        flush(j0, jn);
      }
      finish();
    }
  };
};

}  // namespace posenc
