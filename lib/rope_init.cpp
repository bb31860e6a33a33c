// posenc_rope_init: placeholder until the scalings land (issue 15).
#include "posenc/posenc.h"

extern "C" posenc_status posenc_rope_init(posenc_rope *, int64_t, double, const posenc_rope_scaling *, double *) {
  return POSENC_ERR_UNSUPPORTED;
}
