// The positions of a vision-language prefill as Qwen2-VL's get_rope_index numbers them, for the multi-axis RoPE
// cases of posenc-bench (cases_rope_axes.cpp) and posenc-count (neon/count.cpp), which must time the same prompt.
#pragma once

#include <cstdint>
#include <vector>

namespace bench {

// n tokens on each of the 3 axes, axis-major: `text` text tokens (every axis at t), an image of side x side merged
// patches (temporal text, height text + row, width text + column), then text from text + side on.
inline std::vector<int64_t> vl_prompt_positions(int64_t n, int64_t text, int64_t side) {
  std::vector<int64_t> row[3];
  for (int64_t t = 0; t < text; ++t)
    for (auto &r : row) r.push_back(t);
  for (int64_t y = 0; y < side; ++y)
    for (int64_t x = 0; x < side; ++x) {
      row[0].push_back(text);
      row[1].push_back(text + y);
      row[2].push_back(text + x);
    }
  for (int64_t p = text + side; int64_t(row[0].size()) < n; ++p)
    for (auto &r : row) r.push_back(p);
  std::vector<int64_t> v;
  for (auto &r : row) v.insert(v.end(), r.begin(), r.begin() + n);
  return v;
}

}  // namespace bench
