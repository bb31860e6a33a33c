// The C calls whose work is all setup (lib/setup/): posenc_rope_init, posenc_rope_sections,
// posenc_rope_ggml_frequencies, and posenc_rope_inverse (a spec's negation). No kernel runs: each computes a
// spec's frequencies, axis map or ggml's parameters once, exactly (docs/rope.md), and nothing thrown crosses
// the ABI.
#include <cstring>

#include "abi/abi.hpp"
#include "posenc/posenc.h"
#include "setup/rope_powers.hpp"
#include "setup/rope_setup.hpp"

extern "C" posenc_status posenc_rope_init(posenc_rope *rope, int64_t rotary_dim, double base,
                                          const posenc_rope_scaling *scaling, double *freq) {
  return posenc::detail::guarded([&] { return posenc::detail::rope_init(rope, rotary_dim, base, scaling, freq); });
}

extern "C" posenc_status posenc_rope_inverse(const posenc_rope *rope, posenc_rope *out) {
  if (!rope || !out) return POSENC_ERR_NULL;
  posenc_rope r = *rope;
  r.position_scale = -r.position_scale;  // exact: the angle p (-s) f_i is -(p s f_i), whatever s is
  *out = r;
  return POSENC_OK;
}

extern "C" posenc_status posenc_rope_sections(posenc_rope *rope, const int64_t sections[4], posenc_rope_layout layout,
                                              uint8_t *axis_out, double *freq_out) {
  // The layout's bytes as an int before anything reads it as the enum: a value outside the enum's range (the
  // ABI takes any int) is POSENC_ERR_INVALID, never a load of an invalid enum (UBSan's enum check).
  int layout_int = 0;
  static_assert(sizeof(layout) == sizeof(int), "posenc_rope_layout is int-sized");
  std::memcpy(&layout_int, &layout, sizeof layout_int);
  return posenc::detail::guarded(
      [&] { return posenc::detail::rope_sections(rope, sections, layout_int, axis_out, freq_out); });
}

extern "C" posenc_status posenc_rope_ggml_frequencies(const posenc_ggml_rope_params *params, double *freq,
                                                      double *attention_scale) {
  if (!params || !freq || !attention_scale) return POSENC_ERR_NULL;
  return posenc::detail::guarded([&] {
    posenc::detail::GgmlRope g;
    g.n_dims = params->n_dims;
    g.pairs = params->pairs;
    g.index = params->index;
    g.factors = params->factors;
    g.freq_base = params->freq_base;
    g.freq_scale = params->freq_scale;
    g.ext_factor = params->ext_factor;
    g.attn_factor = params->attn_factor;
    g.beta_fast = params->beta_fast;
    g.beta_slow = params->beta_slow;
    g.n_ctx_orig = params->n_ctx_orig;
    return posenc::detail::ggml_rope_frequencies(g, freq, attention_scale);
  });
}
