// The AVX2 path (AVX2 + FMA + F16C): the only unit compiled with those flags.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_x86.hpp"

namespace posenc {
namespace avx2 {

using E = Engine<Simd<xsimd::fma3<xsimd::avx2>>>;

void run(const detail::Job &job) { E::run(job); }
void run_learned(const detail::LearnedJob &job) { E::run_learned(job); }
void run_rope(const detail::RopeJob &job) { E::run_rope(job); }
void fill_tables(detail::Freq &f) { E::fill_tables(f); }
int64_t fast_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects(s, c, n); }
void anchors(const detail::Freq &f, int64_t p, double *s, double *c) { E::anchors(f, p, s, c); }

}  // namespace avx2
}  // namespace posenc
