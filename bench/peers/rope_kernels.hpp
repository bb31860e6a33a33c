// The RoPE peers of rope.hpp, written once. Every template takes a type local to the ISA unit that
// includes this header (V, the unit's struct of intrinsics, or Tag), so each instantiation has internal
// linkage and is built with that unit's flags only (the ODR trap of kernels.hpp).
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#include "rope.hpp"

namespace peers {

// vLLM's CPU rotary_embedding (NEOX): per token, the cache row of its position, applied to every q head,
// then every k head; kLanes pairs per step, a scalar tail when r/2 is not a multiple of kLanes.
template <class V>
struct CacheLookup {
  static void head(float *x, const float *c, const float *s, int64_t h) {
    constexpr int64_t L = V::kLanes;
    int64_t i = 0;
    for (; i + L <= h; i += L) {
      const auto a = V::loadu(x + i), b = V::loadu(x + h + i), cv = V::loadu(c + i), sv = V::loadu(s + i);
      V::storeu(x + i, V::sub(V::mul(a, cv), V::mul(b, sv)));
      V::storeu(x + h + i, V::add(V::mul(b, cv), V::mul(a, sv)));
    }
    for (; i < h; ++i) {
      const float a = x[i], b = x[h + i];
      x[i] = a * c[i] - b * s[i];
      x[h + i] = b * c[i] + a * s[i];
    }
  }
  static void apply(const RopeModel &m, const Qk &t, const RopeScratch &) {
    for (int64_t j = 0; j < t.n; ++j) {
      const float *c = m.cos_sin + t.positions[j] * m.r, *s = c + m.h;
      for (int64_t hd = 0; hd < t.q_heads; ++hd) head(t.q + j * t.q_token_stride + hd * t.q_head_stride, c, s, m.h);
      for (int64_t hd = 0; hd < t.k_heads; ++hd) head(t.k + j * t.k_token_stride + hd * t.k_head_stride, c, s, m.h);
    }
  }
};

// The in-place bound, in the cache-lookup peer's loop (the same rows, the same vectors and scalar tail)
// without the cache: every rotated element loaded, multiplied by one (1.0f, unknown to the compiler) and
// stored back.
template <class V>
struct Inplace {
  static void row(float *x, int64_t r, typename V::Reg one, float one_s) {
    constexpr int64_t L = V::kLanes;
    int64_t i = 0;
    for (; i + L <= r; i += L) V::storeu(x + i, V::mul(V::loadu(x + i), one));
    for (; i < r; ++i) x[i] *= one_s;
  }
  static void apply(const Qk &t, int64_t r, float one) {
    const auto o = V::set1(one);
    for (int64_t j = 0; j < t.n; ++j) {
      for (int64_t hd = 0; hd < t.q_heads; ++hd) row(t.q + j * t.q_token_stride + hd * t.q_head_stride, r, o, one);
      for (int64_t hd = 0; hd < t.k_heads; ++hd) row(t.k + j * t.k_token_stride + hd * t.k_head_stride, r, o, one);
    }
  }
};

// Cache rows from SLEEF sincos (Sincos returns sin in .x, cos in .y) on the float32 angle fl(fl(p) * w).
template <class V, auto Sincos>
void sleef_cache(const RopeModel &m, const int64_t *positions, int64_t n, float *out) {
  constexpr int64_t L = V::kLanes;
  for (int64_t t = 0; t < n; ++t) {
    const auto p = V::set1(float(positions[t]));
    float *c = out + t * m.r, *s = c + m.h;
    int64_t i = 0;
    for (; i + L <= m.h; i += L) {
      const auto sc = Sincos(V::mul(p, V::loadu(m.inv_freq + i)));
      V::storeu(c + i, sc.y);
      V::storeu(s + i, sc.x);
    }
    if (i < m.h) {  // the last, partial vector (inv_freq is zero-padded): through a buffer
      alignas(64) float tc[L], ts[L];
      const auto sc = Sincos(V::mul(p, V::loadu(m.inv_freq + i)));
      V::storeu(tc, sc.y);
      V::storeu(ts, sc.x);
      std::memcpy(c + i, tc, sizeof(float) * size_t(m.h - i));
      std::memcpy(s + i, ts, sizeof(float) * size_t(m.h - i));
    }
  }
}

// The plain-loop peers, vectorised by the compiler with the unit's flags (and the 16-bit rows' bound).
template <class Tag>
struct RopePasses {
  template <class T, class Op>
  static void each_row(const QkOf<T> &t, const Op &op) {
    for (int64_t j = 0; j < t.n; ++j) {
      for (int64_t hd = 0; hd < t.q_heads; ++hd) op(t.q + j * t.q_token_stride + hd * t.q_head_stride);
      for (int64_t hd = 0; hd < t.k_heads; ++hd) op(t.k + j * t.k_token_stride + hd * t.k_head_stride);
    }
  }
  static void inplace16(const Qk16 &t, int64_t r, uint16_t zero) {
    each_row(t, [r, zero](uint16_t *__restrict x) {
      for (int64_t e = 0; e < r; ++e) x[e] = uint16_t(x[e] ^ zero);
    });
  }

  // HF: freqs = fl32(p) * inv_freq; emb = cat(freqs, freqs); cos = emb.cos(); sin = emb.sin() (libm on
  // every element of emb, as the tensor op does); each a pass over [n, r].
  static void hf_cos_sin(const RopeModel &m, const Qk &t, float *cos_out, float *sin_out) {
    const int64_t r = m.r, h = m.h;
    for (int64_t j = 0; j < t.n; ++j) {
      const float p = float(t.positions[j]);
      for (int64_t i = 0; i < h; ++i) cos_out[j * r + i] = p * m.inv_freq[i];        // freqs, into cos's rows
      std::memcpy(cos_out + j * r + h, cos_out + j * r, sizeof(float) * size_t(h));  // emb
    }
    for (int64_t e = 0; e < t.n * r; ++e) sin_out[e] = sinf(cos_out[e]);
    for (int64_t e = 0; e < t.n * r; ++e) cos_out[e] = cosf(cos_out[e]);
  }
  // x = x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1); a, b: [n, heads, r] temporaries.
  // HF returns a new tensor; here the last pass writes it over x (the rotation is in place for every impl).
  static void hf_tensor(const float *cos_in, const float *sin_in, float *x, int64_t heads, int64_t ts, int64_t hs,
                        int64_t n, int64_t r, float *a, float *b) {
    const int64_t h = r / 2;
    for (int64_t j = 0; j < n; ++j)  // a = x * cos
      for (int64_t hd = 0; hd < heads; ++hd) {
        const float *xr = x + j * ts + hd * hs, *c = cos_in + j * r;
        float *ar = a + (j * heads + hd) * r;
        for (int64_t e = 0; e < r; ++e) ar[e] = xr[e] * c[e];
      }
    for (int64_t j = 0; j < n; ++j)  // b = rotate_half(x)
      for (int64_t hd = 0; hd < heads; ++hd) {
        const float *xr = x + j * ts + hd * hs;
        float *br = b + (j * heads + hd) * r;
        for (int64_t e = 0; e < h; ++e) br[e] = -xr[h + e];
        for (int64_t e = 0; e < h; ++e) br[h + e] = xr[e];
      }
    for (int64_t j = 0; j < n; ++j)  // b *= sin
      for (int64_t hd = 0; hd < heads; ++hd) {
        const float *s = sin_in + j * r;
        float *br = b + (j * heads + hd) * r;
        for (int64_t e = 0; e < r; ++e) br[e] *= s[e];
      }
    for (int64_t j = 0; j < n; ++j)  // x = a + b
      for (int64_t hd = 0; hd < heads; ++hd) {
        float *xr = x + j * ts + hd * hs;
        const float *ar = a + (j * heads + hd) * r, *br = b + (j * heads + hd) * r;
        for (int64_t e = 0; e < r; ++e) xr[e] = ar[e] + br[e];
      }
  }
  static void hf_naive(const RopeModel &m, const Qk &t, const RopeScratch &s) {
    hf_cos_sin(m, t, s.cos, s.sin);
    hf_tensor(s.cos, s.sin, t.q, t.q_heads, t.q_token_stride, t.q_head_stride, t.n, m.r, s.t0, s.t1);
    hf_tensor(s.cos, s.sin, t.k, t.k_heads, t.k_token_stride, t.k_head_stride, t.n, m.r, s.t0, s.t1);
  }

  // ggml_compute_forward_rope_f32, NEOX mode, freq_scale 1, no YaRN: one op per tensor. Per token the
  // cache covers every pair of the head (ne0 / 2), as ggml_rope_cache_init does, then every head rotates.
  static void ggml_tensor(const RopeModel &m, const int64_t *positions, int64_t n, float *x, int64_t heads, int64_t ts,
                          int64_t hs, float *cache) {
    const int64_t h = m.h;
    for (int64_t j = 0; j < n; ++j) {
      float theta = float(positions[j]);
      for (int64_t i0 = 0; i0 + 1 < m.head_dim; i0 += 2) {
        cache[i0] = cosf(theta);
        cache[i0 + 1] = sinf(theta);
        theta *= m.theta_scale;
      }
      for (int64_t hd = 0; hd < heads; ++hd) {
        float *row = x + j * ts + hd * hs;
        for (int64_t i0 = 0; i0 < m.r; i0 += 2) {
          const int64_t ic = i0 / 2;
          const float c = cache[i0], s = cache[i0 + 1];
          const float x0 = row[ic], x1 = row[ic + h];
          row[ic] = x0 * c - x1 * s;
          row[ic + h] = x0 * s + x1 * c;
        }
      }
    }
  }
  static void llamacpp(const RopeModel &m, const Qk &t, const RopeScratch &s) {
    ggml_tensor(m, t.positions, t.n, t.q, t.q_heads, t.q_token_stride, t.q_head_stride, s.cache);
    ggml_tensor(m, t.positions, t.n, t.k, t.k_heads, t.k_token_stride, t.k_head_stride, s.cache);
  }
};

// The unit's RoPE entries, without SLEEF's (make_vector_rope_unit adds them).
template <class V, class Tag>
RopeUnit make_rope_unit(posenc_isa isa, const char *cache_lookup_name) {
  return RopeUnit{isa,
                  cache_lookup_name,
                  CacheLookup<V>::apply,
                  nullptr,
                  nullptr,
                  RopePasses<Tag>::hf_naive,
                  RopePasses<Tag>::llamacpp,
                  Inplace<V>::apply,
                  RopePasses<Tag>::inplace16};
}

// A vector unit's RoPE entries: the cache-lookup and in-place peers on V, and SLEEF's u35 sincos (Sincos).
template <class V, auto Sincos>
RopeUnit make_vector_rope_unit(posenc_isa isa, const char *cache_lookup_name, const char *sleef_name) {
  RopeUnit u = make_rope_unit<V, V>(isa, cache_lookup_name);
  u.sleef_name = sleef_name;
  u.sleef_u35 = sleef_cache<V, Sincos>;
  return u;
}

}  // namespace peers
