// libFuzzer target over the whole C ABI. The input is decoded into one call of one kernel: a spec (or a
// d_model), sizes, strides, positions, token ids, a scale, NULLs, and input values. The target predicts the
// status from the header's rules alone (its own checks, in the documented order, in 128-bit arithmetic)
// and then holds the library to the contract:
//  - the status is the predicted one;
//  - on an error, every byte of every buffer is unchanged;
//  - the kernel's _part twin (posenc.h, "Parts of a call"): a cover of [0, n) by parts in any order writes the
//    whole call's bytes, and any part returns the whole call's status, then the range's (INVALID outside
//    [0, n]), writing only its own rows of the whole call (nothing on an error);
//  - on success, every available path returns the scalar path's bytes (the bytes between rows included,
//    which must keep their canary), and the values are right: PE in [-1, 1] with sin^2 + cos^2 = 1, +0.0
//    rows for POSENC_PAD and the odd column, sin 0 = +0 and cos 0 = 1, table_* equal to rows_* at the same
//    positions, bfloat16 and binary16 equal to the float32 value rounded to nearest-even, and every fused
//    kernel equal to fmaf(scale, x, pe) element by element, NaN results by posenc.h's NaN rule.
// Buffers are sized from the arguments when the library may touch them, and kept small (64 Ki elements)
// so that an execution stays fast; calls whose buffers would be larger are skipped. Calls predicted to
// fail before any position or token is read get 16-element buffers: reading or writing more is a bug that
// ASan reports.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "posenc/posenc.h"
#include "support/halves.hpp"
#include "support/rope.hpp"

namespace {

using i128 = __int128;

constexpr int64_t k2p31 = int64_t(1) << 31;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr i128 kMaxElements = 1 << 16;  // per buffer, for calls that are run
constexpr size_t kSmall = 16;           // elements of each buffer a failing call gets

const char *g_call = "";  // the decoded call, printed with a violation

[[noreturn]] void fail(const char *what, long a = 0, long b = 0) {
  std::fprintf(stderr, "contract violation: %s (%ld, %ld)\n%s\n", what, a, b, g_call);
  std::abort();
}

// ---- reading the input ----------------------------------------------------------------------------

class Input {
 public:
  Input(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() {
    if (n_ == 0) return 0;  // an exhausted input reads as zeros: the most ordinary choices below
    --n_;
    return *p_++;
  }
  uint16_t u16() { return uint16_t(u8() | u8() << 8); }
  uint32_t u32() { return uint32_t(u16()) | uint32_t(u16()) << 16; }
  uint64_t u64() { return uint64_t(u32()) | uint64_t(u32()) << 32; }
  int64_t i64() { return int64_t(u64()); }
  double f64() {
    const uint64_t b = u64();
    double v;
    std::memcpy(&v, &b, 8);
    return v;
  }
  float f32() {
    const uint32_t b = u32();
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }

 private:
  const uint8_t *p_;
  size_t n_;
};

template <class T, size_t N>
T pick(const T (&table)[N], uint8_t m) {
  return table[m % N];
}

const double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();
const double kDenorm = std::numeric_limits<double>::denorm_min(), kDMax = std::numeric_limits<double>::max();

int64_t decode_d(Input &in) {
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {0, -1, kI64Min, kI64Max, int64_t(1) << 62, int64_t(1) << 40, 4097,
                                    (int64_t(1) << 61) - 2, int64_t(1) << 60, 2 * (((int64_t(1) << 56) + 17) / 21 * 16 - 16)};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 224) return 1 + m % 96;
  if (m < 240) return 1 + in.u16() % 2048;
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

int64_t decode_n(Input &in) {
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {-1, -2, kI64Min, kI64Max, int64_t(1) << 62, int64_t(1) << 61,
                                    int64_t(1) << 40, int64_t(1) << 32, k2p31, kI64Max / 2, 65, 129};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 200) return m % 80;
  if (m < 240) return in.u16() % 700;
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

// A stride for rows of d elements of `size` bytes, `rows` of them.
int64_t saturate(i128 v) { return v > kI64Max ? kI64Max : v < kI64Min ? kI64Min : int64_t(v); }

int64_t decode_stride(Input &in, int64_t d, int64_t rows, size_t size) {
  const uint8_t m = in.u8();
  if (m < 200) return saturate(i128(d) + m % 8);
  switch (m % 8) {
    case 0: return saturate(i128(d) - 1);
    case 1: return 0;
    case 2: return -1;
    case 3: return kI64Max;
    case 4: return int64_t(1) << 62;
    case 5:  // (rows - 1) strides + d fit in int64, their bytes do not
      return rows > 1 ? (kI64Max / int64_t(size)) / (rows - 1) + 1 : kI64Max;
    case 6: return kI64Min;
    default: return in.i64();
  }
}

int64_t decode_first(Input &in) {
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {kI64Min, kI64Max, k2p31, -k2p31, k2p31 - 1, -(k2p31 - 1), kI64Max - 3, 0};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 160) return int8_t(in.u8());
  if (m < 200) return int32_t(in.u32());
  if (m < 240) return (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

int64_t decode_rows(Input &in) {  // vocab, pos_rows
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {0, -1, kI64Max, int64_t(1) << 62, int64_t(1) << 40, kI64Min};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 220) return 1 + m % 16;
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

double decode_base(Input &in) {
  static const double special[] = {0.0, -0.0, -1.0, 1.0, kNaN, kInf, -kInf, kDenorm, kDMax, 1e-300, 0.5};
  const uint8_t m = in.u8();
  if (m < 100) return 10000.0;
  if (m < 150) return 2.0 + in.u16();
  if (m < 180) return 1.0 + in.u16() / 65536.0;
  if (m < 200) return in.u16() / 65536.0;
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

double decode_denominator(Input &in) {
  static const double special[] = {-1.0, -0.0, kNaN, kInf, kDenorm, 1e-300, kDMax, -kDenorm};
  const uint8_t m = in.u8();
  if (m < 120) return 0.0;
  if (m < 180) return in.u16() / 64.0;
  if (m < 200) return 1e-3 * in.u8();
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

double decode_position_scale(Input &in) {
  static const double special[] = {0.0,     -0.0,  kNaN,    kInf,  -kInf, 0x1p1000, 0x1.fffffffffffffp999,
                                   kDenorm, kDMax, -1e-300, 1e-20, 1000.0};
  const uint8_t m = in.u8();
  if (m < 120) return 1.0;
  if (m < 180) return int16_t(in.u16()) / 256.0;
  if (m < 200) return std::ldexp(1.0, int8_t(in.u8()));
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

float decode_scale(Input &in) {
  static const float special[] = {0.0f,
                                  -0.0f,
                                  std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min()};
  const uint8_t m = in.u8();
  if (m < 150) return 1.0f;
  if (m < 200) return int8_t(in.u8()) / 16.0f;
  if (m < 240) return pick(special, in.u8());
  return in.f32();
}

// ---- the kernels ------------------------------------------------------------------------------------

// The first eleven keep their selector bytes (seeds decode as before); the timestep kernels follow them.
enum Kernel {
  kTableF32,
  kTableBF16,
  kTableF16,
  kRowsF32,
  kRowsBF16,
  kRowsF16,
  kAdd,
  kEmbedF32,
  kEmbedBF16,
  kEmbedF16,
  kLearned,
  kTimesF32,
  kTimesBF16,
  kTimesF16,
  kTimesAdd,
  kKernels
};

bool has_spec(int k) { return k != kLearned; }
bool is_times(int k) { return k >= kTimesF32; }  // real-valued positions: one double per row
bool positions_required(int k) { return k == kRowsF32 || k == kRowsBF16 || k == kRowsF16; }
bool positions_optional(int k) { return k >= kAdd && k <= kLearned; }
bool has_table(int k) { return k >= kEmbedF32 && k <= kLearned; }
bool has_activations(int k) { return k == kAdd || k == kTimesAdd; }
size_t in_size(int k) { return k == kEmbedBF16 || k == kEmbedF16 ? 2 : 4; }
size_t out_size(int k) {
  return k == kTableBF16 || k == kTableF16 || k == kRowsBF16 || k == kRowsF16 || k == kTimesBF16 || k == kTimesF16 ? 2
                                                                                                                   : 4;
}

struct Args {
  int kernel;
  posenc_spec spec;
  bool spec_null, out_null, positions_null, x_null, tokens_null, pos_table_null;
  bool explicit_positions;
  int64_t d, first, n, out_stride, x_stride, vocab, pos_rows, pos_stride;
  float scale;
  std::vector<int64_t> positions;  // decoded only when the call may read them (see main)
  std::vector<int32_t> tokens;
  std::vector<double> times;  // the timestep kernels' rows (positions_null makes the pointer NULL)
};

// The position of row r, for the kernels that take first + r (wrapping: the timestep kernels ignore first,
// which may then be anything, and their positions here are replaced).
int64_t position_of(const Args &a, int64_t r) {
  return a.explicit_positions ? a.positions[size_t(r)] : int64_t(uint64_t(a.first) + uint64_t(r));
}

// ---- the predicted status ---------------------------------------------------------------------------

struct Expect {
  posenc_status status;
  bool or_invalid;  // the spec's largest frequency is too close to 2^1000 to call from a double estimate
};

// OK when every |scale w_i| of a spec with finite fields is below 2^bound_log2, INVALID when one is not.
Expect largest_frequency_below(const posenc_spec &s, long double bound_log2) {
  const int64_t h = s.d_model / 2;
  if (h == 0 || s.position_scale == 0) return {POSENC_OK, false};
  // the largest |scale w_i|: w_0 = 1 when base >= 1, w_(h-1) = base^(-(h-1)/D) when base < 1
  const long double D = s.freq_denominator == 0 ? (long double)h : (long double)s.freq_denominator;
  long double top = std::log2(std::fabs((long double)s.position_scale)), grow = 0;
  if (h >= 2 && s.base < 1) grow = (long double)(h - 1) * (-std::log2((long double)s.base) / D);
  top += grow;
  const long double tol = 1e-9L + 1e-12L * std::fabs(grow);
  if (top >= bound_log2 + tol) return {POSENC_ERR_INVALID, false};
  return {POSENC_OK, top > bound_log2 - tol};
}

Expect spec_status(const posenc_spec &s) {
  int layout;
  std::memcpy(&layout, &s.layout, sizeof layout);
  if (s.d_model < 1 || layout < 0 || layout > 2) return {POSENC_ERR_INVALID, false};
  if (!(s.base > 0) || std::isinf(s.base)) return {POSENC_ERR_INVALID, false};
  if (!(s.freq_denominator >= 0) || std::isinf(s.freq_denominator)) return {POSENC_ERR_INVALID, false};
  if (!std::isfinite(s.position_scale)) return {POSENC_ERR_INVALID, false};
  return largest_frequency_below(s, 1000);
}

// The timestep kernels' own bound on a valid spec: every |scale w_i| below 2^52 (posenc.h).
Expect times_spec_status(const posenc_spec &s) { return largest_frequency_below(s, 52); }

bool extent_fits(int64_t rows, int64_t stride, int64_t width, size_t size) {
  if (rows <= 0) return true;
  const i128 elements = (i128(rows) - 1) * stride + width;  // below 2^127: no overflow
  return elements <= kI64Max / i128(size);
}

// Up to the last check that needs no position or token (NULL, INVALID, OVERFLOW); OK means "go on".
Expect status_before_items(const Args &a) {
  const int k = a.kernel;
  if (a.n < 0) return {POSENC_ERR_INVALID, false};
  if (a.n == 0) {
    if (!has_spec(k)) return {a.d < 1 ? POSENC_ERR_INVALID : POSENC_OK, false};
    return a.spec_null ? Expect{POSENC_OK, false} : spec_status(a.spec);
  }
  if (a.out_null || (has_spec(k) && a.spec_null) || ((positions_required(k) || is_times(k)) && a.positions_null) ||
      ((has_activations(k) || has_table(k)) && a.x_null) || (has_table(k) && a.tokens_null) ||
      (k == kLearned && a.pos_table_null))
    return {POSENC_ERR_NULL, false};
  Expect e{POSENC_OK, false};
  if (has_spec(k)) {
    e = spec_status(a.spec);
    if (e.status != POSENC_OK) return e;
    if (is_times(k)) {
      const Expect t = times_spec_status(a.spec);
      if (t.status != POSENC_OK) return {t.status, e.or_invalid};
      e.or_invalid = e.or_invalid || t.or_invalid;
    }
  } else if (a.d < 1) {
    return {POSENC_ERR_INVALID, false};
  }
  // from here on, a spec too close to call may still make the call INVALID first
  const int64_t d = a.d;
  if (a.out_stride < d) return {POSENC_ERR_INVALID, e.or_invalid};
  if ((has_activations(k) || has_table(k)) && a.x_stride < d) return {POSENC_ERR_INVALID, e.or_invalid};
  if (has_table(k) && a.vocab < 0) return {POSENC_ERR_INVALID, e.or_invalid};
  if (k == kLearned && (a.pos_rows < 0 || a.pos_stride < d)) return {POSENC_ERR_INVALID, e.or_invalid};
  if (!extent_fits(a.n, a.out_stride, d, out_size(k))) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (has_activations(k) && !extent_fits(a.n, a.x_stride, d, 4)) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (has_table(k) && !extent_fits(a.vocab, a.x_stride, d, in_size(k))) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (k == kLearned && !extent_fits(a.pos_rows, a.pos_stride, d, 4)) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  return e;
}

posenc_status item_status(const Args &a) {
  const int k = a.kernel;
  if (is_times(k)) {
    for (int64_t r = 0; r < a.n; ++r)
      if (!(std::fabs(a.times[size_t(r)]) < double(k2p31))) return POSENC_ERR_OUT_OF_RANGE;
    return POSENC_OK;
  }
  for (int64_t r = 0; r < a.n; ++r) {
    if (has_table(k) && (a.tokens[size_t(r)] < 0 || a.tokens[size_t(r)] >= a.vocab)) return POSENC_ERR_OUT_OF_RANGE;
    if (k == kLearned) {
      if (a.explicit_positions) {
        const int64_t p = a.positions[size_t(r)];
        if (p != POSENC_PAD && (p < 0 || p >= a.pos_rows)) return POSENC_ERR_OUT_OF_RANGE;
      } else {
        const i128 p = i128(a.first) + r;
        if (p < 0 || p >= a.pos_rows) return POSENC_ERR_OUT_OF_RANGE;
      }
    } else if (a.explicit_positions) {
      const int64_t p = a.positions[size_t(r)];
      if (p != POSENC_PAD && (p <= -k2p31 || p >= k2p31)) return POSENC_ERR_OUT_OF_RANGE;
    } else {
      const i128 p = i128(a.first) + r;
      if (p <= -k2p31 || p >= k2p31) return POSENC_ERR_OUT_OF_RANGE;
    }
  }
  return POSENC_OK;
}

// The status of a call (`call`: "" or "RoPE ") on one path: what the header's rules allow (want, or INVALID
// when or_invalid, or INVALID or OVERFLOW when or_overflow), and the first path's status on every other path;
// printed for the first path with POSENC_FUZZ_VERBOSE (to see what an input decodes to).
void check_path_status(const std::string &call, posenc_isa isa, posenc_isa first_path, posenc_status st,
                       posenc_status want, bool or_invalid, bool or_overflow, posenc_status &first_status) {
  const bool expected = st == want || (or_invalid && st == POSENC_ERR_INVALID) ||
                        (or_overflow && (st == POSENC_ERR_INVALID || st == POSENC_ERR_OVERFLOW));
  if (!expected) fail((call + "status differs from the header's rules").c_str(), long(st), long(want));
  if (isa != first_path && st != first_status) fail(("paths disagree on the " + call + "status").c_str(), long(isa));
  if (isa == first_path && std::getenv("POSENC_FUZZ_VERBOSE"))
    std::fprintf(stderr, "%s\n  -> %s\n", g_call, posenc_status_string(st));
  first_status = st;
}

// ---- buffers ----------------------------------------------------------------------------------------

struct Buffer {
  std::vector<unsigned char> bytes;
  std::vector<unsigned char> copy;  // what it held before the call
  // an empty buffer (a table of vocab 0) is still a valid, non-NULL pointer
  void *ptr() { return bytes.empty() ? static_cast<void *>(&empty) : bytes.data(); }
  unsigned char empty = 0;
  void keep() { copy = bytes; }
  bool unchanged() const { return bytes == copy; }
};

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Input values: finite in [-4, 4], with an occasional NaN, infinity or subnormal among them.
void fill_inputs(Buffer &b, size_t size, uint64_t seed, uint8_t specials) {
  uint64_t s = seed;
  const size_t count = b.bytes.size() / size;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = splitmix(s);
    if (size == 4) {
      float v = float(int32_t(r & 0xFFFFFF) - 0x800000) / float(0x200000);
      if (specials >= 200 && (r >> 40) % 61 == 0) {
        const uint32_t pats[] = {0x7FC00000u, 0xFF800001u, 0x7F800000u, 0xFF800000u, 0x00000003u};
        std::memcpy(&v, &pats[(r >> 50) % 5], 4);
      }
      std::memcpy(&b.bytes[4 * i], &v, 4);
    } else {
      uint16_t v = uint16_t(r);
      if (specials < 200) v = uint16_t((v & 0x83FF) | 0x3800);  // modest finite values in both formats
      std::memcpy(&b.bytes[2 * i], &v, 2);
    }
  }
  b.keep();
}

// ---- reference values -------------------------------------------------------------------------------

using ref::bits_of_float;
using ref::float_of_bits;
using ref::narrow_bf16;
using ref::narrow_f16;
using ref::widen_bf16;
using ref::widen_f16;

// ---- the call ---------------------------------------------------------------------------------------

struct Buffers {
  Buffer out, x, pos_table;
  std::vector<int64_t> positions;
  std::vector<int32_t> tokens;
  std::vector<double> times;
};

// A part of a call (posenc.h, "Parts of a call"): the _part twin with [begin, end), or the whole call.
struct Part {
  bool on = false;
  int64_t begin = 0, end = 0;
};

posenc_status invoke(const Args &a, Buffers &b, void *out, const Part &part = Part{}) {
  const posenc_spec *spec = a.spec_null ? nullptr : &a.spec;
  const int64_t *pos =
      a.positions_null || !(positions_required(a.kernel) || a.explicit_positions) ? nullptr : b.positions.data();
  const void *x = a.x_null ? nullptr : b.x.ptr();
  const int32_t *tok = a.tokens_null ? nullptr : b.tokens.data();
  const float *pt = a.pos_table_null ? nullptr : static_cast<const float *>(b.pos_table.ptr());
  out = a.out_null ? nullptr : out;
  auto *o32 = static_cast<float *>(out);
  auto *o16 = static_cast<uint16_t *>(out);
  if (part.on) {
    const int64_t pb = part.begin, pe = part.end;
    const double *t = a.positions_null ? nullptr : b.times.data();
    switch (a.kernel) {
      case kTableF32: return posenc_table_f32_part(spec, a.first, a.n, o32, a.out_stride, pb, pe);
      case kTableBF16: return posenc_table_bf16_part(spec, a.first, a.n, o16, a.out_stride, pb, pe);
      case kTableF16: return posenc_table_f16_part(spec, a.first, a.n, o16, a.out_stride, pb, pe);
      case kRowsF32: return posenc_rows_f32_part(spec, pos, a.n, o32, a.out_stride, pb, pe);
      case kRowsBF16: return posenc_rows_bf16_part(spec, pos, a.n, o16, a.out_stride, pb, pe);
      case kRowsF16: return posenc_rows_f16_part(spec, pos, a.n, o16, a.out_stride, pb, pe);
      case kAdd:
        return posenc_add_f32_part(spec, static_cast<const float *>(x), a.x_stride, a.scale, pos, a.first, a.n, o32,
                                   a.out_stride, pb, pe);
      case kEmbedF32:
        return posenc_embed_f32_part(spec, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pos,
                                     a.first, a.n, o32, a.out_stride, pb, pe);
      case kEmbedBF16:
        return posenc_embed_bf16_part(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos,
                                      a.first, a.n, o32, a.out_stride, pb, pe);
      case kEmbedF16:
        return posenc_embed_f16_part(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos,
                                     a.first, a.n, o32, a.out_stride, pb, pe);
      case kLearned:
        return posenc_embed_learned_f32_part(a.d, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pt,
                                             a.pos_rows, a.pos_stride, pos, a.first, a.n, o32, a.out_stride, pb, pe);
      case kTimesF32: return posenc_timesteps_f32_part(spec, t, a.n, o32, a.out_stride, pb, pe);
      case kTimesBF16: return posenc_timesteps_bf16_part(spec, t, a.n, o16, a.out_stride, pb, pe);
      case kTimesF16: return posenc_timesteps_f16_part(spec, t, a.n, o16, a.out_stride, pb, pe);
      default:
        return posenc_timesteps_add_f32_part(spec, static_cast<const float *>(x), a.x_stride, a.scale, t, a.n, o32,
                                             a.out_stride, pb, pe);
    }
  }
  switch (a.kernel) {
    case kTableF32: return posenc_table_f32(spec, a.first, a.n, o32, a.out_stride);
    case kTableBF16: return posenc_table_bf16(spec, a.first, a.n, o16, a.out_stride);
    case kTableF16: return posenc_table_f16(spec, a.first, a.n, o16, a.out_stride);
    case kRowsF32: return posenc_rows_f32(spec, pos, a.n, o32, a.out_stride);
    case kRowsBF16: return posenc_rows_bf16(spec, pos, a.n, o16, a.out_stride);
    case kRowsF16: return posenc_rows_f16(spec, pos, a.n, o16, a.out_stride);
    case kAdd:
      return posenc_add_f32(spec, static_cast<const float *>(x), a.x_stride, a.scale, pos, a.first, a.n, o32,
                            a.out_stride);
    case kEmbedF32:
      return posenc_embed_f32(spec, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pos, a.first, a.n,
                              o32, a.out_stride);
    case kEmbedBF16:
      return posenc_embed_bf16(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos, a.first,
                               a.n, o32, a.out_stride);
    case kEmbedF16:
      return posenc_embed_f16(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos, a.first,
                              a.n, o32, a.out_stride);
    case kLearned:
      return posenc_embed_learned_f32(a.d, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pt,
                                      a.pos_rows, a.pos_stride, pos, a.first, a.n, o32, a.out_stride);
    default: {
      const double *t = a.positions_null ? nullptr : b.times.data();
      switch (a.kernel) {
        case kTimesF32: return posenc_timesteps_f32(spec, t, a.n, o32, a.out_stride);
        case kTimesBF16: return posenc_timesteps_bf16(spec, t, a.n, o16, a.out_stride);
        case kTimesF16: return posenc_timesteps_f16(spec, t, a.n, o16, a.out_stride);
        default:
          return posenc_timesteps_add_f32(spec, static_cast<const float *>(x), a.x_stride, a.scale, t, a.n, o32,
                                          a.out_stride);
      }
    }
  }
}

std::vector<posenc_isa> available_paths() {
  std::vector<posenc_isa> out;
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) out.push_back(posenc_isa(v));
  return out;
}

// fmaf(scale, x, y) with posenc.h's NaN rule: the first NaN among x, y and scale, quieted; +qNaN when
// the operation itself is invalid (0 * inf, inf - inf).
uint32_t fused_bits(float scale, float x, float y) {
  const float r = std::fmaf(scale, x, y);
  if (!std::isnan(r)) return bits_of_float(r);
  for (float v : {x, y, scale})
    if (std::isnan(v)) return bits_of_float(v) | 0x00400000u;
  return 0x7FC00000u;
}

// The values of a successful call, from the scalar path's output `out`.
void check_values(const Args &a, Buffers &b, const unsigned char *out) {
  const int k = a.kernel;
  const int64_t d = a.d, n = a.n, h = d / 2;
  // PE rows at the call's positions, through rows_f32 (learned: the table's rows, or zeros for PAD)
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) pos[size_t(r)] = position_of(a, r);
  std::vector<float> pe(size_t(n * d), 0.0f);
  if (is_times(k)) {
    // timesteps_f32 on this (the scalar) path, held to what can be checked without MPFR: an integer-valued t
    // gives rows_f32's row at that integer, every pair lies on the unit circle, t = 0 gives (+0, 1)
    for (int64_t r = 0; r < n; ++r) pos[size_t(r)] = 0;
    if (posenc_timesteps_f32(&a.spec, b.times.data(), n, pe.data(), d) != POSENC_OK)
      fail("timesteps_f32 for the reference");
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t r = 0; r < n; ++r) {
      const double t = b.times[size_t(r)];
      if (t != std::nearbyint(t)) continue;
      const int64_t p = int64_t(t);
      if (posenc_rows_f32(&a.spec, &p, 1, row.data(), d) != POSENC_OK) fail("rows_f32 at an integer timestep");
      if (std::memcmp(row.data(), &pe[size_t(r * d)], size_t(d) * 4) != 0)
        fail("an integer-valued timestep differs from its integer position", long(r));
    }
  }
  if (has_spec(k)) {
    if (!is_times(k) && posenc_rows_f32(&a.spec, pos.data(), n, pe.data(), d) != POSENC_OK)
      fail("rows_f32 for the reference");
    const int layout = int(a.spec.layout);
    for (int64_t r = 0; r < n; ++r) {
      const float *row = &pe[size_t(r * d)];
      if (pos[size_t(r)] == POSENC_PAD) {
        for (int64_t e = 0; e < d; ++e)
          if (bits_of_float(row[e]) != 0) fail("PAD row not +0.0", long(r), long(e));
        continue;
      }
      if ((d & 1) && bits_of_float(row[d - 1]) != 0) fail("odd column not +0.0", long(r));
      for (int64_t i = 0; i < h; ++i) {
        const int64_t si = layout == 0 ? 2 * i : layout == 1 ? i : h + i;
        const int64_t ci = layout == 0 ? 2 * i + 1 : layout == 1 ? h + i : i;
        const double s = row[si], c = row[ci];
        if (!(std::fabs(s) <= 1 && std::fabs(c) <= 1)) fail("PE outside [-1, 1]", long(r), long(i));
        if (std::fabs(s * s + c * c - 1) > 1e-6) fail("sin^2 + cos^2 != 1", long(r), long(i));
        const bool zero = is_times(k) ? b.times[size_t(r)] == 0.0 : pos[size_t(r)] == 0;
        if (zero && (bits_of_float(row[si]) != 0 || row[ci] != 1.0f)) fail("PE(0) != (+0, 1)");
      }
    }
  } else {
    for (int64_t r = 0; r < n; ++r) {
      if (pos[size_t(r)] == POSENC_PAD) continue;
      const auto *t = reinterpret_cast<const float *>(b.pos_table.bytes.data()) + pos[size_t(r)] * a.pos_stride;
      std::memcpy(&pe[size_t(r * d)], t, size_t(d) * 4);
    }
  }
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < d; ++e) {
      const size_t at = size_t(r * a.out_stride + e);
      const float p = pe[size_t(r * d + e)];
      if (k == kTableF32 || k == kRowsF32 || k == kTimesF32) {
        float got;
        std::memcpy(&got, out + 4 * at, 4);
        if (bits_of_float(got) != bits_of_float(p)) fail("f32 table differs from rows_f32", long(r), long(e));
      } else if (out_size(k) == 2) {
        uint16_t got;
        std::memcpy(&got, out + 2 * at, 2);
        const bool bf = k == kTableBF16 || k == kRowsBF16 || k == kTimesBF16;
        if (got != (bf ? narrow_bf16(p) : narrow_f16(p)))
          fail("half table is not the rounded float32", long(r), long(e));
      } else {
        float xv;
        if (has_activations(k)) {
          std::memcpy(&xv, b.x.copy.data() + 4 * size_t(r * a.x_stride + e), 4);
        } else {
          const size_t xi = size_t(int64_t(b.tokens[size_t(r)]) * a.x_stride + e);
          if (in_size(k) == 4) {
            std::memcpy(&xv, b.x.copy.data() + 4 * xi, 4);
          } else {
            uint16_t hv;
            std::memcpy(&hv, b.x.copy.data() + 2 * xi, 2);
            xv = k == kEmbedBF16 ? widen_bf16(hv) : widen_f16(hv);
          }
        }
        float got;
        std::memcpy(&got, out + 4 * at, 4);
        if (bits_of_float(got) != fused_bits(a.scale, xv, p))
          fail("fused value is not fmaf(scale, x, pe) with the NaN rule", long(r), long(e));
      }
    }
}

// ---- parts of a call (posenc.h, "Parts of a call") ---------------------------------------------------------
// Read after everything else, so that older seeds keep their meaning (an exhausted input reads zeros: a
// split in two at the middle, and the range [0, 0)).

// A range for one part: mostly inside [0, n], sometimes outside it.
Part decode_range(Input &in, int64_t n) {
  Part p;
  p.on = true;
  const uint8_t m = in.u8();
  const int64_t top = n > 0 ? n : 0;
  if (m < 200) {
    p.begin = int64_t(in.u32() % (uint64_t(top) + 1));  // top <= INT64_MAX: no overflow in uint64_t
    p.end = int64_t(in.u32() % (uint64_t(top) + 1));
    if (p.begin > p.end) std::swap(p.begin, p.end);
    return p;
  }
  const int64_t above = top < kI64Max ? top + 1 : kI64Max;
  switch (m % 6) {
    case 0: p.begin = -1, p.end = 0; break;
    case 1: p.begin = 0, p.end = above; break;
    case 2: p.begin = top, p.end = top > 0 ? top - 1 : -1; break;
    case 3: p.begin = kI64Min, p.end = kI64Max; break;
    case 4: p.begin = above, p.end = above; break;
    default: p.begin = in.i64(), p.end = in.i64();
  }
  return p;
}

// The status of a part: the whole call's, and for a valid call the range's.
bool range_ok(const Part &p, int64_t n) { return p.begin >= 0 && p.begin <= p.end && p.end <= n; }

// A cover of [0, n) by up to 9 parts, empty ones included, in an order from the input (n >= 0; read for
// every call, so that the range after it is always the same bytes of the input).
std::vector<Part> decode_cover(Input &in, int64_t n) {
  std::vector<int64_t> cuts = {0, n, n / 2};
  const uint8_t m = in.u8();
  for (int i = 0; i < m % 8; ++i) cuts.push_back(int64_t(in.u32() % (uint64_t(n) + 1)));
  std::sort(cuts.begin(), cuts.end());
  std::vector<Part> parts;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) parts.push_back(Part{true, cuts[i], cuts[i + 1]});
  uint64_t seed = in.u64();
  for (size_t i = parts.size(); i > 1; --i) std::swap(parts[i - 1], parts[splitmix(seed) % i]);
  return parts;
}

// ---- RoPE -----------------------------------------------------------------------------------------------
// A first byte of 242 or more selects a RoPE function, 241 the calls by given rows (given_one_input, below); the
// kernels above keep bytes 0..240 (no seed of theirs starts with 241: they decode as before). One buffer holds
// both tensors (q and k, or the cos and sin rows) so that fused, interleaved and overlapping layouts all occur. The
// status is predicted from posenc.h's rules: row overlaps by sorting every row's start (independently of the library's
// lattice arithmetic). On success the scalar path is held to the formula: the cache's values are in [-m, m] with c^2 +
// s^2 = m^2, and every rotated pair is posenc.h's rotation (support/rope.hpp) with the library's own cache values at
// that position, NaN results by the NaN rule; every other path returns the scalar path's bytes.

using ref::RopeKernel;

constexpr uint8_t kFirstRopeByte = 242;

struct RopeTensorArgs {
  int64_t heads = 0, ts = 0, hs = 0, offset = 0;  // offset in elements within the buffer
  bool null = false;
};

struct RopeArgs {
  RopeKernel kernel;
  posenc_rope rope;
  bool rope_null = false;
  std::vector<double> freq;
  int64_t n = 0, first = 0;
  bool explicit_positions = false;
  std::vector<int64_t> positions;  // axes * n values, axis-major (multi-axis RoPE)
  std::vector<uint8_t> axis;       // the axis map, when one is given
  RopeTensorArgs t[2];             // x / q / cos_out, and k / sin_out / the source rows of rope_copy_* (x's heads)
};

int64_t decode_rotary_dim(Input &in) {
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {0, 1, 3, -2, 97, kI64Min, int64_t(1) << 62, (int64_t(1) << 62) + 1, kI64Max, 4096};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 200) return 2 * (1 + m % 48);
  if (m < 220) return 2 * (1 + in.u16() % 1024);
  if (m < 240) return pick(special, in.u8());
  return in.i64();
}

double decode_attention_scale(Input &in) {
  static const double normal[] = {1.369, 0.7, 3.0, 1e-3, 0x1p-64, 0x1p64, 1.0};
  static const double special[] = {
      0.0, -0.0, -1.0, kNaN, kInf, -kInf, 0x1.fffffffffffffp-65, 0x1.0000000000001p64, 0x1p65, -0x1p-64};
  const uint8_t m = in.u8();
  if (m < 150) return 1.0;
  if (m < 200) return pick(normal, in.u8());
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

double decode_frequency(Input &in) {
  static const double special[] = {kNaN, kInf, -kInf, 1e300, kDenorm, 0x1p1000, -0x1p999, kDMax};
  const uint8_t m = in.u8();
  if (m < 200) {
    const uint16_t b = in.u16();
    return std::ldexp((b & 1 ? -1.0 : 1.0) * (1.0 + (b >> 1) / 32768.0), int(m % 81) - 60);
  }
  if (m < 220) return m & 1 ? -0.0 : 0.0;
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

int64_t decode_heads(Input &in, bool k) {
  // a table, laid out by hand
  // clang-format off
  static const int64_t special[] = {0, -1, 32, 64, int64_t(1) << 40, kI64Max, kI64Min, 2};
  // clang-format on
  const uint8_t m = in.u8();
  if (m < 220) return k ? m % 5 : 1 + m % 8;
  if (m < 250) return pick(special, in.u8());
  return in.i64();
}

int64_t decode_big_stride(Input &in, int64_t rows, size_t size) {
  switch (in.u8() % 8) {
    case 0: return kI64Max;
    case 1: return int64_t(1) << 62;
    case 2: return rows > 1 ? (kI64Max / int64_t(size)) / (rows - 1) + 1 : kI64Max;
    case 3: return -1;
    case 4: return kI64Min;
    case 5: return kI64Max / int64_t(size) + 1;
    case 6: return 0;
    default: return in.i64();
  }
}

// Strides of a tensor of head rows of head_dim elements: [T,H,D], [H,T,D], small raw values, or large ones.
void decode_layout(Input &in, RopeTensorArgs &t, int64_t n, int64_t head_dim, size_t size) {
  const uint8_t m = in.u8();
  const int64_t g = m >> 4 & 3;
  const i128 heads = t.heads > 0 ? t.heads : 1;
  switch (m % 5) {
    case 0:
    case 1:
      t.ts = saturate(heads * head_dim + g);
      t.hs = head_dim;
      break;
    case 2:
      t.ts = head_dim;
      t.hs = saturate(i128(n > 0 ? n : 1) * head_dim + g);
      break;
    case 3:
      t.ts = int64_t(in.u8() % 80) - 4;
      t.hs = int64_t(in.u8() % 80) - 4;
      break;
    default:
      if (m & 0x40) {
        t.ts = decode_big_stride(in, n, size);
        t.hs = head_dim;
      } else {
        t.ts = saturate(heads * head_dim);
        t.hs = decode_big_stride(in, t.heads, size);
      }
  }
}

// The predicted status up to the positions (OK: go on); or_invalid: INVALID is also right (the extents
// overflow, so whether rows overlap is not decided here; or the library's documented refusal of q and k
// whose spans meet with different token strides).
struct RopeExpect {
  posenc_status status;
  bool either_invalid_or_overflow = false;
  bool or_invalid = false;
  bool skip = false;  // too many rows to decide overlaps here
};

Expect rope_spec_status(const RopeArgs &a) {
  const posenc_rope &r = a.rope;
  int pairs;
  std::memcpy(&pairs, &r.pairs, sizeof pairs);
  if (r.rotary_dim < 2 || r.rotary_dim % 2) return {POSENC_ERR_INVALID, false};
  if (pairs != 0 && pairs != 1) return {POSENC_ERR_INVALID, false};
  if (!std::isfinite(r.position_scale)) return {POSENC_ERR_INVALID, false};
  if (!(r.attention_scale >= 0x1p-64 && r.attention_scale <= 0x1p64)) return {POSENC_ERR_INVALID, false};
  // multi-axis: 1 to 4 axes, a map where there is more than one, every entry below the axis count
  if (r.axes < 1 || r.axes > 4) return {POSENC_ERR_INVALID, false};
  if (a.axis.empty() && r.axes > 1) return {POSENC_ERR_INVALID, false};
  for (uint8_t v : a.axis)
    if (v >= r.axes) return {POSENC_ERR_INVALID, false};
  if (!r.freq) {  // base^(-2i/r) = base^(-i/h): the tables' spec with D = h, and their 2^1000 limit
    posenc_spec s = posenc_spec_default(r.rotary_dim);
    s.base = r.base;
    s.position_scale = r.position_scale;
    return spec_status(s);
  }
  bool close = false;
  for (double f : a.freq) {
    if (!std::isfinite(f)) return {POSENC_ERR_INVALID, false};
    const long double v = std::fabs((long double)f * (long double)r.position_scale);  // exact enough
    if (v >= 0x1p1000L * (1 + 1e-15L)) return {POSENC_ERR_INVALID, false};
    if (v >= 0x1p1000L * (1 - 1e-15L)) close = true;
  }
  return {POSENC_OK, close};
}

size_t rope_size(RopeKernel k) { return ref::format_size(ref::rope_format(k)); }

// Row starts (elements) and width of the tensors that have rows.
void rope_rows(const RopeArgs &a, int which, std::vector<int64_t> &starts) {
  const RopeTensorArgs &t = a.t[which];
  const bool cache = ref::is_cache(a.kernel);
  const int64_t heads = cache ? 1 : t.heads;
  for (int64_t tok = 0; tok < a.n; ++tok)
    for (int64_t j = 0; j < heads; ++j) starts.push_back(t.offset + tok * t.ts + j * (cache ? 0 : t.hs));
}

// rope_copy_*: the source rows are x's very rows (in place), as the library decides it: the same start and the
// same strides wherever they separate rows.
bool rope_in_place(const RopeArgs &a) {
  const RopeTensorArgs &x = a.t[0], &s = a.t[1];
  return ref::is_copy(a.kernel) && x.offset == s.offset && (a.n <= 1 || x.ts == s.ts) && (x.heads <= 1 || x.hs == s.hs);
}

RopeExpect rope_status_before_positions(const RopeArgs &a) {
  const bool cache = ref::is_cache(a.kernel), qk = ref::is_qk(a.kernel), copy = ref::is_copy(a.kernel);
  if (a.n < 0) return {POSENC_ERR_INVALID};
  Expect spec{POSENC_OK, false};
  if (!a.rope_null) spec = rope_spec_status(a);
  if (a.n == 0) return {a.rope_null ? POSENC_OK : spec.status, false, spec.or_invalid};
  if (a.rope_null) return {POSENC_ERR_NULL};
  const int tensors = cache || qk || copy ? 2 : 1;
  for (int i = 0; i < tensors; ++i)
    if (a.t[i].null && (cache || a.t[i].heads > 0)) return {POSENC_ERR_NULL};  // x, then src
  if (spec.status != POSENC_OK) return {spec.status};
  const int64_t r = a.rope.rotary_dim, h = r / 2, width = cache ? h : r;
  const size_t es = rope_size(a.kernel);
  bool or_invalid = spec.or_invalid;
  if (cache) {
    for (int i = 0; i < 2; ++i)
      if (a.t[i].ts < 0 || (a.n > 1 && a.t[i].ts < h)) return {POSENC_ERR_INVALID, false, or_invalid};
  } else {
    for (int i = 0; i < tensors; ++i) {
      if (a.t[i].heads < 0) return {POSENC_ERR_INVALID, false, or_invalid};
      // negative strides: INVALID (the library's rule, also for an empty k: its strides are still checked)
      if (a.t[i].ts < 0 || a.t[i].hs < 0) {
        if (a.t[i].heads > 0) return {POSENC_ERR_INVALID, false, or_invalid};
        or_invalid = true;
      }
    }
  }
  // extents, in 128 bits
  bool overflow = false;
  i128 rows = 0;
  for (int i = 0; i < tensors; ++i) {
    const RopeTensorArgs &t = a.t[i];
    const int64_t heads = cache ? 1 : t.heads;
    if (heads <= 0) continue;
    const i128 ts = t.ts < 0 ? 0 : t.ts, hs = cache || t.hs < 0 ? 0 : t.hs;
    const i128 el = (i128(a.n) - 1) * ts + (i128(heads) - 1) * hs + width;
    if (el > kI64Max || el * i128(es) > kI64Max) overflow = true;
    rows += i128(a.n) * heads;
  }
  if (overflow) return {POSENC_ERR_OVERFLOW, true, or_invalid};
  for (int i = 0; i < (copy ? 1 : tensors); ++i) {  // coinciding rows (source rows may), without enumerating them
    const int64_t heads = cache ? 1 : a.t[i].heads;
    if (heads > 0 && ((a.n > 1 && a.t[i].ts == 0) || (!cache && heads > 1 && a.t[i].hs == 0)))
      return {POSENC_ERR_INVALID, false, or_invalid};
  }
  if (rows > (1 << 17)) return {POSENC_OK, false, false, true};
  // overlaps: each tensor's rows, then the two tensors' rows (intervals [start, start + width))
  std::vector<std::pair<int64_t, int>> all;
  for (int i = 0; i < tensors; ++i) {
    if (!cache && a.t[i].heads <= 0) continue;
    std::vector<int64_t> st;
    rope_rows(a, i, st);
    std::sort(st.begin(), st.end());
    for (size_t k = 1; k < st.size() && !(copy && i == 1); ++k)
      if (st[k] - st[k - 1] < width) return {POSENC_ERR_INVALID, false, or_invalid};
    for (int64_t v : st) all.push_back({v, i});
  }
  if (rope_in_place(a)) return {POSENC_OK, false, or_invalid};  // src == x: no collision to look for
  std::sort(all.begin(), all.end());
  int64_t end[2] = {kI64Min, kI64Min};
  for (const auto &row : all) {
    if (end[1 - row.second] > row.first) return {POSENC_ERR_INVALID, false, or_invalid};
    end[row.second] = std::max(end[row.second], row.first + width);
  }
  // rows apart; spans that meet with different token strides are refused by the library (rope_api.cpp)
  if (tensors == 2 && !all.empty()) {
    int64_t lo[2] = {kI64Max, kI64Max}, hi[2] = {kI64Min, kI64Min};
    for (const auto &row : all) {
      lo[row.second] = std::min(lo[row.second], row.first);
      hi[row.second] = std::max(hi[row.second], row.first + width);
    }
    if (lo[0] < hi[1] && lo[1] < hi[0] && (a.t[0].ts != a.t[1].ts || a.n == 1)) or_invalid = true;
  }
  return {POSENC_OK, false, or_invalid};
}

// times: the twin at real-valued positions (posenc_rope_*_real) at these A n doubles.
posenc_status rope_invoke(const RopeArgs &a, unsigned char *buf, const Part &part = Part{},
                          const double *times = nullptr) {
  const size_t es = rope_size(a.kernel);
  posenc_rope rope = a.rope;
  rope.axis = a.axis.empty() ? nullptr : a.axis.data();
  ref::RopeCall c;
  c.kernel = a.kernel;
  c.rope = a.rope_null ? nullptr : &rope;
  c.positions = a.explicit_positions ? a.positions.data() : nullptr;
  c.first = a.first;
  c.n = a.n;
  c.x = a.t[0].null ? nullptr : buf + size_t(a.t[0].offset) * es;
  c.heads = a.t[0].heads;
  c.token_stride = a.t[0].ts;
  c.head_stride = a.t[0].hs;
  c.k = a.t[1].null ? nullptr : buf + size_t(a.t[1].offset) * es;
  c.k_heads = a.t[1].heads;
  c.k_token_stride = a.t[1].ts;
  c.k_head_stride = a.t[1].hs;
  if (ref::is_copy(a.kernel)) {  // tensor 1 is the source
    c.src = c.k;
    c.k = nullptr;
    c.src_token_stride = a.t[1].ts;
    c.src_head_stride = a.t[1].hs;
  }
  c.part = part.on;
  c.begin = part.begin;
  c.end = part.end;
  c.real = times != nullptr;
  c.times = times;
  return ref::invoke(c);
}

// The largest |position_scale f_i| of a valid spec, estimated in double (pow's rounding is far inside the
// margin the caller keeps from 2^52).
double rope_max_frequency(const RopeArgs &a) {
  const int64_t h = a.rope.rotary_dim / 2;
  double top = 0.0;
  for (int64_t i = 0; i < h; ++i) {
    const double f = a.rope.freq ? a.rope.freq[i] : std::pow(a.rope.base, -2.0 * double(i) / double(2 * h));
    top = std::max(top, std::fabs(f) * std::fabs(a.rope.position_scale));
  }
  return top;
}

// Token t's position on axis `axis` (axis-major explicit positions, or first + t on every axis).
int64_t rope_position(const RopeArgs &a, int64_t t, int axis = 0) {
  return a.explicit_positions ? a.positions[size_t(axis * a.n + t)] : a.first + t;
}

// The scalar path's successful output `out` (from `in`) against the formula.
void rope_check_values(const RopeArgs &a, const std::vector<unsigned char> &in, const std::vector<unsigned char> &out) {
  const bool cache = ref::is_cache(a.kernel);
  const size_t es = rope_size(a.kernel);
  const int64_t h = a.rope.rotary_dim / 2, n = a.n;
  const ref::Format f = ref::rope_format(a.kernel);
  // which elements the call may write (rope_copy_*: x's rows; its source is read only)
  std::vector<bool> in_row(in.size() / es, false);
  const bool copy = ref::is_copy(a.kernel);
  const int tensors = cache || ref::is_qk(a.kernel) ? 2 : 1;
  for (int i = 0; i < tensors; ++i) {
    if (!cache && a.t[i].heads <= 0) continue;
    std::vector<int64_t> st;
    rope_rows(a, i, st);
    for (int64_t s0 : st)
      for (int64_t e = 0; e < (cache ? h : 2 * h); ++e) in_row[size_t(s0 + e)] = true;
  }
  for (size_t b = 0; b < in.size(); ++b)
    if (!in_row[b / es] && in[b] != out[b]) fail("RoPE wrote outside its rows", long(b));
  if (!cache && a.t[0].heads <= 0 && (tensors == 1 || a.t[1].heads <= 0)) return;  // no rows (any r)
  // the library's cache at the call's positions (explicit, so that PAD gives zeros): h cos, h sin per token
  const int axes = a.rope.axes;
  std::vector<int64_t> all(static_cast<size_t>(n * axes));
  for (int ax = 0; ax < axes; ++ax)
    for (int64_t t = 0; t < n; ++t) all[size_t(ax * n + t)] = rope_position(a, t, ax);
  const std::vector<int64_t> pos(all.begin(), all.begin() + n);  // axis 0: PAD marks padding tokens
  std::vector<float> cs(size_t(n * 2 * h));
  posenc_rope spec = a.rope;
  spec.axis = a.axis.empty() ? nullptr : a.axis.data();
  if (posenc_rope_cache_f32(&spec, all.data(), 0, n, cs.data(), 2 * h, cs.data() + h, 2 * h) != POSENC_OK)
    fail("rope_cache_f32 for the reference");
  const double m = a.rope.attention_scale;
  const float mf = float(m);
  for (int64_t t = 0; t < n; ++t) {
    const float *c = &cs[size_t(t * 2 * h)], *s = c + h;
    for (int64_t i = 0; i < h; ++i) {
      if (pos[size_t(t)] == POSENC_PAD) {
        if (bits_of_float(c[i]) != 0 || bits_of_float(s[i]) != 0) fail("PAD cache row not +0.0", long(t), long(i));
        continue;
      }
      if (!(std::fabs(c[i]) <= mf && std::fabs(s[i]) <= mf)) fail("cache value outside [-m, m]", long(t), long(i));
      const double q = (double(c[i]) * c[i] + double(s[i]) * s[i]) / (m * m);
      if (m * m > 1e-30 && std::fabs(q - 1) > 1e-6 && std::fabs(c[i]) + std::fabs(s[i]) > 1e-30)
        fail("c^2 + s^2 != m^2", long(t), long(i));
      const int64_t pi = all[size_t((a.axis.empty() ? 0 : a.axis[size_t(i)]) * n + t)];  // the pair's axis
      if (pi == 0 && (bits_of_float(s[i]) != 0 || c[i] != mf)) fail("cache at p = 0 is not (m, +0)");
    }
  }
  if (cache) {
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < h; ++i) {
        float gc, gs;
        std::memcpy(&gc, &out[size_t(a.t[0].offset + t * a.t[0].ts + i) * 4], 4);
        std::memcpy(&gs, &out[size_t(a.t[1].offset + t * a.t[1].ts + i) * 4], 4);
        if (bits_of_float(gc) != bits_of_float(cs[size_t(t * 2 * h + i)]) ||
            bits_of_float(gs) != bits_of_float(cs[size_t(t * 2 * h + h + i)]))
          fail("cache differs from the same call with explicit positions", long(t), long(i));
      }
    return;
  }
  // the rotation, pair by pair, with the NaN rule, each row read from the input (rope_copy_*: from its
  // source row, whose r elements a POSENC_PAD token copies)
  std::vector<unsigned char> want = in;
  for (int i = 0; i < tensors; ++i) {
    const RopeTensorArgs &x = a.t[i], &from = copy ? a.t[1] : x;
    for (int64_t t = 0; t < n; ++t) {
      const float *c = &cs[size_t(t * 2 * h)], *s = c + h;
      for (int64_t j = 0; j < x.heads; ++j) {
        unsigned char *row = want.data() + size_t(x.offset + t * x.ts + j * x.hs) * es;
        const unsigned char *src = in.data() + size_t(from.offset + t * from.ts + j * from.hs) * es;
        if (pos[size_t(t)] == POSENC_PAD) {
          if (copy) std::memcpy(row, src, size_t(2 * h) * es);
          continue;
        }
        for (int64_t p = 0; p < h; ++p) {
          const bool halves = a.rope.pairs == POSENC_ROPE_HALVES;
          const int64_t ix = halves ? p : 2 * p, iy = halves ? p + h : 2 * p + 1;
          const float xv = ref::load(f, src, ix), yv = ref::load(f, src, iy);
          const ref::Rotated rr = ref::rotate_exact(xv, yv, c[p], s[p]);
          if (!std::isnan(rr.x) && !std::isnan(rr.y)) {
            ref::store(f, row, ix, rr.x);
            ref::store(f, row, iy, rr.y);
            continue;
          }
          const uint32_t nb = std::isnan(xv)   ? bits_of_float(xv) | 0x00400000u
                              : std::isnan(yv) ? bits_of_float(yv) | 0x00400000u
                                               : 0x7FC00000u;
          const double nan_d = double(float_of_bits(nb));
          for (int64_t e : {ix, iy}) {
            const bool is_nan = e == ix ? std::isnan(rr.x) : std::isnan(rr.y);
            const double v = e == ix ? rr.x : rr.y;
            if (!is_nan) {
              ref::store(f, row, e, v);
            } else if (f == ref::Format::kF32) {
              ref::store(f, row, e, nan_d);
            } else {
              const uint16_t hv = f == ref::Format::kBF16 ? uint16_t(nb >> 16)
                                                          : uint16_t((nb >> 16 & 0x8000) | 0x7C00 | (nb >> 13 & 0x3FF));
              std::memcpy(row + 2 * e, &hv, 2);
            }
          }
        }
      }
    }
  }
  for (size_t b = 0; b < want.size(); b += es)
    if (std::memcmp(&want[b], &out[b], es) != 0) {
      uint32_t g = 0, w = 0;
      std::memcpy(&g, &out[b], es);
      std::memcpy(&w, &want[b], es);
      std::fprintf(stderr, "element %zu: got %08x, want %08x\n", b / es, unsigned(g), unsigned(w));
      fail("rotation differs from posenc.h's formula on the library's cache values");
    }
}

int rope_one_input(Input &in, uint8_t selector) {
  static const std::vector<posenc_isa> paths = available_paths();
  RopeArgs a{};
  a.kernel = ref::kAllRopeKernels[(selector - kFirstRopeByte) % ref::kRopeKernels];
  const bool cache = ref::is_cache(a.kernel), qk = ref::is_qk(a.kernel), copy = ref::is_copy(a.kernel);
  const size_t es = rope_size(a.kernel);
  a.rope = posenc_rope_default(decode_rotary_dim(in));
  const uint8_t pm = in.u8();
  int pairs = pm < 240 ? pm % 2 : int(in.u32());
  std::memcpy(&a.rope.pairs, &pairs, sizeof pairs);
  a.rope.base = decode_base(in);
  a.rope.position_scale = decode_position_scale(in);
  a.rope.attention_scale = decode_attention_scale(in);
  const uint8_t fm = in.u8();
  const int64_t r = a.rope.rotary_dim, h = r >= 2 && r <= 8192 ? r / 2 : 0;
  if ((fm & 1) && h > 0) {
    for (int64_t i = 0; i < h; ++i) a.freq.push_back(fm & 2 ? decode_frequency(in) : 1.0 / double(i + 1));
    a.rope.freq = a.freq.data();
  }
  a.n = decode_n(in);
  a.first = decode_first(in);
  const uint8_t xm = in.u8();
  a.explicit_positions = xm & 1;
  a.rope_null = xm >= 250;
  const int64_t head_dim = h > 0 ? r + (xm >> 1 & 3) : 8;
  // tensor 0 at a small offset; tensor 1 after it, fused with it, at a small offset, or NULL
  RopeTensorArgs &t0 = a.t[0], &t1 = a.t[1];
  t0.offset = in.u8() % 8;
  if (cache) {
    t0.heads = t1.heads = 1;
    const uint8_t cm = in.u8();
    t0.ts = cm < 200 ? h + cm % 4 : decode_big_stride(in, a.n, 4);
    const uint8_t sm = in.u8();
    t1.ts = sm < 128 ? t0.ts : sm < 240 ? h + sm % 3 : decode_big_stride(in, a.n, 4);
  } else {
    t0.heads = decode_heads(in, false);
    decode_layout(in, t0, a.n, head_dim, es);
    if (qk) {
      t1.heads = decode_heads(in, true);
      decode_layout(in, t1, a.n, head_dim, es);
    }
    if (copy) {  // the source rows: x's heads, their own strides
      t1.heads = t0.heads;
      decode_layout(in, t1, a.n, head_dim, es);
    }
  }
  const uint8_t km = in.u8();
  const bool rows_ok = a.n > 0 && a.n <= kMaxElements && h > 0;
  i128 ext0 = 0;
  if (rows_ok && t0.ts >= 0 && t0.hs >= 0 && t0.heads > 0 && t0.heads <= kMaxElements)
    ext0 = (i128(a.n) - 1) * t0.ts + (i128(t0.heads) - 1) * (cache ? 0 : t0.hs) + (cache ? h : r);
  switch (km % 4) {
    case 0: t1.offset = saturate(t0.offset + ext0 + km / 4 % 4); break;  // after tensor 0
    case 1:        // fused QKV: q, k (and v) heads side by side in one token stride; vLLM's cos_sin_cache; in place
      if (copy) {  // src == x, or the same memory with another token stride (refused where it separates rows)
        t1.offset = t0.offset;
        t1.ts = km / 4 % 2 ? saturate(i128(t0.ts) + 1) : t0.ts;
        t1.hs = t0.hs;
      } else if (cache) {
        t0.ts = t1.ts = 2 * h;
        t1.offset = t0.offset + h;
      } else {
        const i128 hq = t0.heads > 0 ? t0.heads : 0, hk = t1.heads > 0 ? t1.heads : 0;
        t0.ts = t1.ts = saturate((hq + 2 * hk) * head_dim + km / 4 % 2);
        t0.hs = t1.hs = head_dim;
        t1.offset = saturate(t0.offset + hq * head_dim);
      }
      break;
    case 2: t1.offset = km / 4 % 64; break;
    default: t1.offset = saturate(t0.offset + ext0 + 1); t1.null = (cache || qk || copy) && (km & 4);
  }
  if (t1.offset < 0 || t1.offset > kMaxElements) t1.offset = 0;
  t0.null = km >= 252;
  const uint64_t seed = in.u64();
  const uint8_t specials = in.u8();
  // multi-axis (read last, so that older seeds keep their meaning: an exhausted input reads 0, one axis)
  const uint8_t am = in.u8();
  if (am >= 160) {
    a.rope.axes = am < 250 ? 2 + am % 3 : int32_t(in.u32());
    const uint8_t mm = in.u8();
    if (mm < 240 && h > 0)  // a map of the pairs' axes; 1 in 8 maps has one entry past the axis count
      for (int64_t i = 0; i < h; ++i)
        a.axis.push_back(uint8_t(mm % 8 == 0 && i == h / 2
                                     ? in.u8()
                                     : in.u8() % uint8_t(a.rope.axes > 0 && a.rope.axes < 5 ? a.rope.axes : 1)));
  }

  static char described[512];
  std::snprintf(described, sizeof described,
                "%s r %lld pairs %d axes %d map %d base %a pscale %a m %a freq %d n %lld first %lld explicit %d "
                "rope_null %d t0 heads %lld ts %lld hs %lld off %lld null %d t1 heads %lld ts %lld hs %lld off %lld "
                "null %d",
                ref::rope_name(a.kernel), (long long)r, pairs, int(a.rope.axes), !a.axis.empty(), a.rope.base,
                a.rope.position_scale, a.rope.attention_scale, a.rope.freq != nullptr, (long long)a.n,
                (long long)a.first, a.explicit_positions, a.rope_null, (long long)t0.heads, (long long)t0.ts,
                (long long)t0.hs, (long long)t0.offset, t0.null, (long long)t1.heads, (long long)t1.ts,
                (long long)t1.hs, (long long)t1.offset, t1.null);
  g_call = described;

  RopeExpect want = rope_status_before_positions(a);
  if (want.skip) return 0;
  const bool reads_items = want.status == POSENC_OK && !want.either_invalid_or_overflow && a.n > 0;
  // the buffer: both tensors' rows and 8 elements of canary, or kSmall elements (and the offsets) when the
  // call must fail first
  i128 elements = std::max<i128>(kSmall, std::max(t0.offset, t1.offset) + 1);
  if (reads_items) {
    if (a.n > kMaxElements) return 0;
    elements = 0;
    for (int i = 0; i < 2; ++i) {
      const RopeTensorArgs &t = a.t[i];
      const int64_t heads = cache ? 1 : t.heads;
      if (heads <= 0 || t.null) continue;
      const i128 end = t.offset + (i128(a.n) - 1) * t.ts + (i128(heads) - 1) * (cache ? 0 : t.hs) + (cache ? h : r);
      elements = std::max(elements, end);
    }
    elements += 8;
    if (elements > kMaxElements) return 0;
  }
  // positions, as for the tables (axis 0), then the other axes: mostly moving by 0 or 1, as an image row's
  const size_t items = reads_items ? size_t(a.n) : kSmall;
  const int axes = a.rope.axes >= 1 && a.rope.axes <= 4 ? a.rope.axes : 1;
  int64_t prev = int64_t(uint64_t(a.first) - 1);
  for (size_t t = 0; t < items; ++t) {
    const uint8_t m = in.u8();
    int64_t p;
    if (m < 128)
      p = int64_t(uint64_t(prev) + 1);
    else if (m < 150)
      p = POSENC_PAD;
    else if (m < 170)
      p = prev;  // a decode batch: one position repeated
    else if (m < 200)
      p = int8_t(in.u8());
    else if (m < 230)
      p = int32_t(in.u32());
    else if (m < 250)
      p = (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
    else
      p = in.i64();
    a.positions.push_back(p);
    prev = p == POSENC_PAD ? int64_t(uint64_t(prev) + 1) : p;
  }
  for (int ax = 1; ax < axes; ++ax) {
    prev = int64_t(in.u8()) - 100;
    for (size_t t = 0; t < items; ++t) {
      const uint8_t m = in.u8();
      int64_t p;
      if (m < 100)
        p = prev;
      else if (m < 200)
        p = int64_t(uint64_t(prev) + 1);
      else if (m < 220)
        p = int32_t(in.u32());
      else if (m < 235)
        p = POSENC_PAD;  // refused off axis 0
      else if (m < 250)
        p = (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
      else
        p = in.i64();
      a.positions.push_back(p);
      prev = p;
    }
  }
  if (reads_items) {
    for (int64_t t = 0; t < a.n && want.status == POSENC_OK; ++t) {
      const int64_t p = a.explicit_positions ? a.positions[size_t(t)] : 0;
      if (a.explicit_positions) {
        if (p != POSENC_PAD && (p <= -k2p31 || p >= k2p31)) want.status = POSENC_ERR_OUT_OF_RANGE;
      } else {
        const i128 q = i128(a.first) + t;
        if (q <= -k2p31 || q >= k2p31) want.status = POSENC_ERR_OUT_OF_RANGE;
      }
    }
    if (a.explicit_positions)
      for (size_t k = size_t(a.n); k < size_t(axes) * size_t(a.n) && want.status == POSENC_OK; ++k)
        if (a.positions[k] <= -k2p31 || a.positions[k] >= k2p31) want.status = POSENC_ERR_OUT_OF_RANGE;
  }
  Buffer b;
  b.bytes.resize(size_t(elements) * es);
  fill_inputs(b, es, seed, specials);
  const std::vector<int64_t> positions_copy = a.positions;
  const std::vector<double> freq_copy = a.freq;

  std::vector<unsigned char> scalar_out;
  posenc_status first_status = posenc_status(-1);
  for (posenc_isa isa : paths) {
    if (posenc_force_isa(isa) != POSENC_OK) fail("force_isa refused an available path", long(isa));
    std::vector<unsigned char> out = b.copy;
    const posenc_status st = rope_invoke(a, out.data());
    check_path_status("RoPE ", isa, paths.front(), st, want.status, want.or_invalid, want.either_invalid_or_overflow,
                      first_status);
    if (a.positions != positions_copy ||
        (!a.freq.empty() && std::memcmp(a.freq.data(), freq_copy.data(), 8 * a.freq.size()) != 0))
      fail("RoPE changed its positions or frequencies");
    if (st != POSENC_OK || a.n == 0) {
      if (out != b.copy) fail("a failed (or empty) RoPE call wrote to its buffer", long(st));
      continue;
    }
    if (isa == POSENC_ISA_SCALAR) {
      rope_check_values(a, b.copy, out);
      scalar_out = out;
    } else if (out != scalar_out) {
      for (size_t at = 0; at < out.size(); at += es)
        if (std::memcmp(&out[at], &scalar_out[at], es) != 0) {
          std::fprintf(stderr, "element %zu differs from the scalar path\n", at / es);
          break;
        }
      fail("RoPE path differs from the scalar path", long(isa));
    }
  }
  // Parts, on the last path: a cover of [0, n) in any order gives the whole call's bytes; any single part
  // returns the whole call's status (then the range's) and writes its tokens only, or nothing on an error.
  const std::vector<Part> cover = decode_cover(in, a.n > 0 ? a.n : 0);  // read whatever the status
  if (first_status == POSENC_OK && a.n > 0) {
    std::vector<unsigned char> out = b.copy;
    for (const Part &p : cover)
      if (rope_invoke(a, out.data(), p) != POSENC_OK)
        fail("a part of a valid RoPE call failed", long(p.begin), long(p.end));
    if (out != scalar_out) fail("RoPE parts differ from the whole call");
  }
  const Part p = decode_range(in, a.n);
  std::vector<unsigned char> out = b.copy;
  const posenc_status st = rope_invoke(a, out.data(), p);
  const posenc_status want_part = first_status != POSENC_OK ? first_status
                                  : range_ok(p, a.n)        ? POSENC_OK
                                                            : POSENC_ERR_INVALID;
  if (st != want_part)
    fail("RoPE part status differs from the whole call's then the range's", long(st), long(want_part));
  if (st != POSENC_OK || p.begin == p.end) {
    if (out != b.copy) fail("a failed (or empty) RoPE part wrote to its buffer", long(st));
  } else {
    // the part's tokens are the whole call's, everything else as before: from the whole call's output,
    // the same part applied to the starting bytes must differ only where the tokens of the part are
    std::vector<unsigned char> rest = b.copy;
    for (const Part &q : {Part{true, 0, p.begin}, Part{true, p.end, a.n}})
      if (rope_invoke(a, rest.data(), q) != POSENC_OK) fail("the rest of a valid RoPE call failed");
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != b.copy[i] && rest[i] != b.copy[i])
        fail("a RoPE part and the rest of the call wrote one byte", long(i));
    std::vector<unsigned char> both = rest;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] != b.copy[i]) both[i] = out[i];
    if (both != scalar_out) fail("a RoPE part and the rest of the call differ from the whole call");
  }
  // The twin at real-valued positions: the call's positions as doubles give the integer call's bytes on every
  // path (a valid call without POSENC_PAD whose frequencies stay below 2^52); moved by half a step they give
  // the same status and bytes on every path, and the same bytes again as parts.
  if (first_status == POSENC_OK && a.n > 0 && !a.rope_null && rope_max_frequency(a) < 0x1p51) {
    std::vector<double> t(size_t(axes) * size_t(a.n)), half(t.size());
    bool pad = false;
    for (int ax = 0; ax < axes; ++ax)
      for (int64_t k = 0; k < a.n; ++k) {
        const int64_t p = rope_position(a, k, ax);
        pad = pad || p == POSENC_PAD;
        t[size_t(ax * a.n + k)] = double(p);
        half[size_t(ax * a.n + k)] = double(p) + (p > 0 ? -0.5 : 0.5);
      }
    if (!pad) {
      std::vector<unsigned char> first_half;
      for (posenc_isa isa : paths) {
        if (posenc_force_isa(isa) != POSENC_OK) fail("force_isa refused an available path", long(isa));
        std::vector<unsigned char> out = b.copy;
        if (rope_invoke(a, out.data(), Part{}, t.data()) != POSENC_OK) fail("a valid RoPE call's real twin failed");
        if (out != scalar_out) fail("RoPE at integer-valued real positions differs from the integer call", long(isa));
        out = b.copy;
        if (rope_invoke(a, out.data(), Part{}, half.data()) != POSENC_OK) fail("RoPE at half steps failed");
        if (isa == paths.front())
          first_half = out;
        else if (out != first_half)
          fail("paths disagree on RoPE at half steps", long(isa));
      }
      std::vector<unsigned char> out = b.copy;
      for (const Part &q : cover)
        if (rope_invoke(a, out.data(), q, half.data()) != POSENC_OK) fail("a part of RoPE at half steps failed");
      if (out != first_half) fail("RoPE parts at half steps differ from the whole call");
    }
  }
  return 0;
}

}  // namespace

// ---- the rotations by given rows: posenc_rope_cached_*, posenc_rope_copy_cached_*, posenc_rope_tables_* ----
//
// Selector byte kGivenRowsByte. No status is predicted here: every path must return the same status and leave
// the same bytes, a refused call must leave every byte as it was, a call must not touch the guard bytes around
// the rows it writes (nor, under ASan, anything outside the buffer), and the call cut into two parts (the later
// first) must leave the whole call's bytes. Shapes whose valid calls fit the buffer: widths up to 300, up to 39
// tokens and 4 heads, small strides; and what must be refused before any row is touched: odd, non-positive and
// huge widths, unknown pairings, negative strides, strides whose extents overflow (decode_big_stride), NULL
// pointers, tables or sources over the destination, bad part ranges.
constexpr uint8_t kGivenRowsByte = 241;

int given_one_input(Input &in) {
  static const std::vector<posenc_isa> paths = available_paths();
  const uint8_t fm = in.u8();
  const int family = fm % 3, fmt = fm / 3 % 3;  // 0 cached, 1 copy_cached, 2 tables; f32, bf16, f16
  const size_t es = fmt == 0 ? 4 : 2;
  static const int64_t bad_d[] = {0, -2, 1, 3, 301, kI64Min, kI64Max - 1, int64_t(1) << 62};
  const uint8_t dm = in.u8();
  const int64_t d = dm < 232 ? 2 * (1 + dm % 150) : pick(bad_d, in.u8());
  const uint8_t pm = in.u8();
  int pairs = pm < 240 ? pm % 2 : int(in.u32());
  const uint8_t nm = in.u8();
  const int64_t n = nm < 250 ? nm % 40 : (nm == 250 ? -1 : nm == 251 ? kI64Min : nm % 3 + 1);
  const int64_t heads = decode_heads(in, true);
  const bool valid_d = d >= 2 && d <= 300 && d % 2 == 0;
  const int64_t dd = valid_d ? d : 8;           // the width the buffers are sized for
  const int64_t w = family == 2 ? dd : dd / 2;  // table values a token
  const int64_t head_dim = dd + in.u8() % 3;
  RopeTensorArgs t{}, src{};
  t.heads = heads;
  decode_layout(in, t, n, head_dim, es);
  src.heads = heads;
  decode_layout(in, src, n, head_dim, es);
  const uint8_t cm = in.u8(), sm = in.u8();
  auto table_stride = [&](uint8_t m) -> int64_t {
    if (m < 180) return w + m % 3;
    if (m < 220) return 0;
    if (m < 235) return -1 - m % 3;
    return decode_big_stride(in, n, 4);
  };
  const int64_t cs = table_stride(cm), ss = table_stride(sm);
  const uint8_t place = in.u8();  // 0-3 apart; 4 in place; 5 source one element over; 6 cos over x; 7 sin = cos
  const uint8_t nul = in.u8();
  const uint8_t part = in.u8();
  const uint64_t seed = in.u64();

  static char described[512];
  std::snprintf(described, sizeof described,
                "given rows: family %d fmt %d d %lld pairs %d n %lld heads %lld ts %lld hs %lld src ts %lld hs %lld "
                "cs %lld ss %lld place %d null %d part %d",
                family, fmt, (long long)d, pairs, (long long)n, (long long)heads, (long long)t.ts, (long long)t.hs,
                (long long)src.ts, (long long)src.hs, (long long)cs, (long long)ss, place % 8, nul, part);
  g_call = described;

  // extents in elements (i128), where every stride is non-negative; otherwise the call is refused
  auto extent = [&](int64_t rows, int64_t rs, int64_t cols, int64_t cstride, int64_t width) -> i128 {
    if (rows <= 0 || cols <= 0) return 0;
    return (i128(rows) - 1) * (rows > 1 ? rs : 0) + (i128(cols) - 1) * (cols > 1 ? cstride : 0) + width;
  };
  // the source rows' strides: their own, or, in place (4) and one element over (5), the destination's; the
  // cached calls read none
  const bool reads_src = family != 0, same_strides = place % 8 == 4 || place % 8 == 5;
  const int64_t sts = same_strides ? t.ts : src.ts, shs = same_strides ? t.hs : src.hs;
  const bool neg =
      t.ts < 0 || t.hs < 0 || (reads_src && (sts < 0 || shs < 0)) || cs < 0 || ss < 0 || heads < 0 || n < 0;
  const i128 ex = neg ? 0 : extent(n, t.ts, heads, t.hs, dd),
             sx = neg || !reads_src ? 0 : extent(n, sts, heads, shs, dd);
  const i128 cx = neg ? 0 : extent(n, cs, 1, 0, w), sxx = neg ? 0 : extent(n, ss, 1, 0, w);
  const i128 biggest = std::max(std::max(ex, sx), std::max(cx, sxx));
  const bool fits = biggest <= kMaxElements;
  const bool overflow = biggest > i128(kI64Max) / i128(es);  // must be refused (OVERFLOW or INVALID)
  if (!fits && !overflow && valid_d && !neg) return 0;       // a valid call too large to run here
  // the buffer: guard, x rows, guard, source rows, guard, cos, guard, sin, guard (64-byte aligned regions)
  const size_t guard = 64;
  auto bytes = [&](i128 elements, size_t size) { return size_t(fits ? elements : i128(kSmall)) * size / 64 * 64 + 64; };
  const size_t xb = bytes(ex, es), sb = bytes(sx, es), cb = bytes(cx, 4), snb = bytes(sxx, 4);
  const size_t xo = guard, so = xo + xb + guard, co = so + sb + guard, sno = co + cb + guard, total = sno + snb + guard;
  std::vector<unsigned char> buf(total);
  std::mt19937_64 rng(seed);
  for (auto &b : buf) b = uint8_t(rng());  // every bit pattern: NaN, infinities, subnormals
  unsigned char *base = buf.data();
  void *x = base + xo;
  const void *source = base + so;
  const float *cos = reinterpret_cast<const float *>(base + co), *sin = reinterpret_cast<const float *>(base + sno);
  switch (place % 8) {
    case 4: source = x; break;
    case 5: source = base + xo + es; break;
    case 6: cos = reinterpret_cast<const float *>(base + xo); break;
    case 7: sin = cos; break;
    default: break;
  }
  if (nul >= 248) switch (nul % 4) {
      case 0: x = nullptr; break;
      case 1: source = nullptr; break;
      case 2: cos = nullptr; break;
      default: sin = nullptr; break;
    }
  int64_t begin = 0, end = n > 0 ? n : 0;
  if (part >= 240) {  // a bad range now and then
    begin = part % 2 ? -1 : end;
    end = part % 2 ? end : end + 1;
  }
  auto call = [&](unsigned char *b, int64_t pb, int64_t pe) -> posenc_status {
    auto at = [&](const void *p) -> const unsigned char * {
      return p ? b + (static_cast<const unsigned char *>(p) - base) : nullptr;
    };
    void *xp = x ? b + (static_cast<unsigned char *>(x) - base) : nullptr;
    const void *sp = at(source);
    const float *cp = reinterpret_cast<const float *>(at(cos)), *snp = reinterpret_cast<const float *>(at(sin));
    using U = uint16_t;
    posenc_rope rope = posenc_rope_default(d);
    std::memcpy(&rope.pairs, &pairs, sizeof pairs);
    // the tables calls take the pairing by value: an out-of-range enumerator cannot be passed from C++ without
    // undefined behaviour (UBSan's enum check), so they get a valid one (the C tests pass a bad one)
    const posenc_rope_pairs pr = pairs % 2 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
    if (family == 2) {
      if (fmt == 0)
        return posenc_rope_tables_f32_part(d, pr, cp, cs, snp, ss, n, static_cast<const float *>(sp), sts, shs,
                                           static_cast<float *>(xp), heads, t.ts, t.hs, pb, pe);
      return (fmt == 1 ? posenc_rope_tables_bf16_part : posenc_rope_tables_f16_part)(
          d, pr, cp, cs, snp, ss, n, static_cast<const U *>(sp), sts, shs, static_cast<U *>(xp), heads, t.ts, t.hs, pb,
          pe);
    }
    if (family == 0) {
      if (fmt == 0)
        return posenc_rope_cached_f32_part(&rope, cp, cs, snp, ss, n, static_cast<float *>(xp), heads, t.ts, t.hs, pb,
                                           pe);
      return (fmt == 1 ? posenc_rope_cached_bf16_part : posenc_rope_cached_f16_part)(
          &rope, cp, cs, snp, ss, n, static_cast<U *>(xp), heads, t.ts, t.hs, pb, pe);
    }
    if (fmt == 0)
      return posenc_rope_copy_cached_f32_part(&rope, cp, cs, snp, ss, n, static_cast<const float *>(sp), sts, shs,
                                              static_cast<float *>(xp), heads, t.ts, t.hs, pb, pe);
    return (fmt == 1 ? posenc_rope_copy_cached_bf16_part : posenc_rope_copy_cached_f16_part)(
        &rope, cp, cs, snp, ss, n, static_cast<const U *>(sp), sts, shs, static_cast<U *>(xp), heads, t.ts, t.hs, pb,
        pe);
  };
  std::vector<unsigned char> first;
  posenc_status first_status = POSENC_OK;
  for (size_t i = 0; i < paths.size(); ++i) {
    posenc_force_isa(paths[i]);
    std::vector<unsigned char> b = buf;
    const posenc_status st = call(b.data(), begin, end);
    if (st != POSENC_OK && b != buf) fail("a refused call by given rows wrote", long(st));
    if (st == POSENC_OK && !fits) fail("a call by given rows past int64 bytes was accepted");
    for (size_t g = 0; g < guard; ++g)
      if (b[xo - 1 - g] != buf[xo - 1 - g] || b[xo + xb + g] != buf[xo + xb + g])
        fail("a call by given rows wrote next to its rows", long(g));
    if (i == 0) {
      first = b;
      first_status = st;
    } else if (st != first_status || b != first) {
      fail("paths differ on a call by given rows", long(st), long(first_status));
    }
  }
  if (first_status == POSENC_OK && end - begin > 1) {  // two parts, the later first
    const int64_t cut = begin + (end - begin) / 2;
    std::vector<unsigned char> b = buf;
    if (call(b.data(), cut, end) != POSENC_OK || call(b.data(), begin, cut) != POSENC_OK)
      fail("a part of an accepted call by given rows was refused");
    if (b != first) fail("parts of a call by given rows differ from the whole call");
  }
  posenc_force_isa(paths.back());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::vector<posenc_isa> paths = available_paths();
  Input in(data, size);
  const uint8_t selector = in.u8();
  if (selector >= kFirstRopeByte) return rope_one_input(in, selector);
  if (selector == kGivenRowsByte) return given_one_input(in);
  Args a{};
  a.kernel = selector % kKernels;
  const int k = a.kernel;
  a.d = decode_d(in);
  a.spec = posenc_spec_default(a.d);
  const uint8_t lm = in.u8();
  int layout = lm < 240 ? lm % 3 : int(in.u32());
  std::memcpy(&a.spec.layout, &layout, sizeof layout);
  a.spec.base = decode_base(in);
  a.spec.freq_denominator = decode_denominator(in);
  a.spec.position_scale = decode_position_scale(in);
  a.n = decode_n(in);
  a.first = decode_first(in);
  a.vocab = decode_rows(in);
  a.pos_rows = decode_rows(in);
  a.out_stride = decode_stride(in, a.d, a.n, out_size(k));
  a.x_stride = decode_stride(in, a.d, has_activations(k) ? a.n : a.vocab, in_size(k));
  a.pos_stride = decode_stride(in, a.d, a.pos_rows, 4);
  a.scale = decode_scale(in);
  const uint8_t nm = in.u8();
  if (nm >= 240) {  // one pointer NULL now and then
    switch (nm % 6) {
      case 0: a.spec_null = true; break;
      case 1: a.out_null = true; break;
      case 2: a.positions_null = true; break;
      case 3: a.x_null = true; break;
      case 4: a.tokens_null = true; break;
      default: a.pos_table_null = true; break;
    }
  }
  // NULL positions are first + r for the kernels where positions are optional
  a.explicit_positions = positions_required(k) || (positions_optional(k) && (in.u8() & 1) && !a.positions_null);
  const uint64_t seed = in.u64();
  const uint8_t specials = in.u8();

  static char described[640];
  int layout_value;
  std::memcpy(&layout_value, &a.spec.layout, sizeof layout_value);
  std::snprintf(described, sizeof described,
                "kernel %d d %lld layout %d base %a den %a pscale %a n %lld first %lld vocab %lld pos_rows %lld "
                "strides out %lld x %lld pos %lld scale %a null spec %d out %d pos %d x %d tok %d ptab %d explicit %d",
                k, (long long)a.d, layout_value, a.spec.base, a.spec.freq_denominator, a.spec.position_scale,
                (long long)a.n, (long long)a.first, (long long)a.vocab, (long long)a.pos_rows, (long long)a.out_stride,
                (long long)a.x_stride, (long long)a.pos_stride, double(a.scale), a.spec_null, a.out_null,
                a.positions_null, a.x_null, a.tokens_null, a.pos_table_null, a.explicit_positions);
  g_call = described;
  Expect want = status_before_items(a);
  const bool reads_items = want.status == POSENC_OK && a.n > 0;
  Buffers b;
  // Buffers at their full size when the library may use them, else kSmall elements of canary.
  const auto sized = [&](i128 elements, size_t esz) { return reads_items ? size_t(elements) * esz : kSmall * esz; };
  i128 out_elems = 0, x_elems = 0, pt_elems = 0;
  if (reads_items) {
    const i128 xrows = has_activations(k) ? a.n : has_table(k) ? a.vocab : 0;
    out_elems = (i128(a.n) - 1) * a.out_stride + a.d + 8;  // + 8 elements of canary after the last row
    x_elems = xrows > 0 ? (xrows - 1) * a.x_stride + a.d : 0;
    pt_elems = k == kLearned && a.pos_rows > 0 ? (i128(a.pos_rows) - 1) * a.pos_stride + a.d : 0;
    if (a.n > kMaxElements || out_elems > kMaxElements || x_elems > kMaxElements || pt_elems > kMaxElements)
      return 0;                               // too large to run quickly: not a call this target makes
    if (has_spec(k) && a.d > 8192) return 0;  // a one-time setup of that size is slow, not interesting
  }
  // positions and token ids, one or a few bytes per row
  const size_t items = reads_items ? size_t(a.n) : kSmall;
  static const int32_t bad_tokens[] = {-1, 0, INT32_MAX, INT32_MIN};
  int64_t prev = int64_t(uint64_t(a.first) - 1);       // wrapping: only a guess for the next run
  for (size_t r = 0; r < items && is_times(k); ++r) {  // timesteps: one double per row
    static const double special[] = {kNaN,   kInf, -kInf,        -0.0,           0.0,          5e-324, 0x1p-61, 0x1p-60,
                                     1e-300, 0.5,  2147483647.5, -2147483647.75, 2147483648.0, 1e300};
    const uint8_t m = in.u8();
    double t;
    if (m < 90)
      t = double(int8_t(in.u8())) + double(in.u8()) / 256.0;  // small, with a fraction
    else if (m < 140)
      t = double(in.u16()) / 64.0;  // 0 .. 1024, sigma * 1000 style
    else if (m < 170)
      t = double(int32_t(in.u32()));  // integer-valued
    else if (m < 190)
      t = (m & 1 ? 1.0 : -1.0) * (2147483647.0 - double(in.u8()) / 4.0);  // near 2^31
    else if (m < 210)
      t = std::ldexp(1.0 + double(in.u8()) / 256.0, -int(in.u8() % 120));  // tiny
    else if (m < 240)
      t = pick(special, in.u8());
    else
      t = in.f64();
    b.times.push_back(t);
  }
  for (size_t r = 0; r < items && !is_times(k); ++r) {
    const uint8_t m = in.u8();
    int64_t p;
    if (m < 128)
      p = int64_t(uint64_t(prev) + 1);  // runs, as real batches have
    else if (m < 150)
      p = POSENC_PAD;
    else if (m < 200)
      p = k == kLearned ? int64_t(in.u8() % (a.pos_rows > 0 && a.pos_rows < 250 ? a.pos_rows + 2 : 18)) - 1
                        : int8_t(in.u8());
    else if (m < 230)
      p = int32_t(in.u32());
    else if (m < 250)
      p = (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
    else
      p = in.i64();
    b.positions.push_back(p);
    prev = p == POSENC_PAD ? int64_t(uint64_t(prev) + 1) : p;
    const uint8_t t = in.u8();
    const int64_t v = a.vocab > 0 && a.vocab < 1 << 20 ? a.vocab : 7;
    if (t < 230)
      b.tokens.push_back(int32_t(t % v));
    else if (t < 250)
      b.tokens.push_back(t % 4 == 1 ? int32_t(v) : pick(bad_tokens, t));
    else
      b.tokens.push_back(int32_t(in.u32()));
  }
  a.positions = b.positions;
  a.tokens = b.tokens;
  a.times = b.times;
  if (reads_items) {
    const posenc_status items_status = item_status(a);
    if (items_status != POSENC_OK) want = {items_status, want.or_invalid};  // INVALID is checked first
  }
  b.out.bytes.assign(sized(out_elems, out_size(k)), 0x5C);
  b.out.keep();
  b.x.bytes.resize((has_activations(k) || has_table(k)) ? sized(x_elems, in_size(k)) : 0);
  fill_inputs(b.x, in_size(k), seed, specials);
  b.pos_table.bytes.resize(k == kLearned ? sized(pt_elems, 4) : 0);
  fill_inputs(b.pos_table, 4, seed ^ 0x5555, specials);
  const std::vector<int64_t> positions_copy = b.positions;
  const std::vector<int32_t> tokens_copy = b.tokens;
  const std::vector<double> times_copy = b.times;

  // the scalar path first, then every other path on the same buffers' copies
  std::vector<unsigned char> scalar_out;
  posenc_status first_status = posenc_status(-1);
  for (posenc_isa isa : paths) {
    if (posenc_force_isa(isa) != POSENC_OK) fail("force_isa refused an available path", long(isa));
    std::vector<unsigned char> out = b.out.copy;
    const posenc_status st = invoke(a, b, out.empty() ? nullptr : out.data());
    check_path_status("", isa, paths.front(), st, want.status, want.or_invalid, false, first_status);
    if (!b.x.unchanged() || !b.pos_table.unchanged() || b.positions != positions_copy || b.tokens != tokens_copy ||
        (!b.times.empty() && std::memcmp(b.times.data(), times_copy.data(), b.times.size() * sizeof(double)) != 0))
      fail("an input buffer changed");
    if (st != POSENC_OK || a.n == 0) {
      if (out != b.out.copy) fail("a failed (or empty) call wrote to its output", long(st));
      continue;
    }
    if (isa == POSENC_ISA_SCALAR) {
      // bytes outside the rows keep their canary
      const size_t es = out_size(k);
      for (size_t i = 0; i < out.size(); ++i) {
        const int64_t e = int64_t(i / es);
        const bool in_row = e / a.out_stride < a.n && e % a.out_stride < a.d;
        if (!in_row && out[i] != 0x5C) fail("a byte outside the rows changed", long(i));
      }
      check_values(a, b, out.data());
      scalar_out = out;
    } else {
      const size_t es = out_size(k);
      for (size_t at = 0; at < out.size() / es; ++at) {
        if (std::memcmp(&out[at * es], &scalar_out[at * es], es) == 0) continue;
        uint32_t got = 0, want32 = 0;
        std::memcpy(&got, &out[at * es], es);
        std::memcpy(&want32, &scalar_out[at * es], es);
        std::fprintf(stderr, "element %zu: %s %08x, scalar %08x\n", at, posenc_isa_name(isa), unsigned(got),
                     unsigned(want32));
        fail("path differs from the scalar path", long(isa));
      }
    }
  }
  // Parts, on the last path: a cover of [0, n) in any order gives the whole call's bytes (the scalar path's,
  // which every path matched); any single part returns the whole call's status (then the range's), and
  // writes exactly its rows of the whole call's output, or nothing on an error.
  const std::vector<Part> cover = decode_cover(in, a.n > 0 ? a.n : 0);  // read whatever the status
  if (first_status == POSENC_OK && a.n > 0) {
    std::vector<unsigned char> out = b.out.copy;
    for (const Part &p : cover)
      if (invoke(a, b, out.data(), p) != POSENC_OK) fail("a part of a valid call failed", long(p.begin), long(p.end));
    if (out != scalar_out) fail("parts differ from the whole call");
  }
  const Part p = decode_range(in, a.n);
  std::vector<unsigned char> out = b.out.copy;
  const posenc_status st = invoke(a, b, out.empty() ? nullptr : out.data(), p);
  const posenc_status want_part = first_status != POSENC_OK ? first_status
                                  : range_ok(p, a.n)        ? POSENC_OK
                                                            : POSENC_ERR_INVALID;
  if (st != want_part) fail("part status differs from the whole call's then the range's", long(st), long(want_part));
  if (!b.x.unchanged() || !b.pos_table.unchanged() || b.positions != positions_copy || b.tokens != tokens_copy)
    fail("a part changed an input buffer");
  if (st != POSENC_OK || p.begin == p.end) {
    if (out != b.out.copy) fail("a failed (or empty) part wrote to its output", long(st));
  } else {
    const size_t es = out_size(k);
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t e = int64_t(i / es), row = e / a.out_stride;
      const bool mine = row >= p.begin && row < p.end && e % a.out_stride < a.d;
      if (out[i] != (mine ? scalar_out[i] : b.out.copy[i]))
        fail("a part wrote other bytes than its rows of the whole call", long(i));
    }
  }
  return 0;
}
