// The row loop every vector peer shares. K is a kernel type local to one ISA unit (an anonymous
// namespace), so each instantiation has internal linkage and the linker cannot mix up copies built with
// different -m flags.
#pragma once

#include <cstdint>
#include <cstring>

#include "peers.hpp"

namespace peers {

// K::kLanes pairs per step; K::put(position vector, &w[j], &out[2j]) writes 2 * kLanes interleaved floats.
template <class K>
void fill_rows(const Freqs &f, const int64_t *positions, int64_t first, int64_t n, float *out, int64_t stride) {
  constexpr int64_t L = K::kLanes;
  const float *w = f.wf;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t p = positions ? positions[r] : first + r;
    float *o = out + r * stride;
    const auto pv = K::position(float(p));  // frameworks hold positions in float32 too
    int64_t j = 0;
    for (; j + L <= f.h; j += L) K::put(pv, w + j, o + 2 * j);
    if (j < f.h) {  // the last, partial vector: through a buffer, never past the row
      alignas(64) float t[2 * L];
      K::put(pv, w + j, t);
      std::memcpy(o + 2 * j, t, sizeof(float) * size_t(2 * (f.h - j)));
    }
    if (f.d & 1) o[f.d - 1] = 0.0f;
  }
}

}  // namespace peers
