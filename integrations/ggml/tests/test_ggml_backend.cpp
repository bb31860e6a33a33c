// posenc's ggml backend (posenc/ggml-backend.h), registered from the archive as a static program would do it
// (ggml_backend_register(posenc_ggml_backend_reg())), in ggml's scheduler before the CPU backend, as
// llama.cpp puts ACCEL devices:
// - the registry, the device (ACCEL, named posenc, ggml's CPU buffer type, every host buffer type), its
//   procedures (ggml_backend_set_n_threads, posenc_ggml_backend_counts);
// - supports_op: true for ggml's ROPE and ROPE_BACK nodes in every mode, F32 and F16, views, in place,
//   freq_factors, YaRN, offsets, and TIMESTEP_EMBEDDING; false for the model loader's all-zero probe, for
//   parameters posenc cannot take and for every other operation;
// - every RoPE node ggml's builders make, computed through the scheduler: the backend computes it (its count),
//   and its bytes are those of posenc's call-site twin (posenc/ggml.h) on the same inputs, which
//   test_ggml_exact checks against MPFR, for 1, 2, 3 and 8 threads; in place when ggml-alloc places the node
//   on its input; the timestep embedding likewise;
// - values only the data shows posenc cannot take (a position of -2^31, a freq_factor of 0, an infinite
//   timestep): that node is computed by ggml's CPU backend, byte for byte ggml's own result.
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_test_util.hpp"
#include "posenc/ggml-backend.h"
#include "posenc/ggml.h"

#ifndef POSENC_GGML_HAS_ROPE_SET_OFFSET
#define POSENC_GGML_HAS_ROPE_SET_OFFSET 0  // meson defines it to 1 where ggml.h declares ggml_rope_set_offset
#endif

namespace {

using namespace ggml_test::modes;
using ggml_test::kMax;
using ggml_test::splitmix;
using ggml_test::uniform;

ggml_backend_reg_t reg() {
  static ggml_backend_reg_t r = [] {
    // ggml's CPU backend, which a static ggml registers by itself and a GGML_BACKEND_DL build only when
    // ggml_backend_load_all() finds it (the backend's fallback looks it up by type)
    ggml_backend_register(ggml_backend_cpu_reg());
    ggml_backend_reg_t p = posenc_ggml_backend_reg();
    REQUIRE(p != nullptr);
    ggml_backend_register(p);
    return p;
  }();
  return r;
}
ggml_backend_dev_t dev() { return ggml_backend_reg_dev_get(reg(), 0); }

std::array<uint64_t, 5> counts() {
  auto fn = reinterpret_cast<posenc_ggml_backend_counts_t>(
      ggml_backend_reg_get_proc_address(reg(), "posenc_ggml_backend_counts"));
  REQUIRE(fn != nullptr);
  std::array<uint64_t, 5> c{};
  fn(c.data());
  return c;
}

void set_threads(ggml_backend_t backend, int n) {
  auto fn = reinterpret_cast<ggml_backend_set_n_threads_t>(ggml_backend_reg_get_proc_address(
      ggml_backend_dev_backend_reg(ggml_backend_get_device(backend)), "ggml_backend_set_n_threads"));
  REQUIRE(fn != nullptr);
  fn(backend, n);
}

// out as the last node of a graph that ggml's scheduler splits over `backends` (the CPU backend last), each on
// `threads` threads, its tensors allocated; compute() once the inputs are set.
struct ScheduledGraph {
  ggml_cgraph *gf = nullptr;
  ggml_backend_sched_t sched = nullptr;
  ScheduledGraph(ggml_context *ctx, ggml_tensor *out, std::vector<ggml_backend_t> &backends, int threads) {
    ggml_set_output(out);
    gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    for (ggml_backend_t be : backends) set_threads(be, threads);
    sched =
        ggml_backend_sched_new(backends.data(), nullptr, int(backends.size()), GGML_DEFAULT_GRAPH_SIZE, false, true);
    REQUIRE(ggml_backend_sched_alloc_graph(sched, gf));
  }
  ScheduledGraph(const ScheduledGraph &) = delete;
  ScheduledGraph &operator=(const ScheduledGraph &) = delete;
  ~ScheduledGraph() { ggml_backend_sched_free(sched); }
  void compute() { REQUIRE(ggml_backend_sched_graph_compute(sched, gf) == GGML_STATUS_SUCCESS); }
};

// One RoPE node, as a program's graph has it.
struct Case {
  ggml_type type;
  std::array<int64_t, 4> ne;
  int n_dims, mode;
  std::array<int, 4> sections;
  bool factors, back, inplace;
  int view;      // 0: a graph input; 1: a view of every other row of a larger input; 2: the output of a
                 // ggml_cont, which ggml-alloc may overwrite in place
  float fs, ef;  // freq_scale, ext_factor (YaRN when ef != 0)
  int n_offs;
};

std::string name(const Case &c) {
  return std::string(c.type == GGML_TYPE_F32 ? "f32" : "f16") + " mode " + std::to_string(c.mode) + " n_dims " +
         std::to_string(c.n_dims) + " ne0 " + std::to_string(c.ne[0]) + (c.factors ? " factors" : "") +
         (c.back ? " back" : "") + (c.inplace ? " inplace" : "") + " view " + std::to_string(c.view) + " ef " +
         std::to_string(c.ef) + " n_offs " + std::to_string(c.n_offs);
}

bool multi(int mode) { return (mode & GGML_ROPE_TYPE_MROPE) != 0; }

enum class Builder { ggml, twin };

// The node of case c over a, b, f, by ggml's builder or posenc's twin.
ggml_tensor *rope(ggml_context *ctx, const Case &c, Builder by, ggml_tensor *a, ggml_tensor *b, ggml_tensor *f) {
  int sec[4] = {c.sections[0], c.sections[1], c.sections[2], c.sections[3]};
  const float base = multi(c.mode) ? 1e6f : 1e4f, af = 1.0f, bf = 32.0f, bs = 1.0f;
  const int orig = 4096;
  const bool twin = by == Builder::twin;
  ggml_tensor *out;
  if (multi(c.mode)) {
    if (c.back)
      out = (twin ? posenc_ggml_rope_multi_back : ggml_rope_multi_back)(ctx, a, b, f, c.n_dims, sec, c.mode, orig, base,
                                                                        c.fs, c.ef, af, bf, bs);
    else if (c.inplace)
      out = (twin ? posenc_ggml_rope_multi_inplace : ggml_rope_multi_inplace)(ctx, a, b, f, c.n_dims, sec, c.mode, orig,
                                                                              base, c.fs, c.ef, af, bf, bs);
    else
      out = (twin ? posenc_ggml_rope_multi : ggml_rope_multi)(ctx, a, b, f, c.n_dims, sec, c.mode, orig, base, c.fs,
                                                              c.ef, af, bf, bs);
  } else {
    if (c.back)
      out = (twin ? posenc_ggml_rope_ext_back : ggml_rope_ext_back)(ctx, a, b, f, c.n_dims, c.mode, orig, base, c.fs,
                                                                    c.ef, af, bf, bs);
    else if (c.inplace)
      out = (twin ? posenc_ggml_rope_ext_inplace : ggml_rope_ext_inplace)(ctx, a, b, f, c.n_dims, c.mode, orig, base,
                                                                          c.fs, c.ef, af, bf, bs);
    else
      out = (twin ? posenc_ggml_rope_ext : ggml_rope_ext)(ctx, a, b, f, c.n_dims, c.mode, orig, base, c.fs, c.ef, af,
                                                          bf, bs);
  }
  if (c.n_offs) {
#if POSENC_GGML_HAS_ROPE_SET_OFFSET
    out = twin ? posenc_ggml_rope_set_offset(out, c.n_offs) : ggml_rope_set_offset(out, c.n_offs);
#else
    FAIL("offsets need ggml_rope_set_offset");
#endif
  }
  return out;
}

// The case's inputs, made once and given to every run.
struct Inputs {
  std::vector<uint8_t> x;  // the parent tensor's bytes
  std::vector<int32_t> pos;
  std::vector<float> factors;
};

Inputs make_inputs(const Case &c, uint64_t seed, int32_t special = 0) {
  Inputs in;
  uint64_t s = seed;
  const int64_t rows = c.ne[1] * (c.view == 1 ? 2 : 1) * c.ne[2] * c.ne[3], n = rows * c.ne[0];
  const size_t es = c.type == GGML_TYPE_F32 ? 4 : 2;
  in.x.resize(size_t(n) * es);
  for (int64_t i = 0; i < n; ++i) {
    const float v = uniform(s, -4.0f, 4.0f);
    if (c.type == GGML_TYPE_F32)
      std::memcpy(&in.x[size_t(i) * 4], &v, 4);
    else {
      const ggml_fp16_t h = ggml_fp32_to_fp16(v);
      std::memcpy(&in.x[size_t(i) * 2], &h, 2);
    }
  }
  in.pos.resize(size_t((multi(c.mode) ? 4 : 1) * c.ne[2]));
  for (size_t i = 0; i < in.pos.size(); ++i) {
    const uint64_t r = splitmix(s);
    in.pos[i] = i % 5 == 0   ? kMax
                : i % 5 == 1 ? -kMax
                : i % 5 == 2 ? int32_t(i)
                             : int32_t(int64_t(r % 4294967295ull) - kMax);
  }
  if (special) in.pos[in.pos.size() / 2] = special;
  if (c.factors) {
    const int64_t pairs = c.mode == V ? c.n_dims : c.n_dims / 2;
    for (int64_t i = 0; i < pairs; ++i) in.factors.push_back(uniform(s, 0.5f, 8.0f));
  }
  return in;
}

struct Result {
  std::vector<uint8_t> bytes;
  int splits = 0;
  bool in_place = false;  // the node's result shares its input's memory
};

// Case c built by `by` and computed by ggml's scheduler over `backends` (the CPU backend last), `threads`
// threads for every backend: the node's logical bytes.
Result run(const Case &c, Builder by, const Inputs &in, std::vector<ggml_backend_t> backends, int threads) {
  const ggml_init_params params = {ggml_tensor_overhead() * 16 + ggml_graph_overhead(), nullptr, true};
  ggml_context *ctx = ggml_init(params);
  REQUIRE(ctx);
  std::array<int64_t, 4> big = c.ne;
  if (c.view == 1) big[1] *= 2;
  ggml_tensor *x = ggml_new_tensor(ctx, c.type, 4, big.data());
  ggml_set_input(x);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, int64_t(in.pos.size()));
  ggml_set_input(b);
  ggml_tensor *f = nullptr;
  if (c.factors) {
    f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, int64_t(in.factors.size()));
    ggml_set_input(f);
  }
  ggml_tensor *a = x;
  if (c.view == 1) a = ggml_view_4d(ctx, x, c.ne[0], c.ne[1], c.ne[2], c.ne[3], x->nb[1] * 2, x->nb[2], x->nb[3], 0);
  if (c.view == 2) a = ggml_cont(ctx, x);  // a copy of x, in a tensor ggml-alloc owns
  ggml_tensor *out = rope(ctx, c, by, a, b, f);
  ScheduledGraph graph(ctx, out, backends, threads);
  ggml_backend_tensor_set(x, in.x.data(), 0, in.x.size());
  ggml_backend_tensor_set(b, in.pos.data(), 0, in.pos.size() * 4);
  if (f) ggml_backend_tensor_set(f, in.factors.data(), 0, in.factors.size() * 4);
  graph.compute();
  Result r;
  r.splits = ggml_backend_sched_get_n_splits(graph.sched);
  r.in_place = out->data == a->data;
  const size_t es = ggml_element_size(out);
  std::vector<uint8_t> row(size_t(out->ne[0]) * es);
  for (int64_t i3 = 0; i3 < out->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < out->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < out->ne[1]; ++i1) {
        ggml_backend_tensor_get(out, row.data(), size_t(i1 * out->nb[1] + i2 * out->nb[2] + i3 * out->nb[3]),
                                row.size());
        r.bytes.insert(r.bytes.end(), row.begin(), row.end());
      }
  ggml_free(ctx);
  return r;
}

struct Backends {
  ggml_backend_t posenc = ggml_backend_dev_init(dev(), nullptr);
  ggml_backend_t cpu = ggml_backend_cpu_init();
  Backends() { REQUIRE((posenc && cpu)); }
  ~Backends() {
    ggml_backend_free(posenc);
    ggml_backend_free(cpu);
  }
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::array<int, 4> none{0, 0, 0, 0}, qwen25{16, 24, 24, 0}, qwen3{24, 20, 20, 0}, vit{16, 16, 0, 0};
  // every mode, forward and back, with and without freq_factors
  struct Shape {
    std::array<int64_t, 4> ne;
    int n_dims, mode;
    std::array<int, 4> sections;
  };
  const Shape shapes[] = {{{128, 8, 9, 1}, 128, N, none},
                          {{128, 8, 9, 1}, 128, X, none},
                          {{128, 6, 7, 1}, 128, M, qwen25},
                          {{128, 6, 7, 1}, 128, I, qwen3},
                          {{64, 4, 5, 1}, 32, V, vit}};
  for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16})
    for (bool back : {false, true})
      for (bool factors : {false, true})
        for (const Shape &h : shapes)
          out.push_back({type, h.ne, h.n_dims, h.mode, h.sections, factors, back, false, 0, 1.0f, 0.0f, 0});
  for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
    // partial rotation (Phi, StableLM), YaRN (DeepSeek, Qwen long contexts), 4-D, views, in place
    out.push_back({type, {80, 4, 5, 1}, 32, X, none, false, false, false, 0, 1.0f, 0.0f, 0});
    out.push_back({type, {128, 4, 70, 1}, 128, N, none, false, false, false, 0, 0.25f, 1.0f, 0});
    out.push_back({type, {64, 3, 5, 3}, 64, X, none, false, false, false, 0, 1.0f, 0.0f, 0});
    out.push_back({type, {128, 4, 6, 1}, 128, N, none, true, false, false, 1, 1.0f, 0.0f, 0});
    out.push_back({type, {128, 4, 6, 1}, 128, X, none, false, false, true, 1, 1.0f, 0.0f, 0});
    out.push_back({type, {128, 4, 6, 1}, 128, N, none, false, false, false, 2, 1.0f, 0.0f, 0});
    out.push_back({type, {128, 4, 6, 1}, 128, M, qwen25, false, false, true, 2, 1.0f, 0.0f, 0});
#if POSENC_GGML_HAS_ROPE_SET_OFFSET
    out.push_back({type, {128, 4, 6, 1}, 32, N, none, false, false, false, 0, 1.0f, 0.0f, 32});
    out.push_back({type, {128, 4, 6, 1}, 48, I, qwen3, false, true, false, 0, 1.0f, 0.0f, 32});
#endif
  }
  return out;
}

}  // namespace

TEST_CASE("the registry, the device and its procedures") {
  REQUIRE(std::string(ggml_backend_reg_name(reg())) == "posenc");
  REQUIRE(ggml_backend_reg_dev_count(reg()) == 1);
  REQUIRE(posenc_ggml_backend_reg() == reg());  // one registry, however often asked
  CHECK(std::string(ggml_backend_dev_name(dev())) == "posenc");
  CHECK(std::string(ggml_backend_dev_description(dev())).find("posenc ") == 0);
  CHECK(ggml_backend_dev_type(dev()) == GGML_BACKEND_DEVICE_TYPE_ACCEL);
  CHECK(ggml_backend_dev_buffer_type(dev()) == ggml_backend_cpu_buffer_type());
  CHECK(ggml_backend_dev_supports_buft(dev(), ggml_backend_cpu_buffer_type()));
  ggml_backend_dev_props props;
  ggml_backend_dev_get_props(dev(), &props);
  CHECK(props.type == GGML_BACKEND_DEVICE_TYPE_ACCEL);
  CHECK(std::string(props.name) == "posenc");
  CHECK(ggml_backend_reg_get_proc_address(reg(), "ggml_backend_set_n_threads") != nullptr);
  CHECK(ggml_backend_reg_get_proc_address(reg(), "posenc_ggml_backend_counts") != nullptr);
  CHECK(ggml_backend_reg_get_proc_address(reg(), "ggml_backend_no_such_procedure") == nullptr);
  // registered: the registry finds the device by type and by name, as llama.cpp enumerates them
  bool found = false;
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) found = found || ggml_backend_dev_get(i) == dev();
  CHECK(found);
  CHECK(ggml_backend_reg_by_name("posenc") == reg());
  Backends be;
  CHECK(std::string(ggml_backend_name(be.posenc)) == "posenc");
  CHECK(ggml_backend_get_default_buffer_type(be.posenc) == ggml_backend_cpu_buffer_type());
}

TEST_CASE("supports_op: RoPE and timestep nodes posenc computes, nothing else") {
  const ggml_init_params params = {ggml_tensor_overhead() * 1024, nullptr, true};
  ggml_context *ctx = ggml_init(params);
  REQUIRE(ctx);
  for (const Case &c : cases()) {
    INFO(name(c));
    ggml_tensor *x = ggml_new_tensor(ctx, c.type, 4, c.ne.data());
    ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (multi(c.mode) ? 4 : 1) * c.ne[2]);
    ggml_tensor *f = c.factors ? ggml_new_tensor_1d(ctx, GGML_TYPE_F32, c.n_dims) : nullptr;
    CHECK(ggml_backend_dev_supports_op(dev(), rope(ctx, c, Builder::ggml, x, b, f)));
    CHECK_FALSE(ggml_backend_dev_supports_op(dev(), rope(ctx, c, Builder::twin, x, b, f)));  // a custom op
  }
  // src/llama-model-loader.cpp, weight_buft_supported: a ROPE of all-zero parameters asks whether a buffer
  // type can hold rope_freqs; the node is never computed, and must stay ggml's
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 32, 512);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 512);
  ggml_tensor *w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, a, b, w, 0, 0, 0, 0, 0, 0, 0, 0, 0)));
  // parameters posenc cannot take: a base of 0, a negative attn_factor, freq_scale 0
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 0.0f, 1, 0, 1, 0, 0)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 1e4f, 1, 0, -1, 0, 0)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 1e4f, 0, 0, 1, 0, 0)));
  CHECK(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 1e4f, 1, 0, 1, 0, 0)));
  // a row whose elements are not contiguous (ggml's own operation asserts it too)
  ggml_tensor *t = ggml_permute(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 32, 128, 512), 1, 0, 2, 3);
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_rope_ext(ctx, t, b, nullptr, 128, N, 0, 1e4f, 1, 0, 1, 0, 0)));
  // other operations stay with the CPU backend
  ggml_tensor *m = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 128, 128);
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_mul_mat(ctx, m, m)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_add(ctx, m, m)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_soft_max(ctx, m)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), ggml_cpy(ctx, m, m)));
  // the timestep embedding
  ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 6);
  CHECK(ggml_backend_dev_supports_op(dev(), ggml_timestep_embedding(ctx, ts, 320, 10000)));
  CHECK(ggml_backend_dev_supports_op(dev(), ggml_timestep_embedding(ctx, ts, 7, 10000)));
  CHECK_FALSE(ggml_backend_dev_supports_op(dev(), posenc_ggml_timestep_embedding(ctx, ts, 320, 10000)));
  ggml_free(ctx);
}

TEST_CASE("supports_op: the nodes that compute nothing, only while unplaced") {
  // yes while neither they nor their view source have a buffer (test-backend-ops asks of every tensor of a case
  // before allocating); no once placed (ggml's scheduler asks only then, to place weights and cache views by
  // their buffer, which must stay the CPU backend's)
  const ggml_init_params params = {ggml_tensor_overhead() * 16, nullptr, true};
  ggml_context *ctx = ggml_init(params);
  REQUIRE(ctx);
  ggml_tensor *leaf = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 8);
  ggml_tensor *views[] = {leaf, ggml_view_1d(ctx, leaf, 32, 0), ggml_reshape_1d(ctx, leaf, 512),
                          ggml_permute(ctx, leaf, 1, 0, 2, 3), ggml_transpose(ctx, leaf)};
  for (ggml_tensor *v : views) CHECK(ggml_backend_dev_supports_op(dev(), v));
  ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
  REQUIRE(buf != nullptr);
  REQUIRE(leaf->buffer != nullptr);
  for (ggml_tensor *v : views) CHECK_FALSE(ggml_backend_dev_supports_op(dev(), v));
  ggml_backend_buffer_free(buf);
  ggml_free(ctx);
}

TEST_CASE("every RoPE node: computed by the backend, the twin's bytes, for every thread count") {
  Backends be;
  uint64_t seed = 1;
  for (const Case &c : cases()) {
    INFO(name(c));
    const Inputs in = make_inputs(c, seed++);
    const Result want = run(c, Builder::twin, in, {be.cpu}, 2);
    for (int threads : {1, 2, 3, 8}) {
      INFO("threads " << threads);
      const std::array<uint64_t, 5> before = counts();
      const Result got = run(c, Builder::ggml, in, {be.posenc, be.cpu}, threads);
      const std::array<uint64_t, 5> after = counts();
      CHECK(after[c.back ? 1 : 0] - before[c.back ? 1 : 0] == 1);
      CHECK(after[4] == before[4]);  // no node went back to the CPU backend
      CHECK(got.bytes == want.bytes);
      // only the RoPE node, and the copy of view 2 on the CPU backend before it
      CHECK(got.splits == (c.view == 2 ? 2 : 1));
    }
  }
}

TEST_CASE("a node ggml-alloc places on its input is rotated in place") {
  Backends be;
  // the output of a ggml_cont that nothing else reads: ggml-alloc reuses its memory for the RoPE
  const Case c{GGML_TYPE_F32, {128, 8, 33, 1}, 128, X, {0, 0, 0, 0}, false, false, false, 2, 1.0f, 0.0f, 0};
  const Inputs in = make_inputs(c, 99);
  const Result want = run(c, Builder::twin, in, {be.cpu}, 1);
  const Result got = run(c, Builder::ggml, in, {be.posenc, be.cpu}, 2);
  CHECK(got.in_place);
  CHECK(got.bytes == want.bytes);
}

TEST_CASE("values posenc cannot take: that node is ggml's CPU operation") {
  Backends be;
  SECTION("a position of -2^31") {
    for (const Case &c :
         {Case{GGML_TYPE_F32, {64, 2, 9, 1}, 64, X, {0, 0, 0, 0}, false, false, false, 0, 1.0f, 0.0f, 0},
          Case{GGML_TYPE_F16, {64, 2, 9, 1}, 64, N, {0, 0, 0, 0}, false, true, true, 0, 1.0f, 0.0f, 0},
          Case{GGML_TYPE_F32, {64, 2, 9, 1}, 64, M, {8, 12, 12, 0}, false, false, false, 0, 1.0f, 0.0f, 0}}) {
      INFO(name(c));
      const Inputs in = make_inputs(c, 7, INT32_MIN);
      const Result want = run(c, Builder::ggml, in, {be.cpu}, 2);
      const std::array<uint64_t, 5> before = counts();
      const Result got = run(c, Builder::ggml, in, {be.posenc, be.cpu}, 2);
      CHECK(counts()[4] == before[4] + 1);
      CHECK(got.bytes == want.bytes);
    }
  }
  SECTION("a freq_factor of 0") {
    const Case c{GGML_TYPE_F32, {64, 2, 9, 1}, 64, N, {0, 0, 0, 0}, true, false, false, 0, 1.0f, 0.0f, 0};
    Inputs in = make_inputs(c, 8);
    in.factors[3] = 0.0f;
    const Result want = run(c, Builder::ggml, in, {be.cpu}, 1);
    const std::array<uint64_t, 5> before = counts();
    const Result got = run(c, Builder::ggml, in, {be.posenc, be.cpu}, 1);
    CHECK(counts()[4] == before[4] + 1);
    CHECK(got.bytes == want.bytes);
  }
}

namespace {
// ggml_timestep_embedding (or the twin) of ts, scheduled over backends: the result's bytes.
std::vector<uint8_t> timesteps(const std::vector<float> &ts, int dim, Builder by, std::vector<ggml_backend_t> backends,
                               int threads) {
  const ggml_init_params params = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, int64_t(ts.size()));
  ggml_set_input(t);
  ggml_tensor *out = by == Builder::twin ? posenc_ggml_timestep_embedding(ctx, t, dim, 10000)
                                         : ggml_timestep_embedding(ctx, t, dim, 10000);
  ScheduledGraph graph(ctx, out, backends, threads);
  ggml_backend_tensor_set(t, ts.data(), 0, ts.size() * 4);
  graph.compute();
  std::vector<uint8_t> bytes(ggml_nbytes(out));
  ggml_backend_tensor_get(out, bytes.data(), 0, bytes.size());
  ggml_free(ctx);
  return bytes;
}
}  // namespace

TEST_CASE("the timestep embedding: the twin's bytes; a timestep of inf is ggml's") {
  Backends be;
  uint64_t s = 5;
  std::vector<float> ts;
  for (int i = 0; i < 300; ++i) ts.push_back(uniform(s, 0.0f, 1000.0f));
  for (int dim : {320, 7}) {
    INFO("dim " << dim);
    const std::vector<uint8_t> want = timesteps(ts, dim, Builder::twin, {be.cpu}, 1);
    for (int threads : {1, 3}) {
      const std::array<uint64_t, 5> before = counts();
      CHECK(timesteps(ts, dim, Builder::ggml, {be.posenc, be.cpu}, threads) == want);
      CHECK(counts()[2] == before[2] + 1);
    }
  }
  ts[17] = INFINITY;
  const std::array<uint64_t, 5> before = counts();
  CHECK(timesteps(ts, 320, Builder::ggml, {be.posenc, be.cpu}, 2) == timesteps(ts, 320, Builder::ggml, {be.cpu}, 2));
  CHECK(counts()[4] == before[4] + 1);
}
