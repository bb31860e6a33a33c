// The NEON path's test hooks (isa_hooks.hpp), built with its flags outside the library.
#include "isa_hooks.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_neon.hpp"

namespace posenc {
POSENC_DEFINE_HOOKS(neon, Simd<xsimd::neon64>)
}  // namespace posenc
