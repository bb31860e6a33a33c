// The entry points each ISA translation unit defines, each in the namespace named after its ISA.
#pragma once

#include "job.hpp"

namespace posenc {
// For tests: fast_rejects, how many of the n (sin, cos) pairs the rotation path's acceptance test
// (fast_check.hpp) would hand to the slower methods; anchors, the block anchors' values (sin and cos at
// position p) of all f.padded pairs, as this path computes them.
#define POSENC_DECLARE_ISA(ns)                                                     \
  namespace ns {                                                                   \
  void run(const detail::Job &job);                                                \
  void run_learned(const detail::LearnedJob &job);                                 \
  void run_rope(const detail::RopeJob &job);                                       \
  void fill_tables(detail::Freq &f);                                               \
  int64_t fast_rejects(const double *s, const double *c, int64_t n);               \
  void anchors(const detail::Freq &f, int64_t p, double *s, double *c);            \
  }
POSENC_DECLARE_ISA(scalar)
POSENC_DECLARE_ISA(avx2)
POSENC_DECLARE_ISA(avx512)
POSENC_DECLARE_ISA(neon)
#undef POSENC_DECLARE_ISA

namespace avx512 {
// For tests: Simd::clear_steps on one vector of 8 pairs (kernel.hpp, segment; Freq::reach), and how many
// of n pairs the window half of the acceptance test alone rejects (Simd::decided_window, the test of the
// quads whose rows are clear of zero), placed as fast_rejects places them.
int64_t clear_steps(const double *s, const double *c, const double *reach);
int64_t window_rejects(const double *s, const double *c, int64_t n);
}  // namespace avx512

namespace scalar {
// The direct method on one pair, for the tests of its error bound: value and bound for sin and cos.
void direct_pair(const detail::Freq &f, int64_t i, int64_t p, double out[4]);
}  // namespace scalar
}  // namespace posenc
