// Inputs and outputs of the benchmarks: large buffers allocated once, touched before any timing (so page
// faults never land in a timed loop), shared by every case that asks for the same role, since Google
// Benchmark may run the cases in any order (random interleaving).
#pragma once

#include <cstddef>
#include <cstdint>

#include "posenc/posenc.h"

namespace bench {

// A 64-byte aligned buffer of at least `bytes` for `role`; later calls for the same role return the same
// memory while it is large enough (contents are whatever the last user left).
void *buffer(const char *role, size_t bytes);
template <class T>
T *buffer_of(const char *role, int64_t count) {
  return static_cast<T *>(buffer(role, sizeof(T) * size_t(count)));
}

// Embedding tables of vocab rows of d values uniform in [-1, 1) (as float32, bfloat16 or binary16 bits),
// built once per shape from a fixed seed.
const float *embedding_f32(int64_t vocab, int64_t d);
const uint16_t *embedding_bf16(int64_t vocab, int64_t d);
const uint16_t *embedding_f16(int64_t vocab, int64_t d);
// n token ids uniform in [0, vocab), fixed seed.
const int32_t *tokens(int64_t n, int64_t vocab);
// Explicit positions: "packed" = sequences of 128 positions from 0, one after another (a packed batch);
// "scattered" = uniform in [0, 2^20) (decode steps of unrelated sequences); "step" = every row at 1000
// (one decode step of a batch or a beam).
const int64_t *positions(const char *kind, int64_t n);
// Activations of n rows of d floats in [-1, 1).
const float *activations(int64_t n, int64_t d);
// The PE table of positions 0 .. n-1 that the naive passes add (posenc's own, exact: what it holds does
// not change how fast it is read).
const float *pe_table(int64_t d, int64_t n);

}  // namespace bench
