// The scalar path: the kernel of kernel.hpp on one pair at a time, built for the baseline ISA. It also
// serves the one-time setup (the one-step rotations of a new spec) and the tests of the direct method.
#include "isa_entry.hpp"
#include "kernel.hpp"
#include "simd_scalar.hpp"

namespace posenc {
POSENC_DEFINE_ISA(scalar, Simd<scalar_arch>)

namespace scalar {
void direct_pair(const detail::Freq &f, int64_t i, int64_t p, double out[4]) {
  E::direct(double(p), f, i, out[0], out[1], out[2], out[3]);
}
}  // namespace scalar
}  // namespace posenc
