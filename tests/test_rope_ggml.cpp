// ggml's RoPE frequencies and magnitude (posenc_rope_ggml_frequencies, lib/setup/rope_powers.hpp: what the ggml
// integration rotates by) against MPFR: each frequency and the magnitude must be the correctly rounded double of ggml's
// formula evaluated in real arithmetic on its float parameters. The reference re-traces ggml's CPU code
// (ggml-cpu/ops.cpp: rope_yarn, rope_yarn_ramp; ggml.c: ggml_rope_yarn_corr_dims) with every float operation
// replaced by its real value, except where ggml's correction dimension is not finite: there it takes ggml's
// own IEEE value (n_ctx_orig = 0, as test-backend-ops passes, gives low = 0 and high = -inf).
#include <mpfr.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "setup/rope_powers.hpp"
#include "support/ggml_rope_reference.hpp"

using ggml_ref::corr_dim;
using ggml_ref::float_cd;
using ggml_ref::vision_index;

namespace {

struct Case {
  std::string name;
  int64_t n_dims, pairs;
  std::vector<int64_t> index;  // empty: i
  std::vector<float> factors;  // empty: none
  float base, fs, ef, af, bf, bs;
  int64_t n_ctx_orig;

  ggml_ref::Params params() const {
    return ggml_ref::Params{n_dims, pairs, index, factors, base, fs, ef, af, bf, bs, n_ctx_orig};
  }
  posenc_ggml_rope_params get() const {
    posenc_ggml_rope_params g{};
    g.n_dims = n_dims;
    g.pairs = pairs;
    g.index = index.empty() ? nullptr : index.data();
    g.factors = factors.empty() ? nullptr : factors.data();
    g.freq_base = base;
    g.freq_scale = fs;
    g.ext_factor = ef;
    g.attn_factor = af;
    g.beta_fast = bf;
    g.beta_slow = bs;
    g.n_ctx_orig = n_ctx_orig;
    return g;
  }
};

uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The call against the reference: every frequency and the magnitude bit for bit, or INVALID with nothing
// written when the reference says ggml's value is not one posenc takes.
void check(const Case &c) {
  INFO(c.name << ": n_dims " << c.n_dims << " pairs " << c.pairs << " base " << c.base << " fs " << c.fs << " ef "
              << c.ef << " af " << c.af << " beta " << c.bf << "/" << c.bs << " n_ctx_orig " << c.n_ctx_orig
              << (c.factors.empty() ? "" : " with factors"));
  const ggml_ref::Expect e = ggml_ref::reference(c.params());
  std::vector<double> got(size_t(c.pairs), -7.0);
  double m = -7.0;
  const posenc_ggml_rope_params g = c.get();
  const posenc_status st = posenc_rope_ggml_frequencies(&g, got.data(), &m);
  if (!e.valid) {
    REQUIRE(st == POSENC_ERR_INVALID);
    for (double v : got) REQUIRE(v == -7.0);
    REQUIRE(m == -7.0);
    return;
  }
  REQUIRE(st == POSENC_OK);
  for (int64_t i = 0; i < c.pairs; ++i) {
    INFO("pair " << i << ": got " << got[size_t(i)] << " expected " << e.freq[size_t(i)]);
    REQUIRE(bits_of(got[size_t(i)]) == bits_of(e.freq[size_t(i)]));
  }
  INFO("magnitude: got " << m << " expected " << e.m);
  REQUIRE(bits_of(m) == bits_of(e.m));
}

uint64_t splitmix(uint64_t &s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
float uniform(uint64_t &s, float lo, float hi) { return lo + (hi - lo) * float(splitmix(s) >> 40) * 0x1p-24f; }

std::vector<float> factors(int64_t n, uint64_t seed) {  // test-backend-ops' range [0.9, 1.1]
  std::vector<float> f;
  for (int64_t i = 0; i < n; ++i) f.push_back(uniform(seed, 0.9f, 1.1f));
  return f;
}

}  // namespace

TEST_CASE("ggml: test-backend-ops' RoPE parameters (n_ctx_orig 0, beta 1 / 1), every mode's geometry", "[rope][ggml]") {
  const int64_t vision_sections[4] = {20, 20, 0, 0};
  struct Geometry {
    const char *name;
    int64_t n_dims, pairs;
    std::vector<int64_t> index;
  };
  const Geometry geometries[] = {
      {"llama 7B, NORMAL / NEOX / MROPE / IMROPE", 128, 64, {}},
      {"partial rotary 20 of 80", 20, 10, {}},
      {"16 of 16", 16, 8, {}},
      {"qwen2vl ViT, VISION n_dims 40", 40, 40, vision_index(vision_sections, 40)},
  };
  for (const Geometry &g : geometries)
    for (float fs : {1.0f, 1.4245f})
      for (float ef : {0.0f, 0.7465f})
        for (float af : {1.0f, 1.4245f})
          for (bool ff : {false, true})
            check(Case{g.name, g.n_dims, g.pairs, g.index, ff ? factors(g.pairs, 5) : std::vector<float>{}, 10000.0f,
                       fs, ef, af, 1.0f, 1.0f, 0});
}

TEST_CASE("ggml: llama.cpp's YaRN configurations (n_ctx_orig, beta 32 / 1, freq_scale 1 / factor)", "[rope][ggml]") {
  // Qwen2.5 with YaRN factor 4 over 32768; DeepSeek-V2 (factor 40 over 4096, qk_rope 64, llama.cpp's attn_factor
  // 1 / (1 + 0.1 ln(1 / freq_scale)) that cancels ggml's magnitude); Llama 2 with YaRN factor 2; base below 1.
  check(Case{"qwen2.5 yarn", 128, 64, {}, {}, 1000000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 32768});
  check(Case{
      "deepseek-v2", 64, 32, {}, {}, 10000.0f, 1.0f / 40, 1.0f, 1.0f / (1.0f + 0.1f * logf(40.0f)), 32.0f, 1.0f, 4096});
  check(Case{"llama 2 yarn x2", 128, 64, {}, {}, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 4096});
  check(Case{"partial ramp, ext 0.5", 96, 48, {}, factors(48, 9), 500000.0f, 0.125f, 0.5f, 1.25f, 24.0f, 2.0f, 8192});
  check(Case{"base below 1", 32, 16, {}, {}, 0.5f, 0.75f, 1.0f, 1.0f, 32.0f, 1.0f, 4096});
  check(Case{"negative ext_factor", 64, 32, {}, {}, 10000.0f, 0.5f, -0.75f, 1.0f, 32.0f, 1.0f, 2048});
}

TEST_CASE("ggml: random parameters, including correction dimensions near an integer (decided on the real value)",
          "[rope][ggml]") {
  uint64_t seed = 2024;
  int near_integer = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n_dims = 2 * (1 + int64_t(splitmix(seed) % 80));
    Case c{"random",
           n_dims,
           n_dims / 2,
           {},
           {},
           uniform(seed, 2.0f, 2e6f),
           uniform(seed, 0.01f, 4.0f),
           uniform(seed, -1.0f, 2.0f),
           uniform(seed, 0.5f, 2.0f),
           uniform(seed, 8.0f, 64.0f),
           uniform(seed, 0.25f, 4.0f),
           int64_t(splitmix(seed) % 200000)};
    if (trial % 3 == 0) c.factors = factors(c.pairs, seed);
    check(c);
  }
  // Correction dimensions whose float value floors to another integer than the real one: posenc follows the
  // real value, as it does for HF's YaRN. The base is chosen to put the real cd(beta_fast) next to an integer;
  // those whose float floor differs are checked like the others.
  for (int trial = 0; trial < 4000 && near_integer < 8; ++trial) {
    Case c{"near an integer",
           128,
           64,
           {},
           {},
           0.0f,
           0.25f,
           1.0f,
           1.0f,
           uniform(seed, 8.0f, 64.0f),
           1.0f,
           1024 + int64_t(splitmix(seed) % 100000)};
    const double ratio = double(c.n_ctx_orig) / (2.0 * M_PI * double(c.bf));
    if (ratio <= 1.5) continue;
    const double target = double(2 + splitmix(seed) % 40);  // cd = n_dims ln(ratio) / (2 ln base)
    c.base = float(std::exp(double(c.n_dims) * std::log(ratio) / (2.0 * target)));
    const float f = float_cd(c.params(), c.bf);
    if (std::floor(double(f)) == corr_dim(c.params(), c.bf, false)) continue;
    ++near_integer;
    check(c);
  }
  CHECK(near_integer > 0);
}

TEST_CASE("ggml: correction dimensions at ggml's infinities, the exact-zero blend, the limits", "[rope][ggml]") {
  // beta 0 (n / 0 = inf), beta inf (n / inf = 0), base 1 (ln base = 0, both signs of the log), huge n_ctx_orig
  // (low beyond every pair: the step at low), cd far below 0 (a high of -inf-like size).
  check(Case{"beta_fast 0", 64, 32, {}, {}, 10000.0f, 0.5f, 1.0f, 1.0f, 0.0f, 1.0f, 4096});
  check(Case{"beta_slow inf", 64, 32, {}, {}, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, INFINITY, 4096});
  check(Case{"base 1, ratio above 1", 64, 32, {}, {}, 1.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 4096});
  check(Case{"base 1, ratio below 1", 64, 32, {}, {}, 1.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 100});
  check(Case{"huge n_ctx_orig", 64, 32, {}, {}, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 2147483647});
  check(Case{"base near 1", 64, 32, {}, {}, 1.0000001f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 1000000});
  check(Case{"base near 1, below", 64, 32, {}, {}, 0.99999994f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 1000000});
  check(Case{"|cd| beyond 2^40", 1 << 20, 4, {}, {}, 1.0000001f, 0.5f, 1.0f, 1.0f, 0.001f, 0.0001f, 2000000000});
  check(
      Case{"|cd| beyond 2^40, below", 1 << 20, 4, {}, {}, 0.99999994f, 0.5f, 1.0f, 1.0f, 0.001f, 0.0001f, 2000000000});
  check(Case{"negative n_ctx_orig and beta: a positive ratio",
             64,
             32,
             {},
             {},
             10000.0f,
             0.5f,
             1.0f,
             1.0f,
             -32.0f,
             -1.0f,
             -4096});
  // freq_scale 2, ext_factor 2, ramp 1 at pair 0: 2 + (1 - 2) 2 = 0, an exactly zero frequency
  check(Case{"zero blend", 16, 8, {}, {}, 10000.0f, 2.0f, 2.0f, 1.0f, 1.0f, 1.0f, 0});
  // ext_factor 0 ignores the correction dimensions: a negative n_ctx_orig is fine then
  check(Case{"negative n_ctx_orig, no YaRN", 64, 32, {}, {}, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, -5});
  // the magnitude just inside [2^-64, 2^64]
  check(Case{"small magnitude", 8, 4, {}, {}, 10000.0f, 1.0f, 0.0f, 0x1p-64f, 32.0f, 1.0f, 0});
  // a large index (VISION's restart makes none, but the function takes any below 2^31)
  check(Case{"large index", 8, 4, {0, 1, 1000, 2147483647}, {}, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 0});
}

TEST_CASE("ggml: what posenc cannot take is INVALID, with nothing written", "[rope][ggml]") {
  const Case good{"good", 64, 32, {}, {}, 10000.0f, 0.5f, 1.0f, 1.0f, 32.0f, 1.0f, 4096};
  std::vector<Case> bad;
  auto with = [&](const char *name, auto change) {
    Case c = good;
    c.name = name;
    change(c);
    bad.push_back(c);
  };
  with("odd n_dims", [](Case &c) { c.n_dims = 63; });
  with("n_dims 0", [](Case &c) { c.n_dims = 0; });
  with("no pairs", [](Case &c) { c.pairs = 0; });
  with("base 0", [](Case &c) { c.base = 0.0f; });
  with("base inf", [](Case &c) { c.base = INFINITY; });
  with("base NaN", [](Case &c) { c.base = NAN; });
  with("freq_scale 0", [](Case &c) { c.fs = 0.0f; });
  with("freq_scale negative", [](Case &c) { c.fs = -0.5f; });
  with("ext_factor NaN", [](Case &c) { c.ef = NAN; });
  with("attn_factor 0", [](Case &c) { c.af = 0.0f; });
  with("attn_factor negative", [](Case &c) { c.af = -1.0f; });
  with("attn_factor below 2^-64", [](Case &c) {
    c.af = 0x1p-70f;
    c.ef = 0.0f;
  });
  with("magnitude <= 0 (freq_scale above e^10)", [](Case &c) { c.fs = 30000.0f; });
  with("factor 0", [](Case &c) { c.factors.assign(32, 1.0f), c.factors[5] = 0.0f; });
  with("factor NaN", [](Case &c) { c.factors.assign(32, 1.0f), c.factors[31] = NAN; });
  with("factor inf", [](Case &c) { c.factors.assign(32, 1.0f), c.factors[0] = INFINITY; });
  with("negative index", [](Case &c) { c.index.assign(32, 0), c.index[3] = -1; });
  with("index 2^31", [](Case &c) { c.index.assign(32, 0), c.index[3] = int64_t(1) << 31; });
  with("negative n_ctx_orig with YaRN (ln of a negative ratio)", [](Case &c) { c.n_ctx_orig = -4096; });
  with("n_ctx_orig 0 and beta 0 (0 / 0)", [](Case &c) {
    c.n_ctx_orig = 0;
    c.bf = 0.0f;
  });
  with("beta NaN", [](Case &c) { c.bs = NAN; });
  with("n_ctx_orig beyond int32", [](Case &c) { c.n_ctx_orig = int64_t(1) << 31; });
  for (const Case &c : bad) {
    INFO(c.name);
    std::vector<double> got(64, -7.0);
    double m = -7.0;
    const posenc_ggml_rope_params g = c.get();
    REQUIRE(posenc_rope_ggml_frequencies(&g, got.data(), &m) == POSENC_ERR_INVALID);
    for (double v : got) REQUIRE(v == -7.0);
    REQUIRE(m == -7.0);
  }
  // The reference agrees about those it models (the NaN ramps and the magnitude range).
  for (const Case &c : bad)
    if (c.name.find("ratio") != std::string::npos || c.name.find("0 / 0") != std::string::npos ||
        c.name.find("magnitude") != std::string::npos)
      check(c);
}

TEST_CASE("posenc_rope_ggml_frequencies refuses NULL arguments and writes nothing", "[rope][ggml]") {
  posenc_ggml_rope_params g{};
  g.n_dims = 8;
  g.pairs = 4;
  g.freq_base = 10000.0f;
  g.freq_scale = 1.0f;
  g.attn_factor = 1.0f;
  std::vector<double> f(4, -7.0);
  double m = -7.0;
  CHECK(posenc_rope_ggml_frequencies(nullptr, f.data(), &m) == POSENC_ERR_NULL);
  CHECK(posenc_rope_ggml_frequencies(&g, nullptr, &m) == POSENC_ERR_NULL);
  CHECK(posenc_rope_ggml_frequencies(&g, f.data(), nullptr) == POSENC_ERR_NULL);
  CHECK(f == std::vector<double>(4, -7.0));
  CHECK(m == -7.0);
  REQUIRE(posenc_rope_ggml_frequencies(&g, f.data(), &m) == POSENC_OK);
  CHECK(f[0] == 1.0);
  CHECK(f[2] == 0.01);  // 10000^(-4/8): the double nearest 1/100
  CHECK(m == 1.0);
}
