// The RoPE functions of the C ABI (docs/contract.md section 4): argument checking in the documented order, then
// one RopeJob on the active path. Nothing is written before every check has passed, and no exception
// leaves this file. posenc_rope_init lives in rope_init.cpp.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "abi/abi.hpp"
#include "abi/fpenv.hpp"
#include "abi/rope_overlap.hpp"
#include "dispatch/dispatch.hpp"
#include "kernel/job.hpp"
#include "posenc/posenc.h"
#include "setup/freq.hpp"

namespace posenc {
namespace detail {
namespace {

constexpr double kMinMag = 0x1p-64, kMaxMag = 0x1p64;  // attention_scale
constexpr int32_t kMaxAxes = 4;

int pairs_value(const posenc_rope &r) {
  int v = 0;
  static_assert(sizeof(r.pairs) == sizeof(int), "posenc_rope_pairs is int-sized");
  std::memcpy(&v, &r.pairs, sizeof v);
  return v;
}

// The PE spec whose frequencies base^(-i/D), D = h, are RoPE's base^(-2i/r).
posenc_spec base_spec(const posenc_rope &r) {
  posenc_spec s;
  s.d_model = r.rotary_dim;
  s.layout = POSENC_INTERLEAVED;
  s.base = r.base;
  s.freq_denominator = double(r.rotary_dim / 2);
  s.position_scale = r.position_scale;
  return s;
}

// Multi-axis fields: 1 to 4 axes, an axis map where there is more than one (or given at all), every entry
// naming an axis there is.
posenc_status check_axes(const posenc_rope &r) {
  if (r.axes < 1 || r.axes > kMaxAxes) return POSENC_ERR_INVALID;
  if (!r.axis) return r.axes == 1 ? POSENC_OK : POSENC_ERR_INVALID;
  const int64_t h = r.rotary_dim / 2;
  for (int64_t i = 0; i < h; ++i)
    if (r.axis[i] >= r.axes) return POSENC_ERR_INVALID;
  return POSENC_OK;
}

posenc_status check_rope(const posenc_rope &r) {
  if (r.rotary_dim < 2 || r.rotary_dim % 2 != 0) return POSENC_ERR_INVALID;
  const int pairs = pairs_value(r);
  if (pairs != POSENC_ROPE_HALVES && pairs != POSENC_ROPE_INTERLEAVED) return POSENC_ERR_INVALID;
  if (!std::isfinite(r.position_scale)) return POSENC_ERR_INVALID;
  if (!(r.attention_scale >= kMinMag && r.attention_scale <= kMaxMag)) return POSENC_ERR_INVALID;
  const posenc_status sa = check_axes(r);
  if (sa != POSENC_OK) return sa;
  if (r.freq) return check_explicit(r.freq, r.rotary_dim / 2, r.position_scale);
  return check_spec(base_spec(r));
}

// The positions of a call with A axes: A n explicit values (axis-major; OVERFLOW when they cannot all be in
// memory), POSENC_PAD allowed on axis 0 only, or first + t on every axis.
posenc_status check_axis_positions(const int64_t *positions, int64_t first, int64_t n, int axes) {
  if (axes <= 1 || !positions) return check_positions(positions, first, n);
  if (n > std::numeric_limits<int64_t>::max() / int64_t(sizeof(int64_t) * size_t(axes))) return POSENC_ERR_OVERFLOW;
  const posenc_status s0 = check_positions(positions, first, n);  // axis 0
  if (s0 != POSENC_OK) return s0;
  for (int64_t i = n; i < int64_t(axes) * n; ++i)
    if (positions[i] == POSENC_PAD || !position_ok(positions[i])) return POSENC_ERR_OUT_OF_RANGE;
  return POSENC_OK;
}

// Real-valued positions (posenc_rope_*_real): frequencies |position_scale f_i| below 2^52, as the timesteps'
// (freq.hpp, check_real_positions_spec), on a valid spec.
posenc_status check_real_rope(const posenc_rope &r) {
  if (!r.freq) return check_real_positions_spec(base_spec(r));
  const double s = std::fabs(r.position_scale);
  for (int64_t i = 0; i < r.rotary_dim / 2; ++i)
    if (!(std::fabs(r.freq[i]) * s < 0x1p52)) return POSENC_ERR_INVALID;
  return POSENC_OK;
}

// The A n real positions of a call (axis-major): finite with |t| < 2^31 (OUT_OF_RANGE; NaN fails the
// comparison), OVERFLOW when they cannot all be in memory.
posenc_status check_real_positions(const double *t, int64_t n, int axes) {
  const int64_t a = axes > 1 ? axes : 1;
  if (n > std::numeric_limits<int64_t>::max() / int64_t(sizeof(double) * size_t(a))) return POSENC_ERR_OVERFLOW;
  for (int64_t i = 0; i < a * n; ++i)
    if (!(std::fabs(t[i]) < double(kPositionLimit))) return POSENC_ERR_OUT_OF_RANGE;
  return POSENC_OK;
}

// m = mu 2^e with mu in (0.75, 1.5] (job.hpp, Mag); e = 0 for every m in that range, 1.0 among them.
Mag magnitude(double m) {
  int e = 0;
  const double fr = std::frexp(m, &e);  // m = fr 2^e, fr in [1/2, 1)
  if (fr <= 0.75) --e;
  Mag g;
  g.m = m;
  g.mu = std::ldexp(m, -e);
  g.post = std::ldexp(1.0f, e);
  return g;
}

const Freq *rope_frequencies(const posenc_rope &r) {
  if (r.freq) return explicit_frequencies(r.freq, r.rotary_dim / 2, r.position_scale, fill_tables);
  return frequencies(base_spec(r), fill_tables);
}

// The part's range of tokens, checked after every check of the whole call (docs/contract.md section 3).
bool range_ok(int64_t begin, int64_t end, int64_t n) { return begin >= 0 && begin <= end && end <= n; }

// Every check has passed: the spec's frequency table (the one-time setup, which may report NO_MEMORY; it runs
// for an empty part too, so that a pool's check reports it and the parts find the table built), the fields
// every RoPE job shares, and the kernel on the path for tokens [begin, end) of the n the call describes. The
// caller has moved its tensors' pointers to token begin; the positions move here. Multi-axis positions keep
// the whole call's axis stride n: token t of the part, axis a, is positions[a n + begin + t].
posenc_status launch(const Path &path, const posenc_rope &rope, const int64_t *positions, const double *times,
                     int64_t first, int64_t n, int64_t begin, int64_t end, RopeJob job) {
  FpEnvironment env;  // round-to-nearest, no flush-to-zero, for the setup and the kernel
  // full-width tables (posenc_rope_tables_*) use no frequencies: no spec is built for them
  const Freq *f = job.full_tables ? nullptr : rope_frequencies(rope);
  if (!f && !job.full_tables) return POSENC_ERR_NO_MEMORY;
  if (begin == end) return POSENC_OK;
  job.freq = f;
  job.h = rope.rotary_dim / 2;
  job.pairs = pairs_value(rope);
  job.mag = magnitude(rope.attention_scale);
  job.positions = positions ? positions + begin : nullptr;
  job.first = positions ? first : first + begin;  // first + n - 1 was checked
  job.times = times ? times + begin : nullptr;
  job.n = end - begin;
  job.axis_stride = n;
  job.axes = rope.axes;
  job.axis = rope.axes > 1 ? rope.axis : nullptr;
  path.run_rope(job);
  return POSENC_OK;
}

struct Tensor {
  void *x;
  int64_t heads, ts, hs;
  const void *src;  // posenc_rope_copy_*: the rows read, src strides sts, shs; nullptr in place
  int64_t sts, shs;
};

// A tensor's rows as a lattice of byte ranges (strides that separate no rows are 0); false when a stride in
// bytes does not fit int64.
bool lattice_of(const void *base, int64_t n, int64_t heads, int64_t ts, int64_t hs, int64_t r, size_t size,
                Lattice &out) {
  const i128 sz = i128(size), t = n > 1 ? i128(ts) * sz : 0, h = heads > 1 ? i128(hs) * sz : 0;
  if (t > std::numeric_limits<int64_t>::max() || h > std::numeric_limits<int64_t>::max()) return false;
  out = Lattice{i128(reinterpret_cast<uintptr_t>(base)), n, int64_t(t), heads, int64_t(h), r * int64_t(size)};
  return true;
}

// The positions of a call: integer (positions, or first + t when NULL) or, for the _real calls, doubles; or,
// for the _cached calls, no positions but each token's h cos and h sin given (cos + t cs, sin + t ss).
struct Positions {
  const int64_t *positions;
  int64_t first;
  const double *times;
  bool real;
  const float *cos = nullptr, *sin = nullptr;
  int64_t cs = 0, ss = 0;
  bool given = false;
  bool full = false;  // posenc_rope_tables_*: r cos and r sin per token, one per element (not per pair)
};
Positions integer_positions(const int64_t *positions, int64_t first) {
  return Positions{positions, first, nullptr, false};
}
Positions real_positions(const double *t) { return Positions{nullptr, 0, t, true}; }
Positions given_values(const float *cos, int64_t cos_stride, const float *sin, int64_t sin_stride) {
  Positions p{nullptr, 0, nullptr, false};
  p.cos = cos;
  p.sin = sin;
  p.cs = cos_stride;
  p.ss = sin_stride;
  p.given = true;
  return p;
}
Positions full_tables(const float *cos, int64_t cos_stride, const float *sin, int64_t sin_stride) {
  Positions p = given_values(cos, cos_stride, sin, sin_stride);
  p.full = true;
  return p;
}

// The spec's checks of a call at real positions, after check_rope; then the positions' own checks.
posenc_status check_real_spec(const Positions &p, const posenc_rope &rope) {
  return p.real ? check_real_rope(rope) : POSENC_OK;
}
posenc_status check_call_positions(const Positions &p, int64_t n, int axes) {
  if (p.given) return POSENC_OK;  // the given rows were checked with the tensors
  return p.real ? check_real_positions(p.times, n, axes) : check_axis_positions(p.positions, p.first, n, axes);
}

// n > 0 rows of h floats of a cos/sin cache (written by posenc_rope_cache_f32, read by the _cached calls):
// strides of at least h where they separate rows, not negative (INVALID), the rows in memory (OVERFLOW); then
// the two as lattices of byte ranges.
posenc_status cache_rows(const float *cos, int64_t cos_stride, const float *sin, int64_t sin_stride, int64_t n,
                         int64_t h, Lattice &c, Lattice &s, bool shared = false) {
  // shared: rows only read may repeat (posenc_rope_tables_*: any stride >= 0)
  if (!shared && n > 1 && (cos_stride < h || sin_stride < h)) return POSENC_ERR_INVALID;
  if (cos_stride < 0 || sin_stride < 0) return POSENC_ERR_INVALID;
  if (!extent_fits(n, cos_stride, 1, 0, h, 4) || !extent_fits(n, sin_stride, 1, 0, h, 4)) return POSENC_ERR_OVERFLOW;
  // extent_fits above bounds (n - 1) stride 4 bytes; with one row the strides separate nothing
  c = Lattice{i128(reinterpret_cast<uintptr_t>(cos)), n, n > 1 ? cos_stride * 4 : 0, 1, 0, h * 4};
  s = Lattice{i128(reinterpret_cast<uintptr_t>(sin)), n, n > 1 ? sin_stride * 4 : 0, 1, 0, h * 4};
  return POSENC_OK;
}

// The given cos and sin rows of a _cached call (n > 0): cache_rows' checks, and apart from every destination
// row (INVALID: they are read while the tensors are written).
posenc_status check_given(const Positions &p, int64_t n, int64_t h, const Lattice *dst, int count) {
  Lattice c, s;
  const posenc_status sc = cache_rows(p.cos, p.cs, p.sin, p.ss, n, p.full ? 2 * h : h, c, s, p.full);
  if (sc != POSENC_OK) return sc;
  for (int i = 0; i < count; ++i)
    if (cross_overlaps(c, dst[i]) || cross_overlaps(s, dst[i])) return POSENC_ERR_INVALID;
  return POSENC_OK;
}

// posenc_rope_* and posenc_rope_qk_*: up to two tensors of head rows, T of `size` bytes; tokens [begin, end).
// copy (posenc_rope_copy_*): one tensor, read from t[0].src.
posenc_status run_apply(const posenc_rope *rope, const Positions &pos, int64_t n, const Tensor (&t)[2], Dst dst,
                        int64_t begin, int64_t end, bool copy = false) {
  if (n < 0) return POSENC_ERR_INVALID;
  if (n == 0) {
    const posenc_status s0 = rope ? check_rope(*rope) : POSENC_OK;
    if (s0 != POSENC_OK) return s0;
    return range_ok(begin, end, 0) ? POSENC_OK : POSENC_ERR_INVALID;
  }
  if (!rope || (pos.real && !pos.times) || (pos.given && (!pos.cos || !pos.sin))) return POSENC_ERR_NULL;
  for (const Tensor &x : t)
    if (x.heads > 0 && !x.x) return POSENC_ERR_NULL;
  if (copy && t[0].heads > 0 && !t[0].src) return POSENC_ERR_NULL;
  const posenc_status sr = check_rope(*rope);
  if (sr != POSENC_OK) return sr;
  const posenc_status sreal = check_real_spec(pos, *rope);
  if (sreal != POSENC_OK) return sreal;
  const int64_t r = rope->rotary_dim;
  const size_t size = dst == Dst::kF32 ? 4 : 2;
  Lattice lat[2];
  for (int i = 0; i < 2; ++i) {
    const Tensor &x = t[i];
    if (x.heads < 0 || x.ts < 0 || x.hs < 0) return POSENC_ERR_INVALID;
  }
  if (copy && (t[0].sts < 0 || t[0].shs < 0)) return POSENC_ERR_INVALID;
  // a row of r elements whose bytes do not fit in int64 can be in no tensor that exists
  if ((t[0].heads > 0 || t[1].heads > 0) && i128(r) * i128(size) > std::numeric_limits<int64_t>::max())
    return POSENC_ERR_OVERFLOW;
  for (int i = 0; i < 2; ++i) {  // in bytes, in 128 bits: no product here can overflow
    const Tensor &x = t[i];
    if (x.heads == 0) continue;
    // a stride that separates no rows (one token, one head) is 0 here, whatever its value
    if (!lattice_of(x.x, n, x.heads, x.ts, x.hs, r, size, lat[i])) return POSENC_ERR_OVERFLOW;
    if (self_overlaps(lat[i])) return POSENC_ERR_INVALID;
  }
  // source rows may overlap each other (they are only read)
  Lattice from{};
  if (copy && t[0].heads > 0 && !lattice_of(t[0].src, n, t[0].heads, t[0].sts, t[0].shs, r, size, from))
    return POSENC_ERR_OVERFLOW;
  for (const Tensor &x : t)
    if (x.heads > 0 && !extent_fits(n, x.ts, x.heads, x.hs, r, size)) return POSENC_ERR_OVERFLOW;
  if (copy && t[0].heads > 0 && !extent_fits(n, t[0].sts, t[0].heads, t[0].shs, r, size)) return POSENC_ERR_OVERFLOW;
  // after the extents are known to exist: a collision of q and k rows is decided on them
  if (t[0].heads > 0 && t[1].heads > 0 && cross_overlaps(lat[0], lat[1])) return POSENC_ERR_INVALID;
  // source and destination: the same rows (in place), or apart
  const bool same = copy && t[0].heads > 0 && from.base == lat[0].base && from.sa == lat[0].sa && from.sb == lat[0].sb;
  if (copy && t[0].heads > 0 && !same && cross_overlaps(from, lat[0])) return POSENC_ERR_INVALID;
  if (pos.given) {
    Lattice written[2];
    int count = 0;
    for (int i = 0; i < 2; ++i)
      if (t[i].heads > 0) written[count++] = lat[i];
    const posenc_status sg = check_given(pos, n, r / 2, written, count);
    if (sg != POSENC_OK) return sg;
  }
  const posenc_status sp = check_call_positions(pos, n, rope->axes);
  if (sp != POSENC_OK) return sp;
  const Path *path = active_path();
  if (!path) return POSENC_ERR_UNSUPPORTED;
  if (!range_ok(begin, end, n)) return POSENC_ERR_INVALID;
  if (t[0].heads == 0 && t[1].heads == 0) return POSENC_OK;
  RopeJob job{};
  job.cache = false;
  job.dst = dst;
  // token begin of each tensor, for a part that writes anything: begin <= n - 1 token strides, which were
  // checked to fit (with one token, whose stride may be anything, begin is 0)
  const int64_t at = begin < end ? begin : 0;
  for (int i = 0; i < 2; ++i) {
    void *x = t[i].heads > 0 ? static_cast<char *>(t[i].x) + at * t[i].ts * int64_t(size) : nullptr;
    job.t[i] = RopeTensor{x, t[i].heads, t[i].ts, t[i].hs, x, t[i].ts, t[i].hs};
  }
  if (copy && t[0].heads > 0 && !same) {
    job.t[0].src = static_cast<const char *>(t[0].src) + at * t[0].sts * int64_t(size);
    job.t[0].src_token_stride = t[0].sts;
    job.t[0].src_head_stride = t[0].shs;
  }
  if (pos.given) {
    job.cos_in = pos.cos + at * pos.cs;
    job.sin_in = pos.sin + at * pos.ss;
    job.cos_in_stride = pos.cs;
    job.sin_in_stride = pos.ss;
    job.full_tables = pos.full;
  }
  return launch(*path, *rope, pos.positions, pos.times, pos.first, n, begin, end, job);
}

posenc_status run_cache(const posenc_rope *rope, const Positions &pos, int64_t n, float *cos_out, int64_t cos_stride,
                        float *sin_out, int64_t sin_stride, int64_t begin, int64_t end) {
  if (n < 0) return POSENC_ERR_INVALID;
  if (n == 0) {
    const posenc_status s0 = rope ? check_rope(*rope) : POSENC_OK;
    if (s0 != POSENC_OK) return s0;
    return range_ok(begin, end, 0) ? POSENC_OK : POSENC_ERR_INVALID;
  }
  if (!rope || !cos_out || !sin_out || (pos.real && !pos.times)) return POSENC_ERR_NULL;
  const posenc_status sr = check_rope(*rope);
  if (sr != POSENC_OK) return sr;
  const posenc_status sreal = check_real_spec(pos, *rope);
  if (sreal != POSENC_OK) return sreal;
  const int64_t h = rope->rotary_dim / 2;
  Lattice c, s;
  const posenc_status sc = cache_rows(cos_out, cos_stride, sin_out, sin_stride, n, h, c, s);
  if (sc != POSENC_OK) return sc;
  if (cross_overlaps(c, s)) return POSENC_ERR_INVALID;
  const posenc_status sp = check_call_positions(pos, n, rope->axes);
  if (sp != POSENC_OK) return sp;
  const Path *path = active_path();
  if (!path) return POSENC_ERR_UNSUPPORTED;
  if (!range_ok(begin, end, n)) return POSENC_ERR_INVALID;
  RopeJob job{};
  job.cache = true;
  job.dst = Dst::kF32;
  const int64_t at = begin < end ? begin : 0;  // as in run_apply
  job.cos_out = cos_out + at * cos_stride;
  job.sin_out = sin_out + at * sin_stride;
  job.cos_stride = cos_stride;
  job.sin_stride = sin_stride;
  return launch(*path, *rope, pos.positions, pos.times, pos.first, n, begin, end, job);
}

}  // namespace
}  // namespace detail
}  // namespace posenc

using namespace posenc::detail;

extern "C" {

posenc_rope posenc_rope_default(int64_t rotary_dim) {
  // rotary_dim, pairs, base, position_scale, freq, attention_scale, axes, axis, in posenc.h's order
  return posenc_rope{rotary_dim, POSENC_ROPE_HALVES, 10000.0, 1.0, nullptr, 1.0, 1, nullptr};
}

posenc_status posenc_rope_cache_f32_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                         float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride,
                                         int64_t begin, int64_t end) {
  return guarded([&] {
    return run_cache(rope, integer_positions(positions, first), n, cos_out, cos_stride, sin_out, sin_stride, begin,
                     end);
  });
}
posenc_status posenc_rope_cache_f32(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n,
                                    float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride) {
  return posenc_rope_cache_f32_part(rope, positions, first, n, cos_out, cos_stride, sin_out, sin_stride, 0, n);
}

// Every RoPE kernel is its _part function: the whole call is the part [0, n).
#define POSENC_ROPE_ONE(name, T, dst)                                                                                  \
  posenc_status name##_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, T *x,         \
                            int64_t heads, int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end) {    \
    return guarded([&] {                                                                                               \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, nullptr, 0, 0}, {nullptr, 0, 0, 0, nullptr, 0, 0}};   \
      return run_apply(rope, integer_positions(positions, first), n, t, dst, begin, end);                              \
    });                                                                                                                \
  }                                                                                                                    \
  posenc_status name(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, T *x, int64_t heads, \
                     int64_t token_stride, int64_t head_stride) {                                                      \
    return name##_part(rope, positions, first, n, x, heads, token_stride, head_stride, 0, n);                          \
  }
POSENC_ROPE_ONE(posenc_rope_f32, float, Dst::kF32)
POSENC_ROPE_ONE(posenc_rope_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_ONE(posenc_rope_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_ONE

#define POSENC_ROPE_QK(name, T, dst)                                                                               \
  posenc_status name##_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, T *q,     \
                            int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, T *k, int64_t k_heads, \
                            int64_t k_token_stride, int64_t k_head_stride, int64_t begin, int64_t end) {           \
    return guarded([&] {                                                                                           \
      const Tensor t[2] = {{q, q_heads, q_token_stride, q_head_stride, nullptr, 0, 0},                             \
                           {k, k_heads, k_token_stride, k_head_stride, nullptr, 0, 0}};                            \
      return run_apply(rope, integer_positions(positions, first), n, t, dst, begin, end);                          \
    });                                                                                                            \
  }                                                                                                                \
  posenc_status name(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, T *q,            \
                     int64_t q_heads, int64_t q_token_stride, int64_t q_head_stride, T *k, int64_t k_heads,        \
                     int64_t k_token_stride, int64_t k_head_stride) {                                              \
    return name##_part(rope, positions, first, n, q, q_heads, q_token_stride, q_head_stride, k, k_heads,           \
                       k_token_stride, k_head_stride, 0, n);                                                       \
  }
// Out of place: tokens' rows read from src and written rotated to x in one pass.
#define POSENC_ROPE_COPY(name, T, dst)                                                                                 \
  posenc_status name##_part(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, const T *src, \
                            int64_t src_token_stride, int64_t src_head_stride, T *x, int64_t heads,                    \
                            int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end) {                   \
    return guarded([&] {                                                                                               \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, src, src_token_stride, src_head_stride},              \
                           {nullptr, 0, 0, 0, nullptr, 0, 0}};                                                         \
      return run_apply(rope, integer_positions(positions, first), n, t, dst, begin, end, true);                        \
    });                                                                                                                \
  }                                                                                                                    \
  posenc_status name(const posenc_rope *rope, const int64_t *positions, int64_t first, int64_t n, const T *src,        \
                     int64_t src_token_stride, int64_t src_head_stride, T *x, int64_t heads, int64_t token_stride,     \
                     int64_t head_stride) {                                                                            \
    return name##_part(rope, positions, first, n, src, src_token_stride, src_head_stride, x, heads, token_stride,      \
                       head_stride, 0, n);                                                                             \
  }
POSENC_ROPE_COPY(posenc_rope_copy_f32, float, Dst::kF32)
POSENC_ROPE_COPY(posenc_rope_copy_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_COPY(posenc_rope_copy_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_COPY

POSENC_ROPE_QK(posenc_rope_qk_f32, float, Dst::kF32)
POSENC_ROPE_QK(posenc_rope_qk_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_QK(posenc_rope_qk_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_QK

// At real-valued positions: the same calls with the doubles in place of positions and first.
posenc_status posenc_rope_cache_real_f32_part(const posenc_rope *rope, const double *positions, int64_t n,
                                              float *cos_out, int64_t cos_stride, float *sin_out, int64_t sin_stride,
                                              int64_t begin, int64_t end) {
  return guarded([&] {
    return run_cache(rope, real_positions(positions), n, cos_out, cos_stride, sin_out, sin_stride, begin, end);
  });
}
posenc_status posenc_rope_cache_real_f32(const posenc_rope *rope, const double *positions, int64_t n, float *cos_out,
                                         int64_t cos_stride, float *sin_out, int64_t sin_stride) {
  return posenc_rope_cache_real_f32_part(rope, positions, n, cos_out, cos_stride, sin_out, sin_stride, 0, n);
}

#define POSENC_ROPE_REAL(name, T, dst)                                                                               \
  posenc_status name##_part(const posenc_rope *rope, const double *positions, int64_t n, T *x, int64_t heads,        \
                            int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end) {                 \
    return guarded([&] {                                                                                             \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, nullptr, 0, 0}, {nullptr, 0, 0, 0, nullptr, 0, 0}}; \
      return run_apply(rope, real_positions(positions), n, t, dst, begin, end);                                      \
    });                                                                                                              \
  }                                                                                                                  \
  posenc_status name(const posenc_rope *rope, const double *positions, int64_t n, T *x, int64_t heads,               \
                     int64_t token_stride, int64_t head_stride) {                                                    \
    return name##_part(rope, positions, n, x, heads, token_stride, head_stride, 0, n);                               \
  }
POSENC_ROPE_REAL(posenc_rope_real_f32, float, Dst::kF32)
POSENC_ROPE_REAL(posenc_rope_real_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_REAL(posenc_rope_real_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_REAL

#define POSENC_ROPE_COPY_REAL(name, T, dst)                                                                        \
  posenc_status name##_part(const posenc_rope *rope, const double *positions, int64_t n, const T *src,             \
                            int64_t src_token_stride, int64_t src_head_stride, T *x, int64_t heads,                \
                            int64_t token_stride, int64_t head_stride, int64_t begin, int64_t end) {               \
    return guarded([&] {                                                                                           \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, src, src_token_stride, src_head_stride},          \
                           {nullptr, 0, 0, 0, nullptr, 0, 0}};                                                     \
      return run_apply(rope, real_positions(positions), n, t, dst, begin, end, true);                              \
    });                                                                                                            \
  }                                                                                                                \
  posenc_status name(const posenc_rope *rope, const double *positions, int64_t n, const T *src,                    \
                     int64_t src_token_stride, int64_t src_head_stride, T *x, int64_t heads, int64_t token_stride, \
                     int64_t head_stride) {                                                                        \
    return name##_part(rope, positions, n, src, src_token_stride, src_head_stride, x, heads, token_stride,         \
                       head_stride, 0, n);                                                                         \
  }
POSENC_ROPE_COPY_REAL(posenc_rope_copy_real_f32, float, Dst::kF32)
POSENC_ROPE_COPY_REAL(posenc_rope_copy_real_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_COPY_REAL(posenc_rope_copy_real_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_COPY_REAL

#define POSENC_ROPE_QK_REAL(name, T, dst)                                                                          \
  posenc_status name##_part(const posenc_rope *rope, const double *positions, int64_t n, T *q, int64_t q_heads,    \
                            int64_t q_token_stride, int64_t q_head_stride, T *k, int64_t k_heads,                  \
                            int64_t k_token_stride, int64_t k_head_stride, int64_t begin, int64_t end) {           \
    return guarded([&] {                                                                                           \
      const Tensor t[2] = {{q, q_heads, q_token_stride, q_head_stride, nullptr, 0, 0},                             \
                           {k, k_heads, k_token_stride, k_head_stride, nullptr, 0, 0}};                            \
      return run_apply(rope, real_positions(positions), n, t, dst, begin, end);                                    \
    });                                                                                                            \
  }                                                                                                                \
  posenc_status name(const posenc_rope *rope, const double *positions, int64_t n, T *q, int64_t q_heads,           \
                     int64_t q_token_stride, int64_t q_head_stride, T *k, int64_t k_heads, int64_t k_token_stride, \
                     int64_t k_head_stride) {                                                                      \
    return name##_part(rope, positions, n, q, q_heads, q_token_stride, q_head_stride, k, k_heads, k_token_stride,  \
                       k_head_stride, 0, n);                                                                       \
  }
POSENC_ROPE_QK_REAL(posenc_rope_qk_real_f32, float, Dst::kF32)
POSENC_ROPE_QK_REAL(posenc_rope_qk_real_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_QK_REAL(posenc_rope_qk_real_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_QK_REAL

// By given cos/sin rows (posenc_rope_cache_f32's): the same rotations with the values in place of positions.
#define POSENC_ROPE_CACHED(name, T, dst)                                                                              \
  posenc_status name##_part(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,          \
                            int64_t sin_stride, int64_t n, T *x, int64_t heads, int64_t token_stride,                 \
                            int64_t head_stride, int64_t begin, int64_t end) {                                        \
    return guarded([&] {                                                                                              \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, nullptr, 0, 0}, {nullptr, 0, 0, 0, nullptr, 0, 0}};  \
      return run_apply(rope, given_values(cos, cos_stride, sin, sin_stride), n, t, dst, begin, end);                  \
    });                                                                                                               \
  }                                                                                                                   \
  posenc_status name(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,                 \
                     int64_t sin_stride, int64_t n, T *x, int64_t heads, int64_t token_stride, int64_t head_stride) { \
    return name##_part(rope, cos, cos_stride, sin, sin_stride, n, x, heads, token_stride, head_stride, 0, n);         \
  }
POSENC_ROPE_CACHED(posenc_rope_cached_f32, float, Dst::kF32)
POSENC_ROPE_CACHED(posenc_rope_cached_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_CACHED(posenc_rope_cached_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_CACHED

#define POSENC_ROPE_COPY_CACHED(name, T, dst)                                                                        \
  posenc_status name##_part(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,         \
                            int64_t sin_stride, int64_t n, const T *src, int64_t src_token_stride,                   \
                            int64_t src_head_stride, T *x, int64_t heads, int64_t token_stride, int64_t head_stride, \
                            int64_t begin, int64_t end) {                                                            \
    return guarded([&] {                                                                                             \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, src, src_token_stride, src_head_stride},            \
                           {nullptr, 0, 0, 0, nullptr, 0, 0}};                                                       \
      return run_apply(rope, given_values(cos, cos_stride, sin, sin_stride), n, t, dst, begin, end, true);           \
    });                                                                                                              \
  }                                                                                                                  \
  posenc_status name(const posenc_rope *rope, const float *cos, int64_t cos_stride, const float *sin,                \
                     int64_t sin_stride, int64_t n, const T *src, int64_t src_token_stride, int64_t src_head_stride, \
                     T *x, int64_t heads, int64_t token_stride, int64_t head_stride) {                               \
    return name##_part(rope, cos, cos_stride, sin, sin_stride, n, src, src_token_stride, src_head_stride, x, heads,  \
                       token_stride, head_stride, 0, n);                                                             \
  }
POSENC_ROPE_COPY_CACHED(posenc_rope_copy_cached_f32, float, Dst::kF32)
POSENC_ROPE_COPY_CACHED(posenc_rope_copy_cached_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_COPY_CACHED(posenc_rope_copy_cached_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_COPY_CACHED

// By full-width tables (diffusers' apply_rotary_emb): the copy's checks for a spec of d elements in the given
// pairs, whose frequencies are never used (launch builds none), with r tables per token.
#define POSENC_ROPE_TABLES(name, T, dst)                                                                             \
  posenc_status name##_part(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride,                \
                            const float *sin, int64_t sin_stride, int64_t n, const T *src, int64_t src_token_stride, \
                            int64_t src_head_stride, T *x, int64_t heads, int64_t token_stride, int64_t head_stride, \
                            int64_t begin, int64_t end) {                                                            \
    return guarded([&] {                                                                                             \
      posenc_rope rope = posenc_rope_default(d);                                                                     \
      std::memcpy(&rope.pairs, &pairs, sizeof pairs); /* unknown values are refused, not loaded */                   \
      const Tensor t[2] = {{x, heads, token_stride, head_stride, src, src_token_stride, src_head_stride},            \
                           {nullptr, 0, 0, 0, nullptr, 0, 0}};                                                       \
      return run_apply(&rope, full_tables(cos, cos_stride, sin, sin_stride), n, t, dst, begin, end, true);           \
    });                                                                                                              \
  }                                                                                                                  \
  posenc_status name(int64_t d, posenc_rope_pairs pairs, const float *cos, int64_t cos_stride, const float *sin,     \
                     int64_t sin_stride, int64_t n, const T *src, int64_t src_token_stride, int64_t src_head_stride, \
                     T *x, int64_t heads, int64_t token_stride, int64_t head_stride) {                               \
    return name##_part(d, pairs, cos, cos_stride, sin, sin_stride, n, src, src_token_stride, src_head_stride, x,     \
                       heads, token_stride, head_stride, 0, n);                                                      \
  }
POSENC_ROPE_TABLES(posenc_rope_tables_f32, float, Dst::kF32)
POSENC_ROPE_TABLES(posenc_rope_tables_bf16, uint16_t, Dst::kBF16)
POSENC_ROPE_TABLES(posenc_rope_tables_f16, uint16_t, Dst::kF16)
#undef POSENC_ROPE_TABLES

}  // extern "C"
