// The tests' entry points into each path's kernel, built outside the library: tests/support/hooks_<name>.cpp
// is compiled with its ISA's flags (tests/meson.build, from meson.build's isa_args) into a library only the
// tests link, so the shipped archive carries no test code.
//
// fast_rejects, how many of the n (sin, cos) pairs the rotation path's acceptance test (fast_check.hpp)
// would hand to the slower methods; anchors, the block anchors' values (sin and cos at position p) of all
// f.padded pairs, as this path computes them; anchors_real, the timestep rows' fast form (values_direct.hpp,
// anchor_real_at) at the real position t, likewise.
#pragma once

#include <vector>

#include "isa/isa_list.hpp"
#include "kernel/job.hpp"

namespace posenc {
#define POSENC_DECLARE_HOOKS(E, ns, have)                                   \
  namespace ns {                                                            \
  int64_t fast_rejects(const double *s, const double *c, int64_t n);        \
  void anchors(const detail::Freq &f, int64_t p, double *s, double *c);     \
  void anchors_real(const detail::Freq &f, double t, double *s, double *c); \
  }
POSENC_ISAS(POSENC_DECLARE_HOOKS)
#undef POSENC_DECLARE_HOOKS

// The definitions, in tests/support/hooks_<name>.cpp, for the Engine of the path's Simd<A> (the same type its
// isa_<name>.cpp instantiates, with the same flags: one definition of each template).
#define POSENC_DEFINE_HOOKS(ns, SIMD)                                                                                 \
  namespace ns {                                                                                                      \
  using E = Engine<SIMD>;                                                                                             \
  int64_t fast_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects(s, c, n); }              \
  void anchors(const detail::Freq &f, int64_t p, double *s, double *c) { E::anchors(f, p, s, c); }                    \
  void anchors_real(const detail::Freq &f, double t, double *s, double *c) { Times<SIMD>::anchors_real(f, t, s, c); } \
  }

// Every path this build compiled (isa_list.hpp), with its hooks; whether the CPU runs it is
// posenc_isa_available's answer.
struct IsaTestEntries {
  posenc_isa isa;
  int64_t (*fast_rejects)(const double *s, const double *c, int64_t n);
  void (*anchors)(const detail::Freq &f, int64_t p, double *s, double *c);
  void (*anchors_real)(const detail::Freq &f, double t, double *s, double *c);
};
template <int kHave, class Make>
void add_if_compiled(std::vector<IsaTestEntries> &v, Make make) {
  if constexpr (kHave != 0) v.push_back(make(0));  // the generic lambda names a path's functions only here
}
inline std::vector<IsaTestEntries> compiled_isas() {
  std::vector<IsaTestEntries> v;
#define POSENC_ISA_ENTRY(E, n, have)                                                     \
  add_if_compiled<have>(v, [](auto) {                                                    \
    return IsaTestEntries{POSENC_ISA_##E, n::fast_rejects, n::anchors, n::anchors_real}; \
  });
  POSENC_ISAS(POSENC_ISA_ENTRY)
#undef POSENC_ISA_ENTRY
  return v;
}

namespace avx512 {
// Simd::clear_steps on one vector of 8 pairs (values_rows.hpp, segment; Freq::reach), and how many of n pairs
// the window half of the acceptance test alone rejects (Simd::decided_window, the test of the quads whose rows
// are clear of zero), placed as fast_rejects places them.
int64_t clear_steps(const double *s, const double *c, const double *reach);
int64_t window_rejects(const double *s, const double *c, int64_t n);
}  // namespace avx512

namespace scalar {
// The direct method on one pair, for the tests of its error bound: value and bound for sin and cos.
void direct_pair(const detail::Freq &f, int64_t i, int64_t p, double out[4]);
}  // namespace scalar
}  // namespace posenc
