// posenc-accuracy's timestep table (issue 25): Stable Diffusion's timestep embedding (diffusers
// Timesteps(320, flip_sin_to_cos=True, downscale_freq_shift=0)) at fractional timesteps around 999.5 and
// 1e6 + 0.5, from diffusers' float32 formula, ggml's timestep_embedding and posenc_timesteps_f32 on every
// path, against MPFR.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "accuracy_cells.hpp"

namespace accuracy {

std::vector<Cell> timesteps_accuracy(const std::vector<std::string> &paths);
void write_times_json(FILE *f, const std::vector<Cell> &rows);
bool print_times(const std::vector<Cell> &rows);  // false when a posenc path is not correctly rounded

}  // namespace accuracy
