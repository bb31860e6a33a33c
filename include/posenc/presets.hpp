// posenc/presets.hpp: the model presets of posenc::rope (rope::llama2(), rope::qwen2_vl(), ...), each with
// the published parameters it carries and where they come from, and the model data they need (Phi-3's
// LongRoPE factors). posenc.hpp declares them and includes this header, so `#include "posenc/posenc.hpp"` is
// all a user writes; the data lives here, apart from the calls.
#ifndef POSENC_PRESETS_HPP
#define POSENC_PRESETS_HPP

#include <array>
#include <cstdint>

#include "posenc/posenc.hpp"

namespace posenc {

namespace detail {

// Phi-3-mini-128k-instruct's LongRoPE factors (48 pairs each), as its config.json lists them.
inline constexpr double kPhi3Mini128kShort[48] = {1.05,
                                                  1.05,
                                                  1.05,
                                                  1.1,
                                                  1.1,
                                                  1.1,
                                                  1.2500000000000002,
                                                  1.2500000000000002,
                                                  1.4000000000000004,
                                                  1.4500000000000004,
                                                  1.5500000000000005,
                                                  1.8500000000000008,
                                                  1.9000000000000008,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.000000000000001,
                                                  2.1000000000000005,
                                                  2.1000000000000005,
                                                  2.2,
                                                  2.3499999999999996,
                                                  2.3499999999999996,
                                                  2.3499999999999996,
                                                  2.3499999999999996,
                                                  2.3999999999999995,
                                                  2.3999999999999995,
                                                  2.6499999999999986,
                                                  2.6999999999999984,
                                                  2.8999999999999977,
                                                  2.9499999999999975,
                                                  3.049999999999997,
                                                  3.049999999999997,
                                                  3.049999999999997};
inline constexpr double kPhi3Mini128kLong[48] = {
    1.0299999713897705, 1.0499999523162842, 1.0499999523162842, 1.0799999237060547, 1.2299998998641968,
    1.2299998998641968, 1.2999999523162842, 1.4499999284744263, 1.5999999046325684, 1.6499998569488525,
    1.8999998569488525, 2.859999895095825,  3.68999981880188,   5.419999599456787,  5.489999771118164,
    5.489999771118164,  9.09000015258789,   11.579999923706055, 15.65999984741211,  15.769999504089355,
    15.789999961853027, 18.360000610351562, 21.989999771118164, 23.079999923706055, 30.009998321533203,
    32.35000228881836,  32.590003967285156, 35.56000518798828,  39.95000457763672,  53.840003967285156,
    56.20000457763672,  57.95000457763672,  59.29000473022461,  59.77000427246094,  59.920005798339844,
    61.190006256103516, 61.96000671386719,  62.50000762939453,  63.3700065612793,   63.48000717163086,
    63.48000717163086,  63.66000747680664,  63.850006103515625, 64.08000946044922,  64.760009765625,
    64.80001068115234,  64.81001281738281,  64.81001281738281};

// The presets' shared forms: the diffusion transformers' per-axis RoPE, and DeepSeek's yarn with its two mscales.
inline rope diffusion_preset(int64_t head_dim, double theta, std::array<int64_t, 4> sections) {
  return rope::init(head_dim, theta, nullptr, posenc::rope_pairs::interleaved)
      .with_sections(sections, rope_layout::per_axis);
}

inline rope deepseek_yarn_preset(double mscale, double mscale_all_dim) {
  posenc_rope_scaling s = rope_scaling_of(rope_type::yarn);
  s.factor = 40.0;
  s.original_max_positions = 4096;
  s.beta_fast = 32.0;
  s.beta_slow = 1.0;
  s.mscale = mscale;
  s.mscale_all_dim = mscale_all_dim;
  s.truncate = 1;
  return rope::init(64, 1.0e4, s, posenc::rope_pairs::interleaved);
}

}  // namespace detail

/** Llama 2 (7B/13B/70B: head_dim 128): base 1e4, no scaling. Meta's llama/model.py precompute_freqs_cis
 *  (theta=10000.0; head_dim = dim / n_heads = 4096 / 32) and the HF checkpoints' rope_theta. */
inline rope rope::llama2(int64_t rotary_dim) { return init(rotary_dim, 1.0e4); }

/** Llama 3.1 (8B: head_dim 128): base 500000, llama3 scaling factor 8, low_freq_factor 1,
 *  high_freq_factor 4, original 8192. meta-llama/llama-models models/sku_list.py (rope_theta 500000.0,
 *  use_scaled_rope) and models/llama3/reference_impl/model.py apply_scaling (scale_factor 8,
 *  low_freq_factor 1, high_freq_factor 4, old_context_len 8192); HF config.json rope_scaling "llama3". */
inline rope rope::llama3_1(int64_t rotary_dim) {
  posenc_rope_scaling s = rope_scaling_of(rope_type::llama3);
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_positions = 8192;
  return init(rotary_dim, 5.0e5, s);
}

/** Mistral 7B v0.2 (head_dim 128): base 1e6, no scaling ("Rope-theta = 1e6", the Mistral-7B-v0.2 and
 *  -Instruct-v0.2 model cards; config.json rope_theta 1000000.0). */
inline rope rope::mistral_7b_v02(int64_t rotary_dim) { return init(rotary_dim, 1.0e6); }

/** Qwen2 (7B/72B: head_dim 128): base 1e6 (config.json rope_theta 1000000.0). With yarn, the long-context
 *  setting the Qwen2 Instruct model cards give: rope_scaling {"type": "yarn", "factor": 4.0,
 *  "original_max_position_embeddings": 32768}, HF's truncate default (true). */
inline rope rope::qwen2(int64_t rotary_dim, bool yarn) {
  if (!yarn) return init(rotary_dim, 1.0e6);
  posenc_rope_scaling s = rope_scaling_of(rope_type::yarn);
  s.factor = 4.0;
  s.original_max_positions = 32768;
  s.truncate = 1;
  return init(rotary_dim, 1.0e6, s);
}

/** Phi-3-mini-128k-instruct: LongRoPE over r = 96 (hidden 3072 / 32 heads), base 1e4, original 4096,
 *  factor 131072 / 4096 = 32; the short factors up to seq_len 4096, the long ones past it, attention
 *  factor sqrt(1 + ln 32 / ln 4096). The factor arrays are those of the first (April 2024, "type": "su")
 *  config.json, which the Phi-3-vision-128k-instruct config repeats (OmniGen copies that config verbatim:
 *  diffusers' OmniGen pipeline test, DiffSynth-Studio diffsynth/models/omnigen.py); the July 2024 update
 *  of the mini model ships other arrays: build that one with rope::init and its own short/long factors. */
inline rope rope::phi3_mini_128k(int64_t seq_len) {
  posenc_rope_scaling s = rope_scaling_of(rope_type::longrope);
  s.factor = 32.0;
  s.original_max_positions = 4096;
  s.seq_len = seq_len;
  s.short_factor = detail::kPhi3Mini128kShort;
  s.long_factor = detail::kPhi3Mini128kLong;
  return init(96, 1.0e4, s);
}

/** DeepSeek-V2 / V2-Lite MLA rope part: qk_rope_head_dim 64, base 1e4, yarn factor 40, original 4096,
 *  beta_fast 32, beta_slow 1, mscale 0.707, mscale_all_dim 0.707 (so attention_scale 1), truncated as in
 *  DeepSeek's yarn_find_correction_range; interleaved pairs (DeepSeek's modeling code and HF's
 *  apply_rotary_pos_emb_interleave de-interleave q_pe / k_pe before rotate_half, which leaves the elements
 *  in another order but q.k the same; llama.cpp runs DeepSeek2 with ROPE_TYPE_NORM). config.json of
 *  deepseek-ai/DeepSeek-V2 and -V2-Lite. */
inline rope rope::deepseek_v2() { return detail::deepseek_yarn_preset(0.707, 0.707); }

/** DeepSeek-V3 / R1: as deepseek_v2 with mscale 1.0 and mscale_all_dim 1.0 (config.json of
 *  deepseek-ai/DeepSeek-V3). Both ratios are 1, so the rotation is deepseek_v2's; the two configs differ in
 *  the softmax scale, which multiplies by the square of the mscale_all_dim term outside RoPE. */
inline rope rope::deepseek_v3() { return detail::deepseek_yarn_preset(1.0, 1.0); }

/** DeepSeek-V4's sliding-window layers ("main" of rope_parameters): the trailing qk_rope_head_dim 64 of each
 *  512-wide head, base 1e4 (rope_theta), no scaling, GPT-J (interleaved) pairs. transformers 5.12.1's
 *  DeepseekV4Config (partial_rotary_factor 64 / 512) and modeling_deepseek_v4.py's apply_rotary_pos_emb; the
 *  attention output is rotated back by the same angles (inverse()). */
inline rope rope::deepseek_v4() { return init(64, 1.0e4, nullptr, posenc::rope_pairs::interleaved); }

/** DeepSeek-V4's compressed layers, their compressors and the indexer ("compress"): yarn over the same 64
 *  elements, base 1.6e5 (compress_rope_theta), factor 16, original 65536, beta_fast 32, beta_slow 1, attention
 *  factor 1 (DeepseekV4Config sets it: the reference does not scale cos/sin), GPT-J pairs. vLLM's deepseek_yarn
 *  dict for it (mscale 0, mscale_all_dim 0) gives the same frequencies and magnitude 1. */
inline rope rope::deepseek_v4_compress() {
  posenc_rope_scaling s = rope_scaling_of(rope_type::yarn);
  s.factor = 16.0;
  s.original_max_positions = 65536;
  s.beta_fast = 32.0;
  s.beta_slow = 1.0;
  s.attention_factor = 1.0;
  s.truncate = 1;
  return init(64, 1.6e5, s, posenc::rope_pairs::interleaved);
}

/** GLM-5 (glm_moe_dsa) MLA rope part: qk_rope_head_dim 64, base 1e6, no scaling, GPT-J pairs (the config's
 *  rope_interleave true; transformers 5.12.1's apply_rotary_pos_emb_interleave gives the same q.k). The base is
 *  zai-org/GLM-5's rope_parameters.rope_theta as runtimes that load it default it (jd-opensource/xllm's glm5
 *  loader); GLM-5.x revisions and fine-tunes carry their own (8e6 in some): with_base, or rope::init from the
 *  checkpoint's config.json. */
inline rope rope::glm5() { return init(64, 1.0e6, nullptr, posenc::rope_pairs::interleaved); }

/** GLM-5's DSA indexer: the first 64 of its index_head_dim 128, base as glm5(), halves as transformers 5.12.1
 *  rotates it (GlmMoeDsaIndexer: rotate_half). vLLM reads indexer_rope_interleave (true in GLM-5's config) and
 *  rotates GPT-J pairs there: with_pairs(interleaved) for a runtime that follows it (docs/python.md, "Which
 *  runtime's convention"). */
inline rope rope::glm5_indexer() { return init(64, 1.0e6); }

/** GPT-NeoX-20B: partial rotary, rotary_pct 0.25 of head 96 (hidden 6144 / 64 heads) = 24, halves, base
 *  1e4 (EleutherAI/gpt-neox configs/20B.yml; HF config rotary_pct 0.25, rotary_emb_base 10000). */
inline rope rope::gpt_neox_20b() { return init(24, 1.0e4); }

/** GPT-J 6B: rotary_dim 64 of head 256 (n_embd 4096 / 16 heads), interleaved (rotate_every_two), base 1e4
 *  (mesh-transformer-jax pe_rotary_dims 64; HF config.json rotary_dim 64). */
inline rope rope::gpt_j_6b() { return init(64, 1.0e4, nullptr, posenc::rope_pairs::interleaved); }

/** Gemma 4's full-attention (global) layers: proportional RoPE over the whole global head of 512
 *  (global_head_dim), base 1e6, partial_rotary_factor 0.25: pairs 0 .. 63 of 256 rotate at
 *  1e6^(-2i/512), the other 192 do not rotate (HF v5 _compute_proportional_rope_parameters; config.json
 *  rope_parameters.full_attention of the google/gemma-4 checkpoints). Halves, as HF's rotate_half; the
 *  sliding layers are plain RoPE over head_dim 256, base 1e4: gemma4_sliding(). */
inline rope rope::gemma4_global() {
  posenc_rope_scaling s = rope_scaling_of(rope_type::proportional);
  s.partial_rotary_factor = 0.25;
  return init(512, 1.0e6, s);
}

/** Gemma 4's sliding-window layers: head_dim 256, base 1e4, no scaling (rope_parameters.sliding_attention). */
inline rope rope::gemma4_sliding() { return init(256, 1.0e4); }

/** MiniMax-M3's text attention (head_dim 128): partial RoPE over the first 64 elements of the head (the
 *  other 64 pass through), halves (rotate_half), base 5e6, no scaling: the defaults of MiniMaxM3VLTextConfig
 *  (transformers 5.12.1, configuration_minimax_m3_vl.py: head_dim 128, rotary_dim 64, default_theta 5e6).
 *  transformers' MiniMaxM3VLRotaryEmbedding rotates int(head_dim * partial_rotary_factor) elements and never
 *  reads rotary_dim, so a config without partial_rotary_factor 0.5 rotates all 128 there (init(128, 5.0e6)).
 *  The released checkpoint's config.json was not available to check. */
inline rope rope::minimax_m3() { return init(64, 5.0e6); }

// Multi-axis presets (posenc.h, "Multi-axis RoPE"; docs/rope.md). The text models take three positions
// per token (temporal, height, width: HF's position_ids[0], [1], [2]; a text token has all three equal,
// which a run gives), the vision towers two.

/** Qwen2-VL (2B / 7B / 72B: head_dim 128) text M-RoPE: base 1e6, halves, chunked mrope_section
 *  [16, 24, 24] (axes temporal, height, width). config.json of Qwen/Qwen2-VL-7B-Instruct: rope_theta
 *  1000000.0, rope_scaling {"type": "mrope", "mrope_section": [16, 24, 24]}, hidden_size 3584 / 28 heads;
 *  transformers' Qwen2VLConfig (rope_theta default 1e6) and apply_multimodal_rotary_pos_emb (mrope_section
 *  * 2 over rotate_half's channels). */
inline rope rope::qwen2_vl() { return init(128, 1.0e6).with_sections({16, 24, 24, 0}, rope_layout::chunked); }

/** Qwen2.5-VL (3B / 7B / 72B: head_dim 128): the same text RoPE as Qwen2-VL. config.json of
 *  Qwen/Qwen2.5-VL-7B-Instruct: rope_theta 1000000.0, rope_scaling {"type": "mrope", "mrope_section":
 *  [16, 24, 24]}, hidden_size 3584 / 28 heads; transformers' modeling_qwen2_5_vl.py applies it as Qwen2-VL. */
inline rope rope::qwen2_5_vl() { return qwen2_vl(); }

/** Qwen3-VL (head_dim 128) text M-RoPE: base 5e6, halves, interleaved mrope_section [24, 20, 20] (pair f on
 *  height when f % 3 == 1 and f < 60, on width when f % 3 == 2 and f < 60, else temporal). config.json of
 *  the Qwen/Qwen3-VL checkpoints: text_config head_dim 128, rope_theta 5000000, rope_scaling
 *  {"mrope_interleaved": true, "mrope_section": [24, 20, 20]}; transformers' Qwen3VLTextRotaryEmbedding
 *  (apply_interleaved_mrope; mrope_section default [24, 20, 20]). */
inline rope rope::qwen3_vl() { return init(128, 5.0e6).with_sections({24, 20, 20, 0}, rope_layout::interleaved); }

/** GLM-4V / GLM-4.1V (head_dim 128 = hidden_size 4096 / 32 heads): rotary dim 64 (partial_rotary_factor
 *  0.5; the other 64 elements of a head pass through), interleaved pairs (rotate_half_llm), base 1e4,
 *  chunked mrope_section [8, 12, 12] over the 32 pairs. config.json of THUDM/GLM-4.1V-9B-Thinking:
 *  partial_rotary_factor 0.5, rope_theta 10000, rope_scaling mrope_section [8, 12, 12]; transformers'
 *  Glm4vTextRotaryEmbedding (apply_mrope; mrope_section default [8, 12, 12]) and apply_rotary_pos_emb. */
inline rope rope::glm4v() {
  return init(64, 1.0e4, nullptr, posenc::rope_pairs::interleaved).with_sections({8, 12, 12, 0}, rope_layout::chunked);
}

/** The Qwen2-VL vision tower (head_dim 80 = embed_dim 1280 / 16 heads): 2-D RoPE, axes row then column,
 *  base 1e4, halves, VISION [20, 20]: each axis takes the 20 frequencies 1e4^(-2k/40).
 *  transformers' VisionRotaryEmbedding(head_dim / 2, theta=10000.0), [row * inv_freq | col * inv_freq]
 *  cat'ed with itself (apply_rotary_pos_emb_vision: rotate_half); vision_config embed_dim 1280,
 *  num_heads 16 of Qwen/Qwen2-VL-7B-Instruct. */
inline rope rope::qwen2_vl_vision() { return init(80, 1.0e4).with_sections({20, 20, 0, 0}, rope_layout::vision); }

/** The Qwen2.5-VL vision tower (head_dim 80 = hidden_size 1280 / 16 heads of its vision_config): the same
 *  2-D RoPE as Qwen2-VL's (Qwen2_5_VisionRotaryEmbedding is VisionRotaryEmbedding). Window attention
 *  reorders the tokens, not their (row, column) positions. */
inline rope rope::qwen2_5_vl_vision() { return qwen2_vl_vision(); }

/** The Qwen3-VL vision tower (head_dim 72 = hidden_size 1152 / 16 heads of its vision_config): 2-D RoPE,
 *  row then column, base 1e4, halves, VISION [18, 18] (Qwen3VLVisionRotaryEmbedding(head_dim / 2),
 *  theta 10000.0). */
inline rope rope::qwen3_vl_vision() { return init(72, 1.0e4).with_sections({18, 18, 0, 0}, rope_layout::vision); }

/** Pixtral's vision encoder (head_dim 64 = hidden_size 1024 / 16 heads): 2-D RoPE, row then column, base
 *  1e4, STRIDED [16, 16]: the row takes the even-index frequencies 1e4^(-2(2k)/64), the column the odd
 *  ones. Halves, as HF's PixtralRotaryEmbedding and apply_rotary_pos_emb (its conversion permutes wq / wk);
 *  mistral-inference's own weights (precompute_freqs_cis_2d, complex pairs) want
 *  with_pairs(rope_pairs::interleaved). PixtralVisionConfig: hidden_size 1024, num_attention_heads 16,
 *  rope_theta 10000.0; mistral-inference VisionEncoderArgs rope_theta 1e4. */
inline rope rope::pixtral() { return init(64, 1.0e4).with_sections({16, 16, 0, 0}, rope_layout::strided); }

/** Llama 4's vision encoder (head_dim 88 = vision_config hidden_size 1408 / 16 heads of the Llama 4
 *  checkpoints, rope_theta 10000): 2-D RoPE, VISION [22, 22] (each axis the 22 frequencies 1e4^(-2k/44)),
 *  interleaved pairs (complex multiply in vision_apply_rotary_emb). transformers'
 *  Llama4VisionRotaryEmbedding: axis 0 is the column x and axis 1 the row y, both 1-based (positions
 *  x + 1 and y + 1), and the class token (last) rotates by angle 0: give it position 0 on both axes. */
inline rope rope::llama4_vision() {
  return init(88, 1.0e4, nullptr, posenc::rope_pairs::interleaved).with_sections({22, 22, 0, 0}, rope_layout::vision);
}

// Diffusion transformers (diffusers 0.40.0.dev0, 58eb52c0): per-axis frequencies (PER_AXIS: an axis of d
// dimensions at theta^(-2k/d)), adjacent pairs (apply_rotary_emb's use_real_unbind_dim=-1, Wan's
// unflatten(-1, (-1, 2)), Qwen-Image's view_as_complex): INTERLEAVED. Axis 0 first in each (frame or the
// ids' first column), then height, width.

/** Flux (FluxPosEmbed(theta=10000, axes_dim=(16, 56, 56)), head 128): ids (text 0, image row, column) on
 *  axes 0, 1, 2; the text tokens' ids are 0 (angle 0). */
inline rope rope::flux() { return detail::diffusion_preset(128, 1.0e4, {8, 28, 28, 0}); }

/** Wan 2.x (WanRotaryPosEmbed, head 128): t = 128 - 2 * 2 (128 // 6) = 44 dimensions, h = w = 42,
 *  theta 1e4; positions frame, row, column (integer indices). Another head size: wan(head_dim), even and
 *  >= 6 (posenc::error, POSENC_ERR_INVALID otherwise). */
inline rope rope::wan(int64_t head_dim) {
  if (head_dim < 6 || head_dim % 2 != 0) throw error(POSENC_ERR_INVALID);  // three axes of even width
  const int64_t hw = 2 * (head_dim / 6);
  return detail::diffusion_preset(head_dim, 1.0e4, {(head_dim - 2 * hw) / 2, hw / 2, hw / 2, 0});
}

/** HunyuanVideo (HunyuanVideoRotaryPosEmbed, rope_axes_dim (16, 56, 56), rope_theta 256, head 128). */
inline rope rope::hunyuan_video() { return detail::diffusion_preset(128, 256.0, {8, 28, 28, 0}); }

/** CogVideoX (get_3d_rotary_pos_embed(attention_head_dim 64)): t = 64 // 4 = 16 dimensions, h = w =
 *  64 // 8 * 3 = 24, theta 1e4; the 1.5 models' "slice" grids are integers, 1.0's "linspace" grids are
 *  not (rope::cache_at and the other _at calls take them). Another head size: cogvideox(head_dim), a multiple of 16
 * (otherwise diffusers' widths are odd or do not fill the head: posenc::error, POSENC_ERR_INVALID). */
inline rope rope::cogvideox(int64_t head_dim) {
  if (head_dim < 16 || head_dim % 16 != 0) throw error(POSENC_ERR_INVALID);  // even widths summing to head_dim
  return detail::diffusion_preset(head_dim, 1.0e4, {head_dim / 8, head_dim / 8 * 3 / 2, head_dim / 8 * 3 / 2, 0});
}

/** Qwen-Image (QwenEmbedRope(theta=10000, axes_dim=(16, 56, 56), scale_rope=True), head 128): frame,
 *  then centred row and column positions (-(h - h/2) .. h/2 - 1), text tokens on all three axes at
 *  max(h/2, w/2) + t. */
inline rope rope::qwen_image() { return detail::diffusion_preset(128, 1.0e4, {8, 28, 28, 0}); }

}  // namespace posenc

#endif  // POSENC_PRESETS_HPP
