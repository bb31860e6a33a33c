// posenc-accuracy's multi-axis RoPE table (issue 22): the cos/sin of Qwen2.5-VL's M-RoPE at long positions,
// from HF's float32 formula, ggml's per-axis theta chains and posenc_rope_cache_f32 on every path, against
// MPFR.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "accuracy_cells.hpp"

namespace accuracy {

// Every posenc path in `paths` and the peers, one cell per (impl, group).
std::vector<Cell> rope_axes_accuracy(const std::vector<std::string> &paths);

// The JSON object's body ("rope_axes": {...}) and the printed table; print returns false when a posenc path
// is not correctly rounded.
void write_axes_json(FILE *f, const std::vector<Cell> &rows);
bool print_axes(const std::vector<Cell> &rows);

}  // namespace accuracy
