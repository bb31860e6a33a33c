// The RoPE specs the setup layer computes for the C calls of lib/abi/rope_setup_api.cpp: posenc_rope_init's HF
// and vLLM schemes (rope_init.cpp) and posenc_rope_sections' axis maps (rope_sections.cpp). Each checks its
// arguments and writes nothing on error; neither throws (the C calls guard them all the same).
#pragma once

#include <cstdint>

#include "posenc/posenc.h"

namespace posenc {
namespace detail {

// posenc_rope_init (posenc.h), its scaling's type read as an int before any use as the enum.
posenc_status rope_init(posenc_rope *rope, int64_t rotary_dim, double base, const posenc_rope_scaling *scaling,
                        double *freq);

// posenc_rope_sections (posenc.h), the layout given as the int the caller passed (any value: out of the
// enumeration's range is POSENC_ERR_INVALID).
posenc_status rope_sections(posenc_rope *rope, const int64_t *sections, int layout, uint8_t *axis_out,
                            double *freq_out);

}  // namespace detail
}  // namespace posenc
