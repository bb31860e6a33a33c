// The scalar path's test hooks (isa_hooks.hpp), and the direct method on one pair for the tests of its bound.
#include "isa_hooks.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_scalar.hpp"

namespace posenc {
POSENC_DEFINE_HOOKS(scalar, Simd<scalar_arch>)

namespace scalar {
void direct_pair(const detail::Freq &f, int64_t i, int64_t p, double out[4]) {
  E::direct(double(p), f, i, out[0], out[1], out[2], out[3]);
}
}  // namespace scalar
}  // namespace posenc
