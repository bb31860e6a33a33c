// The AVX-512 path (F, CD, DQ, BW, VL): the only unit compiled with those flags.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_avx512.hpp"

namespace posenc {
POSENC_DEFINE_ISA(avx512, Simd<xsimd::avx512bw>)

namespace avx512 {
int64_t clear_steps(const double *s, const double *c, const double *reach) {
  using S = Simd<xsimd::avx512bw>;
  return S::clear_steps(S::D::load_unaligned(s), S::D::load_unaligned(c), S::D::load_unaligned(reach));
}
int64_t window_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects<false>(s, c, n); }
}  // namespace avx512
}  // namespace posenc
