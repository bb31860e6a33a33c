// RoPE at real-valued positions (posenc.h, "RoPE at real-valued positions"; docs/rope.md): every token's
// pairs at t = k + fr, the position of the pair's axis, made as Times makes a timestep row
// (values_times.hpp): the fast form (anchor_real_at) where its window decides, else the direct method
// (reduce_real) where its interval decides, else the exact method; then the attention scale as the integer
// rows engine applies it (values_direct.hpp, settle_turned and settle: mu times the value inside the window,
// post times the accepted float; m times the direct method's values; m inside the exact method). No two
// tokens share a block (real positions have no steps to turn by), so every vector is made at its own
// position, and the values go through the RoPE sinks (sink_rope.hpp) as the integer engine writes them.
// Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel/job.hpp"
#include "kernel/values_times.hpp"

namespace posenc {

template <class S>
struct RopeTimes : Times<S> {
  using B = Times<S>;
  using B::kChunk;
  using B::kFastBound;
  using B::kRound;
  using B::min64;
  using B::W;
  using typename B::D;
  using typename B::F;

  // The positions of a vector's W lanes, split as k + fr, as vectors and per lane (for the exact method).
  struct At {
    D k, fr;
    const double *kl, *frl;
  };

  // The correctly rounded floats of the W pairs from j: [sin lanes | cos lanes] of m sin, m cos (g; m = 1:
  // kScaled false), the direct method's values decided as settle's (values_direct.hpp, decide). force: the
  // token has a fractional part below 2^-60 (every lane to the exact method).
  template <bool kScaled>
  static F settle(const detail::Freq &f, const At &at, bool force, int64_t j, const detail::Mag &g) {
    D s, c, bs, bc;
    B::direct_real(at.k, at.fr, force, f, j, s, c, bs, bc);
    return B::template decide<kScaled>(s, c, bs, bc, g, [&](int l, uint32_t *sb, uint32_t *cb) {
      detail::exact_sincos_bits_real(f.exact[j + l], f.whole[j + l], int64_t(at.kl[l]), at.frl[l], kScaled ? g.m : 1.0,
                                     sb, cb);
    });
  }

  // The fast form first: the anchors' values times mu within mu 2^-49 (mu <= 1.5 times anchor_real_at's
  // 2^-51.1, plus the product's rounding, is below 0.75 2^-49), whose accepted float times post is the
  // float of m sin, m cos exactly (an accepted value is far above the float32 subnormals: values_direct.hpp).
  template <bool kScaled>
  [[gnu::always_inline]] static inline F value(const detail::Freq &f, const At &at, int64_t j, const detail::Mag &g) {
    D s, c;
    B::anchor_real_at(at.k, at.fr, f, j, s, c);
    D delta = S::set(kFastBound) + S::load(f.slow + j);
    if constexpr (kScaled) {
      const D mu = S::set(g.mu);
      s = s * mu;
      c = c * mu;
      delta = S::set(kFastBound * g.mu) + S::load(f.slow + j);
    }
    const F lo = S::narrow2(s - delta, c - delta);
    if (S::same_bits(lo, S::narrow2(s + delta, c + delta))) {
      if constexpr (kScaled) return S::mulf(lo, S::splat(g.post));
      return lo;
    }
    return settle<kScaled>(f, at, false, j, g);
  }

  // Every token of a RoPE call at real positions through the sink K (the cache or the rotation). Token t's
  // position on axis a is job.times[a axis_stride + t]; pair i takes that of axis job.axis[i] (axis 0 with
  // one axis). With more than one axis, each chunk's per-pair k and fr are laid out first (lanes past h
  // take axis 0's: they are padding, never written).
  template <bool kScaled, class K>
  static void run_tokens(K &sink, const detail::RopeJob &job) {
    const detail::Freq &f = *job.freq;
    const int64_t h = job.h;
    const int A = job.axes > 1 ? job.axes : 1;
    const detail::Mag g = job.mag;
    alignas(64) double kc[kChunk + W], fc[kChunk + W];
    for (int64_t r = 0; r < job.n; ++r) {
      double k[4], fr[4];
      bool force = false;
      for (int a = 0; a < A; ++a) {
        const double t = job.times[a * job.axis_stride + r];
        // t = k + fr: k the nearest integer (round-to-nearest, fpenv.hpp; |t| < 2^31), fr exact (Sterbenz);
        // a tiny fractional part could make the reduction's products underflow: the exact method instead
        k[a] = (t + kRound) - kRound;
        fr[a] = t - k[a];
        force = force || (fr[a] != 0.0 && std::fabs(fr[a]) < 0x1p-60);
      }
      sink.row(r, 1);
      for (int64_t j0 = 0; j0 < h; j0 += kChunk) {
        const int64_t jn = min64(kChunk, h - j0);
        sink.chunk(j0);
        const typename K::Out o = sink.out();
        const bool lanes = A > 1;
        if (lanes) {
          for (int64_t jj = 0; jj < jn; ++jj) {
            const int a = job.axis[j0 + jj];
            kc[jj] = k[a];
            fc[jj] = fr[a];
          }
          for (int64_t jj = jn; jj < (jn + W - 1) / W * W; ++jj) {
            kc[jj] = k[0];
            fc[jj] = fr[0];
          }
        } else {
          for (int l = 0; l < W; ++l) {
            kc[l] = k[0];
            fc[l] = fr[0];
          }
        }
        const D k0 = S::set(k[0]), f0 = S::set(fr[0]);
        for (int64_t jj = 0; jj < jn; jj += W) {
          const At at = lanes ? At{S::load(kc + jj), S::load(fc + jj), kc + jj, fc + jj} : At{k0, f0, kc, fc};
          const F val = force ? settle<kScaled>(f, at, true, j0 + jj, g) : value<kScaled>(f, at, j0 + jj, g);
          Lanes<S>::put_upto(o, jj, val, jn);
        }
        sink.flush(j0, jn);
      }
      sink.finish();
    }
  }

  template <class K>
  static void run(K &sink, const detail::RopeJob &job) {
    if (job.mag.m == 1.0)
      run_tokens<false>(sink, job);
    else
      run_tokens<true>(sink, job);
  }
};

}  // namespace posenc
