// RoPE (issue 15): posenc_rope_qk_f32 on every path against the runtimes' ways of rotating q and k
// (peers/rope.hpp) and the in-place bound; the bf16 / f16 rows; posenc_rope_cache_f32 against SLEEF u35 on
// the float32 angle; and the setup of a new explicit-frequency spec.
//   rope_qk_f32/<impl>/d=<head_dim>/n=<tokens>/r=<r>/q=<q heads>/k=<k heads>/pos=<kind>
//   rope_cache_f32/<impl>/d=<r>/n=<rows>/pos=<kind>[/freq=fresh|cached]
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"
#include "peers/rope.hpp"

namespace bench {
namespace {

constexpr int64_t kMaxPos = 131072;  // the cache-lookup peer's cos_sin_cache rows (Llama 3.1: 128k)
constexpr int64_t kDecodePos = 100000;

// xorshift64*, as buffers.cpp: every run measures the same inputs.
uint64_t next(uint64_t &s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1DULL;
}

const int64_t *rope_positions(const std::string &kind, int64_t n) {
  static std::map<std::string, std::vector<int64_t>> made;
  std::vector<int64_t> &v = made[kind + ":" + std::to_string(n)];
  if (v.empty()) {
    uint64_t s = 7;
    for (int64_t t = 0; t < n; ++t)
      v.push_back(kind == "prefill" ? t : kind == "decode" ? kDecodePos + t : int64_t(next(s) % kMaxPos));
  }
  return v.data();
}

// The fused QKV buffer of a shape, filled once with values in [-1, 1) (float32, or bfloat16 / binary16
// bits). Rotations keep the values in range, so the cases may keep rotating the same buffer.
template <class T>
T *qkv(const RopeShape &s, const char *role, T (*value)(uint64_t)) {
  static std::map<std::string, std::pair<void *, int64_t>> filled;
  const int64_t count = s.n * (s.q_heads + 2 * s.k_heads) * s.head_dim;
  T *p = buffer_of<T>(role, count);
  auto &f = filled[role];
  if (f.first != p || f.second < count) {
    uint64_t st = 11;
    for (int64_t e = 0; e < count; ++e) p[e] = value(next(st));
    f = {p, count};
  }
  return p;
}
float f32_value(uint64_t r) { return float(r >> 40) * 0x1p-23f - 1.0f; }
uint16_t bf16_value(uint64_t r) {  // a value in [-1, 1) truncated to bfloat16 is still one
  const float v = f32_value(r);
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return uint16_t(b >> 16);
}
uint16_t f16_value(uint64_t r) {  // sign, a normal exponent below 1.0, any mantissa
  return uint16_t(((r >> 63) << 15) | ((1 + (r >> 20) % 14) << 10) | (r & 0x3ff));
}

template <class T>
peers::QkOf<T> views(const RopeShape &s, T *buf) {
  const int64_t ts = (s.q_heads + 2 * s.k_heads) * s.head_dim;
  return {rope_positions(s.pos, s.n),   s.n,       buf, s.q_heads, ts, s.head_dim,
          buf + s.q_heads * s.head_dim, s.k_heads, ts,  s.head_dim};
}

posenc_rope spec_of(const RopeShape &s) {
  posenc_rope rope = posenc_rope_default(s.r);
  rope.base = s.base;
  return rope;
}

// The runtime's per-model state, built once per (r, head_dim, base): 64 MiB of cos_sin_cache at r = 128.
const peers::RopeModel &model(const RopeShape &s) {
  static std::map<std::string, std::unique_ptr<peers::RopeModel>> models;
  auto &m = models[std::to_string(s.r) + "/" + std::to_string(s.head_dim) + "/" + std::to_string(s.base)];
  if (!m) m = std::make_unique<peers::RopeModel>(s.r, s.head_dim, s.base, kMaxPos);
  return *m;
}

peers::RopeScratch scratch(const RopeShape &s) {
  const int64_t heads = std::max(s.q_heads, s.k_heads);
  return {buffer_of<float>("rope_cos", s.n * s.r), buffer_of<float>("rope_sin", s.n * s.r),
          buffer_of<float>("rope_t0", s.n * heads * s.r), buffer_of<float>("rope_t1", s.n * heads * s.r),
          buffer_of<float>("rope_cache", s.head_dim)};
}

Case qk_case(const char *kernel, const std::string &impl, const RopeShape &s, double elem_size) {
  Case c = make_case(kernel, impl, s.head_dim, s.n, 0);
  c.extra = {
      {"r", std::to_string(s.r)}, {"q", std::to_string(s.q_heads)}, {"k", std::to_string(s.k_heads)}, {"pos", s.pos}};
  c.elements = double(s.n) * double(s.q_heads + s.k_heads) * double(s.r);  // rotated elements
  c.bytes = 2.0 * c.elements * elem_size;                                  // each read and written once
  return c;
}

template <class T>
using QkCall = posenc_status (*)(const posenc_rope *, const int64_t *, int64_t, int64_t, T *, int64_t, int64_t, int64_t,
                                 T *, int64_t, int64_t, int64_t);

template <class T>
void add_posenc_qk(const char *kernel, QkCall<T> call, const RopeShape &s, const char *role, T (*value)(uint64_t)) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, qk_case(kernel, posenc_isa_name(isa), s, sizeof(T)));
    c.prepare = [=] {
      const posenc_rope rope = spec_of(s);
      const peers::QkOf<T> t = views(s, qkv<T>(s, role, value));
      return Work([=] {
        return call(&rope, t.positions, 0, t.n, t.q, t.q_heads, t.q_token_stride, t.q_head_stride, t.k, t.k_heads,
                    t.k_token_stride, t.k_head_stride);
      });
    };
    add(std::move(c));
  }
}

void add_peer(const std::string &impl, posenc_isa needs, peers::RopeApplyFn fn, const RopeShape &s) {
  Case c = qk_case("rope_qk_f32", impl, s, sizeof(float));
  c.isa = needs;
  c.prepare = [=] {
    const peers::RopeModel *m = &model(s);
    const peers::Qk t = views(s, qkv<float>(s, "rope_qkv_f32", f32_value));
    const peers::RopeScratch sc = scratch(s);
    return Work([=] {
      fn(*m, t, sc);
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

void add_qk_f32(const RopeShape &s) {
  add_posenc_qk<float>("rope_qk_f32", posenc_rope_qk_f32, s, "rope_qkv_f32", f32_value);
  for (const peers::RopeUnit &u : peers::rope_units()) add_peer(u.cache_lookup_name, u.isa, u.cache_lookup, s);
  const peers::RopeUnit best = peers::best_rope();
  add_peer("hf_naive", best.isa, best.hf_naive, s);
  add_peer("llamacpp", best.isa, best.llamacpp, s);
  Case c = qk_case("rope_qk_f32", "inplace", s, sizeof(float));
  c.isa = best.isa;
  c.prepare = [=, fn = best.inplace] {
    const peers::Qk t = views(s, qkv<float>(s, "rope_qkv_f32", f32_value));
    return Work([=] {
      fn(t, s.r, 1.0f);  // through a pointer into another unit: the compiler cannot drop the pass
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

void add_qk_half(const RopeShape &s) {
  add_posenc_qk<uint16_t>("rope_qk_bf16", posenc_rope_qk_bf16, s, "rope_qkv_bf16", bf16_value);
  add_posenc_qk<uint16_t>("rope_qk_f16", posenc_rope_qk_f16, s, "rope_qkv_f16", f16_value);
  const peers::RopeUnit best = peers::best_rope();
  for (const bool bf16 : {true, false}) {
    Case c = qk_case(bf16 ? "rope_qk_bf16" : "rope_qk_f16", "inplace", s, sizeof(uint16_t));
    c.isa = best.isa;
    c.prepare = [=, fn = best.inplace16] {
      const peers::Qk16 t =
          views(s, bf16 ? qkv<uint16_t>(s, "rope_qkv_bf16", bf16_value) : qkv<uint16_t>(s, "rope_qkv_f16", f16_value));
      return Work([=] {
        fn(t, s.r, 0);
        return POSENC_OK;
      });
    };
    add(std::move(c));
  }
}

// rope_cache_f32 in vLLM's layout (cos || sin rows of r floats).
Case cache_case(const std::string &impl, const RopeShape &s) {
  Case c = make_case("rope_cache_f32", impl, s.r, s.n, sizeof(float));
  c.extra = {{"pos", s.pos}};
  return c;
}

void add_cache(const RopeShape &s) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, cache_case(posenc_isa_name(isa), s));
    c.prepare = [=] {
      const posenc_rope rope = spec_of(s);
      const int64_t *pos = rope_positions(s.pos, s.n);
      float *out = buffer_of<float>("out", s.n * s.r);
      return Work([=] { return posenc_rope_cache_f32(&rope, pos, 0, s.n, out, s.r, out + s.r / 2, s.r); });
    };
    add(std::move(c));
  }
  for (const peers::RopeUnit &u : peers::rope_units()) {
    if (!u.sleef_u35) continue;
    Case c = cache_case(u.sleef_name, s);
    c.isa = u.isa;
    c.prepare = [=, fn = u.sleef_u35] {
      // the float32 frequencies only: no cos_sin_cache is built for this model
      static std::map<std::string, std::unique_ptr<peers::RopeModel>> models;
      auto &m = models[std::to_string(s.r) + "/" + std::to_string(s.base)];
      if (!m) m = std::make_unique<peers::RopeModel>(s.r, s.r, s.base, 0);
      const peers::RopeModel *mp = m.get();
      const int64_t *pos = rope_positions(s.pos, s.n);
      float *out = buffer_of<float>("out", s.n * s.r);
      return Work([=] {
        fn(*mp, pos, s.n, out);
        return POSENC_OK;
      });
    };
    add(std::move(c));
  }
}

// The setup of an explicit-frequency spec, r = 128, one row at position 100000: "fresh" passes frequencies
// the library has not seen before on every call (those of base 5e5 times 1 + k 2^-32 on call k: new values,
// as dynamic NTK's base grown at each decode step gives), "cached" the same ones every call.
void add_setup() {
  constexpr int64_t r = 128;
  for (const char *which : {"fresh", "cached"}) {
    for (posenc_isa isa : paths()) {
      Case c = on_path(isa, make_case("rope_cache_f32", posenc_isa_name(isa), r, 1, sizeof(float)));
      c.extra = {{"pos", "decode"}, {"freq", which}};
      const bool fresh = std::string(which) == "fresh";
      c.prepare = [fresh] {
        struct State {
          std::vector<double> f0, f;
          uint64_t k = 0;
        };
        auto st = std::make_shared<State>();
        for (int64_t i = 0; i < r / 2; ++i) st->f0.push_back(std::pow(5e5, -2.0 * double(i) / double(r)));
        st->f = st->f0;
        static uint64_t calls = 0;  // shared by every fresh case: no two calls of the run repeat a spec
        float *out = buffer_of<float>("out", r);
        const int64_t *pos = rope_positions("decode", 1);
        return Work([st, fresh, out, pos] {
          if (fresh) {
            const double m = 1.0 + double(++calls) * 0x1p-32;
            for (size_t i = 0; i < st->f.size(); ++i) st->f[i] = st->f0[i] * m;
          }
          posenc_rope rope = posenc_rope_default(r);
          rope.freq = st->f.data();
          return posenc_rope_cache_f32(&rope, pos, 0, 1, out, r, out + r / 2, r);
        });
      };
      add(std::move(c));
    }
  }
}

}  // namespace

void add_rope_cases(const Plan &plan) {
  for (const RopeShape &s : plan.rope) add_qk_f32(s);
  for (const RopeShape &s : plan.rope_half) add_qk_half(s);
  for (const RopeShape &s : plan.rope_cache) add_cache(s);
  add_setup();
}

}  // namespace bench
