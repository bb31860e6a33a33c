// What tools/ab/ab.c and tools/ab/step.c share: the clock, medians, and opening a build of posenc made
// by tools/ab/variant.sh (RTLD_LOCAL, so that several copies of the same symbols live side by side).
#ifndef POSENC_TOOLS_AB_BUILDS_H
#define POSENC_TOOLS_AB_BUILDS_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "posenc/posenc.h"

typedef posenc_status (*embed_fn)(const posenc_spec *, const float *, int64_t, int64_t, const int32_t *, float,
                                  const int64_t *, int64_t, int64_t, float *, int64_t);
typedef posenc_status (*table_fn)(const posenc_spec *, int64_t, int64_t, float *, int64_t);
typedef posenc_status (*rows_fn)(const posenc_spec *, const int64_t *, int64_t, float *, int64_t);
typedef posenc_spec (*spec_fn)(int64_t);

struct build {
  embed_fn embed;
  table_fn table;
  rows_fn rows;
  spec_fn spec;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

// 0, or 1 after saying why on stderr.
static inline int open_build(const char *path, struct build *b) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  b->embed = (embed_fn)dlsym(h, "posenc_embed_f32");
  b->table = (table_fn)dlsym(h, "posenc_table_f32");
  b->rows = (rows_fn)dlsym(h, "posenc_rows_f32");
  b->spec = (spec_fn)dlsym(h, "posenc_spec_default");
  if (!b->embed || !b->table || !b->rows || !b->spec) {
    fprintf(stderr, "%s: not a posenc build\n", path);
    return 1;
  }
  return 0;
}

// Opens the n builds of paths into b: 0, or 1 after saying why on stderr.
static inline int open_builds(char **paths, int n, struct build *b) {
  for (int k = 0; k < n; ++k)
    if (open_build(paths[k], &b[k])) return 1;
  return 0;
}

#endif
