// The AVX-512 path (F, CD, DQ, BW, VL): the only unit compiled with those flags.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_x86.hpp"

namespace posenc {
namespace avx512 {

using E = Engine<Simd<xsimd::avx512bw>>;

void run(const detail::Job &job) { E::run(job); }
void run_learned(const detail::LearnedJob &job) { E::run_learned(job); }

}  // namespace avx512
}  // namespace posenc
