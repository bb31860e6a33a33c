// posenc_ggml_timestep_embedding (posenc/ggml.h) against ggml_timestep_embedding:
// - ggml's acceptance criterion: test-backend-ops' timestep_embedding case (ggml d99724f2, make_test_cases_eval:
//   test_timestep_embedding(), F32 timesteps ne {2, 1, 1, 1} uniform in [-1, 1], dim 320, max_period 10000; its
//   only one) and more shapes (odd dims, dims 1 to 3, larger max_period, diffusion timesteps in [0, 1000)),
//   posenc's operation against ggml's CPU operation: the same shape and type, no NaN, infinities only where both
//   have them, and the normalised mean squared error as test-backend-ops computes it (nmse(backend under test,
//   CPU)) at most 1e-7;
// - the same bytes on 1, 2, 3 and 4 threads, and those of posenc_timesteps_f32 with posenc::spec::ggml_timestep
//   at the float timesteps converted to double, on every posenc path (fractional, negative, 1e6 + 0.5, the
//   largest float below 2^31), with nothing left of the NaN sentinel the result was filled with;
// - at those timesteps, the MPFR reference (tests/support/reference.hpp: each element correctly rounded), and
//   the layout (cos in column j, sin in column j + dim / 2, an odd dim's last column +0.0);
// - a graph built in a no_alloc context, allocated by ggml-alloc and computed twice by the CPU backend;
// - the refusals, through ggml's abort in a child process.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-cpu.h"
#include "ggml.h"
#include "ggml_test_util.hpp"
#include "posenc/ggml.h"
#include "posenc/posenc.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"

namespace {

constexpr double kMaxNmse = 1e-7;  // test_case::max_nmse_err()

using ggml_test::aborts;
using ggml_test::uniform;

// test-backend-ops' nmse: a is the backend under test, b the CPU backend's result.
double nmse(const float *a, const float *b, size_t n) {
  double mse_a_b = 0.0, mse_a_0 = 0.0;
  for (size_t i = 0; i < n; i++) {
    const float a_i = a[i], b_i = b[i];
    mse_a_b += (a_i - b_i) * (a_i - b_i);
    mse_a_0 += a_i * a_i;
  }
  return mse_a_b / mse_a_0;
}

bool isinf_or_max(float f) { return std::isinf(f) || f == 65504.0f || f == -65504.0f; }

posenc_spec spec_of(int dim, int max_period) { return posenc::spec::ggml_timestep(dim, double(max_period)).c_spec(); }

// A context with room for a few results of dim x n.
ggml_context *context(int64_t dim, int64_t n, int results) {
  ggml_init_params params = {size_t(results) * size_t(dim * n + n) * sizeof(float) + (1 << 20) +
                                 32 * ggml_tensor_overhead() + 16 * ggml_graph_overhead(),
                             nullptr, false};
  return ggml_init(params);
}

void compute(ggml_context *ctx, ggml_tensor *t, int threads) {
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, t);
  REQUIRE(ggml_graph_compute_with_ctx(ctx, gf, threads) == GGML_STATUS_SUCCESS);
}

std::vector<float> values(const ggml_tensor *t) {
  const float *p = static_cast<const float *>(t->data);
  return std::vector<float>(p, p + ggml_nelements(t));
}

// posenc's operation on ts with the result first filled with NaN (a sentinel every element must replace).
std::vector<float> posenc_op(ggml_context *ctx, ggml_tensor *ts, int dim, int max_period, int threads) {
  ggml_tensor *out = posenc_ggml_timestep_embedding(ctx, ts, dim, max_period);
  REQUIRE(out->type == GGML_TYPE_F32);
  REQUIRE((out->ne[0] == dim && out->ne[1] == ts->ne[0] && out->ne[2] == 1 && out->ne[3] == 1));
  std::memset(out->data, 0xff, ggml_nbytes(out));
  compute(ctx, out, threads);
  return values(out);
}

// posenc_timesteps_f32 at the timesteps as doubles.
std::vector<float> direct(const ggml_tensor *ts, int dim, int max_period) {
  const posenc_spec s = spec_of(dim, max_period);
  std::vector<double> t(size_t(ts->ne[0]));
  for (size_t i = 0; i < t.size(); ++i) t[i] = double(static_cast<const float *>(ts->data)[i]);
  std::vector<float> out(t.size() * size_t(dim), -1.0f);
  REQUIRE(posenc_timesteps_f32(&s, t.data(), int64_t(t.size()), out.data(), dim) == POSENC_OK);
  return out;
}

struct Case {
  std::array<int64_t, 4> ne;  // of the timesteps tensor (ggml reads ne[0] of them)
  int dim, max_period;
  float lo, hi;  // timesteps uniform in [lo, hi)
  const char *what;
};

// test-backend-ops' case first, then more of what ggml accepts.
const std::vector<Case> &cases() {
  static const std::vector<Case> c = {
      {{2, 1, 1, 1}, 320, 10000, -1.0f, 1.0f, "test-backend-ops: test_timestep_embedding()"},
      {{2, 1, 1, 1}, 321, 10000, -1.0f, 1.0f, "odd dim"},
      {{5, 1, 1, 1}, 15, 10000, -1.0f, 1.0f, "odd dim 15"},
      {{3, 1, 1, 1}, 1, 10000, -1.0f, 1.0f, "dim 1: the zero column only"},
      {{3, 1, 1, 1}, 2, 10000, -1.0f, 1.0f, "dim 2"},
      {{3, 1, 1, 1}, 3, 10000, -1.0f, 1.0f, "dim 3"},
      {{2, 1, 1, 1}, 320, 100000, -1.0f, 1.0f, "max_period 1e5"},
      {{2, 1, 1, 1}, 257, 1000000, -1.0f, 1.0f, "max_period 1e6, odd dim"},
      {{2, 1, 1, 1}, 320, 1, -1.0f, 1.0f, "max_period 1"},
      {{64, 1, 1, 1}, 320, 10000, 0.0f, 1000.0f, "SD UNet: 64 timesteps in [0, 1000)"},
      {{64, 1, 1, 1}, 1280, 10000, 0.0f, 1000.0f, "dim 1280, timesteps in [0, 1000)"},
      {{7, 1, 1, 1}, 1281, 10000, 0.0f, 1000.0f, "odd dim 1281, timesteps in [0, 1000)"},
      {{16, 1, 1, 1}, 256, 10000, 0.0f, 1.0f, "flow matching: t in [0, 1)"},
      {{33, 1, 1, 1}, 320, 100000, 0.0f, 1000.0f, "max_period 1e5, timesteps in [0, 1000)"},
      {{2, 3, 1, 1}, 320, 10000, -1.0f, 1.0f, "a 2-D timesteps tensor (ggml reads ne[0] of them)"},
  };
  return c;
}

}  // namespace

TEST_CASE("test-backend-ops' timestep_embedding: posenc's operation within NMSE 1e-7 of ggml's CPU operation",
          "[ggml][timestep]") {
  uint64_t seed = 25;
  double worst = 0.0;
  for (const Case &c : cases()) {
    INFO(c.what << ": ne [" << c.ne[0] << "," << c.ne[1] << "] dim " << c.dim << " max_period " << c.max_period);
    ggml_context *ctx = context(c.dim, c.ne[0] * c.ne[1], 6);
    REQUIRE(ctx != nullptr);
    ggml_tensor *ts = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, c.ne.data());
    for (int64_t i = 0; i < ggml_nelements(ts); ++i) static_cast<float *>(ts->data)[i] = uniform(seed, c.lo, c.hi);
    ggml_tensor *g = ggml_timestep_embedding(ctx, ts, c.dim, c.max_period);
    compute(ctx, g, 2);
    const std::vector<float> fg = values(g), want = direct(ts, c.dim, c.max_period);
    for (int threads : {1, 2, 3, 4}) {
      INFO(threads << " threads");
      const std::vector<float> fp = posenc_op(ctx, ts, c.dim, c.max_period, threads);
      REQUIRE(fp.size() == fg.size());
      size_t bad = 0;
      for (size_t i = 0; i < fp.size(); ++i)
        if (std::isnan(fp[i]) || std::isnan(fg[i]) || isinf_or_max(fp[i]) != isinf_or_max(fg[i])) ++bad;
      REQUIRE(bad == 0);
      if (c.dim == 1) {  // only the zero column: test-backend-ops' NMSE is 0 / 0; the bytes must agree
        REQUIRE(std::memcmp(fp.data(), fg.data(), fp.size() * sizeof(float)) == 0);
      } else {
        const double e = nmse(fp.data(), fg.data(), fp.size());
        INFO("NMSE " << e);
        CHECK(e <= kMaxNmse);
        worst = std::max(worst, e);
      }
      // the bytes of posenc_timesteps_f32, whatever the thread count
      REQUIRE(std::memcmp(fp.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
    ggml_free(ctx);
  }
  std::printf("timestep_embedding: %zu cases x 4 thread counts, max NMSE %.3g (criterion 1e-7)\n", cases().size(),
              worst);
}

TEST_CASE("timestep_embedding: the bytes of posenc_timesteps_f32 on every path, and MPFR's at a few timesteps",
          "[ggml][timestep]") {
  // Fractional, negative, signed zeros, diffusion's and flow matching's, large, the largest float below 2^31.
  const std::vector<float> t = {0.0f,   -0.0f,       1.0f,       0.25f,     999.0f,        999.5f,
                                -3.75f, 1e-8f,       12345.678f, 65504.0f,  1000000.5f,    -1000000.5f,
                                2.5e8f, 16777215.0f, 1.234e-3f,  0.999999f, 2147483520.0f, -2147483520.0f};
  const int64_t n = int64_t(t.size());
  for (int dim : {320, 321, 1280, 16}) {
    for (int max_period : {10000, 100000}) {
      INFO("dim " << dim << " max_period " << max_period);
      ggml_context *ctx = context(dim, n, 12);
      ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
      std::memcpy(ts->data, t.data(), t.size() * sizeof(float));
      const std::vector<float> want = direct(ts, dim, max_period);
      for (posenc_isa isa : ref::paths()) {
        INFO("path " << posenc_isa_name(isa));
        ref::on_path(isa, [&] {
          for (int threads : {1, 3}) {
            const std::vector<float> got = posenc_op(ctx, ts, dim, max_period, threads);
            REQUIRE(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
          }
        });
      }
      // MPFR: every element correctly rounded from the exact value at the float timestep (dim 320 and 321).
      if (dim == 320 || dim == 321) {
        const posenc_spec s = spec_of(dim, max_period);
        std::vector<float> row(static_cast<size_t>(dim));
        for (int64_t i = 0; i < n; ++i) {
          ref::exact_row_real(s, double(t[size_t(i)]), row.data());
          INFO("t " << t[size_t(i)]);
          REQUIRE(std::memcmp(&want[size_t(i * dim)], row.data(), row.size() * sizeof(float)) == 0);
        }
        // the layout: cos in column j, sin in column j + dim / 2, and an odd dim's last column +0.0
        const float *r = &want[size_t(5 * dim)];  // t = 999.5
        const double w1 = std::pow(double(max_period), -1.0 / double(dim / 2));
        CHECK(std::fabs(r[0] - std::cos(999.5)) < 1e-7);
        CHECK(std::fabs(r[dim / 2] - std::sin(999.5)) < 1e-7);
        CHECK(std::fabs(r[1] - std::cos(999.5 * w1)) < 1e-7);
        CHECK(std::fabs(r[dim / 2 + 1] - std::sin(999.5 * w1)) < 1e-7);
        if (dim % 2) CHECK(ref::bits(r[dim - 1]) == 0u);
      }
      ggml_free(ctx);
    }
  }
}

TEST_CASE("timestep_embedding: a no_alloc graph allocated by ggml-alloc, computed twice by the CPU backend",
          "[ggml][timestep]") {
  // As stable-diffusion.cpp does: the building context holds no data; dim and max_period live in op_params.
  ggml_init_params params = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
  ggml_set_input(ts);
  ggml_tensor *emb = posenc_ggml_timestep_embedding(ctx, ts, 321, 10000);
  ggml_tensor *out = ggml_scale(ctx, emb, 1.0f);  // a consumer, so that emb is an intermediate the allocator places
  ggml_test::AllocatedGraph graph(ctx, out, 2);
  const posenc_spec s = spec_of(321, 10000);
  for (const std::vector<float> &t : {std::vector<float>{999.0f, 999.5f, 0.25f, 1000000.5f, -3.0f},
                                      std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 5.0f}}) {
    ggml_backend_tensor_set(ts, t.data(), 0, t.size() * sizeof(float));
    graph.compute();
    std::vector<float> got(size_t(ggml_nelements(out))), want(got.size());
    ggml_backend_tensor_get(out, got.data(), 0, got.size() * sizeof(float));
    const std::vector<double> td(t.begin(), t.end());
    REQUIRE(posenc_timesteps_f32(&s, td.data(), int64_t(td.size()), want.data(), 321) == POSENC_OK);
    REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
  ggml_free(ctx);
}

TEST_CASE("timestep_embedding: refusals through ggml's abort", "[ggml][timestep]") {
  ggml_context *ctx = context(320, 8, 4);
  ggml_tensor *ts = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
  for (int i = 0; i < 4; ++i) static_cast<float *>(ts->data)[i] = float(i);
  ggml_tensor *ts16 = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4);
  ggml_tensor *strided = ggml_view_1d(ctx, ts, 2, 0);
  strided->nb[0] = 8;
  CHECK(aborts([&] { posenc_ggml_timestep_embedding(ctx, ts16, 320, 10000); }));
  CHECK(aborts([&] { posenc_ggml_timestep_embedding(ctx, strided, 320, 10000); }));
  CHECK(aborts([&] { posenc_ggml_timestep_embedding(ctx, ts, 0, 10000); }));
  CHECK(aborts([&] { posenc_ggml_timestep_embedding(ctx, ts, 320, 0); }));
  CHECK(aborts([&] { posenc_ggml_timestep_embedding(ctx, nullptr, 320, 10000); }));
  // At compute time (one thread: the child of a fork cannot use the parent's OpenMP pool).
  auto run = [&](float bad) {
    return aborts([&] {
      static_cast<float *>(ts->data)[2] = bad;
      ggml_cgraph *gf = ggml_new_graph(ctx);
      ggml_build_forward_expand(gf, posenc_ggml_timestep_embedding(ctx, ts, 320, 10000));
      ggml_graph_compute_with_ctx(ctx, gf, 1);
    });
  };
  CHECK(run(NAN));
  CHECK(run(INFINITY));
  CHECK(run(2147483648.0f));
  CHECK_FALSE(run(2147483520.0f));
  ggml_free(ctx);
}
