// posenc check: a quick self-test of this build on this machine.
//  1. Paths: a sample of every kernel runs on every available path, and each path's bytes must equal the
//     scalar path's (the contract: bit-identical across paths).
//  2. Known values, on every path, without MPFR: the seeds' d = 6 table (NumPy's digits), sin and cos of
//     integer angles (pair 0 has frequency base^0 = 1; the constants are MPFR's, checked in), zero rows and
//     columns, power-of-two scales, row splits, the definitions of the fused kernels (one fmaf; the rotation
//     as one fma in double, bf16 / f16 rounded to nearest-even once), and refusals that leave the output
//     untouched. These catch a scalar path that is wrong too, which the comparison of paths cannot.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cli.hpp"
#include "output.hpp"
#include "posenc/posenc.hpp"

namespace cli {
namespace {

using Bytes = std::vector<unsigned char>;
constexpr int64_t kPad = POSENC_PAD;
constexpr int64_t kMax = 2147483647;  // the largest position

template <class T>
Bytes bytes_of(const std::vector<T> &v) {
  Bytes b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Deterministic inputs (the same on every run and machine).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s >> 33);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() & 0xFFFFFF) * 0x1p-24f; }
  std::vector<float> floats(size_t n, float lo = -4.0f, float hi = 4.0f) {
    std::vector<float> v(n);
    for (float &x : v) x = uniform(lo, hi);
    return v;
  }
  // Finite 16-bit values between about 2^-10 and 8, either sign.
  std::vector<uint16_t> halves(size_t n, bool bf16) {
    std::vector<uint16_t> v(n);
    for (uint16_t &h : v) {
      const uint32_t r = next(), sign = (r & 1) << 15;
      h = bf16 ? uint16_t(sign | ((117 + (r >> 1) % 13) << 7) | ((r >> 8) & 0x7F))
               : uint16_t(sign | ((5 + (r >> 1) % 13) << 10) | ((r >> 8) & 0x3FF));
    }
    return v;
  }
  std::vector<int32_t> tokens(size_t n, int32_t vocab) {
    std::vector<int32_t> v(n);
    for (int32_t &t : v) t = int32_t(next() % uint32_t(vocab));
    return v;
  }
};

// A spec from the C++ wrapper's setters.
posenc_spec spec(int64_t d, posenc::layout layout = posenc::layout::interleaved, double base = 1.0e4, double den = 0.0,
                 double scale = 1.0) {
  return posenc::spec(d)
      .with_layout(layout)
      .with_base(base)
      .with_freq_denominator(den)
      .with_position_scale(scale)
      .c_spec();
}

// A table spec with a run of positions (table_*) and a list (rows_*).
struct TableCase {
  std::string what;
  posenc_spec s;
  int64_t first, n;
  std::vector<int64_t> list;
};

const std::vector<TableCase> &table_cases() {
  static const std::vector<TableCase> c = {
      {"d=6 vaswani", spec(6), 0, 10, {0, 1, 2, 9, kPad, 3}},
      {"d=33 sin|cos halves base 1e6",
       spec(33, posenc::layout::sin_cos_halves, 1.0e6),
       -100,
       32,
       {-100, 5, kMax, -kMax, 0}},
      {"d=130 cos|sin halves D=64",
       spec(130, posenc::layout::cos_sin_halves, 1.0e4, 64.0),
       1000,
       21,
       {0, 1, 1000000, kMax, -12345, kPad, 7}},
      {"d=48 base 2 D=0.5 scale 2^100",
       spec(48, posenc::layout::interleaved, 2.0, 0.5, 0x1p100),
       kMax - 40,
       39,
       {kMax, kMax - 1, 1, kPad}},
      {"d=512 fairseq", posenc::spec::fairseq(512).c_spec(), 2, 67, {2, 3, 4, kPad, kPad, 1000, 70000}},
      {"d=1000 t2t 0.5..1e3", posenc::spec::tensor2tensor(1000, 0.5, 1.0e3).c_spec(), 5, 17, {5, 6, 0, 1, 2, 40000}},
      {"d=1", spec(1), 0, 4, {0, kPad, 3}},
      {"d=2 base 7", spec(2, posenc::layout::interleaved, 7.0), -3, 6, {kMax, -kMax, 0}},
  };
  return c;
}

std::string run_of(const TableCase &c) {
  return c.what + ", positions " + std::to_string(c.first) + ".." + std::to_string(c.first + c.n - 1);
}
std::string list_of(const std::vector<int64_t> &l) {
  std::string s;
  for (int64_t p : l) s += (s.empty() ? "" : ",") + (p == kPad ? std::string("pad") : std::to_string(p));
  return s;
}

// ---- RoPE samples ---------------------------------------------------------------------------------

struct RopeCase {
  std::string what;
  posenc::rope r;
  int64_t first, n;
  std::vector<int64_t> list;  // empty: first + t
};

const std::vector<RopeCase> &rope_cases() {
  static const std::vector<RopeCase> c = {
      {"r=128 base 5e5", posenc::rope(128).with_base(5.0e5), 0, 0, {0, 1, 4096, 131072, kMax, -kMax, kPad, 1234567}},
      {"llama3.1", posenc::rope::llama3_1(), 131060, 13, {}},
      {"deepseek-v2 (yarn, interleaved)", posenc::rope::deepseek_v2(), 0, 0, {0, 4095, kPad, 163839, 7}},
      {"r=96 m 1.369 scale 0.25", posenc::rope(96).with_attention_scale(1.369).with_position_scale(0.25), -40, 11, {}},
      {"gpt-neox-20b (r=24)", posenc::rope::gpt_neox_20b(), 2040, 9, {}},
      {"phi3-mini-128k at 8192", posenc::rope::phi3_mini_128k(8192), 8180, 5, {}},
  };
  return c;
}

int64_t rows_of(const RopeCase &c) { return c.list.empty() ? c.n : int64_t(c.list.size()); }
const int64_t *list_ptr(const RopeCase &c) { return c.list.empty() ? nullptr : c.list.data(); }
std::string positions_of(const RopeCase &c) {
  return c.list.empty() ? std::to_string(c.first) + ".." + std::to_string(c.first + c.n - 1) : list_of(c.list);
}

// The rotation tensors: a fused QKV buffer of 4 q heads, 2 k heads and 2 v heads of head_dim r + 8 per token
// (partial rotary: the last 8 elements of each head stay as they are).
struct Qkv {
  int64_t hd, ts, q_heads = 4, k_heads = 2;
  explicit Qkv(int64_t r) : hd(r + 8), ts(8 * (r + 8)) {}
  int64_t k_offset() const { return q_heads * hd; }
};

// ---- Samples: one call on the active path, its output bytes ----------------------------------------

struct Sample {
  std::string kernel, what;
  std::function<posenc_status(Bytes &)> run;
};

template <class T>
posenc_status into(Bytes &out, const std::vector<T> &v, posenc_status st) {
  out = bytes_of(v);
  return st;
}

// The rotations of one scheme in one row format (x: the input rows): one tensor of 3 heads, and q and k of
// a fused QKV buffer.
template <class T, class One, class Qk>
void rotation_samples(std::vector<Sample> &s, const std::string &format, const RopeCase &c, const std::vector<T> &x,
                      One one, Qk qk) {
  const posenc::rope rope = c.r;  // owns its frequencies: the lambdas keep a copy
  const std::vector<int64_t> l = c.list;
  const int64_t first = c.first, n = rows_of(c);
  const Qkv q(rope.rotary_dim());
  const std::string what = c.what + ", positions " + positions_of(c);
  s.push_back({"rope_" + format, what + ", 3 heads", [=](Bytes &b) {
                 std::vector<T> t = x;
                 return into(b, t,
                             one(&rope.c_rope(), l.empty() ? nullptr : l.data(), first, n, t.data(), 3, q.ts, q.hd));
               }});
  s.push_back({"rope_qk_" + format, what + ", fused QKV 4 q / 2 k heads", [=](Bytes &b) {
                 std::vector<T> t = x;
                 return into(b, t,
                             qk(&rope.c_rope(), l.empty() ? nullptr : l.data(), first, n, t.data(), q.q_heads, q.ts,
                                q.hd, t.data() + q.k_offset(), q.k_heads, q.ts, q.hd));
               }});
}

std::vector<Sample> samples(bool large) {
  std::vector<Sample> s;
  Rng rng(17);
  for (const TableCase &c : table_cases()) {
    const int64_t d = c.s.d_model, n = c.n, m = int64_t(c.list.size());
    const posenc_spec sp = c.s;
    s.push_back({"table_f32", run_of(c), [=](Bytes &b) {
                   std::vector<float> t(size_t(n * d));
                   return into(b, t, posenc_table_f32(&sp, c.first, n, t.data(), d));
                 }});
    s.push_back({"table_bf16", run_of(c), [=](Bytes &b) {
                   std::vector<uint16_t> t(size_t(n * (d + 3)), 0x5555);  // padded rows: the gaps stay
                   return into(b, t, posenc_table_bf16(&sp, c.first, n, t.data(), d + 3));
                 }});
    s.push_back({"table_f16", run_of(c), [=](Bytes &b) {
                   std::vector<uint16_t> t(size_t(n * d));
                   return into(b, t, posenc_table_f16(&sp, c.first, n, t.data(), d));
                 }});
    const std::vector<int64_t> l = c.list;
    const std::string lw = c.what + ", positions " + list_of(l);
    s.push_back({"rows_f32", lw, [=](Bytes &b) {
                   std::vector<float> t(size_t(m * d));
                   return into(b, t, posenc_rows_f32(&sp, l.data(), m, t.data(), d));
                 }});
    s.push_back({"rows_bf16", lw, [=](Bytes &b) {
                   std::vector<uint16_t> t(size_t(m * d));
                   return into(b, t, posenc_rows_bf16(&sp, l.data(), m, t.data(), d));
                 }});
    s.push_back({"rows_f16", lw, [=](Bytes &b) {
                   std::vector<uint16_t> t(size_t(m * d));
                   return into(b, t, posenc_rows_f16(&sp, l.data(), m, t.data(), d));
                 }});
    // add and the embeddings: a run and the list, x and the tables from the generator
    const std::vector<float> x = rng.floats(size_t(n * d)), xl = rng.floats(size_t(m * d));
    const float scale = std::sqrt(float(d));
    s.push_back({"add_f32", run_of(c) + ", scale sqrt(d)", [=](Bytes &b) {
                   std::vector<float> t(size_t(n * d));
                   return into(b, t, posenc_add_f32(&sp, x.data(), d, scale, nullptr, c.first, n, t.data(), d));
                 }});
    s.push_back({"add_f32", lw + ", in place", [=](Bytes &b) {
                   std::vector<float> t = xl;
                   return into(b, t, posenc_add_f32(&sp, t.data(), d, 0.5f, l.data(), 0, m, t.data(), d));
                 }});
    const int32_t vocab = 37;
    const std::vector<float> tf = rng.floats(size_t(vocab * d));
    const std::vector<uint16_t> tb = rng.halves(size_t(vocab * d), true), th = rng.halves(size_t(vocab * d), false);
    const std::vector<int32_t> tok = rng.tokens(size_t(n), vocab), tokl = rng.tokens(size_t(m), vocab);
    s.push_back({"embed_f32", run_of(c) + ", vocab 37", [=](Bytes &b) {
                   std::vector<float> t(size_t(n * d));
                   return into(
                       b, t,
                       posenc_embed_f32(&sp, tf.data(), vocab, d, tok.data(), scale, nullptr, c.first, n, t.data(), d));
                 }});
    s.push_back({"embed_f32", lw + ", vocab 37", [=](Bytes &b) {
                   std::vector<float> t(size_t(m * d));
                   return into(
                       b, t,
                       posenc_embed_f32(&sp, tf.data(), vocab, d, tokl.data(), 1.0f, l.data(), 0, m, t.data(), d));
                 }});
    s.push_back(
        {"embed_bf16", run_of(c) + ", vocab 37", [=](Bytes &b) {
           std::vector<float> t(size_t(n * d));
           return into(
               b, t, posenc_embed_bf16(&sp, tb.data(), vocab, d, tok.data(), scale, nullptr, c.first, n, t.data(), d));
         }});
    s.push_back({"embed_f16", lw + ", vocab 37", [=](Bytes &b) {
                   std::vector<float> t(size_t(m * d));
                   return into(
                       b, t,
                       posenc_embed_f16(&sp, th.data(), vocab, d, tokl.data(), scale, l.data(), 0, m, t.data(), d));
                 }});
  }
  for (int64_t d : {96, 33, 1}) {
    const int32_t vocab = 29;
    const int64_t pos_rows = 50, n = 40;
    const std::vector<float> table = rng.floats(size_t(vocab * d)), pos = rng.floats(size_t(pos_rows * d));
    const std::vector<int32_t> tok = rng.tokens(size_t(n), vocab);
    std::vector<int64_t> l(static_cast<size_t>(n));
    for (int64_t &p : l) p = int64_t(rng.next() % uint32_t(pos_rows));
    const std::string what = "d=" + std::to_string(d) + ", vocab 29, 50 positions";
    s.push_back({"embed_learned_f32", what + ", run from 3", [=](Bytes &b) {
                   std::vector<float> t(size_t((n - 10) * d));
                   return into(b, t,
                               posenc_embed_learned_f32(d, table.data(), vocab, d, tok.data(), 1.5f, pos.data(),
                                                        pos_rows, d, nullptr, 3, n - 10, t.data(), d));
                 }});
    s.push_back({"embed_learned_f32", what + ", a list", [=](Bytes &b) {
                   std::vector<float> t(size_t(n * d));
                   return into(b, t,
                               posenc_embed_learned_f32(d, table.data(), vocab, d, tok.data(), 1.0f, pos.data(),
                                                        pos_rows, d, l.data(), 0, n, t.data(), d));
                 }});
  }
  for (const RopeCase &c : rope_cases()) {
    const int64_t r = c.r.rotary_dim(), h = r / 2, n = rows_of(c);
    const posenc::rope rope = c.r;  // owns its frequencies: the lambdas keep a copy
    const std::vector<int64_t> l = c.list;
    const int64_t first = c.first;
    const std::string what = c.what + ", positions " + positions_of(c);
    s.push_back({"rope_cache_f32", what, [=](Bytes &b) {
                   std::vector<float> t(size_t(n * r));
                   return into(b, t,
                               posenc_rope_cache_f32(&rope.c_rope(), l.empty() ? nullptr : l.data(), first, n, t.data(),
                                                     r, t.data() + h, r));
                 }});
    s.push_back({"rope_cache_f32", what + ", separate padded tables", [=](Bytes &b) {
                   std::vector<float> t(size_t(2 * n * (h + 5)), -7.0f);
                   return into(b, t,
                               posenc_rope_cache_f32(&rope.c_rope(), l.empty() ? nullptr : l.data(), first, n, t.data(),
                                                     h + 5, t.data() + n * (h + 5), h + 5));
                 }});
    const size_t size = size_t(n * Qkv(r).ts);
    rotation_samples(s, "f32", c, rng.floats(size), posenc_rope_f32, posenc_rope_qk_f32);
    rotation_samples(s, "bf16", c, rng.halves(size, true), posenc_rope_bf16, posenc_rope_qk_bf16);
    rotation_samples(s, "f16", c, rng.halves(size, false), posenc_rope_f16, posenc_rope_qk_f16);
  }
  if (large) {
    // Past the non-temporal threshold: the streaming stores of every path.
    posenc_machine m{};
    (void)posenc_machine_info(&m);  // cannot fail with a non-NULL pointer
    const int64_t d = 1024, n = int64_t(m.stream_threshold / (4 * d)) + 3;
    const posenc_spec sp = spec(d);
    s.push_back(
        {"table_f32", "d=1024, " + std::to_string(n) + " rows (past the non-temporal threshold)", [=](Bytes &b) {
           std::vector<float> t(size_t(n * d));
           return into(b, t, posenc_table_f32(&sp, 1000, n, t.data(), d));
         }});
    const std::vector<float> table = Rng(5).floats(size_t(64 * d));
    std::vector<int32_t> tok(static_cast<size_t>(n));
    std::vector<int64_t> l(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) tok[size_t(r)] = int32_t(r % 64), l[size_t(r)] = (r * 7) % 64;
    s.push_back({"embed_learned_f32", "d=1024, " + std::to_string(n) + " rows (past the non-temporal threshold)",
                 [=](Bytes &b) {
                   std::vector<float> t(size_t(n * d));
                   return into(b, t,
                               posenc_embed_learned_f32(d, table.data(), 64, d, tok.data(), 1.0f, table.data(), 64, d,
                                                        l.data(), 0, n, t.data(), d));
                 }});
  }
  return s;
}

// ---- Reporting -------------------------------------------------------------------------------------

class Report {
 public:
  explicit Report(bool quiet) : quiet_(quiet) {}
  // count checks passed, reported on one line
  void ok(const std::string &line, int count = 1) {
    checks_ += count;
    if (!quiet_) std::printf("ok    %s\n", line.c_str());
  }
  void fail(const std::string &line) {
    ++checks_;
    ++failed_;
    std::printf("FAIL  %s\n", line.c_str());
  }
  void note(const std::string &line) {
    if (!quiet_) std::printf("      %s\n", line.c_str());
  }
  int checks() const { return checks_; }
  int failed() const { return failed_; }

 private:
  bool quiet_;
  int checks_ = 0, failed_ = 0;
};

void force(posenc_isa isa) { posenc::check(posenc_force_isa(isa)); }

std::string hex(const unsigned char *p, size_t size) {
  uint32_t v = 0;
  std::memcpy(&v, p, size);
  char buf[16];
  std::snprintf(buf, sizeof buf, size == 4 ? "0x%08x" : "0x%04x", v);
  return buf;
}

// The first difference between two outputs, in elements of the kernel's output type (the bf16 / f16
// embeddings write float32).
std::string first_difference(const std::string &kernel, const Bytes &got, const Bytes &want) {
  if (got.size() != want.size()) return "output sizes differ";
  const bool half = kernel.compare(kernel.size() - 2, 2, "16") == 0 && kernel.rfind("embed", 0) != 0;
  const size_t size = half ? 2 : 4;
  for (size_t i = 0; i + size <= got.size(); i += size)
    if (std::memcmp(&got[i], &want[i], size) != 0)
      return "element " + std::to_string(i / size) + " is " + hex(&got[i], size) + ", scalar's " + hex(&want[i], size);
  return "?";
}

void compare_paths(const std::vector<Sample> &all, const std::vector<posenc_isa> &paths, Report &rep) {
  force(POSENC_ISA_SCALAR);
  std::vector<Bytes> want(all.size());
  std::vector<bool> scalar_ok(all.size());
  std::vector<std::string> kernels;
  std::map<std::string, int> samples_of;
  for (size_t i = 0; i < all.size(); ++i) {
    if (samples_of[all[i].kernel]++ == 0) kernels.push_back(all[i].kernel);
    const posenc_status st = all[i].run(want[i]);
    scalar_ok[i] = st == POSENC_OK;
    if (!scalar_ok[i]) rep.fail(all[i].kernel + " on scalar: " + all[i].what + ": " + posenc_status_string(st));
  }
  std::map<std::string, std::vector<std::string>> equal;  // kernel -> the paths that gave scalar's bytes
  for (posenc_isa isa : paths) {
    if (isa == POSENC_ISA_SCALAR) continue;
    force(isa);
    std::map<std::string, bool> bad;
    for (size_t i = 0; i < all.size(); ++i) {
      const std::string where = all[i].kernel + " on " + posenc_isa_name(isa) + ": " + all[i].what + ": ";
      Bytes got;
      const posenc_status st = scalar_ok[i] ? all[i].run(got) : POSENC_OK;
      if (!scalar_ok[i]) {
        bad[all[i].kernel] = true;
      } else if (st != POSENC_OK) {
        rep.fail(where + posenc_status_string(st));
        bad[all[i].kernel] = true;
      } else if (got != want[i]) {
        rep.fail(where + first_difference(all[i].kernel, got, want[i]));
        bad[all[i].kernel] = true;
      }
    }
    for (const std::string &k : kernels)
      if (!bad[k]) equal[k].push_back(posenc_isa_name(isa));
  }
  for (const std::string &k : kernels) {
    const std::vector<std::string> &e = equal[k];
    std::string names;
    for (const std::string &n : e) names += " " + n;
    if (!e.empty())
      rep.ok(k + ":" + names + " equal scalar (" + std::to_string(samples_of[k]) + " samples)", int(e.size()));
  }
  if (paths.size() == 1) rep.note("only the scalar path runs here: no paths to compare");
}

// ---- Known values --------------------------------------------------------------------------------

// Whether h is v rounded to nearest-even in the 16-bit format widen reads (its neighbours are no closer,
// and a tie went to the even one). v and its neighbours are within a factor of 2, so the differences are
// exact in double.
bool nearest(double v, uint16_t h, float (*widen)(uint16_t)) {
  const double a = widen(h);
  if (std::isnan(v)) return std::isnan(a);
  if (v != 0 && a != 0 && (v < 0) != (a < 0)) return false;
  const uint16_t sign = h & 0x8000u, mag = h & 0x7FFFu;
  for (int step : {-1, 1}) {
    if (mag == 0 && step < 0) continue;
    const double b = widen(uint16_t(sign | uint16_t(mag + step)));
    const double da = std::fabs(v - a), db = std::fabs(v - b);
    if (db < da || (db == da && (h & 1))) return false;
  }
  return true;
}

std::string at(const char *what, int64_t i) { return std::string(what) + " element " + std::to_string(i); }

// Each returns "" when it holds on the active path, else what went wrong.
struct Known {
  std::string name;
  std::function<std::string()> run;
};

// A known-value check's call that the library refused: the check fails with the kernel and its status.
struct Refused {
  std::string what;
};
void call(const char *kernel, posenc_status st) {
  if (st != POSENC_OK) throw Refused{std::string(kernel) + ": " + posenc_status_string(st)};
}

// sin and cos of integer angles as MPFR rounds them (tests/support/reference.cpp, at 256+ bits).
struct Angle {
  int64_t p;
  uint32_t sin, cos;
};
const Angle kAngles[] = {
    {1, 0x3f576aa4u, 0x3f0a5140u},          {2, 0x3f68c7b7u, 0xbed51133u},   {3, 0x3e1081c3u, 0xbf7d7026u},
    {10, 0xbf0b44f8u, 0xbf56cd64u},         {355, 0xb7fcde82u, 0xbf800000u}, {1000000, 0xbeb33259u, 0x3f6fcefdu},
    {2147483647, 0xbf399422u, 0xbf30579au}, {-1, 0xbf576aa4u, 0x3f0a5140u},  {-2147483647, 0x3f399422u, 0xbf30579au},
    {1686629713, 0xbd858ac3u, 0x3f7f7487u},
};

std::string seeds_table() {
  // The seeds' NumPy code printed to 4 decimals (tests/test_seeds.cpp has the same rows).
  const posenc_spec s = posenc_spec_default(6);
  std::vector<float> t(60);
  call("table_f32", posenc_table_f32(&s, 0, 10, t.data(), 6));
  const char *want[3] = {"0.0000 1.0000 0.0000 1.0000 0.0000 1.0000", "0.8415 0.5403 0.0464 0.9989 0.0022 1.0000",
                         "0.4121 -0.9111 0.4057 0.9140 0.0194 0.9998"};
  const int rows[3] = {0, 1, 9};
  for (int k = 0; k < 3; ++k) {
    std::string got;
    char buf[32];
    for (int e = 0; e < 6; ++e) {
      std::snprintf(buf, sizeof buf, "%s%.4f", e ? " " : "", double(t[size_t(rows[k] * 6 + e)]));
      got += buf;
    }
    if (got != want[k]) return "row " + std::to_string(rows[k]) + " is \"" + got + "\", want \"" + want[k] + "\"";
  }
  return "";
}

std::string integer_angles() {
  std::vector<int64_t> l;
  for (const Angle &a : kAngles) l.push_back(a.p);
  const int64_t n = int64_t(l.size());
  // d = 2 and 3 (a zero column), any base and D: pair 0's frequency is base^0 = 1
  const posenc_spec inter = spec(2, posenc::layout::interleaved, 7.0, 0.3),
                    cs = spec(3, posenc::layout::cos_sin_halves, 1.0e6);
  std::vector<float> a(size_t(2 * n)), b(size_t(3 * n)), c(size_t(2 * n));
  call("rows_f32", posenc_rows_f32(&inter, l.data(), n, a.data(), 2));
  call("rows_f32", posenc_rows_f32(&cs, l.data(), n, b.data(), 3));
  // RoPE r = 2: f_0 = base^0 = 1, the cache row is cos, sin; m = 2 doubles it exactly
  const posenc_rope r = posenc_rope_default(2);
  posenc_rope r2 = r;
  r2.attention_scale = 2.0;
  std::vector<float> d(size_t(2 * n));
  call("rope_cache_f32", posenc_rope_cache_f32(&r, l.data(), 0, n, c.data(), 2, c.data() + 1, 2));
  call("rope_cache_f32", posenc_rope_cache_f32(&r2, l.data(), 0, n, d.data(), 2, d.data() + 1, 2));
  for (int64_t k = 0; k < n; ++k) {
    const Angle &w = kAngles[k];
    const std::string p = "position " + std::to_string(w.p) + ": ";
    if (bits(a[size_t(2 * k)]) != w.sin || bits(a[size_t(2 * k + 1)]) != w.cos) return p + "rows_f32 d=2";
    if (bits(b[size_t(3 * k)]) != w.cos || bits(b[size_t(3 * k + 1)]) != w.sin || bits(b[size_t(3 * k + 2)]) != 0)
      return p + "rows_f32 d=3 cos|sin halves";
    if (bits(c[size_t(2 * k)]) != w.cos || bits(c[size_t(2 * k + 1)]) != w.sin) return p + "rope_cache_f32 r=2";
    if (d[size_t(2 * k)] != 2.0f * c[size_t(2 * k)] || d[size_t(2 * k + 1)] != 2.0f * c[size_t(2 * k + 1)])
      return p + "rope_cache_f32 r=2 with attention_scale 2 is not twice the values";
  }
  // a run: table_f32 from position 1
  std::vector<float> t(6);
  call("table_f32", posenc_table_f32(&inter, 1, 3, t.data(), 2));
  for (int64_t k = 0; k < 3; ++k)
    if (bits(t[size_t(2 * k)]) != kAngles[k].sin || bits(t[size_t(2 * k + 1)]) != kAngles[k].cos)
      return "table_f32 d=2 from position 1, row " + std::to_string(k);
  return "";
}

std::string zeros_and_splits() {
  // a pad row is +0 everywhere, an odd row ends with +0, position 0 is sin 0 = +0 and cos 0 = 1
  const posenc_spec s = spec(7, posenc::layout::sin_cos_halves);
  const int64_t l[3] = {kPad, 0, 5};
  std::vector<float> t(21, -1.0f);
  call("rows_f32", posenc_rows_f32(&s, l, 3, t.data(), 7));
  for (int64_t e = 0; e < 7; ++e)
    if (bits(t[size_t(e)]) != 0) return at("rows_f32 pad row", e);
  for (int64_t e = 0; e < 3; ++e)
    if (bits(t[size_t(7 + e)]) != 0 || t[size_t(7 + 3 + e)] != 1.0f) return at("rows_f32 position 0", e);
  if (bits(t[13]) != 0 || bits(t[20]) != 0) return "rows_f32: the odd column is not +0";
  const posenc_rope r = posenc_rope_default(64);
  std::vector<float> c(128, -1.0f);
  call("rope_cache_f32", posenc_rope_cache_f32(&r, l, 1, 1, c.data(), 64, c.data() + 32, 64));
  for (int64_t e = 0; e < 64; ++e)
    if (bits(c[size_t(e)]) != 0) return at("rope_cache_f32 pad row", e);
  // any row range of a call returns the same bytes as the whole call
  const posenc_spec w = spec(100, posenc::layout::cos_sin_halves, 1.0e5);
  std::vector<float> whole(size_t(40 * 100)), part(size_t(25 * 100));
  call("table_f32", posenc_table_f32(&w, 999990, 40, whole.data(), 100));
  call("table_f32", posenc_table_f32(&w, 999990 + 15, 25, part.data(), 100));
  if (std::memcmp(whole.data() + 1500, part.data(), part.size() * 4) != 0)
    return "table_f32: rows 15.. of a call differ";
  const posenc::rope l31 = posenc::rope::llama3_1();
  std::vector<float> cw(size_t(30 * 128)), cp(size_t(11 * 128));
  call("rope_cache_f32",
       posenc_rope_cache_f32(&l31.c_rope(), nullptr, 131000, 30, cw.data(), 128, cw.data() + 64, 128));
  call("rope_cache_f32",
       posenc_rope_cache_f32(&l31.c_rope(), nullptr, 131019, 11, cp.data(), 128, cp.data() + 64, 128));
  if (std::memcmp(cw.data() + 19 * 128, cp.data(), cp.size() * 4) != 0)
    return "rope_cache_f32: rows 19.. of a call differ";
  return "";
}

std::string refusals() {
  // checked before anything is written: the output stays as it was
  const posenc_spec bad = spec(0), good = spec(8);
  std::vector<float> t(16, 3.0f);
  const std::vector<float> before = t;
  if (posenc_table_f32(&bad, 0, 2, t.data(), 8) != POSENC_ERR_INVALID) return "table_f32 d_model 0 is not INVALID";
  const int64_t l[2] = {0, int64_t(1) << 31};
  if (posenc_rows_f32(&good, l, 2, t.data(), 8) != POSENC_ERR_OUT_OF_RANGE)
    return "rows_f32 at 2^31 is not OUT_OF_RANGE";
  posenc_rope odd = posenc_rope_default(7);
  if (posenc_rope_cache_f32(&odd, nullptr, 0, 1, t.data(), 7, t.data() + 8, 8) != POSENC_ERR_INVALID)
    return "rope_cache_f32 r=7 is not INVALID";
  if (t != before) return "a refused call wrote its output";
  return "";
}

// add_f32, embed_* and embed_learned_f32 as their definitions: one fmaf of the PE value of the same path.
std::string fused_definitions() {
  Rng rng(99);
  for (const TableCase &c : table_cases()) {
    const int64_t d = c.s.d_model, n = c.n;
    std::vector<float> pe(size_t(n * d)), out(size_t(n * d));
    call("table_f32", posenc_table_f32(&c.s, c.first, n, pe.data(), d));
    const std::vector<float> x = rng.floats(size_t(n * d));
    call("add_f32", posenc_add_f32(&c.s, x.data(), d, 0.75f, nullptr, c.first, n, out.data(), d));
    for (int64_t i = 0; i < n * d; ++i)
      if (bits(out[size_t(i)]) != bits(std::fmaf(0.75f, x[size_t(i)], pe[size_t(i)])))
        return c.what + ": " + at("add_f32", i);
    const int32_t vocab = 11;
    const std::vector<float> tf = rng.floats(size_t(vocab * d));
    const std::vector<uint16_t> tb = rng.halves(size_t(vocab * d), true), th = rng.halves(size_t(vocab * d), false);
    const std::vector<int32_t> tok = rng.tokens(size_t(n), vocab);
    const float scale = std::sqrt(float(d));
    for (int kind = 0; kind < 3; ++kind) {
      if (kind == 0)
        call("embed_f32",
             posenc_embed_f32(&c.s, tf.data(), vocab, d, tok.data(), scale, nullptr, c.first, n, out.data(), d));
      if (kind == 1)
        call("embed_bf16",
             posenc_embed_bf16(&c.s, tb.data(), vocab, d, tok.data(), scale, nullptr, c.first, n, out.data(), d));
      if (kind == 2)
        call("embed_f16",
             posenc_embed_f16(&c.s, th.data(), vocab, d, tok.data(), scale, nullptr, c.first, n, out.data(), d));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t e = 0; e < d; ++e) {
          const size_t src = size_t(tok[size_t(r)] * d + e), i = size_t(r * d + e);
          const float x0 = kind == 0 ? tf[src] : kind == 1 ? widen_bf16(tb[src]) : widen_f16(th[src]);
          if (bits(out[i]) != bits(std::fmaf(scale, x0, pe[i])))
            return c.what + ": " + at(kind == 0 ? "embed_f32" : kind == 1 ? "embed_bf16" : "embed_f16", int64_t(i));
        }
    }
  }
  const int64_t d = 40, vocab = 13, pos_rows = 9, n = 30;
  const std::vector<float> table = rng.floats(size_t(vocab * d)), pos = rng.floats(size_t(pos_rows * d));
  const std::vector<int32_t> tok = rng.tokens(size_t(n), int32_t(vocab));
  std::vector<int64_t> l(static_cast<size_t>(n));
  for (int64_t &p : l) p = int64_t(rng.next() % uint32_t(pos_rows));
  std::vector<float> out(size_t(n * d));
  call("embed_learned_f32", posenc_embed_learned_f32(d, table.data(), vocab, d, tok.data(), 2.5f, pos.data(), pos_rows,
                                                     d, l.data(), 0, n, out.data(), d));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < d; ++e)
      if (bits(out[size_t(r * d + e)]) !=
          bits(std::fmaf(2.5f, table[size_t(tok[size_t(r)] * d + e)], pos[size_t(l[size_t(r)] * d + e)])))
        return at("embed_learned_f32", r * d + e);
  return "";
}

// The 16-bit tables: the float32 table rounded to nearest-even.
std::string half_tables() {
  for (const TableCase &c : table_cases()) {
    const int64_t d = c.s.d_model, n = c.n, m = int64_t(c.list.size());
    std::vector<float> f(size_t(n * d)), fl(size_t(m * d));
    std::vector<uint16_t> h(size_t(n * d)), hl(size_t(m * d));
    call("table_f32", posenc_table_f32(&c.s, c.first, n, f.data(), d));
    call("rows_f32", posenc_rows_f32(&c.s, c.list.data(), m, fl.data(), d));
    for (int bf = 0; bf < 2; ++bf) {
      float (*widen)(uint16_t) = bf ? widen_bf16 : widen_f16;
      if (bf) {
        call("table_bf16", posenc_table_bf16(&c.s, c.first, n, h.data(), d));
        call("rows_bf16", posenc_rows_bf16(&c.s, c.list.data(), m, hl.data(), d));
      } else {
        call("table_f16", posenc_table_f16(&c.s, c.first, n, h.data(), d));
        call("rows_f16", posenc_rows_f16(&c.s, c.list.data(), m, hl.data(), d));
      }
      for (size_t i = 0; i < h.size(); ++i)
        if (!nearest(f[i], h[i], widen)) return c.what + ": " + at(bf ? "table_bf16" : "table_f16", int64_t(i));
      for (size_t i = 0; i < hl.size(); ++i)
        if (!nearest(fl[i], hl[i], widen)) return c.what + ": " + at(bf ? "rows_bf16" : "rows_f16", int64_t(i));
    }
  }
  return "";
}

// The rotation as the contract writes it, from the cache of the same path: x' = fma(x, c, -(y s)) and
// y' = fma(y, c, x s) in double, then rounded once to the row's format; the rest of the head and pad tokens
// stay as they were.
template <class T>
std::string check_rotation(const RopeCase &c, const char *kernel, const std::vector<T> &in, const std::vector<T> &out,
                           const std::vector<float> &cache, int64_t heads, int64_t offset, int64_t ts, int64_t hd,
                           float (*widen)(uint16_t)) {
  const int64_t r = c.r.rotary_dim(), h = r / 2;
  const bool halves = c.r.pairs() == posenc::rope_pairs::halves;
  auto value = [&](const std::vector<T> &v, int64_t i) -> double {
    if constexpr (sizeof(T) == 4)
      return double(v[size_t(i)]);
    else
      return double(widen(v[size_t(i)]));
  };
  for (int64_t t = 0; t < rows_of(c); ++t) {
    const bool pad = !c.list.empty() && c.list[size_t(t)] == kPad;
    for (int64_t j = 0; j < heads; ++j) {
      const int64_t row = offset + t * ts + j * hd;
      for (int64_t e = r; e < hd; ++e)
        if (std::memcmp(&in[size_t(row + e)], &out[size_t(row + e)], sizeof(T)) != 0)
          return c.what + ": " + at(kernel, row + e) + " is past the rotary dimension but changed";
      for (int64_t i = 0; i < h; ++i) {
        const int64_t a = row + (halves ? i : 2 * i), b = row + (halves ? i + h : 2 * i + 1);
        const double x = value(in, a), y = value(in, b), cs = cache[size_t(t * r + i)],
                     sn = cache[size_t(t * r + h + i)];
        const double xr = pad ? x : std::fma(x, cs, -(y * sn)), yr = pad ? y : std::fma(y, cs, x * sn);
        for (const auto &[idx, want] : {std::make_pair(a, xr), std::make_pair(b, yr)}) {
          bool good;
          if constexpr (sizeof(T) == 4)
            good = bits(out[size_t(idx)]) == bits(float(want));
          else
            good = pad ? out[size_t(idx)] == in[size_t(idx)] : nearest(want, out[size_t(idx)], widen);
          if (!good) return c.what + ": " + at(kernel, idx);
        }
      }
    }
  }
  return "";
}

std::string rotations() {
  Rng rng(4242);
  for (const RopeCase &c : rope_cases()) {
    const posenc_rope *rp = &c.r.c_rope();
    const int64_t r = c.r.rotary_dim(), h = r / 2, n = rows_of(c), *pl = list_ptr(c);
    std::vector<float> cache(size_t(n * r));
    call("rope_cache_f32", posenc_rope_cache_f32(rp, pl, c.first, n, cache.data(), r, cache.data() + h, r));
    const Qkv q(r);
    // One tensor of 3 heads, then q and k of a fused QKV buffer, each against the definition.
    auto both = [&](const auto &x, const char *one, auto rope, const char *qk, auto rope_qk,
                    float (*widen)(uint16_t)) -> std::string {
      auto o = x;
      call(one, rope(rp, pl, c.first, n, o.data(), 3, q.ts, q.hd));
      if (auto e = check_rotation(c, one, x, o, cache, 3, 0, q.ts, q.hd, widen); !e.empty()) return e;
      o = x;
      call(qk, rope_qk(rp, pl, c.first, n, o.data(), q.q_heads, q.ts, q.hd, o.data() + q.k_offset(), q.k_heads, q.ts,
                       q.hd));
      if (auto e = check_rotation(c, qk, x, o, cache, q.q_heads, 0, q.ts, q.hd, widen); !e.empty()) return e;
      return check_rotation(c, qk, x, o, cache, q.k_heads, q.k_offset(), q.ts, q.hd, widen);
    };
    const size_t size = size_t(n * q.ts);
    std::string e = both(rng.floats(size), "rope_f32", posenc_rope_f32, "rope_qk_f32", posenc_rope_qk_f32, widen_bf16);
    if (e.empty())
      e = both(rng.halves(size, true), "rope_bf16", posenc_rope_bf16, "rope_qk_bf16", posenc_rope_qk_bf16, widen_bf16);
    if (e.empty())
      e = both(rng.halves(size, false), "rope_f16", posenc_rope_f16, "rope_qk_f16", posenc_rope_qk_f16, widen_f16);
    if (!e.empty()) return e;
  }
  return "";
}

const std::vector<Known> &known() {
  static const std::vector<Known> k = {
      {"the seeds' d = 6 table (table_f32, 4 decimals)", seeds_table},
      {"sin and cos of integer angles, MPFR's bits (rows_f32, table_f32, rope_cache_f32; m = 2 exact)", integer_angles},
      {"zero rows and columns, row splits (rows_f32, table_f32, rope_cache_f32)", zeros_and_splits},
      {"refused calls leave the output untouched", refusals},
      {"add_f32, embed_f32 / bf16 / f16, embed_learned_f32 are one fmaf of the PE value", fused_definitions},
      {"bf16 / f16 tables and rows are the float32 values rounded to nearest-even", half_tables},
      {"rotations (rope_f32 / bf16 / f16, rope_qk_*) are the contract's fma of the cache values", rotations},
  };
  return k;
}

void check_known(const std::vector<posenc_isa> &paths, Report &rep) {
  for (const Known &k : known()) {
    std::string good;
    int passed = 0;
    for (posenc_isa isa : paths) {
      force(isa);
      std::string why;
      try {
        why = k.run();
      } catch (const Refused &e) {
        why = e.what;
      } catch (const posenc::error &e) {
        why = posenc_status_string(e.status());
      }
      if (why.empty())
        good += std::string(good.empty() ? "" : " ") + posenc_isa_name(isa), ++passed;
      else
        rep.fail(k.name + " on " + posenc_isa_name(isa) + ": " + why);
    }
    if (passed) rep.ok(k.name + ": " + good, passed);
  }
}

}  // namespace

int check_main(int argc, char **argv) {
  bool quiet = false, large = false;
  read_options(argc, argv, [&](Args &a) {
    if (a.name() == "--quiet")
      quiet = true;
    else if (a.name() == "--large")
      large = true;
    else
      return false;
    a.flag();
    return true;
  });
  std::vector<posenc_isa> paths;
  std::string names;
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) {
      paths.push_back(posenc_isa(v));
      names += std::string(names.empty() ? "" : " ") + posenc_isa_name(posenc_isa(v));
    }
  if (!quiet) std::printf("posenc check: posenc %s, paths %s (each forced in turn)\n", posenc_version(), names.c_str());
  Report rep(quiet);
  compare_paths(samples(large), paths, rep);
  check_known(paths, rep);
  if (rep.failed())
    std::printf("posenc check: %d of %d checks FAILED\n", rep.failed(), rep.checks());
  else
    std::printf("posenc check: all %d checks passed\n", rep.checks());
  return rep.failed() ? kExitFailed : kExitOk;
}

}  // namespace cli
