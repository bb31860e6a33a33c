// posenc-accuracy's timestep table (issue 25): Stable Diffusion's timestep embedding (diffusers
// Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0)) at fractional timesteps around 999.5 and
// 1e6 + 0.5, from diffusers' float32 formula, ggml's timestep_embedding and posenc_timesteps_f32 on every
// path, against MPFR.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace accuracy {

struct TimesRow {
  std::string impl, kind;  // kind: "posenc" or "peer"
  const char *group;
  double max_ulp = 0, max_abs = 0;
  int64_t count = 0;
  bool measured = true;
};

std::vector<TimesRow> timesteps_accuracy(const std::vector<std::string> &paths);
void write_times_json(FILE *f, const std::vector<TimesRow> &rows);
bool print_times(const std::vector<TimesRow> &rows);  // false when a posenc path is not correctly rounded

}  // namespace accuracy
