#include "shapes.hpp"

namespace bench {

// Table shapes: for each d in {64, 512, 1024, 4096, 8192}, 1 MiB of output (cache-resident), and
// 128 MiB (beyond the 105 MiB L3 of the reference machine; d = 64 stops at 131072 positions, 32 MiB);
// positions from 1 to 131072 at d = 64; a decode step (1 position: 1000, and 0) at d = 512; the shapes the
// issues set targets on (512 x 2048, 8192 x 4096). Rows: packed and scattered positions, and the decode
// step of a batch or beam of 32 (every row at position 1000).
Plan full_plan() {
  Plan p;
  p.table = {{64, 4096},   {512, 512},    {1024, 256},    {4096, 64},   {8192, 32},    {64, 131072},
             {512, 65536}, {1024, 32768}, {4096, 8192},   {8192, 4096}, {64, 1, 1000}, {64, 64},
             {64, 1024},   {64, 16384},   {512, 1, 1000}, {512, 1},     {512, 2048}};
  p.table_slow = {{64, 4096}, {512, 512}, {1024, 256}, {4096, 64},  {8192, 32},
                  {64, 1},    {64, 64},   {512, 1},    {512, 2048}, {8192, 4096}};
  p.half = {{1024, 256}, {512, 2048}, {8192, 4096}};
  p.rows = {{512, 2048}, {4096, 2048}};
  p.rows_step = {{512, 32}, {4096, 32}};
  p.add = {{1024, 2048}, {4096, 8192}};
  p.embed = {{512, 2048}, {1024, 2048}, {4096, 8192}};
  p.split_table = {{512, 2048}, {8192, 4096}};
  p.split_embed = {{1024, 2048}, {4096, 8192}};
  p.vocab = 32000;
  // RoPE (issue 15): Llama-3-8B (head 128, 32 q + 8 k heads, base 5e5) prefilling 2048 tokens, one decode
  // step at position 100000, a batch of 32 decode steps at scattered positions; Pythia-6.9B / GPT-NeoX
  // partial rotary (r = 32 of a 128 head, 32 + 32 heads, base 1e4).
  const RopeShape prefill{128, 2048, 128, 32, 8, 5e5, "prefill"}, decode{128, 1, 128, 32, 8, 5e5, "decode"},
      batch{128, 32, 128, 32, 8, 5e5, "scattered"}, neox{128, 2048, 32, 32, 32, 1e4, "prefill"};
  p.rope = {prefill, decode, batch, neox};
  p.rope_half = {prefill, batch};
  p.rope_cache = {{128, 2048, 128, 0, 0, 5e5, "prefill"}, {128, 32, 128, 0, 0, 5e5, "scattered"}};
  // multi-axis (issue 22): Qwen2.5-VL-7B (head 128, 28 q + 4 kv heads, base 1e6), a 2048-token prompt with a
  // 1600-token image, and one decode token
  p.rope_axes = {{128, 2048, 128, 28, 4, 1e6, "vl"}, {128, 1, 128, 28, 4, 1e6, "decode"}};
  // timestep embeddings (issue 25): a batch of 1024 timesteps at SD 1.x's 320 and SDXL's / Flux's 1280
  p.times = {{320, 1024}, {1280, 1024}};
  // RoPE at real-valued positions (issue 33): a CogVideoX-sized grid's tokens with real coordinates
  p.rope_real = {4608};
  // split over threads (issue 26): the targets, table 8192 x 1024 and the Llama-3-8B prefill, and ladders
  // of sizes around where a second thread starts to pay (docs/threads.md)
  p.threads_table = {{1024, 8192}, {512, 65}, {512, 130}, {512, 260}, {512, 520}, {512, 1040},
                     {512, 2080},  {64, 520}, {64, 2080}, {64, 8320}, {64, 33280}};
  p.threads_times = {{320, 4}, {320, 16}, {320, 64}, {320, 256}, {320, 1024}};
  p.threads_embed = {{512, 65}, {512, 260}, {512, 1040}, {512, 4160}, {4096, 8192}};
  p.threads_rope = {prefill};
  for (int64_t n : {1, 4, 16, 65, 130, 260}) p.threads_rope.push_back({128, n, 128, 32, 8, 5e5, "prefill"});
  return p;
}

Plan quick_plan() {
  Plan p;
  p.table = {{64, 1, 1000}, {64, 256}, {512, 64}};
  p.table_slow = p.table;
  p.half = {{512, 64}};
  p.rows = {{512, 64}};
  p.rows_step = {{512, 8}};
  p.add = {{512, 64}};
  p.embed = {{512, 64}};
  p.split_table = {{512, 64}};
  p.split_embed = {{512, 64}};
  p.vocab = 1000;
  const RopeShape prefill{128, 64, 128, 32, 8, 5e5, "prefill"}, decode{128, 1, 128, 32, 8, 5e5, "decode"},
      batch{128, 8, 128, 32, 8, 5e5, "scattered"}, neox{128, 64, 32, 32, 32, 1e4, "prefill"};
  p.rope = {prefill, decode, batch, neox};
  p.rope_half = {prefill};
  p.rope_cache = {{128, 64, 128, 0, 0, 5e5, "prefill"}};
  p.rope_axes = {{128, 64, 128, 28, 4, 1e6, "vl"}, {128, 1, 128, 28, 4, 1e6, "decode"}};
  p.times = {{320, 64}};
  p.rope_real = {256};
  p.threads_table = {{512, 130}};
  p.threads_times = {{320, 16}};
  p.threads_embed = {{512, 65}};
  p.threads_rope = {prefill};
  return p;
}

}  // namespace bench
