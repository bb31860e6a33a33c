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

struct Neon {
  using Reg = float32x4_t;
  static constexpr int64_t kLanes = 4;
  static Reg set1(float x) { return vdupq_n_f32(x); }
  static Reg loadu(const float *p) { return vld1q_f32(p); }
  static Reg mul(Reg a, Reg b) { return vmulq_f32(a, b); }
  static Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
  static Reg sub(Reg a, Reg b) { return vsubq_f32(a, b); }
  static void storeu(float *p, Reg a) { vst1q_f32(p, a); }
  static void store_zip(float *o, Reg s, Reg c) { vst2q_f32(o, float32x4x2_t{{s, c}}); }  // interleaves itself
};

}  // namespace

Unit unit() {
  return make_unit<Neon, Sleef_sincosf4_u10advsimd, Sleef_sincosf4_u35advsimd, xsimd::neon64>(
      POSENC_ISA_NEON, "sleef_u10_neon", "sleef_u35_neon", "xsimd_neon");
}

RopeUnit rope_unit() {
  RopeUnit u = make_rope_unit<Neon, Neon>(POSENC_ISA_NEON, "cache_lookup_neon");
  u.sleef_name = "sleef_u35_neon";
  u.sleef_u35 = sleef_cache<Neon, Sleef_sincosf4_u35advsimd>;
  return u;
}

}  // namespace neon
}  // namespace peers
