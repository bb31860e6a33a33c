// The sinks of the RoPE calls (CONTRACT.md section 4, docs/rope.md): the cos/sin cache, and the in-place
// rotation of q and k head rows, which takes each token's correctly rounded m cos, m sin from the rows
// engine (values_rows.hpp) into an L1 stage and applies them to every head of the token while they are
// hot; no cache is materialised in memory. Members of a template on S (values_direct.hpp says why).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "job.hpp"
#include "lanes.hpp"
#include "posenc/posenc.h"

namespace posenc {

template <class S>
struct RopeSinks {
  using D = typename S::D;
  using F = typename S::F;
  using H = typename S::H;
  using L = Lanes<S>;
  static constexpr int W = S::W;
  static constexpr int64_t kChunk = S::kQuadPass ? 1024 : 512;  // values_direct.hpp, Direct::kChunk

  // Where a chunk's values go: W sin lanes to os + jj, W cos lanes to oc + jj (the halves form).
  struct Out {
    static constexpr bool kZipped = false;
    static constexpr bool kHasX = false;
    static constexpr bool kScaled = true;  // emit() multiplies accepted floats by post (detail::Mag)
    float *os, *oc;
    F post;

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
    Out out() const { return Out{os, oc, S::splat(mag.post)}; }
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
    static constexpr int64_t kPiece = 128;  // pairs of cos and sin held as doubles at once (2 KiB)
    static_assert(kPiece % 8 == 0 && kChunk % kPiece == 0, "pieces tile a chunk in whole blocks");
    using Out = RopeSinks::Out;

    alignas(64) float stage[2 * kChunk];  // the sin run, then (at kChunk) the cos run of the current row
    alignas(64) double cd[kPiece], sd[kPiece];
    const detail::RopeJob &job;
    detail::Mag mag;
    bool staged = true, direct = false;
    int64_t token = 0;

    explicit Apply(const detail::RopeJob &j) : job(j), mag(j.mag) {}
    void row(int64_t r, int64_t = 1) { token = r; }
    void chunk(int64_t) {}
    Out out() const { return Out{const_cast<float *>(stage), const_cast<float *>(stage) + kChunk, S::splat(mag.post)}; }
    void put(int64_t jj, const F &v) const { out().put(jj, v); }
    // The whole vector goes to the stage (its lanes past the row's pairs hold padding lanes' values, which
    // are never used), so that every lane the rotation loads is initialised.
    void put_partial(int64_t jj, const F &v, int64_t) const { out().put(jj, v); }
    void finish() {}
    void pad(int64_t) {}  // POSENC_PAD: the token stays as it is

    // The chunk of pairs [j0, j0 + n) of the current token is in the stage: rotate it everywhere.
    void flush(int64_t j0, int64_t n) {
      for (int64_t p0 = 0; p0 < n; p0 += kPiece) {
        const int64_t pn = n - p0 < kPiece ? n - p0 : kPiece;
        for (int64_t v = 0; v < pn; v += W) {
          S::store(cd + v, S::widen(S::load_h(stage + kChunk + p0 + v)));
          S::store(sd + v, S::widen(S::load_h(stage + p0 + v)));
        }
        for (const detail::RopeTensor &t : job.t) {
          T *base = static_cast<T *>(t.x);
          for (int64_t j = 0; j < t.heads; ++j) {
            T *row = base + token * t.token_stride + j * t.head_stride;
            if (job.pairs == POSENC_ROPE_INTERLEAVED) rotate<true>(row + 2 * (j0 + p0), pn);
            else rotate<false>(row + j0 + p0, pn);
          }
        }
      }
    }

    // Pairs (x, y) -> (fl(x c - y s), fl(y c + x s)), each one rounding of the exact value to double (the
    // products are exact: 24 by 24 bits), then one to T; cd, sd hold the piece's c and s from its start.
    // Interleaved rows hold x y x y ...; halves rows hold the x run at row and the y run at row + h.
    template <bool kPairsInterleaved>
    void rotate(T *row, int64_t n) const {
      T *xr = row, *yr = row + job.h;
      const int64_t full = n / W * W;
      for (int64_t i = 0; i < full; i += W) {
        F xy = kPairsInterleaved ? L::template load2<T, kBF16>(row + 2 * i)
                                 : L::template load_split<T, kBF16>(xr + i, yr + i);
        if constexpr (kPairsInterleaved) xy = S::unzip(xy);
        const F o = turn(xy, S::load(cd + i), S::load(sd + i));
        if constexpr (kPairsInterleaved) L::template store2<T, kBF16>(row + 2 * i, S::zip(o));
        else L::template store_split<T, kBF16>(xr + i, yr + i, o);
      }
      if (full == n) return;
      // the last m < W pairs, through buffers: nothing outside the row's pairs is read or written
      const int64_t m = n - full;
      alignas(64) T in[2 * W] = {}, res[2 * W];
      alignas(64) double c[W] = {}, s[W] = {};
      std::memcpy(c, cd + full, sizeof(double) * size_t(m));
      std::memcpy(s, sd + full, sizeof(double) * size_t(m));
      if constexpr (kPairsInterleaved) {
        std::memcpy(in, row + 2 * full, sizeof(T) * size_t(2 * m));
        const F o = turn(S::unzip(L::template load2<T, kBF16>(in)), S::load(c), S::load(s));
        L::template store2<T, kBF16>(res, S::zip(o));
        std::memcpy(row + 2 * full, res, sizeof(T) * size_t(2 * m));
      } else {
        std::memcpy(in, xr + full, sizeof(T) * size_t(m));
        std::memcpy(in + W, yr + full, sizeof(T) * size_t(m));
        const F o = turn(L::template load2<T, kBF16>(in), S::load(c), S::load(s));
        L::template store2<T, kBF16>(res, o);
        std::memcpy(xr + full, res, sizeof(T) * size_t(m));
        std::memcpy(yr + full, res + W, sizeof(T) * size_t(m));
      }
    }

    // xy = [x lanes | y lanes] as floats; the rotated pairs in the same form, rounded for T: to nearest for
    // float32, to odd for the 16-bit formats (whose nearest-even rounding of that float equals the one of
    // the double: simd_scalar.hpp, narrow_odd).
    [[gnu::always_inline]] static inline F turn(const F &xy, const D &c, const D &s) {
      const D x = S::widen(S::lo(xy)), y = S::widen(S::hi(xy));
      D xn = S::fms(x, c, y * s);  // x c - y s: y s exact, one rounding of the sum
      D yn = S::fma(y, c, x * s);  // y c + x s
      if (__builtin_expect(S::any_nan_d(xn, yn), 0)) nan_rule(x, y, xn, yn);
      if constexpr (sizeof(T) == 4) return S::combine(S::narrow(xn), S::narrow(yn));
      else return S::combine(S::narrow_odd(xn), S::narrow_odd(yn));
    }

    // A NaN result is the same on every path and architecture (which operand's payload an FMA returns
    // depends on the instruction form and the ISA): the first NaN among x and y, quieted (widening did
    // that); otherwise, an invalid operation (inf - inf, 0 * inf), the float32 default +qNaN 0x7fc00000.
    [[gnu::noinline, gnu::cold]] static void nan_rule(const D &x, const D &y, D &xn, D &yn) {
      alignas(64) double a[W], b[W], u[W], v[W];
      S::store(a, x);
      S::store(b, y);
      S::store(u, xn);
      S::store(v, yn);
      const uint64_t quiet = 0x7FF8000000000000u;
      double dflt;
      std::memcpy(&dflt, &quiet, sizeof dflt);
      for (int l = 0; l < W; ++l) {
        const double first = a[l] != a[l] ? a[l] : b[l] != b[l] ? b[l] : dflt;
        if (u[l] != u[l]) u[l] = first;
        if (v[l] != v[l]) v[l] = first;
      }
      xn = S::load(u);
      yn = S::load(v);
    }
  };
};

}  // namespace posenc
