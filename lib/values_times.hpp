// Rows at real-valued positions (timestep embeddings of diffusion and flow-matching models; posenc.h,
// "Real-valued positions"): no two rows share a block, so every vector is the direct method at its row's
// position t = k + fr (values_direct.hpp, reduce_real), settled by its interval test or the exact method,
// and written through the PE sinks (sink_pe.hpp) like any table row. Members of a template on S
// (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>

#include "job.hpp"
#include "values_direct.hpp"

namespace posenc {

template <class S>
struct Times : Direct<S> {
  using B = Direct<S>;
  using typename B::F;
  using B::W;
  using B::kChunk;
  using B::min64;

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
        for (int64_t jj = 0; jj < jn; jj += W) {
          const F val = B::template settle_real<K::kInterleaved>(f, k, fr, force, j0 + jj);
          if (jn - jj >= W) o.put(jj, val);
          else o.put_partial(jj, val, jn - jj);  // lanes past h are padding, never written
        }
        sink.flush(j0, jn);
      }
      sink.finish();
    }
    if (sink.staged) S::store_fence();  // order the non-temporal stores before whatever the caller does next
  }
};

}  // namespace posenc
