// The AVX2 path (AVX2 + FMA + F16C): the only unit compiled with those flags.
#include "isa/isa_entry.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_avx2.hpp"

namespace posenc {
POSENC_DEFINE_ISA(avx2, Simd<xsimd::fma3<xsimd::avx2>>)
}  // namespace posenc
