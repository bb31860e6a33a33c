// The default RoPE frequencies base^(-i/h) for any index i, correctly rounded to double: what
// posenc_rope_init writes for its schemes (rope_init.cpp), for the layouts of posenc_rope_sections whose
// frequency index is not the pair's own (rope_sections.cpp).
#pragma once

#include <cstdint>

#include "posenc/posenc.h"

namespace posenc {
namespace detail {

// The index of value k (>= 0) for rope_powers.
struct PowerIndex {
  int64_t (*of)(const void *ctx, int64_t k);
  const void *ctx;
};

// out[k] = the double nearest base^(-index(k) / h) for k < n, h = rotary_dim / 2 (rotary_dim even >= 2, base
// positive and finite). POSENC_ERR_INVALID, with nothing written, when a value is 2^1000 or more (the
// frequency bound of every spec).
posenc_status rope_powers(int64_t rotary_dim, double base, int64_t n, PowerIndex index, double *out);

}  // namespace detail
}  // namespace posenc
