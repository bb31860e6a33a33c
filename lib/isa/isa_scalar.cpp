// The scalar path: the kernel of kernel.hpp on one pair at a time, built for the baseline ISA. It also
// serves the one-time setup (the one-step rotations of a new spec).
#include "isa/isa_entry.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_scalar.hpp"

namespace posenc {
POSENC_DEFINE_ISA(scalar, Simd<scalar_arch>)
}  // namespace posenc
