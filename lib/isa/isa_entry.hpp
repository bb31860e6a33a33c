// The entry points each ISA translation unit defines, each in the namespace named after its ISA.
#pragma once

#include "isa/isa_list.hpp"
#include "kernel/job.hpp"

namespace posenc {
// What the dispatcher calls (dispatch.hpp's Path): one job of each kind, and the one-time rotation tables of a
// new spec. The tests' own entry points into the kernel are tests/support/isa_hooks.hpp's, built outside the
// library.
#define POSENC_DECLARE_ISA(E, ns, have)            \
  namespace ns {                                   \
  void run(const detail::Job &job);                \
  void run_learned(const detail::LearnedJob &job); \
  void run_rope(const detail::RopeJob &job);       \
  void fill_tables(detail::Freq &f);               \
  }
POSENC_ISAS(POSENC_DECLARE_ISA)
#undef POSENC_DECLARE_ISA

// The definitions, in the path's own unit (isa_<name>.cpp, the only one compiled with its flags), for the
// Engine of its Simd<A>: `POSENC_DEFINE_ISA(avx2, Simd<xsimd::fma3<xsimd::avx2>>)`.
#define POSENC_DEFINE_ISA(ns, SIMD)                                        \
  namespace ns {                                                           \
  using E = Engine<SIMD>;                                                  \
  void run(const detail::Job &job) { E::run(job); }                        \
  void run_learned(const detail::LearnedJob &job) { E::run_learned(job); } \
  void run_rope(const detail::RopeJob &job) { E::run_rope(job); }          \
  void fill_tables(detail::Freq &f) { E::fill_tables(f); }                 \
  }
}  // namespace posenc
