// ggml's own acceptance criterion for a RoPE implementation, over test-backend-ops' whole RoPE case matrix:
// posenc's operation (posenc/ggml.h) against ggml's CPU operation on the same inputs, every case's normalised
// mean squared error sum (a - b)^2 / sum a^2 at most 1e-7 (test_case::max_nmse_err), no NaN, infinities only
// where both have them, and nothing outside the result written (test-backend-ops' sentinels).
//
// The cases are test_rope's of test-backend-ops.cpp (ggml d99724f2, make_test_cases_eval) in its order: the
// grid fs {1, 1.4245} x ef {0, 0.7465} x af {1, 1.4245} x F32/F16 x freq_factors x view, with every model
// shape for the first grid point and the Llama-7B and Falcon-40B shapes for the others, forward and back; the
// non-contiguous second-half views of clip's build_rope_2d for every mode; one in-place case per type, mode and
// freq_factors (2-D, viewed, 4-D viewed); the rotated window at an offset (ggml_rope_set_offset). Also the RoPE
// node of the fusion cases (test_rope_set_rows, test_rms_norm_mul_rope). Inputs as test-backend-ops makes
// them: uniform in [-1, 1], freq_factors in [0.9, 1.1], positions uniform below n_ctx = 512.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_test_util.hpp"
#include "posenc/ggml.h"

#ifndef POSENC_GGML_HAS_ROPE_SET_OFFSET
#define POSENC_GGML_HAS_ROPE_SET_OFFSET 0  // meson defines it to 1 where ggml.h declares ggml_rope_set_offset
#endif

namespace {

constexpr double kMaxNmse = 1e-7;  // test_case::max_nmse_err()
constexpr int kThreads = 2;

struct RopeCase {
  ggml_type type;
  std::array<int64_t, 4> ne_a;
  int n_dims, mode, n_ctx;
  float fs, ef, af;
  bool ff;
  int v;  // 1: a view of a larger tensor; 2: the second half of rows twice as long
  bool forward, inplace;
  int n_offs;
  const char *group;
  bool plain_rope = false;  // ggml_rope (the fusion cases): base 10000, no YaRN, n_dims = ne0
};

std::string describe(const RopeCase &c) {
  char buf[320];
  std::snprintf(
      buf, sizeof buf, "%s: %s %s ne [%lld,%lld,%lld,%lld] n_dims %d mode %d fs %g ef %g af %g ff %d v %d%s n_offs %d",
      c.group, c.forward ? "ROPE" : "ROPE_BACK", c.type == GGML_TYPE_F32 ? "f32" : "f16", (long long)c.ne_a[0],
      (long long)c.ne_a[1], (long long)c.ne_a[2], (long long)c.ne_a[3], c.n_dims, c.mode, double(c.fs), double(c.ef),
      double(c.af), int(c.ff), c.v, c.inplace ? " inplace" : "", c.n_offs);
  return buf;
}

// test-backend-ops' RoPE cases (make_test_cases_eval), in its order.
std::vector<RopeCase> matrix() {
  std::vector<RopeCase> out;
  auto add = [&](ggml_type type, std::array<int64_t, 4> ne, int n_dims, int mode, float fs, float ef, float af, bool ff,
                 int v, bool fw, const char *group, bool inplace = false, int n_offs = 0) {
    out.push_back(RopeCase{type, ne, n_dims, mode, 512, fs, ef, af, ff, v, fw, inplace, n_offs, group});
  };
  using namespace ggml_test::modes;
  for (bool fw : {true, false}) {
    bool all = true;
    for (float fs : {1.0f, 1.4245f})
      for (float ef : {0.0f, 0.7465f})
        for (float af : {1.0f, 1.4245f})
          for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
            for (bool ff : {false, true}) {
              for (int v : {0, 1}) {
                auto t = [&](std::array<int64_t, 4> ne, int n_dims, int mode, const char *g) {
                  add(type, ne, n_dims, mode, fs, ef, af, ff, v, fw, g);
                };
                t({128, 32, 2, 1}, 128, N, "llama 7B");
                if (all) {
                  t({128, 40, 2, 1}, 128, N, "llama 13B");
                  t({128, 52, 2, 1}, 128, N, "llama 30B");
                  t({128, 64, 2, 1}, 128, N, "llama 65B");
                  t({16, 16, 8192, 1}, 16, N, "8192 tokens");
                  t({64, 1, 2, 1}, 64, X, "falcon 7B");
                  t({64, 71, 2, 1}, 64, X, "falcon 7B");
                  t({64, 8, 2, 1}, 64, X, "falcon 40B");
                  t({80, 32, 2, 1}, 20, N, "partial 20 of 80");
                  t({80, 32, 2, 1}, 32, N, "partial 32 of 80");
                  t({80, 32, 4, 1}, 32, N, "partial 32 of 80");
                  t({80, 32, 2, 1}, 20, X, "stablelm");
                  t({80, 32, 2, 1}, 32, X, "phi-2");
                  t({80, 32, 4, 1}, 32, X, "phi-2");
                  t({16, 16, 8192, 1}, 16, X, "8192 tokens");
                  t({128, 12, 2, 1}, 128, M, "qwen2vl 2B");
                  t({128, 28, 2, 1}, 128, M, "qwen2vl 7B");
                  t({128, 12, 2, 1}, 20, M, "m-rope 20");
                  t({128, 28, 2, 1}, 32, M, "m-rope 32");
                  t({128, 12, 2, 1}, 128, I, "qwen3vl 2B");
                  t({128, 28, 2, 1}, 128, I, "qwen3vl 7B");
                  t({128, 12, 2, 1}, 20, I, "imrope 20");
                  t({128, 28, 2, 1}, 32, I, "imrope 32");
                  t({80, 16, 2, 1}, 80, V, "qwen2vl ViT");
                  t({128, 16, 2, 1}, 128, I, "qwen3vl");
                  t({16, 16, 8192, 1}, 16, I, "8192 tokens");
                }
                t({64, 128, 2, 1}, 64, X, "falcon 40B");
              }
              for (int mode : {N, X, M, I, V})  // build_rope_2d: a second-half view at a non-zero offset
                add(type, {36, 16, 2457, 1}, 36, mode, fs, ef, af, ff, 2, fw, "second-half view");
            }
            all = false;
          }
  }
  for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16})
    for (int mode : {N, X, M, I, V})
      for (bool ff : {false, true}) {
        add(type, {128, 32, 2, 1}, 128, mode, 1.4245f, 0.7465f, 1.4245f, ff, 0, true, "in place", true);
        add(type, {128, 32, 2, 1}, 128, mode, 1.4245f, 0.7465f, 1.4245f, ff, 1, true, "in place", true);
        add(type, {128, 32, 2, 3}, 128, mode, 1.4245f, 0.7465f, 1.4245f, ff, 1, true, "in place 4-D", true);
      }
#if POSENC_GGML_HAS_ROPE_SET_OFFSET  // ggml d99724f2 and later; 0.12.0 has no offset
  for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
    for (bool fw : {true, false})
      for (bool ff : {false, true}) {
        add(type, {128, 32, 2, 1}, 32, N, 1.4245f, 0.7465f, 1.4245f, ff, 0, fw, "offset", false, 32);
        add(type, {128, 32, 2, 1}, 32, X, 1.4245f, 0.7465f, 1.4245f, ff, 0, fw, "offset", false, 32);
        add(type, {128, 12, 2, 1}, 24, M, 1.4245f, 0.7465f, 1.4245f, ff, 0, fw, "offset", false, 32);
        add(type, {128, 12, 2, 1}, 24, I, 1.4245f, 0.7465f, 1.4245f, ff, 0, fw, "offset", false, 32);
      }
    add(type, {128, 32, 2, 1}, 32, X, 1.4245f, 0.7465f, 1.4245f, false, 0, true, "offset in place", true, 32);
  }
#endif
  // The RoPE node of the fusion cases: test_rope_set_rows (ggml_rope, or ggml_rope_multi with the grid's last
  // point) and test_rms_norm_mul_rope (ggml_rope), on F32 rows.
  for (int mode : {N, X, M, V})
    for (int ne2 : {1, 8, 512}) {
      RopeCase c{GGML_TYPE_F32,
                 {128, 32, ne2, 1},
                 128,
                 mode,
                 512,
                 1.4245f,
                 0.7465f,
                 1.4245f,
                 false,
                 0,
                 true,
                 false,
                 0,
                 "fusion: rope + set_rows"};
      c.plain_rope = mode == N || mode == X;
      out.push_back(c);
    }
  for (int mode : {N, X})
    for (std::array<int64_t, 4> ne : std::vector<std::array<int64_t, 4>>{{768, 1, 1, 1},
                                                                         {768, 3, 1, 1},
                                                                         {768, 3, 5, 1},
                                                                         {128, 32, 2, 1},
                                                                         {128, 4, 2, 1},
                                                                         {128, 32, 50, 1},
                                                                         {128, 4, 50, 1},
                                                                         {8192, 2, 2, 1}}) {
      RopeCase c{
          GGML_TYPE_F32, ne, int(ne[0]), mode, 512, 1, 0, 1, false, 0, true, false, 0, "fusion: rms_norm + mul + rope"};
      c.plain_rope = true;
      out.push_back(c);
    }
  return out;
}

using ggml_test::splitmix;
using ggml_test::uniform;

void fill(ggml_tensor *t, uint64_t &s, float lo, float hi) {  // a whole (contiguous) tensor
  const int64_t n = ggml_nelements(t);
  for (int64_t i = 0; i < n; ++i) {
    const float v = uniform(s, lo, hi);
    if (t->type == GGML_TYPE_F32)
      static_cast<float *>(t->data)[i] = v;
    else
      static_cast<ggml_fp16_t *>(t->data)[i] = ggml_fp32_to_fp16(v);
  }
}

// The logical elements of t (any strides) as floats.
std::vector<float> to_float(const ggml_tensor *t) {
  std::vector<float> out;
  out.reserve(size_t(ggml_nelements(t)));
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
          const char *p =
              static_cast<const char *>(t->data) + i3 * t->nb[3] + i2 * t->nb[2] + i1 * t->nb[1] + i0 * t->nb[0];
          out.push_back(t->type == GGML_TYPE_F32 ? *reinterpret_cast<const float *>(p)
                                                 : ggml_fp16_to_fp32(*reinterpret_cast<const ggml_fp16_t *>(p)));
        }
  return out;
}

double nmse(const std::vector<float> &a, const std::vector<float> &b) {
  double ab = 0, a0 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i] - b[i]) * double(a[i] - b[i]);
    a0 += double(a[i]) * double(a[i]);
  }
  return ab / a0;
}

bool isinf_or_max(float f) { return std::isinf(f) || f == 65504.0f || f == -65504.0f; }

// What a builder needs besides the context: one case's tensors.
struct Inputs {
  ggml_tensor *a, *pos, *freq;
};

ggml_tensor *build(const RopeCase &c, ggml_context *ctx, const Inputs &in, bool posenc) {
  const bool multi = (c.mode & GGML_ROPE_TYPE_MROPE) != 0, vision = c.mode == GGML_ROPE_TYPE_VISION;
  ggml_tensor *out;
  if (c.plain_rope) {
    out = posenc ? posenc_ggml_rope_ext(ctx, in.a, in.pos, nullptr, int(c.ne_a[0]), c.mode, 0, 10000.0f, 1.0f, 0.0f,
                                        1.0f, 0.0f, 0.0f)
                 : ggml_rope(ctx, in.a, in.pos, int(c.ne_a[0]), c.mode);
  } else if (multi) {
    int sections[4];
    const int n_dims = vision ? c.n_dims / 2 : c.n_dims;
    if (vision) {
      const int s[4] = {c.n_dims / 4, c.n_dims / 4, 0, 0};
      std::memcpy(sections, s, sizeof s);
    } else {
      const int s[4] = {c.n_dims / 3, c.n_dims / 3, c.n_dims / 3, 0};
      std::memcpy(sections, s, sizeof s);
    }
    auto *fn =
        c.forward ? (c.inplace ? posenc_ggml_rope_multi_inplace : posenc_ggml_rope_multi) : posenc_ggml_rope_multi_back;
    auto *gn = c.forward ? (c.inplace ? ggml_rope_multi_inplace : ggml_rope_multi) : ggml_rope_multi_back;
    out = (posenc ? fn : gn)(ctx, in.a, in.pos, in.freq, n_dims, sections, c.mode, 0, 10000.0f, c.fs, c.ef, c.af, 1.0f,
                             1.0f);
  } else {
    auto *fn =
        c.forward ? (c.inplace ? posenc_ggml_rope_ext_inplace : posenc_ggml_rope_ext) : posenc_ggml_rope_ext_back;
    auto *gn = c.forward ? (c.inplace ? ggml_rope_ext_inplace : ggml_rope_ext) : ggml_rope_ext_back;
    out = (posenc ? fn : gn)(ctx, in.a, in.pos, in.freq, c.n_dims, c.mode, 0, 10000.0f, c.fs, c.ef, c.af, 1.0f, 1.0f);
  }
#if POSENC_GGML_HAS_ROPE_SET_OFFSET
  if (c.n_offs != 0) out = posenc ? posenc_ggml_rope_set_offset(out, c.n_offs) : ggml_rope_set_offset(out, c.n_offs);
#endif
  return out;
}

// a as test_rope builds it: a new tensor, or a view of a larger one (v & 1), or the second half of longer rows.
ggml_tensor *make_a(const RopeCase &c, ggml_context *ctx, ggml_tensor **parent) {
  std::array<int64_t, 4> ne = c.ne_a;
  if (c.v & 1) {
    ne[0] *= 2, ne[1] *= 4, ne[2] *= 3;
  } else if (c.v == 2) {
    ne[0] *= 2;
  }
  *parent = ggml_new_tensor(ctx, c.type, 4, ne.data());
  if (c.v == 0) return *parent;
  const size_t offset = c.v == 2 ? size_t(c.ne_a[0]) * ggml_element_size(*parent) : 0;
  return ggml_view_4d(ctx, *parent, c.ne_a[0], c.ne_a[1], c.ne_a[2], c.ne_a[3], (*parent)->nb[1], (*parent)->nb[2],
                      (*parent)->nb[3], offset);
}

struct Outcome {
  double nmse;
  std::string problem;  // empty: within the criterion
};

Outcome run_case(const RopeCase &c, uint64_t seed) {
  const bool multi = (c.mode & GGML_ROPE_TYPE_MROPE) != 0 && !c.plain_rope;
  std::array<int64_t, 4> big = c.ne_a;
  if (c.v & 1)
    big[0] *= 2, big[1] *= 4, big[2] *= 3;
  else if (c.v == 2)
    big[0] *= 2;
  const size_t a_bytes = size_t(big[0] * big[1] * big[2] * big[3]) * (c.type == GGML_TYPE_F32 ? 4 : 2);
  const size_t out_bytes = size_t(c.ne_a[0] * c.ne_a[1] * c.ne_a[2] * c.ne_a[3]) * 4;
  ggml_init_params params = {2 * a_bytes + 2 * out_bytes + size_t(c.ne_a[2]) * 16 + (8 << 20) +
                                 64 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(),
                             nullptr, false};
  ggml_context *ctx = ggml_init(params);
  REQUIRE(ctx != nullptr);
  // One input for each operation (in place, each rotates its own), the same values in both.
  ggml_tensor *parent_g, *parent_p;
  Inputs g{make_a(c, ctx, &parent_g), nullptr, nullptr}, p{make_a(c, ctx, &parent_p), nullptr, nullptr};
  uint64_t s = seed;
  fill(parent_g, s, -1.0f, 1.0f);
  std::memcpy(parent_p->data, parent_g->data, ggml_nbytes(parent_g));
  g.pos = p.pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (multi ? 4 : 1) * c.ne_a[2]);
  for (int64_t i = 0; i < g.pos->ne[0]; ++i)
    static_cast<int32_t *>(g.pos->data)[i] = int32_t(splitmix(s) % uint64_t(c.n_ctx));
  if (c.ff) {
    g.freq = p.freq = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, c.n_dims / 2);
    fill(g.freq, s, 0.9f, 1.1f);
  }
  const std::vector<uint8_t> before(static_cast<uint8_t *>(parent_p->data),
                                    static_cast<uint8_t *>(parent_p->data) + ggml_nbytes(parent_p));
  ggml_tensor *out_g = build(c, ctx, g, false), *out_p = build(c, ctx, p, true);
  for (ggml_tensor *out : {out_g, out_p}) {
    ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, kThreads) == GGML_STATUS_SUCCESS);
  }
  Outcome o{0, ""};
  REQUIRE(posenc_ggml_is_rope(out_p) == 1);
  const std::vector<float> fg = to_float(out_g), fp = to_float(out_p);
  for (size_t i = 0; i < fg.size() && o.problem.empty(); ++i) {
    if (std::isnan(fg[i]) || std::isnan(fp[i]))
      o.problem = "NaN at " + std::to_string(i);
    else if ((isinf_or_max(fg[i]) || isinf_or_max(fp[i])) &&
             !(isinf_or_max(fg[i]) && isinf_or_max(fp[i]) && std::signbit(fg[i]) == std::signbit(fp[i])))
      o.problem = "inf mismatch at " + std::to_string(i);
  }
  o.nmse = nmse(fg, fp);
  if (o.problem.empty() && !(o.nmse <= kMaxNmse)) o.problem = "NMSE " + std::to_string(o.nmse) + " > 1e-7";
  // Sentinels: out of place, a is untouched; in place, only the view's elements of a's parent change.
  if (o.problem.empty()) {
    const uint8_t *now = static_cast<const uint8_t *>(parent_p->data);
    if (!c.inplace) {
      if (std::memcmp(now, before.data(), before.size()) != 0) o.problem = "a changed by an out-of-place operation";
    } else {
      std::vector<uint8_t> in_view(before.size(), 0);
      const ggml_tensor *v = p.a;
      const size_t es = ggml_element_size(v),
                   off = size_t(static_cast<char *>(v->data) - static_cast<char *>(parent_p->data));
      for (int64_t i3 = 0; i3 < v->ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < v->ne[2]; ++i2)
          for (int64_t i1 = 0; i1 < v->ne[1]; ++i1)
            std::memset(&in_view[off + size_t(i3) * v->nb[3] + size_t(i2) * v->nb[2] + size_t(i1) * v->nb[1]], 1,
                        size_t(v->ne[0]) * es);
      for (size_t i = 0; i < before.size() && o.problem.empty(); ++i)
        if (!in_view[i] && now[i] != before[i]) o.problem = "a byte outside the view changed at " + std::to_string(i);
    }
  }
  ggml_free(ctx);
  return o;
}

}  // namespace

TEST_CASE("test-backend-ops' RoPE matrix: posenc's operation within NMSE 1e-7 of ggml's CPU operation",
          "[ggml][matrix]") {
  const std::vector<RopeCase> cases = matrix();
  std::map<std::string, double> worst;  // per mode and type
  std::map<std::string, int> count;
  int failed = 0;
  uint64_t seed = 1;
  for (const RopeCase &c : cases) {
    const Outcome o = run_case(c, seed++);
    const char *mode = c.mode == GGML_ROPE_TYPE_NORMAL   ? "NORMAL"
                       : c.mode == GGML_ROPE_TYPE_NEOX   ? "NEOX"
                       : c.mode == GGML_ROPE_TYPE_MROPE  ? "MROPE"
                       : c.mode == GGML_ROPE_TYPE_IMROPE ? "IMROPE"
                                                         : "VISION";
    const std::string key =
        std::string(mode) + (c.forward ? "" : " back") + (c.type == GGML_TYPE_F32 ? " f32" : " f16");
    worst[key] = std::max(worst[key], o.nmse);
    ++count[key];
    if (!o.problem.empty()) {
      ++failed;
      UNSCOPED_INFO(describe(c) << ": " << o.problem);
    }
  }
  std::printf("test-backend-ops RoPE matrix: %zu cases, %d over the criterion\n", cases.size(), failed);
  std::printf("%-22s %6s %12s\n", "mode", "cases", "max NMSE");
  for (const auto &w : worst) std::printf("%-22s %6d %12.3g\n", w.first.c_str(), count[w.first], w.second);
  // test_rope's cases, and the fusion cases' RoPE nodes; ggml 0.12.0 has no offsets (34 of test_rope's cases)
  CHECK(cases.size() == 870 + 28 - (POSENC_GGML_HAS_ROPE_SET_OFFSET ? 0 : 34));
  REQUIRE(failed == 0);
}
