// posenc/types.hpp: the value types of the C++ wrapper (posenc/posenc.hpp, which includes this header): the
// error it throws, the PE spec with one named constructor per framework convention, pointer-and-length views
// of the buffers, and positions. Header-only, no computation.
#ifndef POSENC_TYPES_HPP
#define POSENC_TYPES_HPP

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/posenc.h"

namespace posenc {

/** A call that returned a status other than POSENC_OK; the call wrote nothing. */
class error : public std::runtime_error {
 public:
  explicit error(posenc_status status)
      : std::runtime_error(std::string("posenc: ") + posenc_status_string(status)), status_(status) {}
  /** The same, with what the wrapper found wrong: what() is "posenc: STATUS: detail". */
  error(posenc_status status, const std::string &detail)
      : std::runtime_error(std::string("posenc: ") + posenc_status_string(status) + ": " + detail), status_(status) {}
  /** The C status the call returned. */
  posenc_status status() const noexcept { return status_; }

 private:
  posenc_status status_;
};

/** Throws posenc::error unless status is POSENC_OK. */
inline void check(posenc_status status) {
  if (status != POSENC_OK) throw error(status);
}

/** posenc_status_string: a static name for a status, never NULL. */
inline const char *status_string(posenc_status status) noexcept { return posenc_status_string(status); }

/** The element type of a call's rows, for the calls written once over it (posenc::table<dtype::bf16>(...)):
 *  float32, or the bfloat16 and IEEE binary16 bit patterns the _bf16 and _f16 C functions take. */
enum class dtype : int {
  f32,
  bf16,
  f16,
};
/** The C++ type that holds one element of E: float for f32, uint16_t for bf16 and f16. */
template <dtype E>
using element_t = std::conditional_t<E == dtype::f32, float, uint16_t>;

/** posenc_layout as a scoped enum, same values. */
enum class layout : int {
  interleaved = POSENC_INTERLEAVED,
  sin_cos_halves = POSENC_SIN_COS_HALVES,
  cos_sin_halves = POSENC_COS_SIN_HALVES,
};

/** The encoding (posenc_spec) as a value type: named constructors for the framework conventions of
 *  docs/conventions.md, and with_* setters that return a modified copy. */
class spec {
 public:
  /** Vaswani et al. (posenc_spec_default): interleaved, base 1e4, D = h, position_scale 1. */
  explicit spec(int64_t d_model) noexcept : c_(posenc_spec_default(d_model)) {}
  /** The C spec as it is. */
  explicit spec(const posenc_spec &c) noexcept : c_(c) {}

  /** Vaswani et al. section 3.5, the PyTorch tutorial; positions from 0. */
  static spec vaswani(int64_t d_model) noexcept { return spec(d_model); }
  /** Hugging Face MarianSinusoidalPositionalEmbedding (even d_model): Vaswani's frequencies, written as
   *  sin/cos halves. */
  static spec marian(int64_t d_model) noexcept { return spec(d_model).with_layout(posenc::layout::sin_cos_halves); }
  /** fairseq SinusoidalPositionalEmbedding: halves, D = h - 1. Positions come from fairseq_positions(). */
  static spec fairseq(int64_t d_model) noexcept {
    return spec(d_model).with_layout(posenc::layout::sin_cos_halves).with_freq_denominator(double(d_model / 2 - 1));
  }
  /** tensor2tensor get_timing_signal_1d: halves, base max/min, D = max(h - 1, 1), positions times min. */
  static spec tensor2tensor(int64_t d_model, double min_timescale = 1.0, double max_timescale = 1.0e4) noexcept {
    const int64_t h = d_model / 2;
    return spec(d_model)
        .with_layout(posenc::layout::sin_cos_halves)
        .with_base(max_timescale / min_timescale)
        .with_freq_denominator(double(h - 1 > 1 ? h - 1 : 1))
        .with_position_scale(min_timescale);
  }
  /** CTranslate2 and OpenNMT-tf: halves, D = h - 1; their positions start at 1 (first = 1). */
  static spec ctranslate2(int64_t d_model) noexcept { return fairseq(d_model); }
  /** ggml timestep_embedding: cos first, base max_period, D = h; the position is the timestep. */
  static spec ggml_timestep(int64_t d_model, double max_period = 10000.0) noexcept {
    return spec(d_model).with_layout(posenc::layout::cos_sin_halves).with_base(max_period);
  }
  /** diffusers get_timestep_embedding with its defaults: halves (cos first when flipped), base max_period,
   *  D = h - downscale_freq_shift, position_scale = scale. */
  static spec diffusers(int64_t d_model, bool flip_sin_to_cos = false, double downscale_freq_shift = 1.0,
                        double scale = 1.0, double max_period = 10000.0) noexcept {
    return spec(d_model)
        .with_layout(flip_sin_to_cos ? posenc::layout::cos_sin_halves : posenc::layout::sin_cos_halves)
        .with_base(max_period)
        .with_freq_denominator(double(d_model / 2) - downscale_freq_shift)
        .with_position_scale(scale);
  }
  /** latent diffusion / DiT timestep_embedding(t, dim, max_period): cos first, base max_period, D = h; the
   *  position is the timestep (the same fields as ggml_timestep). */
  static spec dit(int64_t d_model, double max_period = 10000.0) noexcept { return ggml_timestep(d_model, max_period); }
  /** Flux timestep_embedding(t, dim, max_period, time_factor): DiT's spec with position_scale = time_factor
   *  (Flux multiplies the timestep by it first). */
  static spec flux(int64_t d_model, double max_period = 10000.0, double time_factor = 1000.0) noexcept {
    return dit(d_model, max_period).with_position_scale(time_factor);
  }
  /** Whisper sinusoids(length, channels, max_timescale) (even channels): sin/cos halves, base max_timescale,
   *  D = h - 1; positions 0 .. length - 1. */
  static spec whisper(int64_t channels, double max_timescale = 10000.0) noexcept {
    return fairseq(channels).with_base(max_timescale);
  }

  int64_t d_model() const noexcept { return c_.d_model; }
  posenc::layout layout() const noexcept { return posenc::layout(c_.layout); }
  double base() const noexcept { return c_.base; }
  double freq_denominator() const noexcept { return c_.freq_denominator; }
  double position_scale() const noexcept { return c_.position_scale; }
  /** The C struct, for the C calls. */
  const posenc_spec &c_spec() const noexcept { return c_; }

  spec with_d_model(int64_t v) const noexcept {
    spec t = *this;
    t.c_.d_model = v;
    return t;
  }
  spec with_layout(posenc::layout v) const noexcept {
    spec t = *this;
    t.c_.layout = posenc_layout(v);
    return t;
  }
  spec with_base(double v) const noexcept {
    spec t = *this;
    t.c_.base = v;
    return t;
  }
  spec with_freq_denominator(double v) const noexcept {
    spec t = *this;
    t.c_.freq_denominator = v;
    return t;
  }
  spec with_position_scale(double v) const noexcept {
    spec t = *this;
    t.c_.position_scale = v;
    return t;
  }

  /** Throws POSENC_ERR_INVALID for a spec every call would refuse (a call with no rows checks only the spec). */
  void validate() const { check(posenc_table_f32(&c_, 0, 0, nullptr, c_.d_model)); }

  /** Equal fields, hence the same encoding. */
  friend bool operator==(const spec &a, const spec &b) noexcept {
    return a.c_.d_model == b.c_.d_model && a.c_.layout == b.c_.layout && a.c_.base == b.c_.base &&
           a.c_.freq_denominator == b.c_.freq_denominator && a.c_.position_scale == b.c_.position_scale;
  }
  friend bool operator!=(const spec &a, const spec &b) noexcept { return !(a == b); }

 private:
  posenc_spec c_;
};

/** size contiguous elements (token ids, positions): a pointer and a length, like C++20's std::span. */
template <class T>
class array_view {
 public:
  array_view() noexcept = default;
  array_view(T *data, int64_t size) noexcept : data_(data), size_(size) {}
  /** Any container with data() and size() (std::vector, std::array); not a temporary. */
  template <class C, class = std::enable_if_t<std::is_convertible<decltype(std::declval<C &>().data()), T *>::value>>
  array_view(C &c) noexcept : data_(c.data()), size_(static_cast<int64_t>(c.size())) {}
  /** A view of T is also a view of const T. */
  template <class U, class = std::enable_if_t<std::is_same<const U, T>::value>>
  array_view(array_view<U> v) noexcept : data_(v.data()), size_(v.size()) {}

  T *data() const noexcept { return data_; }
  int64_t size() const noexcept { return size_; }
  T &operator[](int64_t i) const noexcept { return data_[i]; }
  T *begin() const noexcept { return data_; }
  T *end() const noexcept { return data_ + size_; }
  /** Elements [offset, offset + count). */
  array_view subview(int64_t offset, int64_t count) const noexcept { return array_view(data_ + offset, count); }

 private:
  T *data_ = nullptr;
  int64_t size_ = 0;
};

/** rows x cols elements, row r starting at data + r * stride (in elements, >= cols): a table, a table with
 *  padded rows, or a range of rows of a larger one. */
template <class T>
class rows_view {
 public:
  rows_view() noexcept = default;
  rows_view(T *data, int64_t rows, int64_t cols) noexcept : rows_view(data, rows, cols, cols) {}
  rows_view(T *data, int64_t rows, int64_t cols, int64_t stride) noexcept
      : data_(data), rows_(rows), cols_(cols), stride_(stride) {}
  /** A view of T is also a view of const T. */
  template <class U, class = std::enable_if_t<std::is_same<const U, T>::value>>
  rows_view(rows_view<U> v) noexcept : rows_view(v.data(), v.rows(), v.cols(), v.stride()) {}

  T *data() const noexcept { return data_; }
  int64_t rows() const noexcept { return rows_; }
  int64_t cols() const noexcept { return cols_; }
  int64_t stride() const noexcept { return stride_; }
  T *row(int64_t r) const noexcept { return data_ + r * stride_; }
  T &operator()(int64_t r, int64_t c) const noexcept { return data_[r * stride_ + c]; }
  /** Rows [first, first + count): what one worker of a row-split call writes. */
  rows_view subrows(int64_t first, int64_t count) const noexcept {
    return rows_view(data_ + first * stride_, count, cols_, stride_);
  }

 private:
  T *data_ = nullptr;
  int64_t rows_ = 0, cols_ = 0, stride_ = 0;
};

/** Where the position of output row r comes from: first + r, or an explicit list (POSENC_PAD: a zero row).
 *  For multi-axis RoPE, an axis-major list of A positions per token (axis_major), or a run, which gives
 *  every axis of token t the position first + t (a text token). */
class positions {
 public:
  /** A run: first, first + 1, ... (on every axis of a multi-axis spec). */
  positions(int64_t first) noexcept : first_(first) {}
  /** One position per row. */
  positions(array_view<const int64_t> list) noexcept : list_(list), is_list_(true) {}
  template <class C,
            class = std::enable_if_t<std::is_convertible<decltype(std::declval<C &>().data()), const int64_t *>::value>>
  positions(C &c) noexcept : positions(array_view<const int64_t>(c)) {}
  /** Multi-axis positions, axis-major as posenc.h takes them: with n = values.size() / axes tokens, token
   *  t's position on axis a is values[a * n + t] (HF's position_ids[0], [1], ... one after another). The
   *  RoPE calls check axes against the spec's and the size against axes times the tokens. */
  static positions axis_major(array_view<const int64_t> values, int32_t axes) noexcept {
    positions p(values);
    p.axes_ = axes;
    return p;
  }

  bool is_list() const noexcept { return is_list_; }
  /** The explicit positions, or NULL for a run (as the C calls take them). */
  const int64_t *list() const noexcept { return is_list_ ? list_.data() : nullptr; }
  /** The number of values of a list (axes() per token); 0 for a run. */
  int64_t size() const noexcept { return list_.size(); }
  /** The axes of a list: 1, or axis_major's count; 1 for a run, which fits a spec of any axes. */
  int32_t axes() const noexcept { return axes_; }
  /** The tokens a list covers, size() / axes(). */
  int64_t tokens() const noexcept { return axes_ > 0 ? list_.size() / axes_ : 0; }
  int64_t first() const noexcept { return first_; }

 private:
  array_view<const int64_t> list_;
  int64_t first_ = 0;
  int32_t axes_ = 1;
  bool is_list_ = false;
};

namespace detail {

inline void expect(bool shape_ok) {
  if (!shape_ok) throw error(POSENC_ERR_INVALID);
}
// A call of one axis (the tables): a list of one position per row.
inline void expect_positions(const positions &pos, int64_t rows) {
  if (pos.is_list() && pos.axes() != 1)
    throw error(POSENC_ERR_INVALID, "positions of " + std::to_string(pos.axes()) + " axes for a one-axis call");
  expect(!pos.is_list() || pos.size() == rows);
}
// "1 axis", "3 axes".
inline std::string count_of_axes(int32_t axes) { return std::to_string(axes) + (axes == 1 ? " axis" : " axes"); }
// A RoPE call: a list of `axes` positions per token, axes being the spec's.
inline void expect_rope_positions(const positions &pos, int64_t tokens, int32_t axes) {
  if (!pos.is_list()) return;
  if (pos.axes() != axes)
    throw error(POSENC_ERR_INVALID,
                "positions of " + count_of_axes(pos.axes()) + " for a RoPE spec of " + count_of_axes(axes));
  if (axes < 1 || pos.size() % axes != 0 || pos.size() / axes != tokens)
    throw error(POSENC_ERR_INVALID, std::to_string(pos.size()) + " position values for " + std::to_string(tokens) +
                                        " tokens of " + count_of_axes(axes));
}
// The shapes of every embedding call with a spec: rows of d_model, one token and one position per row.
template <class T>
void expect_embed(const spec &s, const rows_view<const T> &table, array_view<const int32_t> tokens,
                  const positions &pos, const rows_view<float> &out) {
  expect(out.cols() == s.d_model() && table.cols() == s.d_model() && tokens.size() == out.rows());
  expect_positions(pos, out.rows());
}

}  // namespace detail

}  // namespace posenc

#endif  // POSENC_TYPES_HPP
