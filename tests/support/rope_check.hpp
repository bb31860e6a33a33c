// The RoPE suites' shared machinery (test_rope.cpp, test_rope_axes.cpp): specs that own their frequencies and
// axis maps, the MPFR reference of the cache values, buffers of head rows filled with awkward values, and
// posenc.h's rotation applied to those reference values on a copy of the buffer, against which a call on
// the library is compared byte for byte. Nothing here uses the library's arithmetic. Multi-axis specs
// (posenc.h, "Multi-axis RoPE") are the general case: pair i of token t is at the position of its axis.
#pragma once

#include <mpfr.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/rope.hpp"
#include "support/sha256.hpp"

namespace rope_check {

using ref::Big;
using ref::Format;
using ref::RopeCall;
using ref::RopeKernel;

inline constexpr int64_t k2p31 = int64_t(1) << 31;
inline const Format kFormats[] = {Format::kF32, Format::kBF16, Format::kF16};

inline const char *format_name(Format f) { return f == Format::kF32 ? "f32" : f == Format::kBF16 ? "bf16" : "f16"; }

// A portable generator (the inputs of the golden digests must be the same everywhere).
inline uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline int64_t uniform_position(uint64_t &s) { return int64_t(splitmix(s) % uint64_t(2 * k2p31 - 1)) - (k2p31 - 1); }

// A RoPE spec that owns its explicit frequencies (copies stay valid).
struct Rope {
  std::string name;
  posenc_rope r;
  std::vector<double> freq;
  std::vector<uint8_t> axis;  // multi-axis: the axis of each pair (r.axes > 1), else empty
  posenc_rope get() const {
    posenc_rope c = r;
    c.freq = freq.empty() ? nullptr : freq.data();
    c.axis = axis.empty() ? nullptr : axis.data();
    return c;
  }
  int64_t h() const { return r.rotary_dim / 2; }
  int axis_of(int64_t i) const { return axis.empty() ? 0 : axis[size_t(i)]; }
};

inline Rope make_rope(const std::string &name, int64_t rotary_dim, posenc_rope_pairs pairs, double base,
                      double position_scale = 1.0, double m = 1.0, std::vector<double> freq = {}) {
  Rope rope{name, posenc_rope_default(rotary_dim), std::move(freq), {}};
  rope.r.pairs = pairs;
  rope.r.base = base;
  rope.r.position_scale = position_scale;
  rope.r.attention_scale = m;
  return rope;
}

// Explicit frequencies of every size and sign: tiny, subnormal, zero, huge, negative, near pi.
inline std::vector<double> odd_frequencies(int64_t h, uint64_t seed) {
  static const double fixed[] = {
      1.0,   0.0,     -0.25, 5e-324, 1e-300, 3.0e-10, 1e6, -1e15, 0x1p52 + 1, 3.141592653589793, 1.5707963267948966,
      1e100, -7.5e-5, 0.1,   2.0};
  std::vector<double> f;
  for (int64_t i = 0; i < h; ++i) {
    if (i < int64_t(sizeof fixed / sizeof fixed[0])) {
      f.push_back(fixed[i]);
    } else {  // random magnitude in [2^-40, 2^40), either sign
      const uint64_t r = splitmix(seed);
      const double mant = 1.0 + double(r >> 12) * 0x1p-52;
      f.push_back(std::ldexp(r & 1 ? -mant : mant, int((r >> 1) % 81) - 40));
    }
  }
  return f;
}

// ---- the MPFR reference -----------------------------------------------------------------------------

// Correctly rounded m cos(a_i), m sin(a_i) of a spec, memoised per position.
class Exact {
 public:
  explicit Exact(const Rope &rope) : rope_(rope) {
    const posenc_rope r = rope.get();
    for (int64_t i = 0; i < rope.h(); ++i) {
      if (r.freq) {
        f_.emplace_back(new Big(64));
        mpfr_set_d(*f_.back(), r.freq[i], MPFR_RNDN);  // exact
      } else {
        // base^(-2i/r) with a relative error far below 2^-1000: the angle keeps hundreds of bits below
        // its binary point even at p = 2^31 (the bases here keep f_i <= 2^4)
        f_.emplace_back(new Big(1200));
        Big e(1200), b(64);
        mpfr_set_si(e, -2 * i, MPFR_RNDN);
        mpfr_div_si(e, e, long(r.rotary_dim), MPFR_RNDN);
        mpfr_set_d(b, r.base, MPFR_RNDN);
        mpfr_pow(*f_.back(), b, e, MPFR_RNDN);
      }
    }
  }

  // cos and sin of pair i at p (p != POSENC_PAD).
  void pair(int64_t i, int64_t p, float &c, float &s) const {
    Big ps(128);
    mpfr_set_si(ps, long(p), MPFR_RNDN);
    mpfr_mul_d(ps, ps, rope_.r.position_scale, MPFR_RNDN);  // exact: 31 + 53 bits
    pair_at(i, ps, c, s);
  }
  // The same at a real position t (posenc_rope_*_real): t * position_scale exactly, 53 + 53 bits.
  void pair_real(int64_t i, double t, float &c, float &s) const {
    Big ps(128);
    mpfr_set_d(ps, t, MPFR_RNDN);
    mpfr_mul_d(ps, ps, rope_.r.position_scale, MPFR_RNDN);  // exact
    pair_at(i, ps, c, s);
  }
  // cos and sin of pair i at the scaled position ps (exact).
  void pair_at(int64_t i, mpfr_srcptr ps, float &c, float &s) const {
    const double m = rope_.r.attention_scale;
    const mpfr_srcptr f = *f_[size_t(i)];
    if (mpfr_zero_p(ps) || mpfr_zero_p(f)) {  // an exactly zero angle: sin +0, cos m
      s = 0.0f;
      Big mm(64);
      mpfr_set_d(mm, m, MPFR_RNDN);
      c = mpfr_get_flt(mm, MPFR_RNDN);
      return;
    }
    Big a(mpfr_get_prec(f) + 128), sv(400), cv(400), ms(480), mc(480);
    mpfr_mul(a, f, ps, MPFR_RNDN);  // exact for explicit frequencies
    mpfr_sin_cos(sv, cv, a, MPFR_RNDN);
    mpfr_mul_d(ms, sv, m, MPFR_RNDN);  // exact: 400 + 53 bits
    mpfr_mul_d(mc, cv, m, MPFR_RNDN);
    s = mpfr_get_flt(ms, MPFR_RNDN);
    c = mpfr_get_flt(mc, MPFR_RNDN);
  }

  // h cos values then h sin values at p; +0.0 for POSENC_PAD.
  const std::vector<float> &row(int64_t p) {
    auto it = memo_.find(p);
    if (it != memo_.end()) return it->second;
    const int64_t h = rope_.h();
    std::vector<float> v(size_t(2 * h), 0.0f);
    if (p != POSENC_PAD)
      for (int64_t i = 0; i < h; ++i) pair(i, p, v[size_t(i)], v[size_t(h + i)]);
    return memo_.emplace(p, std::move(v)).first->second;
  }

  // h cos values then h sin values at the real position t, memoised by t's bits (-0.0 apart from +0.0).
  const std::vector<float> &row_real(double t) {
    uint64_t key;
    std::memcpy(&key, &t, sizeof key);
    auto it = memo_real_.find(key);
    if (it != memo_real_.end()) return it->second;
    const int64_t h = rope_.h();
    std::vector<float> v(size_t(2 * h), 0.0f);
    for (int64_t i = 0; i < h; ++i) pair_real(i, t, v[size_t(i)], v[size_t(h + i)]);
    return memo_real_.emplace(key, std::move(v)).first->second;
  }
  // A multi-axis token at real positions: pair i at t[axis_i].
  std::vector<float> token_real(const double *t) {
    const int64_t h = rope_.h();
    std::vector<float> v(size_t(2 * h), 0.0f);
    for (int64_t i = 0; i < h; ++i) {
      const std::vector<float> &row = row_real(t[rope_.axis_of(i)]);
      v[size_t(i)] = row[size_t(i)];
      v[size_t(h + i)] = row[size_t(h + i)];
    }
    return v;
  }

  // A multi-axis token: pair i at the position of its axis, p[axis_i] (p[0] == POSENC_PAD: zeros).
  std::vector<float> token(const int64_t *p) {
    const int64_t h = rope_.h();
    std::vector<float> v(size_t(2 * h), 0.0f);
    if (p[0] == POSENC_PAD) return v;
    for (int64_t i = 0; i < h; ++i) {
      const std::vector<float> &row = this->row(p[rope_.axis_of(i)]);
      v[size_t(i)] = row[size_t(i)];
      v[size_t(h + i)] = row[size_t(h + i)];
    }
    return v;
  }

  // |position_scale * f_i| at high precision, for the adversarial positions.
  void step(int64_t i, mpfr_ptr out) const {
    mpfr_set_prec(out, mpfr_get_prec(*f_[size_t(i)]) + 64);
    mpfr_mul_d(out, *f_[size_t(i)], rope_.r.position_scale, MPFR_RNDN);
    mpfr_abs(out, out, MPFR_RNDN);
  }

  const Rope &rope() const { return rope_; }

 private:
  Rope rope_;
  std::vector<std::unique_ptr<Big>> f_;
  std::map<int64_t, std::vector<float>> memo_;
  std::map<uint64_t, std::vector<float>> memo_real_;
};

inline std::vector<int64_t> run_of(int64_t first, int64_t n) {
  std::vector<int64_t> v;
  for (int64_t t = 0; t < n; ++t) v.push_back(first + t);
  return v;
}

inline bool is_run(const std::vector<int64_t> &p) {
  for (size_t t = 1; t < p.size(); ++t)
    if (p[t - 1] == POSENC_PAD || p[t] != p[t - 1] + 1) return false;
  return !p.empty() && p[0] != POSENC_PAD;
}

// ---- head rows, the formula, and calls on the library ---------------------------------------------------

// One tensor's rows inside a buffer: rows (t, j) at offset + t*token_stride + j*head_stride elements.
struct Tensor {
  int64_t heads = 0, token_stride = 0, head_stride = 0, offset = 0;
};

// A rotation call: q (rope_*, or the q of rope_qk_*) and k (rope_qk_* only; k.heads == 0 with
// k_null passes NULL) in one buffer of `elements` elements. copy: rope_copy_*, q's rows read from the rows
// of src (whose heads are q's) in the same buffer.
struct Rotation {
  std::string name;
  int64_t elements;
  Tensor q, k;
  bool qk = false, k_null = false;
  int64_t n, first;                // positions first + t when `positions` is empty
  std::vector<int64_t> positions;  // axes * n values, axis-major
  int axes = 1;                    // the spec's axis count: positions on axis a at positions[a n + t]
  bool copy = false;
  Tensor src{};                 // copy: heads unused (q's), offset and strides
  std::vector<double> times{};  // not empty: the call at these real positions (axes * n, axis-major)
};

// Element values: mostly in [-4, 4), then zeros of both signs, large values (rotations past the float32 and
// binary16 range: infinities), tiny and subnormal ones; NaN and infinities only with `specials`.
inline void fill(Format f, std::vector<unsigned char> &b, uint64_t seed, bool specials) {
  const size_t count = b.size() / ref::format_size(f);
  for (size_t e = 0; e < count; ++e) {
    const uint64_t r = splitmix(seed);
    const int kind = int(r % 64);
    if (f == Format::kF32) {
      float v = float(int32_t(r >> 40) - (1 << 23)) / float(1 << 21);
      if (kind == 0)
        v = 0.0f;
      else if (kind == 1)
        v = -0.0f;
      else if (kind == 2)
        v = 3.0e38f;
      else if (kind == 3)
        v = -1.5e-40f;
      else if (kind == 4)
        v = float(int32_t(r >> 40)) * 1e-30f;
      if (specials && kind >= 5 && kind < 9) {
        const uint32_t pats[] = {0x7FC00000u, 0xFFC12345u, 0x7F800001u, 0x7F800000u, 0xFF800000u, 0x7FA00000u};
        std::memcpy(&v, &pats[(r >> 20) % 6], 4);
      }
      std::memcpy(&b[4 * e], &v, 4);
    } else {
      uint16_t v = uint16_t(r >> 24);
      const uint16_t exp_mask = f == Format::kBF16 ? 0x7F80 : 0x7C00;
      if ((v & exp_mask) == exp_mask && !(specials && kind < 16)) v = uint16_t(v & ~0x4000);  // finite
      if (f == Format::kBF16 && !specials && kind > 4)
        v = uint16_t((v & 0x807F) | (uint16_t(0x3C00 + ((r >> 8) % 0x600)) & 0x7F80));
      std::memcpy(&b[2 * e], &v, 2);
    }
  }
}

inline const int64_t *positions_of(const Rotation &c) { return c.positions.empty() ? nullptr : c.positions.data(); }
inline int64_t position(const Rotation &c, int64_t t, int a = 0) {
  return c.positions.empty() ? c.first + t : c.positions[size_t(a * c.n + t)];
}

// Element offset of row (t, j) of x, and of the row it is read from (copy: src's; else x's own).
inline int64_t row_at(const Tensor &x, int64_t t, int64_t j) {
  return x.offset + t * x.token_stride + j * x.head_stride;
}
inline int64_t source_row_at(const Rotation &c, const Tensor &x, int64_t t, int64_t j) {
  return c.copy ? c.src.offset + t * c.src.token_stride + j * c.src.head_stride : row_at(x, t, j);
}

// posenc.h's rotation with MPFR's cos and sin, on a copy of the buffer: each row rotated from the row it is
// read from (itself, or src's for rope_copy_*, whose POSENC_PAD tokens copy their r elements unchanged).
inline std::vector<unsigned char> expected(const Rope &rope, Exact &ex, const Rotation &c, Format f,
                                           const std::vector<unsigned char> &in) {
  std::vector<unsigned char> out = in;
  const size_t es = ref::format_size(f);
  const int64_t h = rope.h();
  for (int64_t t = 0; t < c.n; ++t) {
    if (!c.times.empty()) {
      double p[4] = {0, 0, 0, 0};
      for (int a = 0; a < c.axes; ++a) p[a] = c.times[size_t(a * c.n + t)];
      const std::vector<float> row = ex.token_real(p);
      for (const Tensor *x : {&c.q, &c.k})
        for (int64_t j = 0; j < x->heads; ++j)
          ref::rotate_row(f, rope.r.pairs, h, row.data(), row.data() + h,
                          in.data() + es * size_t(source_row_at(c, *x, t, j)),
                          out.data() + es * size_t(row_at(*x, t, j)));
      continue;
    }
    if (position(c, t) == POSENC_PAD) {
      for (int64_t j = 0; c.copy && j < c.q.heads; ++j)
        std::memcpy(out.data() + es * size_t(row_at(c.q, t, j)), in.data() + es * size_t(source_row_at(c, c.q, t, j)),
                    es * size_t(2 * h));
      continue;
    }
    int64_t p[4] = {0, 0, 0, 0};
    for (int a = 0; a < c.axes; ++a) p[a] = position(c, t, a);
    const std::vector<float> row = ex.token(p);
    for (const Tensor *x : {&c.q, &c.k})
      for (int64_t j = 0; j < x->heads; ++j)
        ref::rotate_row(f, rope.r.pairs, h, row.data(), row.data() + h,
                        in.data() + es * size_t(source_row_at(c, *x, t, j)),
                        out.data() + es * size_t(row_at(*x, t, j)));
  }
  return out;
}

inline RopeKernel kernel_of(Format f, bool qk, bool copy = false) {
  if (f == Format::kF32) return copy ? RopeKernel::kCopyF32 : qk ? RopeKernel::kQkF32 : RopeKernel::kF32;
  if (f == Format::kBF16) return copy ? RopeKernel::kCopyBF16 : qk ? RopeKernel::kQkBF16 : RopeKernel::kBF16;
  return copy ? RopeKernel::kCopyF16 : qk ? RopeKernel::kQkF16 : RopeKernel::kF16;
}

// The call on the library on `buf` (in place, or from src's rows in it).
inline posenc_status run(const Rope &rope, const Rotation &c, Format f, std::vector<unsigned char> &buf) {
  const posenc_rope r = rope.get();
  const size_t es = ref::format_size(f);
  RopeCall call;
  call.kernel = kernel_of(f, c.qk, c.copy);
  call.rope = &r;
  call.positions = positions_of(c);
  call.first = c.first;
  call.real = !c.times.empty();
  call.times = c.times.data();
  call.n = c.n;
  call.x = buf.data() + es * size_t(c.q.offset);
  call.heads = c.q.heads;
  call.token_stride = c.q.token_stride;
  call.head_stride = c.q.head_stride;
  call.k = c.k_null ? nullptr : buf.data() + es * size_t(c.k.offset);
  call.k_heads = c.k.heads;
  call.k_token_stride = c.k.token_stride;
  call.k_head_stride = c.k.head_stride;
  if (c.copy) {
    call.src = buf.data() + es * size_t(c.src.offset);
    call.src_token_stride = c.src.token_stride;
    call.src_head_stride = c.src.head_stride;
  }
  return ref::invoke(call);
}

// Index of the first differing element, or -1.
inline int64_t first_difference(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b, size_t es) {
  for (size_t k = 0; k < a.size(); k += es)
    if (std::memcmp(&a[k], &b[k], es) != 0) return int64_t(k / es);
  return -1;
}

inline std::string element_text(Format f, const std::vector<unsigned char> &b, int64_t e) {
  char buf[64];
  if (f == Format::kF32) {
    uint32_t v;
    std::memcpy(&v, &b[size_t(4 * e)], 4);
    std::snprintf(buf, sizeof buf, "%08x (%g)", unsigned(v), double(ref::float_of_bits(v)));
  } else {
    uint16_t v;
    std::memcpy(&v, &b[size_t(2 * e)], 2);
    std::snprintf(buf, sizeof buf, "%04x (%g)", unsigned(v), double(ref::load(f, b.data(), e)));
  }
  return buf;
}

// The call in every format on every path against the formula, byte for byte over the whole buffer.
inline void check_rotation(const Rope &rope, Exact &ex, const Rotation &c, uint64_t seed) {
  for (Format f : kFormats) {
    std::vector<unsigned char> in(size_t(c.elements) * ref::format_size(f));
    fill(f, in, seed + uint64_t(f), false);
    const std::vector<unsigned char> want = expected(rope, ex, c, f, in);
    for (posenc_isa isa : ref::paths())
      ref::on_path(isa, [&] {
        std::vector<unsigned char> got = in;
        INFO(rope.name << ", " << c.name << ", " << format_name(f) << " on " << posenc_isa_name(isa));
        REQUIRE(run(rope, c, f, got) == POSENC_OK);
        const int64_t e = first_difference(got, want, ref::format_size(f));
        if (e >= 0)
          FAIL_CHECK("first difference at element " << e << ": got " << element_text(f, got, e) << ", want "
                                                    << element_text(f, want, e) << ", input "
                                                    << element_text(f, in, e));
      });
  }
}

// The golden digests' helpers: SHA-256 of bytes, and floats as their bytes.
inline std::string digest(const std::vector<unsigned char> &b) {
  ref::Sha256 h;
  h.update(b.data(), b.size());
  return h.hex();
}
inline std::vector<unsigned char> as_bytes(const std::vector<float> &v) {
  std::vector<unsigned char> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A cos/sin cache written by write(cos_out, cos_stride, sin_out, sin_stride) for n tokens of h pairs, which
// must succeed: in vLLM's layout (one buffer, sin right after cos, both strides 2h) or in two buffers with
// gaps, both filled with `canary`; returns cos and sin as h + h floats per token, after checking that every
// float outside the rows kept its canary.
template <class Write>
std::vector<float> cache_between_canaries(int64_t h, int64_t n, bool vllm, float canary, Write write) {
  const int64_t cs = vllm ? 2 * h : h + 3, ss = vllm ? 2 * h : h + 1;
  std::vector<float> cbuf(size_t(n * cs + 5), canary), sbuf(size_t(n * ss + 5), canary);
  float *cos_out = cbuf.data() + 1, *sin_out = vllm ? cbuf.data() + 1 + h : sbuf.data() + 2;
  REQUIRE(write(cos_out, cs, sin_out, ss) == POSENC_OK);
  std::vector<float> out(size_t(n * 2 * h));
  std::vector<bool> row_c(cbuf.size(), false), row_s(sbuf.size(), false);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < h; ++i) {
      out[size_t(t * 2 * h + i)] = cos_out[t * cs + i];
      out[size_t(t * 2 * h + h + i)] = sin_out[t * ss + i];
      row_c[size_t(1 + t * cs + i)] = true;
      if (vllm)
        row_c[size_t(1 + h + t * ss + i)] = true;
      else
        row_s[size_t(2 + t * ss + i)] = true;
    }
  int64_t touched = 0;
  for (size_t k = 0; k < cbuf.size(); ++k) touched += !row_c[k] && ref::bits(cbuf[k]) != ref::bits(canary);
  for (size_t k = 0; k < sbuf.size(); ++k) touched += !row_s[k] && ref::bits(sbuf[k]) != ref::bits(canary);
  CHECK(touched == 0);
  return out;
}

// A golden rotation's bytes on the active path: `in` rotated in place by the library, which must accept it.
inline std::vector<unsigned char> rotated(const Rope &rope, const Rotation &c, Format f,
                                          std::vector<unsigned char> in) {
  REQUIRE(run(rope, c, f, in) == POSENC_OK);
  return in;
}

// Every path of this build reproduces every golden's checked-in hash; made(g) makes g's bytes on the active
// path (a cache, or a golden input rotated).
template <class Goldens, class Made>
void every_path_reproduces(const Goldens &goldens, Made made) {
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (const auto &g : goldens) {
        const std::vector<unsigned char> got = made(g);
        INFO(g.name << " on " << posenc_isa_name(isa));
        CHECK(digest(got) == g.sha256);
      }
    });
}

// [T,H,D]: token stride H*D (+ gap), head stride D.
inline Tensor thd(int64_t heads, int64_t d, int64_t gap = 0, int64_t offset = 0) {
  return Tensor{heads, heads * d + gap, d, offset};
}
// [H,T,D]: token stride D, head stride T*D (+ gap).
inline Tensor htd(int64_t heads, int64_t tokens, int64_t d, int64_t gap = 0, int64_t offset = 0) {
  return Tensor{heads, d, tokens * d + gap, offset};
}

inline int64_t end_of(const Tensor &t, int64_t n, int64_t d) {
  return t.offset + ref::rope_extent(n, t.heads, t.token_stride, t.head_stride, d);
}

// Positions of packed sequences (each restarting at 0), a decode batch (one step repeated), scattered.
inline std::vector<int64_t> packed(uint64_t seed, int64_t n) {
  std::vector<int64_t> p;
  int64_t next = 0;
  while (int64_t(p.size()) < n) {
    const uint64_t r = splitmix(seed);
    if (r % 13 == 0) next = 0;  // a new sequence
    if (r % 17 == 1)
      p.push_back(POSENC_PAD);  // padding
    else if (r % 11 == 2 && !p.empty())
      p.push_back(p.back() == POSENC_PAD ? 3 : p.back());  // a repeat
    else
      p.push_back(next++);
  }
  p.resize(size_t(n));
  return p;
}

}  // namespace rope_check
