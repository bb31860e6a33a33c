// Timestep embeddings (issue 25): posenc_timesteps_f32 on every path against ggml's timestep_embedding
// operation written out here (stable-diffusion.cpp's path: for each timestep and pair, freq = expf(-logf(
// max_period) * j / half), arg = t * freq, cosf and sinf, one thread), on a batch of 1024 timesteps spread
// over [0, 1000) with fractions.
//   timesteps_f32/<impl>/d=<dim>/n=1024
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"

namespace bench {
namespace {

const std::vector<double> &batch(int64_t n) {
  static std::map<int64_t, std::vector<double>> made;
  std::vector<double> &v = made[n];
  if (v.empty()) {
    uint64_t s = 5;
    for (int64_t i = 0; i < n; ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      v.push_back(double(s >> 11) * 0x1p-53 * 1000.0);  // sigma * 1000 style: fractional timesteps
    }
  }
  return v;
}

// ggml's CPU op, as ggml_compute_forward_timestep_embedding_f32 computes it (max_period an int there).
void ggml_timestep(const float *t, int64_t n, int dim, int max_period, float *out) {
  const int half = dim / 2;
  for (int64_t i = 0; i < n; ++i) {
    float *e = out + i * dim;
    for (int64_t j = 0; j < half; ++j) {
      const float freq = expf(-logf(float(max_period)) * float(j) / float(half));
      const float arg = t[i] * freq;
      e[j] = cosf(arg);
      e[j + half] = sinf(arg);
    }
    if (dim % 2 != 0) e[2 * half] = 0.0f;
  }
}

Case times_case(const std::string &impl, const Shape &s) {
  return make_case("timesteps_f32", impl, s.d, s.n, sizeof(float));
}

void add_times(const Shape &s) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, times_case(posenc_isa_name(isa), s));
    c.prepare = [=] {
      posenc_spec spec = posenc_spec_default(s.d);  // ggml's layout: cos then sin, D = half
      spec.layout = POSENC_COS_SIN_HALVES;
      const double *t = batch(s.n).data();
      float *out = buffer_of<float>("out", s.n * s.d);
      return Work([=] { return posenc_timesteps_f32(&spec, t, s.n, out, s.d); });
    };
    add(std::move(c));
  }
  Case c = times_case("ggml", s);
  c.prepare = [=] {
    static std::map<int64_t, std::vector<float>> as_float;
    std::vector<float> &t = as_float[s.n];
    if (t.empty())
      for (double v : batch(s.n)) t.push_back(float(v));  // ggml's timesteps tensor is float32
    const float *tp = t.data();
    float *out = buffer_of<float>("out", s.n * s.d);
    return Work([=] {
      ggml_timestep(tp, s.n, int(s.d), 10000, out);
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

}  // namespace

void add_times_cases(const Plan &plan) {
  for (const Shape &s : plan.times) add_times(s);
}

}  // namespace bench
