#include "calls.hpp"

namespace ref {

const Kernel kAllKernels[11] = {
    Kernel::kTableF32, Kernel::kTableBF16, Kernel::kTableF16, Kernel::kRowsF32,
    Kernel::kRowsBF16, Kernel::kRowsF16,   Kernel::kAddF32,   Kernel::kEmbedF32,
    Kernel::kEmbedBF16, Kernel::kEmbedF16, Kernel::kEmbedLearnedF32,
};

const KernelTraits &traits(Kernel k) {
  // name, has_spec, positions_required, positions_optional, has_activations, has_table, has_pos_table,
  // in_size, out_size
  static const KernelTraits kTable[] = {
      {"table_f32", true, false, false, false, false, false, 0, 4},
      {"table_bf16", true, false, false, false, false, false, 0, 2},
      {"table_f16", true, false, false, false, false, false, 0, 2},
      {"rows_f32", true, true, false, false, false, false, 0, 4},
      {"rows_bf16", true, true, false, false, false, false, 0, 2},
      {"rows_f16", true, true, false, false, false, false, 0, 2},
      {"add_f32", true, false, true, true, false, false, 4, 4},
      {"embed_f32", true, false, true, false, true, false, 4, 4},
      {"embed_bf16", true, false, true, false, true, false, 2, 4},
      {"embed_f16", true, false, true, false, true, false, 2, 4},
      {"embed_learned_f32", false, false, true, false, true, true, 4, 4},
  };
  return kTable[int(k)];
}

posenc_status invoke(const Call &c) {
  auto *o32 = static_cast<float *>(c.out);
  auto *o16 = static_cast<uint16_t *>(c.out);
  auto *x32 = static_cast<const float *>(c.x);
  auto *x16 = static_cast<const uint16_t *>(c.x);
  switch (c.kernel) {
    case Kernel::kTableF32: return posenc_table_f32(c.spec, c.first, c.n, o32, c.out_stride);
    case Kernel::kTableBF16: return posenc_table_bf16(c.spec, c.first, c.n, o16, c.out_stride);
    case Kernel::kTableF16: return posenc_table_f16(c.spec, c.first, c.n, o16, c.out_stride);
    case Kernel::kRowsF32: return posenc_rows_f32(c.spec, c.positions, c.n, o32, c.out_stride);
    case Kernel::kRowsBF16: return posenc_rows_bf16(c.spec, c.positions, c.n, o16, c.out_stride);
    case Kernel::kRowsF16: return posenc_rows_f16(c.spec, c.positions, c.n, o16, c.out_stride);
    case Kernel::kAddF32:
      return posenc_add_f32(c.spec, x32, c.x_stride, c.scale, c.positions, c.first, c.n, o32, c.out_stride);
    case Kernel::kEmbedF32:
      return posenc_embed_f32(c.spec, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n,
                              o32, c.out_stride);
    case Kernel::kEmbedBF16:
      return posenc_embed_bf16(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first,
                               c.n, o32, c.out_stride);
    case Kernel::kEmbedF16:
      return posenc_embed_f16(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n,
                              o32, c.out_stride);
    case Kernel::kEmbedLearnedF32:
      return posenc_embed_learned_f32(c.d_model, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.pos_table,
                                      c.pos_rows, c.pos_stride, c.positions, c.first, c.n, o32, c.out_stride);
  }
  return posenc_status(-1);  // not a kernel: never equal to an expected status
}

std::ptrdiff_t Canary::first_change() const {
  for (size_t k = 0; k < bytes_.size(); ++k)
    if (bytes_[k] != fill_) return std::ptrdiff_t(k);
  return -1;
}

}  // namespace ref
