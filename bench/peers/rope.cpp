// What RoPE runtimes compute once per model (the list of RoPE peer units is registry.cpp's).
#include <math.h>

#include "rope.hpp"

namespace peers {

RopeModel::RopeModel(int64_t rotary_dim, int64_t head_dim_, double base, int64_t max_pos_)
    : r(rotary_dim), h(rotary_dim / 2), head_dim(head_dim_), max_pos(max_pos_) {
  const float base32 = float(base);  // torch rounds the Python float base to float32 before the power
  inv_freq_.assign(size_t((h + 15) / 16 * 16), 0.0f);
  for (int64_t i = 0; i < h; ++i)  // 1.0 / (base ** (arange(0, r, 2).float() / r)), all float32
    inv_freq_[size_t(i)] = 1.0f / powf(base32, float(2 * i) / float(r));
  inv_freq = inv_freq_.data();
  theta_scale = powf(base32, -2.0f / float(r));  // ggml: powf(freq_base, -2.0f / n_dims)
  if (max_pos > 0) {  // vLLM: t = arange(max_pos).float(); freqs = t x inv_freq; cat(cos, sin), float32
    cos_sin_.assign(size_t(max_pos * r), 0.0f);
    for (int64_t p = 0; p < max_pos; ++p)
      for (int64_t i = 0; i < h; ++i) {
        const float a = float(p) * inv_freq[i];
        cos_sin_[size_t(p * r + i)] = cosf(a);
        cos_sin_[size_t(p * r + h + i)] = sinf(a);
      }
  }
  cos_sin = cos_sin_.data();
}

}  // namespace peers
