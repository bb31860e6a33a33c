// posenc_rope_sections: the axis of every pair (and, for the vision layouts, its frequency) from the section
// sizes models give (HF's mrope_section, ggml's sections[4]); docs/rope.md, "Multi-axis RoPE". Everything is
// checked, and every frequency computed, before anything is written.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "posenc/posenc.h"
#include "setup/enum_lists.hpp"
#include "setup/rope_powers.hpp"
#include "setup/rope_setup.hpp"

namespace posenc {
namespace detail {
namespace {

constexpr int kSections = 4;
using i128 = __int128;

// Sector j (pair i mod the sections' sum) of the chunked layouts: its section a and its index k in it.
struct Place {
  int a;
  int64_t k;
};
Place chunked(const int64_t *sec, int64_t j) {
  int a = 0;
  while (a + 1 < kSections && j >= sec[a]) j -= sec[a++];
  return Place{a, j};
}

// Qwen3-VL (HF apply_interleaved_mrope): height on j = 1 mod 3 below 3 s1, width on j = 2 mod 3 below 3 s2,
// the temporal axis everywhere else. ggml IMROPE: the temporal axis only on j = 0 mod 3 below 3 s0, and its
// fourth position slot everywhere else.
int interleaved(const int64_t *sec, int64_t j, bool fourth) {
  if (j % 3 == 1 && j < 3 * sec[1]) return 1;
  if (j % 3 == 2 && j < 3 * sec[2]) return 2;
  if (!fourth || (j % 3 == 0 && j < 3 * sec[0])) return 0;
  return 3;
}

// openPangu-VL (vLLM's MRotaryEmbeddingInterleaved): the axes of sectors 0 .. sum-1. Three sections keep the
// last sector for axis 0; each other sector goes to the axis, among those with sectors left and not the
// previous sector's (unless it alone has some left), whose share placed/count is the smallest, the lower axis
// on a tie. The shares are compared exactly, p_a c_b < p_b c_a (vLLM's float quotients of small integers
// order the same way: equal fractions give equal quotients, different ones different quotients).
void balanced(const int64_t *sec, int64_t sum, uint8_t *out) {
  const bool three = sec[2] > 0;
  const int64_t count[3] = {sec[0] - (three ? 1 : 0), sec[1], sec[2]};
  int64_t placed[3] = {0, 0, 0};
  const int64_t free_sectors = three ? sum - 1 : sum;
  int last = -1;
  for (int64_t j = 0; j < free_sectors; ++j) {
    int best = -1;
    for (int relaxed = 0; relaxed < 2 && best < 0; ++relaxed)
      for (int a = 0; a < 3; ++a) {
        if (placed[a] == count[a] || (a == last && !relaxed)) continue;
        if (best < 0 || i128(placed[a]) * count[best] < i128(placed[best]) * count[a]) best = a;
      }
    out[j] = uint8_t(best);
    ++placed[best];
    last = best;
  }
  if (three) out[sum - 1] = 0;
}

}  // namespace

posenc_status rope_sections(posenc_rope *rope, const int64_t *sections, int layout, uint8_t *axis_out,
                            double *freq_out) {
  if (!rope || !sections || !axis_out) return POSENC_ERR_NULL;
#define POSENC_ONE(ENUM, name) +1
  constexpr int kLayouts = 0 POSENC_ROPE_LAYOUT_LIST(POSENC_ONE);  // lib/setup/enum_lists.hpp
#undef POSENC_ONE
  if (layout < 0 || layout >= kLayouts) return POSENC_ERR_INVALID;
  const bool frequencies =
      layout == POSENC_SECTIONS_VISION || layout == POSENC_SECTIONS_STRIDED || layout == POSENC_SECTIONS_PER_AXIS;
  if (frequencies && !freq_out) return POSENC_ERR_NULL;
  const int64_t r = rope->rotary_dim;
  if (r < 2 || r % 2 != 0) return POSENC_ERR_INVALID;
  const int64_t h = r / 2;
  int64_t sum = 0;
  int last = -1;
  for (int a = 0; a < kSections; ++a) {
    if (sections[a] < 0 || sections[a] > h) return POSENC_ERR_INVALID;
    sum += sections[a];
    if (sections[a] > 0) last = a;
  }
  if (sum == 0 || sum > h) return POSENC_ERR_INVALID;
  if (layout == POSENC_SECTIONS_ALTERNATING && (sections[1] != sections[2] || sections[3] != 0))
    return POSENC_ERR_INVALID;
  if (layout == POSENC_SECTIONS_BALANCED && (sections[3] != 0 || (sections[2] > 0 && sections[0] == 0)))
    return POSENC_ERR_INVALID;
  int axes = last + 1;
  if (layout == POSENC_SECTIONS_INTERLEAVED || layout == POSENC_SECTIONS_ALTERNATING) axes = 3;
  if (layout == POSENC_SECTIONS_BALANCED) axes = sections[2] > 0 ? 3 : 2;
  if (layout == POSENC_SECTIONS_INTERLEAVED_4) axes = 4;
  if (frequencies && !(rope->base > 0.0 && std::isfinite(rope->base))) return POSENC_ERR_INVALID;

  // The frequencies base^(-index/h): index 2k (VISION) or A k + a (STRIDED) for the pair's place k in its
  // section a; PER_AXIS's base^(-k/s_a) is base^(-(k L/s_a)/L) over the common denominator L = lcm(s_a).
  // rope_powers checks their range before it writes any.
  if (frequencies) {
    int64_t den = h;
    if (layout == POSENC_SECTIONS_PER_AXIS) {
      den = 1;
      for (int a = 0; a < kSections; ++a) {
        if (sections[a] == 0) continue;
        int64_t x = den, y = sections[a];
        while (y != 0) x = std::exchange(y, x % y);                                 // gcd
        if (den / x > (int64_t(1) << 40) / sections[a]) return POSENC_ERR_INVALID;  // lcm past 2^40
        den = den / x * sections[a];
      }
    }
    struct Ctx {
      const int64_t *sections;
      int64_t sum, den;
      int axes, layout;
    } ctx{sections, sum, den, axes, layout};
    auto index = [](const void *p, int64_t i) {
      const Ctx &c = *static_cast<const Ctx *>(p);
      const Place pl = chunked(c.sections, i % c.sum);
      if (c.layout == POSENC_SECTIONS_PER_AXIS) return pl.k * (c.den / c.sections[pl.a]);
      return c.layout == POSENC_SECTIONS_VISION ? 2 * pl.k : int64_t(c.axes) * pl.k + pl.a;
    };
    const posenc_status st = rope_powers(2 * den, rope->base, h, PowerIndex{index, &ctx}, freq_out);
    if (st != POSENC_OK) return st;
  }
  if (layout == POSENC_SECTIONS_BALANCED) {
    balanced(sections, sum, axis_out);
    for (int64_t i = sum; i < h; ++i) axis_out[i] = axis_out[i - sum];
  }
  for (int64_t i = 0; i < h && layout != POSENC_SECTIONS_BALANCED; ++i) {
    const int64_t j = i % sum;
    int a;
    if (layout == POSENC_SECTIONS_INTERLEAVED || layout == POSENC_SECTIONS_INTERLEAVED_4)
      a = interleaved(sections, j, layout == POSENC_SECTIONS_INTERLEAVED_4);
    else if (layout == POSENC_SECTIONS_ALTERNATING)  // ERNIE-4.5-VL: h w h w ... then t
      a = j < 2 * sections[1] ? 1 + int(j & 1) : 0;
    else
      a = chunked(sections, j).a;
    axis_out[i] = uint8_t(a);
  }
  rope->axes = axes;
  rope->axis = axes > 1 ? axis_out : nullptr;
  if (frequencies) rope->freq = freq_out;
  return POSENC_OK;
}

}  // namespace detail
}  // namespace posenc
