// A/B timing of builds of posenc on decode-step calls: small, in-cache calls where the cost is the
// kernel's own work, not the memory traffic that tools/ab/ab.c is about. N rows at d_model D, every row at
// position POS (a batch's or a beam's step; POS=-1 gives the rows the positions 1000, 1001, ... instead),
// through posenc_rows_f32 (rows) or posenc_embed_f32 (embed, random tokens of a 32000-row table).
// Each repetition times 20 calls of each build, the two builds in alternating order; printed: the median
// time per call of each, the median of the per-repetition ratios (second / first), and whether the two
// builds wrote the same bytes (they must: the kernels differ, the values may not).
//
//   cc -O2 -I include tools/ab/step.c -ldl -o /tmp/step
//   /tmp/step rows|embed D N REPS first.so second.so      (builds from tools/ab/variant.sh)
#include <string.h>

#include "builds.h"

enum { kCalls = 20, kMaxReps = 10000, kVocab = 32000 };

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s rows|embed D N REPS first.so second.so   (POS=p sets the position, 1000)\n", argv[0]);
    return 2;
  }
  const int embed = strcmp(argv[1], "embed") == 0;
  const long d = atol(argv[2]), n = atol(argv[3]);
  const int reps = atoi(argv[4]);
  const long pos = getenv("POS") ? atol(getenv("POS")) : 1000;
  if ((!embed && strcmp(argv[1], "rows") != 0) || d <= 0 || n <= 0 || reps <= 0 || reps > kMaxReps) {
    fprintf(stderr, "rows or embed; D and N positive; REPS in [1, %d]\n", kMaxReps);
    return 2;
  }
  struct build b[2];
  if (open_builds(argv + 5, 2, b)) return 1;
  const posenc_spec spec = b[0].spec(d);
  float *table = embed ? malloc((size_t)kVocab * (size_t)d * sizeof(float)) : NULL;
  int32_t *tok = malloc((size_t)n * sizeof *tok);
  int64_t *p = malloc((size_t)n * sizeof *p);
  float *out[2] = {malloc((size_t)n * (size_t)d * sizeof(float)), malloc((size_t)n * (size_t)d * sizeof(float))};
  static double t[2][kMaxReps], ratio[kMaxReps];
  if ((embed && !table) || !tok || !p || !out[0] || !out[1]) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  if (embed)
    for (size_t i = 0; i < (size_t)kVocab * (size_t)d; ++i) table[i] = (float)(i % 1000) * 1e-3f;
  srand(1);
  for (long r = 0; r < n; ++r) {
    tok[r] = (int32_t)(rand() % kVocab);
    p[r] = pos >= 0 ? pos : 1000 + r;
  }
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < 2; ++i) {
      const int k = (r & 1) ? 1 - i : i;
      const double t0 = now();
      posenc_status st = POSENC_OK;
      for (int c = 0; c < kCalls && st == POSENC_OK; ++c)
        st = embed ? b[k].embed(&spec, table, kVocab, d, tok, 2.0f, p, 0, n, out[k], d)
                   : b[k].rows(&spec, p, n, out[k], d);
      t[k][r] = (now() - t0) / kCalls;
      if (st != POSENC_OK) {
        fprintf(stderr, "%s: status %d\n", argv[5 + k], (int)st);
        return 1;
      }
    }
    ratio[r] = t[1][r] / t[0][r];
  }
  const int same = memcmp(out[0], out[1], (size_t)n * (size_t)d * sizeof(float)) == 0;
  printf("%s d=%ld n=%ld pos=%ld: first %.3f us, second %.3f us, second / first %.3f, %s\n", argv[1], d, n, pos,
         median(t[0], reps) * 1e6, median(t[1], reps) * 1e6, median(ratio, reps),
         same ? "same bytes" : "DIFFERENT BYTES");
  return same ? 0 : 1;
}
