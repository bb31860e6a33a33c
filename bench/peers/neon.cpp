// NEON peers: SLEEF's sincosf4 for Advanced SIMD (u10, u35) and xsimd's sincos on neon64. Built at the
// aarch64 baseline, where SLEEF declares its advsimd functions. Also the RoPE peers (rope_kernels.hpp).
#include <arm_neon.h>
#include <sleef.h>

#define PEERS_UNIT neon
#include "kernels.hpp"
#include "rope_kernels.hpp"

namespace peers {
namespace neon {
namespace {

struct Neon : LaneOps<xsimd::neon64> {
  static void store_zip(float *o, Reg s, Reg c) { vst2q_f32(o, float32x4x2_t{{s, c}}); }  // interleaves itself
};

}  // namespace

Unit unit() {
  return make_unit<Neon, Sleef_sincosf4_u10advsimd, Sleef_sincosf4_u35advsimd, xsimd::neon64>(
      POSENC_ISA_NEON, "sleef_u10_neon", "sleef_u35_neon", "xsimd_neon");
}

RopeUnit rope_unit() {
  return make_vector_rope_unit<Neon, Sleef_sincosf4_u35advsimd>(POSENC_ISA_NEON, "cache_lookup_neon", "sleef_u35_neon");
}

}  // namespace neon
}  // namespace peers
