// How rows are made from block anchors, for any sink: a block of up to 65 consecutive positions has its anchor in the
// middle, and the row k positions away is the anchor turned by the tabulated rotation of |k| steps (docs/math.md
// section 4); runs of one repeated position share one anchor. The sink (sink_*.hpp) decides where the values go (a PE
// table, a fused add, a RoPE cache, the rotation of q and k heads). Members of a template on S, as in
// values_direct.hpp. What run_sink needs of a sink K is sink_contract.hpp's check (docs/architecture.md, "The sink
// contract"; the flags kInterleaved, kHasX, kScaled, kUseClear, kAxes, the members staged and direct, row, chunk, out,
// flush, finish, pad); sink_pe.hpp has the reference sinks.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "kernel/sink_contract.hpp"
#include "kernel/values_direct.hpp"

namespace posenc {

template <class S>
struct Rows : Direct<S> {
  using B = Direct<S>;
  using B::anchor_values;
  using B::anchor_values_at;
  using B::kBlock;
  using B::kChunk;
  using B::min64;
  using B::W;
  using typename B::D;
  using typename B::F;
  // ---- the row loop --------------------------------------------------------------------------------

  // Turns (s, c) by the angle whose sin and cos are ts, tc: angle addition, two products and two fused
  // operations, each component one rounded product and one fused rounding (docs/math.md section 4).
  static void turn(D &s, D &c, const D &ts, const D &tc) {
    const D s1 = S::fma(s, tc, c * ts);
    c = S::fms(c, tc, s * ts);
    s = s1;
  }

  // Vectors whose rounding the fast test could not settle, or whose fused result has a NaN, left for after the loop so
  // that the loop itself makes no call (which would force its constants out of registers, and did: GCC kept the scale
  // on the stack for the NaN rule's call).
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

  // The table entry at t where m is 1, the zero turn (sin 0, cos 1) where m is 0, lane by lane, both exactly:
  // the lanes of a multi-axis block whose axis stays put from row to row (Axes below).
  [[gnu::always_inline]] static inline void load_masked(const double *t, const D &m, D &ts, D &tc) {
    load_pair(t, ts, tc);
    ts = ts * m;
    tc = S::fma(tc, m, S::set(1.0) - m);
  }
  template <int kDir>
  [[gnu::always_inline]] static inline void turn_masked(D &s, D &c, const double *t, const D &m) {
    D ts, tc;
    load_masked(t, m, ts, tc);
    if constexpr (kDir > 0) {
      turn(s, c, ts, tc);
    } else {
      const D s1 = S::fnma(c, ts, s * tc);  // as turn_back_by
      c = S::fma(s, ts, c * tc);
      s = s1;
    }
  }

  // Where a block's anchors stand. Uniform: one position for every pair (every call but multi-axis RoPE, and
  // its tokens whose axes agree); values_axes.hpp's Axes is the other kind (a position per pair).
  struct Uniform {
    static constexpr bool kPerLane = false;
    int64_t pa;  // the anchor's position
    D anchor(int64_t) const { return S::set(double(pa)); }
    bool zero(int64_t k) const { return pa + k == 0; }  // the exact zero angle, k rows from the anchor
    typename B::LanePositions at(int64_t, int64_t k) const { return B::LanePositions::all(pa + k); }
  };
  // Where the vector of pairs v W .. v W + W - 1 of a chunk sits in a step entry or an anchor block,
  // relative to the chunk's first pair (a multiple of kLanes, so the offset does not depend on it).
  static constexpr int64_t block_offset(int64_t v) { return detail::Freq::block_at(v * W); }

  // body(v, offset of v in the step and anchor blocks) for v < n: the kLanes / W vectors of a table block in one
  // unrolled step, so that narrower vectors also find their entries at fixed displacements (with W = 4 the offsets took
  // more scalar operations than the rest of the loop). The bodies capture by value all but the redo count: a variable
  // captured by reference has its address taken, and after every vector store (which may alias anything) GCC loaded it
  // again; that cost the AVX2 loops a third more instructions (callgrind) and the AVX-512 embedding 8% of its time.
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

  // Narrows, tests and writes one vector of row q of a pass; a vector the fast test cannot settle, or whose fused
  // result has a NaN, goes to the redo list as 4 v + q. kSmall: the whole acceptance test; otherwise its window half
  // only, for vectors known to hold no value near zero (Freq::reach).
  template <bool kNt, bool kSmall = true, class O>
  [[gnu::always_inline]] static inline void emit(const O &o, int64_t v, int q, const D &s, const D &c,
                                                 const typename S::Consts &kc, Redo *redo, int64_t &nr) {
    F val = O::kZipped ? S::narrow2_zip(s, c, kc) : S::narrow2(s, c);
    bool ok;
    if constexpr (kSmall)
      ok = S::decided(s, c, val, kc);
    else
      ok = S::decided_window(s, c);
    if constexpr (O::kScaled) val = S::mulf(val, o.post);  // exact: accepted values are far from subnormal
    if (__builtin_expect(ok, 1) && __builtin_expect(o.template put_fast<kNt>(v * W, val), 1)) return;
    redo[nr++] = Redo(4 * v + q);
  }

  // Four rows of a block, k and k + 1 steps on either side of its anchor A: A turned by +-t1 (the entry of k steps) and
  // +-t2 (k + 1 steps). A row and its mirror share the two products with the entry's cos, so the four rows cost twelve
  // products and fused operations and six loads (docs/math.md section 4).
  struct QuadRows {
    D s[4], c[4];
  };
  [[gnu::always_inline]] static inline void quad_rows(const double *an, const double *t1, const double *t2, int64_t bo,
                                                      QuadRows &r) {
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

  // The full vectors of one chunk for the four rows of quad_rows (the rows +k, -k, +(k + 1), -(k + 1)), where the
  // registers hold them (S::kQuadPass). Tables (no x) are software-pipelined by one vector: the turns of vector v + 1
  // are issued before the narrowing, test and stores of vector v. Each vector's work is one long chain (loads, turn,
  // narrowing, permute, test); written in order, the chains of consecutive vectors overlapped too little on AMD Zen 4,
  // where tables are bound by the arithmetic. And a vector whose clear distance (clear[v], from the anchor: no row
  // within that many steps holds a value near zero) reaches k + 1 skips the small-value half of the acceptance test.
  // The fused operations keep the plain loop: there the x rows, their prefetches and four row pointers take the
  // registers, and either change made the embedding slower (docs/math.md section 7).
  template <bool kNt, bool kClear, class O>
  static int64_t quad_pass(const O *rows, const double *an, const double *t1, const double *t2, const int16_t *clear,
                           int64_t k, int64_t nfull, Redo *redo) {
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
      if (kClear && clear[v] > k) {
        for (int q = 0; q < 4; ++q) emit<kNt, false>(o[q], v, q, cur.s[q], cur.c[q], kc, redo, nr);
      } else {
        for (int q = 0; q < 4; ++q) emit<kNt, true>(o[q], v, q, cur.s[q], cur.c[q], kc, redo, nr);
      }
      if (!more) break;
    }
    return nr;
  }

  // The full vectors of one chunk for one row: the anchor (kDir 0), or the anchor turned by the entry t forwards (kDir
  // 1) or backwards (kDir -1). Every row on the paths without a quad pass, and on those with one the few rows a quad
  // does not cover (the anchor's own, a last unpaired step, an odd side). kMasked (a multi-axis block): lane l of
  // vector v turns only where mask[v W + l] is 1 (load_masked).
  template <int kDir, bool kNt, bool kMasked = false, class O>
  static int64_t row_pass(const O &row, const double *an, const double *t, int64_t nfull, Redo *redo,
                          const double *mask = nullptr) {
    const O o = row;  // a local copy, which no store of the loop can alias (Sink::Out)
    int64_t nr = 0;
    typename S::Consts kc = S::consts();
    S::pin_consts(kc);
    // inlined in every copy of the unrolled loop, whatever the unit's size (NEON, left to GCC: table_bf16 +21%)
    for_vectors(nfull, [=, &nr](int64_t v, int64_t bo) POSENC_ALWAYS_INLINE {
      D s, c;
      load_pair(an + bo, s, c);
      if constexpr (kMasked && kDir != 0) {
        turn_masked<kDir>(s, c, t + bo, S::load(mask + v * W));
      } else {
        if constexpr (kDir == 1) turn_by(s, c, t + bo);
        if constexpr (kDir == -1) turn_back_by(s, c, t + bo);
      }
      emit<kNt>(o, v, 0, s, c, kc, redo, nr);
    });
    return nr;
  }

  // Rows r0 .. r0+len-1 all at position p0 (a decode step of a batch or a beam): each chunk's PE floats are made once,
  // from the anchor, into an L1 stage, and every row takes them from there, so a row costs what its loads and stores
  // cost (and the fused operation, with an x).
  template <bool kNt, class K>
  static int64_t put_stage(const K &sink, const float *pe, int64_t nfull, Redo *redo) {
    const typename K::Out out = sink.out();
    int64_t nr = 0;
    for (int64_t v = 0; v < nfull; ++v)
      if (!out.template put_fast<kNt>(v * W, S::load_f(pe + 2 * W * v))) redo[nr++] = Redo(v);
    return nr;
  }
  template <class K, class P = Uniform>
  [[gnu::noinline]] static void repeated(K &sink, const detail::Stream &st, int64_t r0, int64_t len, const P &pos) {
    constexpr bool kZip = K::kInterleaved;
    const detail::Freq &f = *st.freq;
    const int64_t h = st.h;
    constexpr int64_t C = 512;  // pairs at a time: no longer pieces to gain here, and less stack
    static_assert(C <= kChunk, "the sink's stage holds kChunk pairs");
    alignas(64) double as[C], ac[C];
    alignas(64) float pe[2 * C];  // vector v of the chunk's values at pe + 2 W v, as put() takes them
    Redo redo[C / W];
    for (int64_t j0 = 0; j0 < h; j0 += C) {
      const int64_t jn = min64(C, h - j0);
      const int64_t nfull = jn / W, nv = (jn + W - 1) / W;  // lanes past h are padding, never written
      if (pos.zero(0)) {  // the exact zero angle: (+0, m) everywhere, which the fast test would reject
        const F sc = zero_angle<K>(sink);
        for (int64_t v = 0; v < nv; ++v) S::store_f(pe + 2 * W * v, kZip ? S::zip(sc) : sc);
      } else {
        for (int64_t v = 0; v < nv; ++v)
          anchor_values_at(pos.anchor(j0 + v * W), f, j0 + v * W, as + v * W, ac + v * W);
        if constexpr (K::kScaled) scale_anchors(as, ac, nv, false, sink.mag);
        for (int64_t v = 0; v < nv; ++v) {
          const D s = S::load(as + v * W), c = S::load(ac + v * W);
          F val = kZip ? S::narrow2_zip(s, c) : S::narrow2(s, c);
          if (!S::decided(s, c, val)) {
            val = B::template settle_turned<kZip, K::kScaled>(f, pos.at(j0 + v * W, 0), j0 + v * W, s, c, mag_of(sink));
          } else if constexpr (K::kScaled) {
            val = S::mulf(val, S::splat(sink.mag.post));
          }
          S::store_f(pe + 2 * W * v, val);
        }
      }
      for (int64_t k = 0; k < len; ++k) {
        sink.row(r0 + k);
        sink.chunk(j0);
        const int64_t nr =
            sink.direct ? put_stage<true>(sink, pe, nfull, redo) : put_stage<false>(sink, pe, nfull, redo);
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

  // The order in which a quad pass writes the rows of a block of len rows: the quads (rows c + k, c - k, c + k + 1, c -
  // k - 1 for k = 1, 3, ...), then one at a time the rows left over (an unpaired last step, the anchor's own row c =
  // len / 2, and with an even len the first row). Offsets from the block's first row; returns how many of them are in
  // quads.
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

  // Rows r0 .. r0+len-1 hold positions p0 .. p0+len-1 (len <= kBlock). The block's anchor A is the row in the middle, c
  // = len / 2; row c + k is A turned by the step entry of |k| steps, forwards or backwards (k from -c to len - 1 - c,
  // so |k| <= kSteps). On the paths with a quad pass the rows are written in quad_order, four at a time where it can;
  // elsewhere, and for an output written through the stage, one at a time in order. A lone row (a decode step) is the
  // anchor itself. Not inlined into run_sink, and neither is repeated(): their buffers are then never on the stack at
  // the same time. P: the anchor's positions (Uniform, or Axes for a multi-axis block, whose rows go one at a time with
  // the turns masked where an axis stays put).
  template <class K, class P = Uniform>
  [[gnu::noinline]] static void segment(K &sink, const detail::Stream &st, int64_t r0, int64_t len, const P &pos) {
    using detail::Freq;
    const Freq &f = *st.freq;
    const int64_t h = st.h;
    constexpr bool kZip = K::kInterleaved;
    constexpr bool kMasked = P::kPerLane;
    constexpr bool kQuads = S::kQuadPass && !kMasked;
    constexpr bool kClear = kQuads && !K::kHasX && K::kUseClear;  // clear distances: only without x, unscaled
    const int64_t c = len / 2;                                    // the anchor's row; pos gives its position(s)
    alignas(64) double an[2 * kChunk];              // the anchors, in blocks of kLanes pairs like the tables
    alignas(64) double mask[kMasked ? kChunk : 1];  // the turn masks of a multi-axis block (Axes::masks)
    int16_t clear[kClear ? kChunk / W : 1];
    Redo redo[(kQuads ? 4 : 1) * kChunk / W];  // a quad pass's, or one row's
    // A lone row (a decode step) takes the row path: through the quad path's setup, a step at d = 64
    // took 1.12x the time.
    const bool quads = kQuads && !(sink.staged && !sink.direct) && len > 1;
    // With an x to add, each row prefetches the x of the row written four rows later, the one that takes its place in
    // the next quad (the first rows of the next block, assumed a full one, at the end): a row whose x nobody prefetched
    // costs the embedding a gather from memory.
    int8_t order[kBlock], next_order[kBlock];
    const int64_t in_quads = quads ? quad_order(len, order) : 0;
    const int64_t r1 = r0 + len, len1 = min64(kBlock, st.n - r1);
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
        anchor_values_at(pos.anchor(j0 + v * W), f, j0 + v * W, an + block_offset(v),
                         an + block_offset(v) + Freq::kLanes);
      if constexpr (K::kScaled) scale_anchors(an, an + Freq::kLanes, nv, true, sink.mag);
      if constexpr (kMasked) pos.masks(j0, nv * W, mask);
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
        if (pos.zero(k)) {  // the exact zero angle: (+0, m) everywhere, which the fast test rejects
          const F sc = zero_angle<K>(sink);
          return kZip ? S::zip(sc) : sc;
        }
        D s, c2;
        load_pair(an + block_offset(v), s, c2);
        if constexpr (kMasked) {
          if (k > 0) turn_masked<1>(s, c2, entry(k) + block_offset(v), S::load(mask + v * W));
          if (k < 0) turn_masked<-1>(s, c2, entry(k) + block_offset(v), S::load(mask + v * W));
        } else {
          if (k > 0) turn_by(s, c2, entry(k) + block_offset(v));
          if (k < 0) turn_back_by(s, c2, entry(k) + block_offset(v));
        }
        if (tested) {
          const F val = kZip ? S::narrow2_zip(s, c2) : S::narrow2(s, c2);
          if (S::decided(s, c2, val)) {
            if constexpr (K::kScaled) return S::mulf(val, S::splat(sink.mag.post));
            return val;
          }
        }
        return B::template settle_turned<kZip, K::kScaled>(f, pos.at(j0 + v * W, k), j0 + v * W, s, c2, mag_of(sink));
      };
      // One row, c + k: finished (redo, partial vector, stage) before the next.
      auto one_row = [&](int64_t k, int64_t next) {
        sink.row(r0 + c + k, next);
        sink.chunk(j0);
        const typename K::Out o = sink.out();
        const double *t = entry(k);
        const double *m = kMasked ? mask : nullptr;
        int64_t nr;
        if (sink.direct) {
          nr = k == 0  ? row_pass<0, true, kMasked>(o, an, t, nfull, redo, m)
               : k > 0 ? row_pass<1, true, kMasked>(o, an, t, nfull, redo, m)
                       : row_pass<-1, true, kMasked>(o, an, t, nfull, redo, m);
        } else {
          nr = k == 0  ? row_pass<0, false, kMasked>(o, an, t, nfull, redo, m)
               : k > 0 ? row_pass<1, false, kMasked>(o, an, t, nfull, redo, m)
                       : row_pass<-1, false, kMasked>(o, an, t, nfull, redo, m);
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
          const int64_t nr = sink.direct
                                 ? quad_pass<true, kClear>(o, an, entry(k), entry(k + 1), clear, k, nfull, redo)
                                 : quad_pass<false, kClear>(o, an, entry(k), entry(k + 1), clear, k, nfull, redo);
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

  // The values of a sink that scales them (K::kScaled), or the unit magnitude.
  template <class K>
  static const detail::Mag &mag_of(const K &sink) {
    if constexpr (K::kScaled)
      return sink.mag;
    else
      return B::kUnit;
  }
  // (+0, m) for the exact zero angle, as [sin lanes | cos lanes]
  template <class K>
  static F zero_angle(const K &sink) {
    return S::narrow2(S::set(0.0), S::set(mag_of(sink).m));
  }
  // Anchors times mu (a RoPE sink's values are m sin, m cos): nv vectors of sin at s + o and cos at c + o, o =
  // block_offset(v) (the block layout of segment) or v W (plain arrays). The product's rounding (2^-53 mu) keeps the
  // anchor within mu 2^-51 of the exact value (values_direct.hpp: 2^-51.45 before it), so every bound of the rotation
  // path scales by mu.
  static void scale_anchors(double *s, double *c, int64_t nv, bool blocks, const detail::Mag &g) {
    const D mu = S::set(g.mu);
    for (int64_t v = 0; v < nv; ++v) {
      const int64_t o = blocks ? block_offset(v) : v * W;
      S::store(s + o, S::load(s + o) * mu);
      S::store(c + o, S::load(c + o) * mu);
    }
  }

  // Every row of a call, through the sink: PAD rows, runs of one repeated position, blocks of consecutive
  // ones.
  template <class K>
  static void run_sink(K &sink, const detail::Stream &job) {
    static_assert(sink_contract::check<K, F>(), "");  // sink_contract.hpp: one message per missing member
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
      if (repeat)
        repeated(sink, job, r, len, Uniform{p0});
      else
        segment(sink, job, r, len, Uniform{p0 + len / 2});
      r += len;
    }
    if (sink.staged) S::store_fence();  // order the non-temporal stores before whatever the caller does next
  }
};

}  // namespace posenc
