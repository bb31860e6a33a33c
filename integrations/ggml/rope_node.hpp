// What the call-site twins (posenc_ggml.cpp) and the backend (backend.cpp) share: ggml's RoPE parameters as
// posenc specs (interned per parameter set, with one frequency set per freq_factors content), and the rotation
// of a node's rows by one thread of several; the same for ggml's timestep embedding. docs/ggml.md says what is
// computed and how rows are split.
//
// Nothing here includes ggml's headers: a node reaches this code as a View (posenc's own description of a
// tensor: element kind, shape, byte strides, data), which the twins make from ggml.h's struct and the backend
// from its own declaration of the running ggml's (abi.hpp), so that one backend serves every ggml version.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "posenc/posenc.h"

namespace posenc_ggml {

// ggml.h's GGML_ROPE_TYPE_* (the same values in every ggml from 0.12.0 to 0.27.x): the mode in op_params[2].
constexpr int kModeNormal = 0, kModeNeox = 2, kModeMrope = 8, kModeVision = 24, kModeImrope = 40;

// The element kinds posenc reads or writes; Other for every other ggml type.
enum class Elem : uint8_t { Other, F32, F16, I32 };
inline int64_t elem_size(Elem e) { return e == Elem::F16 ? 2 : 4; }

// A tensor as this code reads it: ggml_tensor's type (as a kind), ne, nb and data.
struct View {
  Elem type = Elem::Other;
  int64_t ne[4] = {0, 0, 0, 0};
  size_t nb[4] = {0, 0, 0, 0};
  void *data = nullptr;
  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  bool same_shape(const View &o) const {
    return ne[0] == o.ne[0] && ne[1] == o.ne[1] && ne[2] == o.ne[2] && ne[3] == o.ne[3];
  }
  bool is_vector() const { return ne[1] == 1 && ne[2] == 1 && ne[3] == 1; }
  // ggml_is_contiguous: every dimension's stride the product of the ones before it
  bool contiguous() const {
    size_t want = size_t(elem_size(type));
    for (int i = 0; i < 4; ++i) {
      if (ne[i] != 1 && nb[i] != want) return false;
      want *= size_t(ne[i]);
    }
    return true;
  }
};

inline bool is_multi(int mode) { return (mode & kModeMrope) != 0; }
inline bool known_mode(int mode) {
  return mode == kModeNormal || mode == kModeNeox || mode == kModeMrope || mode == kModeImrope || mode == kModeVision;
}
// The rotated pairs of a row: n_dims / 2, or n_dims for VISION (whose rows are 2 n_dims wide).
inline int64_t pairs_of(int mode, int n_dims) { return mode == kModeVision ? n_dims : n_dims / 2; }

// One parameter set, as ggml's builders take it; compared and ordered as bytes (no padding: 4-byte fields).
struct Key {
  int32_t n_dims, mode, n_ctx_orig, forward;
  int32_t sections[4];
  float base, fs, ef, af, bf, bs;
  bool operator<(const Key &o) const;
};
static_assert(sizeof(Key) == 14 * 4, "Key has no padding");

// The frequencies of a record for one freq_factors content (none: empty), and the posenc spec that uses them (a
// backward record's: the inverse spec, posenc_rope_inverse of the forward one).
// ok is false when posenc cannot take the factors (0, infinite or NaN): nothing of rope is usable then.
struct FreqSet {
  std::vector<float> factors;
  std::vector<double> freq;
  posenc_rope rope;
  bool ok = false;
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

// What ggml's builders or CPU operation refuse, or posenc's rotation cannot take, in a RoPE node of source a,
// positions b, freq_factors c (or nullptr), and sections (read for the multi modes): a message naming it, or
// nullptr when posenc computes such a node. Values are not read (b's and c's data may not exist yet).
const char *check_shape(const View &a, const View &b, const View *c, int n_dims, int mode, const int32_t sections[4]);
// The key of a parameter set: f holds freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
// sections are kept for the multi modes only.
Key make_key(int n_dims, int mode, int n_ctx_orig, bool forward, const int32_t sections[4], const float f[6]);

// The record of key (pairs: pairs_of(mode, n_dims)), made on first use and kept for the life of the process;
// nullptr, with nothing kept, when posenc cannot take the parameters (posenc_rope_ggml_frequencies,
// ggml_rope_frequencies: freq_base, freq_scale or attn_factor not positive and finite, a NaN YaRN ramp, a
// magnitude outside [2^-64, 2^64]). The key must have passed the structural checks of its builder.
Record *intern(const Key &key, int64_t pairs);
// The set for the factors' current content (nullptr: none; else pairs floats), made on first use.
const FreqSet &frequencies(Record &r, const float *factors);

// One node: rows of a (F32 or F16, elements contiguous) rotated into dst (a itself when in place), positions
// from b (I32; for the multi modes the four slots one after the other), the window at element offs.
struct Node {
  const FreqSet *set = nullptr;
  View a, b, dst;
  int axes = 1;
  bool copy = false;
  int64_t offs = 0, rotary_dim = 0;
};
Node describe(const Record &r, const FreqSet &set, const View &a, const View &b, const View &dst, int64_t offs);
// Whether every position the node rotates by is one posenc takes (|p| < 2^31): ggml's I32 positions all are but
// -2^31.
bool positions_ok(const Node &node);
// Thread ith of nth rotates its share of the tokens: [G ith / nth, G (ith + 1) / nth) of the G = ne2 ne3 tokens
// (every head of each), each batch entry's share a part of posenc's call over that entry (the _part calls).
// No byte depends on nth. POSENC_OK, or posenc's status for a part it refused (OUT_OF_RANGE: a position of
// -2^31; nothing of that part is written).
posenc_status rotate_share(const Node &node, int ith, int nth);

// ggml_timestep_embedding's operation: rows [n ith / nth, n (ith + 1) / nth) of the [dim, n] F32 dst from the F32
// timesteps t, the spec posenc::spec::ggml_timestep(dim, max_period). OUT_OF_RANGE for a timestep that is not
// finite or has |t| >= 2^31 (rows before it written).
posenc_spec timestep_spec(int dim, int max_period);
bool timesteps_ok(const View &t);
posenc_status timestep_share(const View &t, const View &dst, int dim, int max_period, int ith, int nth);

}  // namespace posenc_ggml
