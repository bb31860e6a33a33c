// The registration of every benchmark case, one function per family of kernels.
#pragma once

#include "shapes.hpp"

namespace bench {

void add_table_cases(const Plan &plan);      // table_f32, table_bf16/_f16, rows_f32, their peers and memset
void add_embed_cases(const Plan &plan);      // add_f32, embed_f32/_bf16/_f16, embed_learned_f32, naive, gather
void add_split_cases(const Plan &plan);      // one call's rows split over 2 threads
void add_rope_cases(const Plan &plan);       // rope_qk_f32/_bf16/_f16, rope_cache_f32, their peers and bounds
void add_rope_axes_cases(const Plan &plan);  // rope_qk_f32 with a 3-axis and a one-axis spec
void add_times_cases(const Plan &plan);
void add_rope_real_cases(const Plan &plan);  // rope_cache_real_f32 and diffusers' float64 / float32 paths      //
                                             // timesteps_f32 and ggml's timestep_embedding
void add_threads_cases(const Plan &plan);    // one call through posenc::work, whole and over 2 threads

}  // namespace bench
