// The kernel of every call, written once over the vector interface Simd<A> (simd_*.hpp) and instantiated
// by one translation unit per ISA (isa_*.cpp): Engine<S> is the rows engine (values_rows.hpp, on the
// direct method and anchors of values_direct.hpp) plus the calls' entry points, each picking its sink:
// PE tables and fused operations (sink_pe.hpp), RoPE caches and the rotary apply (sink_rope.hpp), and
// learned positions (no sin or cos at all, below).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "kernel/lanes.hpp"
#include "kernel/sink_pe.hpp"
#include "kernel/sink_rope.hpp"
#include "kernel/tables_rotate.hpp"
#include "kernel/values_axes.hpp"
#include "kernel/values_rope_real.hpp"
#include "kernel/values_rows.hpp"
#include "kernel/values_times.hpp"
#include "simd/simd_contract.hpp"

namespace posenc {

template <class S>
struct Engine : Rows<S> {
  static_assert(simd_contract::check<S>(), "");  // simd_contract.hpp: one message per missing operation
  using R = Rows<S>;
  using R::anchor_values;
  using R::W;
  using typename R::D;
  using typename R::F;
  template <detail::Src kSrc, detail::Dst kDst, bool kZip>
  using Sink = typename PeSinks<S>::template Sink<kSrc, kDst, kZip>;
  static F fused(const F &scale, const F &x, const F &y) { return Lanes<S>::fused(scale, x, y); }

  template <class K>
  static void run_pe(const detail::Job &job) {
    K sink(job);
    if (job.times) return Times<S>::run_times(sink, job);  // real-valued positions (values_times.hpp)
    const detail::Stream st{job.freq, job.h, job.positions, job.first, job.n, 1, nullptr, job.n};
    R::run_sink(sink, st);
  }
  template <detail::Src kSrc, detail::Dst kDst>
  static void run_layout(const detail::Job &job) {
    if (job.layout == POSENC_INTERLEAVED)
      run_pe<Sink<kSrc, kDst, true>>(job);
    else
      run_pe<Sink<kSrc, kDst, false>>(job);
  }

  // The RoPE calls: the cache, or the rotation of f32 / bf16 / f16 head rows.
  template <class K>
  static void run_rope_sink(const detail::RopeJob &job) {
    K sink(job);
    if (job.times) return RopeTimes<S>::run(sink, job);  // real-valued positions (values_rope_real.hpp)
    const detail::Stream st{job.freq, job.h, job.positions, job.first, job.n, job.axes, job.axis, job.axis_stride};
    if (job.axes > 1) return AxesRows<S>::run_axes(sink, st);  // a position per pair (values_axes.hpp)
    R::run_sink(sink, st);
  }
  // The rotation by given cos/sin rows (posenc_rope_cached_*): the sink's rotation, no values made.
  template <class K>
  static void run_rope_given(const detail::RopeJob &job) {
    K sink(job);
    sink.given();
  }
  static void run_rope(const detail::RopeJob &job) {
    using Sinks = RopeSinks<S>;
    if (job.cache) return run_rope_sink<typename Sinks::Cache>(job);
    if (job.full_tables) switch (job.dst) {  // posenc_rope_tables_* (tables_rotate.hpp)
        case detail::Dst::kF32: return TablesRotate<S, float, false>::run(job);
        case detail::Dst::kBF16: return TablesRotate<S, uint16_t, true>::run(job);
        case detail::Dst::kF16: return TablesRotate<S, uint16_t, false>::run(job);
      }
    if (job.cos_in) switch (job.dst) {
        case detail::Dst::kF32: return run_rope_given<typename Sinks::template Apply<float, false>>(job);
        case detail::Dst::kBF16: return run_rope_given<typename Sinks::template Apply<uint16_t, true>>(job);
        case detail::Dst::kF16: return run_rope_given<typename Sinks::template Apply<uint16_t, false>>(job);
      }
    switch (job.dst) {
      case detail::Dst::kF32: return run_rope_sink<typename Sinks::template Apply<float, false>>(job);
      case detail::Dst::kBF16: return run_rope_sink<typename Sinks::template Apply<uint16_t, true>>(job);
      case detail::Dst::kF16: return run_rope_sink<typename Sinks::template Apply<uint16_t, false>>(job);
    }
  }

  // The rotation table of a new spec (Freq::step): sin and cos of k = 1 .. kSteps steps, W pairs at a time,
  // by the anchors' short form of the direct method (absolute error below 2^-51.4, docs/math.md section 3;
  // the rotation path assumes 2^-50 for an entry), half the work of the full form: most of a new explicit
  // spec's setup. freq.cpp calls it once per spec, on the active path (the values differ between paths
  // only within that bound, which is all the rows engine assumes).
  // Only the lanes a vector of any path can load (those of the blocks of kLanes pairs that hold the h
  // pairs): the rest of the padding is never read.
  static void fill_tables(detail::Freq &f) {
    using detail::Freq;
    const int64_t lanes = (f.h + Freq::kLanes - 1) / Freq::kLanes * Freq::kLanes;
    for (int64_t j = 0; j < lanes; j += W)
      for (int64_t k = 1; k <= Freq::kSteps; ++k) {
        double *t = f.step + f.step_at(j, k);
        R::anchor_values(double(k), f, j, t, t + Freq::kLanes);  // below 2^-51.4: the entries need 2^-50
      }
  }

  static void run(const detail::Job &job) {
    using detail::Dst;
    using detail::Src;
    switch (job.src) {
      case Src::kNone:
        if (job.dst == Dst::kBF16) return run_layout<Src::kNone, Dst::kBF16>(job);
        if (job.dst == Dst::kF16) return run_layout<Src::kNone, Dst::kF16>(job);
        return run_layout<Src::kNone, Dst::kF32>(job);
      case Src::kActivations: return run_layout<Src::kActivations, Dst::kF32>(job);
      case Src::kTableF32: return run_layout<Src::kTableF32, Dst::kF32>(job);
      case Src::kTableBF16: return run_layout<Src::kTableBF16, Dst::kF32>(job);
      case Src::kTableF16: return run_layout<Src::kTableF16, Dst::kF32>(job);
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
      if constexpr (kSmall)
        ok = S::decided(ds, dc, S::narrow2(ds, dc));
      else
        ok = S::decided_window(ds, dc);
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
        if (nt)
          S::stream_f(o + e, v);
        else
          S::store_f(o + e, v);
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
    if (S::kCanStream && job.stream)
      learned_rows<S::kCanStream>(job);
    else
      learned_rows<false>(job);
  }
};

}  // namespace posenc
