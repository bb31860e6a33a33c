// Exact RoPE frequencies outside posenc_rope_init's HF schemes, each the double nearest its real value
// (rope_init.cpp evaluates them with the same machinery): the default powers base^(-i/h) for any index i, for
// the layouts of posenc_rope_sections whose frequency index is not the pair's own (rope_sections.cpp); and the
// frequencies and magnitude of ggml's RoPE operations, for the ggml integration (integrations/ggml/).
#pragma once

#include <cstdint>

#include "posenc/posenc.h"

namespace posenc {
namespace detail {

// The index of value k (>= 0) for rope_powers.
struct PowerIndex {
  int64_t (*of)(const void *ctx, int64_t k);
  const void *ctx;
};

// out[k] = the double nearest base^(-index(k) / h) for k < n, h = rotary_dim / 2 (rotary_dim even >= 2, base
// positive and finite). POSENC_ERR_INVALID, with nothing written, when a value is 2^1000 or more (the
// frequency bound of every spec).
posenc_status rope_powers(int64_t rotary_dim, double base, int64_t n, PowerIndex index, double *out);

// ggml's RoPE (ggml_rope_ext / ggml_rope_multi as its CPU backend computes them: ggml_rope_cache_init,
// ggml_mrope_cache_init, rope_yarn, rope_yarn_ramp, ggml_rope_yarn_corr_dims), on ggml's own float parameters.
// Pair i (of `pairs`) of a token at position p (of the pair's axis) turns by p f_i, and cos and sin are scaled
// by m, where, as real numbers:
//   f_i = base^(-2 k_i / n_dims) / c_i * (freq_scale + (1 - freq_scale) e_i)
//   e_i = ext_factor * ramp_i       (0 when ext_factor is 0: f_i = base^(-2 k_i / n_dims) / c_i * freq_scale)
//   ramp_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1)
//   low = max(0, floor(cd(beta_fast))), high = min(n_dims - 1, ceil(cd(beta_slow))),
//   cd(beta) = n_dims ln(n_ctx_orig / (2 pi beta)) / (2 ln base)
//   m = attn_factor * (1 + ln(1 / freq_scale) / 10)    (attn_factor alone when ext_factor is 0)
// k_i = index[i] (ggml's theta index: i itself, or VISION's index restarted in each section; NULL means i),
// c_i = factors[i] (ggml's freq_factors; NULL means 1). The floor and ceil are decided on the real cd; where cd
// is infinite (n_ctx_orig = 0, beta = 0 or infinite, base = 1) they take the values ggml's IEEE arithmetic
// gives (so low = 0 and high = -inf for n_ctx_orig = 0, which test-backend-ops uses).
struct GgmlRope {
  int64_t n_dims = 0;  // ggml's n_dims: even, >= 2 (the exponent's denominator and cd's factor)
  int64_t pairs = 0;   // the pairs written: n_dims / 2, or n_dims for ggml's VISION mode
  const int64_t *index = nullptr;
  const float *factors = nullptr;
  float freq_base = 10000.0f, freq_scale = 1.0f, ext_factor = 0.0f, attn_factor = 1.0f;
  float beta_fast = 0.0f, beta_slow = 0.0f;
  int64_t n_ctx_orig = 0;
};

// freq[i] = the double nearest f_i for i < pairs, *attention = the double nearest m. POSENC_ERR_INVALID, with
// nothing written, where a value is not one posenc can take: n_dims odd or < 2, pairs < 1, an index outside
// [0, 2^31), n_ctx_orig outside the int32 range, base, freq_scale or attn_factor not positive and finite,
// ext_factor not finite, a factor zero or not finite, a ramp ggml makes NaN (ext_factor != 0 and a correction
// dimension that is NaN: the log of a negative ratio, 0 / 0, a NaN beta), a frequency of 2^1000 or more, m
// outside [2^-64, 2^64] (m <= 0 for freq_scale >= e^10).
posenc_status ggml_rope_frequencies(const GgmlRope &g, double *freq, double *attention);

}  // namespace detail
}  // namespace posenc
