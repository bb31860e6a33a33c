// The multi-axis RoPE accuracy table of posenc-accuracy (accuracy_axes.hpp). Qwen2.5-VL-7B's text RoPE:
// r = 128, base 1e6, mrope_section [16, 24, 24] (pairs [0, 16) on the temporal axis, [16, 40) on the height,
// [40, 64) on the width). Each group is one image row of 16 tokens placed at a long position c, as
// get_rope_index places an image after c tokens of text: temporal c, height c + 3, width c .. c + 15.
//   hf_fp32: HF's Qwen2VLRotaryEmbedding + apply_multimodal_rotary_pos_emb: per axis fl32(fl32(p_axis) *
//            inv_freq32), cosf / sinf, the pair taking its axis's value
//   ggml:    ggml_mrope_cache_init: one theta chain per axis (theta_a = (float)p_a, theta_a *= theta_scale
//            from pair to pair), the pair taking its axis's theta, cosf / sinf
#include "accuracy_axes.hpp"

#include <cmath>
#include <iterator>

#include "peers/rope.hpp"
#include "posenc/posenc.h"
#include "support/reference.hpp"

namespace accuracy {
namespace {

constexpr int64_t kR = 128, kH = kR / 2, kTokens = 16;
constexpr double kBase = 1e6;
const int64_t kSections[4] = {16, 24, 24, 0};

struct Group {
  const char *label;
  int64_t center;
};
const Group kGroups[] = {
    {"4096", 4096}, {"32768", 32768}, {"131072", 131072}, {"2^20", 1048576}, {"2^31-32", 2147483647 - 32}};

int axis_of(int64_t i) { return i < kSections[0] ? 0 : i < kSections[0] + kSections[1] ? 1 : 2; }

// Token t's position on axis a: temporal c, height c + 3, width c + t.
int64_t position(int64_t c, int a, int64_t t) { return a == 0 ? c : a == 1 ? c + 3 : c + t; }

// kTokens rows of kH cos and kH sin of one implementation.
bool values(const std::string &impl, int64_t c, float *cs, float *sn) {
  if (impl == "hf_fp32" || impl == "ggml") {
    const peers::RopeModel m(kR, kR, kBase, 0);
    for (int64_t t = 0; t < kTokens; ++t) {
      float theta[3];
      for (int a = 0; a < 3; ++a) theta[a] = float(position(c, a, t));
      for (int64_t i = 0; i < kH; ++i) {
        const int a = axis_of(i);
        const float ang = impl == "hf_fp32" ? float(position(c, a, t)) * m.inv_freq[i] : theta[a];
        cs[t * kH + i] = cosf(ang);
        sn[t * kH + i] = sinf(ang);
        for (float &th : theta) th *= m.theta_scale;
      }
    }
    return true;
  }
  force_path(impl);
  posenc_rope rope = posenc_rope_default(kR);
  rope.base = kBase;
  uint8_t axis[kH];
  if (posenc_rope_sections(&rope, kSections, POSENC_SECTIONS_CHUNKED, axis, nullptr) != POSENC_OK) return false;
  std::vector<int64_t> pos;
  for (int a = 0; a < 3; ++a)
    for (int64_t t = 0; t < kTokens; ++t) pos.push_back(position(c, a, t));
  return posenc_rope_cache_f32(&rope, pos.data(), 0, kTokens, cs, kH, sn, kH) == POSENC_OK;
}

}  // namespace

std::vector<Cell> rope_axes_accuracy(const std::vector<std::string> &paths) {
  const Impls impls = implementations(paths, {"hf_fp32", "ggml"});
  posenc_spec spec = posenc_spec_default(kR);  // w_i = base^(-i/64) = base^(-2i/128): the RoPE f_i
  spec.base = kBase;
  constexpr size_t kSin = size_t(kTokens * kH);  // each implementation's values: the cos rows, then the sin rows
  std::vector<Cell> rows;
  for (const Group &g : kGroups) {
    const size_t first = rows.size();
    const auto run = [&](const std::string &impl, float *v) {
      if (values(impl, g.center, v, v + kSin)) return true;
      std::fprintf(stderr, "posenc-accuracy: multi-axis RoPE on %s not measured\n", impl.c_str());
      return false;
    };
    const auto got = run_group(rows, impls, Cell{{}, {}, g.label, g.center}, 2 * kSin, run);
    ref::Big es, ec;
    for (int64_t t = 0; t < kTokens; ++t)
      for (int64_t i = 0; i < kH; ++i) {
        ref::exact_pair(spec, i, position(g.center, axis_of(i), t), es, ec);
        add_pair(&rows[first], got, size_t(t * kH + i), kSin + size_t(t * kH + i), ec, es);
      }
  }
  return rows;
}

void write_axes_json(FILE *f, const std::vector<Cell> &rows) {
  std::fprintf(f,
               "  \"rope_axes\": {\"model\": \"Qwen2.5-VL text, mrope_section [16, 24, 24]\", \"rotary_dim\": %lld, "
               "\"base\": %g, \"tokens_per_group\": %lld, \"results\": [\n",
               (long long)kR, kBase, (long long)kTokens);
  write_cells(f, rows, [](FILE *o, const Cell &c) {
    std::fprintf(o, "\"group\": \"%s\", \"center\": %lld, ", c.group, (long long)c.center);
  });
}

bool print_axes(const std::vector<Cell> &rows) {
  std::printf(
      "\nMulti-axis RoPE cos/sin (Qwen2.5-VL, r = %lld, base %g, an image row at p): max abs error (max ULP)\n%-10s",
      (long long)kR, kBase, "impl");
  return print_cells(rows, rows.size() / std::size(kGroups), std::size(kGroups), 10);
}

}  // namespace accuracy
