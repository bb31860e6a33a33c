// The C ABI: argument checking in the documented order, then one kernel job on the active path.
// Nothing is written before every check has passed, and no exception leaves this file.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "abi/abi.hpp"
#include "abi/fpenv.hpp"
#include "dispatch/cpu.hpp"
#include "dispatch/dispatch.hpp"
#include "kernel/job.hpp"
#include "posenc/posenc.h"
#include "posenc_version.h"
#include "setup/freq.hpp"

namespace posenc {
namespace detail {
namespace {

// Every kind of call, described for the common checks.
struct Call {
  const posenc_spec *spec;
  const int64_t *positions;  // explicit positions, or nullptr for first + r
  bool positions_required;
  const double *times;  // real-valued positions (timestep calls), else nullptr
  bool times_required;
  int64_t first, n;
  Src src;
  const void *x;  // activations or embedding table
  int64_t x_stride;
  int64_t vocab;  // rows of the embedding table
  const int32_t *tokens;
  float scale;
  Dst dst;
  void *out;
  int64_t out_stride;
  // The rows written: [begin, end) of the n rows the call describes (posenc_*_part; the whole call is the
  // part [0, n), which passes the range check for every n >= 0).
  int64_t begin, end;
};

// Outputs at least this large are written with non-temporal stores (cpu.hpp says how large): they
// cannot stay cached anyway, and streaming saves the read-for-ownership of every line.
uint64_t stream_threshold() {
  static const uint64_t t = detail::stream_threshold_bytes();
  return t;
}

// Whether n rows of out_stride floats are written with non-temporal stores.
bool streams(int64_t n, int64_t out_stride) {
  return uint64_t(n) * uint64_t(out_stride) * sizeof(float) >= stream_threshold();
}

size_t element_size(Src s) { return s == Src::kTableBF16 || s == Src::kTableF16 ? 2 : 4; }
size_t element_size(Dst d) { return d == Dst::kF32 ? 4 : 2; }

// The part's range of rows (or tokens), checked after every check of the whole call (docs/contract.md
// section 3): 0 <= begin <= end <= n.
bool range_ok(int64_t begin, int64_t end, int64_t n) { return begin >= 0 && begin <= end && end <= n; }

posenc_status run_call(const Call &c) {
  if (c.n < 0) return POSENC_ERR_INVALID;
  const int64_t begin = c.begin, end = c.end;
  if (c.n == 0) {
    const posenc_status s0 = c.spec ? check_spec(*c.spec) : POSENC_OK;
    if (s0 != POSENC_OK) return s0;
    return range_ok(begin, end, 0) ? POSENC_OK : POSENC_ERR_INVALID;
  }
  const bool table = c.src == Src::kTableF32 || c.src == Src::kTableBF16 || c.src == Src::kTableF16;
  if (!c.spec || !c.out || (c.positions_required && !c.positions) || (c.times_required && !c.times) ||
      (c.src != Src::kNone && !c.x) || (table && !c.tokens))
    return POSENC_ERR_NULL;
  const posenc_status sc = check_spec(*c.spec);
  if (sc != POSENC_OK) return sc;
  if (c.times_required) {
    const posenc_status st = check_real_positions_spec(*c.spec);
    if (st != POSENC_OK) return st;
  }
  const int64_t d = c.spec->d_model;
  if (c.out_stride < d) return POSENC_ERR_INVALID;
  if (c.src != Src::kNone && c.x_stride < d) return POSENC_ERR_INVALID;
  if (table && c.vocab < 0) return POSENC_ERR_INVALID;
  if (!extent_fits(c.n, c.out_stride, 1, 0, d, element_size(c.dst))) return POSENC_ERR_OVERFLOW;
  if (c.src == Src::kActivations && !extent_fits(c.n, c.x_stride, 1, 0, d, element_size(c.src)))
    return POSENC_ERR_OVERFLOW;
  if (table && !extent_fits(c.vocab, c.x_stride, 1, 0, d, element_size(c.src))) return POSENC_ERR_OVERFLOW;
  if (c.times_required) {
    for (int64_t r = 0; r < c.n; ++r)  // finite, |t| < 2^31 (NaN fails the comparison)
      if (!(std::fabs(c.times[r]) < double(kPositionLimit))) return POSENC_ERR_OUT_OF_RANGE;
  } else {
    const posenc_status sp = check_positions(c.positions, c.first, c.n);
    if (sp != POSENC_OK) return sp;
  }
  if (table) {
    for (int64_t r = 0; r < c.n; ++r)
      if (c.tokens[r] < 0 || int64_t(c.tokens[r]) >= c.vocab) return POSENC_ERR_OUT_OF_RANGE;
  }
  const Path *path = active_path();
  if (!path) return POSENC_ERR_UNSUPPORTED;
  if (!range_ok(begin, end, c.n)) return POSENC_ERR_INVALID;
  FpEnvironment env;  // round-to-nearest, no flush-to-zero, for the setup and the kernel
  // The one-time setup runs for an empty part too: a pool's check (begin == end) reports NO_MEMORY, and
  // the parts that follow find the table built.
  const Freq *f = frequencies(*c.spec, fill_tables);
  if (!f) return POSENC_ERR_NO_MEMORY;
  if (begin == end) return POSENC_OK;

  // Rows [begin, end): every per-row array and row pointer starts at row begin. Every value is correctly
  // rounded from its exact angle, so the rows do not depend on where the part starts (the rows engine
  // anchors its first block at the part's first row).
  const int64_t b = begin;
  Job job;
  job.freq = f;
  job.d = d;
  job.h = d / 2;
  job.layout = int(c.spec->layout);
  job.positions = c.positions ? c.positions + b : nullptr;
  job.first = c.positions ? c.first : c.first + b;  // first + n - 1 was checked
  job.n = end - b;
  job.times = c.times ? c.times + b : nullptr;
  job.src = c.src;
  job.x =
      c.src == Src::kActivations ? static_cast<const char *>(c.x) + b * c.x_stride * int64_t(element_size(c.src)) : c.x;
  job.x_stride = c.x_stride;
  job.tokens = c.tokens ? c.tokens + b : nullptr;
  job.scale = c.scale;
  job.dst = c.dst;
  job.out = static_cast<char *>(c.out) + b * c.out_stride * int64_t(element_size(c.dst));
  job.out_stride = c.out_stride;
  // the whole call's size decides: the parts of a large output stream as the whole call would
  job.stream = c.dst == Dst::kF32 && streams(c.n, c.out_stride);
  path->run(job);
  return POSENC_OK;
}

Call table_call(const posenc_spec *spec, int64_t first, int64_t n, void *out, int64_t stride, Dst dst, int64_t begin,
                int64_t end) {
  Call c{};
  c.begin = begin;
  c.end = end;
  c.spec = spec;
  c.first = first;
  c.n = n;
  c.src = Src::kNone;
  c.dst = dst;
  c.out = out;
  c.out_stride = stride;
  return c;
}

Call rows_call(const posenc_spec *spec, const int64_t *positions, int64_t n, void *out, int64_t stride, Dst dst,
               int64_t begin, int64_t end) {
  Call c = table_call(spec, 0, n, out, stride, dst, begin, end);
  c.positions = positions;
  c.positions_required = true;
  return c;
}

Call times_call(const posenc_spec *spec, const double *t, int64_t n, void *out, int64_t stride, Dst dst, int64_t begin,
                int64_t end) {
  Call c = table_call(spec, 0, n, out, stride, dst, begin, end);
  c.times = t;
  c.times_required = true;
  return c;
}

// A call whose rows are added to activations x (fmaf(scale, x, PE)): the fused adds of a table or timesteps.
Call with_activations(Call c, const float *x, int64_t x_stride, float scale) {
  c.src = Src::kActivations;
  c.x = x;
  c.x_stride = x_stride;
  c.scale = scale;
  return c;
}

Call embed_call(const posenc_spec *spec, const void *table, int64_t vocab, int64_t table_stride, const int32_t *tokens,
                float scale, const int64_t *positions, int64_t first, int64_t n, float *out, int64_t out_stride,
                Src src, int64_t begin, int64_t end) {
  Call c = table_call(spec, first, n, out, out_stride, Dst::kF32, begin, end);
  c.positions = positions;
  c.src = src;
  c.x = table;
  c.x_stride = table_stride;
  c.vocab = vocab;
  c.tokens = tokens;
  c.scale = scale;
  return c;
}

}  // namespace
}  // namespace detail
}  // namespace posenc

using namespace posenc::detail;

extern "C" {

const char *posenc_status_string(posenc_status s) {
  switch (s) {
    case POSENC_OK: return "ok";
    case POSENC_ERR_NULL: return "a required pointer is NULL";
    case POSENC_ERR_INVALID: return "invalid spec, size or stride";
    case POSENC_ERR_OUT_OF_RANGE: return "position or token id out of range";
    case POSENC_ERR_OVERFLOW: return "element or byte count overflows";
    case POSENC_ERR_UNSUPPORTED: return "instruction set not available";
    case POSENC_ERR_NO_MEMORY: return "out of memory";
  }
  return "unknown status";
}

posenc_spec posenc_spec_default(int64_t d_model) {
  // d_model, layout, base, freq_denominator (0: h), position_scale, in posenc.h's order
  return posenc_spec{d_model, POSENC_INTERLEAVED, 10000.0, 0.0, 1.0};
}

const char *posenc_version(void) { return POSENC_VERSION_STRING; }

// Every kernel is its _part function: the whole call is the part [0, n). The row calls whose element types
// differ only in T and the destination format come from one macro: name_part checks the whole call and runs
// rows [begin, end); `a` is the call's first, positions or timesteps (make: table_call, rows_call,
// times_call).
#define POSENC_ROW_CALL(name, Arg, T, dst, make)                                                                  \
  posenc_status name##_part(const posenc_spec *spec, Arg a, int64_t n, T *out, int64_t out_stride, int64_t begin, \
                            int64_t end) {                                                                        \
    return guarded([&] { return run_call(make(spec, a, n, out, out_stride, dst, begin, end)); });                 \
  }                                                                                                               \
  posenc_status name(const posenc_spec *spec, Arg a, int64_t n, T *out, int64_t out_stride) {                     \
    return name##_part(spec, a, n, out, out_stride, 0, n);                                                        \
  }
POSENC_ROW_CALL(posenc_table_f32, int64_t, float, Dst::kF32, table_call)
POSENC_ROW_CALL(posenc_table_bf16, int64_t, uint16_t, Dst::kBF16, table_call)
POSENC_ROW_CALL(posenc_table_f16, int64_t, uint16_t, Dst::kF16, table_call)
POSENC_ROW_CALL(posenc_rows_f32, const int64_t *, float, Dst::kF32, rows_call)
POSENC_ROW_CALL(posenc_rows_bf16, const int64_t *, uint16_t, Dst::kBF16, rows_call)
POSENC_ROW_CALL(posenc_rows_f16, const int64_t *, uint16_t, Dst::kF16, rows_call)
POSENC_ROW_CALL(posenc_timesteps_f32, const double *, float, Dst::kF32, times_call)
POSENC_ROW_CALL(posenc_timesteps_bf16, const double *, uint16_t, Dst::kBF16, times_call)
POSENC_ROW_CALL(posenc_timesteps_f16, const double *, uint16_t, Dst::kF16, times_call)
#undef POSENC_ROW_CALL

posenc_status posenc_timesteps_add_f32_part(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                            const double *t, int64_t n, float *out, int64_t out_stride, int64_t begin,
                                            int64_t end) {
  return guarded([&] {
    return run_call(
        with_activations(times_call(spec, t, n, out, out_stride, Dst::kF32, begin, end), x, x_stride, scale));
  });
}
posenc_status posenc_timesteps_add_f32(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                       const double *t, int64_t n, float *out, int64_t out_stride) {
  return posenc_timesteps_add_f32_part(spec, x, x_stride, scale, t, n, out, out_stride, 0, n);
}

posenc_status posenc_add_f32_part(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                                  const int64_t *positions, int64_t first, int64_t n, float *out, int64_t out_stride,
                                  int64_t begin, int64_t end) {
  return guarded([&] {
    Call c = with_activations(table_call(spec, first, n, out, out_stride, Dst::kF32, begin, end), x, x_stride, scale);
    c.positions = positions;
    return run_call(c);
  });
}
posenc_status posenc_add_f32(const posenc_spec *spec, const float *x, int64_t x_stride, float scale,
                             const int64_t *positions, int64_t first, int64_t n, float *out, int64_t out_stride) {
  return posenc_add_f32_part(spec, x, x_stride, scale, positions, first, n, out, out_stride, 0, n);
}

// The embeddings of a float32, bfloat16 or binary16 table: the same call, the table's type and its Src apart.
#define POSENC_EMBED_CALL(name, T, src)                                                                              \
  posenc_status name##_part(const posenc_spec *spec, const T *table, int64_t vocab, int64_t table_stride,            \
                            const int32_t *tokens, float scale, const int64_t *positions, int64_t first, int64_t n,  \
                            float *out, int64_t out_stride, int64_t begin, int64_t end) {                            \
    return guarded([&] {                                                                                             \
      return run_call(embed_call(spec, table, vocab, table_stride, tokens, scale, positions, first, n, out,          \
                                 out_stride, src, begin, end));                                                      \
    });                                                                                                              \
  }                                                                                                                  \
  posenc_status name(const posenc_spec *spec, const T *table, int64_t vocab, int64_t table_stride,                   \
                     const int32_t *tokens, float scale, const int64_t *positions, int64_t first, int64_t n,         \
                     float *out, int64_t out_stride) {                                                               \
    return name##_part(spec, table, vocab, table_stride, tokens, scale, positions, first, n, out, out_stride, 0, n); \
  }
POSENC_EMBED_CALL(posenc_embed_f32, float, Src::kTableF32)
POSENC_EMBED_CALL(posenc_embed_bf16, uint16_t, Src::kTableBF16)
POSENC_EMBED_CALL(posenc_embed_f16, uint16_t, Src::kTableF16)
#undef POSENC_EMBED_CALL

posenc_status posenc_embed_learned_f32_part(int64_t d_model, const float *table, int64_t vocab, int64_t table_stride,
                                            const int32_t *tokens, float scale, const float *pos_table,
                                            int64_t pos_rows, int64_t pos_stride, const int64_t *positions,
                                            int64_t first, int64_t n, float *out, int64_t out_stride, int64_t begin,
                                            int64_t end) {
  return guarded([&]() -> posenc_status {
    if (n < 0) return POSENC_ERR_INVALID;
    if (n == 0) {
      if (d_model < 1) return POSENC_ERR_INVALID;
      return range_ok(begin, end, 0) ? POSENC_OK : POSENC_ERR_INVALID;
    }
    if (!table || !tokens || !pos_table || !out) return POSENC_ERR_NULL;
    if (d_model < 1 || vocab < 0 || pos_rows < 0 || table_stride < d_model || pos_stride < d_model ||
        out_stride < d_model)
      return POSENC_ERR_INVALID;
    if (!extent_fits(n, out_stride, 1, 0, d_model, 4) || !extent_fits(vocab, table_stride, 1, 0, d_model, 4) ||
        !extent_fits(pos_rows, pos_stride, 1, 0, d_model, 4))
      return POSENC_ERR_OVERFLOW;
    for (int64_t r = 0; r < n; ++r) {
      int64_t p;
      if (positions) {
        p = positions[r];
      } else if (__builtin_add_overflow(first, r, &p)) {
        return POSENC_ERR_OUT_OF_RANGE;
      }
      if (p != POSENC_PAD && (p < 0 || p >= pos_rows)) return POSENC_ERR_OUT_OF_RANGE;
      if (!positions && p == POSENC_PAD) return POSENC_ERR_OUT_OF_RANGE;
      if (tokens[r] < 0 || int64_t(tokens[r]) >= vocab) return POSENC_ERR_OUT_OF_RANGE;
    }
    const Path *path = active_path();
    if (!path) return POSENC_ERR_UNSUPPORTED;
    if (!range_ok(begin, end, n)) return POSENC_ERR_INVALID;
    if (begin == end) return POSENC_OK;
    // rows [begin, end), as in run_call; first + r was checked for every r < n
    LearnedJob job{d_model,
                   table,
                   table_stride,
                   tokens + begin,
                   scale,
                   pos_table,
                   pos_stride,
                   positions ? positions + begin : nullptr,
                   positions ? first : first + begin,
                   end - begin,
                   out + begin * out_stride,
                   out_stride,
                   streams(n, out_stride)};
    FpEnvironment env;
    path->run_learned(job);
    return POSENC_OK;
  });
}
posenc_status posenc_embed_learned_f32(int64_t d_model, const float *table, int64_t vocab, int64_t table_stride,
                                       const int32_t *tokens, float scale, const float *pos_table, int64_t pos_rows,
                                       int64_t pos_stride, const int64_t *positions, int64_t first, int64_t n,
                                       float *out, int64_t out_stride) {
  return posenc_embed_learned_f32_part(d_model, table, vocab, table_stride, tokens, scale, pos_table, pos_rows,
                                       pos_stride, positions, first, n, out, out_stride, 0, n);
}

}  // extern "C"
