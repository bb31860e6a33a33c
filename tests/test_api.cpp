// The C ABI's promises on bad input: the documented status, nothing written (canary-filled buffers stay
// byte-identical), and the ISA functions. The full hardening matrix lives in test_hardening.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "posenc_version.h"
#include "support/paths.hpp"

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

struct Canary {
  std::vector<float> buf = std::vector<float>(4096, -7.25f);
  bool intact() const {
    for (float v : buf)
      if (std::memcmp(&v, &buf[0], 4) != 0 || v != -7.25f) return false;
    return true;
  }
};

posenc_status table(const posenc_spec &s, int64_t first, int64_t n, int64_t stride, Canary &c) {
  return posenc_table_f32(&s, first, n, c.buf.data(), stride);
}

}  // namespace

TEST_CASE("bad specs are INVALID and write nothing", "[api]") {
  Canary c;
  posenc_spec s = posenc_spec_default(8);
  REQUIRE(table(s, 0, 2, 8, c) == POSENC_OK);
  // check_spec remembers the last valid spec of each thread (s, from here on): every bad spec below differs
  // from it in one field and must still be caught.
  auto bad = [&](posenc_spec b) {
    Canary k;
    const posenc_status st = table(b, 0, 2, 8, k);
    CHECK(k.intact());
    return st;
  };
  posenc_spec b = s;
  b.d_model = 0;
  CHECK(bad(b) == POSENC_ERR_INVALID);
  b.d_model = -3;
  CHECK(bad(b) == POSENC_ERR_INVALID);
  for (double base : {0.0, -1.0, kNaN, kInf, -kInf}) {
    b = s;
    b.base = base;
    CHECK(bad(b) == POSENC_ERR_INVALID);
  }
  for (double den : {-1.0, kNaN, kInf, -0.5}) {
    b = s;
    b.freq_denominator = den;
    CHECK(bad(b) == POSENC_ERR_INVALID);
  }
  for (double sc : {kNaN, kInf, -kInf, 0x1p1000, -0x1p1001}) {
    b = s;
    b.position_scale = sc;
    CHECK(bad(b) == POSENC_ERR_INVALID);
  }
  b = s;
  int layout = 3;
  std::memcpy(&b.layout, &layout, sizeof layout);
  CHECK(bad(b) == POSENC_ERR_INVALID);
  layout = -1;
  std::memcpy(&b.layout, &layout, sizeof layout);
  CHECK(bad(b) == POSENC_ERR_INVALID);
  b = s;  // a frequency base^(-i/D) of 2^1000 or more: base < 1 with a small denominator
  b.base = 0.5;
  b.freq_denominator = 0.003;
  CHECK(bad(b) == POSENC_ERR_INVALID);
  b.freq_denominator = 0.01;  // 2^(3/0.01) = 2^300 is fine
  Canary ok;
  CHECK(table(b, 0, 2, 8, ok) == POSENC_OK);
  // An all-zero spec is invalid, on a thread that has seen no valid spec (the memory starts empty) and after one.
  posenc_status first_call = POSENC_OK;
  bool first_intact = false;
  std::thread([&] {  // no Catch2 assertion on this thread
    Canary k;
    const posenc_spec zero{};
    first_call = table(zero, 0, 2, 8, k);
    first_intact = k.intact();
  })
      .join();
  CHECK(first_call == POSENC_ERR_INVALID);
  CHECK(first_intact);
  CHECK(bad(posenc_spec{}) == POSENC_ERR_INVALID);
}

TEST_CASE("sizes, strides, NULLs and positions get their status before anything is written", "[api]") {
  const posenc_spec s = posenc_spec_default(8);
  Canary c;
  CHECK(table(s, 0, -1, 8, c) == POSENC_ERR_INVALID);
  CHECK(table(s, 0, 2, 7, c) == POSENC_ERR_INVALID);
  CHECK(table(s, 0, 2, -8, c) == POSENC_ERR_INVALID);
  CHECK(table(s, 0, 3, int64_t(1) << 62, c) == POSENC_ERR_OVERFLOW);
  CHECK(table(s, (int64_t(1) << 31) - 1, 2, 8, c) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(table(s, -(int64_t(1) << 31), 1, 8, c) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(table(s, std::numeric_limits<int64_t>::max(), 2, 8, c) == POSENC_ERR_OUT_OF_RANGE);
  CHECK(c.intact());
  CHECK(posenc_table_f32(nullptr, 0, 1, c.buf.data(), 8) == POSENC_ERR_NULL);
  CHECK(posenc_table_f32(&s, 0, 1, nullptr, 8) == POSENC_ERR_NULL);
  CHECK(posenc_table_f32(nullptr, 0, 0, nullptr, 8) == POSENC_OK);  // n == 0 needs no pointers
  CHECK(posenc_table_f32(&s, 0, 0, nullptr, 0) == POSENC_OK);
  posenc_spec bad = s;
  bad.base = -1;
  CHECK(posenc_table_f32(&bad, 0, 0, nullptr, 8) == POSENC_ERR_INVALID);  // a given spec is still checked
  // rows: the bad position is the last one; nothing may have been written before it was seen
  std::vector<int64_t> pos = {0, 1, 2, 3, int64_t(1) << 31};
  CHECK(posenc_rows_f32(&s, pos.data(), 5, c.buf.data(), 8) == POSENC_ERR_OUT_OF_RANGE);
  pos.back() = -(int64_t(1) << 31);
  CHECK(posenc_rows_f32(&s, pos.data(), 5, c.buf.data(), 8) == POSENC_ERR_OUT_OF_RANGE);
  pos.back() = POSENC_PAD;
  CHECK(c.intact());
  CHECK(posenc_rows_f32(&s, nullptr, 5, c.buf.data(), 8) == POSENC_ERR_NULL);
  CHECK(posenc_rows_f32(&s, pos.data(), 5, c.buf.data(), 8) == POSENC_OK);
}

TEST_CASE("status strings, version and the ISA functions", "[api]") {
  for (int v = 0; v <= 6; ++v) {
    const char *str = posenc_status_string(posenc_status(v));
    REQUIRE(str != nullptr);
    CHECK(std::strlen(str) > 1);
    for (int w = 0; w < v; ++w) CHECK(std::strcmp(str, posenc_status_string(posenc_status(w))) != 0);
  }
  CHECK(std::strcmp(posenc_status_string(posenc_status(99)), "unknown status") == 0);
  CHECK(std::strcmp(posenc_version(), POSENC_VERSION_STRING) == 0);
  CHECK(std::strcmp(posenc_isa_name(POSENC_ISA_SCALAR), "scalar") == 0);
  CHECK(std::strcmp(posenc_isa_name(POSENC_ISA_AVX2), "avx2") == 0);
  CHECK(std::strcmp(posenc_isa_name(POSENC_ISA_AVX512), "avx512") == 0);
  CHECK(std::strcmp(posenc_isa_name(POSENC_ISA_NEON), "neon") == 0);
  CHECK(std::strcmp(posenc_isa_name(posenc_isa(17)), "unknown") == 0);
  CHECK(posenc_isa_available(POSENC_ISA_SCALAR) == 1);
  CHECK(posenc_isa_available(posenc_isa(-1)) == 0);
  CHECK(posenc_force_isa(posenc_isa(9)) == POSENC_ERR_INVALID);
#if defined(__x86_64__)
  CHECK(posenc_isa_available(POSENC_ISA_NEON) == 0);
  const posenc_isa before = posenc_active_isa();
  CHECK(posenc_force_isa(POSENC_ISA_NEON) == POSENC_ERR_UNSUPPORTED);
  CHECK(posenc_active_isa() == before);  // a refused force changes nothing
#elif defined(__aarch64__)
  CHECK(posenc_isa_available(POSENC_ISA_NEON) == 1);
  CHECK(posenc_isa_available(POSENC_ISA_AVX2) == 0);
  CHECK(posenc_force_isa(POSENC_ISA_AVX512) == POSENC_ERR_UNSUPPORTED);
#endif
  for (posenc_isa isa : ref::paths()) {
    REQUIRE(posenc_force_isa(isa) == POSENC_OK);
    CHECK(posenc_active_isa() == isa);
  }
}

TEST_CASE("posenc_spec_default is the Vaswani spec", "[api]") {
  const posenc_spec s = posenc_spec_default(512);
  CHECK(s.d_model == 512);
  CHECK(s.layout == POSENC_INTERLEAVED);
  CHECK(s.base == 10000.0);
  CHECK(s.freq_denominator == 0.0);
  CHECK(s.position_scale == 1.0);
}

TEST_CASE("a rope type's definition: its columns, NULL outside the enums and for vLLM's types' transformers keys",
          "[api][names]") {
  // written out here, independently of lib/setup/rope_types.hpp: what the scaling struct and the runtimes name
  const std::vector<std::string> scaling_fields = {"factor",
                                                   "original_max_position_embeddings",
                                                   "seq_len",
                                                   "beta_fast",
                                                   "beta_slow",
                                                   "mscale",
                                                   "mscale_all_dim",
                                                   "truncate",
                                                   "low_freq_factor",
                                                   "high_freq_factor",
                                                   "short_factor",
                                                   "long_factor",
                                                   "attention_factor",
                                                   "partial_rotary_factor",
                                                   "alpha",
                                                   "mixed_b",
                                                   "extrapolation_factor",
                                                   "attn_factor",
                                                   "short_mscale",
                                                   "long_mscale"};
  const auto split = [](const char *s) {
    std::vector<std::string> out;
    std::string k;
    for (const char *c = s;; ++c) {
      if (*c == ' ' || !*c) {
        if (!k.empty()) out.push_back(k);
        k.clear();
        if (!*c) break;
      } else {
        k += *c;
      }
    }
    return out;
  };
  int types = 0;
  for (; posenc_rope_type_name(posenc_rope_type(types)); ++types) {
    const posenc_rope_type t = posenc_rope_type(types);
    INFO(posenc_rope_type_name(t));
    REQUIRE(posenc_rope_type_keys(t, POSENC_ROPE_KEYS_SUMMARY) != nullptr);
    CHECK(std::strlen(posenc_rope_type_keys(t, POSENC_ROPE_KEYS_SUMMARY)) > 0);
    for (const std::string &f : split(posenc_rope_type_keys(t, POSENC_ROPE_KEYS_FIELDS)))
      CHECK(std::find(scaling_fields.begin(), scaling_fields.end(), f) != scaling_fields.end());
    for (posenc_rope_keys w :
         {POSENC_ROPE_KEYS_FIELDS, POSENC_ROPE_KEYS_ACCEPTED, POSENC_ROPE_KEYS_ELSEWHERE, POSENC_ROPE_KEYS_ALIASES})
      CHECK(posenc_rope_type_keys(t, w) != nullptr);
    // ints outside the enum, passed as values (never stored in an enum object: UBSan's enum check)
    CHECK(posenc_rope_type_keys(t, posenc_rope_keys(6)) == nullptr);
    CHECK(posenc_rope_type_keys(t, posenc_rope_keys(-1)) == nullptr);
  }
  CHECK(types == 12);
  CHECK(posenc_rope_type_keys(posenc_rope_type(types), POSENC_ROPE_KEYS_FIELDS) == nullptr);
  CHECK(posenc_rope_type_keys(posenc_rope_type(-1), POSENC_ROPE_KEYS_FIELDS) == nullptr);
  // the columns of a few types, spelled out
  CHECK(std::string(posenc_rope_type_keys(POSENC_ROPE_TYPE_DEFAULT, POSENC_ROPE_KEYS_FIELDS)).empty());
  CHECK(std::string(posenc_rope_type_keys(POSENC_ROPE_TYPE_YARN, POSENC_ROPE_KEYS_ELSEWHERE)) ==
        "extrapolation_factor attn_factor apply_yarn_scaling");
  CHECK(std::string(posenc_rope_type_keys(POSENC_ROPE_TYPE_LLAMA3, POSENC_ROPE_KEYS_TRANSFORMERS)) ==
        "factor low_freq_factor high_freq_factor");
  CHECK(std::string(posenc_rope_type_keys(POSENC_ROPE_TYPE_LONGROPE, POSENC_ROPE_KEYS_ALIASES)) == "su");
  CHECK(std::string(posenc_rope_type_keys(POSENC_ROPE_TYPE_DYNAMIC, POSENC_ROPE_KEYS_FIELDS)) ==
        "factor original_max_position_embeddings seq_len alpha");
  for (posenc_rope_type v : {POSENC_ROPE_TYPE_NTK, POSENC_ROPE_TYPE_DEEPSEEK_YARN, POSENC_ROPE_TYPE_YARN_LOG,
                             POSENC_ROPE_TYPE_THETA_SCALE, POSENC_ROPE_TYPE_TELECHAT3})
    CHECK(posenc_rope_type_keys(v, POSENC_ROPE_KEYS_TRANSFORMERS) == nullptr);
}

TEST_CASE("the enumerations' names: one per value, read back, '-' as '_', NULL past the end", "[api][names]") {
  // written out here, independently of lib/setup/enum_lists.hpp
  const std::vector<std::string> pairs = {"halves", "interleaved"};
  const std::vector<std::string> types = {"default",       "linear",   "dynamic",      "yarn",
                                          "llama3",        "longrope", "proportional", "ntk",
                                          "deepseek_yarn", "yarn_log", "theta_scale",  "telechat3"};
  const std::vector<std::string> layouts = {"chunked",       "interleaved", "vision",   "strided",
                                            "interleaved_4", "alternating", "per_axis", "balanced"};
  for (size_t v = 0; v < pairs.size(); ++v) {
    CHECK(std::string(posenc_rope_pairs_name(posenc_rope_pairs(v))) == pairs[v]);
    posenc_rope_pairs got = posenc_rope_pairs(9);
    CHECK(posenc_rope_pairs_from_name(pairs[v].c_str(), &got) == POSENC_OK);
    CHECK(int(got) == int(v));
  }
  CHECK(posenc_rope_pairs_name(posenc_rope_pairs(2)) == nullptr);
  for (size_t v = 0; v < types.size(); ++v) {
    CHECK(std::string(posenc_rope_type_name(posenc_rope_type(v))) == types[v]);
    std::string dashed = types[v];
    for (char &c : dashed)
      if (c == '_') c = '-';
    posenc_rope_type got = posenc_rope_type(99);
    CHECK(posenc_rope_type_from_name(dashed.c_str(), &got) == POSENC_OK);
    CHECK(int(got) == int(v));
  }
  CHECK(posenc_rope_type_name(posenc_rope_type(types.size())) == nullptr);
  CHECK(posenc_rope_type_name(posenc_rope_type(-1)) == nullptr);
  for (size_t v = 0; v < layouts.size(); ++v) {
    CHECK(std::string(posenc_rope_layout_name(posenc_rope_layout(v))) == layouts[v]);
    posenc_rope_layout got = posenc_rope_layout(99);
    CHECK(posenc_rope_layout_from_name(layouts[v].c_str(), &got) == POSENC_OK);
    CHECK(int(got) == int(v));
  }
  CHECK(posenc_rope_layout_name(posenc_rope_layout(layouts.size())) == nullptr);
  // refusals: nothing written
  posenc_rope_layout keep = POSENC_SECTIONS_VISION;
  CHECK(posenc_rope_layout_from_name("per axis", &keep) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_layout_from_name("chunke", &keep) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_layout_from_name("chunkedx", &keep) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_layout_from_name("", &keep) == POSENC_ERR_INVALID);
  CHECK(posenc_rope_layout_from_name("CHUNKED", &keep) == POSENC_ERR_INVALID);  // the one spelling, lower case
  CHECK(keep == POSENC_SECTIONS_VISION);
  CHECK(posenc_rope_layout_from_name(nullptr, &keep) == POSENC_ERR_NULL);
  CHECK(posenc_rope_layout_from_name("vision", nullptr) == POSENC_ERR_NULL);
  CHECK(posenc_rope_type_from_name(nullptr, nullptr) == POSENC_ERR_NULL);
  posenc_rope_pairs p = POSENC_ROPE_HALVES;
  CHECK(posenc_rope_pairs_from_name("neox", &p) == POSENC_ERR_INVALID);  // an alias is the binding's, not the list's
}
