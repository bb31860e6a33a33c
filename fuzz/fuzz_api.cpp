// libFuzzer target over the whole C ABI. The input is decoded into one call of one kernel: a spec (or a
// d_model), sizes, strides, positions, token ids, a scale, NULLs, and input values. The target predicts the
// status from the header's rules alone (its own checks, in the documented order, in 128-bit arithmetic)
// and then holds the library to the contract:
//  - the status is the predicted one;
//  - on an error, every byte of every buffer is unchanged;
//  - on success, every available path returns the scalar path's bytes (the bytes between rows included,
//    which must keep their canary), and the values are right: PE in [-1, 1] with sin^2 + cos^2 = 1, +0.0
//    rows for POSENC_PAD and the odd column, sin 0 = +0 and cos 0 = 1, table_* equal to rows_* at the same
//    positions, bfloat16 and binary16 equal to the float32 value rounded to nearest-even, and every fused
//    kernel equal to fmaf(scale, x, pe) element by element, NaN results by posenc.h's NaN rule.
// Buffers are sized from the arguments when the library may touch them, and kept small (64 Ki elements)
// so that an execution stays fast; calls whose buffers would be larger are skipped. Calls predicted to
// fail before any position or token is read get 16-element buffers: reading or writing more is a bug that
// ASan reports.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "posenc/posenc.h"
#include "support/halves.hpp"

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
  static const int64_t special[] = {0, -1, kI64Min, kI64Max, int64_t(1) << 62, int64_t(1) << 40, 4097,
                                    (int64_t(1) << 61) - 2, int64_t(1) << 60, 2 * (((int64_t(1) << 56) + 17) / 21 * 16 - 16)};
  const uint8_t m = in.u8();
  if (m < 224) return 1 + m % 96;
  if (m < 240) return 1 + in.u16() % 2048;
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

int64_t decode_n(Input &in) {
  static const int64_t special[] = {-1, -2, kI64Min, kI64Max, int64_t(1) << 62, int64_t(1) << 61,
                                    int64_t(1) << 40, int64_t(1) << 32, k2p31, kI64Max / 2, 65, 129};
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
  static const int64_t special[] = {kI64Min, kI64Max, k2p31, -k2p31, k2p31 - 1, -(k2p31 - 1), kI64Max - 3, 0};
  const uint8_t m = in.u8();
  if (m < 160) return int8_t(in.u8());
  if (m < 200) return int32_t(in.u32());
  if (m < 240) return (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
  if (m < 252) return pick(special, in.u8());
  return in.i64();
}

int64_t decode_rows(Input &in) {  // vocab, pos_rows
  static const int64_t special[] = {0, -1, kI64Max, int64_t(1) << 62, int64_t(1) << 40, kI64Min};
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
  static const double special[] = {0.0, -0.0, kNaN, kInf, -kInf, 0x1p1000, 0x1.fffffffffffffp999, kDenorm,
                                   kDMax, -1e-300, 1e-20, 1000.0};
  const uint8_t m = in.u8();
  if (m < 120) return 1.0;
  if (m < 180) return int16_t(in.u16()) / 256.0;
  if (m < 200) return std::ldexp(1.0, int8_t(in.u8()));
  if (m < 240) return pick(special, in.u8());
  return in.f64();
}

float decode_scale(Input &in) {
  static const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  const uint8_t m = in.u8();
  if (m < 150) return 1.0f;
  if (m < 200) return int8_t(in.u8()) / 16.0f;
  if (m < 240) return pick(special, in.u8());
  return in.f32();
}

// ---- the kernels ------------------------------------------------------------------------------------

enum Kernel { kTableF32, kTableBF16, kTableF16, kRowsF32, kRowsBF16, kRowsF16, kAdd, kEmbedF32, kEmbedBF16,
              kEmbedF16, kLearned, kKernels };

bool has_spec(int k) { return k != kLearned; }
bool positions_required(int k) { return k == kRowsF32 || k == kRowsBF16 || k == kRowsF16; }
bool positions_optional(int k) { return k >= kAdd; }
bool has_table(int k) { return k >= kEmbedF32; }
size_t in_size(int k) { return k == kEmbedBF16 || k == kEmbedF16 ? 2 : 4; }
size_t out_size(int k) { return k == kTableBF16 || k == kTableF16 || k == kRowsBF16 || k == kRowsF16 ? 2 : 4; }

struct Args {
  int kernel;
  posenc_spec spec;
  bool spec_null, out_null, positions_null, x_null, tokens_null, pos_table_null;
  bool explicit_positions;
  int64_t d, first, n, out_stride, x_stride, vocab, pos_rows, pos_stride;
  float scale;
  std::vector<int64_t> positions;  // decoded only when the call may read them (see main)
  std::vector<int32_t> tokens;
};

// The position of row r, for the kernels that take first + r.
int64_t position_of(const Args &a, int64_t r) { return a.explicit_positions ? a.positions[size_t(r)] : a.first + r; }

// ---- the predicted status ---------------------------------------------------------------------------

struct Expect {
  posenc_status status;
  bool or_invalid;  // the spec's largest frequency is too close to 2^1000 to call from a double estimate
};

Expect spec_status(const posenc_spec &s) {
  int layout;
  std::memcpy(&layout, &s.layout, sizeof layout);
  if (s.d_model < 1 || layout < 0 || layout > 2) return {POSENC_ERR_INVALID, false};
  if (!(s.base > 0) || std::isinf(s.base)) return {POSENC_ERR_INVALID, false};
  if (!(s.freq_denominator >= 0) || std::isinf(s.freq_denominator)) return {POSENC_ERR_INVALID, false};
  if (!std::isfinite(s.position_scale)) return {POSENC_ERR_INVALID, false};
  const int64_t h = s.d_model / 2;
  if (h == 0 || s.position_scale == 0) return {POSENC_OK, false};
  // the largest |scale w_i|: w_0 = 1 when base >= 1, w_(h-1) = base^(-(h-1)/D) when base < 1
  const long double D = s.freq_denominator == 0 ? (long double)h : (long double)s.freq_denominator;
  long double top = std::log2(std::fabs((long double)s.position_scale)), grow = 0;
  if (h >= 2 && s.base < 1) grow = (long double)(h - 1) * (-std::log2((long double)s.base) / D);
  top += grow;
  const long double tol = 1e-9L + 1e-12L * std::fabs(grow);
  if (top >= 1000 + tol) return {POSENC_ERR_INVALID, false};
  return {POSENC_OK, top > 1000 - tol};
}

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
  if (a.out_null || (has_spec(k) && a.spec_null) || (positions_required(k) && a.positions_null) ||
      ((k == kAdd || has_table(k)) && a.x_null) || (has_table(k) && a.tokens_null) ||
      (k == kLearned && a.pos_table_null))
    return {POSENC_ERR_NULL, false};
  Expect e{POSENC_OK, false};
  if (has_spec(k)) {
    e = spec_status(a.spec);
    if (e.status != POSENC_OK) return e;
  } else if (a.d < 1) {
    return {POSENC_ERR_INVALID, false};
  }
  // from here on, a spec too close to call may still make the call INVALID first
  const int64_t d = a.d;
  if (a.out_stride < d) return {POSENC_ERR_INVALID, e.or_invalid};
  if ((k == kAdd || has_table(k)) && a.x_stride < d) return {POSENC_ERR_INVALID, e.or_invalid};
  if (has_table(k) && a.vocab < 0) return {POSENC_ERR_INVALID, e.or_invalid};
  if (k == kLearned && (a.pos_rows < 0 || a.pos_stride < d)) return {POSENC_ERR_INVALID, e.or_invalid};
  if (!extent_fits(a.n, a.out_stride, d, out_size(k))) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (k == kAdd && !extent_fits(a.n, a.x_stride, d, 4)) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (has_table(k) && !extent_fits(a.vocab, a.x_stride, d, in_size(k))) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  if (k == kLearned && !extent_fits(a.pos_rows, a.pos_stride, d, 4)) return {POSENC_ERR_OVERFLOW, e.or_invalid};
  return e;
}

posenc_status item_status(const Args &a) {
  const int k = a.kernel;
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
};

posenc_status invoke(const Args &a, Buffers &b, void *out) {
  const posenc_spec *spec = a.spec_null ? nullptr : &a.spec;
  const int64_t *pos = a.positions_null || !(positions_required(a.kernel) || a.explicit_positions)
                           ? nullptr
                           : b.positions.data();
  const void *x = a.x_null ? nullptr : b.x.ptr();
  const int32_t *tok = a.tokens_null ? nullptr : b.tokens.data();
  const float *pt = a.pos_table_null ? nullptr : static_cast<const float *>(b.pos_table.ptr());
  out = a.out_null ? nullptr : out;
  auto *o32 = static_cast<float *>(out);
  auto *o16 = static_cast<uint16_t *>(out);
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
      return posenc_embed_f32(spec, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pos, a.first,
                              a.n, o32, a.out_stride);
    case kEmbedBF16:
      return posenc_embed_bf16(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos,
                               a.first, a.n, o32, a.out_stride);
    case kEmbedF16:
      return posenc_embed_f16(spec, static_cast<const uint16_t *>(x), a.vocab, a.x_stride, tok, a.scale, pos,
                              a.first, a.n, o32, a.out_stride);
    default:
      return posenc_embed_learned_f32(a.d, static_cast<const float *>(x), a.vocab, a.x_stride, tok, a.scale, pt,
                                      a.pos_rows, a.pos_stride, pos, a.first, a.n, o32, a.out_stride);
  }
}

std::vector<posenc_isa> available_paths() {
  std::vector<posenc_isa> out;
  for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
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
  if (has_spec(k)) {
    if (posenc_rows_f32(&a.spec, pos.data(), n, pe.data(), d) != POSENC_OK) fail("rows_f32 for the reference");
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
        if (pos[size_t(r)] == 0 && (bits_of_float(row[si]) != 0 || row[ci] != 1.0f)) fail("PE(0) != (+0, 1)");
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
      if (k == kTableF32 || k == kRowsF32) {
        float got;
        std::memcpy(&got, out + 4 * at, 4);
        if (bits_of_float(got) != bits_of_float(p)) fail("f32 table differs from rows_f32", long(r), long(e));
      } else if (out_size(k) == 2) {
        uint16_t got;
        std::memcpy(&got, out + 2 * at, 2);
        const bool bf = k == kTableBF16 || k == kRowsBF16;
        if (got != (bf ? narrow_bf16(p) : narrow_f16(p))) fail("half table is not the rounded float32", long(r), long(e));
      } else {
        float xv;
        if (k == kAdd) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::vector<posenc_isa> paths = available_paths();
  Input in(data, size);
  Args a{};
  a.kernel = in.u8() % kKernels;
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
  a.x_stride = decode_stride(in, a.d, k == kAdd ? a.n : a.vocab, in_size(k));
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
                (long long)a.n, (long long)a.first, (long long)a.vocab, (long long)a.pos_rows,
                (long long)a.out_stride, (long long)a.x_stride, (long long)a.pos_stride, double(a.scale), a.spec_null,
                a.out_null, a.positions_null, a.x_null, a.tokens_null, a.pos_table_null, a.explicit_positions);
  g_call = described;
  Expect want = status_before_items(a);
  const bool reads_items = want.status == POSENC_OK && a.n > 0;
  Buffers b;
  // Buffers at their full size when the library may use them, else kSmall elements of canary.
  const auto sized = [&](i128 elements, size_t esz) {
    return reads_items ? size_t(elements) * esz : kSmall * esz;
  };
  i128 out_elems = 0, x_elems = 0, pt_elems = 0;
  if (reads_items) {
    const i128 xrows = k == kAdd ? a.n : has_table(k) ? a.vocab : 0;
    out_elems = (i128(a.n) - 1) * a.out_stride + a.d + 8;  // + 8 elements of canary after the last row
    x_elems = xrows > 0 ? (xrows - 1) * a.x_stride + a.d : 0;
    pt_elems = k == kLearned && a.pos_rows > 0 ? (i128(a.pos_rows) - 1) * a.pos_stride + a.d : 0;
    if (a.n > kMaxElements || out_elems > kMaxElements || x_elems > kMaxElements || pt_elems > kMaxElements)
      return 0;  // too large to run quickly: not a call this target makes
    if (has_spec(k) && a.d > 8192) return 0;  // a one-time setup of that size is slow, not interesting
  }
  // positions and token ids, one or a few bytes per row
  const size_t items = reads_items ? size_t(a.n) : kSmall;
  static const int32_t bad_tokens[] = {-1, 0, INT32_MAX, INT32_MIN};
  int64_t prev = int64_t(uint64_t(a.first) - 1);  // wrapping: only a guess for the next run
  for (size_t r = 0; r < items; ++r) {
    const uint8_t m = in.u8();
    int64_t p;
    if (m < 128) p = int64_t(uint64_t(prev) + 1);  // runs, as real batches have
    else if (m < 150) p = POSENC_PAD;
    else if (m < 200) p = k == kLearned ? int64_t(in.u8() % (a.pos_rows > 0 && a.pos_rows < 250 ? a.pos_rows + 2 : 18)) - 1 : int8_t(in.u8());
    else if (m < 230) p = int32_t(in.u32());
    else if (m < 250) p = (m & 1 ? k2p31 : -k2p31) + int8_t(in.u8());
    else p = in.i64();
    b.positions.push_back(p);
    prev = p == POSENC_PAD ? int64_t(uint64_t(prev) + 1) : p;
    const uint8_t t = in.u8();
    const int64_t v = a.vocab > 0 && a.vocab < 1 << 20 ? a.vocab : 7;
    if (t < 230) b.tokens.push_back(int32_t(t % v));
    else if (t < 250) b.tokens.push_back(t % 4 == 1 ? int32_t(v) : pick(bad_tokens, t));
    else b.tokens.push_back(int32_t(in.u32()));
  }
  a.positions = b.positions;
  a.tokens = b.tokens;
  if (reads_items) {
    const posenc_status items_status = item_status(a);
    if (items_status != POSENC_OK) want = {items_status, want.or_invalid};  // INVALID is checked first
  }
  b.out.bytes.assign(sized(out_elems, out_size(k)), 0x5C);
  b.out.keep();
  b.x.bytes.resize((k == kAdd || has_table(k)) ? sized(x_elems, in_size(k)) : 0);
  fill_inputs(b.x, in_size(k), seed, specials);
  b.pos_table.bytes.resize(k == kLearned ? sized(pt_elems, 4) : 0);
  fill_inputs(b.pos_table, 4, seed ^ 0x5555, specials);
  const std::vector<int64_t> positions_copy = b.positions;
  const std::vector<int32_t> tokens_copy = b.tokens;

  // the scalar path first, then every other path on the same buffers' copies
  std::vector<unsigned char> scalar_out;
  posenc_status first_status = posenc_status(-1);
  for (posenc_isa isa : paths) {
    if (posenc_force_isa(isa) != POSENC_OK) fail("force_isa refused an available path", long(isa));
    std::vector<unsigned char> out = b.out.copy;
    const posenc_status st = invoke(a, b, out.empty() ? nullptr : out.data());
    const bool expected = st == want.status || (want.or_invalid && st == POSENC_ERR_INVALID);
    if (!expected) fail("status differs from the header's rules", long(st), long(want.status));
    if (isa != paths.front() && st != first_status) fail("paths disagree on the status", long(isa));
    if (isa == paths.front() && std::getenv("POSENC_FUZZ_VERBOSE"))  // to see what an input decodes to
      std::fprintf(stderr, "%s\n  -> %s\n", g_call, posenc_status_string(st));
    first_status = st;
    if (!b.x.unchanged() || !b.pos_table.unchanged() || b.positions != positions_copy || b.tokens != tokens_copy)
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
  return 0;
}
