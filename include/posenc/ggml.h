/* posenc/ggml.h: ggml's RoPE and timestep embedding operations computed by posenc (docs/ggml.md).
 *
 * Each function takes the arguments of the ggml builder it is named after (ggml.h at ggml d99724f2) and
 * returns a tensor of the same shape and type, so that a program built on ggml switches by renaming the call:
 * ggml_rope_ext( becomes posenc_ggml_rope_ext(. The result is a ggml custom operation (GGML_OP_CUSTOM) that
 * ggml's CPU backend runs on its own threads: thread ith of nth rotates its share of the rows (ggml's rows:
 * one head of one token), and the bytes do not depend on nth.
 *
 * What changes is the arithmetic: each cos and sin is the correctly rounded float32 of m cos(p f_i) and
 * m sin(p f_i), with f_i and m the exact real values of ggml's formulas on its float parameters, each rounded
 * once to double (computed by posenc, not libm, and cached per parameter set and freq_factors content); the
 * rotation is posenc_rope_f32's (posenc.h). ggml forms the angle by repeated float32 multiplication, whose error
 * grows with the position; at positions below a few thousand both agree to ggml's own cross-backend criterion
 * (normalised mean squared error <= 1e-7).
 *
 * Supported, as in ggml: every mode (GGML_ROPE_TYPE_NORMAL, _NEOX, _MROPE, _IMROPE with its fourth position
 * slot, _VISION), freq_factors (c: F32, at least as many values as rotated pairs), YaRN (freq_scale, ext_factor,
 * attn_factor, beta_fast, beta_slow, n_ctx_orig, with ggml's ramp and magnitude factor), the backward
 * operations (the transposed rotation), F32 and F16, non-contiguous views of a, in place and out of place, 4-D
 * tensors (positions shared by the fourth dimension), and posenc_ggml_rope_set_offset (ggml_rope_set_offset).
 *
 * ggml's conventions are kept: a has ne0 >= n_dims (VISION: ne0 == 2 n_dims), b is I32 with ne2 positions (4 ne2
 * for the multi modes: the four slots one after the other), the rows of a have contiguous elements. Where ggml
 * would compute something posenc cannot represent, the builder (or, for values only known at run time, the
 * operation) stops the program through ggml's abort, as GGML_ASSERT does: attn_factor <= 0 or a magnitude
 * outside [2^-64, 2^64], freq_scale <= 0, a NaN YaRN ramp, a freq_factor of 0, a position of -2^31 (posenc takes
 * |p| < 2^31; the backward operation negates positions).
 *
 * Ownership: the result's operation parameters point to an immutable record of the parameter set, interned in
 * a process-wide table (a repeated build finds the same record, so rebuilding a graph for every batch, as
 * llama.cpp does, allocates nothing after the first time). Records, and the frequency tables computed for
 * them, live until the process exits: one per distinct parameter set and freq_factors content, the same policy
 * as posenc's own per-spec tables. Nothing is owned by the ggml context, so graphs may be built in contexts
 * with no_alloc and computed any number of times.
 */
#ifndef POSENC_GGML_H
#define POSENC_GGML_H

#include <ggml.h> /* ggml's own header (angle brackets: not this file, which has the same name) */

#include "posenc/posenc.h" /* POSENC_BEGIN_DECLS */

/* As in posenc.h: a shared library that links libposenc_ggml.a exports these functions and none of the
 * archive's C++ internals (its objects are built with hidden visibility). */
POSENC_BEGIN_DECLS

struct ggml_tensor *posenc_ggml_rope_ext(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                         struct ggml_tensor *c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                         float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                         float beta_slow);

/* In place: returns a view of a, which is rotated. */
struct ggml_tensor *posenc_ggml_rope_ext_inplace(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                                 struct ggml_tensor *c, int n_dims, int mode, int n_ctx_orig,
                                                 float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                                 float beta_fast, float beta_slow);

/* The backward operation (ggml_rope_ext_back): a holds the gradients of the rotation's result; the rotation by
 * the negated angles with the same magnitude, i.e. the transposed matrix. */
struct ggml_tensor *posenc_ggml_rope_ext_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                              struct ggml_tensor *c, int n_dims, int mode, int n_ctx_orig,
                                              float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                              float beta_fast, float beta_slow);

/* Multi-axis modes (GGML_ROPE_TYPE_MROPE, _IMROPE, _VISION): sections[4] counts pairs per axis, as ggml's. */
struct ggml_tensor *posenc_ggml_rope_multi(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                           struct ggml_tensor *c, int n_dims, int sections[4], int mode, int n_ctx_orig,
                                           float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                           float beta_fast, float beta_slow);

struct ggml_tensor *posenc_ggml_rope_multi_inplace(struct ggml_context *ctx, struct ggml_tensor *a,
                                                   struct ggml_tensor *b, struct ggml_tensor *c, int n_dims,
                                                   int sections[4], int mode, int n_ctx_orig, float freq_base,
                                                   float freq_scale, float ext_factor, float attn_factor,
                                                   float beta_fast, float beta_slow);

struct ggml_tensor *posenc_ggml_rope_multi_back(struct ggml_context *ctx, struct ggml_tensor *a, struct ggml_tensor *b,
                                                struct ggml_tensor *c, int n_dims, int sections[4], int mode,
                                                int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                                float attn_factor, float beta_fast, float beta_slow);

/* ggml_rope_set_offset for posenc's operations: the rotated window starts at element n_offs of each row (even,
 * n_offs + n_dims <= ne0; not for VISION). Returns a. */
struct ggml_tensor *posenc_ggml_rope_set_offset(struct ggml_tensor *a, int n_offs);

/* 1 when t is one of the operations above (its result tensor), else 0. */
int posenc_ggml_is_rope(const struct ggml_tensor *t);

/* ggml_timestep_embedding (diffusion models' timestep embedding; stable-diffusion.cpp): the same arguments and
 * result, an F32 tensor [dim, timesteps->ne[0]] whose row i is the embedding of the F32 timestep i: cos/sin
 * halves, cos(t w_j) in column j and sin(t w_j) in column j + dim/2 with w_j = max_period^(-j / (dim/2)), an odd
 * dim ending with a 0.0 column. Each element is the correctly rounded float32 of the exact value at the float
 * timestep (posenc_timesteps_f32 with posenc::spec::ggml_timestep(dim, max_period); docs/timesteps.md), where
 * ggml forms w_j with expf and t w_j in float32. dim and max_period live in the result's operation parameters
 * (nothing is allocated or owned). Stops the program through ggml's abort for timesteps that are not F32 with
 * contiguous elements (ggml's CPU operation asserts the same), dim < 1, max_period < 1, and, when computed, a
 * timestep that is not finite or has |t| >= 2^31. */
struct ggml_tensor *posenc_ggml_timestep_embedding(struct ggml_context *ctx, struct ggml_tensor *timesteps, int dim,
                                                   int max_period);

POSENC_END_DECLS

#endif /* POSENC_GGML_H */
