// AVX2 peers: SLEEF's sincosf8 (u10, u35) and xsimd's sincos on fma3<avx2> (plain xsimd::avx2 would not
// fuse the multiply-adds inside sincos; fma3<avx2> is what a user would pick). The only unit built with
// -mavx2 -mfma, which is also when SLEEF declares its AVX2 functions. Also the RoPE peers (rope_kernels.hpp)
// on 8-lane vectors.
#include <immintrin.h>
#include <sleef.h>

#define PEERS_UNIT avx2
#include "kernels.hpp"
#include "rope_kernels.hpp"

namespace peers {
namespace avx2 {
namespace {

struct Avx2 : LaneOps<xsimd::fma3<xsimd::avx2>> {
  // (s0..s7, c0..c7) -> s0 c0 ... s7 c7: unpack within each 128-bit half, then put the halves in order.
  static void store_zip(float *o, Reg s, Reg c) {
    const Reg lo = _mm256_unpacklo_ps(s, c);  // s0 c0 s1 c1 | s4 c4 s5 c5
    const Reg hi = _mm256_unpackhi_ps(s, c);  // s2 c2 s3 c3 | s6 c6 s7 c7
    _mm256_storeu_ps(o, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
};

}  // namespace

Unit unit() {
  return make_unit<Avx2, Sleef_sincosf8_u10avx2, Sleef_sincosf8_u35avx2, xsimd::fma3<xsimd::avx2>>(
      POSENC_ISA_AVX2, "sleef_u10_avx2", "sleef_u35_avx2", "xsimd_avx2");
}

RopeUnit rope_unit() {
  return make_vector_rope_unit<Avx2, Sleef_sincosf8_u35avx2>(POSENC_ISA_AVX2, "cache_lookup_avx2", "sleef_u35_avx2");
}

}  // namespace avx2
}  // namespace peers
