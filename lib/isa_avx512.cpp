// The AVX-512 path (F, CD, DQ, BW, VL): the only unit compiled with those flags.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_x86.hpp"

namespace posenc {
namespace avx512 {

using E = Engine<Simd<xsimd::avx512bw>>;

void run(const detail::Job &job) { E::run(job); }
void run_learned(const detail::LearnedJob &job) { E::run_learned(job); }
void run_rope(const detail::RopeJob &job) { E::run_rope(job); }
void fill_tables(detail::Freq &f) { E::fill_tables(f); }
int64_t fast_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects(s, c, n); }
void anchors(const detail::Freq &f, int64_t p, double *s, double *c) { E::anchors(f, p, s, c); }
int64_t clear_steps(const double *s, const double *c, const double *reach) {
  using S = Simd<xsimd::avx512bw>;
  return S::clear_steps(S::D::load_unaligned(s), S::D::load_unaligned(c), S::D::load_unaligned(reach));
}
int64_t window_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects<false>(s, c, n); }

}  // namespace avx512
}  // namespace posenc
