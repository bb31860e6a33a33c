// The scalar path: the kernel of kernel.hpp on one pair at a time, built for the baseline ISA. It also
// serves the one-time setup (the one-step rotations of a new spec) and the tests of the direct method.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_scalar.hpp"

namespace posenc {
namespace scalar {

using E = Engine<Simd<scalar_arch>>;

void run(const detail::Job &job) { E::run(job); }
void run_learned(const detail::LearnedJob &job) { E::run_learned(job); }
void run_rope(const detail::RopeJob &job) { E::run_rope(job); }
void fill_tables(detail::Freq &f) { E::fill_tables(f); }
int64_t fast_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects(s, c, n); }
void anchors(const detail::Freq &f, int64_t p, double *s, double *c) { E::anchors(f, p, s, c); }

void direct_pair(const detail::Freq &f, int64_t i, int64_t p, double out[4]) {
  E::direct(double(p), f, i, out[0], out[1], out[2], out[3]);
}

}  // namespace scalar
}  // namespace posenc
