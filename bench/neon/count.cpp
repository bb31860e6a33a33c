// posenc-count: runs one kernel REPS times, for guest instruction counts under qemu-user (bench/neon/counts.py
// runs it with the insn_count.c plugin at REPS = K and 3K: the difference is 2K calls, with start-up, buffer
// filling and every one-time setup of the first call removed). Built on aarch64 (the cross build) with the
// NEON peers; every posenc case forces its path.
//
//   posenc-count --list          one line per case: name, output elements per call, what it is
//   posenc-count NAME REPS       REPS calls of case NAME (REPS 0: only the setup); prints "elements N"
//
// Shapes are the report's (bench/shapes.cpp): table 512 x 2048; Llama-3-8B RoPE (head 128, 32 q + 8 kv
// heads, base 5e5, fused QKV, 2048-token prefill at positions 0 .. 2047, or one decode token at 100000);
// Qwen2.5-VL-7B's 3-axis RoPE (28 + 4 heads, mrope_section [16, 24, 24], a 2048-token prompt with a
// 1600-token image); 1024 fractional timesteps at d = 320 (bench/cases_times.cpp's shape). The inputs are
// xorshift values in [-1, 1), as in bench/cases_rope.cpp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "peers/peers.hpp"
#include "peers/rope.hpp"
#include "posenc/posenc.h"
#include "vl_prompt.hpp"

namespace {

uint64_t next(uint64_t &s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1DULL;
}
float f32_value(uint64_t r) { return float(r >> 40) * 0x1p-23f - 1.0f; }
uint16_t bf16_value(uint64_t r) {
  const float v = f32_value(r);
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return uint16_t(b >> 16);
}
uint16_t f16_value(uint64_t r) { return uint16_t(((r >> 63) << 15) | ((1 + (r >> 20) % 14) << 10) | (r & 0x3ff)); }

template <class T>
std::vector<T> filled(int64_t count, T (*value)(uint64_t)) {
  std::vector<T> v(static_cast<size_t>(count));
  uint64_t s = 11;
  for (auto &e : v) e = value(next(s));
  return v;
}

void check(posenc_status st, const char *what) {
  if (st != POSENC_OK) {
    std::fprintf(stderr, "posenc-count: %s: %s\n", what, posenc_status_string(st));
    std::exit(1);
  }
}
void force(posenc_isa isa) { check(posenc_force_isa(isa), posenc_isa_name(isa)); }

// A case: its output elements per call, and a setup that returns the call (state captured by value in
// shared buffers that live until exit).
struct Case {
  const char *name;
  double elements;
  const char *what;
  std::function<std::function<void()>()> setup;
};

constexpr int64_t kD = 512, kRows = 2048;  // the table shape
constexpr int64_t kHead = 128, kQ = 32, kK = 8, kTokens = 2048;
constexpr double kBase = 5e5;
constexpr int64_t kVocab = 32000;
constexpr int64_t kDecodePos = 100000;

posenc_spec table_spec() { return posenc_spec_default(kD); }

template <class T>
struct Qkv {
  std::vector<T> buf;
  std::vector<int64_t> pos;
  int64_t n, q_heads, k_heads, ts;
  T *q() { return buf.data(); }
  T *k() { return buf.data() + q_heads * kHead; }
};
template <class T>
std::shared_ptr<Qkv<T>> qkv(int64_t n, int64_t q_heads, int64_t k_heads, int64_t first, T (*value)(uint64_t)) {
  auto b = std::make_shared<Qkv<T>>();
  b->n = n;
  b->q_heads = q_heads;
  b->k_heads = k_heads;
  b->ts = (q_heads + 2 * k_heads) * kHead;
  b->buf = filled<T>(n * b->ts, value);
  for (int64_t t = 0; t < n; ++t) b->pos.push_back(first + t);
  return b;
}

posenc_rope *llama_rope() {
  static posenc_rope r = [] {
    posenc_rope x = posenc_rope_default(kHead);
    x.base = kBase;
    return x;
  }();
  return &r;
}

// Qwen2.5-VL-7B: the axis-major positions of bench/cases_rope_axes.cpp's VL prompt (200 text tokens, a 40 x 40
// image, then text), or one decode token at 100000 on every axis.
posenc_rope *qwen_rope() {
  static uint8_t axis[64];
  static posenc_rope r = [] {
    posenc_rope x = posenc_rope_default(kHead);
    x.base = 1e6;
    const int64_t sections[4] = {16, 24, 24, 0};
    check(posenc_rope_sections(&x, sections, POSENC_SECTIONS_CHUNKED, axis, nullptr), "sections");
    return x;
  }();
  return &r;
}
std::vector<int64_t> vl_positions(int64_t n) { return bench::vl_prompt_positions(n, 200, 40); }

template <class T, class Fn>
Case rope_qk_case(const char *name, const char *what, int64_t n, int64_t first, T (*value)(uint64_t), Fn fn) {
  return {name, double(n) * double(kQ + kK) * double(kHead), what, [=] {
            force(POSENC_ISA_NEON);
            auto b = qkv<T>(n, kQ, kK, first, value);
            return std::function<void()>([=] {
              check(fn(llama_rope(), b->pos.data(), 0, b->n, b->q(), b->q_heads, b->ts, kHead, b->k(), b->k_heads,
                       b->ts, kHead),
                    "rope_qk");
            });
          }};
}

const peers::RopeUnit &neon_rope() {
  static const peers::RopeUnit u = [] {
    for (const peers::RopeUnit &x : peers::rope_units())
      if (x.isa == POSENC_ISA_NEON) return x;
    std::fprintf(stderr, "posenc-count: no NEON RoPE peers in this build\n");
    std::exit(1);
  }();
  return u;
}
const peers::TablePeer &table_peer(const char *name) {
  for (const peers::TablePeer &p : peers::table_peers())
    if (std::strcmp(p.name, name) == 0) return p;
  std::fprintf(stderr, "posenc-count: no table peer %s in this build\n", name);
  std::exit(1);
}

// The RoPE peers: vLLM's cache-lookup rotation needs a cos_sin_cache row per position (2048 rows: the prefill's;
// a decode token reads one row, whatever its position, so row 2047 stands for 100000).
template <class Fn>
Case rope_peer_case(const char *name, const char *what, int64_t n, int64_t first, Fn pick) {
  return {name, double(n) * double(kQ + kK) * double(kHead), what, [=] {
            auto m = std::make_shared<peers::RopeModel>(kHead, kHead, kBase, kTokens);
            auto b = qkv<float>(n, kQ, kK, first, f32_value);
            auto scratch = std::make_shared<std::vector<float>>(size_t(kHead));
            const peers::RopeApplyFn fn = pick(neon_rope());
            return std::function<void()>([=] {
              const peers::Qk t{b->pos.data(), b->n,   b->q(),     b->q_heads, b->ts,
                                kHead,         b->k(), b->k_heads, b->ts,      kHead};
              fn(*m, t, peers::RopeScratch{nullptr, nullptr, nullptr, nullptr, scratch->data()});
            });
          }};
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const double table_elems = double(kD) * double(kRows);
  for (posenc_isa isa : {POSENC_ISA_NEON, POSENC_ISA_SCALAR}) {
    const bool neon = isa == POSENC_ISA_NEON;
    c.push_back({neon ? "table_f32/neon" : "table_f32/scalar", table_elems, "posenc_table_f32, 512 x 2048", [isa] {
                   force(isa);
                   auto out = std::make_shared<std::vector<float>>(size_t(kD * kRows));
                   return std::function<void()>([out] {
                     const posenc_spec s = table_spec();
                     check(posenc_table_f32(&s, 0, kRows, out->data(), kD), "table_f32");
                   });
                 }});
  }
  for (const char *peer : {"sleef_u35_neon", "sleef_u10_neon", "xsimd_neon"}) {
    c.push_back({peer, table_elems, "the same table from sincos of the float angle", [peer] {
                   const peers::TablePeer &p = table_peer(peer);
                   auto f = std::make_shared<peers::Freqs>(table_spec());
                   auto out = std::make_shared<std::vector<float>>(size_t(kD * kRows));
                   return std::function<void()>([p, f, out] { p.fn(*f, nullptr, 0, kRows, out->data(), kD); });
                 }});
  }
  c.push_back({"table_bf16/neon", table_elems, "posenc_table_bf16, 512 x 2048", [] {
                 force(POSENC_ISA_NEON);
                 auto out = std::make_shared<std::vector<uint16_t>>(size_t(kD * kRows));
                 return std::function<void()>([out] {
                   const posenc_spec s = table_spec();
                   check(posenc_table_bf16(&s, 0, kRows, out->data(), kD), "table_bf16");
                 });
               }});
  c.push_back({"rows_f32/neon", 32.0 * kD, "posenc_rows_f32, 32 scattered positions, d = 512", [] {
                 force(POSENC_ISA_NEON);
                 auto out = std::make_shared<std::vector<float>>(size_t(kD * 32));
                 auto pos = std::make_shared<std::vector<int64_t>>();
                 uint64_t s = 7;
                 for (int i = 0; i < 32; ++i) pos->push_back(int64_t(next(s) % 131072));
                 return std::function<void()>([out, pos] {
                   const posenc_spec sp = table_spec();
                   check(posenc_rows_f32(&sp, pos->data(), 32, out->data(), kD), "rows_f32");
                 });
               }});
  c.push_back({"timesteps_f32/neon", 1024.0 * 320, "posenc_timesteps_f32, 1024 fractional timesteps, d = 320", [] {
                 force(POSENC_ISA_NEON);
                 auto out = std::make_shared<std::vector<float>>(size_t(1024 * 320));
                 auto t = std::make_shared<std::vector<double>>();
                 uint64_t s = 3;
                 for (int i = 0; i < 1024; ++i) t->push_back(double(next(s) >> 11) * 0x1p-53 * 1000.0);
                 return std::function<void()>([out, t] {
                   posenc_spec sp = posenc_spec_default(320);  // ggml's timestep_embedding: cos then sin
                   sp.layout = POSENC_COS_SIN_HALVES;
                   check(posenc_timesteps_f32(&sp, t->data(), 1024, out->data(), 320), "timesteps_f32");
                 });
               }});
  c.push_back({"add_f32/neon", table_elems, "posenc_add_f32, 2048 rows of 512", [] {
                 force(POSENC_ISA_NEON);
                 auto x = std::make_shared<std::vector<float>>(filled<float>(kD * kRows, f32_value));
                 auto out = std::make_shared<std::vector<float>>(size_t(kD * kRows));
                 return std::function<void()>([x, out] {
                   const posenc_spec s = table_spec();
                   check(posenc_add_f32(&s, x->data(), kD, 1.0f, nullptr, 0, kRows, out->data(), kD), "add_f32");
                 });
               }});
  for (int fmt = 0; fmt < 3; ++fmt) {
    static const char *names[3] = {"embed_f32/neon", "embed_bf16/neon", "embed_f16/neon"};
    c.push_back({names[fmt], table_elems, "fused embedding + PE, vocab 32000, 2048 tokens, d = 512", [fmt] {
                   force(POSENC_ISA_NEON);
                   auto tok = std::make_shared<std::vector<int32_t>>();
                   uint64_t s = 5;
                   for (int64_t t = 0; t < kRows; ++t) tok->push_back(int32_t(next(s) % kVocab));
                   auto out = std::make_shared<std::vector<float>>(size_t(kD * kRows));
                   const float scale = 22.627417f;  // sqrt(512)
                   if (fmt == 0) {
                     auto tab = std::make_shared<std::vector<float>>(filled<float>(kVocab * kD, f32_value));
                     return std::function<void()>([=] {
                       const posenc_spec sp = table_spec();
                       check(posenc_embed_f32(&sp, tab->data(), kVocab, kD, tok->data(), scale, nullptr, 0, kRows,
                                              out->data(), kD),
                             "embed_f32");
                     });
                   }
                   auto tab = std::make_shared<std::vector<uint16_t>>(
                       filled<uint16_t>(kVocab * kD, fmt == 1 ? bf16_value : f16_value));
                   return std::function<void()>([=] {
                     const posenc_spec sp = table_spec();
                     check((fmt == 1 ? posenc_embed_bf16 : posenc_embed_f16)(&sp, tab->data(), kVocab, kD, tok->data(),
                                                                             scale, nullptr, 0, kRows, out->data(), kD),
                           "embed_16");
                   });
                 }});
  }
  c.push_back({"rope_cache_f32/neon", double(kTokens) * kHead, "posenc_rope_cache_f32, 2048 x 128 (h = 64)", [] {
                 force(POSENC_ISA_NEON);
                 auto out = std::make_shared<std::vector<float>>(size_t(kTokens * kHead));
                 return std::function<void()>([out] {
                   check(posenc_rope_cache_f32(llama_rope(), nullptr, 0, kTokens, out->data(), kHead,
                                               out->data() + kHead / 2, kHead),
                         "rope_cache");
                 });
               }});
  c.push_back({"rope_cache_sleef_u35_neon", double(kTokens) * kHead,
               "the same cache from SLEEF u35 advsimd sincos of the float angle", [] {
                 auto m = std::make_shared<peers::RopeModel>(kHead, kHead, kBase, 0);
                 auto pos = std::make_shared<std::vector<int64_t>>();
                 for (int64_t t = 0; t < kTokens; ++t) pos->push_back(t);
                 auto out = std::make_shared<std::vector<float>>(size_t(kTokens * kHead));
                 const peers::RopeCacheFn fn = neon_rope().sleef_u35;
                 return std::function<void()>([=] { fn(*m, pos->data(), kTokens, out->data()); });
               }});
  c.push_back(rope_qk_case<float>("rope_qk_f32/neon", "posenc_rope_qk_f32, Llama-3-8B prefill, 2048 tokens", kTokens, 0,
                                  f32_value, posenc_rope_qk_f32));
  c.push_back(rope_qk_case<uint16_t>("rope_qk_bf16/neon", "posenc_rope_qk_bf16, the same prefill", kTokens, 0,
                                     bf16_value, posenc_rope_qk_bf16));
  c.push_back(rope_qk_case<uint16_t>("rope_qk_f16/neon", "posenc_rope_qk_f16, the same prefill", kTokens, 0, f16_value,
                                     posenc_rope_qk_f16));
  c.push_back(rope_qk_case<float>("rope_qk_f32_decode/neon", "posenc_rope_qk_f32, one decode token at 100000", 1,
                                  kDecodePos, f32_value, posenc_rope_qk_f32));
  for (int decode = 0; decode < 2; ++decode) {
    const int64_t n = decode ? 1 : kTokens;
    c.push_back({decode ? "rope_qk_f32_axes3_decode/neon" : "rope_qk_f32_axes3/neon", double(n) * (28 + 4) * kHead,
                 decode ? "posenc_rope_qk_f32, Qwen2.5-VL-7B 3-axis, one decode token at 100000"
                        : "posenc_rope_qk_f32, Qwen2.5-VL-7B 3-axis, 2048 tokens with a 1600-token image",
                 [n, decode] {
                   force(POSENC_ISA_NEON);
                   auto b = qkv<float>(n, 28, 4, 0, f32_value);
                   auto pos = std::make_shared<std::vector<int64_t>>(decode ? std::vector<int64_t>(3, kDecodePos)
                                                                            : vl_positions(n));
                   return std::function<void()>([=] {
                     check(posenc_rope_qk_f32(qwen_rope(), pos->data(), 0, n, b->q(), 28, b->ts, kHead, b->k(), 4,
                                              b->ts, kHead),
                           "rope_qk_axes");
                   });
                 }});
  }
  c.push_back(rope_peer_case("rope_cache_lookup_neon",
                             "vLLM CPU-style rotation from a float cos/sin cache, NEON intrinsics, the same prefill",
                             kTokens, 0, [](const peers::RopeUnit &u) { return u.cache_lookup; }));
  c.push_back(rope_peer_case("rope_cache_lookup_neon_decode", "the same, one decode token", 1, kTokens - 1,
                             [](const peers::RopeUnit &u) { return u.cache_lookup; }));
  c.push_back(rope_peer_case("rope_llamacpp_style", "bench/peers' copy of ggml's scalar NEOX loop, the same prefill",
                             kTokens, 0, [](const peers::RopeUnit &u) { return u.llamacpp; }));
  return c;
}

}  // namespace

int main(int argc, char **argv) {
  const std::vector<Case> all = cases();
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Case &c : all) std::printf("%s\t%.0f\t%s\n", c.name, c.elements, c.what);
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: posenc-count --list | posenc-count NAME REPS\n");
    return 2;
  }
  for (const Case &c : all) {
    if (std::strcmp(c.name, argv[1]) != 0) continue;
    const long reps = std::atol(argv[2]);
    const std::function<void()> call = c.setup();
    for (long i = 0; i < reps; ++i) call();
    std::printf("elements %.0f\n", c.elements);
    return 0;
  }
  std::fprintf(stderr, "posenc-count: no case %s (--list)\n", argv[1]);
  return 2;
}
