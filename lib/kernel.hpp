// The positional-encoding kernel, written once over the vector interface Simd<A> (simd_*.hpp) and
// instantiated by one translation unit per ISA. Every function here is a member of Engine<S>, so each
// ISA's copy has its own symbols and no inline code is shared between units built with different flags.
//
// Three ways to get an element, cheapest first; docs/math.md has the error analysis behind each bound.
//  - Rotation (most elements): a block of up to 65 consecutive positions has its anchor in the middle
//    (anchor_values: a shorter form of the direct method, absolute error below 2^-51.4); the row k
//    positions away is the anchor turned by the tabulated rotation of |k| steps, forwards or backwards
//    (angle addition in double), absolute error below 2^-48.69. On AVX-512 the rows k and -k share their
//    products and four rows are written together; elsewhere one at a time.
//  - Direct (the fallback, and the rotation tables): the angle in quarter turns p u_i reduced with
//    error-free transformations, then Taylor polynomials of sin and cos of (pi/2) t on |t| <= 1/2.
//    Error below 2^-47 |y| + 2^-97 min(1, |p u0|) (the analysis gives 2^-50 |y|; the rest is margin).
//  - Exact (exact.cpp): integer multi-precision, for what the direct method cannot settle.
// An element is written only when its error interval provably contains no float32 rounding boundary, so
// the value written is the correctly rounded one, whichever method and path produced it. That is what
// makes every path, every block split and every row range return the same bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exact.hpp"
#include "job.hpp"
#include "posenc/posenc.h"

namespace posenc {

template <class S>
struct Engine {
  using D = typename S::D;
  using F = typename S::F;
  using H = typename S::H;
  static constexpr int W = S::W;
  static constexpr int64_t kBlock = detail::Freq::kBlock;  // rows turned from one anchor
  // Pairs whose anchors live on the stack at once. The quad pass reads each row's x in pieces of a chunk,
  // where longer pieces measured faster (the fused embedding at d = 4096: 0.92x the time with 1024 pairs
  // instead of 512; 2048 no better); row by row, the anchors and tables of 1024 pairs overflow L1.
  static constexpr int64_t kChunk = S::kQuadPass ? 1024 : 512;

  static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

  // ---- the direct method ------------------------------------------------------------------------

  // pi/2 as a double-double, and the Taylor coefficients of sin(pi t/2) (odd k) and cos(pi t/2) (even k):
  // (-1)^floor(k/2) (pi/2)^k / k!, correctly rounded (tools/gen_coefficients.cpp, tests/test_constants.cpp).
  static constexpr double kHalfPiHi = 0x1.921fb54442d18p+0, kHalfPiLo = 0x1.1a62633145c07p-54;
  static constexpr double kS3 = -0x1.4abbce625be53p-1, kS5 = 0x1.466bc6775aae2p-4, kS7 = -0x1.32d2cce62bd86p-8,
                          kS9 = 0x1.50783487ee782p-13, kS11 = -0x1.e3074fde8871fp-19,
                          kS13 = 0x1.e8f434d018d63p-25, kS15 = -0x1.6fadb9f155744p-31,
                          kS17 = 0x1.aaec32af93359p-38;
  static constexpr double kC2 = -0x1.3bd3cc9be45dep+0, kC4 = 0x1.03c1f081b5ac4p-2, kC6 = -0x1.55d3c7e3cbffap-6,
                          kC8 = 0x1.e1f506891babbp-11, kC10 = -0x1.a6d1f2a204a8cp-16,
                          kC12 = 0x1.f9d38a3763cc3p-22, kC14 = -0x1.b6e24f44b128fp-28,
                          kC16 = 0x1.20c62c2f2d7f5p-34, kC18 = -0x1.2a0c591af8314p-41;

  // sin and cos of the angle p * u_j (quarter turns) for the W pairs from j; q = fl(p u0) is returned for
  // the error bound of direct().
  static void direct_values(double p, const detail::Freq &f, int64_t j, D &s, D &c, D &q_out) {
    const D pd = S::set(p);
    const D u0 = S::load(f.u0 + j), u1 = S::load(f.u1 + j), u2 = S::load(f.u2 + j);
    // p u = q + e0 + m1 + e1 + p u2, with q = fl(p u0) and e0, e1 the exact errors of the two products
    const D q = pd * u0;
    const D e0 = S::fma(pd, u0, -q);
    const D y = q + S::set(kRound);
    const D n = y - S::set(kRound);  // nearest integer to q (|q| < 2^32)
    const D th = q - n;              // exact (Sterbenz)
    const D m1 = pd * u1;
    const D e1 = S::fma(pd, u1, -m1);
    // t + tl = th + e0 + m1 + e1 + p u2 by two error-free sums; |error| < 2^-105 quarter turns
    const D a = e0 + m1;
    const D av = a - e0;
    const D ea = (e0 - (a - av)) + (m1 - av);
    const D t = th + a;
    const D tv = t - th;
    const D eb = (th - (t - tv)) + (a - tv);
    const D tl = eb + (ea + (e1 + pd * u2));
    const D z = t * t;
    // sin(pi t/2): the linear term in double-double, the rest by Horner in z
    D ps = S::fma(S::set(kS17), z, S::set(kS15));
    ps = S::fma(ps, z, S::set(kS13));
    ps = S::fma(ps, z, S::set(kS11));
    ps = S::fma(ps, z, S::set(kS9));
    ps = S::fma(ps, z, S::set(kS7));
    ps = S::fma(ps, z, S::set(kS5));
    ps = S::fma(ps, z, S::set(kS3));
    const D hpi = S::set(kHalfPiHi);
    const D lin = hpi * t;
    D lo = S::fma(hpi, t, -lin);
    lo = S::fma(S::set(kHalfPiLo), t, lo);
    lo = S::fma(hpi, tl, lo);
    const D sn = lin + S::fma(t * z, ps, lo);
    D pc = S::fma(S::set(kC18), z, S::set(kC16));
    pc = S::fma(pc, z, S::set(kC14));
    pc = S::fma(pc, z, S::set(kC12));
    pc = S::fma(pc, z, S::set(kC10));
    pc = S::fma(pc, z, S::set(kC8));
    pc = S::fma(pc, z, S::set(kC6));
    pc = S::fma(pc, z, S::set(kC4));
    pc = S::fma(pc, z, S::set(kC2));
    const D cs = S::fma(z, pc, S::set(1.0));
    quadrant(y, sn, cs, s, c);
    q_out = q;
  }
  static void direct_values(double p, const detail::Freq &f, int64_t j, double *s, double *c) {
    D sv, cv, q;
    direct_values(p, f, j, sv, cv, q);
    S::store(s, sv);
    S::store(c, cv);
  }

  // The block anchors: sin and cos at p for the W pairs from j with an absolute error below 2^-51.4
  // (docs/math.md section 3, "anchors"), about half the work of direct_values. The rotation path needs
  // only an absolute bound (its analysis assumes 2^-50 per component), not the relative one that
  // settle() needs near zeros, so the reduction keeps t to 2^-54 (no double-double tail) and the
  // series stop at degrees 15 and 16. Inlined so that consecutive vectors overlap.
  [[gnu::always_inline]] static inline void anchor_values(double p, const detail::Freq &f, int64_t j, double *s_out,
                                                          double *c_out) {
    const D pd = S::set(p);
    const D u0 = S::load(f.u0 + j);
    const D q = pd * u0;
    const D e0 = S::fma(pd, u0, -q);  // exact
    const D y = q + S::set(kRound);
    const D n = y - S::set(kRound);                      // nearest integer to q (|q| < 2^32)
    const D th = q - n;                                  // exact (Sterbenz)
    const D t = th + S::fma(pd, S::load(f.u1 + j), e0);  // |error| < 2^-54 + 2^-72 quarter turns
    // Both series in z = t^2 by Estrin's scheme (the same rounding behaviour as Horner's here, where
    // every higher term is far smaller than the first, and half the dependent steps).
    const D z = t * t;
    const D z2 = z * z;
    const D z4 = z2 * z2;
    const D s_lo = S::fma(S::fma(S::set(kS9), z, S::set(kS7)), z2, S::fma(S::set(kS5), z, S::set(kS3)));
    const D s_hi = S::fma(S::set(kS15), z2, S::fma(S::set(kS13), z, S::set(kS11)));
    const D ps = S::fma(s_hi, z4, s_lo);
    const D sn = S::fma(t * z, ps, S::set(kHalfPiHi) * t);
    const D c_lo = S::fma(S::fma(S::set(kC8), z, S::set(kC6)), z2, S::fma(S::set(kC4), z, S::set(kC2)));
    const D c_hi = S::fma(S::fma(S::set(kC16), z, S::set(kC14)), z2, S::fma(S::set(kC12), z, S::set(kC10)));
    const D pc = S::fma(c_hi, z4, c_lo);
    const D cs = S::fma(z, pc, S::set(1.0));
    D s, c;
    quadrant(y, sn, cs, s, c);
    S::store(s_out, s);
    S::store(c_out, c);
  }

  // (sin, cos) of n quarter turns plus the reduced angle whose sin and cos are sn, cs, with y = n + kRound
  // (S::quadrant reads n mod 4 from y's low bits); + 0 turns the -0 of p = 0 into +0.
  [[gnu::always_inline]] static inline void quadrant(const D &y, const D &sn, const D &cs, D &s, D &c) {
    S::quadrant(y, sn, cs, s, c);
    const D zero = S::set(0.0);
    s = s + zero;
    c = c + zero;
  }

  // 1.5 2^52: for |x| < 2^51, fl(x + kRound) - kRound is x rounded to the nearest integer (ties to even,
  // the mode every call runs in, fpenv.hpp), exactly, and the low bits of fl(x + kRound) hold it.
  static constexpr double kRound = 0x1.8p52;

  // The same with error bounds bs, bc; +inf for the lanes marked slow.
  static void direct(double p, const detail::Freq &f, int64_t j, D &s, D &c, D &bs, D &bc) {
    D q;
    direct_values(p, f, j, s, c, q);
    const D absolute = S::set(0x1p-97) * S::min(S::abs(q), S::set(1.0)) + S::load(f.slow + j);
    bs = S::fma(S::abs(s), S::set(0x1p-47), absolute);
    bc = S::fma(S::abs(c), S::set(0x1p-47), absolute);
  }

  // The rotation path's values s, c failed the fast test (fast_check.hpp). Most of those are settled by
  // the exact interval test with the rotation path's own bound; the rest by the direct method.
  template <bool kZip>
  static F settle_turned(const detail::Freq &f, int64_t p, int64_t j, const D &s, const D &c) {
    const D delta = S::set(kTurnedBound);
    const F lo = S::narrow2(s - delta, c - delta);
    // Equal ends settle it (rounding is monotone). A value within delta of zero cannot pass: its ends
    // have opposite signs, and delta is far above the float32 underflow threshold.
    if (S::same_bits(lo, S::narrow2(s + delta, c + delta))) return kZip ? S::zip(lo) : lo;
    return settle<kZip>(f, p, j);
  }

  // The absolute error of the rotation path (docs/math.md section 4): the anchor's sqrt2 2^-51, the table
  // entry's sqrt2 2^-50 and the turn's two roundings per component, sqrt2 2^-52, give 2.48 2^-50 =
  // 2^-48.69; this is that bound plus the rounding of y +- delta (2^-53), 2.75 2^-50.
  static constexpr double kTurnedBound = 0x1.6p-49;

  // The correctly rounded floats of the W pairs from j at position p: [sin lanes | cos lanes], or
  // interleaved sin, cos, sin, cos ... when kZip.
  template <bool kZip>
  static F settle(const detail::Freq &f, int64_t p, int64_t j) {
    D s, c, bs, bc;
    direct(double(p), f, j, s, c, bs, bc);
    const F lo = S::narrow2(s - bs, c - bc);
    const F hi = S::narrow2(s + bs, c + bc);
    if (S::same_bits(lo, hi)) return kZip ? S::zip(lo) : lo;
    alignas(64) float a[2 * W], b[2 * W];
    S::store_f(a, lo);
    S::store_f(b, hi);
    for (int l = 0; l < W; ++l) {
      if (std::memcmp(&a[l], &b[l], 4) == 0 && std::memcmp(&a[W + l], &b[W + l], 4) == 0) continue;
      uint32_t sb, cb;
      detail::exact_sincos_bits(f.exact[j + l], p, &sb, &cb);
      std::memcpy(&a[l], &sb, 4);
      std::memcpy(&a[W + l], &cb, 4);
    }
    return kZip ? S::zip(S::load_f(a)) : S::load_f(a);
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

  // ---- where the values go -------------------------------------------------------------------------

  // Loads and stores of 2W elements, contiguous or as two runs of W, converting to and from float32.
  // load_split: lanes [0, W) from a, [W, 2W) from b.
  template <class T, bool kBF16>
  static F load_split(const T *a, const T *b) {
    if constexpr (sizeof(T) == 4) return S::combine(S::load_h(a), S::load_h(b));
    else if constexpr (kBF16) return S::load2_bf16(a, b);
    else return S::load2_f16(a, b);
  }
  template <class T, bool kBF16>
  static F load2(const T *p) {
    if constexpr (sizeof(T) == 4) return S::load_f(p);
    else return load_split<T, kBF16>(p, p + W);
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
    if constexpr (sizeof(T) == 4) S::store_f(p, v);
    else store_split<T, kBF16>(p, p + W, v);
  }

  // Writes rows of one call: PE alone, or fmaf(scale, x, PE) with x from activations or a gathered table.
  // kZip: the interleaved layout (values arrive interleaved); otherwise the halves, at soff and coff.
  // Rows are written chunk by chunk (at most kChunk pairs): chunk() points the puts at the chunk's place in
  // the row, or, for float32 outputs far larger than the caches, at an L1 stage that flush() then copies
  // out with non-temporal stores (whatever the destination's alignment).
  template <detail::Src kSrc, detail::Dst kDst, bool kZip>
  struct Sink {
    using OutT = typename std::conditional<kDst == detail::Dst::kF32, float, uint16_t>::type;
    using InT = typename std::conditional<kSrc == detail::Src::kTableBF16 || kSrc == detail::Src::kTableF16,
                                          uint16_t, float>::type;
    static constexpr bool kHasX = kSrc != detail::Src::kNone;
    static constexpr bool kOutBF16 = kDst == detail::Dst::kBF16;
    static constexpr bool kInBF16 = kSrc == detail::Src::kTableBF16;
    static constexpr bool kInterleaved = kZip;

    alignas(64) float stage[2 * kChunk];  // interleaved values, or the sin run then (at kChunk) the cos run
    const detail::Job &job;
    int64_t soff, coff;  // halves: where the sin and the cos run of a row start
    F scale;
    bool staged;  // far larger than the caches: non-temporal stores, through the stage unless aligned
    bool direct;  // ... and every full vector store is aligned: non-temporal stores straight to the row
    OutT *row_out = nullptr;  // the current row
    const InT *row_x = nullptr;
    const InT *next_x = nullptr;  // the x row of row r + ahead (row()), which takes this row's place next
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
          if constexpr (kNt && kDst == detail::Dst::kF32) S::stream_f(os + 2 * jj, v);
          else store2<OutT, kOutBF16>(os + 2 * jj, v);
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
      for (int64_t jj = 0; jj < n; jj += W) {
        if (n - jj >= W) put(jj, val);
        else put_partial(jj, val, n - jj);
      }
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

  // ---- the row loop --------------------------------------------------------------------------------

  // Turns (s, c) by the angle whose sin and cos are ts, tc: angle addition, two products and two fused
  // operations, each component one rounded product and one fused rounding (docs/math.md section 4).
  static void turn(D &s, D &c, const D &ts, const D &tc) {
    const D s1 = S::fma(s, tc, c * ts);
    c = S::fms(c, tc, s * ts);
    s = s1;
  }

  // Vectors whose rounding the fast test could not settle, or whose fused result has a NaN, left for
  // after the loop so that the loop itself makes no call (which would force its constants out of
  // registers, and did: GCC kept the scale on the stack for the NaN rule's call).
  using Redo = int16_t;

  // The sin and cos vectors of a table entry or anchor block at p (the cos kLanes further), each loaded
  // once: S::pin keeps GCC from folding the load into every instruction that uses it.
  [[gnu::always_inline]] static inline void load_pair(const double *p, D &s, D &c) {
    s = S::load(p);
    c = S::load(p + detail::Freq::kLanes);
    S::pin(s);
    S::pin(c);
  }

  // Turns (s, c) by the table entry at t.
  [[gnu::always_inline]] static inline void turn_by(D &s, D &c, const double *t) {
    D ts, tc;
    load_pair(t, ts, tc);
    turn(s, c, ts, tc);
  }

  // Turns (s, c) back by the table entry at t: the angle less the entry's.
  [[gnu::always_inline]] static inline void turn_back_by(D &s, D &c, const double *t) {
    D ts, tc;
    load_pair(t, ts, tc);
    const D s1 = S::fnma(c, ts, s * tc);  // s tc - c ts
    c = S::fma(s, ts, c * tc);            // c tc + s ts
    s = s1;
  }

  // Where the vector of pairs v W .. v W + W - 1 of a chunk sits in a step entry or an anchor block,
  // relative to the chunk's first pair (a multiple of kLanes, so the offset does not depend on it).
  static constexpr int64_t block_offset(int64_t v) { return detail::Freq::block_at(v * W); }

  // body(v, offset of v in the step and anchor blocks) for v < n: the kLanes / W vectors of a table block
  // in one unrolled step, so that narrower vectors also find their entries at fixed displacements (with
  // W = 4 the offsets took more scalar operations than the rest of the loop).
  // The bodies capture by value all but the redo count: a variable captured by reference has its address
  // taken, and after every vector store (which may alias anything) GCC loaded it again; that cost the
  // AVX2 loops a third more instructions (callgrind) and the AVX-512 embedding 8% of its time.
  template <class Body>
  [[gnu::always_inline]] static inline void for_vectors(int64_t n, Body &&body) {
    constexpr int64_t P = detail::Freq::kLanes / W;
    int64_t v = 0, bo = 0;  // the offset of vector v, stepped a block at a time
    for (; v + P <= n; v += P, bo += block_offset(P)) {
#pragma GCC unroll 8
      for (int64_t u = 0; u < P; ++u) body(v + u, bo + u * W);
    }
    for (; v < n; ++v) body(v, block_offset(v));
  }

  // Narrows, tests and writes one vector of row q of a pass; a vector the fast test cannot settle, or
  // whose fused result has a NaN, goes to the redo list as 4 v + q. kSmall: the whole acceptance test;
  // otherwise its window half only, for vectors known to hold no value near zero (Freq::reach).
  template <bool kNt, bool kSmall = true, class O>
  [[gnu::always_inline]] static inline void emit(const O &o, int64_t v, int q, const D &s, const D &c,
                                                 const typename S::Consts &kc, Redo *redo, int64_t &nr) {
    const F val = O::kZipped ? S::narrow2_zip(s, c, kc) : S::narrow2(s, c);
    bool ok;
    if constexpr (kSmall) ok = S::decided(s, c, val, kc);
    else ok = S::decided_window(s, c);
    if (__builtin_expect(ok, 1) && __builtin_expect(o.template put_fast<kNt>(v * W, val), 1)) return;
    redo[nr++] = Redo(4 * v + q);
  }

  // Four rows of a block, k and k + 1 steps on either side of its anchor A: A turned by +-t1 (the entry of
  // k steps) and +-t2 (k + 1 steps). A row and its mirror share the two products with the entry's cos,
  // so the four rows cost twelve products and fused operations and six loads (docs/math.md section 4).
  struct QuadRows {
    D s[4], c[4];
  };
  [[gnu::always_inline]] static inline void quad_rows(const double *an, const double *t1, const double *t2,
                                                      int64_t bo, QuadRows &r) {
    D as, ac, ts, tc;
    load_pair(an + bo, as, ac);
    load_pair(t1 + bo, ts, tc);
    const D ps = as * tc, pc = ac * tc;
    r.s[0] = S::fma(ac, ts, ps);   // sin(a + t) = sin a cos t + cos a sin t
    r.c[0] = S::fnma(as, ts, pc);  // cos(a + t) = cos a cos t - sin a sin t
    r.s[1] = S::fnma(ac, ts, ps);  // sin(a - t)
    r.c[1] = S::fma(as, ts, pc);   // cos(a - t)
    load_pair(t2 + bo, ts, tc);
    const D qs = as * tc, qc = ac * tc;
    r.s[2] = S::fma(ac, ts, qs);
    r.c[2] = S::fnma(as, ts, qc);
    r.s[3] = S::fnma(ac, ts, qs);
    r.c[3] = S::fma(as, ts, qc);
  }

  // The full vectors of one chunk for the four rows of quad_rows (the rows +k, -k, +(k + 1), -(k + 1)),
  // where the registers hold them (S::kQuadPass). Tables (no x) are software-pipelined by one vector:
  // the turns of vector v + 1 are issued before the narrowing, test and stores of vector v. Each vector's
  // work is one long chain (loads, turn, narrowing, permute, test); written in order, the chains of
  // consecutive vectors overlapped too little on AMD Zen 4, where tables are bound by the arithmetic. And
  // a vector whose clear distance (clear[v], from the anchor: no row within that many steps holds a value
  // near zero) reaches k + 1 skips the small-value half of the acceptance test. The fused operations keep
  // the plain loop: there the x rows, their prefetches and four row pointers take the registers, and
  // either change made the embedding slower (docs/math.md section 7).
  template <bool kNt, class O>
  static int64_t quad_pass(const O *rows, const double *an, const double *t1, const double *t2,
                           const int16_t *clear, int64_t k, int64_t nfull, Redo *redo) {
    // Local copies, which no store of the loop can alias: read through rows, the row pointers were
    // loaded again before every store (Sink::Out says why).
    const O o[4] = {rows[0], rows[1], rows[2], rows[3]};
    int64_t nr = 0;
    typename S::Consts kc = S::consts();
    S::pin_consts(kc);
    if constexpr (O::kHasX) {
      for (int64_t v = 0; v < nfull; ++v) {
        QuadRows r;
        quad_rows(an, t1, t2, block_offset(v), r);
        for (int q = 0; q < 4; ++q) emit<kNt>(o[q], v, q, r.s[q], r.c[q], kc, redo, nr);
      }
      return nr;
    }
    if (nfull == 0) return 0;
    QuadRows next;
    quad_rows(an, t1, t2, 0, next);
    for (int64_t v = 0;; ++v) {
      const QuadRows cur = next;
      const bool more = v + 1 < nfull;
      if (__builtin_expect(more, 1)) quad_rows(an, t1, t2, block_offset(v + 1), next);
      if (clear[v] > k) {
        for (int q = 0; q < 4; ++q) emit<kNt, false>(o[q], v, q, cur.s[q], cur.c[q], kc, redo, nr);
      } else {
        for (int q = 0; q < 4; ++q) emit<kNt, true>(o[q], v, q, cur.s[q], cur.c[q], kc, redo, nr);
      }
      if (!more) break;
    }
    return nr;
  }

  // The full vectors of one chunk for one row: the anchor (kDir 0), or the anchor turned by the entry t
  // forwards (kDir 1) or backwards (kDir -1). Every row on the paths without a quad pass, and on those
  // with one the few rows a quad does not cover (the anchor's own, a last unpaired step, an odd side).
  template <int kDir, bool kNt, class O>
  static int64_t row_pass(const O &row, const double *an, const double *t, int64_t nfull, Redo *redo) {
    const O o = row;  // a local copy, which no store of the loop can alias (Sink::Out)
    int64_t nr = 0;
    typename S::Consts kc = S::consts();
    S::pin_consts(kc);
    for_vectors(nfull, [=, &nr](int64_t v, int64_t bo) {
      D s, c;
      load_pair(an + bo, s, c);
      if constexpr (kDir == 1) turn_by(s, c, t + bo);
      if constexpr (kDir == -1) turn_back_by(s, c, t + bo);
      emit<kNt>(o, v, 0, s, c, kc, redo, nr);
    });
    return nr;
  }

  // Rows r0 .. r0+len-1 all at position p0 (a decode step of a batch or a beam): each chunk's PE floats
  // are made once, from the anchor, into an L1 stage, and every row takes them from there, so a row
  // costs what its loads and stores cost (and the fused operation, with an x).
  template <bool kNt, class K>
  static int64_t put_stage(const K &sink, const float *pe, int64_t nfull, Redo *redo) {
    const typename K::Out out = sink.out();
    int64_t nr = 0;
    for (int64_t v = 0; v < nfull; ++v)
      if (!out.template put_fast<kNt>(v * W, S::load_f(pe + 2 * W * v))) redo[nr++] = Redo(v);
    return nr;
  }
  template <class K>
  [[gnu::noinline]] static void repeated(K &sink, const detail::Freq &f, int64_t h, int64_t r0, int64_t len,
                                         int64_t p0) {
    constexpr bool kZip = K::kInterleaved;
    constexpr int64_t C = 512;  // pairs at a time: no longer pieces to gain here, and less stack
    static_assert(C <= kChunk, "the sink's stage holds kChunk pairs");
    alignas(64) double as[C], ac[C];
    alignas(64) float pe[2 * C];  // vector v of the chunk's values at pe + 2 W v, as put() takes them
    Redo redo[C / W];
    for (int64_t j0 = 0; j0 < h; j0 += C) {
      const int64_t jn = min64(C, h - j0);
      const int64_t nfull = jn / W, nv = (jn + W - 1) / W;  // lanes past h are padding, never written
      if (p0 == 0) {  // the exact zero angle: (+0, 1) everywhere, which the fast test would reject
        const F sc = S::narrow2(S::set(0.0), S::set(1.0));
        for (int64_t v = 0; v < nv; ++v) S::store_f(pe + 2 * W * v, kZip ? S::zip(sc) : sc);
      } else {
        for (int64_t v = 0; v < nv; ++v) anchor_values(double(p0), f, j0 + v * W, as + v * W, ac + v * W);
        for (int64_t v = 0; v < nv; ++v) {
          const D s = S::load(as + v * W), c = S::load(ac + v * W);
          F val = kZip ? S::narrow2_zip(s, c) : S::narrow2(s, c);
          if (!S::decided(s, c, val)) val = settle_turned<kZip>(f, p0, j0 + v * W, s, c);
          S::store_f(pe + 2 * W * v, val);
        }
      }
      for (int64_t k = 0; k < len; ++k) {
        sink.row(r0 + k);
        sink.chunk(j0);
        const int64_t nr = sink.direct ? put_stage<true>(sink, pe, nfull, redo) : put_stage<false>(sink, pe, nfull, redo);
        for (int64_t t = 0; t < nr; ++t) sink.put(redo[t] * W, S::load_f(pe + 2 * W * redo[t]));  // NaN results
        if (nfull < nv) sink.put_partial(nfull * W, S::load_f(pe + 2 * W * nfull), jn - nfull * W);
        sink.flush(j0, jn);
      }
    }
    for (int64_t k = 0; k < len; ++k) {
      sink.row(r0 + k);
      sink.finish();
    }
  }

  // The order in which a quad pass writes the rows of a block of len rows: the quads (rows c + k, c - k,
  // c + k + 1, c - k - 1 for k = 1, 3, ...), then one at a time the rows left over (an unpaired last step,
  // the anchor's own row c = len / 2, and with an even len the first row). Offsets from the block's first
  // row; returns how many of them are in quads.
  static int64_t quad_order(int64_t len, int8_t *order) {
    const int64_t c = len / 2, both = len - 1 - c;
    int64_t i = 0, k = 1;
    for (; k + 1 <= both; k += 2) {
      order[i++] = int8_t(c + k);
      order[i++] = int8_t(c - k);
      order[i++] = int8_t(c + k + 1);
      order[i++] = int8_t(c - k - 1);
    }
    const int64_t in_quads = i;
    for (; k <= both; ++k) {
      order[i++] = int8_t(c + k);
      order[i++] = int8_t(c - k);
    }
    order[i++] = int8_t(c);
    if (both < c) order[i++] = 0;
    return in_quads;
  }

  // Rows r0 .. r0+len-1 hold positions p0 .. p0+len-1 (len <= kBlock). The block's anchor A is the row in
  // the middle, c = len / 2; row c + k is A turned by the step entry of |k| steps, forwards or backwards
  // (k from -c to len - 1 - c, so |k| <= kSteps). On the paths with a quad pass the rows are written in
  // quad_order, four at a time where it can; elsewhere, and for an output written through the stage, one
  // at a time in order. A lone row (a decode step) is the anchor itself.
  // Not inlined into run_sink, and neither is repeated(): their buffers are then never on the stack at
  // the same time.
  template <class K>
  [[gnu::noinline]] static void segment(K &sink, const detail::Freq &f, int64_t h, int64_t r0, int64_t len,
                                        int64_t p0) {
    using detail::Freq;
    constexpr bool kZip = K::kInterleaved;
    constexpr bool kQuads = S::kQuadPass;
    constexpr bool kClear = kQuads && !K::kHasX;  // quad_pass uses clear distances only without x
    const int64_t c = len / 2, pa = p0 + c;       // the anchor's row and position
    alignas(64) double an[2 * kChunk];            // the anchors, in blocks of kLanes pairs like the tables
    int16_t clear[kClear ? kChunk / W : 1];
    Redo redo[(kQuads ? 4 : 1) * kChunk / W];  // a quad pass's, or one row's
    // A lone row (a decode step) takes the row path: through the quad path's setup, a step at d = 64
    // took 1.12x the time.
    const bool quads = kQuads && !(sink.staged && !sink.direct) && len > 1;
    // With an x to add, each row prefetches the x of the row written four rows later, the one that takes
    // its place in the next quad (the first rows of the next block, assumed a full one, at the end): a row
    // whose x nobody prefetched costs the embedding a gather from memory.
    int8_t order[kBlock], next_order[kBlock];
    const int64_t in_quads = quads ? quad_order(len, order) : 0;
    const int64_t r1 = r0 + len, len1 = min64(kBlock, sink.job.n - r1);
    if (quads && len1 > 0) quad_order(len1, next_order);
    auto ahead = [&](int64_t i) {  // for the i-th row written: how far its prefetch row is from it
      const int64_t r = r0 + order[i];
      if (i + 4 < len) return r0 + order[i + 4] - r;
      if (i + 4 - len < len1) return r1 + next_order[i + 4 - len] - r;
      return int64_t(0);
    };
    for (int64_t j0 = 0; j0 < h; j0 += kChunk) {
      const int64_t jn = min64(kChunk, h - j0);
      const int64_t nfull = jn / W, nv = (jn + W - 1) / W;  // lanes past h are padding, never written
      for (int64_t v = 0; v < nv; ++v)
        anchor_values(double(pa), f, j0 + v * W, an + block_offset(v), an + block_offset(v) + Freq::kLanes);
      if constexpr (kClear) {  // only where a quad will read them (not for a lone row: a decode step)
        for (int64_t v = 0; v < (in_quads > 0 ? nfull : 0); ++v) {
          D s, c2;
          load_pair(an + block_offset(v), s, c2);
          clear[v] = int16_t(S::clear_steps(s, c2, S::load(f.reach + j0 + v * W)));
        }
      }
      const double *steps = f.step + f.step_at(j0, 1);  // entry k at steps + (k - 1) * 2 padded
      auto entry = [&](int64_t k) { return steps + (k < 0 ? -k - 1 : k - 1) * 2 * f.padded; };
      // What the fast test left (and NaN fused results), and the partial last vector of a row
      auto value = [&](int64_t v, int64_t k, bool tested) {
        if (pa + k == 0) {  // the exact zero angle: (+0, 1) everywhere, which the fast test rejects
          const F sc = S::narrow2(S::set(0.0), S::set(1.0));
          return kZip ? S::zip(sc) : sc;
        }
        D s, c2;
        load_pair(an + block_offset(v), s, c2);
        if (k > 0) turn_by(s, c2, entry(k) + block_offset(v));
        if (k < 0) turn_back_by(s, c2, entry(k) + block_offset(v));
        if (tested) {
          const F val = kZip ? S::narrow2_zip(s, c2) : S::narrow2(s, c2);
          if (S::decided(s, c2, val)) return val;
        }
        return settle_turned<kZip>(f, pa + k, j0 + v * W, s, c2);
      };
      // One row, c + k: finished (redo, partial vector, stage) before the next.
      auto one_row = [&](int64_t k, int64_t next) {
        sink.row(r0 + c + k, next);
        sink.chunk(j0);
        const typename K::Out o = sink.out();
        const double *t = entry(k);
        int64_t nr;
        if (sink.direct) {
          nr = k == 0 ? row_pass<0, true>(o, an, t, nfull, redo)
                      : k > 0 ? row_pass<1, true>(o, an, t, nfull, redo) : row_pass<-1, true>(o, an, t, nfull, redo);
        } else {
          nr = k == 0 ? row_pass<0, false>(o, an, t, nfull, redo)
                      : k > 0 ? row_pass<1, false>(o, an, t, nfull, redo) : row_pass<-1, false>(o, an, t, nfull, redo);
        }
        for (int64_t i = 0; i < nr; ++i) o.put((redo[i] / 4) * W, value(redo[i] / 4, k, false));
        if (nfull < nv) o.put_partial(nfull * W, value(nfull, k, true), jn - nfull * W);
        sink.flush(j0, jn);
      };
      if (!quads) {
        for (int64_t r = 0; r < len; ++r) one_row(r - c, 1);
        continue;
      }
      if constexpr (kQuads) {
        for (int64_t i = 0; i < in_quads; i += 4) {
          const int64_t k = order[i] - c;
          const int64_t ks[4] = {k, -k, k + 1, -(k + 1)};
          typename K::Out o[4];
          for (int q = 0; q < 4; ++q) {
            sink.row(r0 + c + ks[q], ahead(i + q));
            sink.chunk(j0);
            o[q] = sink.out();
          }
          const int64_t nr = sink.direct ? quad_pass<true>(o, an, entry(k), entry(k + 1), clear, k, nfull, redo)
                                         : quad_pass<false>(o, an, entry(k), entry(k + 1), clear, k, nfull, redo);
          for (int64_t t = 0; t < nr; ++t) {
            const int q = int(redo[t] % 4);
            o[q].put((redo[t] / 4) * W, value(redo[t] / 4, ks[q], false));
          }
          if (nfull < nv)
            for (int q = 0; q < 4; ++q) o[q].put_partial(nfull * W, value(nfull, ks[q], true), jn - nfull * W);
        }
        for (int64_t i = in_quads; i < len; ++i) one_row(order[i] - c, ahead(i));
      }
    }
    for (int64_t k = 0; k < len; ++k) {
      sink.row(r0 + k);
      sink.finish();
    }
  }

  template <class K>
  static void run_sink(const detail::Job &job) {
    K sink(job);
    const detail::Freq &f = *job.freq;
    int64_t r = 0;
    while (r < job.n) {
      int64_t len = 1, p0;
      bool repeat = false;
      if (job.positions) {
        p0 = job.positions[r];
        if (p0 == POSENC_PAD) {
          sink.pad(r);
          ++r;
          continue;
        }
        repeat = r + 1 < job.n && job.positions[r + 1] == p0;
        const int64_t step = repeat ? 0 : 1;  // a run of one position, or of consecutive ones
        while (r + len < job.n && len < kBlock && job.positions[r + len] == p0 + step * len) ++len;
      } else {
        p0 = job.first + r;
        len = min64(kBlock, job.n - r);
      }
      if (repeat) repeated(sink, f, job.h, r, len, p0);
      else segment(sink, f, job.h, r, len, p0);
      r += len;
    }
    if (sink.staged) S::store_fence();  // order the non-temporal stores before whatever the caller does next
  }

  template <detail::Src kSrc, detail::Dst kDst>
  static void run_layout(const detail::Job &job) {
    if (job.layout == POSENC_INTERLEAVED) run_sink<Sink<kSrc, kDst, true>>(job);
    else run_sink<Sink<kSrc, kDst, false>>(job);
  }

  static void run(const detail::Job &job) {
    using detail::Dst;
    using detail::Src;
    switch (job.src) {
      case Src::kNone:
        if (job.dst == Dst::kBF16) return run_layout<Src::kNone, Dst::kBF16>(job);
        if (job.dst == Dst::kF16) return run_layout<Src::kNone, Dst::kF16>(job);
        return run_layout<Src::kNone, Dst::kF32>(job);
      case Src::kActivations:
        return run_layout<Src::kActivations, Dst::kF32>(job);
      case Src::kTableF32:
        return run_layout<Src::kTableF32, Dst::kF32>(job);
      case Src::kTableBF16:
        return run_layout<Src::kTableBF16, Dst::kF32>(job);
      case Src::kTableF16:
        return run_layout<Src::kTableF16, Dst::kF32>(job);
    }
  }

  // For tests: how many of n (sin, cos) pairs fail the fast acceptance test (kSmall), or its window half
  // alone (the quad pass's test of rows clear of zero, only on paths with S::decided_window), one pair per
  // vector, pair k in lane k mod W (the rest of the vector is filled with 0.5, which passes).
  template <bool kSmall = true>
  static int64_t fast_rejects(const double *s, const double *c, int64_t n) {
    int64_t rejected = 0;
    for (int64_t k = 0; k < n; ++k) {
      alignas(64) double vs[W], vc[W];
      for (int l = 0; l < W; ++l) vs[l] = vc[l] = 0.5;
      vs[k % W] = s[k];  // each value in another lane, so that every lane's test is exercised
      vc[k % W] = c[k];
      const D ds = S::load(vs), dc = S::load(vc);
      bool ok;
      if constexpr (kSmall) ok = S::decided(ds, dc, S::narrow2(ds, dc));
      else ok = S::decided_window(ds, dc);
      rejected += ok ? 0 : 1;
    }
    return rejected;
  }

  // For tests: anchor_values for all padded pairs (s and c 64-byte aligned).
  static void anchors(const detail::Freq &f, int64_t p, double *s, double *c) {
    for (int64_t j = 0; j < f.padded; j += W) anchor_values(double(p), f, j, s + j, c + j);
  }

  // Learned positions: out = fmaf(scale, table[token], pos_table[position]), 2W floats at a time; a
  // POSENC_PAD position adds +0.0. With each vector, the same vector of the next row's token is
  // prefetched (gathered rows are too short for the hardware prefetcher to get ahead); outputs far
  // larger than the caches are written with non-temporal stores where the row is vector-aligned.
  template <bool kStream>
  static void learned_rows(const detail::LearnedJob &job) {
    const F scale = S::splat(job.scale);
    const int64_t full = job.d / (2 * W) * (2 * W);
    for (int64_t r = 0; r < job.n; ++r) {
      const int64_t p = job.positions ? job.positions[r] : job.first + r;
      const float *x = job.table + int64_t(job.tokens[r]) * job.table_stride;
      const float *next = r + 1 < job.n ? job.table + int64_t(job.tokens[r + 1]) * job.table_stride : x;
      const float *pe = p == POSENC_PAD ? nullptr : job.pos_table + p * job.pos_stride;
      float *o = job.out + r * job.out_stride;
      const bool nt = kStream && reinterpret_cast<uintptr_t>(o) % (sizeof(float) * 2 * W) == 0;
      for (int64_t e = 0; e < full; e += 2 * W) {
        __builtin_prefetch(next + e);
        const F pv = pe ? S::load_f(pe + e) : S::splat(0.0f);
        const F v = fused(scale, S::load_f(x + e), pv);
        if (nt) S::stream_f(o + e, v);
        else S::store_f(o + e, v);
      }
      if (full < job.d) {
        const int64_t m = job.d - full;
        alignas(64) float tx[2 * W] = {}, tp[2 * W] = {}, to[2 * W];
        std::memcpy(tx, x + full, sizeof(float) * size_t(m));
        if (pe) std::memcpy(tp, pe + full, sizeof(float) * size_t(m));
        S::store_f(to, fused(scale, S::load_f(tx), S::load_f(tp)));
        std::memcpy(o + full, to, sizeof(float) * size_t(m));
      }
    }
    if (kStream) S::store_fence();  // order the non-temporal stores before whatever the caller does next
  }
  static void run_learned(const detail::LearnedJob &job) {
    if (S::kCanStream && job.stream) learned_rows<S::kCanStream>(job);
    else learned_rows<false>(job);
  }
};

}  // namespace posenc
