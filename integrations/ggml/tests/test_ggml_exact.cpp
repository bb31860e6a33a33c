// posenc's ggml operations (posenc/ggml.h) are exact where ggml is not: at any position |p| < 2^31 the result
// is, byte for byte, posenc_rope_qk_f32 (or _f16) on the same rows with the equivalent spec, built here from
// an MPFR evaluation of ggml's formulas (tests/support/ggml_rope_reference.hpp: the frequencies, the magnitude,
// the axis and theta index of every pair). Every mode, F32 and F16, forward and back, freq_factors, YaRN,
// views, in place, 4-D, offsets; the same bytes for every thread count and every posenc path; rows with
// strides that are not whole elements; freq_factors whose content changes between computes; a graph built in
// a no_alloc context, allocated by ggml-alloc and computed by the CPU backend twice (the operation's
// parameters outlive the building); the builders' refusals (ggml's abort, in a child process).
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_test_util.hpp"
#include "posenc/ggml.h"
#include "posenc/posenc.h"
#include "support/ggml_rope_reference.hpp"

namespace {

using namespace ggml_test::modes;
using ggml_test::aborts;
using ggml_test::kMax;
using ggml_test::splitmix;
using ggml_test::uniform;

// ggml's parameters of one operation.
struct Op {
  int mode, n_dims;
  std::array<int, 4> sections;
  float base, fs, ef, af, bf, bs;
  int n_ctx_orig;
  bool forward = true, inplace = false;
  int n_offs = 0;
};

bool multi(const Op &op) { return (op.mode & GGML_ROPE_TYPE_MROPE) != 0; }

// The posenc spec equivalent to op, from MPFR; it owns its frequencies and axis map.
struct Spec {
  posenc_rope rope;
  std::vector<double> freq;
  std::vector<uint8_t> axis;
};
Spec equivalent(const Op &op, const std::vector<float> &factors) {
  const int64_t pairs = op.mode == V ? op.n_dims : op.n_dims / 2;
  ggml_ref::Params p{op.n_dims, pairs, {}, factors, op.base, op.fs, op.ef, op.af, op.bf, op.bs, op.n_ctx_orig};
  Spec s;
  int axes = 1;
  if (multi(op)) {
    const int64_t sec[4] = {op.sections[0], op.sections[1], op.sections[2], op.sections[3]};
    const ggml_ref::PairMap map = ggml_ref::pair_map(op.mode, sec, pairs);
    p.index = map.index;
    for (int a : map.axis) {
      s.axis.push_back(uint8_t(a));
      axes = std::max(axes, a + 1);
    }
  }
  const ggml_ref::Expect e = ggml_ref::reference(p);
  REQUIRE(e.valid);
  s.freq = e.freq;
  s.rope = posenc_rope_default(2 * pairs);
  s.rope.pairs = op.mode == N ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  s.rope.attention_scale = e.m;
  s.rope.axes = axes;
  if (axes == 1) s.axis.clear();
  return s;
}

// The expected result: a's logical rows (contiguous [ne0, ne1, ne2, ne3]) rotated by posenc_rope_qk with the
// equivalent spec, at b's positions (axis-major; negated for the backward operation).
std::vector<uint8_t> expected(const Op &op, const ggml_tensor *a, const std::vector<int32_t> &pos,
                              const std::vector<float> &factors) {
  Spec s = equivalent(op, factors);
  posenc_rope rope = s.rope;
  rope.freq = s.freq.data();
  rope.axis = s.axis.empty() ? nullptr : s.axis.data();
  const int64_t ne0 = a->ne[0], ne1 = a->ne[1], ne2 = a->ne[2], es = int64_t(ggml_element_size(a));
  std::vector<uint8_t> out(size_t(ggml_nelements(a) * es));
  size_t k = 0;
  for (int64_t i3 = 0; i3 < a->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < ne2; ++i2)
      for (int64_t i1 = 0; i1 < ne1; ++i1, k += size_t(ne0 * es))
        std::memcpy(&out[k], static_cast<const char *>(a->data) + i3 * a->nb[3] + i2 * a->nb[2] + i1 * a->nb[1],
                    size_t(ne0 * es));
  std::vector<int64_t> p;
  for (int ax = 0; ax < rope.axes; ++ax)
    for (int64_t t = 0; t < ne2; ++t)
      p.push_back(op.forward ? pos[size_t(ax * ne2 + t)] : -int64_t(pos[size_t(ax * ne2 + t)]));
  for (int64_t i3 = 0; i3 < a->ne[3]; ++i3) {
    uint8_t *base = &out[size_t(i3 * ne0 * ne1 * ne2 * es + op.n_offs * es)];
    const posenc_status st = a->type == GGML_TYPE_F32
                                 ? posenc_rope_qk_f32(&rope, p.data(), 0, ne2, reinterpret_cast<float *>(base), ne1,
                                                      ne0 * ne1, ne0, nullptr, 0, 0, 0)
                                 : posenc_rope_qk_f16(&rope, p.data(), 0, ne2, reinterpret_cast<uint16_t *>(base), ne1,
                                                      ne0 * ne1, ne0, nullptr, 0, 0, 0);
    REQUIRE(st == POSENC_OK);
  }
  return out;
}

std::vector<uint8_t> logical_bytes(const ggml_tensor *t) {
  const size_t es = ggml_element_size(t);
  std::vector<uint8_t> out;
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
        const uint8_t *p = static_cast<const uint8_t *>(t->data) + i3 * t->nb[3] + i2 * t->nb[2] + i1 * t->nb[1];
        out.insert(out.end(), p, p + size_t(t->ne[0]) * es);
      }
  return out;
}

ggml_tensor *build(ggml_context *ctx, const Op &op, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c) {
  int sections[4] = {op.sections[0], op.sections[1], op.sections[2], op.sections[3]};
  ggml_tensor *out;
  if (multi(op))
    out = (op.forward ? (op.inplace ? posenc_ggml_rope_multi_inplace : posenc_ggml_rope_multi)
                      : posenc_ggml_rope_multi_back)(ctx, a, b, c, op.n_dims, sections, op.mode, op.n_ctx_orig, op.base,
                                                     op.fs, op.ef, op.af, op.bf, op.bs);
  else
    out = (op.forward ? (op.inplace ? posenc_ggml_rope_ext_inplace : posenc_ggml_rope_ext) : posenc_ggml_rope_ext_back)(
        ctx, a, b, c, op.n_dims, op.mode, op.n_ctx_orig, op.base, op.fs, op.ef, op.af, op.bf, op.bs);
  if (op.n_offs) out = posenc_ggml_rope_set_offset(out, op.n_offs);
  return out;
}

struct Shape {
  std::array<int64_t, 4> ne;
  int view;  // 0: contiguous; 1: a view of a larger tensor; 2: rows whose stride is not a whole element
};

// One operation on one shape: computed with every thread count in `threads` and on every posenc path, each
// result equal to the expected bytes.
void check(const Op &op, ggml_type type, const Shape &shape, bool with_factors, uint64_t seed,
           std::vector<int> threads = {1, 2, 3, 5}) {
  INFO("mode " << op.mode << " n_dims " << op.n_dims << (type == GGML_TYPE_F32 ? " f32" : " f16")
               << (op.forward ? "" : " back") << (op.inplace ? " in place" : "") << " n_offs " << op.n_offs << " ne ["
               << shape.ne[0] << "," << shape.ne[1] << "," << shape.ne[2] << "," << shape.ne[3] << "] view "
               << shape.view << " fs " << op.fs << " ef " << op.ef << " af " << op.af << " n_ctx_orig " << op.n_ctx_orig
               << (with_factors ? " with factors" : ""));
  const int64_t es = type == GGML_TYPE_F32 ? 4 : 2;
  const int64_t elements = shape.ne[0] * shape.ne[1] * shape.ne[2] * shape.ne[3];
  ggml_init_params params = {size_t(elements * es * 6) + (4 << 20), nullptr, false};
  ggml_context *ctx = ggml_init(params);
  REQUIRE(ctx);
  uint64_t s = seed;
  // The source rows: a new tensor, a view of every other row of a larger one, or rows 1 or 2 bytes apart
  // from whole elements (the operation's staged path).
  auto make_a = [&]() {
    std::array<int64_t, 4> big = shape.ne;
    if (shape.view == 1) big[1] *= 2;
    ggml_tensor *parent;
    ggml_tensor *a;
    if (shape.view == 2) {
      const int64_t row = shape.ne[0] * es + (type == GGML_TYPE_F32 ? 2 : 1);
      parent = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, row * shape.ne[1] * shape.ne[2] * shape.ne[3] + 64);
      a = ggml_view_4d(ctx, parent, shape.ne[0], shape.ne[1], shape.ne[2], shape.ne[3], size_t(row),
                       size_t(row * shape.ne[1]), size_t(row * shape.ne[1] * shape.ne[2]), 0);
      a->type = type;  // a view of bytes, read as rows of `type` (what the staged path copies)
      a->nb[0] = size_t(es);
    } else {
      parent = ggml_new_tensor(ctx, type, 4, big.data());
      a = shape.view == 1 ? ggml_view_4d(ctx, parent, shape.ne[0], shape.ne[1], shape.ne[2], shape.ne[3],
                                         parent->nb[1] * 2, parent->nb[2], parent->nb[3], 0)
                          : parent;
    }
    return std::make_pair(parent, a);
  };
  auto [parent, a] = make_a();
  const int64_t parent_elems = int64_t(ggml_nbytes(parent)) / es;
  for (int64_t i = 0; i < parent_elems; ++i) {
    const float v = uniform(s, -4.0f, 4.0f);
    if (type == GGML_TYPE_F32)
      std::memcpy(static_cast<char *>(parent->data) + 4 * i, &v, 4);
    else {
      const ggml_fp16_t h = ggml_fp32_to_fp16(v);
      std::memcpy(static_cast<char *>(parent->data) + 2 * i, &h, 2);
    }
  }
  const std::vector<uint8_t> original(static_cast<uint8_t *>(parent->data),
                                      static_cast<uint8_t *>(parent->data) + ggml_nbytes(parent));
  // Positions over the whole range |p| < 2^31, with its ends and 0.
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, (multi(op) ? 4 : 1) * shape.ne[2]);
  std::vector<int32_t> pos(size_t(b->ne[0]));
  for (size_t i = 0; i < pos.size(); ++i) {
    const uint64_t r = splitmix(s);
    pos[i] = i % 7 == 0 ? kMax : i % 7 == 1 ? -kMax : i % 7 == 2 ? 0 : int32_t(int64_t(r % 4294967295ull) - kMax);
  }
  std::memcpy(b->data, pos.data(), pos.size() * 4);
  std::vector<float> factors;
  ggml_tensor *c = nullptr;
  if (with_factors) {
    const int64_t pairs = op.mode == V ? op.n_dims : op.n_dims / 2;
    c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, pairs);
    for (int64_t i = 0; i < pairs; ++i) factors.push_back(uniform(s, 0.5f, 2.0f));
    std::memcpy(c->data, factors.data(), factors.size() * 4);
  }
  const std::vector<uint8_t> want = expected(op, a, pos, factors);

  std::vector<posenc_isa> paths;
  for (int i = 0; i < POSENC_ISA_COUNT; ++i)
    if (posenc_isa_available(posenc_isa(i))) paths.push_back(posenc_isa(i));
  const posenc_isa active = posenc_active_isa();
  ggml_tensor *out = build(ctx, op, a, b, c);
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  for (posenc_isa isa : paths)
    for (int nth : threads) {
      INFO("path " << posenc_isa_name(isa) << ", " << nth << " threads");
      std::memcpy(parent->data, original.data(), original.size());  // in place: the same input every time
      REQUIRE(posenc_force_isa(isa) == POSENC_OK);
      REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, nth) == GGML_STATUS_SUCCESS);
      REQUIRE(logical_bytes(out) == want);
      if (!op.inplace) {
        REQUIRE(std::memcmp(parent->data, original.data(), original.size()) == 0);
      }
    }
  REQUIRE(posenc_force_isa(active) == POSENC_OK);
  ggml_free(ctx);
}

const Op kPlain{N, 128, {0, 0, 0, 0}, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};

}  // namespace

TEST_CASE("every mode at positions up to 2^31 - 1: the bytes of posenc_rope_qk with the equivalent spec",
          "[ggml][exact]") {
  struct Params {
    float fs, ef, af, bf, bs;
    int n_ctx_orig;
  };
  const Params plain{1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0},        // llama.cpp without scaling
      backend_ops{1.4245f, 0.7465f, 1.4245f, 1.0f, 1.0f, 0},  // test-backend-ops' grid point
      yarn{0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 32768};            // Qwen2.5 with YaRN x4, as llama.cpp passes
  uint64_t seed = 7;
  for (const Params &p : {plain, backend_ops, yarn})
    for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16})
      for (bool fw : {true, false})
        for (bool ff : {false, true}) {
          auto op = [&](int mode, int n_dims, std::array<int, 4> sections, float base) {
            return Op{mode, n_dims, sections, base, p.fs, p.ef, p.af, p.bf, p.bs, p.n_ctx_orig, fw};
          };
          check(op(N, 128, {0, 0, 0, 0}, 10000.0f), type, {{128, 4, 19, 1}, 0}, ff, seed++, {1, 2});
          check(op(X, 96, {0, 0, 0, 0}, 500000.0f), type, {{128, 3, 17, 2}, 1}, ff, seed++, {1, 2});
          check(op(M, 128, {16, 24, 24, 0}, 1000000.0f), type, {{128, 4, 13, 1}, 0}, ff, seed++, {1, 2});
          check(op(I, 128, {24, 20, 20, 0}, 5000000.0f), type, {{128, 3, 11, 1}, 1}, ff, seed++, {1, 2});
          check(op(V, 40, {20, 20, 0, 0}, 10000.0f), type, {{80, 4, 9, 2}, 0}, ff, seed++, {1, 2});
        }
}

TEST_CASE("the same bytes for any thread count and path: shares that split tokens, 4-D, views, in place, offsets",
          "[ggml][exact]") {
  uint64_t seed = 100;
  const std::vector<int> threads = {1, 2, 3, 4, 5, 7, 16};
  Op op = kPlain;
  // 7 heads, 5 tokens, 3 batch entries: most thread counts cut tokens apart and cross batch entries
  check(op, GGML_TYPE_F32, {{128, 7, 5, 3}, 0}, false, seed++, threads);
  op.mode = X;
  op.inplace = true;
  check(op, GGML_TYPE_F16, {{128, 7, 5, 3}, 1}, true, seed++, threads);
  op.inplace = false;
  op.n_dims = 64;
  op.n_offs = 32;
  check(op, GGML_TYPE_F32, {{128, 5, 6, 2}, 1}, false, seed++, threads);
  op.forward = false;
  check(op, GGML_TYPE_F16, {{128, 5, 6, 1}, 0}, true, seed++, threads);
  Op m{I, 64, {10, 8, 8, 0}, 5000000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};  // IMROPE: 6 leftover pairs on slot 4
  m.n_offs = 16;
  check(m, GGML_TYPE_F32, {{96, 3, 7, 2}, 1}, false, seed++, threads);
  // one token, many heads (a decode step), more threads than rows
  check(kPlain, GGML_TYPE_F32, {{128, 3, 1, 1}, 0}, false, seed++, threads);
  // many tokens (whole blocks and a tail)
  Op n = kPlain;
  n.n_dims = 16;
  check(n, GGML_TYPE_F32, {{16, 2, 300, 1}, 0}, false, seed++, {1, 2, 3});
}

TEST_CASE("rows whose stride is not a whole element go through the staged path, with the same bytes", "[ggml][exact]") {
  uint64_t seed = 200;
  for (ggml_type type : {GGML_TYPE_F32, GGML_TYPE_F16}) {
    Op op = kPlain;
    check(op, type, {{128, 3, 4, 2}, 2}, false, seed++, {1, 2, 3});
    op.mode = M;
    op.sections = {16, 24, 24, 0};
    op.inplace = true;
    check(op, type, {{128, 3, 4, 1}, 2}, true, seed++, {1, 2});
  }
}

TEST_CASE("freq_factors: the frequencies follow the tensor's content from one compute to the next", "[ggml][exact]") {
  ggml_init_params params = {1 << 22, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 2, 3);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
  ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 32);
  uint64_t s = 5;
  for (int64_t i = 0; i < ggml_nelements(a); ++i) static_cast<float *>(a->data)[i] = uniform(s, -1, 1);
  const std::vector<int32_t> pos = {100000, -7, kMax};
  std::memcpy(b->data, pos.data(), 12);
  ggml_tensor *out = posenc_ggml_rope_ext(ctx, a, b, c, 64, X, 4096, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f);
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  const Op op{X, 64, {0, 0, 0, 0}, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 4096};
  for (int round = 0; round < 4; ++round) {
    std::vector<float> f(32);
    for (float &v : f) v = round == 2 ? 1.0f : uniform(s, 0.25f, 4.0f);
    std::memcpy(c->data, f.data(), 128);
    REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS);
    REQUIRE(logical_bytes(out) == expected(op, a, pos, f));
  }
  ggml_free(ctx);
}

TEST_CASE("a graph built in a no_alloc context, allocated by ggml-alloc, computed twice by the CPU backend",
          "[ggml][exact]") {
  // As llama.cpp does: the building context holds no data; the operation's parameters live in posenc's table.
  const Op op{M, 128, {16, 24, 24, 0}, 1000000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 128000};
  ggml_init_params params = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 28, 10);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 40);
  ggml_set_input(a);
  ggml_set_input(b);
  int sections[4] = {16, 24, 24, 0};
  ggml_tensor *q =
      posenc_ggml_rope_multi(ctx, a, b, nullptr, 128, sections, M, 128000, 1000000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
  ggml_tensor *out = ggml_scale(ctx, q, 1.0f);  // a consumer, so that q is an intermediate the allocator places
  ggml_test::AllocatedGraph graph(ctx, out, 2);
  uint64_t s = 9;
  std::vector<float> data(size_t(ggml_nelements(a)));
  std::vector<int32_t> pos(40);
  for (int round = 0; round < 2; ++round) {
    for (float &v : data) v = uniform(s, -1, 1);
    for (int32_t &p : pos) p = int32_t(splitmix(s) % 2000000000u);
    ggml_backend_tensor_set(a, data.data(), 0, data.size() * 4);
    ggml_backend_tensor_set(b, pos.data(), 0, pos.size() * 4);
    graph.compute();
    std::vector<uint8_t> got(ggml_nbytes(out));
    ggml_backend_tensor_get(out, got.data(), 0, got.size());
    // the expected rows, from a host copy of a
    ggml_init_params hp = {size_t(1) << 20, nullptr, false};
    ggml_context *host = ggml_init(hp);
    ggml_tensor *ha = ggml_new_tensor_3d(host, GGML_TYPE_F32, 128, 28, 10);
    std::memcpy(ha->data, data.data(), data.size() * 4);
    REQUIRE(got == expected(op, ha, pos, {}));
    ggml_free(host);
  }
  ggml_free(ctx);
}

TEST_CASE("the builders: results, interned parameters, refusals through ggml's abort", "[ggml][exact]") {
  ggml_init_params params = {1 << 20, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 4, 3);
  ggml_tensor *a16 = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 80, 4, 3, 2);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
  ggml_tensor *b4 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 12);
  ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
  std::memset(b->data, 0, 12);
  std::memset(b4->data, 0, 48);
  int sections[4] = {16, 24, 24, 0};

  ggml_tensor *r = posenc_ggml_rope_ext(ctx, a, b, c, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
  REQUIRE(r->op == GGML_OP_CUSTOM);
  REQUIRE(r->type == a->type);
  REQUIRE(ggml_are_same_shape(r, a));
  REQUIRE(r->src[0] == a);
  REQUIRE(r->src[1] == b);
  REQUIRE(r->src[2] == c);
  REQUIRE(r->data != a->data);
  REQUIRE(posenc_ggml_is_rope(r) == 1);
  REQUIRE(posenc_ggml_is_rope(a) == 0);
  REQUIRE(posenc_ggml_is_rope(ggml_scale(ctx, a, 2.0f)) == 0);
  ggml_tensor *in = posenc_ggml_rope_ext_inplace(ctx, a, b, nullptr, 64, X, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
  REQUIRE(in->data == a->data);
  REQUIRE(in->view_src == a);
  REQUIRE(in->src[0] == a);
  REQUIRE(in->src[1] == b);
  ggml_tensor *v =
      posenc_ggml_rope_multi(ctx, a16, b4, nullptr, 40, sections, V, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
  REQUIRE(v->type == GGML_TYPE_F16);
  REQUIRE(ggml_are_same_shape(v, a16));
  REQUIRE(posenc_ggml_rope_set_offset(in, 32) == in);
  REQUIRE(in->op_params[15] == 32);

  // The same parameters twice: the same interned record (op_params slots 12..13); other parameters: another.
  auto record = [](const ggml_tensor *t) {
    const void *p;
    std::memcpy(&p, &t->op_params[12], sizeof p);
    return p;
  };
  ggml_tensor *r2 = posenc_ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
  REQUIRE(record(r2) == record(r));
  void *userdata;  // and ggml's own userdata field holds it as well
  std::memcpy(&userdata, reinterpret_cast<const char *>(r2->op_params) + 2 * sizeof(void *), sizeof userdata);
  REQUIRE(userdata == record(r));
  REQUIRE(record(posenc_ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 10000.5f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)) !=
          record(r));
  REQUIRE(record(posenc_ggml_rope_ext_back(ctx, a, b, nullptr, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f)) !=
          record(r));

  // Refusals, each where ggml's own builder or operation stops too, or where posenc cannot take the values.
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 128, N, 0, 10000.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 128, N, 0, 10000.0f, -1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 128, 1, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 127, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 130, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b4, c, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, c, 128, M, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f); }));
  CHECK(aborts([&] {  // a NaN YaRN ramp: 0 / 0 in the correction dimension
    posenc_ggml_rope_ext(ctx, a, b, c, 128, N, 0, 10000.0f, 0.5f, 1.0f, 1.0f, 0.0f, 1.0f);
  }));
  CHECK(aborts([&] { posenc_ggml_rope_multi(ctx, a16, b4, nullptr, 32, sections, V, 0, 1e4f, 1, 0, 1, 0, 0); }));
  CHECK(aborts([&] { posenc_ggml_rope_set_offset(ggml_scale(ctx, a, 2.0f), 2); }));
  CHECK(aborts([&] { posenc_ggml_rope_set_offset(v, 2); }));
  CHECK(aborts([&] { posenc_ggml_rope_set_offset(r, 2); }));  // 2 + 128 > ne0
  ggml_tensor *short_c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 63);
  CHECK(aborts([&] { posenc_ggml_rope_ext(ctx, a, b, short_c, 128, N, 0, 10000.0f, 1, 0, 1, 0, 0); }));
  // At compute time: a freq_factor of 0, a position of -2^31 (|p| < 2^31 only). One thread: the child of a
  // fork cannot use the parent's OpenMP pool.
  auto compute = [&](ggml_tensor *t) {
    ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, t);
    ggml_graph_compute_with_ctx(ctx, gf, 1);
  };
  CHECK(aborts([&] {
    std::memset(c->data, 0, 256);
    compute(posenc_ggml_rope_ext(ctx, a, b, c, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f));
  }));
  CHECK(aborts([&] {
    static_cast<int32_t *>(b->data)[1] = INT32_MIN;
    compute(posenc_ggml_rope_ext(ctx, a, b, nullptr, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f));
  }));
  // and the builds that must not abort do not
  CHECK_FALSE(aborts([&] {
    static_cast<int32_t *>(b->data)[1] = INT32_MIN + 1;
    compute(posenc_ggml_rope_ext_back(ctx, a, b, nullptr, 128, N, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f));
  }));
  ggml_free(ctx);
}

TEST_CASE("Qwen3-VL text tokens as llama.cpp writes them, (t, t, t, 0): pairs 61 and 62 are not rotated",
          "[ggml][exact]") {
  // llama.cpp's llm_graph_input_pos::set_input gives a text token of a 4-position model the positions
  // (t, t, t, 0). With IMROPE sections [24, 20, 20, 0] ggml sends pairs 61 and 62 to the fourth slot (not
  // temporal in its sector % 3 rule, past 3 x 20 for height and width), so they turn by 0 for every text token,
  // where HF's apply_interleaved_mrope gives them the temporal position t (docs/rope.md). Twin and ggml agree
  // on that: both leave those pairs' elements (61, 125 and 62, 126 of a NEOX-halves head of 128) unchanged, and
  // rotate pairs 60 and 63 by t.
  const int sections[4] = {24, 20, 20, 0};
  const int64_t heads = 2, tokens = 4;
  const int32_t ts[tokens] = {262144, 1000000, 12345, 2147483000};
  ggml_init_params params = {size_t(8) << 20, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, heads, tokens);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4 * tokens);
  uint64_t s = 31;
  for (int64_t i = 0; i < ggml_nelements(a); ++i) static_cast<float *>(a->data)[i] = uniform(s, -1.0f, 1.0f);
  std::vector<int32_t> pos(size_t(4 * tokens));
  for (int64_t t = 0; t < tokens; ++t)
    for (int ax = 0; ax < 4; ++ax) pos[size_t(ax * tokens + t)] = ax < 3 ? ts[t] : 0;
  std::memcpy(b->data, pos.data(), pos.size() * 4);
  int sec[4] = {sections[0], sections[1], sections[2], sections[3]};
  ggml_tensor *twin = posenc_ggml_rope_multi(ctx, a, b, nullptr, 128, sec, I, 0, 5000000.0f, 1, 0, 1, 0, 0);
  ggml_tensor *own = ggml_rope_multi(ctx, a, b, nullptr, 128, sec, I, 0, 5000000.0f, 1, 0, 1, 0, 0);
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, twin);
  ggml_build_forward_expand(gf, own);
  REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS);
  const Op op{I, 128, {24, 20, 20, 0}, 5000000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};
  REQUIRE(logical_bytes(twin) == expected(op, a, pos, {}));
  const float *x = static_cast<const float *>(a->data);
  const float *y = static_cast<const float *>(twin->data);
  const float *g = static_cast<const float *>(own->data);
  for (int64_t r = 0; r < heads * tokens; ++r) {
    INFO("row " << r << ", position " << ts[r / heads]);
    for (int64_t e : {61, 62, 125, 126}) {
      CHECK(std::memcmp(&y[r * 128 + e], &x[r * 128 + e], 4) == 0);  // the twin: turned by 0
      CHECK(std::memcmp(&g[r * 128 + e], &x[r * 128 + e], 4) == 0);  // ggml itself: the same
    }
    for (int64_t e : {60, 63, 124, 127}) CHECK(y[r * 128 + e] != x[r * 128 + e]);  // turned by t
  }
  ggml_free(ctx);
}

TEST_CASE("Gemma 4's proportional layers as llama.cpp builds them: rope_freqs of 1e30 leave pairs still",
          "[ggml][exact]") {
  // llama.cpp's Gemma 4 graph (src/models/gemma4.cpp) rotates a full-attention layer's whole head of 512 as
  // NEOX with freq_factors = the layer's rope_freqs: 1 on the 64 pairs that rotate and a huge factor (1e30)
  // on the 192 that do not. The twin's exact result there is posenc's proportional spec (posenc_rope_init,
  // partial_rotary_factor 0.25; the angles of the still pairs, under 3e-21, round away), byte for byte.
  const int64_t heads = 2, tokens = 5, r = 512;
  const int32_t pos[tokens] = {0, 7, 262143, 100000000, 2147483647};
  ggml_init_params params = {size_t(16) << 20, nullptr, false};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, r, heads, tokens);
  ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, tokens);
  ggml_tensor *c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, r / 2);
  uint64_t s = 41;
  for (int64_t i = 0; i < ggml_nelements(a); ++i) static_cast<float *>(a->data)[i] = uniform(s, -1.0f, 1.0f);
  std::memcpy(b->data, pos, sizeof pos);
  for (int64_t i = 0; i < r / 2; ++i) static_cast<float *>(c->data)[i] = i < 64 ? 1.0f : 1e30f;
  ggml_tensor *twin = posenc_ggml_rope_ext(ctx, a, b, c, int(r), X, 0, 1000000.0f, 1, 0, 1, 0, 0);
  ggml_tensor *own = ggml_rope_ext(ctx, a, b, c, int(r), X, 0, 1000000.0f, 1, 0, 1, 0, 0);
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, twin);
  ggml_build_forward_expand(gf, own);
  REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, 2) == GGML_STATUS_SUCCESS);

  posenc_rope_scaling sc{};
  sc.type = POSENC_ROPE_TYPE_PROPORTIONAL;
  sc.partial_rotary_factor = 0.25;
  std::vector<double> f(size_t(r / 2));
  posenc_rope rope;
  REQUIRE(posenc_rope_init(&rope, r, 1e6, &sc, f.data()) == POSENC_OK);
  std::vector<float> want(static_cast<const float *>(a->data), static_cast<const float *>(a->data) + ggml_nelements(a));
  const int64_t p64[tokens] = {pos[0], pos[1], pos[2], pos[3], pos[4]};
  REQUIRE(posenc_rope_f32(&rope, p64, 0, tokens, want.data(), heads, heads * r, r) == POSENC_OK);
  REQUIRE(std::memcmp(twin->data, want.data(), want.size() * 4) == 0);
  const float *x = static_cast<const float *>(a->data), *g = static_cast<const float *>(own->data);
  for (int64_t row = 0; row < heads * tokens; ++row)
    for (int64_t i = 64; i < r / 2; ++i) {  // ggml leaves them still too
      CHECK(g[row * r + i] == x[row * r + i]);
      CHECK(g[row * r + r / 2 + i] == x[row * r + r / 2 + i]);
    }
  ggml_free(ctx);
}
