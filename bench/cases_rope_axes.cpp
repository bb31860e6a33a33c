// Multi-axis RoPE (issue 22): posenc_rope_qk_f32 with Qwen2.5-VL's 3-axis spec (head 128, base 1e6,
// mrope_section [16, 24, 24]) against the same call with a one-axis spec, on every path.
//   rope_qk_f32_axes3/<path>/d=128/n=<tokens>/r=128/q=<q heads>/k=<k heads>/pos=vl|decode
//   rope_qk_f32_axes1/<path>/...    the same shape, one axis
// pos=vl: a prefill of a vision-language prompt, as Qwen2-VL's get_rope_index numbers it: 200 text tokens,
// an image of 40 x 40 merged patches (1600 tokens: temporal 200, height 200 + row, width 200 + column),
// then text from 240 on; the one-axis call prefills positions 0 .. n-1. pos=decode: one text token at
// 100000 on every axis, and at 100000.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"
#include "vl_prompt.hpp"

namespace bench {
namespace {

const int64_t kSections[4] = {16, 24, 24, 0};

// Axis-major positions (3 n) of the VL prompt, or of n decode tokens; the one-axis positions are axis 0's
// row for decode and 0 .. n-1 for the prompt.
const int64_t *axes_positions(const std::string &pos, int64_t n, int axes) {
  static std::map<std::string, std::vector<int64_t>> made;
  std::vector<int64_t> &v = made[pos + ":" + std::to_string(n) + ":" + std::to_string(axes)];
  if (!v.empty()) return v.data();
  if (pos == "decode") {
    for (int a = 0; a < axes; ++a)
      for (int64_t t = 0; t < n; ++t) v.push_back(100000 + t);
    return v.data();
  }
  if (axes == 1) {
    for (int64_t t = 0; t < n; ++t) v.push_back(t);
    return v.data();
  }
  v = vl_prompt_positions(n, n / 10 < 200 ? n / 10 : 200, n >= 2048 ? 40 : 4);  // the quick plan: a 4 x 4 image
  return v.data();
}

float value(uint64_t &s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return float((s * 0x2545F4914F6CDD1DULL) >> 40) * 0x1p-23f - 1.0f;
}

void add_axes(const RopeShape &s, int axes) {
  for (posenc_isa isa : paths()) {
    const char *kernel = axes == 3 ? "rope_qk_f32_axes3" : "rope_qk_f32_axes1";
    Case c = on_path(isa, make_case(kernel, posenc_isa_name(isa), s.head_dim, s.n, 0));
    c.extra = {
        {"r", std::to_string(s.r)}, {"q", std::to_string(s.q_heads)}, {"k", std::to_string(s.k_heads)}, {"pos", s.pos}};
    c.elements = double(s.n) * double(s.q_heads + s.k_heads) * double(s.r);
    c.bytes = 2.0 * c.elements * sizeof(float);
    c.prepare = [=] {
      struct Spec {
        posenc_rope rope;
        uint8_t axis[64];
      };
      static std::map<int, Spec> specs;  // the rope points into its own map entry: stable
      Spec &sp = specs[axes];
      sp.rope = posenc_rope_default(s.r);
      sp.rope.base = s.base;
      if (axes == 3) posenc_rope_sections(&sp.rope, kSections, POSENC_SECTIONS_CHUNKED, sp.axis, nullptr);
      const posenc_rope *rope = &sp.rope;
      const int64_t ts = (s.q_heads + 2 * s.k_heads) * s.head_dim, count = s.n * ts;
      float *q = buffer_of<float>("rope_axes_qkv", count);
      uint64_t st = 11;
      for (int64_t e = 0; e < count; ++e) q[e] = value(st);
      const int64_t *pos = axes_positions(s.pos, s.n, axes);
      return Work([=] {
        return posenc_rope_qk_f32(rope, pos, 0, s.n, q, s.q_heads, ts, s.head_dim, q + s.q_heads * s.head_dim,
                                  s.k_heads, ts, s.head_dim);
      });
    };
    add(std::move(c));
  }
}

}  // namespace

void add_rope_axes_cases(const Plan &plan) {
  for (const RopeShape &s : plan.rope_axes) {
    add_axes(s, 3);
    add_axes(s, 1);
  }
}

}  // namespace bench
