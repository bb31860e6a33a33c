// posenc.hpp: the C++17 face of posenc.h, header-only. It adds no computation: a value type for the spec
// with one named constructor per framework convention and pointer-and-length views (posenc/types.hpp), the
// splitting of a call across threads (posenc/work.hpp), a RoPE value type with one preset per model, one thin
// call per C function, and an exception instead of a status code (the C ABI itself never throws).
//
// The views carry the shapes the C ABI cannot see, so the wrapper checks them before calling: a row
// width that is not d_model (or r/2 for a RoPE cache), a head row shorter than the rotary dimension, a
// token / position list whose length is not the number of output rows or tokens, or multi-axis positions
// whose count of axes is not the RoPE spec's, throws posenc::error with POSENC_ERR_INVALID and writes
// nothing. Everything else is the C function's own check, reported with its own status.
#ifndef POSENC_POSENC_HPP
#define POSENC_POSENC_HPP

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/posenc.h"
#include "posenc/types.hpp"  // error, spec, views, positions
#include "posenc/work.hpp"   // unit_cost, cost_model, work: splitting a call across threads

namespace posenc {

namespace detail {
// The C _part functions of each element type: the calls below are written once over dtype and call the part
// [0, n), which is the whole call (posenc/parts.h).
template <dtype E>
struct parts_of;
#define POSENC_PARTS_OF(E)                                                    \
  template <>                                                                 \
  struct parts_of<dtype::E> {                                                 \
    static constexpr auto table = &posenc_table_##E##_part;                   \
    static constexpr auto rows = &posenc_rows_##E##_part;                     \
    static constexpr auto embed = &posenc_embed_##E##_part;                   \
    static constexpr auto timesteps = &posenc_timesteps_##E##_part;           \
    static constexpr auto rope = &posenc_rope_##E##_part;                     \
    static constexpr auto rope_qk = &posenc_rope_qk_##E##_part;               \
    static constexpr auto rope_copy = &posenc_rope_copy_##E##_part;           \
    static constexpr auto rope_real = &posenc_rope_real_##E##_part;           \
    static constexpr auto rope_qk_real = &posenc_rope_qk_real_##E##_part;     \
    static constexpr auto rope_copy_real = &posenc_rope_copy_real_##E##_part; \
  };
POSENC_PARTS_OF(f32)
POSENC_PARTS_OF(bf16)
POSENC_PARTS_OF(f16)
#undef POSENC_PARTS_OF
}  // namespace detail

/** posenc_table_f32 / _bf16 / _f16 by element type: out.rows() rows for positions first, first + 1, ... */
template <dtype E = dtype::f32>
void table(const spec &s, int64_t first, rows_view<element_t<E>> out) {
  detail::expect(out.cols() == s.d_model());
  check(detail::parts_of<E>::table(&s.c_spec(), first, out.rows(), out.data(), out.stride(), 0, out.rows()));
}
/** posenc_table_f32. */
inline void table_f32(const spec &s, int64_t first, rows_view<float> out) { table<dtype::f32>(s, first, out); }
/** posenc_table_bf16: bfloat16 bit patterns. */
inline void table_bf16(const spec &s, int64_t first, rows_view<uint16_t> out) { table<dtype::bf16>(s, first, out); }
/** posenc_table_f16: IEEE binary16 bit patterns. */
inline void table_f16(const spec &s, int64_t first, rows_view<uint16_t> out) { table<dtype::f16>(s, first, out); }

/** posenc_rows_f32 / _bf16 / _f16 by element type: one row per explicit position. */
template <dtype E = dtype::f32>
void rows(const spec &s, array_view<const int64_t> list, rows_view<element_t<E>> out) {
  detail::expect(out.cols() == s.d_model() && list.size() == out.rows());
  check(detail::parts_of<E>::rows(&s.c_spec(), list.data(), out.rows(), out.data(), out.stride(), 0, out.rows()));
}
/** posenc_rows_f32. */
inline void rows_f32(const spec &s, array_view<const int64_t> list, rows_view<float> out) {
  rows<dtype::f32>(s, list, out);
}
/** posenc_rows_bf16. */
inline void rows_bf16(const spec &s, array_view<const int64_t> list, rows_view<uint16_t> out) {
  rows<dtype::bf16>(s, list, out);
}
/** posenc_rows_f16. */
inline void rows_f16(const spec &s, array_view<const int64_t> list, rows_view<uint16_t> out) {
  rows<dtype::f16>(s, list, out);
}

/** posenc_add_f32: out = fmaf(scale, x, PE); out may be x itself. */
inline void add_f32(const spec &s, rows_view<const float> x, float scale, positions pos, rows_view<float> out) {
  detail::expect(out.cols() == s.d_model() && x.cols() == s.d_model() && x.rows() == out.rows());
  detail::expect_positions(pos, out.rows());
  check(posenc_add_f32(&s.c_spec(), x.data(), x.stride(), scale, pos.list(), pos.first(), out.rows(), out.data(),
                       out.stride()));
}

/** posenc_embed_f32 / _bf16 / _f16 by the embedding table's element type: out = fmaf(scale, table[token], PE),
 *  out float32; the vocabulary is table.rows(). */
template <dtype E = dtype::f32>
void embed(const spec &s, rows_view<const element_t<E>> table, array_view<const int32_t> tokens, float scale,
           positions pos, rows_view<float> out) {
  detail::expect_embed(s, table, tokens, pos, out);
  check(detail::parts_of<E>::embed(&s.c_spec(), table.data(), table.rows(), table.stride(), tokens.data(), scale,
                                   pos.list(), pos.first(), out.rows(), out.data(), out.stride(), 0, out.rows()));
}
/** posenc_embed_f32. */
inline void embed_f32(const spec &s, rows_view<const float> table, array_view<const int32_t> tokens, float scale,
                      positions pos, rows_view<float> out) {
  embed<dtype::f32>(s, table, tokens, scale, pos, out);
}
/** posenc_embed_bf16: a bfloat16 embedding table. */
inline void embed_bf16(const spec &s, rows_view<const uint16_t> table, array_view<const int32_t> tokens, float scale,
                       positions pos, rows_view<float> out) {
  embed<dtype::bf16>(s, table, tokens, scale, pos, out);
}
/** posenc_embed_f16: a binary16 embedding table. */
inline void embed_f16(const spec &s, rows_view<const uint16_t> table, array_view<const int32_t> tokens, float scale,
                      positions pos, rows_view<float> out) {
  embed<dtype::f16>(s, table, tokens, scale, pos, out);
}

/** posenc_embed_learned_f32: out = fmaf(scale, table[token], pos_table[position]); d_model is out.cols(). */
inline void embed_learned_f32(rows_view<const float> table, array_view<const int32_t> tokens, float scale,
                              rows_view<const float> pos_table, positions pos, rows_view<float> out) {
  detail::expect(table.cols() == out.cols() && pos_table.cols() == out.cols() && tokens.size() == out.rows());
  detail::expect_positions(pos, out.rows());
  check(posenc_embed_learned_f32(out.cols(), table.data(), table.rows(), table.stride(), tokens.data(), scale,
                                 pos_table.data(), pos_table.rows(), pos_table.stride(), pos.list(), pos.first(),
                                 out.rows(), out.data(), out.stride()));
}

// ---- Real-valued positions: timestep embeddings (docs/timesteps.md) ------------------------------------

/** posenc_timesteps_f32 / _bf16 / _f16 by element type: row r at the real-valued position t[r] (any finite
 *  double, |t| < 2^31). */
template <dtype E = dtype::f32>
void timesteps(const spec &s, array_view<const double> t, rows_view<element_t<E>> out) {
  detail::expect(out.cols() == s.d_model() && t.size() == out.rows());
  check(detail::parts_of<E>::timesteps(&s.c_spec(), t.data(), out.rows(), out.data(), out.stride(), 0, out.rows()));
}
/** posenc_timesteps_f32. */
inline void timesteps_f32(const spec &s, array_view<const double> t, rows_view<float> out) {
  timesteps<dtype::f32>(s, t, out);
}
/** posenc_timesteps_bf16: bfloat16 bit patterns. */
inline void timesteps_bf16(const spec &s, array_view<const double> t, rows_view<uint16_t> out) {
  timesteps<dtype::bf16>(s, t, out);
}
/** posenc_timesteps_f16: IEEE binary16 bit patterns. */
inline void timesteps_f16(const spec &s, array_view<const double> t, rows_view<uint16_t> out) {
  timesteps<dtype::f16>(s, t, out);
}
/** posenc_timesteps_add_f32: out = fmaf(scale, x, PE(t)) row by row; out may be x itself. */
inline void timesteps_add_f32(const spec &s, rows_view<const float> x, float scale, array_view<const double> t,
                              rows_view<float> out) {
  detail::expect(out.cols() == s.d_model() && x.cols() == s.d_model() && x.rows() == out.rows() &&
                 t.size() == out.rows());
  check(posenc_timesteps_add_f32(&s.c_spec(), x.data(), x.stride(), scale, t.data(), out.rows(), out.data(),
                                 out.stride()));
}

// ---- The same calls as works, to split across threads (posenc::work, docs/threads.md) -------------------
//
// Each builder takes the arguments of the call above of the same name, checks them as that call does (its
// shape checks and the library's check of the whole call, throwing posenc::error and writing nothing), and
// returns a work of out.rows() units that computes nothing until its pieces run.

namespace detail {

// The works of the calls whose f32, bf16 and f16 forms differ only in T and their _part function: each builder
// below checks the views as its call does and returns a work whose pieces run part on their rows.
template <class T>
using table_part = posenc_status (*)(const posenc_spec *, int64_t, int64_t, T *, int64_t, int64_t, int64_t);
template <class T>
using rows_part = posenc_status (*)(const posenc_spec *, const int64_t *, int64_t, T *, int64_t, int64_t, int64_t);
template <class T>
using embed_part = posenc_status (*)(const posenc_spec *, const T *, int64_t, int64_t, const int32_t *, float,
                                     const int64_t *, int64_t, int64_t, float *, int64_t, int64_t, int64_t);
template <class T>
using times_part = posenc_status (*)(const posenc_spec *, const double *, int64_t, T *, int64_t, int64_t, int64_t);

template <class T>
work table_work(const spec &s, int64_t first, rows_view<T> out, table_part<T> part) {
  expect(out.cols() == s.d_model());
  const posenc_spec c = s.c_spec();
  return work_access::make(out.rows(), kBlockGrain, row_cost(s.d_model(), sizeof(T), 0, cycle_costs::kTurned, 0),
                           [c, first, out, part](int64_t b, int64_t e) noexcept {
                             return part(&c, first, out.rows(), out.data(), out.stride(), b, e);
                           });
}
template <class T>
work rows_work(const spec &s, array_view<const int64_t> list, rows_view<T> out, rows_part<T> part) {
  expect(out.cols() == s.d_model() && list.size() == out.rows());
  const posenc_spec c = s.c_spec();
  return work_access::make(out.rows(), kBlockGrain, row_cost(s.d_model(), sizeof(T), 0, cycle_costs::kTurned),
                           [c, list, out, part](int64_t b, int64_t e) noexcept {
                             return part(&c, list.data(), out.rows(), out.data(), out.stride(), b, e);
                           });
}
template <class T>
work embed_work(const spec &s, rows_view<const T> table, array_view<const int32_t> tokens, float scale, positions pos,
                rows_view<float> out, embed_part<T> part) {
  expect_embed(s, table, tokens, pos, out);
  const posenc_spec c = s.c_spec();
  return work_access::make(out.rows(), kBlockGrain, row_cost(s.d_model(), 4, sizeof(T), cycle_costs::kTurned, 12),
                           [c, table, tokens, scale, pos, out, part](int64_t b, int64_t e) noexcept {
                             return part(&c, table.data(), table.rows(), table.stride(), tokens.data(), scale,
                                         pos.list(), pos.first(), out.rows(), out.data(), out.stride(), b, e);
                           });
}
template <class T>
work times_work(const spec &s, array_view<const double> t, rows_view<T> out, times_part<T> part) {
  expect(out.cols() == s.d_model() && t.size() == out.rows());
  const posenc_spec c = s.c_spec();
  return work_access::make(out.rows(), 1, row_cost(s.d_model(), sizeof(T), 0, cycle_costs::kDirect),
                           [c, t, out, part](int64_t b, int64_t e) noexcept {
                             return part(&c, t.data(), out.rows(), out.data(), out.stride(), b, e);
                           });
}

}  // namespace detail

/** The works of the calls written once over the element type: table<E>, rows<E>, embed<E>, timesteps<E>. */
template <dtype E = dtype::f32>
work table_work(const spec &s, int64_t first, rows_view<element_t<E>> out) {
  return detail::table_work(s, first, out, detail::parts_of<E>::table);
}
template <dtype E = dtype::f32>
work rows_work(const spec &s, array_view<const int64_t> list, rows_view<element_t<E>> out) {
  return detail::rows_work(s, list, out, detail::parts_of<E>::rows);
}
template <dtype E = dtype::f32>
work embed_work(const spec &s, rows_view<const element_t<E>> table, array_view<const int32_t> tokens, float scale,
                positions pos, rows_view<float> out) {
  return detail::embed_work(s, table, tokens, scale, pos, out, detail::parts_of<E>::embed);
}
template <dtype E = dtype::f32>
work timesteps_work(const spec &s, array_view<const double> t, rows_view<element_t<E>> out) {
  return detail::times_work(s, t, out, detail::parts_of<E>::timesteps);
}

/** table_f32 as a work. */
inline work table_f32_work(const spec &s, int64_t first, rows_view<float> out) {
  return table_work<dtype::f32>(s, first, out);
}
/** table_bf16 as a work. */
inline work table_bf16_work(const spec &s, int64_t first, rows_view<uint16_t> out) {
  return table_work<dtype::bf16>(s, first, out);
}
/** table_f16 as a work. */
inline work table_f16_work(const spec &s, int64_t first, rows_view<uint16_t> out) {
  return table_work<dtype::f16>(s, first, out);
}

/** rows_f32 as a work. */
inline work rows_f32_work(const spec &s, array_view<const int64_t> list, rows_view<float> out) {
  return rows_work<dtype::f32>(s, list, out);
}
/** rows_bf16 as a work. */
inline work rows_bf16_work(const spec &s, array_view<const int64_t> list, rows_view<uint16_t> out) {
  return rows_work<dtype::bf16>(s, list, out);
}
/** rows_f16 as a work. */
inline work rows_f16_work(const spec &s, array_view<const int64_t> list, rows_view<uint16_t> out) {
  return rows_work<dtype::f16>(s, list, out);
}

/** add_f32 as a work (out may be x itself: each piece reads and writes its own rows). */
inline work add_f32_work(const spec &s, rows_view<const float> x, float scale, positions pos, rows_view<float> out) {
  detail::expect(out.cols() == s.d_model() && x.cols() == s.d_model() && x.rows() == out.rows());
  detail::expect_positions(pos, out.rows());
  const posenc_spec c = s.c_spec();
  return detail::work_access::make(
      out.rows(), detail::kBlockGrain, detail::row_cost(s.d_model(), 4, 4, detail::cycle_costs::kTurned),
      [c, x, scale, pos, out](int64_t b, int64_t e) noexcept {
        return posenc_add_f32_part(&c, x.data(), x.stride(), scale, pos.list(), pos.first(), out.rows(), out.data(),
                                   out.stride(), b, e);
      });
}

/** embed_f32 as a work. */
inline work embed_f32_work(const spec &s, rows_view<const float> table, array_view<const int32_t> tokens, float scale,
                           positions pos, rows_view<float> out) {
  return embed_work<dtype::f32>(s, table, tokens, scale, pos, out);
}
/** embed_bf16 as a work. */
inline work embed_bf16_work(const spec &s, rows_view<const uint16_t> table, array_view<const int32_t> tokens,
                            float scale, positions pos, rows_view<float> out) {
  return embed_work<dtype::bf16>(s, table, tokens, scale, pos, out);
}
/** embed_f16 as a work. */
inline work embed_f16_work(const spec &s, rows_view<const uint16_t> table, array_view<const int32_t> tokens,
                           float scale, positions pos, rows_view<float> out) {
  return embed_work<dtype::f16>(s, table, tokens, scale, pos, out);
}

/** embed_learned_f32 as a work (no blocks: grain 1). */
inline work embed_learned_f32_work(rows_view<const float> table, array_view<const int32_t> tokens, float scale,
                                   rows_view<const float> pos_table, positions pos, rows_view<float> out) {
  detail::expect(table.cols() == out.cols() && pos_table.cols() == out.cols() && tokens.size() == out.rows());
  detail::expect_positions(pos, out.rows());
  unit_cost cost = detail::row_cost(out.cols(), 4, 8, 0.0, 12);  // two rows read (8 bytes per element)
  cost.values = 0;
  return detail::work_access::make(
      out.rows(), 1, cost, [table, tokens, scale, pos_table, pos, out](int64_t b, int64_t e) noexcept {
        return posenc_embed_learned_f32_part(out.cols(), table.data(), table.rows(), table.stride(), tokens.data(),
                                             scale, pos_table.data(), pos_table.rows(), pos_table.stride(), pos.list(),
                                             pos.first(), out.rows(), out.data(), out.stride(), b, e);
      });
}

/** timesteps_f32 as a work (no blocks: grain 1). */
inline work timesteps_f32_work(const spec &s, array_view<const double> t, rows_view<float> out) {
  return timesteps_work<dtype::f32>(s, t, out);
}
/** timesteps_bf16 as a work. */
inline work timesteps_bf16_work(const spec &s, array_view<const double> t, rows_view<uint16_t> out) {
  return timesteps_work<dtype::bf16>(s, t, out);
}
/** timesteps_f16 as a work. */
inline work timesteps_f16_work(const spec &s, array_view<const double> t, rows_view<uint16_t> out) {
  return timesteps_work<dtype::f16>(s, t, out);
}
/** timesteps_add_f32 as a work (out may be x itself). */
inline work timesteps_add_f32_work(const spec &s, rows_view<const float> x, float scale, array_view<const double> t,
                                   rows_view<float> out) {
  detail::expect(out.cols() == s.d_model() && x.cols() == s.d_model() && x.rows() == out.rows() &&
                 t.size() == out.rows());
  const posenc_spec c = s.c_spec();
  return detail::work_access::make(out.rows(), 1, detail::row_cost(s.d_model(), 4, 4, detail::cycle_costs::kDirect),
                                   [c, x, scale, t, out](int64_t b, int64_t e) noexcept {
                                     return posenc_timesteps_add_f32_part(&c, x.data(), x.stride(), scale, t.data(),
                                                                          out.rows(), out.data(), out.stride(), b, e);
                                   });
}

/** fairseq's make_positions for one sequence: real tokens count up from padding_idx + 1, padding tokens get
 *  POSENC_PAD (fairseq zeroes the padding row of its table). Use with spec::fairseq and rows_f32 / embed_f32. */
inline void fairseq_positions(array_view<const int32_t> tokens, int32_t padding_idx, array_view<int64_t> out) {
  detail::expect(out.size() == tokens.size());
  int64_t next = int64_t(padding_idx) + 1;
  for (int64_t r = 0; r < tokens.size(); ++r) out[r] = tokens[r] == padding_idx ? POSENC_PAD : next++;
}

// ---- Rotary position embeddings (RoPE) ------------------------------------------------------------------

/** posenc_rope_pairs as a scoped enum, same values. */
enum class rope_pairs : int {
  halves = POSENC_ROPE_HALVES,          /**< i and i + r/2: GPT-NeoX, HF rotate_half, vLLM is_neox_style */
  interleaved = POSENC_ROPE_INTERLEAVED /**< 2i and 2i + 1: GPT-J, Meta's reference Llama, DeepSeek, ggml mode 0 */
};

/** posenc_rope_type as a scoped enum, same values (Hugging Face's rope_type names; "default" is a keyword). */
enum class rope_type : int {
  default_ = POSENC_ROPE_TYPE_DEFAULT,
  linear = POSENC_ROPE_TYPE_LINEAR,
  dynamic = POSENC_ROPE_TYPE_DYNAMIC,
  yarn = POSENC_ROPE_TYPE_YARN,
  llama3 = POSENC_ROPE_TYPE_LLAMA3,
  longrope = POSENC_ROPE_TYPE_LONGROPE,
  proportional = POSENC_ROPE_TYPE_PROPORTIONAL,
  ntk = POSENC_ROPE_TYPE_NTK, /**< vLLM's names from here on */
  deepseek_yarn = POSENC_ROPE_TYPE_DEEPSEEK_YARN,
  yarn_log = POSENC_ROPE_TYPE_YARN_LOG,
  theta_scale = POSENC_ROPE_TYPE_THETA_SCALE,
  telechat3 = POSENC_ROPE_TYPE_TELECHAT3,
};

/** posenc_rope_layout as a scoped enum, same values: how with_sections assigns pairs to axes. */
enum class rope_layout : int {
  chunked = POSENC_SECTIONS_CHUNKED,         /**< contiguous sections: Qwen2-VL / Qwen2.5-VL, GLM-4V, ggml MROPE */
  interleaved = POSENC_SECTIONS_INTERLEAVED, /**< pair by pair, the rest on axis 0: Qwen3-VL */
  vision = POSENC_SECTIONS_VISION,           /**< chunked, the frequency index restarting per section: vision towers */
  strided = POSENC_SECTIONS_STRIDED,         /**< chunked, section a taking every A-th frequency from a: Pixtral */
  interleaved_4 = POSENC_SECTIONS_INTERLEAVED_4, /**< as interleaved, the rest on a 4th axis: ggml IMROPE */
  alternating = POSENC_SECTIONS_ALTERNATING,     /**< h w h w ... then t: ERNIE-4.5-VL */
  per_axis = POSENC_SECTIONS_PER_AXIS,           /**< chunked, each axis at its own width: Flux, Wan, .. */
  balanced =
      POSENC_SECTIONS_BALANCED /**< each axis spread evenly (three sections: the last pair on axis 0): openPangu-VL */
};

/** A zero-initialised posenc_rope_scaling of that type, the starting point the C header asks for; set the
 *  fields the scheme reads, then pass it to rope::init. */
inline posenc_rope_scaling rope_scaling_of(rope_type type) noexcept {
  posenc_rope_scaling s{};
  s.type = posenc_rope_type(type);
  return s;
}

/** The q or k tensor of a RoPE call: tokens x heads head rows of head_dim elements, the row of token t and
 *  head j at data + t * token_stride + j * head_stride (strides in elements), with named constructors for
 *  the layouts runtimes use. */
template <class T>
class heads_view {
 public:
  heads_view() noexcept = default;
  /** Any strides: token t, head j at data + t * token_stride + j * head_stride. */
  heads_view(T *data, int64_t tokens, int64_t heads, int64_t head_dim, int64_t token_stride,
             int64_t head_stride) noexcept
      : data_(data),
        tokens_(tokens),
        heads_(heads),
        head_dim_(head_dim),
        token_stride_(token_stride),
        head_stride_(head_stride) {}
  /** A view of T is also a view of const T (the source rows of rope::apply_copy). */
  template <class U, class = std::enable_if_t<std::is_same<const U, T>::value>>
  heads_view(const heads_view<U> &v) noexcept
      : heads_view(v.data(), v.tokens(), v.heads(), v.head_dim(), v.token_stride(), v.head_stride()) {}

  /** [tokens, heads, head_dim], contiguous (HF after view(), vLLM, flashinfer, Meta's [B,S,H,D] with B*S tokens). */
  static heads_view thd(T *data, int64_t tokens, int64_t heads, int64_t head_dim) noexcept {
    return heads_view(data, tokens, heads, head_dim, heads * head_dim, head_dim);
  }
  /** [heads, tokens, head_dim], contiguous (HF after transpose(1, 2), ONNX Runtime's BNSH). */
  static heads_view htd(T *data, int64_t heads, int64_t tokens, int64_t head_dim) noexcept {
    return heads_view(data, tokens, heads, head_dim, head_dim, tokens * head_dim);
  }
  /** The q heads of a fused QKV buffer: per token q_heads, then kv_heads of k, then kv_heads of v, each
   *  head_dim wide, tokens one after another (token stride (q_heads + 2 kv_heads) head_dim). */
  static heads_view fused_q(T *qkv, int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim) noexcept {
    return heads_view(qkv, tokens, q_heads, head_dim, (q_heads + 2 * kv_heads) * head_dim, head_dim);
  }
  /** The k heads of the same fused QKV buffer: they start at qkv + q_heads * head_dim. */
  static heads_view fused_k(T *qkv, int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim) noexcept {
    return heads_view(qkv + q_heads * head_dim, tokens, kv_heads, head_dim, (q_heads + 2 * kv_heads) * head_dim,
                      head_dim);
  }

  T *data() const noexcept { return data_; }
  int64_t tokens() const noexcept { return tokens_; }
  int64_t heads() const noexcept { return heads_; }
  int64_t head_dim() const noexcept { return head_dim_; }
  int64_t token_stride() const noexcept { return token_stride_; }
  int64_t head_stride() const noexcept { return head_stride_; }
  /** The row of token t, head j. */
  T *head(int64_t t, int64_t j) const noexcept { return data_ + t * token_stride_ + j * head_stride_; }
  /** Tokens [first, first + count): what one worker of a token-split call rotates. */
  heads_view subtokens(int64_t first, int64_t count) const noexcept {
    return heads_view(data_ + first * token_stride_, count, heads_, head_dim_, token_stride_, head_stride_);
  }

 private:
  T *data_ = nullptr;
  int64_t tokens_ = 0, heads_ = 0, head_dim_ = 0, token_stride_ = 0, head_stride_ = 0;
};

namespace detail {

// The shapes every RoPE call checks before the C call: a head row holds the r rotated elements, and an
// explicit position list has one entry per token.
template <class T>
void expect_heads(const heads_view<T> &x, const posenc_rope &rope, const positions &pos) {
  expect(x.head_dim() >= rope.rotary_dim);
  expect_rope_positions(pos, x.tokens(), rope.axes);
}

}  // namespace detail

/** A RoPE spec (posenc_rope) as a value type that owns its explicit frequencies and its axis map:
 *  c_rope().freq and c_rope().axis point into the object's own storage, also after a copy or a move, so a
 *  copy stays valid when the original is gone. Built through posenc_rope_init (rope::init and the model
 *  presets), posenc_rope_sections (with_sections), or from a C spec (its frequencies and map are copied).
 *  The RoPE calls are members: cache, apply, apply_bf16, apply_f16, and the context shift (shift,
 *  shift_bf16, shift_f16).
 *
 *  The presets carry each model's published parameters (cited at each one) and its Hugging Face checkpoint's
 *  pair layout; a checkpoint in Meta's or ggml's layout of the same model wants with_pairs(interleaved). The
 *  multi-axis presets (qwen2_vl and the others below) take positions::axis_major lists of their axes, in
 *  the order their comments give. */
class rope {
 public:
  /** posenc_rope_default: r, halves, base 1e4, position_scale 1, attention_scale 1, no explicit frequencies. */
  explicit rope(int64_t rotary_dim) noexcept : c_(posenc_rope_default(rotary_dim)) {}
  /** The C spec as it is; its rotary_dim / 2 explicit frequencies and axis map entries, if any, are copied
   *  into this object. */
  explicit rope(const posenc_rope &c) : c_(c) {
    if (c.freq && c.rotary_dim >= 2) freq_.assign(c.freq, c.freq + c.rotary_dim / 2);
    if (c.axis && c.rotary_dim >= 2) axis_.assign(c.axis, c.axis + c.rotary_dim / 2);
    repoint();
  }
  /** Copies and moves re-point freq and axis at the new object's storage; a moved-from rope is left with
   *  whatever its storage kept (nothing, in practice), consistent either way. */
  rope(const rope &o) : c_(o.c_), freq_(o.freq_), axis_(o.axis_) { repoint(); }
  rope(rope &&o) noexcept : c_(o.c_), freq_(std::move(o.freq_)), axis_(std::move(o.axis_)) {
    repoint();
    o.repoint();
  }
  rope &operator=(const rope &o) {
    if (this != &o) {
      freq_ = o.freq_;
      axis_ = o.axis_;
      c_ = o.c_;
      repoint();
    }
    return *this;
  }
  rope &operator=(rope &&o) noexcept {
    if (this != &o) {
      freq_ = std::move(o.freq_);
      axis_ = std::move(o.axis_);
      c_ = o.c_;
      repoint();
      o.repoint();
    }
    return *this;
  }
  ~rope() = default;

  /** posenc_rope_init(rotary_dim, base, scaling) into this object's own frequency storage; scaling nullptr is
   *  the default scheme. Throws posenc::error with the C status (POSENC_ERR_INVALID for missing or
   *  inconsistent parameters). */
  static rope init(int64_t rotary_dim, double base, const posenc_rope_scaling *scaling = nullptr,
                   posenc::rope_pairs pairs = posenc::rope_pairs::halves) {
    rope r(rotary_dim);
    if (rotary_dim >= 2 && rotary_dim % 2 == 0) r.freq_.resize(size_t(rotary_dim / 2));
    posenc_rope c = r.c_;
    check(posenc_rope_init(&c, rotary_dim, base, scaling, r.freq_.empty() ? nullptr : r.freq_.data()));
    if (!c.freq) {
      r.freq_.clear();
    } else if (c.freq != r.freq_.data()) {  // not expected of posenc_rope_init; copied all the same
      r.freq_.assign(c.freq, c.freq + c.rotary_dim / 2);
    }
    r.c_ = c;
    r.c_.pairs = posenc_rope_pairs(pairs);
    r.repoint();
    return r;
  }
  /** The same with the scaling given by value. */
  static rope init(int64_t rotary_dim, double base, const posenc_rope_scaling &scaling,
                   posenc::rope_pairs pairs = posenc::rope_pairs::halves) {
    return init(rotary_dim, base, &scaling, pairs);
  }

  // The model presets: each one's published parameters, with their sources, are at its definition in
  // posenc/presets.hpp (included at the end of this header). The multi-axis presets take the positions of
  // their axes in the order given there; the diffusion presets also take real-valued positions.
  static rope llama2(int64_t rotary_dim = 128);
  static rope llama3_1(int64_t rotary_dim = 128);
  static rope mistral_7b_v02(int64_t rotary_dim = 128);
  static rope qwen2(int64_t rotary_dim = 128, bool yarn = false);
  static rope phi3_mini_128k(int64_t seq_len);
  static rope deepseek_v2();
  static rope deepseek_v3();
  static rope deepseek_v4();
  static rope deepseek_v4_compress();
  static rope glm5();
  static rope glm5_indexer();
  static rope gpt_neox_20b();
  static rope gpt_j_6b();
  static rope gemma4_global();
  static rope gemma4_sliding();
  static rope minimax_m3();
  static rope qwen2_vl();
  static rope qwen2_5_vl();
  static rope qwen3_vl();
  static rope glm4v();
  static rope qwen2_vl_vision();
  static rope qwen2_5_vl_vision();
  static rope qwen3_vl_vision();
  static rope pixtral();
  static rope llama4_vision();
  static rope flux();
  static rope wan(int64_t head_dim = 128);
  static rope hunyuan_video();
  static rope cogvideox(int64_t head_dim = 64);
  static rope qwen_image();

  int64_t rotary_dim() const noexcept { return c_.rotary_dim; }
  posenc::rope_pairs pairs() const noexcept { return posenc::rope_pairs(c_.pairs); }
  double base() const noexcept { return c_.base; }
  double position_scale() const noexcept { return c_.position_scale; }
  double attention_scale() const noexcept { return c_.attention_scale; }
  /** The explicit frequencies (rotary_dim / 2 of them), or an empty view when f_i = base^(-2i/r). */
  array_view<const double> freq() const noexcept {
    return array_view<const double>(freq_.empty() ? nullptr : freq_.data(), int64_t(freq_.size()));
  }
  /** The positions per token: 1, or 2 to 4 for multi-axis RoPE. */
  int32_t axes() const noexcept { return c_.axes; }
  /** The axis of each pair (rotary_dim / 2 entries), or an empty view without a map (one axis). */
  array_view<const uint8_t> axis() const noexcept {
    return array_view<const uint8_t>(axis_.empty() ? nullptr : axis_.data(), int64_t(axis_.size()));
  }
  /** The C struct, for the C calls; its freq and axis point into this object (valid while the object lives). */
  const posenc_rope &c_rope() const noexcept { return c_; }

  rope with_pairs(posenc::rope_pairs v) const {
    rope t = *this;
    t.c_.pairs = posenc_rope_pairs(v);
    return t;
  }
  /** Ignored by the calls when the spec has explicit frequencies. */
  rope with_base(double v) const {
    rope t = *this;
    t.c_.base = v;
    return t;
  }
  rope with_position_scale(double v) const {
    rope t = *this;
    t.c_.position_scale = v;
    return t;
  }
  rope with_attention_scale(double v) const {
    rope t = *this;
    t.c_.attention_scale = v;
    return t;
  }
  /** posenc_rope_inverse: a copy that turns every pair by -p f_i where this one turns it by p f_i (the bytes of
   *  this spec at the negated positions): DeepSeek-V4's rotation of the attention output, ggml's ROPE_BACK. */
  rope inverse() const {
    rope t = *this;
    check(posenc_rope_inverse(&c_, &t.c_));
    t.repoint();
    return t;
  }
  /** posenc_rope_sections: a copy whose pairs are assigned to axes from the section sizes (in pairs; unused
   *  ones 0: HF's three-entry mrope_section, or two for a vision tower) under the layout. vision, strided and
   *  per_axis also replace the frequencies by their own, from base; the other layouts keep them (a yarn or llama3
   *  spec keeps its scaled frequencies). The copy owns its map. Throws posenc::error with the C status:
   *  POSENC_ERR_INVALID for a negative section, a sum of 0 or past rotary_dim / 2, an unknown layout, an
   *  invalid rotary_dim, or (vision, strided, per_axis) an invalid base. */
  rope with_sections(const std::array<int64_t, 4> &sections, rope_layout layout) const {
    rope t = *this;
    const int64_t h = c_.rotary_dim >= 2 ? c_.rotary_dim / 2 : 0;
    // Never an empty buffer: the C call reports NULL before INVALID, and an invalid rotary_dim is INVALID.
    std::vector<uint8_t> axis(size_t(h > 0 ? h : 1));
    std::vector<double> freq;
    if (layout == rope_layout::vision || layout == rope_layout::strided || layout == rope_layout::per_axis)
      freq.resize(axis.size());
    posenc_rope c = t.c_;
    check(posenc_rope_sections(&c, sections.data(), posenc_rope_layout(layout), axis.data(),
                               freq.empty() ? nullptr : freq.data()));
    if (c.freq && c.freq == freq.data()) {
      t.freq_ = std::move(freq);
    } else if (c.freq && c.freq != t.freq_.data()) {  // not expected of posenc_rope_sections; copied all the same
      t.freq_.assign(c.freq, c.freq + h);
    } else if (!c.freq) {
      t.freq_.clear();
    }
    if (c.axis)
      t.axis_.assign(c.axis, c.axis + h);
    else
      t.axis_.clear();
    t.c_ = c;
    t.repoint();
    return t;
  }

  /** Throws POSENC_ERR_INVALID for a spec every call would refuse (a cache call with no rows checks only it). */
  void validate() const {
    check(posenc_rope_cache_f32(&c_, nullptr, 0, 0, nullptr, c_.rotary_dim / 2, nullptr, c_.rotary_dim / 2));
  }

  /** posenc_rope_cache_f32 into separate tables (ONNX Runtime's cos_cache / sin_cache): cos and sin have
   *  rotary_dim / 2 columns and one row per position. */
  void cache(positions pos, rows_view<float> cos, rows_view<float> sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos.cols() == h && sin.cols() == h && cos.rows() == sin.rows());
    detail::expect_rope_positions(pos, cos.rows(), c_.axes);
    check(posenc_rope_cache_f32(&c_, pos.list(), pos.first(), cos.rows(), cos.data(), cos.stride(), sin.data(),
                                sin.stride()));
  }
  /** posenc_rope_cache_f32 into one table of rotary_dim columns, cos in the first half of each row and sin in
   *  the second (vLLM's and flashinfer's cos_sin_cache). */
  void cache(positions pos, rows_view<float> cos_sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos_sin.cols() == c_.rotary_dim && c_.rotary_dim >= 2);
    detail::expect_rope_positions(pos, cos_sin.rows(), c_.axes);
    check(posenc_rope_cache_f32(&c_, pos.list(), pos.first(), cos_sin.rows(), cos_sin.data(), cos_sin.stride(),
                                cos_sin.data() + h, cos_sin.stride()));
  }

  /** The rotations written once over the element type: r.apply<dtype::bf16>(pos, x) is r.apply_bf16(pos, x),
   *  and likewise for q and k, apply_copy, apply_at and apply_copy_at (below). */
  template <dtype E>
  void apply(positions pos, heads_view<element_t<E>> x) const {
    detail::expect_heads(x, c_, pos);
    call_one(c_, pos.list(), pos.first(), x, detail::parts_of<E>::rope);
  }
  template <dtype E>
  void apply(positions pos, heads_view<element_t<E>> q, heads_view<element_t<E>> k) const {
    expect_qk(pos, q, k);
    call_qk(pos, q, k, detail::parts_of<E>::rope_qk);
  }
  template <dtype E>
  void apply_copy(positions pos, heads_view<const element_t<E>> src, heads_view<element_t<E>> x) const {
    expect_copy(pos, src, x);
    call_copy(pos, src, x, detail::parts_of<E>::rope_copy);
  }

  /** posenc_rope_f32: rotates the first rotary_dim elements of every head row of x, in place. */
  void apply(positions pos, heads_view<float> x) const { apply<dtype::f32>(pos, x); }
  /** posenc_rope_qk_f32: q and k of the same tokens in one pass (GQA: their head counts may differ). */
  void apply(positions pos, heads_view<float> q, heads_view<float> k) const { apply<dtype::f32>(pos, q, k); }
  /** posenc_rope_bf16: the same on bfloat16 rows (uint16_t bit patterns). */
  void apply_bf16(positions pos, heads_view<uint16_t> x) const { apply<dtype::bf16>(pos, x); }
  /** posenc_rope_qk_bf16. */
  void apply_bf16(positions pos, heads_view<uint16_t> q, heads_view<uint16_t> k) const {
    apply<dtype::bf16>(pos, q, k);
  }
  /** posenc_rope_f16: the same on IEEE binary16 rows. */
  void apply_f16(positions pos, heads_view<uint16_t> x) const { apply<dtype::f16>(pos, x); }
  /** posenc_rope_qk_f16. */
  void apply_f16(positions pos, heads_view<uint16_t> q, heads_view<uint16_t> k) const { apply<dtype::f16>(pos, q, k); }

  /** posenc_rope_copy_f32, out of place in one pass: the first rotary_dim elements of every head row of src,
   *  rotated, written to the same row of x (the bytes apply leaves in a copy of src); x's elements from
   *  rotary_dim on are left as they are. src and x have the same tokens and heads; src's rows may overlap
   *  each other, and meet x's only as the very same rows (src == x with the same strides: in place). */
  void apply_copy(positions pos, heads_view<const float> src, heads_view<float> x) const {
    apply_copy<dtype::f32>(pos, src, x);
  }
  /** posenc_rope_copy_bf16: the same on bfloat16 rows. */
  void apply_copy_bf16(positions pos, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    apply_copy<dtype::bf16>(pos, src, x);
  }
  /** posenc_rope_copy_f16: the same on IEEE binary16 rows. */
  void apply_copy_f16(positions pos, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    apply_copy<dtype::f16>(pos, src, x);
  }

  // ---- Real-valued positions (posenc_rope_*_real; docs/api.md) --------------------------------------------
  //
  // The same calls at real-valued positions t (LTX-Video's midpoints, CogVideoX's linspace grids): axes()
  // doubles per token, axis-major (token i of axis a at t[a * tokens + i]), each finite with |t| < 2^31; the
  // spec's frequencies |position_scale f_i| below 2^52. An integer-valued t gives the integer call's bytes.

  /** posenc_rope_cache_real_f32 into separate tables (cos and sin of rotary_dim / 2 columns). */
  void cache_at(array_view<const double> t, rows_view<float> cos, rows_view<float> sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos.cols() == h && sin.cols() == h && cos.rows() == sin.rows());
    expect_real(t, cos.rows());
    check(posenc_rope_cache_real_f32(&c_, t.data(), cos.rows(), cos.data(), cos.stride(), sin.data(), sin.stride()));
  }
  /** posenc_rope_cache_real_f32 into one table of rotary_dim columns, [cos | sin] per row. */
  void cache_at(array_view<const double> t, rows_view<float> cos_sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos_sin.cols() == c_.rotary_dim && c_.rotary_dim >= 2);
    expect_real(t, cos_sin.rows());
    check(posenc_rope_cache_real_f32(&c_, t.data(), cos_sin.rows(), cos_sin.data(), cos_sin.stride(),
                                     cos_sin.data() + h, cos_sin.stride()));
  }
  /** apply_at and apply_copy_at written once over the element type (apply_at<dtype::bf16>(t, x), ...). */
  template <dtype E>
  void apply_at(array_view<const double> t, heads_view<element_t<E>> x) const {
    real_one(t, x, detail::parts_of<E>::rope_real);
  }
  template <dtype E>
  void apply_at(array_view<const double> t, heads_view<element_t<E>> q, heads_view<element_t<E>> k) const {
    real_qk(t, q, k, detail::parts_of<E>::rope_qk_real);
  }
  template <dtype E>
  void apply_copy_at(array_view<const double> t, heads_view<const element_t<E>> src, heads_view<element_t<E>> x) const {
    real_copy(t, src, x, detail::parts_of<E>::rope_copy_real);
  }
  /** posenc_rope_real_f32 / posenc_rope_qk_real_f32. */
  void apply_at(array_view<const double> t, heads_view<float> x) const { apply_at<dtype::f32>(t, x); }
  void apply_at(array_view<const double> t, heads_view<float> q, heads_view<float> k) const {
    apply_at<dtype::f32>(t, q, k);
  }
  /** posenc_rope_real_bf16 / posenc_rope_qk_real_bf16 (bfloat16 bit patterns). */
  void apply_at_bf16(array_view<const double> t, heads_view<uint16_t> x) const { apply_at<dtype::bf16>(t, x); }
  void apply_at_bf16(array_view<const double> t, heads_view<uint16_t> q, heads_view<uint16_t> k) const {
    apply_at<dtype::bf16>(t, q, k);
  }
  /** posenc_rope_real_f16 / posenc_rope_qk_real_f16 (IEEE binary16 bit patterns). */
  void apply_at_f16(array_view<const double> t, heads_view<uint16_t> x) const { apply_at<dtype::f16>(t, x); }
  void apply_at_f16(array_view<const double> t, heads_view<uint16_t> q, heads_view<uint16_t> k) const {
    apply_at<dtype::f16>(t, q, k);
  }
  /** posenc_rope_copy_real_f32 / _bf16 / _f16: out of place, as apply_copy. */
  void apply_copy_at(array_view<const double> t, heads_view<const float> src, heads_view<float> x) const {
    apply_copy_at<dtype::f32>(t, src, x);
  }
  void apply_copy_at_bf16(array_view<const double> t, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    apply_copy_at<dtype::bf16>(t, src, x);
  }
  void apply_copy_at_f16(array_view<const double> t, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    apply_copy_at<dtype::f16>(t, src, x);
  }
  /** cache_at(t, cos, sin) as a work of cos.rows() rows (each value by the direct method: no blocks). */
  work cache_at_work(array_view<const double> t, rows_view<float> cos, rows_view<float> sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos.cols() == h && sin.cols() == h && cos.rows() == sin.rows());
    expect_real(t, cos.rows());
    return detail::work_access::make(
        cos.rows(), 1, real_cost(0, 4), [r = *this, t, cos, sin](int64_t b, int64_t e) noexcept {
          return posenc_rope_cache_real_f32_part(&r.c_, t.data(), cos.rows(), cos.data(), cos.stride(), sin.data(),
                                                 sin.stride(), b, e);
        });
  }
  /** apply_at(t, x) and apply_at(t, q, k) as works of the tokens. */
  work apply_at_work(array_view<const double> t, heads_view<float> x) const {
    expect_real(t, x.tokens());
    detail::expect(x.head_dim() >= c_.rotary_dim);
    return detail::work_access::make(
        x.tokens(), 1, real_cost(x.heads(), 4), [r = *this, t, x](int64_t b, int64_t e) noexcept {
          return posenc_rope_real_f32_part(&r.c_, t.data(), x.tokens(), x.data(), x.heads(), x.token_stride(),
                                           x.head_stride(), b, e);
        });
  }
  work apply_at_work(array_view<const double> t, heads_view<float> q, heads_view<float> k) const {
    expect_real(t, q.tokens());
    detail::expect(q.head_dim() >= c_.rotary_dim && k.head_dim() >= c_.rotary_dim && q.tokens() == k.tokens());
    return detail::work_access::make(
        q.tokens(), 1, real_cost(q.heads() + k.heads(), 4), [r = *this, t, q, k](int64_t b, int64_t e) noexcept {
          return posenc_rope_qk_real_f32_part(&r.c_, t.data(), q.tokens(), q.data(), q.heads(), q.token_stride(),
                                              q.head_stride(), k.data(), k.heads(), k.token_stride(), k.head_stride(),
                                              b, e);
        });
  }

  // ---- Context shift (llama.cpp's KV-cache shift) --------------------------------------------------------
  //
  // Keys cached after their rotation at positions p are moved to positions p + delta by rotating them once
  // more by delta: the angle is linear in the position, so R(p + d) = R(d) R(p) exactly, pair by pair (per
  // axis: a pair turns by the delta of its own axis). The rotation uses this spec's frequencies, pairs, axis
  // map and position_scale with attention scale 1, whatever attention_scale() is: a cached key already
  // carries the scale m of its first rotation (k' = m R(p) k), and rotating it with m again would give
  // m^2 R(p + d) k. The frequencies must be those the keys were rotated with (a dynamic or longrope spec
  // built for another sequence length is another rotation). Each shift rounds once more: per pair (x, y),
  // each rotation involved is within (2^-24.5 + sqrt(2) u) |(x, y)| of the exact one, u = 2^-24 for f32,
  // 2^-8 for bf16, 2^-11 for f16 (docs/api.md derives it), so shifting by d then by -d, or shifting keys
  // rotated at p instead of rotating them at p + d, differs from the exact result by at most two, or three,
  // such terms. POSENC_PAD (on axis 0) leaves a token as it is.

  /** Rotates the keys k in place by one delta per token: a list of tokens values, or for a multi-axis spec
   *  positions::axis_major(deltas, axes()); attention scale 1. Written once over the element type E
   *  (shift<dtype::bf16>(delta, k) is shift_bf16); shift, shift_bf16 and shift_f16 below are its three. */
  template <dtype E>
  void shift(positions delta, heads_view<element_t<E>> k) const {
    expect_shift(delta, k);
    call_one(unit_scale(), delta.list(), 0, k, detail::parts_of<E>::rope);
  }
  /** Rotates every token of k, on every axis, by the same delta (llama.cpp's seq_add); attention scale 1. */
  template <dtype E>
  void shift(int64_t delta, heads_view<element_t<E>> k) const {
    const std::vector<int64_t> d = uniform(delta, k);
    shift<E>(positions::axis_major(d, c_.axes), k);
  }
  void shift(positions delta, heads_view<float> k) const { shift<dtype::f32>(delta, k); }
  void shift(int64_t delta, heads_view<float> k) const { shift<dtype::f32>(delta, k); }
  /** shift on bfloat16 keys (uint16_t bit patterns), through posenc_rope_bf16. */
  void shift_bf16(positions delta, heads_view<uint16_t> k) const { shift<dtype::bf16>(delta, k); }
  void shift_bf16(int64_t delta, heads_view<uint16_t> k) const { shift<dtype::bf16>(delta, k); }
  /** shift on IEEE binary16 keys, through posenc_rope_f16. */
  void shift_f16(positions delta, heads_view<uint16_t> k) const { shift<dtype::f16>(delta, k); }
  void shift_f16(int64_t delta, heads_view<uint16_t> k) const { shift<dtype::f16>(delta, k); }

  // ---- The same calls as works, to split across threads (posenc::work, docs/threads.md) -------------------
  //
  // Each builder checks its arguments as the call of the same name does (throwing posenc::error, writing
  // nothing) and returns a work over the rows of the cache or the tokens of the tensors; the work holds its
  // own copy of this spec (frequencies and axis map included), and views of the buffers and positions.

  /** cache(pos, cos, sin) as a work of cos.rows() rows. */
  work cache_work(positions pos, rows_view<float> cos, rows_view<float> sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos.cols() == h && sin.cols() == h && cos.rows() == sin.rows());
    detail::expect_rope_positions(pos, cos.rows(), c_.axes);
    return detail::work_access::make(
        cos.rows(), detail::kBlockGrain, cache_cost(), [r = *this, pos, cos, sin](int64_t b, int64_t e) noexcept {
          return posenc_rope_cache_f32_part(&r.c_, pos.list(), pos.first(), cos.rows(), cos.data(), cos.stride(),
                                            sin.data(), sin.stride(), b, e);
        });
  }
  /** cache(pos, cos_sin) as a work of cos_sin.rows() rows. */
  work cache_work(positions pos, rows_view<float> cos_sin) const {
    const int64_t h = c_.rotary_dim / 2;
    detail::expect(cos_sin.cols() == c_.rotary_dim && c_.rotary_dim >= 2);
    detail::expect_rope_positions(pos, cos_sin.rows(), c_.axes);
    return detail::work_access::make(
        cos_sin.rows(), detail::kBlockGrain, cache_cost(), [r = *this, pos, cos_sin, h](int64_t b, int64_t e) noexcept {
          return posenc_rope_cache_f32_part(&r.c_, pos.list(), pos.first(), cos_sin.rows(), cos_sin.data(),
                                            cos_sin.stride(), cos_sin.data() + h, cos_sin.stride(), b, e);
        });
  }

  /** The works of apply<E>, apply_copy<E> and shift<E>, written once over the element type: apply_work<E>(pos, x)
   *  is a work of x.tokens() tokens, apply_work<E>(pos, q, k) of q.tokens() (every q and k head of each); the
   *  named ones below (apply_work, apply_bf16_work, ...) are their E. */
  template <dtype E>
  work apply_work(positions pos, heads_view<element_t<E>> x) const {
    detail::expect_heads(x, c_, pos);
    return one_work(c_, pos, x, detail::parts_of<E>::rope);
  }
  template <dtype E>
  work apply_work(positions pos, heads_view<element_t<E>> q, heads_view<element_t<E>> k) const {
    expect_qk(pos, q, k);
    return qk_work(c_, pos, q, k, detail::parts_of<E>::rope_qk);
  }
  template <dtype E>
  work apply_copy_work(positions pos, heads_view<const element_t<E>> src, heads_view<element_t<E>> x) const {
    expect_copy(pos, src, x);
    return copy_work(pos, src, x, detail::parts_of<E>::rope_copy);
  }
  template <dtype E>
  work shift_work(positions delta, heads_view<element_t<E>> k) const {
    expect_shift(delta, k);
    return one_work(unit_scale(), delta, k, detail::parts_of<E>::rope);
  }
  /** shift_work<E>(int64_t delta, k): the work owns the list of deltas the C call takes. */
  template <dtype E>
  work shift_work(int64_t delta, heads_view<element_t<E>> k) const {
    return uniform_shift_work(delta, k, detail::parts_of<E>::rope);
  }

  /** apply(pos, x) and apply(pos, q, k) as works. */
  work apply_work(positions pos, heads_view<float> x) const { return apply_work<dtype::f32>(pos, x); }
  work apply_work(positions pos, heads_view<float> q, heads_view<float> k) const {
    return apply_work<dtype::f32>(pos, q, k);
  }
  /** apply_bf16 as works. */
  work apply_bf16_work(positions pos, heads_view<uint16_t> x) const { return apply_work<dtype::bf16>(pos, x); }
  work apply_bf16_work(positions pos, heads_view<uint16_t> q, heads_view<uint16_t> k) const {
    return apply_work<dtype::bf16>(pos, q, k);
  }
  /** apply_f16 as works. */
  work apply_f16_work(positions pos, heads_view<uint16_t> x) const { return apply_work<dtype::f16>(pos, x); }
  work apply_f16_work(positions pos, heads_view<uint16_t> q, heads_view<uint16_t> k) const {
    return apply_work<dtype::f16>(pos, q, k);
  }
  /** apply_copy, apply_copy_bf16, apply_copy_f16 as works of x.tokens() tokens. */
  work apply_copy_work(positions pos, heads_view<const float> src, heads_view<float> x) const {
    return apply_copy_work<dtype::f32>(pos, src, x);
  }
  work apply_copy_bf16_work(positions pos, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    return apply_copy_work<dtype::bf16>(pos, src, x);
  }
  work apply_copy_f16_work(positions pos, heads_view<const uint16_t> src, heads_view<uint16_t> x) const {
    return apply_copy_work<dtype::f16>(pos, src, x);
  }
  /** shift, shift_bf16, shift_f16 as works of k.tokens() tokens (a list of deltas, or one delta). */
  work shift_work(positions delta, heads_view<float> k) const { return shift_work<dtype::f32>(delta, k); }
  work shift_work(int64_t delta, heads_view<float> k) const { return shift_work<dtype::f32>(delta, k); }
  work shift_bf16_work(positions delta, heads_view<uint16_t> k) const { return shift_work<dtype::bf16>(delta, k); }
  work shift_bf16_work(int64_t delta, heads_view<uint16_t> k) const { return shift_work<dtype::bf16>(delta, k); }
  work shift_f16_work(positions delta, heads_view<uint16_t> k) const { return shift_work<dtype::f16>(delta, k); }
  work shift_f16_work(int64_t delta, heads_view<uint16_t> k) const { return shift_work<dtype::f16>(delta, k); }

  /** Equal fields, equal frequency values and equal axis maps, hence the same rotation. */
  friend bool operator==(const rope &a, const rope &b) noexcept {
    return a.c_.rotary_dim == b.c_.rotary_dim && a.c_.pairs == b.c_.pairs && a.c_.base == b.c_.base &&
           a.c_.position_scale == b.c_.position_scale && a.c_.attention_scale == b.c_.attention_scale &&
           a.freq_ == b.freq_ && a.c_.axes == b.c_.axes && a.axis_ == b.axis_;
  }
  friend bool operator!=(const rope &a, const rope &b) noexcept { return !(a == b); }

 private:
  // c_.freq and c_.axis are the storage's, or NULL without explicit frequencies / an axis map.
  void repoint() noexcept {
    c_.freq = freq_.empty() ? nullptr : freq_.data();
    c_.axis = axis_.empty() ? nullptr : axis_.data();
  }
  // The C _part functions of one tensor and of q and k, for the works.
  template <class T>
  using one_part = posenc_status (*)(const posenc_rope *, const int64_t *, int64_t, int64_t, T *, int64_t, int64_t,
                                     int64_t, int64_t, int64_t);
  template <class T>
  using qk_part = posenc_status (*)(const posenc_rope *, const int64_t *, int64_t, int64_t, T *, int64_t, int64_t,
                                    int64_t, T *, int64_t, int64_t, int64_t, int64_t, int64_t);
  template <class T>
  using copy_part = posenc_status (*)(const posenc_rope *, const int64_t *, int64_t, int64_t, const T *, int64_t,
                                      int64_t, T *, int64_t, int64_t, int64_t, int64_t, int64_t);
  // The whole calls, each its _part on [0, n) (posenc/parts.h: the same checks and bytes).
  template <class T>
  static void call_one(const posenc_rope &c, const int64_t *list, int64_t first, const heads_view<T> &x,
                       one_part<T> part) {
    check(part(&c, list, first, x.tokens(), x.data(), x.heads(), x.token_stride(), x.head_stride(), 0, x.tokens()));
  }
  template <class T>
  void call_qk(const positions &pos, const heads_view<T> &q, const heads_view<T> &k, qk_part<T> part) const {
    check(part(&c_, pos.list(), pos.first(), q.tokens(), q.data(), q.heads(), q.token_stride(), q.head_stride(),
               k.data(), k.heads(), k.token_stride(), k.head_stride(), 0, q.tokens()));
  }
  template <class T>
  void call_copy(const positions &pos, const heads_view<const T> &src, const heads_view<T> &x,
                 copy_part<T> part) const {
    check(part(&c_, pos.list(), pos.first(), x.tokens(), src.data(), src.token_stride(), src.head_stride(), x.data(),
               x.heads(), x.token_stride(), x.head_stride(), 0, x.tokens()));
  }
  // What a token of a rotation costs (unit_cost): r values, and `heads` head rows of r elements of T read and
  // written in place.
  unit_cost rotation_cost(int64_t heads, size_t size) const noexcept {
    const double r = c_.rotary_dim > 0 ? double(c_.rotary_dim) : 0.0, e = double(heads > 0 ? heads : 0) * r;
    unit_cost c;
    c.bytes_read = e * double(size) + 8.0 * double(c_.axes > 0 ? c_.axes : 1);
    c.bytes_written = e * double(size);
    c.values = r;
    c.cycles = r * detail::cycle_costs::kTurned + e * detail::cycle_costs::kRotated +
               (c.bytes_read + c.bytes_written) * detail::cycle_costs::kPerByte;
    return c;
  }
  // A row of the cache: r values written as floats.
  unit_cost cache_cost() const noexcept {
    unit_cost c = rotation_cost(0, 4);
    c.bytes_written = c.values * 4;
    c.cycles =
        c.values * detail::cycle_costs::kTurned + (c.bytes_read + c.bytes_written) * detail::cycle_costs::kPerByte;
    return c;
  }
  // A work of one tensor x rotated by the spec c (this one, or unit_scale() for a shift), whose pointers are
  // this object's storage: the work's own copy of this rope carries the frequencies and axis map, and c's
  // scalars are applied to it.
  template <class T>
  work one_work(const posenc_rope &c, const positions &pos, const heads_view<T> &x, one_part<T> part) const {
    rope own = *this;
    own.c_.attention_scale = c.attention_scale;
    return detail::work_access::make(x.tokens(), detail::kBlockGrain, rotation_cost(x.heads(), sizeof(T)),
                                     [own = std::move(own), pos, x, part](int64_t b, int64_t e) noexcept {
                                       return part(&own.c_, pos.list(), pos.first(), x.tokens(), x.data(), x.heads(),
                                                   x.token_stride(), x.head_stride(), b, e);
                                     });
  }
  template <class T>
  work qk_work(const posenc_rope &c, const positions &pos, const heads_view<T> &q, const heads_view<T> &k,
               qk_part<T> part) const {
    rope own = *this;
    own.c_.attention_scale = c.attention_scale;
    const int64_t heads = (q.heads() > 0 ? q.heads() : 0) + (k.heads() > 0 ? k.heads() : 0);
    return detail::work_access::make(q.tokens(), detail::kBlockGrain, rotation_cost(heads, sizeof(T)),
                                     [own = std::move(own), pos, q, k, part](int64_t b, int64_t e) noexcept {
                                       return part(&own.c_, pos.list(), pos.first(), q.tokens(), q.data(), q.heads(),
                                                   q.token_stride(), q.head_stride(), k.data(), k.heads(),
                                                   k.token_stride(), k.head_stride(), b, e);
                                     });
  }
  // A work of the rows of src rotated into x: the bytes of the in-place rotation (src read, x written).
  template <class T>
  work copy_work(const positions &pos, const heads_view<const T> &src, const heads_view<T> &x,
                 copy_part<T> part) const {
    return detail::work_access::make(x.tokens(), detail::kBlockGrain, rotation_cost(x.heads(), sizeof(T)),
                                     [own = *this, pos, src, x, part](int64_t b, int64_t e) noexcept {
                                       return part(&own.c_, pos.list(), pos.first(), x.tokens(), src.data(),
                                                   src.token_stride(), src.head_stride(), x.data(), x.heads(),
                                                   x.token_stride(), x.head_stride(), b, e);
                                     });
  }
  // The shapes of a copy: both head rows hold r elements, and src has x's tokens and heads.
  template <class T>
  void expect_copy(const positions &pos, const heads_view<const T> &src, const heads_view<T> &x) const {
    detail::expect_heads(x, c_, pos);
    detail::expect(src.head_dim() >= c_.rotary_dim && src.tokens() == x.tokens() && src.heads() == x.heads());
  }
  // Real-valued positions: axes() values per token.
  void expect_real(array_view<const double> t, int64_t tokens) const {
    const int64_t a = c_.axes > 0 ? c_.axes : 1;
    if (t.size() != a * tokens)
      throw error(POSENC_ERR_INVALID, std::to_string(t.size()) + " real positions for " + std::to_string(tokens) +
                                          " tokens of " + detail::count_of_axes(c_.axes));
  }
  // A token (or cache row) at real positions: r values each by the direct method, and the rows' traffic.
  unit_cost real_cost(int64_t heads, size_t size) const noexcept {
    unit_cost c = rotation_cost(heads, size);
    if (heads <= 0) c.bytes_written = c.values * 4;
    c.cycles = c.values * detail::cycle_costs::kDirect +
               double(heads > 0 ? heads : 0) * c.values * detail::cycle_costs::kRotated +
               (c.bytes_read + c.bytes_written) * detail::cycle_costs::kPerByte;
    return c;
  }
  template <class T>
  using real_one_part = posenc_status (*)(const posenc_rope *, const double *, int64_t, T *, int64_t, int64_t, int64_t,
                                          int64_t, int64_t);
  template <class T>
  using real_qk_part = posenc_status (*)(const posenc_rope *, const double *, int64_t, T *, int64_t, int64_t, int64_t,
                                         T *, int64_t, int64_t, int64_t, int64_t, int64_t);
  template <class T>
  using real_copy_part = posenc_status (*)(const posenc_rope *, const double *, int64_t, const T *, int64_t, int64_t,
                                           T *, int64_t, int64_t, int64_t, int64_t, int64_t);
  template <class T>
  void real_one(array_view<const double> t, const heads_view<T> &x, real_one_part<T> part) const {
    expect_real(t, x.tokens());
    detail::expect(x.head_dim() >= c_.rotary_dim);
    check(part(&c_, t.data(), x.tokens(), x.data(), x.heads(), x.token_stride(), x.head_stride(), 0, x.tokens()));
  }
  template <class T>
  void real_qk(array_view<const double> t, const heads_view<T> &q, const heads_view<T> &k, real_qk_part<T> part) const {
    expect_real(t, q.tokens());
    detail::expect(q.head_dim() >= c_.rotary_dim && k.head_dim() >= c_.rotary_dim && q.tokens() == k.tokens());
    check(part(&c_, t.data(), q.tokens(), q.data(), q.heads(), q.token_stride(), q.head_stride(), k.data(), k.heads(),
               k.token_stride(), k.head_stride(), 0, q.tokens()));
  }
  template <class T>
  void real_copy(array_view<const double> t, const heads_view<const T> &src, const heads_view<T> &x,
                 real_copy_part<T> part) const {
    expect_real(t, x.tokens());
    detail::expect(x.head_dim() >= c_.rotary_dim && src.head_dim() >= c_.rotary_dim && src.tokens() == x.tokens() &&
                   src.heads() == x.heads());
    check(part(&c_, t.data(), x.tokens(), src.data(), src.token_stride(), src.head_stride(), x.data(), x.heads(),
               x.token_stride(), x.head_stride(), 0, x.tokens()));
  }
  template <class T>
  void expect_qk(const positions &pos, const heads_view<T> &q, const heads_view<T> &k) const {
    detail::expect_heads(q, c_, pos);
    detail::expect_heads(k, c_, pos);
    detail::expect(q.tokens() == k.tokens());
  }
  // shift(int64_t delta, k) as a work: the work owns the deltas (the spec's axes per token, all delta).
  template <class T>
  work uniform_shift_work(int64_t delta, const heads_view<T> &k, one_part<T> part) const {
    std::vector<int64_t> d = uniform(delta, k);
    expect_shift(positions::axis_major(d, c_.axes), k);
    rope own = *this;
    own.c_.attention_scale = 1.0;
    return detail::work_access::make(k.tokens(), detail::kBlockGrain, rotation_cost(k.heads(), sizeof(T)),
                                     [own = std::move(own), d = std::move(d), k, part](int64_t b, int64_t e) noexcept {
                                       return part(&own.c_, d.data(), 0, k.tokens(), k.data(), k.heads(),
                                                   k.token_stride(), k.head_stride(), b, e);
                                     });
  }
  // The spec of a shift: this one with attention scale 1 (its pointers are this object's storage).
  posenc_rope unit_scale() const noexcept {
    posenc_rope c = c_;
    c.attention_scale = 1.0;
    return c;
  }
  // The deltas of a shift: an explicit list of the spec's axes per token.
  template <class T>
  void expect_shift(const positions &delta, const heads_view<T> &k) const {
    if (!delta.is_list())
      throw error(POSENC_ERR_INVALID,
                  "shift takes one delta per token (and axis) as a list; "
                  "shift(int64_t delta, ...) moves every token by the same delta");
    detail::expect_heads(k, c_, delta);
  }
  // The same delta for every token and axis, as the list the C calls take.
  template <class T>
  std::vector<int64_t> uniform(int64_t delta, const heads_view<T> &k) const {
    detail::expect(k.tokens() >= 0 && c_.axes >= 1);
    return std::vector<int64_t>(size_t(k.tokens()) * size_t(c_.axes), delta);
  }

  posenc_rope c_;
  std::vector<double> freq_;
  std::vector<uint8_t> axis_;
};

/** posenc_isa as a scoped enum, same values. */
enum class isa : int {
  scalar = POSENC_ISA_SCALAR,
  avx2 = POSENC_ISA_AVX2,
  avx512 = POSENC_ISA_AVX512,
  neon = POSENC_ISA_NEON,
};

/** posenc_active_isa. */
inline isa active_isa() noexcept { return isa(posenc_active_isa()); }
/** posenc_isa_name: "scalar", "avx2", "avx512", "neon". */
inline const char *isa_name(isa i) noexcept { return posenc_isa_name(posenc_isa(i)); }
/** posenc_isa_available. */
inline bool isa_available(isa i) noexcept { return posenc_isa_available(posenc_isa(i)) != 0; }
/** posenc_force_isa: throws POSENC_ERR_UNSUPPORTED (and changes nothing) for a path this machine lacks. */
inline void force_isa(isa i) { check(posenc_force_isa(posenc_isa(i))); }
/** posenc_version: "MAJOR.MINOR.PATCH". */
inline const char *version() noexcept { return posenc_version(); }

}  // namespace posenc

#include "posenc/presets.hpp"  // the model presets' definitions

#endif  // POSENC_POSENC_HPP
