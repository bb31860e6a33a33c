// Multi-axis RoPE (posenc.h, "Multi-axis RoPE"; docs/rope.md). The reference is the one of test_rope.cpp
// (support/rope_check.hpp): MPFR's correctly rounded m cos, m sin of the exact angle, with pair i of token t
// at the position of its axis, and posenc.h's rotation of those floats. Nothing expected comes from the
// library:
//  - posenc_rope_sections: every layout's axis map and frequencies against the models' own code, re-traced
//    here step by step (HF's mrope_section * 2 split, apply_interleaved_mrope, GLM-4V's apply_mrope, the
//    vision towers' [row | col] tables, Pixtral's even/odd frequencies, ggml's sector rules), frequencies
//    against MPFR; each model end to end on the library's rotation;
//  - the cache and every rotation call with 1 to 4 axes, random axis maps and sections (sums below r/2
//    repeat), mixed text / image / video token runs, PAD, extreme positions, every path, every format;
//  - agreeing axes give the one-axis bytes, any split gives the whole call's bytes, goldens, bad input.
#include <mpfr.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "posenc/posenc.hpp"
#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/rope.hpp"
#include "support/rope_check.hpp"
#include "support/sha256.hpp"

using namespace rope_check;

namespace {

Rope axes_rope(const std::string &name, int64_t r, posenc_rope_pairs pairs, double base, int axes,
               std::vector<uint8_t> axis, double position_scale = 1.0, double m = 1.0, std::vector<double> freq = {}) {
  Rope rope = make_rope(name, r, pairs, base, position_scale, m, std::move(freq));
  rope.r.axes = axes;
  rope.axis = std::move(axis);
  return rope;
}

std::vector<uint8_t> random_axes(uint64_t &seed, int64_t h, int axes) {
  std::vector<uint8_t> a(static_cast<size_t>(h));
  for (auto &v : a) v = uint8_t(splitmix(seed) % uint64_t(axes));
  return a;
}

// Positions of n tokens on `axes` axes (axis-major), the way vision-language models make them: text runs
// (every axis at cur + k), images of a few grid rows (axis 0 fixed, axis 1 the row, axis 2 the column: Qwen2-VL's
// get_rope_index; with two axes, row and column as a vision tower has them; a 4th axis fixed), video frames
// (the temporal axis stepping by an interval), decode-like repeats, scattered far positions, negative ones,
// the extremes, and POSENC_PAD tokens (whose other axes hold ordinary values).
std::vector<int64_t> vl_positions(uint64_t seed, int64_t n, int axes) {
  std::vector<std::vector<int64_t>> p(static_cast<size_t>(axes));
  int64_t cur = int64_t(splitmix(seed) % 50);
  auto push = [&](const int64_t *v) {
    for (int a = 0; a < axes; ++a) p[size_t(a)].push_back(v[a]);
  };
  while (int64_t(p[0].size()) < n) {
    const uint64_t r = splitmix(seed);
    int64_t v[4];
    switch (r % 8) {
      case 0:
      case 1: {  // text
        const int64_t len = 1 + int64_t(r >> 8) % 20;
        for (int64_t k = 0; k < len; ++k) {
          for (int a = 0; a < axes; ++a) v[a] = cur + k;
          push(v);
        }
        cur += len;
        break;
      }
      case 2:
      case 3: {  // an image (or a video when the frame count is above 1)
        const int64_t rows = 1 + int64_t(r >> 8) % 4, cols = 1 + int64_t(r >> 12) % 70;
        const int64_t frames = (r >> 20) % 3 == 0 ? 2 : 1, interval = 1 + int64_t(r >> 24) % 50;
        for (int64_t f = 0; f < frames; ++f)
          for (int64_t y = 0; y < rows; ++y)
            for (int64_t x = 0; x < cols; ++x) {
              if (axes == 2) {
                v[0] = y;
                v[1] = x;
              } else {
                v[0] = cur + f * interval;
                v[1] = cur + y;
                if (axes > 2) v[2] = cur + x;
                if (axes > 3) v[3] = cur + 7;
              }
              push(v);
            }
        cur += std::max(rows, cols) + (frames - 1) * interval;
        break;
      }
      case 4: {  // decode-like: one position repeated
        const int64_t len = 1 + int64_t(r >> 8) % 5;
        for (int64_t k = 0; k < len; ++k) {
          for (int a = 0; a < axes; ++a) v[a] = cur;
          push(v);
        }
        break;
      }
      case 5: {  // scattered, far and negative positions on every axis
        for (int a = 0; a < axes; ++a) v[a] = uniform_position(seed);
        if ((r >> 8) % 4 == 0) v[0] = k2p31 - 1;
        if ((r >> 8) % 4 == 1 && axes > 1) v[axes - 1] = -(k2p31 - 1);
        push(v);
        break;
      }
      case 6: {  // padding
        v[0] = POSENC_PAD;
        for (int a = 1; a < axes; ++a) v[a] = int64_t(splitmix(seed) % 1000) - 500;
        push(v);
        break;
      }
      default: {  // axes moving backwards and by 2: blocks of one token
        for (int a = 0; a < axes; ++a) v[a] = cur - int64_t(a) * 2;
        push(v);
        for (int a = 0; a < axes; ++a) v[a] = cur + 2 + int64_t(a);
        push(v);
        cur += 5;
        break;
      }
    }
  }
  std::vector<int64_t> out;
  for (int a = 0; a < axes; ++a) out.insert(out.end(), p[size_t(a)].begin(), p[size_t(a)].begin() + n);
  return out;
}

// ---- the cache -----------------------------------------------------------------------------------------

// rope_cache_f32 with multi-axis positions (explicit, or first + t when empty), vLLM's layout; h cos and h
// sin per token.
std::vector<float> cache_of(const Rope &rope, const std::vector<int64_t> &pos, int64_t first, int64_t n) {
  const posenc_rope r = rope.get();
  const int64_t h = rope.h();
  std::vector<float> buf(size_t(n * 2 * h) + 3, -1234.5f);
  REQUIRE(posenc_rope_cache_f32(&r, pos.empty() ? nullptr : pos.data(), first, n, buf.data() + 1, 2 * h,
                                buf.data() + 1 + h, 2 * h) == POSENC_OK);
  CHECK(ref::bits(buf[0]) == ref::bits(-1234.5f));
  CHECK(ref::bits(buf[buf.size() - 1]) == ref::bits(-1234.5f));
  return std::vector<float>(buf.begin() + 1, buf.begin() + 1 + n * 2 * h);
}

std::vector<float> cache_want(const Rope &rope, Exact &ex, const std::vector<int64_t> &pos, int64_t first, int64_t n) {
  const int axes = rope.r.axes;
  std::vector<float> want;
  for (int64_t t = 0; t < n; ++t) {
    int64_t p[4] = {0, 0, 0, 0};
    for (int a = 0; a < axes; ++a) p[a] = pos.empty() ? first + t : pos[size_t(a * n + t)];
    const std::vector<float> row = ex.token(p);
    want.insert(want.end(), row.begin(), row.end());
  }
  return want;
}

void check_cache(const Rope &rope, const std::vector<int64_t> &pos, int64_t first, int64_t n) {
  Exact ex(rope);
  const std::vector<float> want = cache_want(rope, ex, pos, first, n);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      const std::vector<float> got = cache_of(rope, pos, first, n);
      int64_t bad = 0;
      for (size_t k = 0; k < want.size(); ++k) {
        if (ref::bits(got[k]) == ref::bits(want[k])) continue;
        const int64_t t = int64_t(k) / (2 * rope.h()), e = int64_t(k) % (2 * rope.h());
        if (++bad <= 5)
          UNSCOPED_INFO((e < rope.h() ? "cos" : "sin")
                        << " of pair " << e % rope.h() << " (axis " << rope.axis_of(e % rope.h()) << ") of token " << t
                        << ": got " << got[k] << " want " << want[k]);
      }
      INFO(rope.name << " on " << posenc_isa_name(isa) << (pos.empty() ? ", first + t" : ", explicit positions"));
      CHECK(bad == 0);
    });
}

}  // namespace

TEST_CASE("multi-axis cache: correctly rounded on every path, 1 to 4 axes, mixed token runs", "[rope][axes]") {
  uint64_t seed = 2211;
  struct Spec {
    int64_t r;
    posenc_rope_pairs pairs;
    double base, scale, m;
    bool explicit_freq;
  };
  const Spec specs[] = {
      {128, POSENC_ROPE_HALVES, 1e6, 1.0, 1.0, false},      {80, POSENC_ROPE_HALVES, 1e4, 1.0, 1.369, false},
      {64, POSENC_ROPE_INTERLEAVED, 1e4, 0.25, 0.7, false}, {36, POSENC_ROPE_HALVES, 5e5, 1.0, 3.0, false},
      {40, POSENC_ROPE_HALVES, 1e4, 1.0, 1.0, true},        {22, POSENC_ROPE_INTERLEAVED, 1e4, -1.5, 1.0, true},
      {2, POSENC_ROPE_HALVES, 1e4, 1.0, 1.0, false}};
  for (const Spec &s : specs)
    for (int axes = 1; axes <= 4; ++axes) {
      const int64_t h = s.r / 2;
      Rope rope = axes_rope("r=" + std::to_string(s.r) + " axes=" + std::to_string(axes), s.r, s.pairs, s.base, axes,
                            axes > 1 || seed % 2 ? random_axes(seed, h, axes) : std::vector<uint8_t>{}, s.scale, s.m,
                            s.explicit_freq ? odd_frequencies(h, seed) : std::vector<double>{});
      const int64_t n = 150;
      check_cache(rope, vl_positions(seed++, n, axes), 0, n);
      check_cache(rope, {}, -70, n);  // first + t on every axis
    }
}

TEST_CASE("multi-axis cache: agreeing axes give the one-axis bytes; one axis with a zero map is the one-axis spec",
          "[rope][axes]") {
  uint64_t seed = 7;
  for (int axes = 2; axes <= 4; ++axes) {
    const Rope one = make_rope("one axis", 96, POSENC_ROPE_HALVES, 1e4, 1.0, 1.369);
    Rope multi = one;
    multi.r.axes = axes;
    multi.axis = random_axes(seed, 48, axes);
    const std::vector<int64_t> p1 = packed(seed, 140);
    std::vector<int64_t> pm;
    for (int a = 0; a < axes; ++a)
      for (int64_t p : p1) pm.push_back(a > 0 && p == POSENC_PAD ? 0 : p);
    Rope zero = one;
    zero.axis.assign(48, 0);  // axes 1 with an explicit all-zero map
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        INFO(axes << " axes on " << posenc_isa_name(isa));
        const std::vector<float> a = cache_of(one, p1, 0, 140), b = cache_of(multi, pm, 0, 140),
                                 c = cache_of(zero, p1, 0, 140);
        CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
        CHECK(std::memcmp(a.data(), c.data(), a.size() * 4) == 0);
      });
  }
}

namespace {

// Rotation calls with multi-axis positions: [T,H,D] with a partial tail, [H,T,D], GQA, fused QKV.
std::vector<Rotation> axes_rotations(int64_t r, int axes, uint64_t seed) {
  const int64_t d = r + 5;
  std::vector<Rotation> v;
  {
    Rotation c{"[T,H,D] H=3, mixed runs", 0, thd(3, d), {}, false, false, 140, 0, vl_positions(seed, 140, axes), axes};
    c.elements = end_of(c.q, c.n, d) + 2;
    v.push_back(c);
  }
  {
    Rotation c{"[H,T,D] H=2, first + t", 0, htd(2, 70, d, 3, 1), {}, false, false, 70, 4000, {}, axes};
    c.elements = end_of(c.q, c.n, d);
    v.push_back(c);
  }
  {
    Rotation c{"qk GQA 7/2, mixed runs", 0, thd(7, d), {}, true, false, 90, 0, vl_positions(seed + 1, 90, axes), axes};
    c.k = thd(2, d, 0, end_of(c.q, c.n, d) + 1);
    c.elements = end_of(c.k, c.n, d);
    v.push_back(c);
  }
  {
    const int64_t hq = 4, hk = 2, ts = (hq + 2 * hk) * d;
    Rotation c{"qk fused QKV 4/2, one token",   0,   Tensor{hq, ts, d, 0}, Tensor{hk, ts, d, hq * d}, true, false, 1, 0,
               vl_positions(seed + 2, 1, axes), axes};
    c.elements = ts;
    v.push_back(c);
  }
  return v;
}

}  // namespace

TEST_CASE("multi-axis rotation: every format, pairing and layout equals posenc.h's formula", "[rope][axes]") {
  uint64_t seed = 31;
  struct Spec {
    int64_t r;
    posenc_rope_pairs pairs;
    double base, m;
  };
  for (const Spec &s : {Spec{128, POSENC_ROPE_HALVES, 1e6, 1.0}, Spec{64, POSENC_ROPE_INTERLEAVED, 1e4, 1.369},
                        Spec{36, POSENC_ROPE_HALVES, 5e5, 0.7}, Spec{22, POSENC_ROPE_INTERLEAVED, 1e4, 1.0}})
    for (int axes = 2; axes <= 4; ++axes) {
      const Rope rope = axes_rope("r=" + std::to_string(s.r) + " axes=" + std::to_string(axes), s.r, s.pairs, s.base,
                                  axes, random_axes(seed, s.r / 2, axes), 1.0, s.m);
      Exact ex(rope);
      for (const Rotation &c : axes_rotations(s.r, axes, seed)) check_rotation(rope, ex, c, seed++);
    }
}

TEST_CASE("multi-axis splits: token ranges of a call give the bytes of the whole call", "[rope][axes]") {
  uint64_t seed = 404;
  const Rope rope = axes_rope("r=80 3 axes", 80, POSENC_ROPE_HALVES, 1e4, 3, random_axes(seed, 40, 3), 1.0, 1.2);
  const int64_t d = 83, heads = 3, n = 160;
  const std::vector<int64_t> pos = vl_positions(seed, n, 3);
  for (Format f : kFormats)
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        const size_t es = ref::format_size(f);
        const Rotation whole_call{"whole", n * heads * d, thd(heads, d), {}, false, false, n, 0, pos, 3};
        std::vector<unsigned char> in(size_t(n * heads * d) * es);
        fill(f, in, seed++, false);
        std::vector<unsigned char> whole = in, pieces = in;
        REQUIRE(run(rope, whole_call, f, whole) == POSENC_OK);
        for (int64_t a = 0; a < n;) {
          const int64_t b = std::min(n, a + 1 + int64_t(splitmix(seed) % 40));
          Rotation c = whole_call;
          c.n = b - a;
          c.q.offset = a * heads * d;
          c.positions.clear();
          for (int ax = 0; ax < 3; ++ax)
            c.positions.insert(c.positions.end(), pos.begin() + ax * n + a, pos.begin() + ax * n + b);
          REQUIRE(run(rope, c, f, pieces) == POSENC_OK);
          a = b;
        }
        INFO(format_name(f) << " on " << posenc_isa_name(isa));
        CHECK(first_difference(pieces, whole, es) == -1);
      });
}

// ---- posenc_rope_sections against the models' own code ---------------------------------------------------

namespace {

// What a model's code gives pair i of the rotation: the axis whose position it takes and its frequency
// base^(-num/den) (an exact rational exponent; the frequency the model's formula means, before its float32).
struct ModelPair {
  int axis;
  int64_t num, den;
};

// HF Qwen2-VL / Qwen2.5-VL apply_multimodal_rotary_pos_emb: cos and sin have r channels, cat(freqs, freqs) of
// the h frequencies base^(-2j/r); they are split into chunks of mrope_section * 2 (the list repeated) and
// chunk c takes axis c % 3. Pair i is channels i and i + h (rotate_half); both must agree.
std::vector<ModelPair> hf_qwen2_vl(const std::vector<int64_t> &mrope_section, int64_t r) {
  std::vector<int64_t> chunks = mrope_section;
  chunks.insert(chunks.end(), mrope_section.begin(), mrope_section.end());
  std::vector<int> channel_axis;
  for (size_t c = 0; c < chunks.size(); ++c)
    for (int64_t e = 0; e < chunks[c]; ++e) channel_axis.push_back(int(c % 3));
  REQUIRE(int64_t(channel_axis.size()) == r);
  const int64_t h = r / 2;
  std::vector<ModelPair> out;
  for (int64_t i = 0; i < h; ++i) {
    REQUIRE(channel_axis[size_t(i)] == channel_axis[size_t(i + h)]);
    out.push_back(ModelPair{channel_axis[size_t(i)], 2 * i, r});
  }
  return out;
}

// HF Qwen3-VL apply_interleaved_mrope: freqs_t = freqs[0], then for dim 1 and 2,
// freqs_t[..., dim : mrope_section[dim] * 3 : 3] = freqs[dim][same]; the result is cat'ed with itself.
std::vector<ModelPair> hf_qwen3_vl(const std::vector<int64_t> &mrope_section, int64_t r) {
  const int64_t h = r / 2;
  std::vector<int> axis(size_t(h), 0);
  for (int dim = 1; dim <= 2; ++dim)
    for (int64_t f = dim; f < std::min(mrope_section[size_t(dim)] * 3, h); f += 3) axis[size_t(f)] = dim;
  std::vector<ModelPair> out;
  for (int64_t i = 0; i < h; ++i) out.push_back(ModelPair{axis[size_t(i)], 2 * i, r});
  return out;
}

// vLLM's Ernie4_5_VLRotaryEmbedding.forward_native (mrope_section [h, w, t], h == w): of the r/2 cos columns,
// cos[..., :h + w:2] take positions[1] (height), cos[..., 1:h + w:2] positions[2] (width), interleaved back
// as h w h w ...; cos[..., -t:] takes positions[0] (time). The frequencies stay base^(-2i/r).
std::vector<ModelPair> vllm_ernie45_vl(const std::vector<int64_t> &mrope_section, int64_t r) {
  const int64_t h = r / 2, hw = mrope_section[0] + mrope_section[1], t = mrope_section[2];
  std::vector<int> axis(size_t(h), -1);
  for (int64_t c = 0; c < hw; c += 2) axis[size_t(c)] = 1;
  for (int64_t c = 1; c < hw; c += 2) axis[size_t(c)] = 2;
  for (int64_t c = h - t; c < h; ++c) axis[size_t(c)] = 0;
  std::vector<ModelPair> out;
  for (int64_t i = 0; i < h; ++i) out.push_back(ModelPair{axis[size_t(i)], 2 * i, r});
  return out;
}

// vLLM's MRotaryEmbeddingInterleaved (openPangu-VL, rope_type "openpangu"), re-typed step by step:
// get_mrope_interleaved_id_list(a, b, c, force_last): with force_last a -= 1; counts = {0: a, 1: b, 2: c},
// placed all 0, rem = counts; total = a + b + c times: the candidates are the k with rem[k] > 0 and k != last
// (all k with rem[k] > 0 if there are none), best = min(cands, key=(placed[k] / counts[k], k)) (Python's float
// quotient, then the lower k), appended; placed[best] += 1, rem[best] -= 1, last = best; with force_last a
// final 0. Two sections [h, w] call it as (h, w, 0), three [t, h, w] as (t, h, w, force_last=True).
std::vector<int> vllm_mrope_interleaved_ids(int64_t a, int64_t b, int64_t c, bool force_last) {
  if (force_last) a -= 1;
  const int64_t counts[3] = {a, b, c};
  int64_t placed[3] = {0, 0, 0}, rem[3] = {a, b, c};
  std::vector<int> seq;
  int last = -1;  // None
  const int64_t total = a + b + c;
  for (int64_t step = 0; step < total; ++step) {
    std::vector<int> cands;
    for (int k = 0; k < 3; ++k)
      if (rem[k] > 0 && k != last) cands.push_back(k);
    if (cands.empty())
      for (int k = 0; k < 3; ++k)
        if (rem[k] > 0) cands.push_back(k);
    REQUIRE(!cands.empty());  // Python's min() of an empty list raises
    int best = cands[0];
    for (int k : cands) {  // min by (placed[k] / counts[k], k): the first smallest key
      const double qk = double(placed[k]) / double(counts[k]), qb = double(placed[best]) / double(counts[best]);
      if (qk < qb || (qk == qb && k < best)) best = k;
    }
    seq.push_back(best);
    placed[best] += 1;
    rem[best] -= 1;
    last = best;
  }
  if (force_last) seq.push_back(0);
  return seq;
}

// Then mrope_dim = ids * 2 (the list twice: r entries), and _rebuild_pos_emb takes column c of
// cos_sin_cache[positions] (r columns: the h cos, then the h sin, base^(-2i/r)) from position row mrope_dim[c];
// cos, sin = chunk(2) pairs cos column i with sin column h + i: both must take the same row.
std::vector<ModelPair> vllm_openpangu(const std::vector<int64_t> &mrope_section, int64_t r) {
  std::vector<int> ids;
  if (mrope_section.size() == 2)
    ids = vllm_mrope_interleaved_ids(mrope_section[0], mrope_section[1], 0, false);
  else
    ids = vllm_mrope_interleaved_ids(mrope_section[0], mrope_section[1], mrope_section[2], true);
  std::vector<int> mrope_dim = ids;
  mrope_dim.insert(mrope_dim.end(), ids.begin(), ids.end());
  REQUIRE(int64_t(mrope_dim.size()) == r);
  const int64_t h = r / 2;
  std::vector<ModelPair> out;
  for (int64_t i = 0; i < h; ++i) {
    REQUIRE(mrope_dim[size_t(i)] == mrope_dim[size_t(i + h)]);
    out.push_back(ModelPair{mrope_dim[size_t(i)], 2 * i, r});
  }
  return out;
}

// diffusers' per-axis RoPE (get_1d_rotary_pos_embed(axes_dim[a], ids[:, a], theta) for each axis, cat along
// the last dim, repeat_interleave_real): axis a's pair k turns at theta^(-2k/d_a), the axes one after another.
std::vector<ModelPair> diffusers_per_axis(const std::vector<int64_t> &axes_dim) {
  std::vector<ModelPair> out;
  for (size_t a = 0; a < axes_dim.size(); ++a)
    for (int64_t k = 0; k < axes_dim[a] / 2; ++k) out.push_back(ModelPair{int(a), 2 * k, axes_dim[a]});
  return out;
}

// A diffusion grid: frames x rows x columns, row-major, frame-major (diffusers' meshgrid "ij" and
// flatten), rows and columns from `from` (Qwen-Image's centred -(h - h/2) ..), with `text` tokens first at
// 0 on every axis (Flux's txt_ids).
std::vector<int64_t> grid_positions(int64_t text, int64_t frames, int64_t rows, int64_t cols, int64_t from) {
  std::vector<int64_t> p[3];
  for (int64_t t = 0; t < text; ++t)
    for (auto &v : p) v.push_back(0);
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < rows; ++y)
      for (int64_t x = 0; x < cols; ++x) {
        p[0].push_back(f);
        p[1].push_back(from + y);
        p[2].push_back(from + x);
      }
  std::vector<int64_t> out;
  for (auto &v : p) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// HF GLM-4V: apply_mrope(freqs, mrope_section) in the rotary (freqs split by the sections, chunk c takes axis
// c % 3), then cos[..., :dim/2].repeat_interleave(2) on the rotary dim: channels 2i and 2i + 1 take frequency
// i (rotate_half_llm pairs them), f_i = base^(-2i/dim).
std::vector<ModelPair> hf_glm4v(const std::vector<int64_t> &mrope_section, int64_t dim) {
  std::vector<ModelPair> out;
  for (size_t c = 0; c < mrope_section.size(); ++c)
    for (int64_t e = 0; e < mrope_section[c]; ++e) out.push_back(ModelPair{int(c % 3), 2 * int64_t(out.size()), dim});
  REQUIRE(int64_t(out.size()) == dim / 2);
  return out;
}

// The vision towers of Qwen2-VL / Qwen2.5-VL / Qwen3-VL / GLM-4V (VisionRotaryEmbedding(head_dim / 2)):
// inv_freq of head_dim / 4 entries base^(-2k / (head_dim / 2)); the table is [row * inv_freq | col * inv_freq]
// (head_dim / 2 channels), cat'ed with itself: rotate_half pairs. Llama 4's vision tower builds the same
// [x | y] table (freq_dim = head_dim / 2, the first freq_dim / 2 of arange(0, freq_dim, 2) / freq_dim) and pairs
// interleaved elements.
std::vector<ModelPair> hf_vision(int64_t head_dim) {
  std::vector<ModelPair> out;
  for (int axis = 0; axis < 2; ++axis)
    for (int64_t k = 0; k < head_dim / 4; ++k) out.push_back(ModelPair{axis, 2 * k, head_dim / 2});
  return out;
}

// Pixtral (HF PixtralRotaryEmbedding, mistral-inference precompute_freqs_cis_2d): freqs = base^(-2j/dim), the
// row takes freqs[::2], the column freqs[1::2]: [row * freqs[::2] | col * freqs[1::2]].
std::vector<ModelPair> pixtral(int64_t head_dim) {
  std::vector<ModelPair> out;
  for (int axis = 0; axis < 2; ++axis)
    for (int64_t k = 0; k < head_dim / 4; ++k) out.push_back(ModelPair{axis, 2 * (2 * k + axis), head_dim});
  return out;
}

// ggml_mrope_cache_init (ggml-cpu/ops.cpp), the theta of pair i for modes MROPE, IMROPE and VISION: sector =
// i % (sum of the four sections); MROPE: t below s0, h below s0 + s1, w below s0 + s1 + s2, else e; IMROPE: h on
// sector % 3 == 1 below 3 s1, w on % 3 == 2 below 3 s2, t on % 3 == 0 below 3 s0, else e; VISION resets each
// axis's theta at its section's first sector. theta_scale = base^(-2 / n_dims).
std::vector<ModelPair> ggml_sections(const int64_t *s, int64_t h, int mode) {
  const int64_t dims = s[0] + s[1] + s[2] + s[3], sec_w = s[0] + s[1], sec_e = sec_w + s[2];
  std::vector<ModelPair> out;
  int64_t started[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < h; ++i) {
    const int64_t sector = i % dims;
    int axis = 0;
    if (mode == 1) {  // IMROPE
      if (sector % 3 == 1 && sector < 3 * s[1])
        axis = 1;
      else if (sector % 3 == 2 && sector < 3 * s[2])
        axis = 2;
      else if (sector % 3 == 0 && sector < 3 * s[0])
        axis = 0;
      else
        axis = 3;
    } else {
      if (sector >= s[0] && sector < sec_w)
        axis = 1;
      else if (sector >= sec_w && sector < sec_e)
        axis = 2;
      else if (sector >= sec_e)
        axis = 3;
    }
    if (mode == 2) {  // VISION: theta restarts when a section begins
      if (sector == 0)
        started[0] = i;
      else if (sector == s[0])
        started[1] = i;
      else if (sector == sec_w)
        started[2] = i;
      else if (sector == sec_e)
        started[3] = i;
    }
    // ggml's n_dims: the rotary dim (2h) for MROPE and IMROPE, the pair count h for VISION (where the
    // rotation spans ne0 = 2 n_dims elements)
    const int64_t k = mode == 2 ? i - started[axis] : i;
    out.push_back(ModelPair{axis, 2 * k, mode == 2 ? h : 2 * h});
  }
  return out;
}

// The correctly rounded double of base^(-num/den), by MPFR.
double mpfr_power(double base, int64_t num, int64_t den) {
  ref::Big b(64), e(256), v(256);
  mpfr_set_d(b, base, MPFR_RNDN);
  mpfr_set_si(e, -long(num), MPFR_RNDN);
  mpfr_div_si(e, e, long(den), MPFR_RNDN);
  mpfr_pow(v, b, e, MPFR_RNDN);
  return mpfr_get_d(v, MPFR_RNDN);
}

// posenc_rope_sections against a model: the axis map equals the model's; the frequency of every pair is the
// model's (base^(-2i/r) itself where freq stays NULL, its correctly rounded double where the layout writes
// them); and the library's rotation, configured by the call, equals the formula on the model's own map and
// frequencies at the given positions, on every path.
void check_model(const std::string &name, posenc_rope base_rope, const int64_t *sections, posenc_rope_layout layout,
                 const std::vector<ModelPair> &model, const std::vector<int64_t> &positions, int64_t n, int axes) {
  const int64_t h = base_rope.rotary_dim / 2;
  REQUIRE(int64_t(model.size()) == h);
  std::vector<uint8_t> axis(size_t(h), 0xEE);
  std::vector<double> freq(size_t(h), -1.0);
  posenc_rope r = base_rope;
  INFO(name);
  REQUIRE(posenc_rope_sections(&r, sections, layout, axis.data(), freq.data()) == POSENC_OK);
  REQUIRE(r.axes == axes);
  Rope want = make_rope(name, base_rope.rotary_dim, base_rope.pairs, base_rope.base, base_rope.position_scale,
                        base_rope.attention_scale);
  want.r.axes = axes;
  for (int64_t i = 0; i < h; ++i) {
    const ModelPair &m = model[size_t(i)];
    INFO("pair " << i);
    CHECK(int(axis[size_t(i)]) == m.axis);
    want.axis.push_back(uint8_t(m.axis));
    if (r.freq) {
      const double f = mpfr_power(base_rope.base, m.num, m.den);
      CHECK(ref::bits(float(0)) == 0u);
      CHECK(std::memcmp(&freq[size_t(i)], &f, 8) == 0);
      want.freq.push_back(f);
    } else {
      CHECK(m.num * base_rope.rotary_dim == 2 * i * m.den);  // the one-axis frequency base^(-2i/r)
    }
  }
  if (!r.freq) CHECK(freq == std::vector<double>(size_t(h), -1.0));  // not written
  Exact ex(want);
  const int64_t d = base_rope.rotary_dim + 4;
  const Rotation c{name, n * 3 * d, thd(2, d), thd(1, d, 0, 2 * d), true, false, n, 0, positions, axes};
  Rotation layout_c = c;
  layout_c.q = Tensor{2, 3 * d, d, 0};
  layout_c.k = Tensor{1, 3 * d, d, 2 * d};
  Rope lib = want;  // the library's spec is r, from posenc_rope_sections; its pointers live in axis / freq
  lib.r = r;
  lib.axis = axis;
  lib.freq = r.freq ? freq : std::vector<double>{};
  for (Format f : kFormats) {
    std::vector<unsigned char> in(size_t(layout_c.elements) * ref::format_size(f));
    fill(f, in, 77, false);
    const std::vector<unsigned char> expect = expected(want, ex, layout_c, f, in);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<unsigned char> got = in;
        REQUIRE(run(lib, layout_c, f, got) == POSENC_OK);
        INFO(format_name(f) << " on " << posenc_isa_name(isa));
        CHECK(first_difference(got, expect, ref::format_size(f)) == -1);
      });
  }
}

}  // namespace

TEST_CASE("sections: Qwen2-VL / Qwen2.5-VL, Qwen3-VL and GLM-4V text, as HF's code assigns them",
          "[rope][axes][models]") {
  const std::vector<int64_t> pos = vl_positions(5, 300, 3);
  {  // Qwen2-VL-7B / Qwen2.5-VL-7B: head_dim 128, rope_theta 1e6, mrope_section [16, 24, 24]
    posenc_rope r = posenc_rope_default(128);
    r.base = 1e6;
    const int64_t s[4] = {16, 24, 24, 0};
    check_model("Qwen2.5-VL [16, 24, 24]", r, s, POSENC_SECTIONS_CHUNKED, hf_qwen2_vl({16, 24, 24}, 128), pos, 300, 3);
  }
  {  // Qwen3-VL: head_dim 128, rope_theta 5e6, mrope_section [24, 20, 20], interleaved
    posenc_rope r = posenc_rope_default(128);
    r.base = 5e6;
    const int64_t s[4] = {24, 20, 20, 0};
    check_model("Qwen3-VL [24, 20, 20]", r, s, POSENC_SECTIONS_INTERLEAVED, hf_qwen3_vl({24, 20, 20}, 128), pos, 300,
                3);
  }
  {  // GLM-4V / GLM-4.1V: head_dim 128, partial_rotary_factor 0.5 (dim 64), mrope_section [8, 12, 12],
     // interleaved pairs (rotate_half_llm), rope_theta 1e4
    posenc_rope r = posenc_rope_default(64);
    r.pairs = POSENC_ROPE_INTERLEAVED;
    const int64_t s[4] = {8, 12, 12, 0};
    check_model("GLM-4V [8, 12, 12]", r, s, POSENC_SECTIONS_CHUNKED, hf_glm4v({8, 12, 12}, 64), pos, 300, 3);
  }
  {  // ERNIE-4.5-VL (vLLM): head_dim 128, rope_theta 5e5, mrope_section [22, 22, 20] (h, w, t), GPT-J pairs;
     // posenc's sections are by axis: [t, h, w] = [20, 22, 22]
    posenc_rope r = posenc_rope_default(128);
    r.base = 5e5;
    r.pairs = POSENC_ROPE_INTERLEAVED;
    const int64_t s[4] = {20, 22, 22, 0};
    check_model("ERNIE-4.5-VL [22, 22, 20]", r, s, POSENC_SECTIONS_ALTERNATING, vllm_ernie45_vl({22, 22, 20}, 128), pos,
                300, 3);
    posenc_rope r64 = posenc_rope_default(64);
    const int64_t s2[4] = {8, 12, 12, 0};
    check_model("alternating [8, 12, 12] halves", r64, s2, POSENC_SECTIONS_ALTERNATING,
                vllm_ernie45_vl({12, 12, 8}, 64), pos, 300, 3);
  }
  {  // Qwen2-VL-2B-like: head_dim 64 would split [8, 12, 12] in HF; also sections with a zero in the middle
    posenc_rope r = posenc_rope_default(64);
    const int64_t s[4] = {8, 0, 24, 0};
    check_model("chunked [8, 0, 24]", r, s, POSENC_SECTIONS_CHUNKED, hf_qwen2_vl({8, 0, 24}, 64), pos, 300, 3);
  }
}

TEST_CASE("sections: diffusion transformers' per-axis frequencies (Flux, Wan, HunyuanVideo, CogVideoX, Qwen-Image)",
          "[rope][axes][models]") {
  // diffusers 0.40.0.dev0 (58eb52c0): FluxPosEmbed (16, 56, 56) theta 1e4; WanRotaryPosEmbed head 128: t 44,
  // h = w = 2 (128 // 6) = 42; HunyuanVideoRotaryPosEmbed (16, 56, 56) theta 256; get_3d_rotary_pos_embed
  // head 64: 64 // 4, 64 // 8 * 3 twice; QwenEmbedRope (16, 56, 56), centred rows and columns. Adjacent pairs.
  struct Model {
    const char *name;
    std::vector<int64_t> axes_dim;
    double theta;
    std::vector<int64_t> positions;
    int64_t n;
    posenc::rope preset;
  };
  const std::vector<Model> models = {
      {"Flux", {16, 56, 56}, 1e4, grid_positions(7, 1, 8, 9, 0), 7 + 72, posenc::rope::flux()},
      {"Wan 2.x", {44, 42, 42}, 1e4, grid_positions(0, 3, 5, 6, 0), 90, posenc::rope::wan()},
      {"HunyuanVideo", {16, 56, 56}, 256.0, grid_positions(0, 2, 6, 7, 0), 84, posenc::rope::hunyuan_video()},
      {"CogVideoX (slice)", {16, 24, 24}, 1e4, grid_positions(0, 2, 6, 7, 0), 84, posenc::rope::cogvideox()},
      {"Qwen-Image", {16, 56, 56}, 1e4, grid_positions(0, 1, 9, 8, -5), 72, posenc::rope::qwen_image()},
  };
  for (const Model &m : models) {
    int64_t r = 0, s[4] = {0, 0, 0, 0};
    for (size_t a = 0; a < m.axes_dim.size(); ++a) {
      r += m.axes_dim[a];
      s[a] = m.axes_dim[a] / 2;
    }
    posenc_rope base = posenc_rope_default(r);
    base.base = m.theta;
    base.pairs = POSENC_ROPE_INTERLEAVED;
    check_model(m.name, base, s, POSENC_SECTIONS_PER_AXIS, diffusers_per_axis(m.axes_dim), m.positions, m.n, 3);
    // the C++ preset is that spec
    std::vector<uint8_t> axis(size_t(r / 2));
    std::vector<double> freq(size_t(r / 2));
    REQUIRE(posenc_rope_sections(&base, s, POSENC_SECTIONS_PER_AXIS, axis.data(), freq.data()) == POSENC_OK);
    INFO(m.name << " preset");
    CHECK(m.preset.c_rope().base == m.theta);
    CHECK(m.preset.pairs() == posenc::rope_pairs::interleaved);
    CHECK(std::vector<uint8_t>(m.preset.axis().begin(), m.preset.axis().end()) == axis);
    CHECK(std::vector<double>(m.preset.freq().begin(), m.preset.freq().end()) == freq);
  }
  // Head sizes diffusers cannot split: odd widths (CogVideoX 72: 18, 27, 27) or no room for three axes (Wan 4)
  CHECK_THROWS_AS(posenc::rope::cogvideox(72), posenc::error);
  CHECK_THROWS_AS(posenc::rope::wan(4), posenc::error);
  CHECK(posenc::rope::cogvideox(128).axis().size() == 64);
  // Equal sections are the VISION layout's frequencies (base^(-2k/h) = base^(-k/s))
  posenc_rope a = posenc_rope_default(80), b = a;
  const int64_t two[4] = {20, 20, 0, 0};
  std::vector<uint8_t> axa(40), axb(40);
  std::vector<double> fa(40), fb(40);
  REQUIRE(posenc_rope_sections(&a, two, POSENC_SECTIONS_PER_AXIS, axa.data(), fa.data()) == POSENC_OK);
  REQUIRE(posenc_rope_sections(&b, two, POSENC_SECTIONS_VISION, axb.data(), fb.data()) == POSENC_OK);
  CHECK(fa == fb);
  CHECK(axa == axb);
}

TEST_CASE("sections: the vision towers (Qwen2-VL ViT, Llama 4, Pixtral) as their code assigns them",
          "[rope][axes][models]") {
  const std::vector<int64_t> pos = vl_positions(6, 200, 2);
  {  // Qwen2-VL ViT: head_dim 80 (1280 / 16), theta 1e4, [row | col]
    posenc_rope r = posenc_rope_default(80);
    const int64_t s[4] = {20, 20, 0, 0};
    check_model("Qwen2-VL ViT head_dim 80", r, s, POSENC_SECTIONS_VISION, hf_vision(80), pos, 200, 2);
  }
  {  // Qwen3-VL ViT: head_dim 72 (1152 / 16): 18 pairs per axis
    posenc_rope r = posenc_rope_default(72);
    const int64_t s[4] = {18, 18, 0, 0};
    check_model("Qwen3-VL ViT head_dim 72", r, s, POSENC_SECTIONS_VISION, hf_vision(72), pos, 200, 2);
  }
  {  // Llama 4 vision: head_dim 88 (1408 / 16), theta 1e4, interleaved pairs (complex), [x | y]
    posenc_rope r = posenc_rope_default(88);
    r.pairs = POSENC_ROPE_INTERLEAVED;
    const int64_t s[4] = {22, 22, 0, 0};
    check_model("Llama 4 vision head_dim 88", r, s, POSENC_SECTIONS_VISION, hf_vision(88), pos, 200, 2);
  }
  {  // Pixtral: head_dim 64 (1024 / 16), theta 1e4, even / odd frequencies; HF rotate_half, mistral complex pairs
    for (posenc_rope_pairs pairs : {POSENC_ROPE_HALVES, POSENC_ROPE_INTERLEAVED}) {
      posenc_rope r = posenc_rope_default(64);
      r.pairs = pairs;
      const int64_t s[4] = {16, 16, 0, 0};
      check_model(pairs == POSENC_ROPE_HALVES ? "Pixtral (HF)" : "Pixtral (mistral-inference)", r, s,
                  POSENC_SECTIONS_STRIDED, pixtral(64), pos, 200, 2);
    }
  }
}

TEST_CASE("sections: ggml's MROPE, IMROPE and VISION sector rules, random sections (shorter sums repeat)",
          "[rope][axes][models]") {
  uint64_t seed = 99;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t h = 1 + int64_t(splitmix(seed) % 70);
    int64_t s[4] = {0, 0, 0, 0};
    const int mode = trial % 3;  // MROPE, IMROPE, VISION
    const int used = mode == 1 ? 4 : 1 + int(splitmix(seed) % 4);
    int64_t left = 1 + int64_t(splitmix(seed) % uint64_t(h));  // the sum: at most h
    for (int a = 0; a < used && left > 0; ++a) {
      s[a] = a + 1 == used ? left : int64_t(splitmix(seed) % uint64_t(left + 1));
      left -= s[a];
    }
    if (s[0] + s[1] + s[2] + s[3] == 0) s[0] = 1;
    // ggml VISION restarts an axis only where its section starts after a non-empty one (an else-if chain of
    // sector comparisons): with an empty section before a used one, it does not restart at all. posenc
    // restarts every section; models have no empty sections, so VISION is compared on those only.
    if (mode == 2)
      for (int a = 0; a < 4; ++a)
        if (s[a] == 0 && (a == 0 || s[a - 1] > 0)) {
          bool later = false;
          for (int b = a + 1; b < 4; ++b) later = later || s[b] > 0;
          if (later) s[a] = 1;
        }
    if (s[0] + s[1] + s[2] + s[3] > h) continue;
    posenc_rope r = posenc_rope_default(2 * h);
    r.base = 5e5;
    const posenc_rope_layout layout = mode == 0   ? POSENC_SECTIONS_CHUNKED
                                      : mode == 1 ? POSENC_SECTIONS_INTERLEAVED_4
                                                  : POSENC_SECTIONS_VISION;
    int axes = mode == 1 ? 4 : 1;
    for (int a = 0; a < 4; ++a)
      if (s[a] > 0 && mode != 1) axes = a + 1;
    const std::vector<int64_t> pos = vl_positions(seed, 40, axes);
    check_model("ggml mode " + std::to_string(mode) + " h " + std::to_string(h) + " sections " + std::to_string(s[0]) +
                    "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "," + std::to_string(s[3]),
                r, s, layout, ggml_sections(s, h, mode), pos, 40, axes);
  }
}

TEST_CASE("sections: HF's interleaved layout on random sections", "[rope][axes][models]") {
  uint64_t seed = 5150;
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t h = 3 + int64_t(splitmix(seed) % 60);
    const int64_t s1 = int64_t(splitmix(seed) % uint64_t(h / 3 + 1)),
                  s2 = int64_t(splitmix(seed) % uint64_t(h / 3 + 1));
    const int64_t s[4] = {h - s1 - s2, s1, s2, 0};
    posenc_rope r = posenc_rope_default(2 * h);
    check_model("HF interleaved h " + std::to_string(h), r, s, POSENC_SECTIONS_INTERLEAVED,
                hf_qwen3_vl({s[0], s[1], s[2]}, 2 * h), vl_positions(seed, 30, 3), 30, 3);
  }
}

TEST_CASE("sections: openPangu-VL's balanced layout, as vLLM's MRotaryEmbeddingInterleaved assigns it",
          "[rope][axes][models][balanced]") {
  // The trace itself, on the lists vLLM's own tests and docstring examples give
  auto ids = [](int64_t a, int64_t b, int64_t c, bool force_last) {
    std::string out;
    for (int v : vllm_mrope_interleaved_ids(a, b, c, force_last)) out += char('0' + v);
    return out;
  };
  CHECK(ids(6, 5, 5, true) == "0120120120120120");
  CHECK(ids(2, 2, 0, false) == "0101");
  CHECK(ids(2, 3, 3, true) == "01212120");
  // every section list up to 48 pairs: posenc's axis map is the trace's, three sections and two
  std::vector<uint8_t> axis(64);
  int64_t compared = 0, mismatched = 0;
  for (int64_t sum = 1; sum <= 48; ++sum)
    for (int64_t s0 = 0; s0 <= sum; ++s0)
      for (int64_t s1 = 0; s0 + s1 <= sum; ++s1) {
        const int64_t s2 = sum - s0 - s1;
        posenc_rope r = posenc_rope_default(2 * sum);
        const int64_t s[4] = {s0, s1, s2, 0};
        if (s2 > 0 && s0 == 0) {  // three sections with no temporal one: refused (vLLM would invent one T slot)
          CHECK(posenc_rope_sections(&r, s, POSENC_SECTIONS_BALANCED, axis.data(), nullptr) == POSENC_ERR_INVALID);
          continue;
        }
        REQUIRE(posenc_rope_sections(&r, s, POSENC_SECTIONS_BALANCED, axis.data(), nullptr) == POSENC_OK);
        const std::vector<ModelPair> model =
            s2 > 0 ? vllm_openpangu({s0, s1, s2}, 2 * sum) : vllm_openpangu({s0, s1}, 2 * sum);
        CHECK(r.axes == (s2 > 0 ? 3 : 2));
        CHECK(r.freq == nullptr);
        ++compared;
        bool same = true;
        for (int64_t i = 0; i < sum; ++i) same = same && int(axis[size_t(i)]) == model[size_t(i)].axis;
        if (!same) {
          ++mismatched;
          if (mismatched <= 5) FAIL_CHECK("sections " << s0 << "," << s1 << "," << s2 << " differ from vLLM's ids");
        }
      }
  INFO(mismatched << " of " << compared << " section lists differ");
  CHECK(mismatched == 0);
  CHECK(compared > 18000);

  // end to end, MPFR rotations on every path and format: a head_dim 128 model, a partial rotary dim, the
  // two-section form (position rows 0 and 1), random lists
  const std::vector<int64_t> pos3 = vl_positions(8, 200, 3), pos2 = vl_positions(9, 200, 2);
  {
    posenc_rope r = posenc_rope_default(128);
    r.base = 1e6;
    const int64_t s[4] = {22, 21, 21, 0};
    check_model("openPangu-VL-like [22, 21, 21]", r, s, POSENC_SECTIONS_BALANCED, vllm_openpangu({22, 21, 21}, 128),
                pos3, 200, 3);
  }
  {
    posenc_rope r = posenc_rope_default(64);
    r.pairs = POSENC_ROPE_INTERLEAVED;
    const int64_t s[4] = {12, 10, 10, 0};
    check_model("balanced [12, 10, 10] GPT-J pairs", r, s, POSENC_SECTIONS_BALANCED, vllm_openpangu({12, 10, 10}, 64),
                pos3, 200, 3);
  }
  {
    posenc_rope r = posenc_rope_default(80);
    const int64_t s[4] = {24, 16, 0, 0};
    check_model("balanced two sections [24, 16]", r, s, POSENC_SECTIONS_BALANCED, vllm_openpangu({24, 16}, 80), pos2,
                200, 2);
  }
  uint64_t seed = 7077;
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t h = 2 + int64_t(splitmix(seed) % 60);
    const bool three = trial % 3 != 2;
    const int64_t s0 = 1 + int64_t(splitmix(seed) % uint64_t(h - 1));
    const int64_t s1 = three ? int64_t(splitmix(seed) % uint64_t(h - s0)) : h - s0;
    const int64_t s[4] = {s0, s1, three ? h - s0 - s1 : 0, 0};
    if (three && s[2] == 0) continue;
    posenc_rope r = posenc_rope_default(2 * h);
    r.base = 5e5;
    const int axes = three ? 3 : 2;
    check_model("balanced h " + std::to_string(h) + " sections " + std::to_string(s[0]) + "," + std::to_string(s[1]) +
                    "," + std::to_string(s[2]),
                r, s, POSENC_SECTIONS_BALANCED,
                three ? vllm_openpangu({s[0], s[1], s[2]}, 2 * h) : vllm_openpangu({s[0], s[1]}, 2 * h),
                vl_positions(seed, 30, axes), 30, axes);
  }
  {  // a sum below r/2 repeats the sectors, as every layout does: vLLM's list for the sum, again and again
    posenc_rope r = posenc_rope_default(100);
    const int64_t s[4] = {4, 3, 3, 0};
    std::vector<ModelPair> model;
    const std::vector<ModelPair> one = vllm_openpangu({4, 3, 3}, 20);
    for (int64_t i = 0; i < 50; ++i) model.push_back(ModelPair{one[size_t(i % 10)].axis, 2 * i, 100});
    check_model("balanced [4, 3, 3] repeated over 50 pairs", r, s, POSENC_SECTIONS_BALANCED, model, pos3, 200, 3);
  }
  {  // the C++ wrapper's rope_layout::balanced is the same call
    const posenc::rope w =
        posenc::rope(posenc_rope_default(128)).with_sections({22, 21, 21, 0}, posenc::rope_layout::balanced);
    const std::vector<ModelPair> model = vllm_openpangu({22, 21, 21}, 128);
    REQUIRE(w.axis().size() == 64);
    for (size_t i = 0; i < 64; ++i) CHECK(int(w.axis()[i]) == model[i].axis);
  }
  {  // refused, nothing written: a fourth section, three sections without a temporal one
    std::vector<uint8_t> ax(64, 0xAB);
    posenc_rope r = posenc_rope_default(128);
    const posenc_rope before = r;
    const int64_t fourth[4] = {21, 21, 21, 1}, no_t[4] = {0, 32, 32, 0};
    CHECK(posenc_rope_sections(&r, fourth, POSENC_SECTIONS_BALANCED, ax.data(), nullptr) == POSENC_ERR_INVALID);
    CHECK(posenc_rope_sections(&r, no_t, POSENC_SECTIONS_BALANCED, ax.data(), nullptr) == POSENC_ERR_INVALID);
    CHECK(posenc_rope_sections(&r, no_t, POSENC_SECTIONS_BALANCED, nullptr, nullptr) == POSENC_ERR_NULL);
    CHECK(std::memcmp(&r, &before, sizeof r) == 0);
    CHECK(ax == std::vector<uint8_t>(64, 0xAB));
  }
}

TEST_CASE("sections: bad arguments return their status and write nothing", "[rope][axes][bad]") {
  const int64_t ok[4] = {16, 24, 24, 0};
  std::vector<uint8_t> axis(64, 0xAB);
  std::vector<double> freq(64, 7.0);
  posenc_rope r = posenc_rope_default(128);
  const posenc_rope before = r;
  auto untouched = [&] {
    CHECK(std::memcmp(&r, &before, sizeof r) == 0);
    CHECK(axis == std::vector<uint8_t>(64, 0xAB));
    CHECK(freq == std::vector<double>(64, 7.0));
  };
  CHECK(posenc_rope_sections(nullptr, ok, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_NULL);
  CHECK(posenc_rope_sections(&r, nullptr, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_NULL);
  CHECK(posenc_rope_sections(&r, ok, POSENC_SECTIONS_CHUNKED, nullptr, freq.data()) == POSENC_ERR_NULL);
  CHECK(posenc_rope_sections(&r, ok, POSENC_SECTIONS_VISION, axis.data(), nullptr) == POSENC_ERR_NULL);
  CHECK(posenc_rope_sections(&r, ok, POSENC_SECTIONS_STRIDED, axis.data(), nullptr) == POSENC_ERR_NULL);
  untouched();
  int past_layouts = 0;  // the first value past the layouts
  while (posenc_rope_layout_name(posenc_rope_layout(past_layouts))) ++past_layouts;
  // passed as a value, never stored in and loaded from an enum object (UBSan's enum check)
  CHECK(posenc_rope_sections(&r, ok, posenc_rope_layout(past_layouts), axis.data(), freq.data()) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_sections(&r, ok, POSENC_SECTIONS_PER_AXIS, axis.data(), nullptr) == POSENC_ERR_NULL);
  const int64_t uneven[4] = {20, 22, 20, 0},
                fourth[4] = {19, 22, 22, 1};  // sums 62 and 64  // ALTERNATING: h == w, 3 axes
  CHECK(posenc_rope_sections(&r, uneven, POSENC_SECTIONS_ALTERNATING, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_sections(&r, fourth, POSENC_SECTIONS_ALTERNATING, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_sections(&r, ok, posenc_rope_layout(-1), axis.data(), freq.data()) == POSENC_ERR_INVALID);
  const int64_t negative[4] = {16, -1, 24, 0}, past[4] = {16, 24, 25, 0}, zero[4] = {0, 0, 0, 0};
  CHECK(posenc_rope_sections(&r, negative, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_sections(&r, past, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_sections(&r, zero, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  untouched();
  for (int64_t bad_r : {int64_t(0), int64_t(-2), int64_t(7)}) {
    posenc_rope b = r;
    b.rotary_dim = bad_r;
    CHECK(posenc_rope_sections(&b, ok, POSENC_SECTIONS_CHUNKED, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  }
  for (double bad_base : {0.0, -1.0, HUGE_VAL, std::nan("")}) {
    posenc_rope b = r;
    b.base = bad_base;
    CHECK(posenc_rope_sections(&b, ok, POSENC_SECTIONS_VISION, axis.data(), freq.data()) == POSENC_ERR_INVALID);
  }
  {  // a base so small that a vision frequency reaches 2^1000: base^(-2k/h) for k up to 63, h 64
    posenc_rope b = r;
    b.base = 1e-300;
    const int64_t one[4] = {64, 0, 0, 0};
    CHECK(posenc_rope_sections(&b, one, POSENC_SECTIONS_VISION, axis.data(), freq.data()) == POSENC_ERR_INVALID);
    CHECK(posenc_rope_sections(&b, ok, POSENC_SECTIONS_VISION, axis.data(), freq.data()) == POSENC_OK);  // k < 24
    axis.assign(64, 0xAB);
    freq.assign(64, 7.0);
  }
  untouched();
}

TEST_CASE("multi-axis bad input: statuses, checked before any write", "[rope][axes][bad]") {
  const int64_t n = 4, h = 8;
  std::vector<uint8_t> axis = {0, 1, 2, 0, 1, 2, 0, 1};
  posenc_rope good = posenc_rope_default(16);
  good.axes = 3;
  good.axis = axis.data();
  const std::vector<int64_t> pos_ok = {1, 2, 3, 4, 10, 10, 10, 10, 5, 6, 7, 8};
  std::vector<float> x(size_t(n * 16), 0.5f);
  std::vector<float> cache(size_t(n * 16), 0.25f);
  auto rotate = [&](const posenc_rope &r, const std::vector<int64_t> &p) {
    return posenc_rope_f32(&r, p.empty() ? nullptr : p.data(), 0, n, x.data(), 1, 16, 16);
  };
  auto fill_cache = [&](const posenc_rope &r, const std::vector<int64_t> &p) {
    return posenc_rope_cache_f32(&r, p.empty() ? nullptr : p.data(), 0, n, cache.data(), 16, cache.data() + h, 16);
  };
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      const auto both = [&](const posenc_rope &r, const std::vector<int64_t> &p, posenc_status want) {
        CHECK(rotate(r, p) == want);
        CHECK(fill_cache(r, p) == want);
      };
      for (int32_t axes : {0, -1, 5, 100}) {
        posenc_rope r = good;
        r.axes = axes;
        both(r, pos_ok, POSENC_ERR_INVALID);
      }
      {
        posenc_rope r = good;
        r.axis = nullptr;
        both(r, pos_ok, POSENC_ERR_INVALID);
      }
      {
        std::vector<uint8_t> bad = axis;
        bad[7] = 3;
        posenc_rope r = good;
        r.axis = bad.data();
        both(r, pos_ok, POSENC_ERR_INVALID);
        r.axes = 1;  // a map given with one axis must name only axis 0
        r.axis = axis.data();
        both(r, pos_ok, POSENC_ERR_INVALID);
      }
      for (size_t k = 4; k < pos_ok.size(); ++k)  // axes 1 and 2: no PAD, |p| < 2^31
        for (int64_t v : {k2p31, -k2p31, int64_t(POSENC_PAD), INT64_MAX}) {
          std::vector<int64_t> p = pos_ok;
          p[k] = v;
          both(good, p, POSENC_ERR_OUT_OF_RANGE);
        }
      {
        std::vector<int64_t> p = pos_ok;
        p[1] = k2p31;  // axis 0
        both(good, p, POSENC_ERR_OUT_OF_RANGE);
        p[1] = POSENC_PAD;  // a padding token: fine
        both(good, p, POSENC_OK);
      }
      {  // n zero validates the spec only
        posenc_rope r = good;
        r.axes = 9;
        CHECK(posenc_rope_f32(&r, nullptr, 0, 0, nullptr, 0, 0, 0) == POSENC_ERR_INVALID);
        CHECK(posenc_rope_f32(&good, nullptr, 0, 0, nullptr, 0, 0, 0) == POSENC_OK);
      }
      // first + t beyond the range on every axis
      CHECK(posenc_rope_f32(&good, nullptr, k2p31 - 2, n, x.data(), 1, 16, 16) == POSENC_ERR_OUT_OF_RANGE);
    });
  // nothing was written by the refused calls (the accepted PAD calls wrote x and cache: compare with them)
  std::vector<float> x2(size_t(n * 16), 0.5f), c2(size_t(n * 16), 0.25f);
  std::vector<int64_t> p = pos_ok;
  p[1] = POSENC_PAD;
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      (void)isa;
      CHECK(posenc_rope_f32(&good, p.data(), 0, n, x2.data(), 1, 16, 16) == POSENC_OK);
      CHECK(posenc_rope_cache_f32(&good, p.data(), 0, n, c2.data(), 16, c2.data() + h, 16) == POSENC_OK);
    });
  CHECK(std::memcmp(x.data(), x2.data(), x.size() * 4) == 0);
  CHECK(std::memcmp(cache.data(), c2.data(), cache.size() * 4) == 0);
}

// ---- golden digests -------------------------------------------------------------------------------------

namespace {

struct AxesGolden {
  const char *name;
  Rope rope;
  bool cache;
  Format format;
  int64_t n;
  std::vector<int64_t> positions;  // axis-major
  const char *sha256;
};

// The spec from a model's own assignment (the traces above), not from posenc_rope_sections: the reference
// owes nothing to the library. explicit_freq: the model's frequencies rounded once to double (the vision
// layouts), else base^(-2i/r) itself.
Rope golden_rope(int64_t r, posenc_rope_pairs pairs, double base, const std::vector<ModelPair> &model, int axes,
                 bool explicit_freq, double m = 1.0) {
  Rope rope = make_rope("", r, pairs, base, 1.0, m);
  rope.r.axes = axes;
  for (const ModelPair &p : model) {
    rope.axis.push_back(uint8_t(p.axis));
    if (explicit_freq) rope.freq.push_back(mpfr_power(base, p.num, p.den));
  }
  return rope;
}

const std::vector<AxesGolden> &axes_goldens() {
  static const std::vector<AxesGolden> g = {
      {"Qwen2.5-VL cache, mixed runs",
       golden_rope(128, POSENC_ROPE_HALVES, 1e6, hf_qwen2_vl({16, 24, 24}, 128), 3, false), true, Format::kF32, 90,
       vl_positions(1, 90, 3), "748e53d7739b4ce4bec7a0b9e98de0fca3a9b274b9254069c6d6c0e030bd05be"},
      {"Qwen3-VL qk f32, mixed runs",
       golden_rope(128, POSENC_ROPE_HALVES, 5e6, hf_qwen3_vl({24, 20, 20}, 128), 3, false), false, Format::kF32, 70,
       vl_positions(2, 70, 3), "677eae13e7ea15b0969136040ef29721268d4058ca0fd0a7275f6da3be9a0506"},
      {"Qwen2-VL ViT qk bf16", golden_rope(80, POSENC_ROPE_HALVES, 1e4, hf_vision(80), 2, true), false, Format::kBF16,
       70, vl_positions(3, 70, 2), "82e5632cfad4a02e4739eb04bb84a4fd553fe9de8bd9d082fe884904c76e89e1"},
      {"Pixtral (complex pairs) qk f16, m 1.369",
       golden_rope(64, POSENC_ROPE_INTERLEAVED, 1e4, pixtral(64), 2, true, 1.369), false, Format::kF16, 70,
       vl_positions(4, 70, 2), "ed1a488eb9c3b0843f178bf556c13239d50239cf70605876d90d5cedc948a347"},
      {"openPangu-VL balanced qk bf16, mixed runs",
       golden_rope(128, POSENC_ROPE_HALVES, 1e6, vllm_openpangu({22, 21, 21}, 128), 3, false), false, Format::kBF16, 70,
       vl_positions(10, 70, 3), "db133c9ecd892ec505f8533462af44c7a1df76121be21b148a49e7542de448f5"},
      {"balanced two sections cache", golden_rope(80, POSENC_ROPE_HALVES, 1e4, vllm_openpangu({24, 16}, 80), 2, false),
       true, Format::kF32, 60, vl_positions(11, 60, 2),
       "e703e792ab38bcc6989969a73cad6fa794d16e5112c87a83ab87c6333bb9b94a"},
  };
  return g;
}

// 4 q heads and 2 k heads of head_dim r + 8 in a fused QKV buffer, as test_rope.cpp's goldens.
Rotation axes_golden_rotation(const AxesGolden &g) {
  const int64_t d = g.rope.r.rotary_dim + 8, ts = 8 * d;
  return Rotation{g.name, g.n * ts,    Tensor{4, ts, d, 0}, Tensor{2, ts, d, 4 * d}, true, false, g.n,
                  0,      g.positions, g.rope.r.axes};
}

std::vector<unsigned char> axes_golden_input(const AxesGolden &g) {
  std::vector<unsigned char> in(size_t(axes_golden_rotation(g).elements) * ref::format_size(g.format));
  fill(g.format, in, 2026, false);
  return in;
}

}  // namespace

TEST_CASE("multi-axis golden: the checked-in hashes are those of MPFR's values and posenc.h's formula",
          "[rope][axes][golden]") {
  for (const AxesGolden &g : axes_goldens()) {
    Exact ex(g.rope);
    const std::vector<unsigned char> want =
        g.cache ? as_bytes(cache_want(g.rope, ex, g.positions, 0, g.n))
                : expected(g.rope, ex, axes_golden_rotation(g), g.format, axes_golden_input(g));
    INFO(g.name);
    CHECK(digest(want) == g.sha256);
  }
}

TEST_CASE("multi-axis golden: every path of this build reproduces the hashes", "[rope][axes][golden]") {
  every_path_reproduces(axes_goldens(), [](const AxesGolden &g) {
    if (!g.cache) return rotated(g.rope, axes_golden_rotation(g), g.format, axes_golden_input(g));
    return as_bytes(cache_of(g.rope, g.positions, 0, g.n));
  });
}
