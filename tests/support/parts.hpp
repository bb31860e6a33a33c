// One call of each kernel with generated inputs, run whole or as parts (posenc.h, "Parts of a call"), for the
// tests of splits: tests/test_parts.cpp (every split, every path) and tests/test_threads.cpp (the parts on
// threads at once). Header only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "calls.hpp"
#include "rope.hpp"

namespace ref {
namespace parts {

using ref::Kernel;
using Range = std::pair<int64_t, int64_t>;
using Split = std::vector<Range>;  // the parts, in the order they run

inline constexpr int64_t k2p31 = int64_t(1) << 31;

// Runs c (a ref::Call or a ref::RopeCall) unsplit (split null) or as the parts of `split` in their order;
// returns the status of the unsplit call, or the last status of a part other than POSENC_OK.
template <class Call>
posenc_status invoke_split(Call c, const Split *split) {
  if (!split) return ref::invoke(c);
  posenc_status status = POSENC_OK;
  c.part = true;
  for (const Range &r : *split) {
    c.begin = r.first;
    c.end = r.second;
    const posenc_status s = ref::invoke(c);
    if (s != POSENC_OK) status = s;
  }
  return status;
}

// Input floats: mostly finite in [-4, 4], an occasional NaN, infinity, subnormal or signed zero.
inline float input_float(std::mt19937_64 &rng) {
  const uint64_t v = rng();
  switch (v % 64) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return -std::numeric_limits<float>::infinity();
    case 2: return std::numeric_limits<float>::denorm_min();
    case 3: return -0.0f;
    default: return float(int64_t(v >> 8) % 8193 - 4096) / 1024.0f;
  }
}
// Finite bfloat16 and binary16 bit patterns alike (exponent bits below both formats' infinities).
inline uint16_t input_half(std::mt19937_64 &rng) {
  return uint16_t(0x3000 + rng() % 0x1000) | uint16_t(rng() & 0x8000);
}

inline constexpr int64_t kRowCounts[] = {1, 2, 3, 7, 31, 64, 65, 66, 97, 130, 131, 197};

// Explicit positions of one kind: runs with a POSENC_PAD now and then, repeated runs (a batch's decode
// steps), or jumps anywhere in (-2^31, 2^31).
inline std::vector<int64_t> positions_of(int kind, int64_t n, std::mt19937_64 &rng) {
  std::vector<int64_t> p;
  int64_t next = int64_t(rng() % 5000) - 2500;
  while (int64_t(p.size()) < n) {
    const int64_t len = 1 + int64_t(rng() % 80);
    for (int64_t k = 0; k < len && int64_t(p.size()) < n; ++k) {
      if (kind == 0)
        p.push_back(rng() % 23 == 0 ? POSENC_PAD : next + k);
      else if (kind == 1)
        p.push_back(next);
      else
        p.push_back(int64_t(rng() % uint64_t(2 * k2p31 - 1)) - (k2p31 - 1));
    }
    next += len + int64_t(rng() % 3);
  }
  return p;
}

// One call of a PE kernel (tables, rows, add, embeddings, learned positions, timesteps) with its inputs.
struct PeCall {
  const ref::KernelTraits &t;
  posenc_spec spec;
  std::vector<int64_t> positions;
  std::vector<int32_t> tokens;
  std::vector<double> times;
  std::vector<unsigned char> x, pos_table, out_init;
  bool in_place = false;  // add, timesteps_add: out is x
  ref::Call call;

  PeCall(Kernel k, int64_t d, posenc_layout layout, int64_t n, int variant, std::mt19937_64 &rng)
      : t(ref::traits(k)), spec(posenc_spec_default(d)) {
    spec.layout = layout;
    if (variant == 3) {  // a fairseq-style spec: another base, denominator and scale
      spec.base = 3.0e3;
      spec.freq_denominator = d / 2 > 1 ? double(d / 2 - 1) : 1.0;
      spec.position_scale = 0.75;
    }
    call.kernel = k;
    call.spec = &spec;
    call.d_model = d;
    call.n = n;
    call.out_stride = d + variant % 3;
    call.x_stride = d + (variant + 1) % 3;
    call.pos_stride = d + variant % 2;
    call.scale = variant % 2 ? -1.5f : 1.0f;
    in_place = t.has_activations && variant % 2 == 1;
    if (in_place) call.x_stride = call.out_stride;
    const int64_t vocab = 11, pos_rows = n + 5;
    // positions: explicit (three kinds) or first + r (from a random start, or ending at 2^31 - 1)
    const bool explicit_positions = t.positions_required || (t.positions_optional && variant % 4 != 0);
    if (t.has_pos_table) {
      for (int64_t r = 0; r < n; ++r) positions.push_back(rng() % 17 == 0 ? POSENC_PAD : int64_t(rng() % pos_rows));
      call.first = int64_t(rng() % 6);
    } else {
      positions = positions_of(variant % 3, n, rng);
      call.first = variant == 2 ? k2p31 - n : int64_t(rng() % 100000) - 50000;
    }
    call.positions = explicit_positions ? positions.data() : nullptr;
    for (int64_t r = 0; r < n; ++r) {
      tokens.push_back(int32_t(rng() % vocab));
      const uint64_t v = rng();
      times.push_back(v % 4 == 0   ? double(int64_t(v >> 20) % 2000)
                      : v % 4 == 1 ? double(v >> 12 & 0xFFFFF) / 256.0
                      : v % 4 == 2 ? -0x1p-40 * double(v >> 40)
                                   : 2147483647.0 - double(v >> 50) / 8.0);
    }
    call.times = t.times ? times.data() : nullptr;
    call.tokens = t.has_table ? tokens.data() : nullptr;
    call.vocab = t.has_table ? vocab : 0;
    const auto extent = [](int64_t rows, int64_t stride, int64_t width) { return size_t((rows - 1) * stride + width); };
    const size_t out_bytes = (extent(n, call.out_stride, d) + 5) * t.out_size;
    const int64_t x_rows = t.has_activations ? n : t.has_table ? vocab : 0;
    x.resize(x_rows > 0 ? extent(x_rows, call.x_stride, d) * t.in_size : 0);
    for (size_t e = 0; e < x.size() / std::max<size_t>(t.in_size, 1); ++e) {
      if (t.in_size == 4) {
        const float v = input_float(rng);
        std::memcpy(&x[4 * e], &v, 4);
      } else {
        const uint16_t h = input_half(rng);
        std::memcpy(&x[2 * e], &h, 2);
      }
    }
    pos_table.resize(t.has_pos_table ? extent(pos_rows, call.pos_stride, d) * 4 : 0);
    for (size_t e = 0; e < pos_table.size() / 4; ++e) {
      const float v = input_float(rng);
      std::memcpy(&pos_table[4 * e], &v, 4);
    }
    call.pos_table = t.has_pos_table ? reinterpret_cast<const float *>(pos_table.data()) : nullptr;
    call.pos_rows = t.has_pos_table ? pos_rows : 0;
    // the output starts as a canary, or as x itself in place
    out_init.assign(out_bytes, 0x5C);
    if (in_place) std::memcpy(out_init.data(), x.data(), std::min(x.size(), out_init.size()));
    call.x = x.empty() ? nullptr : x.data();
  }

  // The call with its output in out, a copy of out_init (and x too, in place).
  ref::Call pointed(std::vector<unsigned char> &out) const {
    ref::Call c = call;
    c.out = out.data();
    if (in_place) c.x = out.data();
    return c;
  }

  // The bytes of the output after the unsplit call (whole) or after the parts of `split` in their order;
  // the status of every call through *status.
  std::vector<unsigned char> run(const Split *split, posenc_status *status) const {
    std::vector<unsigned char> out = out_init;
    *status = invoke_split(pointed(out), split);
    return out;
  }
};

using ref::RopeKernel;

// One RoPE call with its inputs: q and k (or the cos and sin rows, or rope_copy_*'s x and source rows) in
// one buffer.
struct RopeCallOf {
  RopeKernel kernel;
  size_t es;
  int64_t r, h, n;
  std::vector<double> freq;
  std::vector<uint8_t> axis;
  posenc_rope rope;
  std::vector<int64_t> positions;
  std::vector<unsigned char> init;  // the buffer before the call
  int64_t q_off = 0, k_off = 0;     // elements; rope_copy_*: the source rows at k_off
  bool k_null = false;
  bool src_is_x = false;  // rope_copy_* in place
  ref::RopeCall call;

  // layout: 0 [T,H,D] q then k, 1 fused QKV, 2 q in [H,T,D]; the cache: separate rows, or vLLM's
  // cos_sin_cache (layout 1); rope_copy_*: x as q, the source [T,H,D] after it (odd variants: every head
  // from one source row), or in place (layout 1). axes 1 or 3.
  RopeCallOf(RopeKernel k, int64_t rotary_dim, int64_t tokens, int layout, int axes, int variant, std::mt19937_64 &rng)
      : kernel(k),
        es(ref::format_size(ref::rope_format(k))),
        r(rotary_dim),
        h(rotary_dim / 2),
        n(tokens),
        rope(posenc_rope_default(rotary_dim)) {
    rope.pairs = variant % 2 ? POSENC_ROPE_INTERLEAVED : POSENC_ROPE_HALVES;
    rope.attention_scale = variant % 3 == 1 ? 1.369 : 1.0;
    rope.base = variant % 3 == 2 ? 5.0e5 : 1.0e4;
    if (variant % 4 == 3) {
      for (int64_t i = 0; i < h; ++i) freq.push_back(i % 3 == 1 ? -0.5 / double(i + 1) : 1.0 / double(i + 1));
      rope.freq = freq.data();
    }
    if (axes > 1) {
      for (int64_t i = 0; i < h; ++i) axis.push_back(uint8_t(i % 3));
      rope.axes = axes;
      rope.axis = axis.data();
    }
    // axis 0: text runs with PAD now and then, or repeated positions; the other axes: an image row (fixed
    // height, consecutive width) with text tokens (every axis equal) between
    positions = positions_of(variant % 3, n, rng);
    for (int a = 1; a < axes; ++a)
      for (int64_t t = 0; t < n; ++t) {
        const bool text = (t / 17) % 3 == 0;
        const int64_t p0 = positions[size_t(t)] == POSENC_PAD ? 0 : positions[size_t(t)];
        positions.push_back(text ? p0 : a == 1 ? 40 + t / 29 : 100 + t % 29);
      }
    call.kernel = k;
    call.rope = &rope;
    call.n = n;
    call.first = variant == 2 ? k2p31 - n : int64_t(rng() % 20000) - 10000;
    call.positions = variant % 4 == 0 ? nullptr : positions.data();
    const int64_t D = r + variant % 3;  // head_dim: partial rotary tails
    const int64_t qh = 3, kh = ref::is_qk(k) ? 2 : 0;
    int64_t elements = 0;
    if (ref::is_cache(k)) {
      if (layout == 1) {  // vLLM: sin = cos + h, both strides r
        call.token_stride = call.k_token_stride = r;
        q_off = 0;
        k_off = h;
        elements = n * r;
      } else {
        call.token_stride = h + 1;
        call.k_token_stride = h + 2;
        q_off = 0;
        k_off = (n - 1) * (h + 1) + h + 3;
        elements = k_off + (n - 1) * (h + 2) + h;
      }
    } else {
      call.heads = qh;
      call.k_heads = kh;
      call.head_stride = call.k_head_stride = D;
      if (ref::is_copy(k)) {
        if (layout == 2) {  // x as [H,T,D]
          call.token_stride = D;
          call.head_stride = n * D;
        } else {
          call.token_stride = qh * D + 1;
        }
        src_is_x = layout == 1;
        call.src_token_stride = src_is_x ? call.token_stride : qh * D + 3;
        call.src_head_stride = src_is_x ? call.head_stride : variant % 2 ? 0 : D;
        k_off = ref::rope_extent(n, qh, call.token_stride, call.head_stride, r) + 1;
        elements = k_off + ref::rope_extent(n, qh, call.src_token_stride, call.src_head_stride, r);
      } else if (layout == 1 && kh > 0) {  // fused QKV: q heads, k heads and v heads in one token stride
        call.token_stride = call.k_token_stride = (qh + 2 * kh) * D;
        k_off = qh * D;
        elements = n * (qh + 2 * kh) * D;
      } else {
        if (layout == 2) {  // q as [H,T,D]
          call.token_stride = D;
          call.head_stride = n * D;
        } else {
          call.token_stride = qh * D + 1;
        }
        const int64_t q_el = ref::rope_extent(n, qh, call.token_stride, call.head_stride, r);
        call.k_token_stride = kh * D + 3;
        k_off = q_el + 2;
        elements = k_off + ref::rope_extent(n, kh, call.k_token_stride, call.k_head_stride, r);
      }
      k_null = kh == 0 && variant % 2 == 1;  // rope_*: no k; rope_qk_* always has k heads here
    }
    init.resize(size_t(elements + 4) * es);
    for (size_t e = 0; e < init.size() / es; ++e) {
      if (es == 4) {
        const float v = input_float(rng);  // the cache's rows and gaps too: a stray write shows
        std::memcpy(&init[4 * e], &v, 4);
      } else {
        const uint16_t v = input_half(rng);
        std::memcpy(&init[2 * e], &v, 2);
      }
    }
  }

  // The call with its pointers into buf, a copy of init.
  ref::RopeCall pointed(std::vector<unsigned char> &buf) const {
    ref::RopeCall c = call;
    c.x = buf.data() + size_t(q_off) * es;
    c.k = k_null ? nullptr : buf.data() + size_t(k_off) * es;
    if (ref::is_copy(kernel)) c.src = src_is_x ? c.x : buf.data() + size_t(k_off) * es;
    return c;
  }

  // As PeCall::run: the buffer after the unsplit call or the parts of `split`, the statuses through *status.
  std::vector<unsigned char> run(const Split *split, posenc_status *status) const {
    std::vector<unsigned char> buf = init;
    *status = invoke_split(pointed(buf), split);
    return buf;
  }
};

// The parts of `split`, in order: [begin, end) each.
inline std::string describe(const Split &s) {
  std::string out;
  for (const Range &r : s) out += "[" + std::to_string(r.first) + "," + std::to_string(r.second) + ")";
  return out;
}

}  // namespace parts
}  // namespace ref
