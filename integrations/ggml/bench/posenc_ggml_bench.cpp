// posenc-ggml-bench: posenc's RoPE operation against ggml's own, inside ggml graphs computed by ggml's CPU
// backend, in one process (the report's ggml section, bench/report/ggml_section.py; docs/ggml.md).
//
//   posenc-ggml-bench --out FILE.json [--quick] [--command TEXT]
//
// Speed (posenc_next, backend_next: the same graph computed again at once on the same positions, a later
// layer of a model's graph, whose cos/sin rows posenc kept from the first; every variant starts on positions no
// node had): for each shape (Llama-2-7B prefill 2048 tokens x 32 heads x 128, NORMAL and NEOX; Qwen2.5-VL-7B
// prefill, 2048 tokens of a prompt with a 40 x 40 image x 28 heads x 128, MROPE sections [16, 24, 24, 0]; the
// one-token decode step of each), each thread count (1, 2) and each posenc SIMD path (forced), three one-node
// graphs on the same input are computed in rounds, in an order rotated every round: ggml_rope_ext /
// ggml_rope_multi, posenc_ggml_rope_ext / _multi, and ggml_dup (the same bytes read and written, no
// arithmetic: the memory bound of an out-of-place operation); with the backend built (-Dggml_tree), also
// ggml's graph computed by posenc's backend (posenc/ggml-backend.h: what a program gets from
// GGML_BACKEND_PATH); and posenc's kernel alone. The JSON keeps every round's times; the section takes the
// median of the per-round ratios (paired) and the medians.
//
// Accuracy: for each mode, 16 tokens x 4 heads at positions near 10^3, 10^5, 10^6 and 2^31 - 17 (every slot of the
// multi modes near the same value), the largest absolute error of ggml's and of posenc's result against the
// exact rotation (MPFR) of posenc's spec: each frequency and the magnitude the double nearest ggml's formula.
//
// The timestep embedding: ggml_timestep_embedding against posenc_ggml_timestep_embedding on 1024 timesteps in
// [0, 1000) x 320 and x 1280, 1 and 2 threads, posenc's active path, in alternating rounds ("timesteps" in the
// JSON; --only timesteps runs these alone); and the largest absolute error of each against MPFR at t = 999.5 and
// 1e6 + 0.5, dim 320 ("timestep_accuracy").
#include <mpfr.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "posenc/ggml.h"
#include "posenc/posenc.h"
#if POSENC_GGML_BENCH_BACKEND
#include "posenc/ggml-backend.h"
#endif
#include "support/ggml_rope_reference.hpp"

namespace {

using Clock = std::chrono::steady_clock;

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float uniform(uint64_t &s) { return -1.0f + 2.0f * float(splitmix(s) >> 40) * 0x1p-24f; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One RoPE configuration: the shape of a (ne0, heads, tokens), ggml's parameters, the positions.
struct Config {
  std::string name, model, step;
  int mode, n_dims;
  int sections[4];
  int64_t heads, tokens;
  float base;
  std::vector<int32_t> positions;  // 4 slots for the multi modes
};

bool is_multi(int mode) { return (mode & GGML_ROPE_TYPE_MROPE) != 0; }

// Qwen2-VL's get_rope_index numbering of a prompt: 200 text tokens, a 40 x 40 image (temporal 200, height 200 +
// row, width 200 + column), then text from 240 on; the fourth slot 0, as llama.cpp fills it.
std::vector<int32_t> vl_prompt(int64_t n) {
  std::vector<int32_t> s[4];
  const int64_t text = 200, side = 40;
  for (int64_t t = 0; t < text; ++t)
    for (int a = 0; a < 3; ++a) s[a].push_back(int32_t(t));
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x) {
      s[0].push_back(int32_t(text));
      s[1].push_back(int32_t(text + y));
      s[2].push_back(int32_t(text + x));
    }
  for (int64_t p = text + side; int64_t(s[0].size()) < n; ++p)
    for (int a = 0; a < 3; ++a) s[a].push_back(int32_t(p));
  std::vector<int32_t> out;
  for (int a = 0; a < 3; ++a) out.insert(out.end(), s[a].begin(), s[a].begin() + n);
  out.insert(out.end(), size_t(n), 0);
  return out;
}

std::vector<Config> configs(bool quick) {
  const int64_t prefill = quick ? 256 : 2048;
  std::vector<int32_t> seq(static_cast<size_t>(prefill)), one = {int32_t(prefill)};
  for (int64_t t = 0; t < prefill; ++t) seq[size_t(t)] = int32_t(t);
  std::vector<int32_t> vl = quick ? std::vector<int32_t>() : vl_prompt(prefill);
  if (quick) {  // a small prompt: 100 text tokens then a 12 x 12 image ... as the shape allows
    for (int a = 0; a < 3; ++a)
      for (int64_t t = 0; t < prefill; ++t)
        vl.push_back(int32_t(t < 100 ? t : a == 0 ? 100 : 100 + (a == 1 ? (t - 100) / 12 : (t - 100) % 12)));
    vl.insert(vl.end(), size_t(prefill), 0);
  }
  std::vector<int32_t> vl_one = {int32_t(prefill), int32_t(prefill), int32_t(prefill), 0};
  const int none[4] = {0, 0, 0, 0}, qwen[4] = {16, 24, 24, 0};
  std::vector<Config> c;
  auto add = [&](const char *name, const char *model, const char *step, int mode, const int *sec, int64_t heads,
                 int64_t tokens, float base, const std::vector<int32_t> &pos) {
    Config k{name, model, step, mode, 128, {sec[0], sec[1], sec[2], sec[3]}, heads, tokens, base, pos};
    c.push_back(k);
  };
  add("llama2_prefill_normal", "Llama-2-7B", "prefill", GGML_ROPE_TYPE_NORMAL, none, 32, prefill, 10000.0f, seq);
  add("llama2_prefill_neox", "Llama-2-7B", "prefill", GGML_ROPE_TYPE_NEOX, none, 32, prefill, 10000.0f, seq);
  add("qwen25vl_prefill_mrope", "Qwen2.5-VL-7B", "prefill", GGML_ROPE_TYPE_MROPE, qwen, 28, prefill, 1000000.0f, vl);
  add("llama2_decode_normal", "Llama-2-7B", "decode", GGML_ROPE_TYPE_NORMAL, none, 32, 1, 10000.0f, one);
  add("llama2_decode_neox", "Llama-2-7B", "decode", GGML_ROPE_TYPE_NEOX, none, 32, 1, 10000.0f, one);
  add("qwen25vl_decode_mrope", "Qwen2.5-VL-7B", "decode", GGML_ROPE_TYPE_MROPE, qwen, 28, 1, 1000000.0f, vl_one);
  return c;
}

ggml_tensor *rope(ggml_context *ctx, const Config &c, ggml_tensor *a, ggml_tensor *b, bool posenc) {
  int s[4] = {c.sections[0], c.sections[1], c.sections[2], c.sections[3]};
  if (is_multi(c.mode))
    return (posenc ? posenc_ggml_rope_multi : ggml_rope_multi)(ctx, a, b, nullptr, c.n_dims, s, c.mode, 0, c.base, 1.0f,
                                                               0.0f, 1.0f, 0.0f, 0.0f);
  return (posenc ? posenc_ggml_rope_ext : ggml_rope_ext)(ctx, a, b, nullptr, c.n_dims, c.mode, 0, c.base, 1.0f, 0.0f,
                                                         1.0f, 0.0f, 0.0f);
}

// Wall-clock time, or with --cpu-time the process's CPU time (all its threads, spinning included): on a
// host shared with other work, a one-thread measurement that their load does not stretch.
bool g_cpu_time = false;
double now() {
  if (g_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Timed {
  std::string config, path;
  int threads;
  std::vector<double> ggml, posenc, copy, kernel, backend;  // seconds, one per round
  // posenc's graph and the backend's computed again at once on the same positions: a later layer of the same
  // graph, whose cos/sin rows each thread kept from the first (rope_node.cpp)
  std::vector<double> posenc_next, backend_next;
};

// posenc's ggml backend (nullptr when not built): ggml's own RoPE graph computed by it.
ggml_backend_t g_backend = nullptr;
void backend_threads(int n) {
  if (!g_backend) return;
  auto fn = reinterpret_cast<ggml_backend_set_n_threads_t>(ggml_backend_reg_get_proc_address(
      ggml_backend_dev_backend_reg(ggml_backend_get_device(g_backend)), "ggml_backend_set_n_threads"));
  if (fn) fn(g_backend, n);
}

// posenc's kernel alone on the configuration's rows, as one thread calls it: posenc_rope_f32 in place (on a
// copy of the input), with the spec the operation builds (the frequencies of ggml_rope_frequencies, the axis
// map of the sections), outside any graph. What the operation's copy, graph and threads add is the rest.
struct Kernel {
  std::vector<double> freq;
  std::vector<uint8_t> axis;
  std::vector<int64_t> positions;
  std::vector<float> rows;
  posenc_rope rope;
};
Kernel make_kernel(const Config &c, const ggml_tensor *a) {
  Kernel k;
  const int64_t pairs = c.n_dims / 2;
  posenc_ggml_rope_params g{};
  g.n_dims = c.n_dims;
  g.pairs = pairs;
  g.freq_base = c.base;
  g.freq_scale = 1.0f;
  g.attn_factor = 1.0f;
  k.freq.resize(size_t(pairs));
  double m = 1.0;
  if (posenc_rope_ggml_frequencies(&g, k.freq.data(), &m) != POSENC_OK) std::exit(1);
  k.rope = posenc_rope_default(c.n_dims);
  k.rope.pairs = c.mode == GGML_ROPE_TYPE_NORMAL ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  k.rope.attention_scale = m;
  int axes = 1;
  if (is_multi(c.mode)) {  // CHUNKED sections that fill the pairs, as the configurations here have them
    const int64_t sec[4] = {c.sections[0], c.sections[1], c.sections[2], c.sections[3]};
    k.axis.resize(size_t(pairs));
    if (posenc_rope_sections(&k.rope, sec, POSENC_SECTIONS_CHUNKED, k.axis.data(), nullptr) != POSENC_OK) std::exit(1);
    axes = k.rope.axes;
  }
  k.rope.freq = k.freq.data();
  k.rope.axis = axes > 1 ? k.axis.data() : nullptr;
  for (int ax = 0; ax < axes; ++ax)
    for (int64_t t = 0; t < c.tokens; ++t) k.positions.push_back(c.positions[size_t(ax * c.tokens + t)]);
  k.rows.assign(static_cast<const float *>(a->data), static_cast<const float *>(a->data) + ggml_nelements(a));
  return k;
}

// The variants of a configuration (ggml's graph, posenc's graph, the copy's graph, posenc's kernel alone,
// ggml's graph on posenc's backend when there is one), timed in rounds whose order rotates, for about
// `seconds`.
Timed time_config(const Config &c, ggml_backend_t cpu, int threads, posenc_isa isa, double seconds) {
  const size_t bytes = size_t(128 * c.heads * c.tokens) * sizeof(float);
  ggml_init_params params = {4 * bytes + c.positions.size() * 4 + (16 << 20), nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, c.heads, c.tokens);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, int64_t(c.positions.size()));
  uint64_t s = 42;
  for (int64_t i = 0; i < ggml_nelements(a); ++i) static_cast<float *>(a->data)[i] = uniform(s);
  std::memcpy(b->data, c.positions.data(), c.positions.size() * 4);
  ggml_cgraph *g[3];
  ggml_tensor *outs[3] = {rope(ctx, c, a, b, false), rope(ctx, c, a, b, true), ggml_dup(ctx, a)};
  for (int k = 0; k < 3; ++k) {
    g[k] = ggml_new_graph(ctx);
    ggml_build_forward_expand(g[k], outs[k]);
  }
  Kernel kernel = make_kernel(c, a);
  posenc_force_isa(isa);
  ggml_backend_cpu_set_n_threads(cpu, threads);
  backend_threads(threads);
  Timed t{c.name, posenc_isa_name(isa), threads, {}, {}, {}, {}, {}, {}, {}};
  const int variants = g_backend ? 5 : 4;
  // Each variant starts on positions no node has had yet (all of them moved by one more), as a new graph does:
  // posenc's first node of a graph makes its cos/sin rows; `once(k, true)` then times the same node again,
  // the later layers of that graph.
  int32_t bump = 0;
  auto fresh_positions = [&] {
    ++bump;
    int32_t *p = static_cast<int32_t *>(b->data);
    for (size_t i = 0; i < c.positions.size(); ++i) p[i] = c.positions[i] + bump;
  };
  auto once = [&](int k, bool again = false) {
    if (!again) fresh_positions();
    const double t0 = now();
    if (k == 4) {
      if (ggml_backend_graph_compute(g_backend, g[0]) != GGML_STATUS_SUCCESS) {
        std::fprintf(stderr, "posenc-ggml-bench: the backend failed\n");
        std::exit(1);
      }
    } else if (k == 3) {
      if (posenc_rope_f32(&kernel.rope, kernel.positions.data(), 0, c.tokens, kernel.rows.data(), c.heads,
                          128 * c.heads, 128) != POSENC_OK)
        std::exit(1);
    } else if (ggml_backend_graph_compute(cpu, g[k]) != GGML_STATUS_SUCCESS) {
      std::fprintf(stderr, "posenc-ggml-bench: a graph failed\n");
      std::exit(1);
    }
    return now() - t0;
  };
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < variants; ++k) once(k);  // warm: frequencies, posenc's tables, the pages of every output
  double per_round = 0;
  for (int k = 0; k < variants; ++k) per_round += once(k);
  const int rounds = int(std::min(20000.0, std::max(15.0, seconds / std::max(per_round, 1e-9))));
  for (int r = 0; r < rounds; ++r)
    for (int j = 0; j < variants; ++j) {
      const int k = (r + j) % variants;
      const double dt = once(k);
      (k == 0 ? t.ggml : k == 1 ? t.posenc : k == 2 ? t.copy : k == 3 ? t.kernel : t.backend).push_back(dt);
      if (k == 1) t.posenc_next.push_back(once(k, true));
      if (k == 4) t.backend_next.push_back(once(k, true));
    }
  ggml_free(ctx);
  return t;
}

// --- accuracy ----------------------------------------------------------------------------------------------------

struct Accuracy {
  std::string mode;
  std::string band;
  double ggml_err, posenc_err;
};

// Largest |result - exact| of ggml's and posenc's operation for one mode, at positions p0 .. p0 + 15.
Accuracy accuracy(int mode, const char *mode_name, int64_t p0, const char *band) {
  const bool vision = mode == GGML_ROPE_TYPE_VISION, multi = is_multi(mode);
  const int n_dims = vision ? 40 : 128;
  const int64_t ne0 = vision ? 80 : 128, heads = 4, tokens = 16, pairs = vision ? 40 : 64;
  int sections[4] = {16, 24, 24, 0};
  if (vision) sections[0] = sections[1] = 20, sections[2] = 0;
  if (mode == GGML_ROPE_TYPE_IMROPE) sections[0] = 24, sections[1] = sections[2] = 20;
  const float base = multi && !vision ? 1000000.0f : 10000.0f;
  ggml_init_params params = {16 << 20, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ne0, heads, tokens);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (multi ? 4 : 1) * tokens);
  uint64_t s = 3;
  for (int64_t i = 0; i < ggml_nelements(a); ++i) static_cast<float *>(a->data)[i] = uniform(s);
  int32_t *pos = static_cast<int32_t *>(b->data);
  for (int64_t i = 0; i < b->ne[0]; ++i) pos[i] = int32_t(p0 + i % tokens - 3 * (i / tokens));
  ggml_tensor *out[2];
  for (int k = 0; k < 2; ++k) {
    const bool posenc = k == 1;
    out[k] = multi ? (posenc ? posenc_ggml_rope_multi : ggml_rope_multi)(ctx, a, b, nullptr, n_dims, sections, mode, 0,
                                                                         base, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)
                   : (posenc ? posenc_ggml_rope_ext : ggml_rope_ext)(ctx, a, b, nullptr, n_dims, mode, 0, base, 1.0f,
                                                                     0.0f, 1.0f, 0.0f, 0.0f);
    ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out[k]);
    ggml_graph_compute_with_ctx(ctx, g, 1);
  }
  // The exact rotation of posenc's spec.
  ggml_ref::Params p{n_dims, pairs, {}, {}, base, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};
  std::vector<int> axis(size_t(pairs), 0);
  if (multi) {
    const int64_t sec[4] = {sections[0], sections[1], sections[2], sections[3]};
    const ggml_ref::PairMap map = ggml_ref::pair_map(mode, sec, pairs);
    p.index = map.index;
    axis = map.axis;
  }
  const ggml_ref::Expect e = ggml_ref::reference(p);
  ggml_ref::Big ang(300), cs(300), sn(300), v(300), w(300);
  double err[2] = {0, 0};
  const float *x = static_cast<const float *>(a->data);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < pairs; ++i) {
        const int64_t pi = multi ? pos[axis[size_t(i)] * tokens + t] : pos[t];
        mpfr_set_d(ang, e.freq[size_t(i)], MPFR_RNDN);
        mpfr_mul_si(ang, ang, long(pi), MPFR_RNDN);  // exact: 53 + 31 bits
        mpfr_sin_cos(sn, cs, ang, MPFR_RNDN);
        const int64_t i0 = mode == GGML_ROPE_TYPE_NORMAL ? 2 * i : i,
                      i1 = mode == GGML_ROPE_TYPE_NORMAL ? 2 * i + 1 : i + pairs;
        const int64_t row = (t * heads + h) * ne0;
        const double x0 = x[row + i0], x1 = x[row + i1];
        for (int side = 0; side < 2; ++side) {
          // side 0: x0 cos - x1 sin, side 1: x0 sin + x1 cos, times the magnitude
          mpfr_mul_d(v, side == 0 ? cs : sn, x0, MPFR_RNDN);
          mpfr_mul_d(w, side == 0 ? sn : cs, x1, MPFR_RNDN);
          if (side == 0)
            mpfr_sub(v, v, w, MPFR_RNDN);
          else
            mpfr_add(v, v, w, MPFR_RNDN);
          mpfr_mul_d(v, v, e.m, MPFR_RNDN);
          const double exact = mpfr_get_d(v, MPFR_RNDN);
          for (int k = 0; k < 2; ++k) {
            const float got = static_cast<const float *>(out[k]->data)[row + (side == 0 ? i0 : i1)];
            err[k] = std::max(err[k], std::fabs(double(got) - exact));
          }
        }
      }
  ggml_free(ctx);
  return Accuracy{mode_name, band, err[0], err[1]};
}

// --- the timestep embedding --------------------------------------------------------------------------------------

struct TimedSteps {
  int dim;
  int64_t n;
  int threads;
  std::string path;
  std::vector<double> ggml, posenc;  // seconds, one per round
};

// ggml_timestep_embedding and posenc_ggml_timestep_embedding on n timesteps in [0, 1000) (a sampler's batch),
// one-node graphs computed by the CPU backend in rounds whose order alternates, for about `seconds`.
TimedSteps time_timesteps(int dim, int64_t n, ggml_backend_t cpu, int threads, posenc_isa isa, double seconds) {
  ggml_init_params params = {size_t(2 * dim + 1) * size_t(n) * sizeof(float) + (16 << 20), nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
  uint64_t s = 11;
  for (int64_t i = 0; i < n; ++i) static_cast<float *>(ts->data)[i] = 500.0f + 500.0f * uniform(s);
  ggml_tensor *outs[2] = {ggml_timestep_embedding(ctx, ts, dim, 10000),
                          posenc_ggml_timestep_embedding(ctx, ts, dim, 10000)};
  ggml_cgraph *g[2];
  for (int k = 0; k < 2; ++k) {
    g[k] = ggml_new_graph(ctx);
    ggml_build_forward_expand(g[k], outs[k]);
  }
  posenc_force_isa(isa);
  ggml_backend_cpu_set_n_threads(cpu, threads);
  TimedSteps t{dim, n, threads, posenc_isa_name(isa), {}, {}};
  auto once = [&](int k) {
    const double t0 = now();
    if (ggml_backend_graph_compute(cpu, g[k]) != GGML_STATUS_SUCCESS) {
      std::fprintf(stderr, "posenc-ggml-bench: a graph failed\n");
      std::exit(1);
    }
    return now() - t0;
  };
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < 2; ++k) once(k);
  const double per_round = once(0) + once(1);
  const int rounds = int(std::min(20000.0, std::max(15.0, seconds / std::max(per_round, 1e-9))));
  for (int r = 0; r < rounds; ++r)
    for (int j = 0; j < 2; ++j) {
      const int k = (r + j) % 2;
      const double dt = once(k);
      (k == 0 ? t.ggml : t.posenc).push_back(dt);
    }
  ggml_free(ctx);
  return t;
}

struct StepAccuracy {
  double t;
  int dim;
  double ggml_err, posenc_err, ggml_vs_posenc;
};

// Largest |result - exact| of ggml's and posenc's timestep embedding at one timestep (exact: MPFR, 300 bits),
// and the largest |ggml's - posenc's|.
StepAccuracy timestep_accuracy(float t, int dim) {
  ggml_init_params params = {size_t(dim) * 16 + (1 << 20), nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
  static_cast<float *>(ts->data)[0] = t;
  ggml_tensor *out[2] = {ggml_timestep_embedding(ctx, ts, dim, 10000),
                         posenc_ggml_timestep_embedding(ctx, ts, dim, 10000)};
  for (ggml_tensor *o : out) {
    ggml_cgraph *g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, o);
    ggml_graph_compute_with_ctx(ctx, g, 1);
  }
  // column j: cos(t w_j), column j + half: sin(t w_j), w_j = 10000^(-j / half)
  const int half = dim / 2;
  ggml_ref::Big w(300), a(300), sn(300), cs(300);
  double err[2] = {0, 0}, between = 0;
  const float *rg = static_cast<const float *>(out[0]->data), *rp = static_cast<const float *>(out[1]->data);
  for (int j = 0; j < dim; ++j) between = std::max(between, std::fabs(double(rg[j]) - double(rp[j])));
  for (int j = 0; j < half; ++j) {
    mpfr_set_ui(w, 10000, MPFR_RNDN);
    mpfr_log(w, w, MPFR_RNDN);
    mpfr_mul_si(w, w, -j, MPFR_RNDN);
    mpfr_div_si(w, w, half, MPFR_RNDN);
    mpfr_exp(w, w, MPFR_RNDN);
    mpfr_mul_d(a, w, double(t), MPFR_RNDN);
    mpfr_sin_cos(sn, cs, a, MPFR_RNDN);
    const double c = mpfr_get_d(cs, MPFR_RNDN), s = mpfr_get_d(sn, MPFR_RNDN);
    for (int k = 0; k < 2; ++k) {
      const float *row = static_cast<const float *>(out[k]->data);
      err[k] = std::max({err[k], std::fabs(double(row[j]) - c), std::fabs(double(row[j + half]) - s)});
    }
  }
  ggml_free(ctx);
  return StepAccuracy{double(t), dim, err[0], err[1], between};
}

std::string json_times(const std::vector<double> &v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.4e", i ? "," : "", v[i]);
    s += buf;
  }
  return s + "]";
}

std::string load_average() {  // /proc/loadavg's three averages: how busy the host was
  std::ifstream f("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  if (!(f >> a >> b >> c)) return "[]";
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.2f, %.2f, %.2f]", a, b, c);
  return buf;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

int main(int argc, char **argv) {
  std::string out_path, command = "posenc-ggml-bench", only;
  bool quick = false, no_accuracy = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc)
      out_path = argv[++i];
    else if (arg == "--quick")
      quick = true;
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];  // one configuration (for profiling)
    else if (arg == "--no-accuracy")
      no_accuracy = true;
    else if (arg == "--cpu-time")
      g_cpu_time = true;
    else if (arg == "--command" && i + 1 < argc)
      command = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: posenc-ggml-bench --out FILE.json [--quick] [--command TEXT] [--only CONFIG] "
                   "[--no-accuracy] [--cpu-time]\n");
      return 2;
    }
  }
  if (out_path.empty()) {
    std::fprintf(stderr, "usage: posenc-ggml-bench --out FILE.json [--quick] [--command TEXT]\n");
    return 2;
  }
  ggml_backend_t cpu = ggml_backend_cpu_init();
  if (!cpu) {
    std::fprintf(stderr, "posenc-ggml-bench: no CPU backend\n");
    return 1;
  }
#if POSENC_GGML_BENCH_BACKEND
  if (ggml_backend_reg_t reg = posenc_ggml_backend_reg())
    g_backend = ggml_backend_dev_init(ggml_backend_reg_dev_get(reg, 0), nullptr);
  if (!g_backend) {
    std::fprintf(stderr, "posenc-ggml-bench: posenc's backend did not start\n");
    return 1;
  }
#endif
  const posenc_isa active = posenc_active_isa();
  std::vector<posenc_isa> paths;
  for (posenc_isa isa : {POSENC_ISA_AVX2, POSENC_ISA_AVX512, POSENC_ISA_NEON})
    if (posenc_isa_available(isa)) paths.push_back(isa);
  if (paths.empty()) paths.push_back(POSENC_ISA_SCALAR);
  const std::string load_start = load_average();
  const double seconds = quick ? 0.1 : 1.5;
  std::vector<Timed> timed;
  for (const Config &c : configs(quick))
    for (int threads : {1, 2})
      if (only.empty() || c.name == only)
        for (posenc_isa isa : paths) {
          timed.push_back(time_config(c, cpu, threads, isa, c.step == "decode" ? seconds / 3 : seconds));
          const Timed &t = timed.back();
          std::vector<double> r;
          for (size_t k = 0; k < t.ggml.size(); ++k) r.push_back(t.ggml[k] / t.posenc[k]);
          std::vector<double> rb;
          for (size_t k = 0; k < t.backend.size(); ++k) rb.push_back(t.ggml[k] / t.backend[k]);
          std::vector<double> rn, rbn;
          for (size_t k = 0; k < t.posenc_next.size(); ++k) rn.push_back(t.ggml[k] / t.posenc_next[k]);
          for (size_t k = 0; k < t.backend_next.size(); ++k) rbn.push_back(t.ggml[k] / t.backend_next[k]);
          std::printf(
              "%-24s %d thread%s %-7s ggml %9.3f us  posenc %9.3f (next %9.3f) us  backend %9.3f (next %9.3f) us  "
              "copy %9.3f us  kernel %9.3f us  ggml/posenc %.2f (next %.2f)  ggml/backend %.2f (next %.2f)\n",
              c.name.c_str(), threads, threads > 1 ? "s" : " ", t.path.c_str(), 1e6 * median(t.ggml),
              1e6 * median(t.posenc), 1e6 * median(t.posenc_next), 1e6 * median(t.backend),
              1e6 * median(t.backend_next), 1e6 * median(t.copy), 1e6 * median(t.kernel), median(r), median(rn),
              median(rb), median(rbn));
          std::fflush(stdout);
        }
  // The timestep embedding: 1024 timesteps x 320 (SD's UNet) and x 1280, on the active path.
  std::vector<TimedSteps> steps;
  if (only.empty() || only == "timesteps")
    for (int dim : {320, 1280})
      for (int threads : {1, 2}) {
        steps.push_back(time_timesteps(dim, 1024, cpu, threads, active, seconds));
        const TimedSteps &t = steps.back();
        std::vector<double> r;
        for (size_t k = 0; k < t.ggml.size(); ++k) r.push_back(t.ggml[k] / t.posenc[k]);
        std::printf("timesteps 1024 x %-5d %d thread%s %-7s ggml %9.3f us  posenc %9.3f us  ggml/posenc %.2f\n", dim,
                    threads, threads > 1 ? "s" : " ", t.path.c_str(), 1e6 * median(t.ggml), 1e6 * median(t.posenc),
                    median(r));
        std::fflush(stdout);
      }
  posenc_force_isa(active);
  std::vector<Accuracy> acc;
  const struct {
    int mode;
    const char *name;
  } modes[] = {{GGML_ROPE_TYPE_NORMAL, "NORMAL"},
               {GGML_ROPE_TYPE_NEOX, "NEOX"},
               {GGML_ROPE_TYPE_MROPE, "MROPE"},
               {GGML_ROPE_TYPE_IMROPE, "IMROPE"},
               {GGML_ROPE_TYPE_VISION, "VISION"}};
  const struct {
    int64_t p;
    const char *band;
  } bands[] = {{1000, "1e3"}, {100000, "1e5"}, {1000000, "1e6"}, {2147483647 - 17, "2^31-1"}};
  for (const auto &m : modes)
    for (const auto &b : bands) {
      if (no_accuracy) break;
      acc.push_back(accuracy(m.mode, m.name, b.p, b.band));
      std::printf("accuracy %-7s p ~ %-7s ggml %.3g  posenc %.3g\n", m.name, b.band, acc.back().ggml_err,
                  acc.back().posenc_err);
    }

  std::vector<StepAccuracy> step_acc;
  for (float t : {999.5f, 1000000.5f}) {
    if (no_accuracy) break;
    step_acc.push_back(timestep_accuracy(t, 320));
    std::printf("accuracy timesteps dim 320 t = %.1f ggml %.3g  posenc %.3g  |ggml - posenc| %.3g\n", double(t),
                step_acc.back().ggml_err, step_acc.back().posenc_err, step_acc.back().ggml_vs_posenc);
  }

  std::FILE *f = std::fopen(out_path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "posenc-ggml-bench: cannot write %s\n", out_path.c_str());
    return 1;
  }
  std::fprintf(f, "{\n  \"command\": \"%s\",\n  \"mode\": \"%s\",\n  \"cpu\": \"%s\",\n  \"posenc\": \"%s\",\n",
               command.c_str(), quick ? "quick" : "full", cpu_name().c_str(), posenc_version());
  std::fprintf(f, "  \"ggml_backend\": \"%s\",\n  \"clock\": \"%s\",\n", ggml_backend_name(cpu),
               g_cpu_time ? "process CPU time" : "wall");
  std::fprintf(f, "  \"load_avg_start\": %s,\n  \"load_avg_end\": %s,\n  \"configs\": [\n", load_start.c_str(),
               load_average().c_str());
  const std::vector<Config> cs = configs(quick);
  for (size_t i = 0; i < cs.size(); ++i)
    std::fprintf(f,
                 "    {\"name\": \"%s\", \"model\": \"%s\", \"step\": \"%s\", \"mode\": %d, \"heads\": %lld, "
                 "\"tokens\": %lld, \"head_dim\": 128, \"n_dims\": %d}%s\n",
                 cs[i].name.c_str(), cs[i].model.c_str(), cs[i].step.c_str(), cs[i].mode, (long long)cs[i].heads,
                 (long long)cs[i].tokens, cs[i].n_dims, i + 1 < cs.size() ? "," : "");
  std::fprintf(f, "  ],\n  \"speed\": [\n");
  for (size_t i = 0; i < timed.size(); ++i) {
    const Timed &t = timed[i];
    std::fprintf(f,
                 "    {\"config\": \"%s\", \"path\": \"%s\", \"threads\": %d, \"ggml\": %s, \"posenc\": %s, "
                 "\"posenc_next\": %s, \"copy\": %s, \"kernel\": %s, \"backend\": %s, \"backend_next\": %s}%s\n",
                 t.config.c_str(), t.path.c_str(), t.threads, json_times(t.ggml).c_str(), json_times(t.posenc).c_str(),
                 json_times(t.posenc_next).c_str(), json_times(t.copy).c_str(), json_times(t.kernel).c_str(),
                 json_times(t.backend).c_str(), json_times(t.backend_next).c_str(), i + 1 < timed.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"accuracy\": [\n");
  for (size_t i = 0; i < acc.size(); ++i)
    std::fprintf(f, "    {\"mode\": \"%s\", \"band\": \"%s\", \"ggml\": %.6e, \"posenc\": %.6e}%s\n",
                 acc[i].mode.c_str(), acc[i].band.c_str(), acc[i].ggml_err, acc[i].posenc_err,
                 i + 1 < acc.size() ? "," : "");
  std::fprintf(f, "  ],\n  \"timesteps\": [\n");
  for (size_t i = 0; i < steps.size(); ++i) {
    const TimedSteps &t = steps[i];
    std::fprintf(f,
                 "    {\"dim\": %d, \"n\": %lld, \"path\": \"%s\", \"threads\": %d, \"ggml\": %s, \"posenc\": %s}%s\n",
                 t.dim, (long long)t.n, t.path.c_str(), t.threads, json_times(t.ggml).c_str(),
                 json_times(t.posenc).c_str(), i + 1 < steps.size() ? "," : "");
  }
  std::fprintf(f, "  ],\n  \"timestep_accuracy\": [\n");
  for (size_t i = 0; i < step_acc.size(); ++i)
    std::fprintf(f, "    {\"t\": %.17g, \"dim\": %d, \"ggml\": %.6e, \"posenc\": %.6e, \"ggml_vs_posenc\": %.6e}%s\n",
                 step_acc[i].t, step_acc[i].dim, step_acc[i].ggml_err, step_acc[i].posenc_err,
                 step_acc[i].ggml_vs_posenc, i + 1 < step_acc.size() ? "," : "");
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  if (g_backend) ggml_backend_free(g_backend);
  ggml_backend_free(cpu);
  return 0;
}
