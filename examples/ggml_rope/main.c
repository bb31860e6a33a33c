/* One attention block's q and k (Llama-3-8B: 32 query heads, 8 key heads of 128, theta 500000) rotated twice
 * in one ggml graph: by ggml's own RoPE and by posenc's drop-in, the same call renamed (docs/ggml.md). At a
 * short position the two agree to ggml's float32 arithmetic; at a long one ggml's angle, formed in float32,
 * has drifted, and posenc's has not (its cos/sin are correctly rounded: docs/rope.md). */
#include <math.h>
#include <stdio.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "posenc/ggml.h"

/* The largest difference between two [128, heads, tokens] F32 results, over token t's rows. */
static float max_diff(const struct ggml_tensor *a, const struct ggml_tensor *b, int t) {
  const float *x = (const float *)a->data + t * a->ne[0] * a->ne[1],
              *y = (const float *)b->data + t * a->ne[0] * a->ne[1];
  float m = 0.0f;
  for (int i = 0; i < a->ne[0] * a->ne[1]; ++i) m = fmaxf(m, fabsf(x[i] - y[i]));
  return m;
}

int main(void) {
  struct ggml_init_params params = {16 * 1024 * 1024, NULL, false};
  struct ggml_context *ctx = ggml_init(params);
  struct ggml_tensor *q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 32, 2); /* [head_dim, heads, tokens] */
  struct ggml_tensor *k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 8, 2);
  struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
  const int positions[2] = {100, 1000000};
  for (int i = 0; i < 128 * 32 * 2; ++i) ((float *)q->data)[i] = sinf(0.37f * (float)i);
  for (int i = 0; i < 128 * 8 * 2; ++i) ((float *)k->data)[i] = cosf(0.23f * (float)i);
  for (int t = 0; t < 2; ++t) ((int *)pos->data)[t] = positions[t];

  /* llama.cpp's call (src/models/llama.cpp), and the same call with posenc_ in front */
  struct ggml_tensor *out[4] = {
      ggml_rope_ext(ctx, q, pos, NULL, 128, GGML_ROPE_TYPE_NORMAL, 8192, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f),
      posenc_ggml_rope_ext(ctx, q, pos, NULL, 128, GGML_ROPE_TYPE_NORMAL, 8192, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f,
                           1.0f),
      ggml_rope_ext(ctx, k, pos, NULL, 128, GGML_ROPE_TYPE_NORMAL, 8192, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f),
      posenc_ggml_rope_ext(ctx, k, pos, NULL, 128, GGML_ROPE_TYPE_NORMAL, 8192, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f,
                           1.0f)};
  struct ggml_cgraph *graph = ggml_new_graph(ctx);
  for (int i = 0; i < 4; ++i) ggml_build_forward_expand(graph, out[i]);
  if (ggml_graph_compute_with_ctx(ctx, graph, 2) != GGML_STATUS_SUCCESS) return 1;

  float diff[2];
  for (int t = 0; t < 2; ++t) {
    diff[t] = fmaxf(max_diff(out[0], out[1], t), max_diff(out[2], out[3], t));
    printf("position %7d: largest |ggml - posenc| over q and k: %.3g\n", positions[t], diff[t]);
  }
  ggml_free(ctx);
  /* the drop-in agrees where ggml's float angle is accurate, and differs where it is not */
  if (!(diff[0] < 1e-4f && diff[1] > 1e-3f)) return 1;
  printf("ggml_rope: ok\n");
  return 0;
}
