/* A C program built by meson with posenc as a subproject: the fused embedding of three tokens with the
 * CTranslate2 convention (sin half then cos half, D = h - 1, positions from 1). Exits non-zero on error. */
#include <math.h>
#include <stdio.h>

#include <posenc/posenc.h>

enum { D = 6, VOCAB = 4, N = 3 };

int main(void) {
  static const float table[VOCAB][D] = {{0}, {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, {1, 2, 3, 4, 5, 6}, {0}};
  static const int32_t tokens[N] = {1, 2, 1};
  float out[N][D];
  posenc_spec spec = posenc_spec_default(D);
  spec.layout = POSENC_SIN_COS_HALVES;
  spec.freq_denominator = D / 2 - 1;
  posenc_status st = posenc_embed_f32(&spec, &table[0][0], VOCAB, D, tokens, 2.0f, NULL, 1, N, &out[0][0], D);
  if (st != POSENC_OK) {
    fprintf(stderr, "posenc_embed_f32: %s\n", posenc_status_string(st));
    return 1;
  }
  printf("posenc %s as a meson subproject\n", posenc_version());
  for (int r = 0; r < N; ++r) {
    for (int c = 0; c < D; ++c) printf(" %+.5f", out[r][c]);
    printf("\n");
  }
  /* Row 0 is position 1, pair 0 (frequency 1): 2 * 0.5 + sin(1), and 2 * 0.5 + cos(1) at column h. */
  return out[0][0] != fmaf(2.0f, 0.5f, (float)sin(1.0)) || out[0][D / 2] != fmaf(2.0f, 0.5f, (float)cos(1.0));
}
