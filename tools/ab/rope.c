// A/B timing of builds of posenc's out-of-place and in-place RoPE (posenc_rope_copy_f32, posenc_rope_f32) in one
// process, as tools/ab/ab.c does for tables: each build a shared object of tools/ab/variant.sh, each timed once per
// repetition in a rotating order, the source rows rewritten before every timed call so that each starts from the
// same cache state. Printed: each build's median time and the median of its per-repetition ratio to the first
// build, and memcpy of the same rows (the memory bound of any out-of-place operation on them).
//
//   cc -O2 -I include tools/ab/rope.c -ldl -lm -o /tmp/ab-rope
//   /tmp/ab-rope copy|inplace neox|normal TOKENS HEADS DIM REPS build1.so [build2.so ...]
#include <string.h>

#include "builds.h"

enum { kMaxBuilds = 8, kMaxReps = 1000 };

typedef posenc_status (*copy_fn)(const posenc_rope *, const int64_t *, int64_t, int64_t, const float *, int64_t,
                                 int64_t, float *, int64_t, int64_t, int64_t);
typedef posenc_status (*apply_fn)(const posenc_rope *, const int64_t *, int64_t, int64_t, float *, int64_t, int64_t,
                                  int64_t);
typedef posenc_rope (*default_fn)(int64_t);

int main(int argc, char **argv) {
  if (argc < 8 || argc - 7 > kMaxBuilds) {
    fprintf(stderr, "usage: %s copy|inplace neox|normal TOKENS HEADS DIM REPS build.so [build.so ...]\n", argv[0]);
    return 2;
  }
  const int copy = strcmp(argv[1], "copy") == 0, normal = strcmp(argv[2], "normal") == 0;
  const long n = atol(argv[3]), heads = atol(argv[4]), d = atol(argv[5]);
  int reps = atoi(argv[6]);
  if (reps > kMaxReps) reps = kMaxReps;
  if (n <= 0 || heads <= 0 || d <= 0 || d % 2 || reps <= 0) {
    fprintf(stderr, "TOKENS, HEADS, REPS positive; DIM positive and even\n");
    return 2;
  }
  const int nb = argc - 7;
  copy_fn cf[kMaxBuilds];
  apply_fn af[kMaxBuilds];
  default_fn df = NULL;
  for (int k = 0; k < nb; ++k) {
    void *h = dlopen(argv[7 + k], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    cf[k] = (copy_fn)dlsym(h, "posenc_rope_copy_f32");
    af[k] = (apply_fn)dlsym(h, "posenc_rope_f32");
    if (!df) df = (default_fn)dlsym(h, "posenc_rope_default");
    if (!cf[k] || !af[k] || !df) {
      fprintf(stderr, "%s: not a posenc build with posenc_rope_copy_f32\n", argv[7 + k]);
      return 1;
    }
  }
  posenc_rope rope = df(d);
  rope.pairs = normal ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  const size_t count = (size_t)n * (size_t)heads * (size_t)d, bytes = count * 4;
  float *src = aligned_alloc(64, bytes), *dst = aligned_alloc(64, bytes), *orig = aligned_alloc(64, bytes);
  int64_t *pos = malloc((size_t)n * sizeof *pos);
  if (!src || !dst || !orig || !pos) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < count; ++i) orig[i] = (float)((int)(i % 2001) - 1000) * 1e-3f;
  for (long t = 0; t < n; ++t) pos[t] = t;
  memset(dst, 0, bytes);
  static double tm[kMaxBuilds + 1][kMaxReps], ratio[kMaxBuilds][kMaxReps];
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < nb; ++i) {
      const int k = (i + r) % nb;
      memcpy(src, orig, bytes);  // the same state before every call: the source written, the rest evicted alike
      const double t0 = now();
      const posenc_status st = copy ? cf[k](&rope, pos, 0, n, src, heads * d, d, dst, heads, heads * d, d)
                                    : af[k](&rope, pos, 0, n, src, heads, heads * d, d);
      tm[k][r] = now() - t0;
      if (st != POSENC_OK) {
        fprintf(stderr, "%s: status %d\n", argv[7 + k], (int)st);
        return 1;
      }
    }
    memcpy(src, orig, bytes);
    const double t0 = now();
    memcpy(dst, src, bytes);
    tm[nb][r] = now() - t0;
    for (int k = 0; k < nb; ++k) ratio[k][r] = tm[k][r] / tm[0][r];
  }
  for (int k = 0; k < nb; ++k) {
    const double m = median(tm[k], reps);
    printf("%-32s median %9.3f ms   time / first build %.3f\n", argv[7 + k], m * 1e3, median(ratio[k], reps));
  }
  printf("%-32s median %9.3f ms\n", "memcpy of the rows", median(tm[nb], reps) * 1e3);
  return 0;
}
