// The spec the table suites (accuracy, golden, paths, timesteps) build case by case: posenc_spec_default(d)
// with the layout, base, denominator and position scale given, in the order of posenc_spec's fields. One
// definition, so that every suite's tables mean the same spec by the same arguments.
#pragma once

#include <cstdint>

#include "posenc/posenc.h"

namespace ref {

inline posenc_spec spec_of(int64_t d, posenc_layout layout, double base = 10000.0, double den = 0.0,
                           double scale = 1.0) {
  posenc_spec s = posenc_spec_default(d);
  s.layout = layout;
  s.base = base;
  s.freq_denominator = den;
  s.position_scale = scale;
  return s;
}

}  // namespace ref
