// The AVX-512 path (F, CD, DQ, BW, VL): the only unit compiled with those flags.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_x86.hpp"

namespace posenc {
namespace avx512 {

using E = Engine<Simd<xsimd::avx512bw>>;

void run(const detail::Job &job) { E::run(job); }
void run_learned(const detail::LearnedJob &job) { E::run_learned(job); }
int64_t fast_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects(s, c, n); }
void anchors(const detail::Freq &f, int64_t p, double *s, double *c) { E::anchors(f, p, s, c); }
int64_t clear_steps(const double *s, const double *c, const double *reach) {
  using S = Simd<xsimd::avx512bw>;
  return S::clear_steps(S::D::load_unaligned(s), S::D::load_unaligned(c), S::D::load_unaligned(reach));
}
int64_t window_rejects(const double *s, const double *c, int64_t n) {
  using S = Simd<xsimd::avx512bw>;
  int64_t rejected = 0;
  for (int64_t k = 0; k < n; ++k) {
    alignas(64) double vs[S::W], vc[S::W];
    for (int l = 0; l < S::W; ++l) vs[l] = vc[l] = 0.5;
    vs[k % S::W] = s[k];
    vc[k % S::W] = c[k];
    rejected += S::decided_window(S::load(vs), S::load(vc)) ? 0 : 1;
  }
  return rejected;
}

}  // namespace avx512
}  // namespace posenc
