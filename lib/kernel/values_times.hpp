// Rows at real-valued positions (timestep embeddings of diffusion and flow-matching models; posenc.h,
// "Real-valued positions"): no two rows share a block, so every vector is made at its row's position
// t = k + fr by the fast form (values_direct.hpp, anchor_real_at, with an absolute window), else the direct
// method (reduce_real) settled by its interval test or the exact method, and written through the PE sinks
// (sink_pe.hpp) like any table row. Members of a template on S
// (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernel/job.hpp"
#include "kernel/values_direct.hpp"

namespace posenc {

template <class S>
struct Times : Direct<S> {
  using B = Direct<S>;
  using B::kChunk;
  using B::min64;
  using B::W;
  using typename B::D;
  using typename B::F;

  // The absolute window of the fast form's test: anchor_real_at's values are within 2^-51.1 of sin and cos
  // (docs/math.md section 8, "The fast form"); 2^-49 is 4.3 times that.
  static constexpr double kFastBound = 0x1p-49;

  // The correctly rounded floats of the W pairs from j at k + fr: the fast form where its window decides
  // (both ends of [v - 2^-49, v + 2^-49] round to the same float for every lane), else settle_real (the
  // direct method's relative test, then the exact method). Slow lanes' window is infinite.
  template <bool kZip>
  [[gnu::always_inline]] static inline F settle_fast(const detail::Freq &f, double k, double fr, int64_t j) {
    D s, c;
    B::anchor_real_at(S::set(k), S::set(fr), f, j, s, c);
    const D delta = S::set(kFastBound) + S::load(f.slow + j);
    const F lo = S::narrow2(s - delta, c - delta);
    if (S::same_bits(lo, S::narrow2(s + delta, c + delta))) return kZip ? S::zip(lo) : lo;
    return B::template settle_real<kZip>(f, k, fr, false, j);
  }

  // settle_fast for the 2W pairs from j ([sin lanes | cos lanes] each), both vectors' values made before
  // either is tested.
  [[gnu::always_inline]] static inline void settle_fast2(const detail::Freq &f, double k, double fr, int64_t j, F &a,
                                                         F &b) {
    D s0, c0, s1, c1;
    const D kd = S::set(k), frd = S::set(fr);
    B::anchor_real_at(kd, frd, f, j, s0, c0);
    B::anchor_real_at(kd, frd, f, j + W, s1, c1);
    const D d0 = S::set(kFastBound) + S::load(f.slow + j), d1 = S::set(kFastBound) + S::load(f.slow + j + W);
    a = S::narrow2(s0 - d0, c0 - d0);
    b = S::narrow2(s1 - d1, c1 - d1);
    if (!S::same_bits(a, S::narrow2(s0 + d0, c0 + d0))) a = B::template settle_real<false>(f, k, fr, false, j);
    if (!S::same_bits(b, S::narrow2(s1 + d1, c1 + d1))) b = B::template settle_real<false>(f, k, fr, false, j + W);
  }

  // For tests: anchor_real_at's values at t for all padded pairs (s and c 64-byte aligned), t = k + fr split
  // as run_times splits it.
  static void anchors_real(const detail::Freq &f, double t, double *s, double *c) {
    const double k = (t + B::kRound) - B::kRound, fr = t - k;
    for (int64_t j = 0; j < f.padded; j += W) {
      D sv, cv;
      B::anchor_real_at(S::set(k), S::set(fr), f, j, sv, cv);
      S::store(s + j, sv);
      S::store(c + j, cv);
    }
  }

  // Every row of a timestep call through the sink K (a table or the fused add).
  template <class K>
  static void run_times(K &sink, const detail::Job &job) {
    const detail::Freq &f = *job.freq;
    const int64_t h = job.h;
    for (int64_t r = 0; r < job.n; ++r) {
      const double t = job.times[r];
      // t = k + fr: k the nearest integer (round-to-nearest, fpenv.hpp; |t| < 2^31), fr exact (Sterbenz)
      const double k = (t + B::kRound) - B::kRound, fr = t - k;
      // a tiny fractional part could make the reduction's products underflow: the exact method instead
      const bool force = fr != 0.0 && std::fabs(fr) < 0x1p-60;
      sink.row(r, 1);
      for (int64_t j0 = 0; j0 < h; j0 += kChunk) {
        const int64_t jn = min64(kChunk, h - j0);
        sink.chunk(j0);
        const typename K::Out o = sink.out();
        int64_t jj = 0;
        if (!force)  // two vectors at a time: their chains overlap (5% on AVX2 and AVX-512, tools/ab)
          for (; jj + 2 * W <= jn; jj += 2 * W) {
            F a, b;
            settle_fast2(f, k, fr, j0 + jj, a, b);
            o.put(jj, K::kInterleaved ? S::zip(a) : a);
            o.put(jj + W, K::kInterleaved ? S::zip(b) : b);
          }
        for (; jj < jn; jj += W) {
          const F val = force ? B::template settle_real<K::kInterleaved>(f, k, fr, true, j0 + jj)
                              : settle_fast<K::kInterleaved>(f, k, fr, j0 + jj);
          Lanes<S>::put_upto(o, jj, val, jn);
        }
        sink.flush(j0, jn);
      }
      sink.finish();
    }
    if (sink.staged) S::store_fence();  // order the non-temporal stores before whatever the caller does next
  }
};

}  // namespace posenc
