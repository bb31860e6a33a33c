// The timestep accuracy table of posenc-accuracy (accuracy_times.hpp). dim 320, max_period 1e4, D = 160,
// cos then sin; 16 timesteps around each centre, a quarter apart (999.5 - 2 .. 999.5 + 1.75, and the same
// around 1e6 + 0.5).
//   diffusers_fp32: exponent = -log(max_period) * arange(half, float32) / half, emb = t[:, None].float() *
//                   exp(exponent) (float32), cat(cos(emb), sin(emb)) (flip_sin_to_cos)
//   ggml:           freq = expf(-logf(max_period) * j / half), arg = (float)t * freq, cosf, sinf
#include "accuracy_times.hpp"

#include <cmath>
#include <iterator>

#include "posenc/posenc.h"
#include "support/reference.hpp"

namespace accuracy {
namespace {

constexpr int64_t kDim = 320, kHalf = kDim / 2, kRows = 16;
constexpr double kMaxPeriod = 10000.0;

struct Group {
  const char *label;
  double center;
};
const Group kGroups[] = {{"999.5", 999.5}, {"1e6+0.5", 1e6 + 0.5}};

posenc_spec spec() {
  posenc_spec s = posenc_spec_default(kDim);
  s.layout = POSENC_COS_SIN_HALVES;
  s.base = kMaxPeriod;
  s.freq_denominator = double(kHalf);
  return s;
}

// kRows rows of kDim (cos half, then sin half) of one implementation.
bool rows(const std::string &impl, const std::vector<double> &t, float *out) {
  if (impl == "diffusers_fp32" || impl == "ggml") {
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kHalf; ++j) {
        float arg;
        if (impl == "ggml") {
          const float freq = expf(-logf(float(kMaxPeriod)) * float(j) / float(kHalf));
          arg = float(t[size_t(r)]) * freq;
        } else {  // torch: float32 arange, a float32 exponent, exp in float32, then the float32 product
          const float exponent = -float(std::log(kMaxPeriod)) * float(j) / float(kHalf);
          arg = float(t[size_t(r)]) * expf(exponent);
        }
        out[r * kDim + j] = cosf(arg);
        out[r * kDim + kHalf + j] = sinf(arg);
      }
    return true;
  }
  force_path(impl);
  const posenc_spec s = spec();
  return posenc_timesteps_f32(&s, t.data(), kRows, out, kDim) == POSENC_OK;
}

}  // namespace

std::vector<Cell> timesteps_accuracy(const std::vector<std::string> &paths) {
  const Impls impls = implementations(paths, {"diffusers_fp32", "ggml"});
  const posenc_spec s = spec();
  std::vector<Cell> out;
  for (const Group &g : kGroups) {
    std::vector<double> t;
    for (int64_t r = 0; r < kRows; ++r) t.push_back(g.center - 2.0 + 0.25 * double(r));
    const size_t first = out.size();
    const auto got = run_group(out, impls, Cell{{}, {}, g.label}, size_t(kRows * kDim),
                               [&](const std::string &impl, float *v) { return rows(impl, t, v); });
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kHalf; ++j) {
        ref::Big es, ec;
        ref::exact_pair_real(s, j, t[size_t(r)], es, ec);
        add_pair(&out[first], got, size_t(r * kDim + j), size_t(r * kDim + kHalf + j), ec, es);
      }
  }
  return out;
}

void write_times_json(FILE *f, const std::vector<Cell> &rows) {
  std::fprintf(
      f,
      "  \"timesteps\": {\"model\": \"diffusers Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0)\", "
      "\"dim\": %lld, \"timesteps_per_group\": %lld, \"results\": [\n",
      (long long)kDim, (long long)kRows);
  write_cells(f, rows, [](FILE *o, const Cell &c) { std::fprintf(o, "\"group\": \"%s\", ", c.group); });
}

bool print_times(const std::vector<Cell> &rows) {
  std::printf("\nTimestep embedding (dim %lld, cos first, max_period %g): max abs error (max ULP)\n%-16s",
              (long long)kDim, kMaxPeriod, "impl");
  return print_cells(rows, rows.size() / std::size(kGroups), std::size(kGroups), 16);
}

}  // namespace accuracy
