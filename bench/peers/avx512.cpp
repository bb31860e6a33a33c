// AVX-512 peers: SLEEF's sincosf16 (u10, u35) and xsimd's sincos on avx512f, which xsimd 8.1 evaluates
// with unfused multiply-adds (that is what a user of xsimd gets). The only unit built with -mavx512f.
// Also the RoPE peers (rope_kernels.hpp) on 16-lane vectors.
#include <immintrin.h>
#include <sleef.h>

#define PEERS_UNIT avx512
#include "kernels.hpp"
#include "rope_kernels.hpp"

namespace peers {
namespace avx512 {
namespace {

struct Avx512 : LaneOps<xsimd::avx512f> {
  // (s0..s15, c0..c15) -> s0 c0 ... s15 c15: one two-source permute per 16 outputs.
  static void store_zip(float *o, Reg s, Reg c) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    _mm512_storeu_ps(o, _mm512_permutex2var_ps(s, lo, c));
    _mm512_storeu_ps(o + 16, _mm512_permutex2var_ps(s, hi, c));
  }
};

}  // namespace

Unit unit() {
  return make_unit<Avx512, Sleef_sincosf16_u10avx512f, Sleef_sincosf16_u35avx512f, xsimd::avx512f>(
      POSENC_ISA_AVX512, "sleef_u10_avx512", "sleef_u35_avx512", "xsimd_avx512");
}

RopeUnit rope_unit() {
  return make_vector_rope_unit<Avx512, Sleef_sincosf16_u35avx512f>(POSENC_ISA_AVX512, "cache_lookup_avx512",
                                                                   "sleef_u35_avx512");
}

}  // namespace avx512
}  // namespace peers
