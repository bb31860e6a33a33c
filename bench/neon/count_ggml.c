/* posenc-count-ggml: ggml's own CPU RoPE (ggml_rope_ext, NEOX mode) on posenc-count's Llama-3-8B shape, REPS
 * times, for the guest instruction counts of the report's NEON section. Not part of the meson build: the
 * report builds ggml from the shared tarball with CMake and the aarch64 cross tool chain and links this file
 * against it (bench/neon/build_ggml.sh); no ggml code is kept in the repository.
 *
 *   posenc-count-ggml REPS f32|f16 prefill|decode      prints "elements N"
 *
 * q [128, 32 heads, T] and k [128, 8 heads, T] (ggml's order: ne0 the head dimension), positions 0 .. 2047
 * (prefill, T = 2048) or one token at 100000 (decode), base 5e5, freq_scale 1, no YaRN, attention factor 1:
 * the graph of the two ops is built once and computed REPS times on one thread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

static uint64_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static void fill(struct ggml_tensor *t, uint64_t *s) {
  const int64_t n = ggml_nelements(t);
  for (int64_t e = 0; e < n; ++e) {
    const float v = (float)(next(s) >> 40) * 0x1p-23f - 1.0f;
    if (t->type == GGML_TYPE_F32)
      ((float *)t->data)[e] = v;
    else
      ((ggml_fp16_t *)t->data)[e] = ggml_fp32_to_fp16(v);
  }
}

int main(int argc, char **argv) {
  if (argc != 4 || (strcmp(argv[2], "f32") && strcmp(argv[2], "f16")) ||
      (strcmp(argv[3], "prefill") && strcmp(argv[3], "decode"))) {
    fprintf(stderr, "usage: posenc-count-ggml REPS f32|f16 prefill|decode\n");
    return 2;
  }
  const long reps = atol(argv[1]);
  const enum ggml_type type = strcmp(argv[2], "f32") == 0 ? GGML_TYPE_F32 : GGML_TYPE_F16;
  const int decode = strcmp(argv[3], "decode") == 0;
  const int64_t head = 128, qh = 32, kh = 8, n = decode ? 1 : 2048;

  struct ggml_init_params params = {(size_t)256 << 20, NULL, false};
  struct ggml_context *ctx = ggml_init(params);
  if (!ctx) {
    fprintf(stderr, "posenc-count-ggml: ggml_init failed\n");
    return 1;
  }
  struct ggml_tensor *q = ggml_new_tensor_3d(ctx, type, head, qh, n);
  struct ggml_tensor *k = ggml_new_tensor_3d(ctx, type, head, kh, n);
  struct ggml_tensor *pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
  uint64_t s = 11;
  fill(q, &s);
  fill(k, &s);
  for (int64_t t = 0; t < n; ++t) ((int32_t *)pos->data)[t] = (int32_t)(decode ? 100000 + t : t);

  struct ggml_tensor *qr =
      ggml_rope_ext(ctx, q, pos, NULL, (int)head, GGML_ROPE_TYPE_NEOX, 0, 5e5f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
  struct ggml_tensor *kr =
      ggml_rope_ext(ctx, k, pos, NULL, (int)head, GGML_ROPE_TYPE_NEOX, 0, 5e5f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
  struct ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, qr);
  ggml_build_forward_expand(gf, kr);
  for (long i = 0; i < reps; ++i) {
    if (ggml_graph_compute_with_ctx(ctx, gf, 1) != GGML_STATUS_SUCCESS) {
      fprintf(stderr, "posenc-count-ggml: graph compute failed\n");
      return 1;
    }
  }
  printf("elements %lld\n", (long long)(n * (qh + kh) * head));
  ggml_free(ctx);
  return 0;
}
