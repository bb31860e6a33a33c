// Which shapes each kernel runs on: the full report, or --quick (small shapes, for CI, so the report path
// is exercised without spending minutes).
#pragma once

#include <cstdint>
#include <vector>

namespace bench {

struct Shape {
  int64_t d, n;
  int64_t first = 0;  // the first position of a table; a decode step is not position 0, whose sines are
                      // all exactly zero (a case of its own for an exact kernel)
};

// A RoPE shape: n tokens of q_heads query and k_heads key heads of head_dim elements, the first r of each
// rotated (NEOX pairs), q and k being views of a fused QKV buffer [n, q_heads + 2 k_heads, head_dim], as
// vLLM splits it. pos: "prefill" = 0 .. n-1, "decode" = 100000 + t, "scattered" = uniform in [0, 131072)
// (the decode steps of a batch of unrelated sequences within Llama 3.1's 128k context).
struct RopeShape {
  int64_t head_dim, n, r, q_heads, k_heads;
  double base;
  const char *pos;
};

struct Plan {
  std::vector<Shape> table;       // posenc_table_f32 and every table peer
  std::vector<Shape> table_slow;  // the subset on which the slow scalar impls run too
  std::vector<Shape> half;        // posenc_table_bf16 / _f16
  std::vector<Shape> rows;        // posenc_rows_f32, each with packed and scattered positions
  std::vector<Shape> rows_step;   // posenc_rows_f32 with every row at one position (a batch's decode step)
  std::vector<Shape> add;         // posenc_add_f32
  std::vector<Shape> embed;       // embed_f32 / _bf16 / _f16 / learned, n tokens of vocab
  std::vector<Shape> split_table, split_embed;  // the 2-thread row split
  int64_t vocab;
  std::vector<RopeShape> rope;        // posenc_rope_qk_f32 and every RoPE peer
  std::vector<RopeShape> rope_half;   // posenc_rope_qk_bf16 / _f16 and the in-place bound on 16-bit rows
  std::vector<RopeShape> rope_cache;  // posenc_rope_cache_f32 and SLEEF u35 (r = head_dim; heads unused)
  std::vector<RopeShape> rope_axes;   // posenc_rope_qk_f32 with a 3-axis spec and with a one-axis spec
  std::vector<Shape> times;           // posenc_timesteps_f32 (d channels, n timesteps) and ggml's operation
  std::vector<int64_t> rope_real;     // posenc_rope_cache_real_f32, Flux's spec, n tokens at real coordinates
  // one call split over 2 threads through posenc::work (cases_threads.cpp): the targets and the ladders
  std::vector<Shape> threads_table, threads_times, threads_embed;
  std::vector<RopeShape> threads_rope;
};

Plan full_plan();
Plan quick_plan();

}  // namespace bench
