// The AVX-512 path (F, CD, DQ, BW, VL): the only unit compiled with those flags.
#include "isa/isa_entry.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_avx512.hpp"

namespace posenc {
POSENC_DEFINE_ISA(avx512, Simd<xsimd::avx512bw>)
}  // namespace posenc
