// The NEON path: AArch64 Advanced SIMD, part of the aarch64 baseline.
#include "isa/isa_entry.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_neon.hpp"

namespace posenc {
POSENC_DEFINE_ISA(neon, Simd<xsimd::neon64>)
}  // namespace posenc
