// How the kernel makes one (sin, cos) value, written once over the vector interface Simd<A> (simd_*.hpp)
// and instantiated by one translation unit per ISA: every function is a member of a template on S, so each
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
//
// This file holds the direct method, the block anchors and the settling of values the fast test left;
// values_rows.hpp turns anchors into rows, and the sinks (sink_*.hpp) consume the rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "kernel/lanes.hpp"
#include "posenc/posenc.h"
#include "setup/exact.hpp"

namespace posenc {

template <class S>
struct Direct {
  using D = typename S::D;
  using F = typename S::F;
  using H = typename S::H;
  static constexpr int W = S::W;
  static constexpr int64_t kBlock = detail::Freq::kBlock;  // rows turned from one anchor
  static constexpr int64_t kChunk = Lanes<S>::kChunk;      // pairs whose anchors live on the stack at once

  static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

  // ---- the direct method ------------------------------------------------------------------------

  // pi/2 as a double-double, and the Taylor coefficients of sin(pi t/2) (odd k) and cos(pi t/2) (even k):
  // (-1)^floor(k/2) (pi/2)^k / k!, correctly rounded (tools/gen_coefficients.cpp prints them, tests/test_internals.cpp
  // checks them).
  static constexpr double kHalfPiHi = 0x1.921fb54442d18p+0, kHalfPiLo = 0x1.1a62633145c07p-54;
  static constexpr double kS3 = -0x1.4abbce625be53p-1, kS5 = 0x1.466bc6775aae2p-4, kS7 = -0x1.32d2cce62bd86p-8,
                          kS9 = 0x1.50783487ee782p-13, kS11 = -0x1.e3074fde8871fp-19, kS13 = 0x1.e8f434d018d63p-25,
                          kS15 = -0x1.6fadb9f155744p-31, kS17 = 0x1.aaec32af93359p-38;
  static constexpr double kC2 = -0x1.3bd3cc9be45dep+0, kC4 = 0x1.03c1f081b5ac4p-2, kC6 = -0x1.55d3c7e3cbffap-6,
                          kC8 = 0x1.e1f506891babbp-11, kC10 = -0x1.a6d1f2a204a8cp-16, kC12 = 0x1.f9d38a3763cc3p-22,
                          kC14 = -0x1.b6e24f44b128fp-28, kC16 = 0x1.20c62c2f2d7f5p-34, kC18 = -0x1.2a0c591af8314p-41;

  // The angle of the W pairs from j in quarter turns, reduced: the quadrant n in the low bits of y = n +
  // kRound, t + tl in [-1/2, 1/2] around it, and q, the size of the unreduced angle (for the error bound).
  struct Reduced {
    D y, t, tl, q;
  };

  // Integer positions pd (one per lane): p u = q + e0 + m1 + e1 + p u2, with q = fl(p u0) and e0, e1 the
  // exact errors of the two products; t + tl = th + e0 + m1 + e1 + p u2 by two error-free sums, |error| <
  // 2^-105 quarter turns (docs/math.md section 3).
  [[gnu::always_inline]] static inline Reduced reduce(const D &pd, const detail::Freq &f, int64_t j) {
    const D u0 = S::load(f.u0 + j), u1 = S::load(f.u1 + j), u2 = S::load(f.u2 + j);
    const D q = pd * u0;
    const D e0 = S::fma(pd, u0, -q);
    const D y = q + S::set(kRound);
    const D n = y - S::set(kRound);  // nearest integer to q (|q| < 2^32)
    const D th = q - n;              // exact (Sterbenz)
    const D m1 = pd * u1;
    const D e1 = S::fma(pd, u1, -m1);
    const D a = e0 + m1;
    const D av = a - e0;
    const D ea = (e0 - (a - av)) + (m1 - av);
    const D t = th + a;
    const D tv = t - th;
    const D eb = (th - (t - tv)) + (a - tv);
    const D tl = eb + (ea + (e1 + pd * u2));
    return Reduced{y, t, tl, q};
  }

  // a + b = s + e exactly (two-sum, any order of magnitude).
  [[gnu::always_inline]] static inline void two_sum(const D &a, const D &b, D &s, D &e) {
    s = a + b;
    const D bv = s - a, av = s - bv;
    e = (a - av) + (b - bv);
  }

  // A real position t = k + fr (k an integer with |k| < 2^31, fr exact with |fr| <= 1/2, one per call and
  // broadcast): k u + fr U, U = u0 + ... unreduced (Freq::U0, |U| < 2^52 by the API's check), reduced modulo
  // 4 without error. Both large products are split at their nearest integers exactly (|q| < 2^33, |g| <
  // 2^51: the kRound trick is exact), the fractional parts and every product error are summed by two-sums,
  // and the sum's own nearest integer goes to the quadrant too. Error: U's representation (2^-150 relative,
  // |fr U| < 2^51: 2^-100 absolute at most; far less for real frequencies), u's (2^-126), the last additions
  // of tl (2^-106); when the angle does not wrap, every term scales with it. docs/math.md section 8.
  [[gnu::always_inline]] static inline Reduced reduce_real(const D &k, const D &fr, const detail::Freq &f, int64_t j) {
    const D u0 = S::load(f.u0 + j), u1 = S::load(f.u1 + j), u2 = S::load(f.u2 + j);
    const D U0 = S::load(f.U0 + j), U1 = S::load(f.U1 + j), U2 = S::load(f.U2 + j);
    const D R = S::set(kRound);
    const D q = k * u0, e0 = S::fma(k, u0, -q);
    const D nq = (q + R) - R, thq = q - nq;  // exact
    const D g = fr * U0, eg = S::fma(fr, U0, -g);
    const D ng = (g + R) - R, thg = g - ng;  // exact
    const D m1 = k * u1, e1 = S::fma(k, u1, -m1);
    const D h1 = fr * U1, eh1 = S::fma(fr, U1, -h1);
    D t0, et0, a, ea, b, eb, c, ec, t1, et1;
    two_sum(thq, thg, t0, et0);
    two_sum(e0, m1, a, ea);
    two_sum(eg, h1, b, eb);
    two_sum(a, b, c, ec);
    two_sum(t0, c, t1, et1);
    const D tl = ((et0 + et1) + (ec + (ea + eb))) + ((e1 + eh1) + (k * u2 + fr * U2));
    const D n1 = (t1 + R) - R;         // |t1| <= 1.5: its own nearest integer
    const D t = t1 - n1;               // exact
    const D y = ((nq + ng) + n1) + R;  // the quadrant: integers below 2^52, exact
    return Reduced{y, t, tl, S::abs(q) + S::abs(g)};
  }

  // sin and cos of (n + t + tl) quarter turns: Taylor polynomials of sin(pi t/2) and cos(pi t/2), the linear
  // term of sin in double-double, then the quadrant.
  [[gnu::always_inline]] static inline void series(const Reduced &r, D &s, D &c) {
    const D t = r.t, tl = r.tl;
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
    quadrant(r.y, sn, cs, s, c);
  }

  // sin and cos of the angle p * u_j (quarter turns) for the W pairs from j; q = fl(p u0) is returned for
  // the error bound of direct(). pd: the position of each lane (one position for all, or multi-axis RoPE's
  // per-pair positions).
  static void direct_values_at(const D &pd, const detail::Freq &f, int64_t j, D &s, D &c, D &q_out) {
    const Reduced r = reduce(pd, f, j);
    series(r, s, c);
    q_out = r.q;
  }
  static void direct_values(double p, const detail::Freq &f, int64_t j, double *s, double *c) {
    D sv, cv, q;
    direct_values_at(S::set(p), f, j, sv, cv, q);
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
    anchor_values_at(S::set(p), f, j, s_out, c_out);
  }
  // The same with a position per lane (multi-axis RoPE: each pair at the position of its axis).
  [[gnu::always_inline]] static inline void anchor_values_at(const D &pd, const detail::Freq &f, int64_t j,
                                                             double *s_out, double *c_out) {
    const D u0 = S::load(f.u0 + j);
    const D q = pd * u0;
    const D e0 = S::fma(pd, u0, -q);  // exact
    const D y = q + S::set(kRound);
    const D n = y - S::set(kRound);                      // nearest integer to q (|q| < 2^32)
    const D th = q - n;                                  // exact (Sterbenz)
    const D t = th + S::fma(pd, S::load(f.u1 + j), e0);  // |error| < 2^-54 + 2^-72 quarter turns
    D s, c;
    anchor_series(y, t, s, c);
    S::store(s_out, s);
    S::store(c_out, c);
  }

  // A real position's values to the anchors' kind of bound (timestep rows, values_times.hpp): sin and cos
  // at k + fr (k an integer, |fr| <= 1/2, both broadcast) for the W pairs from j, absolute error below
  // 2^-51.1 (docs/math.md section 8, "The fast form"), in about half of reduce_real + series. k u0 and
  // fr U0 are split at their nearest integers exactly as in reduce_real; the two fractional parts and
  // fl(fr U1 + eg) are summed by two-sums, that sum's nearest integer goes to the quadrant, and the small
  // terms (k u1 + e0 + fr U2, the two-sums' errors) are added once. Not for the lanes marked slow, nor for a
  // fractional part below 2^-60 (reduce_real's reasons); the caller's test sends those elsewhere.
  [[gnu::always_inline]] static inline void anchor_real_at(const D &k, const D &fr, const detail::Freq &f, int64_t j,
                                                           D &s, D &c) {
    const D u0 = S::load(f.u0 + j), U0 = S::load(f.U0 + j);
    const D R = S::set(kRound);
    const D q = k * u0, e0 = S::fma(k, u0, -q);                                   // exact
    const D nq = (q + R) - R, thq = q - nq;                                       // exact, |q| < 2^33
    const D g = fr * U0, eg = S::fma(fr, U0, -g);                                 // exact
    const D ng = (g + R) - R, thg = g - ng;                                       // exact, |g| < 2^51
    const D b = S::fma(fr, S::load(f.U1 + j), eg);                                // |b| <= 1/2: rounding 2^-54
    const D a = S::fma(fr, S::load(f.U2 + j), S::fma(k, S::load(f.u1 + j), e0));  // |a| <= 2^-18: 2^-71
    D s1, e1, s2, e2;
    two_sum(thq, thg, s1, e1);  // |s1| <= 1
    two_sum(s1, b, s2, e2);     // |s2| <= 3/2
    const D n1 = (s2 + R) - R;
    const D t = (s2 - n1) + ((e1 + e2) + a);  // s2 - n1 exact; |t| <= 1/2 + 2^-17: rounding 2^-54
    const D y = ((nq + ng) + n1) + R;         // the quadrant: an integer below 2^52, exact
    anchor_series(y, t, s, c);
  }

  // The anchors' series (both in z = t^2 by Estrin's scheme: the same rounding behaviour as Horner's here,
  // where every higher term is far smaller than the first, and half the dependent steps), then the quadrant
  // of y = n + kRound.
  [[gnu::always_inline]] static inline void anchor_series(const D &y, const D &t, D &s, D &c) {
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
    quadrant(y, sn, cs, s, c);
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
    direct_at(S::set(p), f, j, s, c, bs, bc);
  }
  static void direct_at(const D &pd, const detail::Freq &f, int64_t j, D &s, D &c, D &bs, D &bc) {
    D q;
    direct_values_at(pd, f, j, s, c, q);
    const D absolute = S::set(0x1p-97) * S::min(S::abs(q), S::set(1.0)) + S::load(f.slow + j);
    bs = S::fma(S::abs(s), S::set(0x1p-47), absolute);
    bc = S::fma(S::abs(c), S::set(0x1p-47), absolute);
  }

  // The rotation path's values s, c failed the fast test (fast_check.hpp). Most of those are settled by
  // the exact interval test with the rotation path's own bound; the rest by the direct method.
  // kScaled: s and c are mu sin, mu cos (detail::Mag), whose error bound is mu times the unscaled one; the
  // floats returned are the final m sin, m cos (post times those of mu sin, mu cos: exact, as |value| >
  // delta keeps them far above the float32 subnormals and 2^e is at most 2^65 away from 1).
  // A real position's direct method (reduce_real), with error bounds as direct()'s: the reduction's
  // absolute part 2^-95 min(1, q) (q = |k u0| + |fr U0|), a little above its analysis; +inf for the lanes
  // marked slow and for every lane with `force` (a fractional part below 2^-60, whose products could
  // underflow: the exact method takes those rows).
  static void direct_real(const D &k, const D &fr, bool force, const detail::Freq &f, int64_t j, D &s, D &c, D &bs,
                          D &bc) {
    const Reduced r = reduce_real(k, fr, f, j);
    series(r, s, c);
    D absolute = S::set(0x1p-95) * S::min(r.q, S::set(1.0)) + S::load(f.slow + j);
    if (force) absolute = S::set(HUGE_VAL);
    bs = S::fma(S::abs(s), S::set(0x1p-47), absolute);
    bc = S::fma(S::abs(c), S::set(0x1p-47), absolute);
  }

  // The correctly rounded floats of the W pairs from j at the real position k + fr ([sin lanes | cos lanes],
  // or interleaved when kZip): the direct method where its interval decides, the exact method elsewhere.
  // Out of line: the slow path of the timesteps' fast form; inlined into the row loops, it took registers
  // from them (NEON: 31.7 -> 35.1 instructions an element of timesteps_f32, counted under qemu).
  template <bool kZip>
  [[gnu::noinline]] static F settle_real(const detail::Freq &f, double k, double fr, bool force, int64_t j) {
    D s, c, bs, bc;
    direct_real(S::set(k), S::set(fr), force, f, j, s, c, bs, bc);
    const F v = decide<false>(s, c, bs, bc, kUnit, [&](int l, uint32_t *sb, uint32_t *cb) {
      detail::exact_sincos_bits_real(f.exact[j + l], f.whole[j + l], int64_t(k), fr, sb, cb);
    });
    return kZip ? S::zip(v) : v;
  }

  // The floats of the direct method's s, c with error bounds bs, bc ([sin lanes | cos lanes]) where the
  // intervals decide, else lane by lane from exact(l, &sin_bits, &cos_bits). kScaled: of m sin and m cos (g.m),
  // computed as m times the doubles, the bound widened by m and by the product's rounding (2^-52 relative is
  // twice that rounding); the exact method multiplies before its one rounding.
  template <bool kScaled, class Exact>
  [[gnu::always_inline]] static inline F decide(D s, D c, D bs, D bc, const detail::Mag &g, Exact &&exact) {
    if constexpr (kScaled) {
      const D m = S::set(g.m), grow = S::set(g.m * (1.0 + 0x1p-40));
      s = s * m;
      c = c * m;
      bs = S::fma(S::abs(s), S::set(0x1p-52), bs * grow);
      bc = S::fma(S::abs(c), S::set(0x1p-52), bc * grow);
    }
    const F lo = S::narrow2(s - bs, c - bc);
    const F hi = S::narrow2(s + bs, c + bc);
    if (S::same_bits(lo, hi)) return lo;
    alignas(64) float a[2 * W], b[2 * W];
    S::store_f(a, lo);
    S::store_f(b, hi);
    for (int l = 0; l < W; ++l) {
      if (std::memcmp(&a[l], &b[l], 4) == 0 && std::memcmp(&a[W + l], &b[W + l], 4) == 0) continue;
      uint32_t sb, cb;
      exact(l, &sb, &cb);
      std::memcpy(&a[l], &sb, 4);
      std::memcpy(&a[W + l], &cb, 4);
    }
    return S::load_f(a);
  }

  // The positions of the W lanes of a vector (all one position, or multi-axis RoPE's per-pair ones).
  struct LanePositions {
    int64_t p[W];
    static LanePositions all(int64_t q) {
      LanePositions l;
      for (int i = 0; i < W; ++i) l.p[i] = q;
      return l;
    }
    D vector() const {
      alignas(64) double d[W];
      for (int i = 0; i < W; ++i) d[i] = double(p[i]);  // exact: |p| < 2^31
      return S::load(d);
    }
  };

  template <bool kZip, bool kScaled = false>
  static F settle_turned(const detail::Freq &f, int64_t p, int64_t j, const D &s, const D &c,
                         const detail::Mag &g = kUnit) {
    return settle_turned<kZip, kScaled>(f, LanePositions::all(p), j, s, c, g);
  }
  template <bool kZip, bool kScaled = false>
  static F settle_turned(const detail::Freq &f, const LanePositions &p, int64_t j, const D &s, const D &c,
                         const detail::Mag &g = kUnit) {
    const D delta = S::set(kScaled ? kTurnedBound * g.mu : kTurnedBound);
    F lo = S::narrow2(s - delta, c - delta);
    // Equal ends settle it (rounding is monotone). A value within delta of zero cannot pass: its ends
    // have opposite signs, and delta is far above the float32 underflow threshold.
    if (S::same_bits(lo, S::narrow2(s + delta, c + delta))) {
      if constexpr (kScaled) lo = S::mulf(lo, S::splat(g.post));
      return kZip ? S::zip(lo) : lo;
    }
    return settle<kZip, kScaled>(f, p, j, g);
  }

  // The absolute error of the rotation path (docs/math.md section 4): the anchor's sqrt2 2^-51, the table
  // entry's sqrt2 2^-50 and the turn's two roundings per component, sqrt2 2^-52, give 2.48 2^-50 =
  // 2^-48.69; this is that bound plus the rounding of y +- delta (2^-53), 2.75 2^-50.
  static constexpr double kTurnedBound = 0x1.6p-49;
  static constexpr detail::Mag kUnit{1.0, 1.0, 1.0f};

  // The correctly rounded floats of the W pairs from j at position p: [sin lanes | cos lanes], or
  // interleaved sin, cos, sin, cos ... when kZip. kScaled: of m sin and m cos (g.m), as decide() makes them.
  template <bool kZip, bool kScaled = false>
  static F settle(const detail::Freq &f, const LanePositions &p, int64_t j, const detail::Mag &g = kUnit) {
    D s, c, bs, bc;
    direct_at(p.vector(), f, j, s, c, bs, bc);
    const F v = decide<kScaled>(s, c, bs, bc, g, [&](int l, uint32_t *sb, uint32_t *cb) {
      detail::exact_sincos_bits(f.exact[j + l], p.p[l], kScaled ? g.m : 1.0, sb, cb);
    });
    return kZip ? S::zip(v) : v;
  }
};

}  // namespace posenc
