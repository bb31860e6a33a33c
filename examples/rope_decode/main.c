/* The RoPE step of a decoder's generation loop, done the way a CPU runtime does it, from plain C99:
 *
 *   cc -std=c99 main.c $(pkg-config --cflags --libs posenc) -o rope_decode
 *
 * A small fake model (Llama-3.1-style grouped-query attention: 8 query heads, 2 key/value heads of 128)
 * serves a batch of four slots. Each step, each live sequence produces one token whose projections land in
 * one fused QKV row (q heads, then k heads, then v heads); posenc_rope_qk_f32 rotates q and k of the whole
 * batch in one call, every sequence at its own position (explicit positions, POSENC_PAD for the idle slot),
 * with the Llama 3.1 frequencies from posenc_rope_init. The program then checks each step against the
 * cos/sin cache (posenc_rope_cache_f32) and a plain rotation written out below, bit for bit, and exits 0
 * only if every row matches, the v heads and the idle slot are untouched, and the score of each token's q
 * with its own k is (to float rounding) the same as before the rotation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc/posenc.h>

enum { BATCH = 4, Q_HEADS = 8, KV_HEADS = 2, HEAD_DIM = 128, ROTARY = 128, STEPS = 3 };
enum { QKV = (Q_HEADS + 2 * KV_HEADS) * HEAD_DIM, PAIRS = ROTARY / 2 };

/* The fake projections: a fixed pseudo-random stream in [-1, 1). */
static unsigned long long lcg_state = 0x9e3779b97f4a7c15ULL;
static float next_value(void) {
  lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(lcg_state >> 11) / 4503599627370496.0) - 1.0f; /* 2^52 */
}

/* The contract's rotation of one head row, pairs (i, i + r/2) as in Hugging Face's rotate_half: the products
 * exact in double, one rounding of their sum to double, then one to float. */
static void rotate_head(float *x, const float *c, const float *s) {
  int i;
  for (i = 0; i < PAIRS; ++i) {
    const double a = x[i], b = x[i + PAIRS];
    x[i] = (float)fma(a, c[i], -(b * s[i]));
    x[i + PAIRS] = (float)fma(b, c[i], a * s[i]);
  }
}

static double dot(const float *a, const float *b) {
  double sum = 0.0;
  int i;
  for (i = 0; i < HEAD_DIM; ++i) sum += (double)a[i] * b[i];
  return sum;
}

int main(void) {
  /* Llama 3.1 8B: rope_theta 500000, rope_scaling {"rope_type": "llama3", "factor": 8.0,
   * "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}. */
  posenc_rope_scaling scaling;
  posenc_rope rope;
  double freq[PAIRS];
  memset(&scaling, 0, sizeof scaling);
  scaling.type = POSENC_ROPE_TYPE_LLAMA3;
  scaling.factor = 8.0;
  scaling.low_freq_factor = 1.0;
  scaling.high_freq_factor = 4.0;
  scaling.original_max_positions = 8192;
  posenc_status st = posenc_rope_init(&rope, ROTARY, 500000.0, &scaling, freq);
  if (st != POSENC_OK) {
    fprintf(stderr, "posenc_rope_init: %s\n", posenc_status_string(st));
    return 1;
  }
  printf("posenc %s, path %s: Llama 3.1 RoPE, r = %d, %d q heads / %d kv heads, %d slots\n", posenc_version(),
         posenc_isa_name(posenc_active_isa()), ROTARY, Q_HEADS, KV_HEADS, BATCH);

  /* Where each slot's next token sits: a short chat, one past the original 8192 context, one deep into the
   * 128k window, and an idle slot. */
  int64_t position[BATCH] = {5, 9000, 120000, POSENC_PAD};
  static float qkv[BATCH][QKV], expect[BATCH][QKV];
  float cos_cache[BATCH][PAIRS], sin_cache[BATCH][PAIRS];
  int bad = 0, step, b, j;

  for (step = 0; step < STEPS; ++step) {
    double before[BATCH][Q_HEADS];
    for (b = 0; b < BATCH; ++b)
      for (j = 0; j < QKV; ++j) qkv[b][j] = next_value();
    memcpy(expect, qkv, sizeof qkv);
    for (b = 0; b < BATCH; ++b) /* q head j with its group's k head, before the rotation */
      for (j = 0; j < Q_HEADS; ++j)
        before[b][j] = dot(qkv[b] + j * HEAD_DIM, qkv[b] + (Q_HEADS + j / (Q_HEADS / KV_HEADS)) * HEAD_DIM);

    /* The runtime's call: q = qkv, k = qkv + Q_HEADS * HEAD_DIM, one token stride for both. */
    st = posenc_rope_qk_f32(&rope, position, 0, BATCH, &qkv[0][0], Q_HEADS, QKV, HEAD_DIM, &qkv[0][Q_HEADS * HEAD_DIM],
                            KV_HEADS, QKV, HEAD_DIM);
    if (st != POSENC_OK) {
      fprintf(stderr, "posenc_rope_qk_f32: %s\n", posenc_status_string(st));
      return 1;
    }

    /* The reference: the cos/sin cache for the same positions (POSENC_PAD gives zeros) and the plain
     * rotation of every q and k head; v heads and the idle slot keep their bytes. */
    st = posenc_rope_cache_f32(&rope, position, 0, BATCH, &cos_cache[0][0], PAIRS, &sin_cache[0][0], PAIRS);
    if (st != POSENC_OK) {
      fprintf(stderr, "posenc_rope_cache_f32: %s\n", posenc_status_string(st));
      return 1;
    }
    for (b = 0; b < BATCH; ++b) {
      if (position[b] == POSENC_PAD) continue;
      for (j = 0; j < Q_HEADS + KV_HEADS; ++j) rotate_head(expect[b] + j * HEAD_DIM, cos_cache[b], sin_cache[b]);
    }
    if (memcmp(qkv, expect, sizeof qkv) != 0) {
      fprintf(stderr, "step %d: posenc_rope_qk_f32 differs from cache + rotation\n", step);
      bad = 1;
    }

    printf("step %d:", step);
    for (b = 0; b < BATCH; ++b) {
      double worst = 0.0;
      if (position[b] == POSENC_PAD) {
        printf("  [slot %d idle]", b);
        continue;
      }
      /* A rotation keeps a token's score with itself (the angle difference is 0), up to float rounding. */
      for (j = 0; j < Q_HEADS; ++j) {
        const double after = dot(qkv[b] + j * HEAD_DIM, qkv[b] + (Q_HEADS + j / (Q_HEADS / KV_HEADS)) * HEAD_DIM);
        const double diff = fabs(after - before[b][j]);
        if (diff > worst) worst = diff;
      }
      printf("  [pos %lld, |q.k change| %.1e]", (long long)position[b], worst);
      if (worst > 1e-4) bad = 1;
      ++position[b];
    }
    printf("\n");
  }

  /* A position outside |p| < 2^31 is refused before anything is written. */
  memcpy(expect, qkv, sizeof qkv);
  position[0] = (int64_t)1 << 31;
  st = posenc_rope_qk_f32(&rope, position, 0, BATCH, &qkv[0][0], Q_HEADS, QKV, HEAD_DIM, &qkv[0][Q_HEADS * HEAD_DIM],
                          KV_HEADS, QKV, HEAD_DIM);
  printf("position 2^31: %s\n", posenc_status_string(st));
  bad |= st != POSENC_ERR_OUT_OF_RANGE || memcmp(qkv, expect, sizeof qkv) != 0;

  if (bad) {
    fprintf(stderr, "rope_decode: unexpected values\n");
    return 1;
  }
  printf("rope_decode: ok, %d steps bit-identical to posenc_rope_cache_f32 + the plain rotation\n", STEPS);
  return 0;
}
