/* posenc: the _part twins of every kernel of posenc/posenc.h, one call split across threads (docs/threads.md).
 *
 * posenc/posenc.h includes this header; a caller that includes either has both. C99 and C++, the same
 * visibility and the same ABI as posenc.h's calls.
 */
#ifndef POSENC_PARTS_H
#define POSENC_PARTS_H

#include <stdint.h>

#include "posenc/posenc.h"

POSENC_BEGIN_DECLS

/* ---- Parts of a call: one call split across threads (docs/threads.md) ---------------------------------
 *
 * Every kernel above has a twin posenc_X_part taking the same arguments and then int64_t begin, end. It checks
 * the WHOLE call exactly as posenc_X does (the same statuses in the same order, nothing written on error),
 * then writes only rows [begin, end) of the n rows (tables, fused calls, embeddings, timesteps, the RoPE cache)
 * or tokens [begin, end) of the n tokens (RoPE rotations: every head of q and k of those tokens). The order of
 * the checks: all of posenc_X's up to and including the selected ISA (UNSUPPORTED); then the range:
 * POSENC_ERR_INVALID unless 0 <= begin <= end <= n; then the one-time setup of a new spec (NO_MEMORY), which
 * runs even for an empty part. posenc_X(...) is posenc_X_part(..., 0, n).
 *
 * begin == end checks the whole call and writes nothing: a thread pool calls that once, then fans out.
 * Any set of disjoint parts that covers [0, n), run on any threads, in any order, at the same time, writes
 * exactly the bytes posenc_X writes: every value is correctly rounded from its exact angle, so no byte
 * depends on where a part starts. The parts of a call share no mutable state in the library; they may run
 * concurrently with each other (the buffers a part writes are its own rows; the inputs are only read).
 * The arguments are read by every part: they must stay valid and unchanged until the last part returns. */
posenc_status posenc_table_f32_part(const posenc_spec *spec, int64_t first, int64_t n, float *out, int64_t out_stride,
                                    int64_t begin, int64_t end);
posenc_status posenc_table_bf16_part(const posenc_spec *spec, int64_t first, int64_t n, uint16_t *out,
                                     int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_table_f16_part(const posenc_spec *spec, int64_t first, int64_t n, uint16_t *out,
                                    int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_rows_f32_part(const posenc_spec *spec, const int64_t *positions, int64_t n, float *out,
                                   int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_rows_bf16_part(const posenc_spec *spec, const int64_t *positions, int64_t n, uint16_t *out,
                                    int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_rows_f16_part(const posenc_spec *spec, const int64_t *positions, int64_t n, uint16_t *out,
                                   int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_add_f32_part(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                  const int64_t *positions, int64_t first, int64_t n, float *out, int64_t out_stride,
                                  int64_t begin, int64_t end);
posenc_status posenc_embed_f32_part(const posenc_spec *spec, const float *table, int64_t vocab, int64_t table_stride,
                                    const int32_t *tokens, float scale, const int64_t *positions, int64_t first,
                                    int64_t n, float *out, int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_embed_bf16_part(const posenc_spec *spec, const uint16_t *table, int64_t vocab,
                                     int64_t table_stride, const int32_t *tokens, float scale, const int64_t *positions,
                                     int64_t first, int64_t n, float *out, int64_t out_stride, int64_t begin,
                                     int64_t end);
posenc_status posenc_embed_f16_part(const posenc_spec *spec, const uint16_t *table, int64_t vocab, int64_t table_stride,
                                    const int32_t *tokens, float scale, const int64_t *positions, int64_t first,
                                    int64_t n, float *out, int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_embed_learned_f32_part(int64_t d_model, const float *table, int64_t vocab, int64_t table_stride,
                                            const int32_t *tokens, float scale, const float *pos_table,
                                            int64_t pos_rows, int64_t pos_stride, const int64_t *positions,
                                            int64_t first, int64_t n, float *out, int64_t out_stride, int64_t begin,
                                            int64_t end);
posenc_status posenc_timesteps_f32_part(const posenc_spec *spec, const double *t, int64_t n, float *out,
                                        int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_timesteps_bf16_part(const posenc_spec *spec, const double *t, int64_t n, uint16_t *out,
                                         int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_timesteps_f16_part(const posenc_spec *spec, const double *t, int64_t n, uint16_t *out,
                                        int64_t out_stride, int64_t begin, int64_t end);
posenc_status posenc_timesteps_add_f32_part(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                            const double *t, int64_t n, float *out, int64_t out_stride, int64_t begin,
                                            int64_t end);
/** Rows [begin, end) of the cache. Multi-axis positions stay the whole call's array: token t of axis a is
 *  positions[a*n + t] for the part as for the whole call (n, not end - begin). */
posenc_status posenc_rope_cache_f32_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                         float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride,
                                         int64_t begin, int64_t end);
/** Tokens [begin, end): every head of each of those tokens (and of k's, for the _qk calls). */
posenc_status posenc_rope_f32_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                   float *x, int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                   int64_t end);
posenc_status posenc_rope_bf16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                    uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                    int64_t begin, int64_t end);
posenc_status posenc_rope_f16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                   uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                   int64_t end);
posenc_status posenc_rope_cached_f32_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, float *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end);
posenc_status posenc_rope_cached_bf16_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                           const float *sin, int64_t sin_stride, int64_t n, uint16_t *x, int64_t heads,
                                           int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end);
posenc_status posenc_rope_cached_f16_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, uint16_t *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end);
posenc_status posenc_rope_copy_cached_f32_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                               const float *sin, int64_t sin_stride, int64_t n, const float *src,
                                               int64_t src_token_stride, int64_t src_head_stride, float *x,
                                               int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                               int64_t end);
posenc_status posenc_rope_copy_cached_bf16_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                                const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                                int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                                int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                                int64_t end);
posenc_status posenc_rope_copy_cached_f16_part(const posenc_rope *rope, const float *cos, int64_t cos_stride,
                                               const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                               int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                               int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                               int64_t end);
posenc_status posenc_rope_tables_f32_part(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, const float *src,
                                          int64_t src_token_stride, int64_t src_head_stride, float *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end);
posenc_status posenc_rope_tables_bf16_part(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                           const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                           int64_t src_token_stride, int64_t src_head_stride, uint16_t *x,
                                           int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                           int64_t end);
posenc_status posenc_rope_tables_f16_part(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,
                                          const float *sin, int64_t sin_stride, int64_t n, const uint16_t *src,
                                          int64_t src_token_stride, int64_t src_head_stride, uint16_t *x, int64_t heads,
                                          int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end);
posenc_status posenc_rope_copy_f32_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                        const float *src, int64_t src_token_stride, int64_t src_head_stride, float *x,
                                        int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                        int64_t end);
posenc_status posenc_rope_copy_bf16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                         const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                         uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                         int64_t begin, int64_t end);
posenc_status posenc_rope_copy_f16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                        const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                        uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                        int64_t begin, int64_t end);
posenc_status posenc_rope_qk_f32_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                      float *q, int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride,
                                      float *k, int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                      int64_t begin, int64_t end);
posenc_status posenc_rope_qk_bf16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                       uint16_t *q, int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride,
                                       uint16_t *k, int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                       int64_t begin, int64_t end);
posenc_status posenc_rope_qk_f16_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                      uint16_t *q, int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride,
                                      uint16_t *k, int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                      int64_t begin, int64_t end);

/** The parts of the RoPE calls at real-valued positions: tokens [begin, end), positions kept as the whole
 *  call's array (token t of axis a at positions[a*n + t]). */
posenc_status posenc_rope_cache_real_f32_part(const posenc_rope *rope, const double *positions, int64_t n,
                                              float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride,
                                              int64_t begin, int64_t end);
posenc_status posenc_rope_real_f32_part(const posenc_rope *rope, const double *positions, int64_t n, float *x,
                                        int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                        int64_t end);
posenc_status posenc_rope_real_bf16_part(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *x,
                                         int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                         int64_t end);
posenc_status posenc_rope_real_f16_part(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *x,
                                        int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin,
                                        int64_t end);
posenc_status posenc_rope_copy_real_f32_part(const posenc_rope *rope, const double *positions, int64_t n,
                                             const float *src, int64_t src_token_stride, int64_t src_head_stride,
                                             float *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                             int64_t begin, int64_t end);
posenc_status posenc_rope_copy_real_bf16_part(const posenc_rope *rope, const double *positions, int64_t n,
                                              const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                              uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                              int64_t begin, int64_t end);
posenc_status posenc_rope_copy_real_f16_part(const posenc_rope *rope, const double *positions, int64_t n,
                                             const uint16_t *src, int64_t src_token_stride, int64_t src_head_stride,
                                             uint16_t *x, int64_t heads, int64_t token_stride, int64_t head_stride,
                                             int64_t begin, int64_t end);
posenc_status posenc_rope_qk_real_f32_part(const posenc_rope *rope, const double *positions, int64_t n, float *q,
                                           int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, float *k,
                                           int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                           int64_t begin, int64_t end);
posenc_status posenc_rope_qk_real_bf16_part(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *q,
                                            int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, uint16_t *k,
                                            int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                            int64_t begin, int64_t end);
posenc_status posenc_rope_qk_real_f16_part(const posenc_rope *rope, const double *positions, int64_t n, uint16_t *q,
                                           int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, uint16_t *k,
                                           int64_t k_heads, int64_t k_token_stride, int64_t k_head_stride,
                                           int64_t begin, int64_t end);

POSENC_END_DECLS

#endif /* POSENC_PARTS_H */
