// A/B timing of builds of posenc in one process, for kernel experiments on noisy shared machines.
//
// Each build is a shared object made by tools/ab/variant.sh and opened with RTLD_LOCAL, so several
// copies of the same symbols live side by side. Every repetition times each build once, in a rotating
// order, and runs a reset step just before every timed call (the naive three-pass embedding, or a
// memset for tables) so that each call starts from the same cache state: without it, the call that
// follows a streaming one runs up to 30% slower and the first build in the list looks worse than it is.
// Printed: the median time of each build, the median of its per-repetition ratio to the first build,
// and, for embeddings, the naive three passes and a gather with non-temporal stores (the memory floor).
//
//   cc -O2 -I include tools/ab/ab.c -ldl -lm -o /tmp/ab
//   /tmp/ab embed|table D N REPS build1.so [build2.so ...]      (VOCAB=... sets the vocabulary, 32000)
// D must be a multiple of 16; the reference loops are AVX-512, so the host must have it.
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "builds.h"

enum { kMaxBuilds = 8, kMaxReps = 1000 };

// What a framework runs: gather, scale in place, add a PE table; each a full pass over the output.
__attribute__((target("avx512f"))) static void naive(const float *table, const int32_t *tok, long n, int d, float scale,
                                                     const float *pe, float *out) {
  for (long r = 0; r < n; ++r) memcpy(out + r * d, table + (size_t)tok[r] * d, (size_t)d * 4);
  for (long e = 0; e < n * d; e += 16)
    _mm512_storeu_ps(out + e, _mm512_mul_ps(_mm512_loadu_ps(out + e), _mm512_set1_ps(scale)));
  for (long e = 0; e < n * d; e += 16)
    _mm512_storeu_ps(out + e, _mm512_add_ps(_mm512_loadu_ps(out + e), _mm512_loadu_ps(pe + e)));
}

// The same rows copied with non-temporal stores, the next row prefetched (d a multiple of 16).
__attribute__((target("avx512f"))) static void stream_gather(const float *table, const int32_t *tok, long n, int d,
                                                             float *out) {
  for (long r = 0; r < n; ++r) {
    const float *x = table + (size_t)tok[r] * d, *next = table + (size_t)tok[r + 1 < n ? r + 1 : r] * d;
    for (int e = 0; e < d; e += 16) {
      _mm_prefetch((const char *)(next + e), _MM_HINT_T2);
      _mm512_stream_ps(out + r * d + e, _mm512_loadu_ps(x + e));
    }
  }
  _mm_sfence();
}

int main(int argc, char **argv) {
  if (argc < 6 || argc - 5 > kMaxBuilds) {
    fprintf(stderr, "usage: %s embed|table D N REPS build.so [build.so ...] (up to %d builds)\n", argv[0], kMaxBuilds);
    return 2;
  }
  const int embed = strcmp(argv[1], "embed") == 0;
  const int d = atoi(argv[2]);
  const long n = atol(argv[3]);
  int reps = atoi(argv[4]);
  if (reps > kMaxReps) reps = kMaxReps;
  if ((!embed && strcmp(argv[1], "table") != 0) || d <= 0 || d % 16 != 0 || n <= 0 || reps <= 0) {
    fprintf(stderr, "embed or table; D a positive multiple of 16; N and REPS positive\n");
    return 2;
  }
  if (!__builtin_cpu_supports("avx512f")) {
    fprintf(stderr, "the reference loops need AVX-512F\n");
    return 2;
  }
  const int nb = argc - 5;
  const long vocab = getenv("VOCAB") ? atol(getenv("VOCAB")) : 32000;
  struct build b[kMaxBuilds];
  if (open_builds(argv + 5, nb, b)) return 1;
  const posenc_spec spec = b[0].spec(d);
  const float scale = sqrtf((float)d);
  float *table = NULL, *pe = NULL;
  float *out = aligned_alloc(64, (size_t)d * (size_t)n * 4);
  int32_t *tok = malloc((size_t)n * sizeof *tok);
  if (embed) {
    table = aligned_alloc(64, (size_t)d * (size_t)vocab * 4);
    pe = aligned_alloc(64, (size_t)d * (size_t)n * 4);
  }
  if (!out || !tok || (embed && (!table || !pe))) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  memset(out, 0, (size_t)d * (size_t)n * 4);
  srand(1);
  for (long r = 0; r < n; ++r) tok[r] = (int32_t)(rand() % vocab);
  if (embed) {
    for (size_t i = 0; i < (size_t)d * (size_t)vocab; ++i) table[i] = (float)(i % 1000) * 1e-3f;
    if (b[0].table(&spec, 0, n, pe, d) != POSENC_OK) {
      fprintf(stderr, "the PE table call failed\n");
      return 1;
    }
  }
  static double t[kMaxBuilds + 2][kMaxReps], ratio[kMaxBuilds][kMaxReps];
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < nb; ++i) {
      const int k = (i + r) % nb;
      if (embed)
        naive(table, tok, n, d, scale, pe, out);
      else
        memset(out, 0, (size_t)d * (size_t)n * 4);
      const double t0 = now();
      const posenc_status st =
          embed ? b[k].embed(&spec, table, vocab, d, tok, scale, NULL, 0, n, out, d) : b[k].table(&spec, 0, n, out, d);
      t[k][r] = now() - t0;
      if (st != POSENC_OK) {
        fprintf(stderr, "%s: status %d\n", argv[5 + k], (int)st);
        return 1;
      }
    }
    // The references get the same reset before their timed call.
    if (embed)
      naive(table, tok, n, d, scale, pe, out);
    else
      memset(out, 0, (size_t)d * (size_t)n * 4);
    double t0 = now();
    if (embed)
      naive(table, tok, n, d, scale, pe, out);
    else
      memset(out, 0, (size_t)d * (size_t)n * 4);
    t[nb][r] = now() - t0;
    if (embed) {
      naive(table, tok, n, d, scale, pe, out);
      t0 = now();
      stream_gather(table, tok, n, d, out);
      t[nb + 1][r] = now() - t0;
    }
    for (int k = 0; k < nb; ++k) ratio[k][r] = t[k][r] / t[0][r];
  }
  for (int k = 0; k < nb; ++k) {
    const double m = median(t[k], reps);
    printf("%-32s median %9.3f ms   time / first build %.3f\n", argv[5 + k], m * 1e3, median(ratio[k], reps));
  }
  printf("%-32s median %9.3f ms\n", embed ? "naive three passes" : "memset", median(t[nb], reps) * 1e3);
  if (embed) printf("%-32s median %9.3f ms\n", "gather, non-temporal stores", median(t[nb + 1], reps) * 1e3);
  return 0;
}
