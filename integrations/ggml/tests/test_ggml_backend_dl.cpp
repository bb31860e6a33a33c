// posenc's backend as a program without posenc gets it: the module libggml-posenc.so (its path in the
// environment variable POSENC_GGML_BACKEND_SO, set by meson) loaded by ggml's own loader, once through
// GGML_BACKEND_PATH and ggml_backend_load_all() as llama.cpp's llama_backend_init() does, and found again by
// name; then a RoPE node that ggml's scheduler hands to it, in a process that links nothing of posenc (this
// test links ggml alone, so the module's copy of posenc is the only one). Its bytes are checked against the
// exact rotation elsewhere (test_ggml_backend against the twins, exact.py in llama.cpp); here, that the
// module computes the node (its counters), that the result differs from ggml's own where ggml's float32 angle
// is far off (position 2^30), and that both agree to ggml's accuracy at small positions.
#define CATCH_CONFIG_MAIN  // its own main: tests/support/main.cpp calls posenc, which this test must not link
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

using counts_fn = void (*)(uint64_t *);

ggml_backend_reg_t loaded() {
  static ggml_backend_reg_t reg = [] {
    const char *so = std::getenv("POSENC_GGML_BACKEND_SO");
    REQUIRE(so != nullptr);
    ggml_backend_register(ggml_backend_cpu_reg());  // a GGML_BACKEND_DL ggml registers no CPU backend by itself
    setenv("GGML_BACKEND_PATH", so, 1);
    ggml_backend_load_all();
    return ggml_backend_reg_by_name("posenc");
  }();
  return reg;
}

// ggml_rope_ext (NEOX) of 64 tokens x 8 heads x 128 at positions start .. start + 63, scheduled over
// backends (the CPU backend last): the result's floats.
std::vector<float> rope(std::vector<ggml_backend_t> backends, int32_t start) {
  const ggml_init_params params = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 128, 8, 64);
  ggml_tensor *p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 64);
  ggml_set_input(x);
  ggml_set_input(p);
  ggml_tensor *out = ggml_rope_ext(ctx, x, p, nullptr, 128, GGML_ROPE_TYPE_NEOX, 0, 10000.0f, 1, 0, 1, 0, 0);
  ggml_set_output(out);
  ggml_cgraph *gf = ggml_new_graph(ctx);
  ggml_build_forward_expand(gf, out);
  ggml_backend_sched_t sched =
      ggml_backend_sched_new(backends.data(), nullptr, int(backends.size()), GGML_DEFAULT_GRAPH_SIZE, false, true);
  REQUIRE(ggml_backend_sched_alloc_graph(sched, gf));
  std::vector<float> xs(size_t(ggml_nelements(x)));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(float(i) * 0.37f);
  std::vector<int32_t> ps(64);
  for (int32_t t = 0; t < 64; ++t) ps[size_t(t)] = start + t;
  ggml_backend_tensor_set(x, xs.data(), 0, xs.size() * 4);
  ggml_backend_tensor_set(p, ps.data(), 0, ps.size() * 4);
  REQUIRE(ggml_backend_sched_graph_compute(sched, gf) == GGML_STATUS_SUCCESS);
  std::vector<float> r(size_t(ggml_nelements(out)));
  ggml_backend_tensor_get(out, r.data(), 0, r.size() * 4);
  ggml_backend_sched_free(sched);
  ggml_free(ctx);
  return r;
}

double max_abs_diff(const std::vector<float> &a, const std::vector<float> &b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

}  // namespace

TEST_CASE("GGML_BACKEND_PATH: ggml_backend_load_all() loads the module, which computes the RoPE nodes") {
  ggml_backend_reg_t reg = loaded();
  REQUIRE(reg != nullptr);
  REQUIRE(ggml_backend_reg_dev_count(reg) == 1);
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  CHECK(ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_ACCEL);
  CHECK(ggml_backend_dev_buffer_type(dev) == ggml_backend_cpu_buffer_type());
  auto counts = reinterpret_cast<counts_fn>(ggml_backend_reg_get_proc_address(reg, "posenc_ggml_backend_counts"));
  REQUIRE(counts != nullptr);
  ggml_backend_t posenc = ggml_backend_dev_init(dev, nullptr), cpu = ggml_backend_cpu_init();
  REQUIRE((posenc && cpu));
  uint64_t before[5], after[5];
  for (int32_t start : {0, 1 << 30}) {
    INFO("positions from " << start);
    counts(before);
    const std::vector<float> with = rope({posenc, cpu}, start);
    counts(after);
    const std::vector<float> without = rope({cpu}, start);
    CHECK(after[0] == before[0] + 1);
    CHECK(after[4] == before[4]);
    const double d = max_abs_diff(with, without);
    UNSCOPED_INFO("largest |posenc - ggml| " << d);
    if (start == 0)
      CHECK(d < 1e-5);  // ggml is accurate here: both agree to its rounding
    else
      CHECK(d > 0.1);  // ggml's float32 angle at 2^30 is noise; posenc's is exact
  }
  ggml_backend_free(posenc);
  ggml_backend_free(cpu);
}
