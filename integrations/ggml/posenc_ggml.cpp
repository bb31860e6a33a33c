// posenc/ggml.h: ggml's RoPE builders, and its timestep embedding (at the end), as ggml custom operations
// computed by posenc (docs/ggml.md).
//
// A builder checks what ggml's builder and CPU operation check, interns the parameter set (Record), and returns
// ggml_custom_4d / ggml_custom_inplace with the record as userdata; the operation then runs on ggml's threads.
// Each thread takes a contiguous share of the rows (head i1 of token i2 of batch i3, in ggml's order), groups
// them by token and hands whole tokens to posenc_rope_f32 / _f16, whose output bytes do not depend on how the
// rows are split. An out-of-place result is made by copying a block of rows from a to dst and rotating the
// block in place while it is still in cache.
//
// ggml's parameters become a posenc_rope: rotary_dim 2H (H pairs: n_dims / 2, or n_dims for VISION),
// interleaved pairs for NORMAL and halves otherwise, the frequencies and magnitude of ggml's formulas computed
// exactly (posenc::detail::ggml_rope_frequencies), and for the multi modes the axis of each pair as ggml's
// ggml_mrope_cache_init assigns it (axes: one more than the largest used; positions: ggml's slots, axis-major
// as posenc takes them). The backward operation negates the positions.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "posenc/ggml.h"
#include "posenc/posenc.h"
#include "rope_powers.hpp"

namespace {

constexpr int kModeNormal = GGML_ROPE_TYPE_NORMAL, kModeNeox = GGML_ROPE_TYPE_NEOX, kModeMrope = GGML_ROPE_TYPE_MROPE,
              kModeVision = GGML_ROPE_TYPE_VISION, kModeImrope = GGML_ROPE_TYPE_IMROPE;
// Our op_params slots (int32 indices), after the custom operation's own parameters (function, task count,
// userdata: 24 bytes): the record, and n_offs where ggml's own rope keeps it.
constexpr int kRecordParam = 12, kOffsParam = 15;
// Rows copied and rotated together: they stay in L2 between the two, and up to 65 consecutive tokens share one
// posenc call, in which the rows engine makes one anchor per 65 positions (a call per few tokens cost 20%).
constexpr int64_t kBlockBytes = 1 << 20;
constexpr int64_t kMaxBlockTokens = 65;

bool is_multi(int mode) { return (mode & kModeMrope) != 0; }

// One parameter set, as a builder received it; compared and ordered as bytes (no padding: 4-byte fields).
struct Key {
  int32_t n_dims, mode, n_ctx_orig, forward;
  int32_t sections[4];
  float base, fs, ef, af, bf, bs;
  bool operator<(const Key &o) const { return std::memcmp(this, &o, sizeof *this) < 0; }
};
static_assert(sizeof(Key) == 14 * 4, "Key has no padding");
static_assert(sizeof(ggml_custom_op_t) + 2 * sizeof(void *) <= 12 * sizeof(int32_t) && sizeof(void *) <= 8,
              "our op_params slots follow the custom operation's parameters");

// The frequencies of a record for one freq_factors content (none: empty), and the posenc spec that uses them.
struct FreqSet {
  std::vector<float> factors;
  std::vector<double> freq;
  posenc_rope rope;
  const FreqSet *next = nullptr;
};

// An interned parameter set: immutable after construction except for its list of frequency sets, which only
// grows (readers walk it without a lock; a miss takes the lock and appends at the head).
struct Record {
  Key key;
  int64_t pairs = 0;  // H
  int axes = 1;
  std::vector<uint8_t> axis;   // the axis of each pair (multi modes)
  std::vector<int64_t> index;  // ggml's theta index of each pair (VISION restarts it per section)
  std::atomic<const FreqSet *> head{nullptr};
  std::mutex mu;
  std::vector<std::unique_ptr<FreqSet>> sets;
};

[[noreturn]] void fail(const char *what, int line) { ggml_abort(__FILE__, line, "posenc_ggml: %s", what); }
#define POSENC_GGML_REQUIRE(cond, what) \
  do {                                  \
    if (!(cond)) fail(what, __LINE__);  \
  } while (0)

// The axis and theta index of every pair, as ggml_mrope_cache_init assigns them: sector = i mod the sections'
// sum; MROPE and VISION: t below s0, h below s0 + s1, w below s0 + s1 + s2, else the fourth slot; IMROPE: h on
// sector % 3 == 1 below 3 s1, w on % 3 == 2 below 3 s2, t on % 3 == 0 below 3 s0, else the fourth slot. VISION
// resets an axis's theta where an else-if chain of sector comparisons finds its section's start.
void assign_axes(Record &r) {
  const int mode = r.key.mode;
  r.index.resize(size_t(r.pairs));
  for (int64_t i = 0; i < r.pairs; ++i) r.index[size_t(i)] = i;
  if (!is_multi(mode)) return;
  const int32_t *s = r.key.sections;
  const int64_t sum = int64_t(s[0]) + s[1] + s[2] + s[3], w = int64_t(s[0]) + s[1], e = w + s[2];
  int64_t start[4] = {0, 0, 0, 0};
  int top = 0;
  r.axis.resize(size_t(r.pairs));
  for (int64_t i = 0; i < r.pairs; ++i) {
    const int64_t sector = i % sum;
    int a = 0;
    if (mode == kModeImrope) {
      if (sector % 3 == 1 && sector < 3 * int64_t(s[1])) a = 1;
      else if (sector % 3 == 2 && sector < 3 * int64_t(s[2])) a = 2;
      else if (sector % 3 == 0 && sector < 3 * int64_t(s[0])) a = 0;
      else a = 3;
    } else if (sector >= s[0] && sector < w) {
      a = 1;
    } else if (sector >= w && sector < e) {
      a = 2;
    } else if (sector >= e) {
      a = 3;
    }
    if (mode == kModeVision) {
      if (sector == 0) start[0] = i;
      else if (sector == s[0]) start[1] = i;
      else if (sector == w) start[2] = i;
      else if (sector == e) start[3] = i;
      r.index[size_t(i)] = i - start[a];
    }
    r.axis[size_t(i)] = uint8_t(a);
    top = std::max(top, a);
  }
  r.axes = top + 1;
  if (r.axes == 1) r.axis.clear();
}

// A new frequency set for factors (NULL: none); aborts where ggml's values are not ones posenc takes.
std::unique_ptr<FreqSet> make_set(const Record &r, const float *factors) {
  auto set = std::make_unique<FreqSet>();
  if (factors) set->factors.assign(factors, factors + r.pairs);
  set->freq.resize(size_t(r.pairs));
  posenc::detail::GgmlRope g;
  g.n_dims = r.key.n_dims;
  g.pairs = r.pairs;
  g.index = r.index.data();
  g.factors = factors;
  g.freq_base = r.key.base;
  g.freq_scale = r.key.fs;
  g.ext_factor = r.key.ef;
  g.attn_factor = r.key.af;
  g.beta_fast = r.key.bf;
  g.beta_slow = r.key.bs;
  g.n_ctx_orig = r.key.n_ctx_orig;
  double m = 1.0;
  if (posenc::detail::ggml_rope_frequencies(g, set->freq.data(), &m) != POSENC_OK)
    fail(factors ? "freq_factors posenc cannot take (0, inf or NaN)"
                 : "parameters posenc cannot take (freq_base, freq_scale or attn_factor <= 0 or not finite, a NaN "
                   "YaRN ramp, or a magnitude attn_factor (1 + 0.1 ln(1/freq_scale)) outside [2^-64, 2^64])",
         __LINE__);
  set->rope = posenc_rope_default(2 * r.pairs);
  set->rope.pairs = r.key.mode == kModeNormal ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  set->rope.freq = set->freq.data();
  set->rope.attention_scale = m;
  set->rope.axes = r.axes;
  set->rope.axis = r.axes > 1 ? r.axis.data() : nullptr;
  return set;
}

// The set for the factors' current content, made on first use.
const FreqSet &frequencies(Record &r, const float *factors) {
  auto matches = [&](const FreqSet &s) {
    if (!factors) return s.factors.empty();
    return !s.factors.empty() && std::memcmp(s.factors.data(), factors, size_t(r.pairs) * sizeof(float)) == 0;
  };
  for (const FreqSet *s = r.head.load(std::memory_order_acquire); s; s = s->next)
    if (matches(*s)) return *s;
  std::lock_guard<std::mutex> lock(r.mu);
  for (const FreqSet *s = r.head.load(std::memory_order_acquire); s; s = s->next)
    if (matches(*s)) return *s;
  std::unique_ptr<FreqSet> set = make_set(r, factors);
  set->next = r.head.load(std::memory_order_relaxed);
  r.sets.push_back(std::move(set));
  r.head.store(r.sets.back().get(), std::memory_order_release);
  return *r.sets.back();
}

// The process-wide table of records: never destroyed, so that graphs computed while the process exits still
// find their parameters.
Record *intern(const Key &key, int64_t pairs) {
  static std::mutex mu;
  static auto *table = new std::map<Key, std::unique_ptr<Record>>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = table->find(key);
  if (it != table->end()) return it->second.get();
  auto r = std::make_unique<Record>();
  r->key = key;
  r->pairs = pairs;
  assign_axes(*r);
  // The set without factors, made now: it checks the parameters while the builder's caller is on the stack.
  std::unique_ptr<FreqSet> set = make_set(*r, nullptr);
  r->sets.push_back(std::move(set));
  r->head.store(r->sets.back().get(), std::memory_order_release);
  Record *out = r.get();
  table->emplace(key, std::move(r));
  return out;
}

// --- the operation ---------------------------------------------------------------------------------------

template <class T>
posenc_status rotate(const posenc_rope *rope, const int64_t *positions, int64_t n, T *x, int64_t heads,
                     int64_t token_stride, int64_t head_stride);
template <>
posenc_status rotate<float>(const posenc_rope *rope, const int64_t *positions, int64_t n, float *x, int64_t heads,
                            int64_t token_stride, int64_t head_stride) {
  return posenc_rope_f32(rope, positions, 0, n, x, heads, token_stride, head_stride);
}
template <>
posenc_status rotate<uint16_t>(const posenc_rope *rope, const int64_t *positions, int64_t n, uint16_t *x, int64_t heads,
                               int64_t token_stride, int64_t head_stride) {
  return posenc_rope_f16(rope, positions, 0, n, x, heads, token_stride, head_stride);
}

struct Job {
  const FreqSet *set;
  const ggml_tensor *a, *b;
  ggml_tensor *dst;
  int axes;
  bool back, copy;
  int64_t offs;  // n_offs, elements
  int64_t rotary_dim;
};

void check_status(posenc_status st) {
  if (st == POSENC_ERR_OUT_OF_RANGE) fail("a position of -2^31 (posenc takes |p| < 2^31)", __LINE__);
  POSENC_GGML_REQUIRE(st == POSENC_OK, "posenc rejected the rotation");
}

// Rows (t, j) for tokens [t0, t0 + n) and heads [h0, h0 + nh) of batch entry i3: copied from a to dst when the
// operation is out of place, then rotated in dst. Rows that posenc's fast call cannot take (strides that are
// not whole elements, a misaligned base, rows that overlap) go one at a time through an aligned buffer.
template <class T>
void rotate_rows(const Job &job, int64_t i3, int64_t t0, int64_t n, int64_t h0, int64_t nh) {
  const ggml_tensor *a = job.a, *dst = job.dst;
  const int64_t ne2 = dst->ne[2], esize = int64_t(sizeof(T)), row_bytes = dst->ne[0] * esize;
  const int32_t *pos32 = static_cast<const int32_t *>(job.b->data);
  int64_t pos[4 * kMaxBlockTokens];
  for (int ax = 0; ax < job.axes; ++ax)
    for (int64_t t = 0; t < n; ++t) {
      const int64_t p = pos32[int64_t(ax) * ne2 + t0 + t];
      pos[ax * n + t] = job.back ? -p : p;
    }
  char *base = static_cast<char *>(dst->data) + i3 * dst->nb[3] + t0 * dst->nb[2] + h0 * dst->nb[1];
  if (job.copy) {
    const char *src = static_cast<const char *>(a->data) + i3 * a->nb[3] + t0 * a->nb[2] + h0 * a->nb[1];
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < nh; ++j) {
        const char *s = src + t * a->nb[2] + j * a->nb[1];
        char *d = base + t * dst->nb[2] + j * dst->nb[1];
        if (s != d) std::memmove(d, s, size_t(row_bytes));
      }
  }
  const bool whole =
      dst->nb[1] % esize == 0 && dst->nb[2] % esize == 0 && reinterpret_cast<uintptr_t>(base) % alignof(T) == 0;
  if (whole) {
    T *x = reinterpret_cast<T *>(base) + job.offs;
    const posenc_status st =
        rotate<T>(&job.set->rope, pos, n, x, nh, int64_t(dst->nb[2]) / esize, int64_t(dst->nb[1]) / esize);
    if (st != POSENC_ERR_INVALID) return check_status(st);  // INVALID: rows overlap; one at a time below
  }
  std::vector<T> buf(size_t(job.rotary_dim));
  int64_t one[4];
  for (int64_t t = 0; t < n; ++t) {
    for (int ax = 0; ax < job.axes; ++ax) one[ax] = pos[ax * n + t];
    for (int64_t j = 0; j < nh; ++j) {
      char *row = base + t * dst->nb[2] + j * dst->nb[1] + job.offs * esize;
      std::memcpy(buf.data(), row, buf.size() * sizeof(T));
      check_status(rotate<T>(&job.set->rope, one, 1, buf.data(), 1, job.rotary_dim, job.rotary_dim));
      std::memcpy(row, buf.data(), buf.size() * sizeof(T));
    }
  }
}

// Thread ith's share of the rows: [R ith / nth, R (ith + 1) / nth) of R = ne1 ne2 ne3, in ggml's row order
// (head fastest, then token, then batch entry), cut into whole tokens where it can.
template <class T>
void run(const Job &job, int ith, int nth) {
  const ggml_tensor *dst = job.dst;
  const int64_t ne1 = dst->ne[1], ne2 = dst->ne[2], ne3 = dst->ne[3];
  const int64_t rows = ne1 * ne2 * ne3;
  const int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
  const int64_t token_bytes = std::max<int64_t>(1, ne1 * dst->ne[0] * int64_t(sizeof(T)));
  const int64_t block = std::max<int64_t>(1, std::min<int64_t>(kMaxBlockTokens, kBlockBytes / token_bytes));
  int64_t r = r0;
  while (r < r1) {
    const int64_t i3 = r / (ne1 * ne2), t = (r / ne1) % ne2, j = r % ne1;
    const int64_t slice_end = std::min(r1, (i3 + 1) * ne1 * ne2);  // rows of this batch entry in the share
    if (j != 0 || slice_end - r < ne1) {                           // a partial token: heads [j, j + nh)
      const int64_t nh = std::min(ne1 - j, slice_end - r);
      rotate_rows<T>(job, i3, t, 1, j, nh);
      r += nh;
      continue;
    }
    const int64_t n = std::min(block, (slice_end - r) / ne1);  // whole tokens
    rotate_rows<T>(job, i3, t, n, 0, ne1);
    r += n * ne1;
  }
}

void op(ggml_tensor *dst, int ith, int nth, void *userdata) {
  Record &r = *static_cast<Record *>(userdata);
  const ggml_tensor *a = dst->src[0], *b = dst->src[1], *c = dst->src[2];
  Job job;
  job.set = &frequencies(r, c ? static_cast<const float *>(c->data) : nullptr);
  job.a = a;
  job.b = b;
  job.dst = dst;
  job.axes = r.axes;
  job.back = r.key.forward == 0;
  job.offs = dst->op_params[kOffsParam];
  job.rotary_dim = 2 * r.pairs;
  job.copy = !(a->data == dst->data && a->nb[1] == dst->nb[1] && a->nb[2] == dst->nb[2] && a->nb[3] == dst->nb[3]);
  if (dst->type == GGML_TYPE_F32) run<float>(job, ith, nth);
  else run<uint16_t>(job, ith, nth);
}

// --- the builders ------------------------------------------------------------------------------------------

ggml_tensor *build(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims, const int *sections,
                   int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor,
                   float beta_fast, float beta_slow, bool inplace, bool forward) {
  POSENC_GGML_REQUIRE(a && b, "a and b are required");
  POSENC_GGML_REQUIRE(
      mode == kModeNormal || mode == kModeNeox || mode == kModeMrope || mode == kModeImrope || mode == kModeVision,
      "mode must be GGML_ROPE_TYPE_NORMAL, _NEOX, _MROPE, _IMROPE or _VISION");
  POSENC_GGML_REQUIRE(a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a must be F32 or F16");
  POSENC_GGML_REQUIRE(a->nb[0] == ggml_type_size(a->type), "the elements of a's rows must be contiguous");
  POSENC_GGML_REQUIRE(b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->nb[0] == sizeof(int32_t),
                      "b must be a contiguous I32 vector");
  const bool multi = is_multi(mode);
  POSENC_GGML_REQUIRE(b->ne[0] == (multi ? 4 : 1) * a->ne[2],
                      multi ? "b must hold 4 positions per token (a->ne[2] * 4)" : "b must hold a->ne[2] positions");
  POSENC_GGML_REQUIRE(n_dims >= 2 && n_dims % 2 == 0 && n_dims <= a->ne[0], "n_dims must be even, 2 .. ne0");
  if (mode == kModeVision) POSENC_GGML_REQUIRE(2 * int64_t(n_dims) == a->ne[0], "VISION needs n_dims == ne0 / 2");
  Key key;
  std::memset(&key, 0, sizeof key);
  key.n_dims = n_dims;
  key.mode = mode;
  key.n_ctx_orig = n_ctx_orig;
  key.forward = forward ? 1 : 0;
  key.base = freq_base;
  key.fs = freq_scale;
  key.ef = ext_factor;
  key.af = attn_factor;
  key.bf = beta_fast;
  key.bs = beta_slow;
  if (multi) {
    POSENC_GGML_REQUIRE(sections != nullptr, "the multi modes need sections (posenc_ggml_rope_multi)");
    int64_t sum = 0;
    for (int i = 0; i < 4; ++i) {
      POSENC_GGML_REQUIRE(sections[i] >= 0, "sections must not be negative");
      key.sections[i] = sections[i];
      sum += sections[i];
    }
    POSENC_GGML_REQUIRE(sections[0] > 0 || sections[1] > 0 || sections[2] > 0, "sections[0..2] are all 0");
    POSENC_GGML_REQUIRE(sum <= a->ne[0], "the sections' sum exceeds ne0");
  }
  const int64_t pairs = mode == kModeVision ? n_dims : n_dims / 2;
  if (c) {
    POSENC_GGML_REQUIRE(c->type == GGML_TYPE_F32 && ggml_is_contiguous(c), "freq_factors must be contiguous F32");
    POSENC_GGML_REQUIRE(c->ne[0] >= pairs, "freq_factors needs a value for every rotated pair");
  }
  Record *record = intern(key, pairs);
  ggml_tensor *args[3] = {a, b, c};
  ggml_tensor *result = inplace ? ggml_custom_inplace(ctx, a, args + 1, c ? 2 : 1, op, GGML_N_TASKS_MAX, record)
                                : ggml_custom_4d(ctx, a->type, a->ne[0], a->ne[1], a->ne[2], a->ne[3], args, c ? 3 : 2,
                                                 op, GGML_N_TASKS_MAX, record);
  std::memcpy(&result->op_params[kRecordParam], &record, sizeof record);
  result->op_params[kOffsParam] = 0;
  return result;
}

// --- the timestep embedding ----------------------------------------------------------------------------------
//
// ggml_timestep_embedding(ctx, timesteps, dim, max_period): row i of the [dim, n] F32 result is the embedding of
// the F32 timestep i, cos/sin halves with base max_period and D = dim / 2 (posenc::spec::ggml_timestep), an odd
// dim ending with a 0.0 column, as ggml's CPU operation writes it. dim and max_period are kept by value in the
// result's op_params (no userdata, nothing owned or interned); the operation builds the posenc_spec on its
// stack. Thread ith of nth writes rows [n ith / nth, n (ith + 1) / nth): the float timesteps of a chunk become
// doubles on the stack and go to posenc_timesteps_f32 for those rows. Every row is correctly rounded from its
// own exact angle, so the bytes are those of one posenc_timesteps_f32 over all n rows (the contract of the _part
// twins: no byte depends on where a part starts) whatever nth is.
constexpr int kDimParam = 12, kPeriodParam = 13;
constexpr int64_t kTimestepChunk = 64;

posenc_spec timestep_spec(int dim, int max_period) {
  posenc_spec s = posenc_spec_default(dim);
  s.layout = POSENC_COS_SIN_HALVES;
  s.base = double(max_period);
  return s;
}

void timestep_op(ggml_tensor *dst, int ith, int nth, void *) {
  const ggml_tensor *t = dst->src[0];
  const posenc_spec spec = timestep_spec(dst->op_params[kDimParam], dst->op_params[kPeriodParam]);
  const int64_t n = dst->ne[1], r0 = n * ith / nth, r1 = n * (ith + 1) / nth, stride = int64_t(dst->nb[1]) / 4;
  const float *ts = static_cast<const float *>(t->data);
  double chunk[kTimestepChunk];
  for (int64_t r = r0; r < r1; r += kTimestepChunk) {
    const int64_t k = std::min(kTimestepChunk, r1 - r);
    for (int64_t i = 0; i < k; ++i) chunk[i] = double(ts[r + i]);
    float *out = reinterpret_cast<float *>(static_cast<char *>(dst->data) + r * int64_t(dst->nb[1]));
    const posenc_status st = posenc_timesteps_f32(&spec, chunk, k, out, stride);
    if (st == POSENC_ERR_OUT_OF_RANGE) fail("a timestep that is not finite or has |t| >= 2^31", __LINE__);
    POSENC_GGML_REQUIRE(st == POSENC_OK, "posenc rejected the timestep embedding");
  }
}

}  // namespace

extern "C" {

ggml_tensor *posenc_ggml_rope_ext(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims,
                                  int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                  float attn_factor, float beta_fast, float beta_slow) {
  return build(ctx, a, b, c, n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, false, true);
}

ggml_tensor *posenc_ggml_rope_ext_inplace(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims,
                                          int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                          float attn_factor, float beta_fast, float beta_slow) {
  return build(ctx, a, b, c, n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, true, true);
}

ggml_tensor *posenc_ggml_rope_ext_back(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims,
                                       int mode, int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                       float attn_factor, float beta_fast, float beta_slow) {
  return build(ctx, a, b, c, n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, false, false);
}

ggml_tensor *posenc_ggml_rope_multi(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims,
                                    int sections[4], int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                    float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
  return build(ctx, a, b, c, n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, false, true);
}

ggml_tensor *posenc_ggml_rope_multi_inplace(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c,
                                            int n_dims, int sections[4], int mode, int n_ctx_orig, float freq_base,
                                            float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                            float beta_slow) {
  return build(ctx, a, b, c, n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, true, true);
}

ggml_tensor *posenc_ggml_rope_multi_back(ggml_context *ctx, ggml_tensor *a, ggml_tensor *b, ggml_tensor *c, int n_dims,
                                         int sections[4], int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                         float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
  return build(ctx, a, b, c, n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
               beta_fast, beta_slow, false, false);
}

int posenc_ggml_is_rope(const ggml_tensor *t) {
  if (!t || t->op != GGML_OP_CUSTOM) return 0;
  ggml_custom_op_t fun;
  std::memcpy(&fun, t->op_params, sizeof fun);  // the custom operation's parameters start with its function
  return fun == &op ? 1 : 0;
}

ggml_tensor *posenc_ggml_rope_set_offset(ggml_tensor *a, int n_offs) {
  POSENC_GGML_REQUIRE(posenc_ggml_is_rope(a), "posenc_ggml_rope_set_offset needs a posenc_ggml rope result");
  const Record *record;
  std::memcpy(&record, &a->op_params[kRecordParam], sizeof record);
  const Record &r = *record;
  POSENC_GGML_REQUIRE(r.key.mode != kModeVision, "VISION takes no offset");
  POSENC_GGML_REQUIRE(n_offs >= 0 && n_offs % 2 == 0 && int64_t(n_offs) + r.key.n_dims <= a->ne[0],
                      "n_offs must be even, >= 0, and n_offs + n_dims <= ne0");
  a->op_params[kOffsParam] = n_offs;
  return a;
}

ggml_tensor *posenc_ggml_timestep_embedding(ggml_context *ctx, ggml_tensor *timesteps, int dim, int max_period) {
  POSENC_GGML_REQUIRE(timesteps != nullptr, "timesteps is required");
  POSENC_GGML_REQUIRE(timesteps->type == GGML_TYPE_F32 && timesteps->nb[0] == sizeof(float),
                      "timesteps must be F32 with contiguous elements");
  POSENC_GGML_REQUIRE(dim >= 1, "dim must be at least 1");
  POSENC_GGML_REQUIRE(max_period >= 1, "max_period must be at least 1");
  ggml_tensor *args[1] = {timesteps};
  ggml_tensor *result =
      ggml_custom_4d(ctx, GGML_TYPE_F32, dim, timesteps->ne[0], 1, 1, args, 1, timestep_op, GGML_N_TASKS_MAX, nullptr);
  result->op_params[kDimParam] = dim;
  result->op_params[kPeriodParam] = max_period;
  return result;
}

}  // extern "C"
