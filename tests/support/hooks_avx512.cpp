// The AVX-512 path's test hooks (isa_hooks.hpp), built with its flags outside the library.
#include "isa_hooks.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_avx512.hpp"

namespace posenc {
POSENC_DEFINE_HOOKS(avx512, Simd<xsimd::avx512bw>)

namespace avx512 {
int64_t clear_steps(const double *s, const double *c, const double *reach) {
  using S = Simd<xsimd::avx512bw>;
  return S::clear_steps(S::D::load_unaligned(s), S::D::load_unaligned(c), S::D::load_unaligned(reach));
}
int64_t window_rejects(const double *s, const double *c, int64_t n) { return E::fast_rejects<false>(s, c, n); }
}  // namespace avx512
}  // namespace posenc
