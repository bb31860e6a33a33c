// ggml's RoPE and timestep embedding as posenc calls (rope_node.hpp): the interned parameter sets and the
// rotation of one thread's share of a node's rows.
//
// ggml's parameters become a posenc_rope: rotary_dim 2H (H pairs: n_dims / 2, or n_dims for VISION),
// interleaved pairs for NORMAL and halves otherwise, the frequencies and magnitude of ggml's formulas computed
// exactly (posenc_rope_ggml_frequencies), and for the multi modes the axis of each pair as ggml's
// ggml_mrope_cache_init assigns it (axes: one more than the largest used; positions: ggml's slots, axis-major
// as posenc takes them). The backward operation (ROPE_BACK, ggml_rope_*_back) is the inverse spec,
// posenc_rope_inverse of the forward one, at the node's own positions: the bytes of the forward rotation by -p.
#include "rope_node.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "posenc/posenc.h"

namespace posenc_ggml {

namespace {

constexpr int64_t kTimestepChunk = 64;

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
      if (sector % 3 == 1 && sector < 3 * int64_t(s[1]))
        a = 1;
      else if (sector % 3 == 2 && sector < 3 * int64_t(s[2]))
        a = 2;
      else if (sector % 3 == 0 && sector < 3 * int64_t(s[0]))
        a = 0;
      else
        a = 3;
    } else if (sector >= s[0] && sector < w) {
      a = 1;
    } else if (sector >= w && sector < e) {
      a = 2;
    } else if (sector >= e) {
      a = 3;
    }
    if (mode == kModeVision) {
      if (sector == 0)
        start[0] = i;
      else if (sector == s[0])
        start[1] = i;
      else if (sector == w)
        start[2] = i;
      else if (sector == e)
        start[3] = i;
      r.index[size_t(i)] = i - start[a];
    }
    r.axis[size_t(i)] = uint8_t(a);
    top = std::max(top, a);
  }
  r.axes = top + 1;
  if (r.axes == 1) r.axis.clear();
}

// A new frequency set for factors (NULL: none); ok is false where ggml's values are not ones posenc takes.
std::unique_ptr<FreqSet> make_set(const Record &r, const float *factors) {
  auto set = std::make_unique<FreqSet>();
  if (factors) set->factors.assign(factors, factors + r.pairs);
  set->freq.resize(size_t(r.pairs));
  // posenc.h's fields in order: n_dims, pairs, index, factors, freq_base .. beta_slow (the key's six), n_ctx_orig
  const posenc_ggml_rope_params g{r.key.n_dims, r.pairs,  r.index.data(), factors,  r.key.base,      r.key.fs,
                                  r.key.ef,     r.key.af, r.key.bf,       r.key.bs, r.key.n_ctx_orig};
  double m = 1.0;
  set->ok = posenc_rope_ggml_frequencies(&g, set->freq.data(), &m) == POSENC_OK;
  set->rope = posenc_rope_default(2 * r.pairs);
  set->rope.pairs = r.key.mode == kModeNormal ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
  set->rope.freq = set->freq.data();
  set->rope.attention_scale = m;
  set->rope.axes = r.axes;
  set->rope.axis = r.axes > 1 ? r.axis.data() : nullptr;
  if (r.key.forward == 0) posenc_rope_inverse(&set->rope, &set->rope);  // the record's every node is backward
  return set;
}

// posenc's calls for a node's element type: the part [b, e) of the rotation of all n tokens of one batch entry
// (docs/threads.md: the whole call is checked, the part's tokens written, the bytes those of the whole call).
template <class T>
struct Calls;
template <>
struct Calls<float> {
  static constexpr auto in_place = posenc_rope_f32_part;
  static constexpr auto copy = posenc_rope_copy_f32_part;
  static constexpr auto cached = posenc_rope_cached_f32;
  static constexpr auto copy_cached = posenc_rope_copy_cached_f32;
};
template <>
struct Calls<uint16_t> {
  static constexpr auto in_place = posenc_rope_f16_part;
  static constexpr auto copy = posenc_rope_copy_f16_part;
  static constexpr auto cached = posenc_rope_cached_f16;
  static constexpr auto copy_cached = posenc_rope_copy_cached_f16;
};

// A thread's cos/sin rows, kept from one node to the next: every layer's RoPE node of a graph has the same
// positions and parameters, so a thread makes the rows of its tokens once (posenc_rope_cache_f32_part) and
// rotates each layer's rows from them (posenc_rope_cached_*: the same bytes). The key is the frequency set
// (the interned parameters and freq_factors content) and the node's positions as posenc takes them.
struct Rows {
  const FreqSet *set = nullptr;
  std::vector<int64_t> pos;  // the positions the rows are for (the node's whole array)
  int64_t t0 = 0, t1 = 0;    // the tokens whose rows are here
  int64_t h = 0;
  std::vector<float> cos, sin;
  // token t's rows, t in [t0, t1)
  const float *c(int64_t t) const { return cos.data() + (t - t0) * h; }
  const float *s(int64_t t) const { return sin.data() + (t - t0) * h; }
};

// This thread's rows for tokens [t0, t1) of node; nullptr when posenc refused to make them (then the rotation
// makes its own values and reports the refusal).
const Rows *rows_for(const Node &node, const std::vector<int64_t> &pos, int64_t t0, int64_t t1) {
  thread_local Rows rows;
  const int64_t h = node.rotary_dim / 2;
  if (rows.set == node.set && rows.h == h && rows.t0 <= t0 && t1 <= rows.t1 && rows.pos == pos) return &rows;
  rows.set = nullptr;
  rows.cos.resize(size_t((t1 - t0) * h));
  rows.sin.resize(size_t((t1 - t0) * h));
  // the positions of tokens [t0, t1), axis-major as posenc takes them (the node's axes are n apart)
  const int64_t n = node.dst.ne[2], m = t1 - t0;
  thread_local std::vector<int64_t> sub;
  sub.resize(size_t(node.axes * m));
  for (int a = 0; a < node.axes; ++a)
    std::memcpy(sub.data() + a * m, pos.data() + a * n + t0, sizeof(int64_t) * size_t(m));
  if (posenc_rope_cache_f32(&node.set->rope, sub.data(), 0, m, rows.cos.data(), h, rows.sin.data(), h) != POSENC_OK)
    return nullptr;
  rows.set = node.set;
  rows.pos = pos;
  rows.t0 = t0;
  rows.t1 = t1;
  rows.h = h;
  return &rows;
}

// Whether rows at base with these byte strides are rows posenc's calls take: whole elements apart, aligned.
template <class T>
bool whole_elements(const void *base, size_t nb1, size_t nb2) {
  return nb1 % sizeof(T) == 0 && nb2 % sizeof(T) == 0 && reinterpret_cast<uintptr_t>(base) % alignof(T) == 0;
}

// Tokens [b, e) of batch entry i3 (every head), rotated into dst; pos holds the node's positions as posenc takes
// them (axis-major). Out of place, the rotated window goes from a to dst in
// one pass (posenc_rope_copy_*_part) and the elements outside it are copied; in place, the window is rotated
// where it is (posenc_rope_*_part). Rows that posenc's calls refuse (rows that overlap partly) or cannot take
// (strides that are not whole elements, a misaligned base) are copied whole and go one at a time through an
// aligned buffer.
template <class T>
posenc_status rotate_tokens(const Node &node, const int64_t *pos, const Rows *cs, int64_t i3, int64_t b, int64_t e) {
  const View *a = &node.a, *dst = &node.dst;
  const int64_t n = dst->ne[2], heads = dst->ne[1], esize = int64_t(sizeof(T)), row_bytes = dst->ne[0] * esize;
  char *base = static_cast<char *>(dst->data) + i3 * dst->nb[3];  // token 0 of the batch entry
  const posenc_rope *rope = &node.set->rope;
  const int64_t ts = int64_t(dst->nb[2]) / esize, hs = int64_t(dst->nb[1]) / esize;
  const bool whole = whole_elements<T>(base, dst->nb[1], dst->nb[2]);
  if (node.copy) {
    const char *src = static_cast<const char *>(a->data) + i3 * a->nb[3];
    if (whole && whole_elements<T>(src, a->nb[1], a->nb[2])) {
      const int64_t sts = int64_t(a->nb[2]) / esize, shs = int64_t(a->nb[1]) / esize;
      const T *s0 = reinterpret_cast<const T *>(src) + node.offs;
      T *d0 = reinterpret_cast<T *>(base) + node.offs;
      const posenc_status st = cs ? Calls<T>::copy_cached(rope, cs->c(b), cs->h, cs->s(b), cs->h, e - b, s0 + b * sts,
                                                          sts, shs, d0 + b * ts, heads, ts, hs)
                                  : Calls<T>::copy(rope, pos, 0, n, s0, sts, shs, d0, heads, ts, hs, b, e);
      if (st != POSENC_OK && st != POSENC_ERR_INVALID) return st;
      if (st == POSENC_OK) {
        const int64_t before = node.offs * esize, after = (node.offs + node.rotary_dim) * esize;
        if (before > 0 || after < row_bytes)  // the elements outside the window: a partial rotation, an offset
          for (int64_t t = b; t < e; ++t)
            for (int64_t j = 0; j < heads; ++j) {
              const char *s = src + t * a->nb[2] + j * a->nb[1];
              char *d = base + t * dst->nb[2] + j * dst->nb[1];
              std::memcpy(d, s, size_t(before));
              std::memcpy(d + after, s + after, size_t(row_bytes - after));
            }
        return POSENC_OK;
      }
    }
    // INVALID (rows that overlap partly) or rows posenc's calls cannot take: copy, then rotate in place
    for (int64_t t = b; t < e; ++t)
      for (int64_t j = 0; j < heads; ++j) {
        const char *s = src + t * a->nb[2] + j * a->nb[1];
        char *d = base + t * dst->nb[2] + j * dst->nb[1];
        if (s != d) std::memmove(d, s, size_t(row_bytes));
      }
  }
  if (whole) {
    T *x = reinterpret_cast<T *>(base) + node.offs;
    const posenc_status st =
        cs ? Calls<T>::cached(rope, cs->c(b), cs->h, cs->s(b), cs->h, e - b, x + b * ts, heads, ts, hs)
           : Calls<T>::in_place(rope, pos, 0, n, x, heads, ts, hs, b, e);
    if (st != POSENC_ERR_INVALID) return st;  // INVALID: rows overlap; one at a time below
  }
  std::vector<T> buf(size_t(node.rotary_dim));
  int64_t one[4];
  for (int64_t t = b; t < e; ++t) {
    for (int ax = 0; ax < node.axes; ++ax) one[ax] = pos[ax * n + t];
    for (int64_t j = 0; j < heads; ++j) {
      char *row = base + t * dst->nb[2] + j * dst->nb[1] + node.offs * esize;
      std::memcpy(buf.data(), row, buf.size() * sizeof(T));
      const posenc_status st =
          cs ? Calls<T>::cached(rope, cs->c(t), 0, cs->s(t), 0, 1, buf.data(), 1, node.rotary_dim, node.rotary_dim)
             : Calls<T>::in_place(rope, one, 0, 1, buf.data(), 1, node.rotary_dim, node.rotary_dim, 0, 1);
      if (st != POSENC_OK) return st;
      std::memcpy(row, buf.data(), buf.size() * sizeof(T));
    }
  }
  return POSENC_OK;
}

// Thread ith of nth: tokens [G ith / nth, G (ith + 1) / nth) of the G = ne2 ne3 tokens (batch entries one after
// the other), each batch entry's share one part of posenc's call over that entry's ne2 tokens.
template <class T>
posenc_status run(const Node &node, int ith, int nth) {
  const int64_t ne2 = node.dst.ne[2], total = ne2 * node.dst.ne[3];
  const int64_t g0 = total * ith / nth, g1 = total * (ith + 1) / nth;
  if (g0 == g1) return POSENC_OK;
  // the node's positions as posenc takes them: the same array for every part (thread_local: made once per
  // thread and grown as needed, not per node)
  thread_local std::vector<int64_t> pos;
  const int32_t *pos32 = static_cast<const int32_t *>(node.b.data);
  pos.resize(size_t(node.axes * ne2));
  for (int64_t i = 0; i < node.axes * ne2; ++i) pos[size_t(i)] = int64_t(pos32[i]);
  // this thread's cos/sin rows: the tokens of its share (all of them when the share spans batch entries)
  const bool spans = g0 / ne2 != (g1 - 1) / ne2;
  const int64_t t0 = spans ? 0 : g0 % ne2, t1 = spans ? ne2 : (g1 - 1) % ne2 + 1;
  const Rows *cs = rows_for(node, pos, t0, t1);
  for (int64_t g = g0; g < g1;) {
    const int64_t i3 = g / ne2, b = g % ne2, e = std::min(ne2, b + (g1 - g));
    const posenc_status st = rotate_tokens<T>(node, pos.data(), cs, i3, b, e);
    if (st != POSENC_OK) return st;
    g += e - b;
  }
  return POSENC_OK;
}

}  // namespace

bool Key::operator<(const Key &o) const { return std::memcmp(this, &o, sizeof *this) < 0; }

const char *check_shape(const View &a, const View &b, const View *c, int n_dims, int mode, const int32_t sections[4]) {
  if (!known_mode(mode)) return "mode must be GGML_ROPE_TYPE_NORMAL, _NEOX, _MROPE, _IMROPE or _VISION";
  if (a.type != Elem::F32 && a.type != Elem::F16) return "a must be F32 or F16";
  if (a.nb[0] != size_t(elem_size(a.type))) return "the elements of a's rows must be contiguous";
  if (b.type != Elem::I32 || !b.is_vector() || b.nb[0] != sizeof(int32_t)) return "b must be a contiguous I32 vector";
  const bool multi = is_multi(mode);
  if (b.ne[0] != (multi ? 4 : 1) * a.ne[2])
    return multi ? "b must hold 4 positions per token (a->ne[2] * 4)" : "b must hold a->ne[2] positions";
  if (n_dims < 2 || n_dims % 2 != 0 || n_dims > a.ne[0]) return "n_dims must be even, 2 .. ne0";
  if (mode == kModeVision && 2 * int64_t(n_dims) != a.ne[0]) return "VISION needs n_dims == ne0 / 2";
  if (multi) {
    int64_t sum = 0;
    for (int i = 0; i < 4; ++i) {
      if (sections[i] < 0) return "sections must not be negative";
      sum += sections[i];
    }
    if (sections[0] <= 0 && sections[1] <= 0 && sections[2] <= 0) return "sections[0..2] are all 0";
    if (sum > a.ne[0]) return "the sections' sum exceeds ne0";
  }
  if (c) {
    if (c->type != Elem::F32 || !c->contiguous()) return "freq_factors must be contiguous F32";
    if (c->ne[0] < pairs_of(mode, n_dims)) return "freq_factors needs a value for every rotated pair";
  }
  return nullptr;
}

Key make_key(int n_dims, int mode, int n_ctx_orig, bool forward, const int32_t sections[4], const float f[6]) {
  Key key;
  std::memset(&key, 0, sizeof key);
  key.n_dims = n_dims;
  key.mode = mode;
  key.n_ctx_orig = n_ctx_orig;
  key.forward = forward ? 1 : 0;
  if (is_multi(mode))
    for (int i = 0; i < 4; ++i) key.sections[i] = sections[i];
  key.base = f[0];
  key.fs = f[1];
  key.ef = f[2];
  key.af = f[3];
  key.bf = f[4];
  key.bs = f[5];
  return key;
}

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
  // The set without factors, made now: it checks the parameters while the caller is on the stack.
  std::unique_ptr<FreqSet> set = make_set(*r, nullptr);
  if (!set->ok) return nullptr;
  r->sets.push_back(std::move(set));
  r->head.store(r->sets.back().get(), std::memory_order_release);
  Record *out = r.get();
  table->emplace(key, std::move(r));
  return out;
}

Node describe(const Record &r, const FreqSet &set, const View &a, const View &b, const View &dst, int64_t offs) {
  Node node;
  node.set = &set;
  node.a = a;
  node.b = b;
  node.dst = dst;
  node.axes = r.axes;
  node.offs = offs;
  node.rotary_dim = 2 * r.pairs;
  node.copy = !(a.data == dst.data && a.nb[1] == dst.nb[1] && a.nb[2] == dst.nb[2] && a.nb[3] == dst.nb[3]);
  return node;
}

bool positions_ok(const Node &node) {
  const int32_t *pos = static_cast<const int32_t *>(node.b.data);
  const int64_t n = int64_t(node.axes) * node.dst.ne[2];
  for (int64_t i = 0; i < n; ++i)
    if (pos[i] == INT32_MIN) return false;
  return true;
}

posenc_status rotate_share(const Node &node, int ith, int nth) {
  return node.dst.type == Elem::F32 ? run<float>(node, ith, nth) : run<uint16_t>(node, ith, nth);
}

posenc_spec timestep_spec(int dim, int max_period) {
  posenc_spec s = posenc_spec_default(dim);
  s.layout = POSENC_COS_SIN_HALVES;
  s.base = double(max_period);
  return s;
}

bool timesteps_ok(const View &t) {
  const float *ts = static_cast<const float *>(t.data);
  for (int64_t i = 0; i < t.ne[0]; ++i)
    if (!(std::fabs(ts[i]) < 0x1p31f)) return false;
  return true;
}

// The float timesteps of a chunk become doubles on the stack and go to posenc_timesteps_f32 for those rows.
// Every row is correctly rounded from its own exact angle, so the bytes are those of one posenc_timesteps_f32
// over all n rows (the contract of the _part twins: no byte depends on where a part starts) whatever nth is.
posenc_status timestep_share(const View &t, const View &dst, int dim, int max_period, int ith, int nth) {
  const posenc_spec spec = timestep_spec(dim, max_period);
  const int64_t n = dst.ne[1], r0 = n * ith / nth, r1 = n * (ith + 1) / nth, stride = int64_t(dst.nb[1]) / 4;
  const float *ts = static_cast<const float *>(t.data);
  double chunk[kTimestepChunk];
  for (int64_t r = r0; r < r1; r += kTimestepChunk) {
    const int64_t k = std::min(kTimestepChunk, r1 - r);
    for (int64_t i = 0; i < k; ++i) chunk[i] = double(ts[r + i]);
    float *out = reinterpret_cast<float *>(static_cast<char *>(dst.data) + r * int64_t(dst.nb[1]));
    const posenc_status st = posenc_timesteps_f32(&spec, chunk, k, out, stride);
    if (st != POSENC_OK) return st;
  }
  return POSENC_OK;
}

}  // namespace posenc_ggml
