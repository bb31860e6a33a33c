// The RoPE peers: what runtimes do to rotate q and k, behind plain C++ signatures (no vector type crosses
// this header). Every peer rotates NEOX pairs (i, i + r/2), in place, in float32, from the float32
// frequencies runtimes compute once per model:
//   cache_lookup_<isa>  vLLM's CPU kernel: a precomputed cos_sin_cache [max_pos, r] (cos || sin) gathered
//                       per token, x*c - y*s and y*c + x*s in fp32 vectors (csrc/cpu/pos_encoding.cpp)
//   hf_naive            HF transformers: cos/sin of fl32(fl32(p) * inv_freq) with libm per token, duplicated
//                       halves, then q*cos + rotate_half(q)*sin as separate passes through temporaries
//   llamacpp            ggml's CPU rope: per token theta = (float)p, theta *= theta_scale along the pairs,
//                       cosf/sinf into a per-thread cache, a scalar rotate loop; q and k as two ops
//   inplace             the memory bound: every rotated element of q and k read and written once, in the
//                       cache-lookup peer's vector loop (16-bit rows: a plain loop the compiler vectorises)
//   sleef_u35_<isa>     a cos/sin cache row (cos || sin) from SLEEF u35 sincos of fl32(fl32(p) * inv_freq)
#pragma once

#include <cstdint>
#include <vector>

#include "peers.hpp"  // each ISA unit's rope_unit(), declared beside its unit()
#include "posenc/posenc.h"

namespace peers {

// What a runtime computes once per model, in float32 as they do. max_pos = 0 builds no cos_sin cache.
class RopeModel {
 public:
  RopeModel(int64_t rotary_dim, int64_t head_dim, double base, int64_t max_pos);
  RopeModel(const RopeModel &) = delete;
  RopeModel &operator=(const RopeModel &) = delete;
  int64_t r = 0, h = 0, head_dim = 0, max_pos = 0;
  const float *inv_freq = nullptr;  // HF / vLLM: 1 / fl32(fl32(base) ** fl32(2i / r)), zero-padded to 16k
  float theta_scale = 0;            // llama.cpp: powf(base, -2.0f / r)
  const float *cos_sin = nullptr;   // vLLM's cos_sin_cache: row p = cos(fl32(p * inv_freq)) || sin(...)

 private:
  std::vector<float> inv_freq_, cos_sin_;
};

// q and k of n tokens (explicit positions), strides in elements, as posenc_rope_qk_* takes them.
template <class T>
struct QkOf {
  const int64_t *positions;
  int64_t n;
  T *q;
  int64_t q_heads, q_token_stride, q_head_stride;
  T *k;
  int64_t k_heads, k_token_stride, k_head_stride;
};
using Qk = QkOf<float>;
using Qk16 = QkOf<uint16_t>;

// Temporaries a peer may use, allocated by the caller (runtimes keep them in a caching allocator):
// cos, sin: n * r floats; t0, t1: n * max(q_heads, k_heads) * r floats; cache: head_dim floats.
struct RopeScratch {
  float *cos, *sin, *t0, *t1, *cache;
};

using RopeApplyFn = void (*)(const RopeModel &m, const Qk &t, const RopeScratch &s);
// Rows of the cos/sin cache for positions[t]: cos at out + t*r, sin at out + t*r + r/2.
using RopeCacheFn = void (*)(const RopeModel &m, const int64_t *positions, int64_t n, float *out);
// The in-place bound: the first r elements of every head row of q and k read and written back unchanged,
// through a value the compiler does not know (one = 1.0f; zero = 0 for the 16-bit rows).
using InplaceFn = void (*)(const Qk &t, int64_t r, float one);
using Inplace16Fn = void (*)(const Qk16 &t, int64_t r, uint16_t zero);

struct RopeUnit {
  posenc_isa isa;
  const char *cache_lookup_name;
  RopeApplyFn cache_lookup;
  const char *sleef_name;  // null where the unit has no SLEEF sincos
  RopeCacheFn sleef_u35;
  RopeApplyFn hf_naive, llamacpp;
  InplaceFn inplace;
  Inplace16Fn inplace16;
};

// Every RoPE unit this build compiled, widest first, whether or not this CPU runs it.
const std::vector<RopeUnit> &rope_units();
// The unit of the widest path this CPU runs: its hf_naive, llamacpp and inplace are the ones measured
// (plain loops, vectorised by the compiler as well as it can for this machine).
RopeUnit best_rope();

}  // namespace peers
