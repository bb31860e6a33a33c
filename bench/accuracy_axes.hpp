// posenc-accuracy's multi-axis RoPE table (issue 22): the cos/sin of Qwen2.5-VL's M-RoPE at long positions,
// from HF's float32 formula, ggml's per-axis theta chains and posenc_rope_cache_f32 on every path, against
// MPFR.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace accuracy {

struct AxesRow {
  std::string impl, kind;  // kind: "posenc" or "peer"
  const char *group;
  int64_t center;
  double max_ulp = 0, max_abs = 0;
  int64_t count = 0;
  bool measured = true;
};

// Every posenc path in `paths` and the peers, one row per (impl, group).
std::vector<AxesRow> rope_axes_accuracy(const std::vector<std::string> &paths);

// The JSON object's body ("rope_axes": {...}) and the printed table; print returns false when a posenc path
// is not correctly rounded.
void write_axes_json(FILE *f, const std::vector<AxesRow> &rows);
bool print_axes(const std::vector<AxesRow> &rows);

}  // namespace accuracy
