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
};

Plan full_plan();
Plan quick_plan();

}  // namespace bench
