// The AVX2 path's test hooks (isa_hooks.hpp), built with its flags outside the library.
#include "isa_hooks.hpp"
#include "kernel/kernel.hpp"
#include "simd/simd_avx2.hpp"

namespace posenc {
POSENC_DEFINE_HOOKS(avx2, Simd<xsimd::fma3<xsimd::avx2>>)
}  // namespace posenc
