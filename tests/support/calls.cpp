#include "calls.hpp"

#include <cstring>

namespace ref {

const Kernel kAllKernels[15] = {
    Kernel::kTableF32,      Kernel::kTableBF16,    Kernel::kTableF16,        Kernel::kRowsF32,
    Kernel::kRowsBF16,      Kernel::kRowsF16,      Kernel::kAddF32,          Kernel::kEmbedF32,
    Kernel::kEmbedBF16,     Kernel::kEmbedF16,     Kernel::kEmbedLearnedF32, Kernel::kTimestepsF32,
    Kernel::kTimestepsBF16, Kernel::kTimestepsF16, Kernel::kTimestepsAddF32,
};

const KernelTraits &traits(Kernel k) {
  // name, has_spec, positions_required, positions_optional, has_activations, has_table, has_pos_table,
  // in_size, out_size, times
  static const KernelTraits kTable[] = {
      {"table_f32", true, false, false, false, false, false, 0, 4, false},
      {"table_bf16", true, false, false, false, false, false, 0, 2, false},
      {"table_f16", true, false, false, false, false, false, 0, 2, false},
      {"rows_f32", true, true, false, false, false, false, 0, 4, false},
      {"rows_bf16", true, true, false, false, false, false, 0, 2, false},
      {"rows_f16", true, true, false, false, false, false, 0, 2, false},
      {"add_f32", true, false, true, true, false, false, 4, 4, false},
      {"embed_f32", true, false, true, false, true, false, 4, 4, false},
      {"embed_bf16", true, false, true, false, true, false, 2, 4, false},
      {"embed_f16", true, false, true, false, true, false, 2, 4, false},
      {"embed_learned_f32", false, false, true, false, true, true, 4, 4, false},
      {"timesteps_f32", true, false, false, false, false, false, 0, 4, true},
      {"timesteps_bf16", true, false, false, false, false, false, 0, 2, true},
      {"timesteps_f16", true, false, false, false, false, false, 0, 2, true},
      {"timesteps_add_f32", true, false, false, true, false, false, 4, 4, true},
  };
  return kTable[int(k)];
}

namespace {

posenc_status invoke_part(const Call &c) {
  auto *o32 = static_cast<float *>(c.out);
  auto *o16 = static_cast<uint16_t *>(c.out);
  auto *x32 = static_cast<const float *>(c.x);
  auto *x16 = static_cast<const uint16_t *>(c.x);
  const int64_t b = c.begin, e = c.end;
  switch (c.kernel) {
    case Kernel::kTableF32: return posenc_table_f32_part(c.spec, c.first, c.n, o32, c.out_stride, b, e);
    case Kernel::kTableBF16: return posenc_table_bf16_part(c.spec, c.first, c.n, o16, c.out_stride, b, e);
    case Kernel::kTableF16: return posenc_table_f16_part(c.spec, c.first, c.n, o16, c.out_stride, b, e);
    case Kernel::kRowsF32: return posenc_rows_f32_part(c.spec, c.positions, c.n, o32, c.out_stride, b, e);
    case Kernel::kRowsBF16: return posenc_rows_bf16_part(c.spec, c.positions, c.n, o16, c.out_stride, b, e);
    case Kernel::kRowsF16: return posenc_rows_f16_part(c.spec, c.positions, c.n, o16, c.out_stride, b, e);
    case Kernel::kAddF32:
      return posenc_add_f32_part(c.spec, x32, c.x_stride, c.scale, c.positions, c.first, c.n, o32, c.out_stride, b, e);
    case Kernel::kEmbedF32:
      return posenc_embed_f32_part(c.spec, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                                   c.out_stride, b, e);
    case Kernel::kEmbedBF16:
      return posenc_embed_bf16_part(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                                    c.out_stride, b, e);
    case Kernel::kEmbedF16:
      return posenc_embed_f16_part(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                                   c.out_stride, b, e);
    case Kernel::kEmbedLearnedF32:
      return posenc_embed_learned_f32_part(c.d_model, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.pos_table,
                                           c.pos_rows, c.pos_stride, c.positions, c.first, c.n, o32, c.out_stride, b,
                                           e);
    case Kernel::kTimestepsF32: return posenc_timesteps_f32_part(c.spec, c.times, c.n, o32, c.out_stride, b, e);
    case Kernel::kTimestepsBF16: return posenc_timesteps_bf16_part(c.spec, c.times, c.n, o16, c.out_stride, b, e);
    case Kernel::kTimestepsF16: return posenc_timesteps_f16_part(c.spec, c.times, c.n, o16, c.out_stride, b, e);
    case Kernel::kTimestepsAddF32:
      return posenc_timesteps_add_f32_part(c.spec, x32, c.x_stride, c.scale, c.times, c.n, o32, c.out_stride, b, e);
  }
  return posenc_status(7);
}

}  // namespace

posenc_status invoke(const Call &c) {
  if (c.part) return invoke_part(c);
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
      return posenc_embed_f32(c.spec, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                              c.out_stride);
    case Kernel::kEmbedBF16:
      return posenc_embed_bf16(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                               c.out_stride);
    case Kernel::kEmbedF16:
      return posenc_embed_f16(c.spec, x16, c.vocab, c.x_stride, c.tokens, c.scale, c.positions, c.first, c.n, o32,
                              c.out_stride);
    case Kernel::kEmbedLearnedF32:
      return posenc_embed_learned_f32(c.d_model, x32, c.vocab, c.x_stride, c.tokens, c.scale, c.pos_table, c.pos_rows,
                                      c.pos_stride, c.positions, c.first, c.n, o32, c.out_stride);
    case Kernel::kTimestepsF32: return posenc_timesteps_f32(c.spec, c.times, c.n, o32, c.out_stride);
    case Kernel::kTimestepsBF16: return posenc_timesteps_bf16(c.spec, c.times, c.n, o16, c.out_stride);
    case Kernel::kTimestepsF16: return posenc_timesteps_f16(c.spec, c.times, c.n, o16, c.out_stride);
    case Kernel::kTimestepsAddF32:
      return posenc_timesteps_add_f32(c.spec, x32, c.x_stride, c.scale, c.times, c.n, o32, c.out_stride);
  }
  return posenc_status(7);  // not a kernel: never equal to an expected status
}

namespace {

size_t extent(int64_t rows, int64_t stride, int64_t width) { return size_t((rows - 1) * stride + width); }

// Deterministic finite inputs, different in neighbouring elements.
float input_value(size_t i) { return float(int(i * 37 % 101) - 50) / 32.0f; }

void fill_f32(std::vector<unsigned char> &b, size_t salt) {
  for (size_t i = 0; i < b.size() / 4; ++i) {
    const float v = input_value(i + salt);
    std::memcpy(&b[4 * i], &v, 4);
  }
}

}  // namespace

SmallCall::SmallCall(Kernel kernel, const posenc_spec &spec, int variant, int64_t rows) {
  const KernelTraits &t = traits(kernel);
  const int64_t d = spec.d_model;
  call.kernel = kernel;
  call.spec = &spec;
  call.d_model = d;
  call.n = rows;
  call.out_stride = d + variant % 4;
  call.x_stride = d + (variant + 1) % 4;
  call.pos_stride = d + (variant + 2) % 4;
  call.scale = -1.5f;
  const int64_t pos_rows = rows > kPosRows ? rows : kPosRows;
  for (int64_t r = 0; r < rows; ++r) {
    // timesteps: fractional, integer-valued, negative and large ones
    times.push_back(r % 4 == 0   ? 999.5 - double(r)
                    : r % 4 == 1 ? double(r)
                    : r % 4 == 2 ? -0.25 * double(r)
                                 : 1e6 + 0.75);
    tokens.push_back(r == 0 ? 0 : r == 1 ? int32_t(kVocab - 1) : int32_t(r % kVocab));
    if (t.has_pos_table)
      positions.push_back(r == 0 ? pos_rows - 1 : r == 1 ? 0 : r == 2 ? POSENC_PAD : r);
    else
      positions.push_back(r == 0 ? 5 : r == 2 ? POSENC_PAD : 1000 + r);
  }
  call.first = t.has_pos_table ? pos_rows - rows : 5;  // implicit learned rows end at the table's last
  const int64_t x_rows = t.has_activations ? rows : t.has_table ? kVocab : 0;
  x.resize(x_rows ? extent(x_rows, call.x_stride, d) * t.in_size : 0);
  if (t.in_size == 4) {
    fill_f32(x, 0);
  } else {
    for (size_t i = 0; i < x.size() / 2; ++i) {
      const uint16_t h = uint16_t(0x3C00 + (i * 13 % 512));  // finite as binary16 and as bfloat16
      std::memcpy(&x[2 * i], &h, 2);
    }
  }
  pos_table.resize(t.has_pos_table ? extent(pos_rows, call.pos_stride, d) * 4 : 0);
  fill_f32(pos_table, 7);
  const bool explicit_positions = t.positions_required || (t.positions_optional && variant % 2 == 1);
  call.positions = explicit_positions ? positions.data() : nullptr;
  call.times = t.times ? times.data() : nullptr;
  call.x = x.empty() ? nullptr : x.data();
  call.vocab = t.has_table ? kVocab : 0;
  call.tokens = t.has_table ? tokens.data() : nullptr;
  call.pos_table = t.has_pos_table ? reinterpret_cast<const float *>(pos_table.data()) : nullptr;
  call.pos_rows = t.has_pos_table ? pos_rows : 0;
}

size_t SmallCall::out_elements() const { return extent(call.n, call.out_stride, call.d_model); }

std::ptrdiff_t Canary::first_change() const {
  for (size_t k = 0; k < bytes_.size(); ++k)
    if (bytes_[k] != fill_) return std::ptrdiff_t(k);
  return -1;
}

}  // namespace ref
