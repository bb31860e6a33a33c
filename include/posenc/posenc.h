/* posenc: exact sinusoidal positional encodings and the fused embedding-add that uses them.
 *
 * The C ABI. C99 and C++; no exception ever crosses it. Every function checks all of its arguments,
 * every token id and every position before it writes anything: a call that returns an error has left
 * every output buffer exactly as it was. The library never prints, aborts or throws, and allocates only
 * once per distinct frequency spec (a cached O(d_model) setup of about 340 bytes per frequency pair:
 * 1.4 MB for d_model = 8192, but 22 GB for d_model = 2^27, which is valid: a runtime that takes d_model
 * from untrusted input should bound it); kernel calls allocate nothing.
 *
 * What is computed (docs/math.md has the derivation and the error analysis):
 *   h = floor(d_model / 2) frequency pairs, pair i in [0, h), position p:
 *   w_i = base^(-i / D), D = freq_denominator, or h when freq_denominator == 0
 *   a_i = p * position_scale * w_i      (exact real arithmetic on the given doubles)
 *   the row holds sin(a_i) and cos(a_i) in the order of the layout; an odd d_model ends with one 0.0.
 * Every float32 element is the correctly rounded value of the exact one (the contract asks for 1 ULP;
 * the library delivers 0.5 ULP), so scalar, AVX2, AVX-512 and NEON return the same bits, and any split of
 * a call into row ranges returns the same bytes as the whole call.
 *
 * Check order, when several things are wrong at once: n < 0 (INVALID); then n == 0 returns OK after
 * validating the spec if one was given; then NULL pointers (NULL); spec, sizes and strides (INVALID);
 * element and byte counts (OVERFLOW); positions and token ids (OUT_OF_RANGE); the selected ISA
 * (UNSUPPORTED); the first use of a spec may finally report NO_MEMORY. The _part twins of every kernel
 * ("Parts of a call", below) check the range of the part between UNSUPPORTED and NO_MEMORY.
 */
#ifndef POSENC_POSENC_H
#define POSENC_POSENC_H

#include <stdint.h>

/* POSENC_BEGIN_DECLS ... POSENC_END_DECLS: what every posenc header wraps its declarations in, C linkage for
 * C++ and the default visibility. The C ABI is the library's only exported interface: its objects are built
 * with hidden visibility, so that a shared library or module that links the static archive (a runtime's
 * libllama, a ggml backend) exports these functions and none of posenc's C++ internals. POSENC_NO_VISIBILITY
 * defined before the include leaves the visibility alone. */
#if defined(__GNUC__) && !defined(POSENC_NO_VISIBILITY)
#define POSENC_VISIBILITY_PUSH_ _Pragma("GCC visibility push(default)")
#define POSENC_VISIBILITY_POP_ _Pragma("GCC visibility pop")
#else
#define POSENC_VISIBILITY_PUSH_
#define POSENC_VISIBILITY_POP_
#endif
#ifdef __cplusplus
#define POSENC_BEGIN_DECLS \
  extern "C" {             \
  POSENC_VISIBILITY_PUSH_
#define POSENC_END_DECLS \
  POSENC_VISIBILITY_POP_ \
  }
#else
#define POSENC_BEGIN_DECLS POSENC_VISIBILITY_PUSH_
#define POSENC_END_DECLS POSENC_VISIBILITY_POP_
#endif

POSENC_BEGIN_DECLS

/** Status of every call. */
typedef enum posenc_status {
  POSENC_OK = 0,
  POSENC_ERR_NULL = 1,         /**< a required pointer is NULL (n == 0 needs no pointers) */
  POSENC_ERR_INVALID = 2,      /**< bad spec or size: d_model < 1, base <= 0 or not finite, freq_denominator < 0
                                    or not finite, position_scale not finite, a frequency |position_scale * w_i|
                                    of 2^1000 or more, n < 0, a stride < d_model, an unknown enum value */
  POSENC_ERR_OUT_OF_RANGE = 3, /**< a token id outside [0, vocab), a position with |p| >= 2^31 (POSENC_PAD
                                    aside), or a learned-table position outside [0, pos_rows) */
  POSENC_ERR_OVERFLOW = 4,     /**< an element or byte count does not fit in int64 / size_t */
  POSENC_ERR_UNSUPPORTED = 5,  /**< the requested or forced ISA is not compiled in or not supported here */
  POSENC_ERR_NO_MEMORY = 6     /**< the one-time setup of a new spec could not allocate its frequency table */
} posenc_status;

/** A static, human-readable name for a status ("ok", "null pointer", ...); never NULL. */
const char *posenc_status_string(posenc_status s);

/** Where sin and cos of pair i go in a row. */
typedef enum posenc_layout {
  POSENC_INTERLEAVED = 0,    /**< s0 c0 s1 c1 ...: Vaswani et al., the PyTorch tutorial */
  POSENC_SIN_COS_HALVES = 1, /**< s0 .. s(h-1) c0 .. c(h-1): tensor2tensor, fairseq, CTranslate2, HF Marian
                                  (Marian was first listed as interleaved; its code writes halves) */
  POSENC_COS_SIN_HALVES = 2  /**< c0 .. c(h-1) s0 .. s(h-1): ggml timestep_embedding, diffusers flipped */
} posenc_layout;

/** The encoding. Two specs with equal fields encode identically. */
typedef struct posenc_spec {
  int64_t d_model;         /**< row width, >= 1 */
  posenc_layout layout;    /**< POSENC_INTERLEAVED by default */
  double base;             /**< 10000.0 by default; > 0 and finite */
  double freq_denominator; /**< D in w_i = base^(-i/D); 0.0 means h = floor(d_model/2) */
  double position_scale;   /**< multiplies every position; 1.0 by default; finite */
} posenc_spec;

/** Vaswani et al.: interleaved, base 1e4, D = h, scale 1. */
posenc_spec posenc_spec_default(int64_t d_model);

/** An explicit position equal to POSENC_PAD means padding: its PE row is all zeros. */
#define POSENC_PAD INT64_MIN

/** n rows for positions first, first+1, ..., first+n-1; row r starts at out + r*out_stride. */
posenc_status posenc_table_f32(const posenc_spec *spec, int64_t first, int64_t n, float *out, int64_t out_stride);
/** One row per explicit position (packed sequences, left padding, decode steps); POSENC_PAD gives zeros. */
posenc_status posenc_rows_f32(const posenc_spec *spec, const int64_t *positions, int64_t n, float *out,
                              int64_t out_stride);

/** The same tables as IEEE binary16 / bfloat16 bit patterns, rounded to nearest-even from the float32 value
 *  (within 1 ULP of their own format). Strides count uint16_t elements. */
posenc_status posenc_table_bf16(const posenc_spec *spec, int64_t first, int64_t n, uint16_t *out, int64_t out_stride);
posenc_status posenc_table_f16(const posenc_spec *spec, int64_t first, int64_t n, uint16_t *out, int64_t out_stride);
posenc_status posenc_rows_bf16(const posenc_spec *spec, const int64_t *positions, int64_t n, uint16_t *out,
                               int64_t out_stride);
posenc_status posenc_rows_f16(const posenc_spec *spec, const int64_t *positions, int64_t n, uint16_t *out,
                              int64_t out_stride);

/** out[r] = fmaf(scale, x[r], PE(pos_r)) element-wise; pos_r = positions[r], or first + r when positions is
 *  NULL. out may equal x (in place); other overlaps are undefined.
 *  NaN results are the same on every path and architecture: the first NaN among x, the position term and
 *  scale, quieted; an invalid operation (0 * inf, inf - inf) gives +qNaN (0x7fc00000). This holds for every
 *  fused call below too. */
posenc_status posenc_add_f32(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                             const int64_t *positions, int64_t first, int64_t n, float *out, int64_t out_stride);

/** Fused embedding: out[r] = fmaf(scale, table[tokens[r]], PE(pos_r)); table holds vocab rows of table_stride
 *  floats. No PE table is materialised. */
posenc_status posenc_embed_f32(const posenc_spec *spec, const float *table, int64_t vocab, int64_t table_stride,
                               const int32_t *tokens, float scale, const int64_t *positions, int64_t first, int64_t n,
                               float *out, int64_t out_stride);
/** The same with a bfloat16 / binary16 embedding table (uint16_t bit patterns, widened exactly to float32). */
posenc_status posenc_embed_bf16(const posenc_spec *spec, const uint16_t *table, int64_t vocab, int64_t table_stride,
                                const int32_t *tokens, float scale, const int64_t *positions, int64_t first, int64_t n,
                                float *out, int64_t out_stride);
posenc_status posenc_embed_f16(const posenc_spec *spec, const uint16_t *table, int64_t vocab, int64_t table_stride,
                               const int32_t *tokens, float scale, const int64_t *positions, int64_t first, int64_t n,
                               float *out, int64_t out_stride);

/** Learned positions (BERT, GPT-2, a trained LSPE): out[r] = fmaf(scale, table[tokens[r]], pos_table[pos_r]);
 *  pos_r must lie in [0, pos_rows), or be POSENC_PAD (explicit positions only), which adds +0.0. */
posenc_status posenc_embed_learned_f32(int64_t d_model, const float *table, int64_t vocab, int64_t table_stride,
                                       const int32_t *tokens, float scale, const float *pos_table, int64_t pos_rows,
                                       int64_t pos_stride, const int64_t *positions, int64_t first, int64_t n,
                                       float *out, int64_t out_stride);

/* ---- Real-valued positions: timestep embeddings (diffusion, flow matching; docs/timesteps.md) ----------
 *
 * The rows of a table (and the fused add) at real-valued positions: any finite double t with |t| < 2^31
 * (999.0, 0.25, sigma * 1000) in place of an integer p, a_i = t * position_scale * w_i in exact real
 * arithmetic, every element correctly rounded, the same bits on every path. An integer-valued t gives the
 * bytes of that integer position. Statuses as for posenc_rows_f32, and: POSENC_ERR_NULL for a NULL t (with
 * n > 0); POSENC_ERR_OUT_OF_RANGE for a t that is not finite or has |t| >= 2^31; POSENC_ERR_INVALID for a
 * spec with a frequency |position_scale * w_i| of 2^52 or more (one step of t would turn the angle by more
 * than 2^50 quarter turns; real specs stay below 2^12). */

/** Row r at t[r]: n rows, row r at out + r*out_stride (out_stride >= d_model). */
posenc_status posenc_timesteps_f32(const posenc_spec *spec, const double *t, int64_t n, float *out, int64_t out_stride);
posenc_status posenc_timesteps_bf16(const posenc_spec *spec, const double *t, int64_t n, uint16_t *out,
                                    int64_t out_stride);
posenc_status posenc_timesteps_f16(const posenc_spec *spec, const double *t, int64_t n, uint16_t *out,
                                   int64_t out_stride);
/** out[r] = fmaf(scale, x[r], PE(t[r])) element-wise; out may equal x. */
posenc_status posenc_timesteps_add_f32(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                       const double *t, int64_t n, float *out, int64_t out_stride);

/* ---- Rotary position embeddings (RoPE; docs/contract.md section 4, docs/rope.md) -----------------------
 *
 * r = rotary_dim (even, >= 2), h = r/2 pairs, pair i in [0, h), integer position |p| < 2^31:
 *   f_i   = base^(-2i/r), or the caller's explicit f_i (doubles)
 *   a_i   = p * position_scale * f_i                 (exact real arithmetic on the given doubles)
 *   cos_i = m * cos(a_i), sin_i = m * sin(a_i)       m = attention_scale
 * Every cos_i, sin_i is the float32 nearest the exact value (ties to even), on every path. The rotation of
 * a pair (x, y) with those floats c, s is x' = fl32(fl64(x*c - y*s)), y' = fl32(fl64(y*c + x*s)): the
 * products exact, one rounding of the exact sum to double, then one to the row's format
 * (i.e. (float)fma((double)x, c, -((double)y * s))). Only the first r elements of a head row change. */

/** Which two elements of a head row rotate together. */
typedef enum posenc_rope_pairs {
  POSENC_ROPE_HALVES = 0,     /**< i and i + h: GPT-NeoX, HF rotate_half (Llama, Mistral, Qwen, Gemma, Phi), vLLM
                                   is_neox_style, ggml NEOX */
  POSENC_ROPE_INTERLEAVED = 1 /**< 2i and 2i + 1: GPT-J, Meta's reference Llama, ggml mode 0, ONNX interleaved=1 */
} posenc_rope_pairs;

/** A RoPE spec. Two specs with equal fields (and equal frequency values) rotate identically. */
typedef struct posenc_rope {
  int64_t rotary_dim;      /**< r: even, >= 2 */
  posenc_rope_pairs pairs; /**< POSENC_ROPE_HALVES by default */
  double base;             /**< 10000.0; f_i = base^(-2i/r) when freq is NULL; > 0 and finite */
  double position_scale;   /**< multiplies every position; 1.0; finite */
  const double *freq;      /**< NULL, or r/2 explicit finite frequencies (read at each call: the values, not
                                the pointer, identify the spec) */
  double attention_scale;  /**< m: 1.0 unless a scaling sets it; 2^-64 <= m <= 2^64 */
  int32_t axes;            /**< A: positions per token, 1 (the default) .. 4 (multi-axis RoPE, below) */
  const uint8_t *axis;     /**< NULL when axes == 1; else r/2 entries in [0, axes): the axis whose position
                                pair i rotates by (read at each call, like freq) */
} posenc_rope;

/** r, POSENC_ROPE_HALVES, base 1e4, position_scale 1, no explicit frequencies, attention_scale 1, one axis. */
posenc_rope posenc_rope_default(int64_t rotary_dim);

/** The inverse rotation: *out = *rope with position_scale negated (exactly), so that every call of out turns pair
 *  i by -p f_i where rope turns it by p f_i. Its cos and sin are the correctly rounded m cos and -m sin of the
 *  same exact angle: out at position p gives the bytes of rope at -p, on every path and in every call (cache,
 *  rotation, copy, q/k, multi-axis, real-valued positions). DeepSeek-V4's rotation of the attention output
 *  (transformers' apply_rotary_pos_emb(o, cos, -sin), vLLM's inverse=True) and ggml's ROPE_BACK. The attention
 *  scale m is kept (both runtimes negate the sin of the same cache). out may be rope; its freq and axis point
 *  where rope's do. POSENC_ERR_NULL when either pointer is NULL (nothing written); the spec itself is checked by
 *  the calls that use it. */
posenc_status posenc_rope_inverse(const posenc_rope *rope, posenc_rope *out);

/** HF transformers' rope_type values (modeling_rope_utils.py; docs/rope.md has each formula). */
typedef enum posenc_rope_type {
  POSENC_ROPE_TYPE_DEFAULT = 0,
  POSENC_ROPE_TYPE_LINEAR = 1,
  POSENC_ROPE_TYPE_DYNAMIC = 2,
  POSENC_ROPE_TYPE_YARN = 3,
  POSENC_ROPE_TYPE_LLAMA3 = 4,
  POSENC_ROPE_TYPE_LONGROPE = 5,
  POSENC_ROPE_TYPE_PROPORTIONAL = 6, /**< Gemma 4's full-attention layers: the first floor(p r / 2) pairs at
                                         base^(-2i/r) / factor, the rest not rotated (frequency 0) */
  /* The schemes vLLM names beyond HF's (docs/rope.md, "vLLM's schemes"); their YaRN correction range is
     floored / ceiled (vLLM's DeepSeek and Grok classes always do, TeleChat3's by default): `truncate` is not
     read. */
  POSENC_ROPE_TYPE_NTK = 7,           /**< vLLM "ntk": f_i = (base s)^(-2i/r) s^(-2/r); with mixed_b = b > 0,
                                           f_i = base^(-2i/r) s^(-((i+1)/h)^b), h = r/2 */
  POSENC_ROPE_TYPE_DEEPSEEK_YARN = 8, /**< vLLM "deepseek_yarn": YaRN with extrapolation_factor e, attention
                                           attn_factor get_mscale(s, mscale) / get_mscale(s, mscale_all_dim) */
  POSENC_ROPE_TYPE_YARN_LOG = 9,      /**< Grok-1 extra_method "yarn_log": f_i = base^(-2i/r) s^(-(1 - m_i)),
                                           m_i = e (1 - ramp_i); attention 1 */
  POSENC_ROPE_TYPE_THETA_SCALE = 10,  /**< Grok-1 extra_method "theta_scale": base' = base^(ln(L0 s / 2pi) /
                                           ln(L0 / 2pi)); attention 1 */
  POSENC_ROPE_TYPE_TELECHAT3 = 11     /**< TeleChat3: YaRN's frequencies, attention (0.07 ln s + 1) attn_factor */
} posenc_rope_type;

/** The parameters of a scaling (HF's rope_scaling / rope_parameters dict). Zero-initialise, then set what the
 *  scheme uses; a field a scheme does not read is ignored. */
typedef struct posenc_rope_scaling {
  posenc_rope_type type;
  double factor;                            /**< linear, dynamic, yarn, llama3, longrope; proportional (0 = 1) */
  int64_t original_max_positions;           /**< dynamic (max_position_embeddings), yarn, llama3, longrope */
  int64_t seq_len;                          /**< dynamic, longrope: the current sequence length (max position + 1) */
  double beta_fast, beta_slow;              /**< yarn: 32 and 1 when 0 */
  double mscale, mscale_all_dim;            /**< yarn (DeepSeek): 0 = unset; deepseek_yarn: 0 = vLLM's defaults
                                                 (mscale 1, mscale_all_dim 0) */
  int truncate;                             /**< yarn: floor/ceil the correction range (HF's default is 1) */
  double low_freq_factor, high_freq_factor; /**< llama3 */
  const double *short_factor, *long_factor; /**< longrope: r/2 each */
  double attention_factor;                  /**< yarn, longrope: 0 = derived as HF does */
  double partial_rotary_factor;             /**< proportional: p in (0, 1], the share of the r/2 pairs that rotate
                                                 (HF's int(p * head_dim // 2) of them); 0 = 1 */
  double alpha;                             /**< dynamic: vLLM's NTK alpha (HunYuan), base' = base alpha^(r/(r-2)),
                                                 factor and the lengths then not read; 0 = unset */
  double mixed_b;                           /**< ntk: vLLM's mixed_b, > 0 with mixed_b ln(r/2) < 2^30; 0 = unset (fixed
                                                 NTK) */
  double extrapolation_factor;              /**< deepseek_yarn, yarn_log, telechat3: e in [0, 1]; 0 = 1 (vLLM's
                                                 default; e = 0 itself is interpolation everywhere, not asked for) */
  double attn_factor;                       /**< deepseek_yarn, telechat3: vLLM's attn_factor, a multiplier of the
                                                 attention scale; 0 = 1 */
  double short_mscale, long_mscale;         /**< longrope: vLLM's magnitudes for the short / long factors (Phi-3.5-MoE);
                                                 the one of the chosen set, when non-zero, is the attention scale
                                                 (attention_factor must then be 0); 0 = unset */
} posenc_rope_scaling;

/** Fills *rope for rotary_dim and base under the scaling (NULL: default). Schemes whose frequencies are not
 *  base^(-2i/r) write the r/2 frequencies into freq (the caller's array, which rope->freq then points to);
 *  freq may be NULL for default and linear. Nothing is written on error. */
posenc_status posenc_rope_init(posenc_rope *rope, int64_t rotary_dim, double base, const posenc_rope_scaling *scaling,
                               double *freq);

/** The cos/sin cache: n rows for positions[t] (or first + t when positions is NULL); row t holds h values at
 *  cos_out + t*cos_stride and h at sin_out + t*sin_stride (strides in floats, >= h; cos and sin rows must not
 *  overlap). sin_out = cos_out + h with both strides r is vLLM's cos_sin_cache; separate buffers are ONNX
 *  Runtime's cos_cache / sin_cache. POSENC_PAD gives zeros. */
posenc_status posenc_rope_cache_f32(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                    float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride);

/** In place: for token t (position positions[t], or first + t when positions is NULL) and head j < heads,
 *  rotates the first r elements of the head row at x + t*token_stride + j*head_stride (strides in elements).
 *  POSENC_PAD leaves the token untouched. Head rows must not overlap (INVALID otherwise); a stride needs to
 *  be >= r only where it separates rows (n > 1 for token_stride, heads > 1 for head_stride). */
posenc_status posenc_rope_f32(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, float *x,
                              int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_bf16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, uint16_t *x,
                               int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_f16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, uint16_t *x,
                              int64_t heads, int64_t token_stride, int64_t head_stride);

/** Out of place, in one pass: the head rows of src, rotated, written to dst (x), with the bytes posenc_rope_f32
 *  would leave in a copy of src. For token t and head j < heads, the first r elements of the row at
 *  x + t*token_stride + j*head_stride become those of the row at src + t*src_token_stride + j*src_head_stride,
 *  rotated; elements from r on are neither read nor written (a partial rotation copies them itself).
 *  POSENC_PAD copies the token's first r elements unchanged. Destination rows must not overlap each other;
 *  source rows may; a source row and a destination row are either the same row (src == x with the same
 *  strides: the call is then posenc_rope_f32's) or apart (INVALID otherwise). */
posenc_status posenc_rope_copy_f32(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                   const float *src, int64_t src_token_stride, int64_t src_head_stride, float *x,
                                   int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_bf16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                    const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                    int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_f16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                   const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                   int64_t heads, int64_t token_stride, int64_t head_stride);

/** By given cos/sin rows: the rotations of posenc_rope_f32 and posenc_rope_copy_f32 (and their bf16, f16 forms)
 *  with token t's h = r/2 values read at cos + t*cos_stride and sin + t*sin_stride (strides in floats, >= h where
 *  n > 1) in place of the values of a position: rows that posenc_rope_cache_f32 wrote for the same rope
 *  (attention_scale included) give the bytes of the call at those positions, so a program that rotates many
 *  tensors at the same positions (every layer of a model) makes the values once. rope gives r, the pairs'
 *  layout and is checked as there; its frequencies are not used. The cos and sin rows are only read and must
 *  not overlap a destination row (INVALID). */
posenc_status posenc_rope_cached_f32(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,
                                     int64_t sin_stride, int64_t n, float *x, int64_t heads, int64_t token_stride,
                                     int64_t head_stride);
posenc_status posenc_rope_cached_bf16(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,
                                      int64_t sin_stride, int64_t n, uint16_t *x, int64_t heads, int64_t token_stride,
                                      int64_t head_stride);
posenc_status posenc_rope_cached_f16(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,
                                     int64_t sin_stride, int64_t n, uint16_t *x, int64_t heads, int64_t token_stride,
                                     int64_t head_stride);
posenc_status posenc_rope_copy_cached_f32(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, const float *src,
                                          int64_t src_token_stride, int64_t src_head_stride, float *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_cached_bf16(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                           const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                           int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                           int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_cached_f16(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                          int64_t src_token_stride, int64_t src_head_stride, uint16_t *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride);

/** By full-width tables (diffusers' apply_rotary_emb): each element has its own cos and sin. Rows of d elements
 *  (d even, >= 2) in pairs (INTERLEAVED: elements 2i and 2i + 1, diffusers' use_real_unbind_dim = -1; HALVES: i
 *  and i + d/2, unbind_dim = -2); element j of pair (u, v) has the partner u' = -v for the pair's first element
 *  and u' = u for its second. Token t's tables are the d floats at cos + t*cos_stride and sin + t*sin_stride
 *  (strides in floats, >= 0: rows may repeat, e.g. stride 0 for one row shared by every token), and element j
 *  of each of the heads rows of token t becomes
 *      RN_T(RN_f32(x_j cos_j + x'_j sin_j))
 *  from the row at src + t*src_token_stride + hd*src_head_stride, written at x + t*token_stride +
 *  hd*head_stride: the sum of the two exact products correctly rounded to float32 (then to nearest-even bf16 or
 *  f16), the same bits on every path. A NaN result is the first NaN of the pair (u, v), quieted, else +qNaN.
 *  Destination rows must not overlap each other or the tables; source rows may overlap each other; a source
 *  row and a destination row are the same row (src == x with the same strides: in place) or apart (INVALID). */
posenc_status posenc_rope_tables_f32(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                     const float *sin, int64_t sin_stride, int64_t n, const float *src,
                                     int64_t src_token_stride, int64_t src_head_stride, float *x, int64_t heads,
                                     int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_tables_bf16(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                      const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                      int64_t src_token_stride, int64_t src_head_stride, uint16_t *x, int64_t heads,
                                      int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_tables_f16(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                     const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                     int64_t src_token_stride, int64_t src_head_stride, uint16_t *x, int64_t heads,
                                     int64_t token_stride, int64_t head_stride);

/** q and k of the same tokens in one pass, cos/sin computed once per token and applied to every head of both
 *  (GQA: k_heads may differ from q_heads; k may be NULL with k_heads == 0). A fused QKV buffer of head_dim
 *  elements per head is q = qkv, k = qkv + q_heads*head_dim with the same token stride. q and k rows must not
 *  overlap each other. */
posenc_status posenc_rope_qk_f32(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, float *q,
                                 int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, float *k,
                                 int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);
posenc_status posenc_rope_qk_bf16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                  uint16_t *q, int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride,
                                  uint16_t *k, int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);
posenc_status posenc_rope_qk_f16(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                 uint16_t *q, int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride,
                                 uint16_t *k, int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);

/** ggml's RoPE (ggml_rope_ext / ggml_rope_multi as its CPU backend computes them, on ggml's own float parameters;
 *  docs/rope.md, "ggml's scheme"): pair i (of `pairs`) turns by p f_i and cos, sin are scaled by m, where
 *    f_i = base^(-2 k_i / n_dims) / c_i * (freq_scale + (1 - freq_scale) ext_factor ramp_i)
 *    ramp_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1), low = max(0, floor(cd(beta_fast))),
 *    high = min(n_dims - 1, ceil(cd(beta_slow))), cd(b) = n_dims ln(n_ctx_orig / (2 pi b)) / (2 ln base)
 *    m = attn_factor (1 + ln(1 / freq_scale) / 10)     (attn_factor alone when ext_factor is 0)
 *  k_i = index[i] (NULL: i; VISION's index restarts per section), c_i = factors[i] (NULL: 1). The floor and
 *  ceil are decided on the real cd; infinite cd (n_ctx_orig 0, beta 0 or infinite, base 1) as ggml's IEEE
 *  arithmetic has it. */
typedef struct posenc_ggml_rope_params {
  int64_t n_dims;       /**< ggml's n_dims: even, >= 2 */
  int64_t pairs;        /**< the pairs written: n_dims / 2, or n_dims for ggml's VISION mode */
  const int64_t *index; /**< NULL, or `pairs` theta indices in [0, 2^31) */
  const float *factors; /**< NULL, or `pairs` freq_factors (non-zero, finite) */
  float freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
  int64_t n_ctx_orig; /**< within the int32 range */
} posenc_ggml_rope_params;

/** freq[i] = the double nearest f_i for i < pairs, *attention_scale = the double nearest m. POSENC_ERR_NULL for
 *  a NULL argument; POSENC_ERR_INVALID, nothing written, where a value is not one posenc takes: n_dims odd or
 *  < 2, pairs < 1, an index outside [0, 2^31), n_ctx_orig outside int32, base, freq_scale or attn_factor not
 *  positive and finite, ext_factor not finite, a factor zero or not finite, a ramp ggml makes NaN, a frequency
 *  of 2^1000 or more, m outside [2^-64, 2^64]. The spec is then rotary_dim = 2 pairs, freq, attention_scale. */
posenc_status posenc_rope_ggml_frequencies(const posenc_ggml_rope_params *params, double *freq,
                                           double *attention_scale);

/* ---- Multi-axis RoPE (M-RoPE of vision-language models, 2-D RoPE of vision towers; docs/rope.md) --------
 *
 * With axes = A > 1 every token has A positions, and pair i rotates by the position of its own axis:
 *   a_i = p[axis[i]] * position_scale * f_i         (f_i from base or the explicit array, as above)
 * Everything else (the cache values, the rotation, bf16/f16 rounding, NaN results, POSENC_PAD, the same bits
 * on every path) is as for one axis, and A = 1 is exactly the one-axis call. Every RoPE entry point above
 * takes such a spec:
 *  - explicit positions hold A * n values, axis-major: token t's position on axis a is positions[a*n + t]
 *    (HF's position_ids[a], ggml's position tensor); positions NULL gives every axis of token t the
 *    position first + t (a text token);
 *  - POSENC_PAD on axis 0 marks a padding token; every value on the other axes (a padding token's too) must
 *    satisfy |p| < 2^31, like every non-PAD value on axis 0 (OUT_OF_RANGE otherwise);
 *  - INVALID for axes outside [1, 4], a NULL axis with axes > 1, or an axis value >= axes. */

/** How posenc_rope_sections assigns pairs to axes from section sizes (counted in pairs). With S the sum of the
 *  sections, pair i belongs to sector j = i mod S (a sum below r/2 repeats, ggml's rule); the frequency of
 *  pair i is the one-axis f_i unless the layout says otherwise. */
typedef enum posenc_rope_layout {
  POSENC_SECTIONS_CHUNKED = 0,       /**< sectors [0, s0) axis 0, [s0, s0+s1) axis 1, ...: Qwen2-VL / Qwen2.5-VL
                                          (HF mrope_section), GLM-4V, ggml MROPE */
  POSENC_SECTIONS_INTERLEAVED = 1,   /**< sector j on axis 1 if j%3 == 1 and j < 3*s1, on axis 2 if j%3 == 2 and
                                          j < 3*s2, else on axis 0: Qwen3-VL (HF's interleaved mrope) */
  POSENC_SECTIONS_VISION = 2,        /**< chunked, and the frequency index restarts in each section: for sector j
                                          in section a (starting at sector c_a), f_i = base^(-2k/h) with
                                          k = j - c_a, h = r/2: Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision towers,
                                          Llama 4 vision (with interleaved pairs), ggml VISION */
  POSENC_SECTIONS_STRIDED = 3,       /**< chunked, and section a takes every A-th frequency from a: for sector j
                                          in section a, f_i = base^(-2(A k + a)/r), k = j - c_a: Pixtral (A = 2:
                                          the even-index frequencies by the row, the odd-index ones by the column) */
  POSENC_SECTIONS_INTERLEAVED_4 = 4, /**< as INTERLEAVED, but sector j goes to axis 0 only if j%3 == 0 and
                                        j < 3*s0, and every sector outside the three interleaved sets to axis 3:
                                        ggml IMROPE, whose 4th position slot takes them */
  POSENC_SECTIONS_ALTERNATING = 5,   /**< sectors j < 2*s1 alternate axis 1 (even j) and axis 2 (odd j), s1 == s2;
                                         the s0 after them on axis 0: ERNIE-4.5-VL (vLLM's
                                         Ernie4_5_VLRotaryEmbedding; its mrope_section [h, w, t] is [t, h, w] here) */
  POSENC_SECTIONS_PER_AXIS = 6,      /**< chunked, and each section rotates at its own width's frequencies: for
                                         sector j in section a, f_i = base^(-k/s_a), k = j - c_a (an axis of
                                         2 s_a dimensions, theta^(-2k/d_a)): Flux, Wan, HunyuanVideo,
                                         CogVideoX, Qwen-Image (diffusers' per-axis get_1d_rotary_pos_embed) */
  POSENC_SECTIONS_BALANCED = 7       /**< each axis spread evenly over the sectors: openPangu-VL (vLLM's
                                         MRotaryEmbeddingInterleaved, rope_type "openpangu"). Three sections
                                         (s2 > 0; s0 >= 1): the last sector S-1 is axis 0, and sectors 0 .. S-2
                                         take s0-1, s1, s2 of axes 0, 1, 2; two sections (s2 == 0): sectors
                                         0 .. S-1 take s0, s1 of axes 0, 1 (vLLM's position rows 0 and 1). Each
                                         sector in turn goes to the axis with sectors left that has placed the
                                         smallest share placed_a / count_a of its count so far, never the axis of
                                         the sector before while another has sectors left, ties to the lower
                                         axis: [6, 5, 5] is 0 1 2 0 1 2 ... 0 1 2 0. s3 == 0 */
} posenc_rope_layout;

/** Sets rope->axes and rope->axis = axis_out (r/2 entries written) from sections[0..3] (pairs; unused ones 0).
 *  A is 3 for INTERLEAVED and ALTERNATING, 4 for INTERLEAVED_4, 3 for BALANCED with three sections and 2 with
 *  two, and otherwise one more than the index of the
 *  last non-zero section. VISION, STRIDED and PER_AXIS also write the r/2 frequencies into freq_out (each the double
 * nearest the real value of base^(-e) for rope->base, as posenc_rope_init writes them) and set rope->freq = freq_out;
 *  the other layouts keep rope->freq (base^(-2i/r), or explicit frequencies from posenc_rope_init) and need no
 *  freq_out. Every other field of *rope is kept. NULL for a NULL rope, sections or axis_out (or freq_out where
 *  it is written); INVALID for an invalid rotary_dim (or base, where frequencies are written), an unknown
 *  layout, a negative section, a sum of 0 or past r/2 (ALTERNATING: also s1 != s2 or s3 != 0; PER_AXIS: lcm(s_a) past
 * 2^40; BALANCED: s3 != 0, or s0 == 0 with s2 > 0). Nothing is written on error. */
posenc_status posenc_rope_sections(posenc_rope *rope, const int64_t sections[4], posenc_rope_layout layout,
                                   uint8_t *axis_out, double *freq_out);

/* ---- RoPE at real-valued positions (diffusion and video transformers; docs/rope.md) ---------------------
 *
 * Each RoPE call above has a twin posenc_rope_*_real taking double positions t in place of the integer ones
 * (LTX-Video's patch midpoints and seconds, CogVideoX's linspace grids, fractional frame rates):
 *   a_i = t[axis[i]] * position_scale * f_i           (exact real arithmetic on the given doubles)
 * and everything else as for integer positions: m cos, m sin correctly rounded, the same rotation and element
 * rounding, the same bits on every path; an integer-valued t gives the bytes of the integer call at that
 * integer. positions holds A * n doubles, axis-major (token t's position on axis a at positions[a*n + t]);
 * there is no `first` and no POSENC_PAD. Statuses as for the integer call, and: POSENC_ERR_NULL for a NULL
 * positions (with n > 0); POSENC_ERR_OUT_OF_RANGE for a position that is not finite or has |t| >= 2^31;
 * POSENC_ERR_INVALID for a spec with a frequency |position_scale * f_i| of 2^52 or more (as the timesteps). */
posenc_status posenc_rope_cache_real_f32(const posenc_rope *rope, const double *positions, int64_t n, float *cos_out,
                                         int64_t cos_stride, float *sin_out, int64_t sin_stride);
posenc_status posenc_rope_real_f32(const posenc_rope *rope, const double *positions, int64_t n, float *x, int64_t heads,
                                   int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_real_bf16(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *x,
                                    int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_real_f16(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *x,
                                   int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_real_f32(const posenc_rope *rope, const double *positions, int64_t n, const float *src,
                                        int64_t src_token_stride, int64_t src_head_stride, float *x, int64_t heads,
                                        int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_real_bf16(const posenc_rope *rope, const double *positions, int64_t n,
                                         const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                         uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_copy_real_f16(const posenc_rope *rope, const double *positions, int64_t n,
                                        const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                        uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride);
posenc_status posenc_rope_qk_real_f32(const posenc_rope *rope, const double *positions, int64_t n, float *q,
                                      int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, float *k,
                                      int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);
posenc_status posenc_rope_qk_real_bf16(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *q,
                                       int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, uint16_t *k,
                                       int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);
posenc_status posenc_rope_qk_real_f16(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *q,
                                      int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, uint16_t *k,
                                      int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride);

/* ---- Names of the enumerations (one list each: lib/setup/enum_lists.hpp) -------------------------------------
 *
 * The one spelling of each value that the `posenc` tool, the Python binding and the docs use: pairs "halves",
 * "interleaved"; rope types "default", "linear", "dynamic", "yarn", "llama3", "longrope", "proportional",
 * "ntk", "deepseek_yarn", "yarn_log", "theta_scale", "telechat3"; layouts "chunked", "interleaved", "vision",
 * "strided", "interleaved_4", "alternating", "per_axis", "balanced". The name functions return NULL outside the enum
 * (so a loop from 0 to the first NULL visits every value); the from_name functions read '-' as '_' and return
 * POSENC_ERR_NULL for a NULL argument, POSENC_ERR_INVALID (nothing written) for a name that is not one. */
const char *posenc_rope_pairs_name(posenc_rope_pairs pairs);
const char *posenc_rope_type_name(posenc_rope_type type);
const char *posenc_rope_layout_name(posenc_rope_layout layout);
posenc_status posenc_rope_pairs_from_name(const char *name, posenc_rope_pairs *out);
posenc_status posenc_rope_type_from_name(const char *name, posenc_rope_type *out);
posenc_status posenc_rope_layout_from_name(const char *name, posenc_rope_layout *out);

/** The columns of a rope type's one definition (lib/setup/rope_types.hpp; docs/rope.md, "One row per rope type"). */
typedef enum posenc_rope_keys {
  POSENC_ROPE_KEYS_SUMMARY = 0,      /**< the formula in one line */
  POSENC_ROPE_KEYS_FIELDS = 1,       /**< the posenc_rope_scaling fields the scheme reads, by their dict keys */
  POSENC_ROPE_KEYS_ACCEPTED = 2,     /**< further dict keys posenc.rope_init takes for the type (checked, or passed
                                          over as the runtime that writes them does) */
  POSENC_ROPE_KEYS_TRANSFORMERS = 3, /**< the keys transformers' init function of the type reads; NULL when
                                          transformers has no such type */
  POSENC_ROPE_KEYS_ELSEWHERE = 4,    /**< keys another runtime reads for the type to change the values and this
                                          scheme does not: refused by name */
  POSENC_ROPE_KEYS_ALIASES = 5       /**< other names configurations give the type */
} posenc_rope_keys;

/** A column of a rope type's definition: space-separated keys ("" for none), or the summary; static storage. NULL for
 *  a type or a column outside its enum, and for POSENC_ROPE_KEYS_TRANSFORMERS of a type transformers does not
 *  have. The `posenc` tool's scaling options, posenc.rope_init's dict reader and posenc.torch read their keys here. */
const char *posenc_rope_type_keys(posenc_rope_type type, posenc_rope_keys which);

/* The _part twins of every kernel above (one call split across threads) are declared in posenc/parts.h, which
 * this header includes at its end. */

/** Instruction-set paths. One name per path everywhere: files, namespaces, meson options, POSENC_ISA. */
typedef enum posenc_isa {
  POSENC_ISA_SCALAR = 0,
  POSENC_ISA_AVX2 = 1,   /**< AVX2 + FMA + F16C, with OS support for YMM state */
  POSENC_ISA_AVX512 = 2, /**< AVX-512 F/CD/DQ/BW/VL, with OS support for ZMM state */
  POSENC_ISA_NEON = 3,   /**< AArch64 Advanced SIMD */
  POSENC_ISA_COUNT = 4   /**< the number of paths (not a path): loop over them with v < POSENC_ISA_COUNT */
} posenc_isa;

/** The path kernels run on now: chosen once at first use (POSENC_ISA, else the best available), or forced.
 *  When POSENC_ISA names a path that is unknown or unavailable, kernel calls return POSENC_ERR_UNSUPPORTED
 *  and this returns the requested value (or POSENC_ISA_SCALAR for an unknown name). */
posenc_isa posenc_active_isa(void);
/** "scalar", "avx2", "avx512", "neon"; "unknown" for any other value. */
const char *posenc_isa_name(posenc_isa isa);
/** 1 when the path is compiled in and this CPU and OS support it, else 0. */
int posenc_isa_available(posenc_isa isa);
/** Process-wide: every later kernel call runs on this path. POSENC_ERR_UNSUPPORTED (and no change) when it
 *  is not available; POSENC_ERR_INVALID for a value outside the enum. Meant for tests and benchmarks. */
posenc_status posenc_force_isa(posenc_isa isa);
/** "MAJOR.MINOR.PATCH", from meson.build. */
const char *posenc_version(void);

/* ---- This build and this machine (`posenc info`; docs/api.md) -----------------------------------------
 *
 * What the path choice and the non-temporal stores are decided from, as the library itself decides them. */

/** Why the active path is the one it is. */
typedef enum posenc_path_reason {
  POSENC_PATH_BEST_AVAILABLE = 0,  /**< POSENC_ISA unset or empty: the best path compiled in and supported */
  POSENC_PATH_ENVIRONMENT = 1,     /**< POSENC_ISA named an available path */
  POSENC_PATH_FORCED = 2,          /**< posenc_force_isa */
  POSENC_PATH_ENV_UNAVAILABLE = 3, /**< POSENC_ISA named a known path that is not available: kernels refuse */
  POSENC_PATH_ENV_UNKNOWN = 4      /**< POSENC_ISA named no path: kernels refuse */
} posenc_path_reason;

/** The CPU facts the path choice combines, one bit each (posenc_feature_name names them). */
typedef enum posenc_feature {
  POSENC_FEATURE_OSXSAVE = 0,
  POSENC_FEATURE_AVX = 1,
  POSENC_FEATURE_FMA = 2,
  POSENC_FEATURE_F16C = 3,
  POSENC_FEATURE_AVX2 = 4,
  POSENC_FEATURE_AVX512F = 5,
  POSENC_FEATURE_AVX512CD = 6,
  POSENC_FEATURE_AVX512DQ = 7,
  POSENC_FEATURE_AVX512BW = 8,
  POSENC_FEATURE_AVX512VL = 9,
  POSENC_FEATURE_OS_YMM_STATE = 10, /**< XCR0: the OS saves SSE and AVX state */
  POSENC_FEATURE_OS_ZMM_STATE = 11, /**< XCR0: and opmask, ZMM_Hi256, Hi16_ZMM */
  POSENC_FEATURE_NEON = 12,
  POSENC_FEATURE_COUNT = 13 /**< not a feature */
} posenc_feature;

typedef struct posenc_machine {
  uint32_t compiled;         /**< bit v set: path v (posenc_isa) is compiled into this build */
  posenc_path_reason reason; /**< why posenc_active_isa() is what it is */
  uint32_t features_known;   /**< bit f set: feature f applies to this architecture (x86-64: 0..11; AArch64: 12) */
  uint32_t features;         /**< bit f set: this CPU (and OS) has feature f */
  uint64_t l1d, l2, l3;      /**< data cache sizes in bytes, 0 when not known */
  uint32_t l3_sharing;       /**< logical CPUs sharing the L3 (1 when not known) */
  const char *cache_source;  /**< "cpuid leaf 4", "cpuid leaf 0x8000001D", "sysconf" or "none" (static) */
  uint64_t stream_threshold; /**< float32 outputs of this many bytes or more are written with non-temporal
                                  stores on the paths that have them (AVX2, AVX-512) */
} posenc_machine;

/** Fills *out. POSENC_ERR_NULL for a NULL out. Resolves the active path (as any first call does). */
posenc_status posenc_machine_info(posenc_machine *out);
/** "osxsave", "avx", "fma", "f16c", "avx2", "avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl",
 *  "os-ymm-state", "os-zmm-state", "neon"; NULL outside the enum. */
const char *posenc_feature_name(posenc_feature f);

POSENC_END_DECLS

/* The _part twins: their own header, included here so that every existing include keeps compiling. */
#include "posenc/parts.h"

#endif /* POSENC_POSENC_H */
