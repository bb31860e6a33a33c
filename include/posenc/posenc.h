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
 * (UNSUPPORTED); the first use of a spec may finally report NO_MEMORY.
 */
#ifndef POSENC_POSENC_H
#define POSENC_POSENC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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
                                  (CONTRACT.md lists Marian as interleaved; its code writes halves) */
  POSENC_COS_SIN_HALVES = 2  /**< c0 .. c(h-1) s0 .. s(h-1): ggml timestep_embedding, diffusers flipped */
} posenc_layout;

/** The encoding. Two specs with equal fields encode identically. */
typedef struct posenc_spec {
  int64_t d_model;          /**< row width, >= 1 */
  posenc_layout layout;     /**< POSENC_INTERLEAVED by default */
  double base;              /**< 10000.0 by default; > 0 and finite */
  double freq_denominator;  /**< D in w_i = base^(-i/D); 0.0 means h = floor(d_model/2) */
  double position_scale;    /**< multiplies every position; 1.0 by default; finite */
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
                               const int32_t *tokens, float scale, const int64_t *positions, int64_t first,
                               int64_t n, float *out, int64_t out_stride);
/** The same with a bfloat16 / binary16 embedding table (uint16_t bit patterns, widened exactly to float32). */
posenc_status posenc_embed_bf16(const posenc_spec *spec, const uint16_t *table, int64_t vocab,
                                int64_t table_stride, const int32_t *tokens, float scale, const int64_t *positions,
                                int64_t first, int64_t n, float *out, int64_t out_stride);
posenc_status posenc_embed_f16(const posenc_spec *spec, const uint16_t *table, int64_t vocab, int64_t table_stride,
                               const int32_t *tokens, float scale, const int64_t *positions, int64_t first,
                               int64_t n, float *out, int64_t out_stride);

/** Learned positions (BERT, GPT-2, a trained LSPE): out[r] = fmaf(scale, table[tokens[r]], pos_table[pos_r]);
 *  pos_r must lie in [0, pos_rows), or be POSENC_PAD (explicit positions only), which adds +0.0. */
posenc_status posenc_embed_learned_f32(int64_t d_model, const float *table, int64_t vocab, int64_t table_stride,
                                       const int32_t *tokens, float scale, const float *pos_table,
                                       int64_t pos_rows, int64_t pos_stride, const int64_t *positions,
                                       int64_t first, int64_t n, float *out, int64_t out_stride);

/** Instruction-set paths. One name per path everywhere: files, namespaces, meson options, POSENC_ISA. */
typedef enum posenc_isa {
  POSENC_ISA_SCALAR = 0,
  POSENC_ISA_AVX2 = 1,   /**< AVX2 + FMA + F16C, with OS support for YMM state */
  POSENC_ISA_AVX512 = 2, /**< AVX-512 F/CD/DQ/BW/VL, with OS support for ZMM state */
  POSENC_ISA_NEON = 3    /**< AArch64 Advanced SIMD */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POSENC_POSENC_H */
