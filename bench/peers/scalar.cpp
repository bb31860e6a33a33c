// Baseline-ISA peers: glibc's sincos in double on the double angle p * w (the careful scalar way), and the
// naive passes and RoPE peers as the compiler vectorises them for the baseline (SSE2 on x86-64).
#include <cmath>

#include "naive.hpp"
#include "peers.hpp"
#include "rope_kernels.hpp"

namespace peers {
namespace scalar {
namespace {

void libm_double(const Freqs &f, const int64_t *positions, int64_t first, int64_t n, float *out, int64_t stride) {
  for (int64_t r = 0; r < n; ++r) {
    const double p = double(positions ? positions[r] : first + r);
    float *o = out + r * stride;
    for (int64_t i = 0; i < f.h; ++i) {
      double s, c;
      sincos(p * f.wd[i], &s, &c);
      o[2 * i] = float(s);
      o[2 * i + 1] = float(c);
    }
    if (f.d & 1) o[f.d - 1] = 0.0f;
  }
}

struct Baseline {};

// One float per "vector": the cache-lookup peer as a plain scalar loop.
struct Scalar {
  using Reg = float;
  static constexpr int64_t kLanes = 1;
  static Reg set1(float x) { return x; }
  static Reg loadu(const float *p) { return *p; }
  static Reg mul(Reg a, Reg b) { return a * b; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static void storeu(float *p, Reg a) { *p = a; }
};

}  // namespace

Unit unit() {
  return Unit{{{"libm_double", POSENC_ISA_SCALAR, libm_double}, {}, {}},
              {POSENC_ISA_SCALAR, Naive<Baseline>::three_pass, Naive<Baseline>::two_pass, Naive<Baseline>::fill}};
}

RopeUnit rope_unit() { return make_rope_unit<Scalar, Baseline>(POSENC_ISA_SCALAR, "cache_lookup_scalar"); }

}  // namespace scalar
}  // namespace peers
