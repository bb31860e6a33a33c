// The RoPE functions of the C ABI: placeholder until the kernel lands (issue 15).
#include "posenc/posenc.h"

extern "C" {
posenc_rope posenc_rope_default(int64_t rotary_dim) {
  posenc_rope r;
  r.rotary_dim = rotary_dim;
  r.pairs = POSENC_ROPE_HALVES;
  r.base = 10000.0;
  r.position_scale = 1.0;
  r.freq = nullptr;
  r.attention_scale = 1.0;
  return r;
}
posenc_status posenc_rope_cache_f32(const posenc_rope *, const int64_t *, int64_t, int64_t, float *, int64_t, float *,
                                    int64_t) {
  return POSENC_ERR_UNSUPPORTED;
}
#define STUB_ROPE(name, T) \
  posenc_status name(const posenc_rope *, const int64_t *, int64_t, int64_t, T *, int64_t, int64_t, int64_t) { \
    return POSENC_ERR_UNSUPPORTED; }
STUB_ROPE(posenc_rope_f32, float)
STUB_ROPE(posenc_rope_bf16, uint16_t)
STUB_ROPE(posenc_rope_f16, uint16_t)
#define STUB_QK(name, T) \
  posenc_status name(const posenc_rope *, const int64_t *, int64_t, int64_t, T *, int64_t, int64_t, int64_t, T *, \
                     int64_t, int64_t, int64_t) { return POSENC_ERR_UNSUPPORTED; }
STUB_QK(posenc_rope_qk_f32, float)
STUB_QK(posenc_rope_qk_bf16, uint16_t)
STUB_QK(posenc_rope_qk_f16, uint16_t)
}
