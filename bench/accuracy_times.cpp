// The timestep accuracy table of posenc-accuracy (accuracy_times.hpp). dim 320, max_period 1e4, D = 160,
// cos then sin; 16 timesteps around each centre, a quarter apart (999.5 - 2 .. 999.5 + 1.75, and the same
// around 1e6 + 0.5).
//   diffusers_fp32: exponent = -log(max_period) * arange(half, float32) / half, emb = t[:, None].float() *
//                   exp(exponent) (float32), cat(cos(emb), sin(emb)) (flip_sin_to_cos)
//   ggml:           freq = expf(-logf(max_period) * j / half), arg = (float)t * freq, cosf, sinf
#include "accuracy_times.hpp"

#include <algorithm>
#include <cmath>

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
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (impl == posenc_isa_name(posenc_isa(v))) posenc_force_isa(posenc_isa(v));
  const posenc_spec s = spec();
  return posenc_timesteps_f32(&s, t.data(), kRows, out, kDim) == POSENC_OK;
}

}  // namespace

std::vector<TimesRow> timesteps_accuracy(const std::vector<std::string> &paths) {
  std::vector<std::pair<std::string, std::string>> impls;
  for (const std::string &p : paths) impls.push_back({p, "posenc"});
  impls.push_back({"diffusers_fp32", "peer"});
  impls.push_back({"ggml", "peer"});
  const posenc_spec s = spec();
  std::vector<TimesRow> out;
  std::vector<float> v(size_t(kRows * kDim));
  for (const Group &g : kGroups) {
    std::vector<double> t;
    for (int64_t r = 0; r < kRows; ++r) t.push_back(g.center - 2.0 + 0.25 * double(r));
    std::vector<std::vector<float>> got;
    const size_t first = out.size();
    for (const auto &im : impls) {
      TimesRow row{im.first, im.second, g.label};
      row.measured = rows(im.first, t, v.data());
      out.push_back(row);
      got.push_back(v);
    }
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kHalf; ++j) {
        ref::Big es, ec;
        ref::exact_pair_real(s, j, t[size_t(r)], es, ec);
        for (size_t k = 0; k < impls.size(); ++k) {
          TimesRow &row = out[first + k];
          if (!row.measured) continue;
          for (const auto &[val, exact] : {std::pair<float, mpfr_srcptr>{got[k][size_t(r * kDim + j)], ec},
                                           std::pair<float, mpfr_srcptr>{got[k][size_t(r * kDim + kHalf + j)], es}}) {
            row.max_ulp = std::max(row.max_ulp, ref::ulp_error(val, exact));
            row.max_abs = std::max(row.max_abs, std::fabs(mpfr_get_d(exact, MPFR_RNDN) - double(val)));
            row.count += 1;
          }
        }
      }
  }
  return out;
}

void write_times_json(FILE *f, const std::vector<TimesRow> &rows) {
  std::fprintf(f,
               "  \"timesteps\": {\"model\": \"diffusers Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0)\", "
               "\"dim\": %lld, \"timesteps_per_group\": %lld, \"results\": [\n",
               (long long)kDim, (long long)kRows);
  const char *sep = "";
  for (const TimesRow &r : rows) {
    if (!r.measured) continue;
    std::fprintf(f,
                 "%s    {\"impl\": \"%s\", \"kind\": \"%s\", \"group\": \"%s\", \"max_ulp\": %.6g, \"max_abs\": %.6g, "
                 "\"count\": %lld}",
                 sep, r.impl.c_str(), r.kind.c_str(), r.group, r.max_ulp, r.max_abs, (long long)r.count);
    sep = ",\n";
  }
  std::fprintf(f, "\n  ]}");
}

bool print_times(const std::vector<TimesRow> &rows) {
  std::printf("\nTimestep embedding (dim %lld, cos first, max_period %g): max abs error (max ULP)\n%-16s",
              (long long)kDim, kMaxPeriod, "impl");
  const size_t groups = sizeof kGroups / sizeof kGroups[0], per_group = rows.size() / groups;
  for (const Group &g : kGroups) std::printf(" %20s", g.label);
  std::printf("\n");
  bool ok = true;
  for (size_t k = 0; k < per_group; ++k) {
    std::printf("%-16s", rows[k].impl.c_str());
    for (size_t g = 0; g < groups; ++g) {
      const TimesRow &r = rows[g * per_group + k];
      if (!r.measured) {
        std::printf(" %20s", "-");
        continue;
      }
      std::printf(" %11.3g (%6.3g)", r.max_abs, r.max_ulp);
      ok = ok && !(r.kind == "posenc" && r.max_ulp > 0.5);
    }
    std::printf("\n");
  }
  return ok;
}

}  // namespace accuracy
