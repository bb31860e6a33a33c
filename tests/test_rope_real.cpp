// RoPE at real-valued positions (posenc.h, "RoPE at real-valued positions"; docs/rope.md). The reference is
// MPFR (support/rope_check.hpp, Exact::pair_real): the exact angle t * position_scale * f_i for the double t,
// m cos and m sin of it rounded once to float32; the rotation is posenc.h's formula applied to those floats
// by support/rope.hpp. Nothing expected comes from the library:
//  - the cache is correctly rounded on every path at fractional, integer-valued, negative, huge (up to
//    2^31 with fractions), tiny and subnormal positions, with default and explicit frequencies, attention and
//    position scales, one axis and the diffusion models' per-axis layouts;
//  - rope_*_real, rope_qk_*_real and rope_copy_*_real in f32, bf16 and f16 equal the formula byte for byte;
//  - integer-valued positions give the bytes of the integer calls (every kernel, every path, multi-axis);
//  - every split into parts gives the bytes of the whole call;
//  - golden digests of MPFR's values, checked in, reproduced by every path;
//  - bad input: the documented status, and not one byte written.
#include <mpfr.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/rope.hpp"
#include "support/rope_check.hpp"
#include "support/sha256.hpp"

using namespace rope_check;

namespace {

constexpr double k2p31d = 2147483648.0;
const float kCanary = -1234.5f;

double unit(uint64_t &s) { return double(splitmix(s) >> 11) * 0x1p-53; }

// Real positions of every kind: patch midpoints and linspace steps, seconds at a frame rate, integer-valued
// ones, negatives (Qwen-Image's centred grids), huge ones with fractions, ties at .5, fractional parts so
// small that the reduction's products could underflow, subnormals and signed zeros.
std::vector<double> real_positions(uint64_t seed, int count) {
  // a table, laid out by hand
  // clang-format off
  std::vector<double> t = {0.0,  -0.0, 1.0,          0.5,           -0.5,       2.5,       1.5,      0.25,
                           31.5, 1e-5, 1.0 / 24.0,   120.0 / 25.0,  -7.75,      1e6 + 0.5, -1e6 - 0.5,
                           2147483647.0, 2147483647.5, -2147483647.75, 0x1p-60, 0x1p-61, -0x1p-70, 1e-300,
                           5e-324, -5e-324, 3.0 + 0x1p-62, 100.0 - 0x1p-50, 0.5 + 0x1p-52, 65535.96875};
  // clang-format on
  while (int(t.size()) < count) {
    const double u = unit(seed);
    switch (splitmix(seed) % 4) {
      case 0: t.push_back(std::floor(64 * u) + 0.5); break;       // patch midpoints
      case 1: t.push_back(49.0 * u); break;                       // linspace over a grid
      case 2: t.push_back(std::floor(4096 * u) - 2048.0); break;  // integer-valued, either sign
      default: t.push_back((u - 0.5) * k2p31d * 0.999); break;    // anywhere, with a fraction
    }
  }
  t.resize(size_t(count));
  return t;
}

// Explicit frequencies of every size and sign, each below 2^52 (the real calls' bound): odd_frequencies with
// its huge ones scaled down by 2^-60 until they are below.
std::vector<double> real_frequencies(int64_t h, uint64_t seed) {
  std::vector<double> f = odd_frequencies(h, seed);
  for (double &v : f)
    while (std::fabs(v) >= 0x1p52) v = std::ldexp(v, -60);
  return f;
}

// A spec with an axis map from posenc_rope_sections (its frequencies too, for the layouts that write them).
Rope sectioned(const std::string &name, int64_t r, posenc_rope_pairs pairs, double base, std::vector<int64_t> sec,
               posenc_rope_layout layout, double m = 1.0) {
  Rope rope = make_rope(name, r, pairs, base, 1.0, m);
  const int64_t h = r / 2;
  rope.axis.resize(size_t(h));
  std::vector<double> freq(static_cast<size_t>(h), 0.0);
  sec.resize(4, 0);
  posenc_rope spec = rope.r;
  REQUIRE(posenc_rope_sections(&spec, sec.data(), layout, rope.axis.data(), freq.data()) == POSENC_OK);
  rope.r.axes = spec.axes;
  if (spec.freq) rope.freq = freq;
  return rope;
}

// The specs of the accuracy tests.
std::vector<Rope> specs() {
  return {
      make_rope("r=128 base 1e4 halves", 128, POSENC_ROPE_HALVES, 1e4),
      make_rope("r=96 base 5e5 m 1.369 position scale 0.25", 96, POSENC_ROPE_HALVES, 5e5, 0.25, 1.369),
      make_rope("r=40 explicit odd frequencies, m 0.7", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 0.7,
                real_frequencies(20, 5)),
      make_rope("r=32 m 3e12, position scale -0.75", 32, POSENC_ROPE_HALVES, 1e4, -0.75, 3.0e12),
      make_rope("r=16 position scale 2^40 (angles to 2^71)", 16, POSENC_ROPE_HALVES, 1e4, 0x1p40),
      make_rope("r=24 tiny frequencies (position scale 1e-300), m 2^-60", 24, POSENC_ROPE_INTERLEAVED, 1e4, 1e-300,
                0x1p-60),
      make_rope("r=12 base 1e300 (negligible pairs)", 12, POSENC_ROPE_HALVES, 1e300),
      sectioned("Flux per-axis [8, 28, 28] theta 1e4", 128, POSENC_ROPE_INTERLEAVED, 1e4, {8, 28, 28},
                POSENC_SECTIONS_PER_AXIS),
      sectioned("Wan per-axis [22, 21, 21]", 128, POSENC_ROPE_INTERLEAVED, 1e4, {22, 21, 21}, POSENC_SECTIONS_PER_AXIS),
      sectioned("mrope chunked [16, 24, 24] m 1.25", 128, POSENC_ROPE_HALVES, 1e6, {16, 24, 24},
                POSENC_SECTIONS_CHUNKED, 1.25),
      sectioned("Qwen3-VL interleaved [24, 20, 20]", 128, POSENC_ROPE_HALVES, 5e6, {24, 20, 20},
                POSENC_SECTIONS_INTERLEAVED),
  };
}

// axes * n positions, axis-major: axis 0 from real_positions, the others shuffled copies of other draws.
std::vector<double> axis_positions(int axes, int64_t n, uint64_t seed) {
  std::vector<double> t;
  for (int a = 0; a < axes; ++a) {
    std::vector<double> v = real_positions(seed + uint64_t(a) * 7919, int(n));
    if (a > 0)
      for (size_t k = v.size(); k > 1; --k) std::swap(v[k - 1], v[size_t(splitmix(seed) % k)]);
    t.insert(t.end(), v.begin(), v.end());
  }
  return t;
}

// posenc_rope_cache_real_f32 on the current path: h cos then h sin per token, the canaries checked.
std::vector<float> library_cache(const Rope &rope, const std::vector<double> &t, int64_t n, bool vllm) {
  const posenc_rope r = rope.get();
  const auto write = [&](float *cos_out, int64_t cs, float *sin_out, int64_t ss) {
    return posenc_rope_cache_real_f32(&r, t.data(), n, cos_out, cs, sin_out, ss);
  };
  return cache_between_canaries(rope.h(), n, vllm, kCanary, write);
}

std::vector<float> reference_cache(Exact &ex, const std::vector<double> &t, int64_t n, int axes) {
  std::vector<float> want;
  for (int64_t k = 0; k < n; ++k) {
    double p[4] = {0, 0, 0, 0};
    for (int a = 0; a < axes; ++a) p[a] = t[size_t(a * n + k)];
    const std::vector<float> row = ex.token_real(p);
    want.insert(want.end(), row.begin(), row.end());
  }
  return want;
}

void check_cache(const Rope &rope, const std::vector<double> &t, int64_t n) {
  Exact ex(rope);
  const int axes = rope.r.axes;
  const int64_t h = rope.h();
  const std::vector<float> want = reference_cache(ex, t, n, axes);
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (bool vllm : {true, false}) {
        const std::vector<float> got = library_cache(rope, t, n, vllm);
        int64_t bad = 0;
        for (size_t k = 0; k < want.size(); ++k) {
          if (ref::bits(got[k]) == ref::bits(want[k])) continue;
          const int64_t tok = int64_t(k) / (2 * h), e = int64_t(k) % (2 * h);
          if (++bad <= 5)
            UNSCOPED_INFO((e < h ? "cos" : "sin") << " of pair " << e % h << " at t = " << t[size_t(tok)] << ": got "
                                                  << got[k] << " want " << want[k]);
        }
        INFO(rope.name << " on " << posenc_isa_name(isa) << (vllm ? ", vLLM layout" : ", two buffers") << ": " << bad
                       << " values not correctly rounded");
        CHECK(bad == 0);
      }
    });
}

// A call at real positions t of n tokens with two heads of d elements per token (token stride 2 d): the cache
// with rows of h, or the rotation of x (and k for the _qk calls, the source rows for the _copy calls). The
// caller points x, k and src at its buffers.
ref::RopeCall two_heads(RopeKernel kernel, const posenc_rope &spec, int64_t n, const double *t, int64_t d) {
  const int64_t h = spec.rotary_dim / 2;
  ref::RopeCall c;
  c.kernel = kernel;
  c.rope = &spec;
  c.n = n;
  c.real = true;
  c.times = t;
  c.token_stride = c.k_token_stride = ref::is_cache(kernel) ? h : 2 * d;
  c.heads = 2;
  c.head_stride = c.k_head_stride = c.src_head_stride = d;
  c.k_heads = ref::is_qk(kernel) ? 2 : 0;
  c.src_token_stride = 2 * d;
  return c;
}

}  // namespace

TEST_CASE("real positions: the cache is correctly rounded on every path", "[rope][real]") {
  uint64_t seed = 11;
  for (const Rope &rope : specs()) {
    const int64_t n = 96;
    check_cache(rope, axis_positions(rope.r.axes, n, seed++), n);
  }
}

TEST_CASE("real positions: values near zero and near m, where only correct windows keep the fast form honest",
          "[rope][real]") {
  // The fast form's values (values_rope_real.hpp) are within 2^-51.1 (times mu); random positions almost never
  // put a value where that matters (|v| < 2^-28), so these are built to: t = (pi j + eps) / f_i puts pair i's
  // angle within eps of a multiple of pi (sin tiny; cos tiny at j + 1/2). A window narrower than the error
  // misrounds many of them. Then cos next to m at tiny angles, m = 1 and m a float32 midpoint.
  uint64_t seed = 78;
  const std::vector<Rope> all = specs();
  std::vector<Rope> near = {
      make_rope("r=128 base 1e4 position scale 1000", 128, POSENC_ROPE_HALVES, 1e4, 1000.0),
      make_rope("r=64 base 2 position scale 3, m 1.3", 64, POSENC_ROPE_INTERLEAVED, 2.0, 3.0, 1.3), all[2], all[7]};
  for (const Rope &rope : near) {
    Exact ex(rope);
    const int64_t h = rope.h();
    std::vector<double> t;
    for (int k = 0; k < 160; ++k) {
      const int64_t i = int64_t(splitmix(seed) % uint64_t(h));
      Big w(256);
      ex.step(i, w);
      const double f = mpfr_get_d(w, MPFR_RNDN);
      if (f == 0.0) continue;
      const double eps = std::ldexp(unit(seed) - 0.5, -25 - int(splitmix(seed) % 20));
      const double j = double(splitmix(seed) % 64) + (k % 2 ? 0.5 : 0.0);
      const double x = (M_PI * j + eps) / f;
      if (std::fabs(x) < 0.5 * k2p31d && x != 0.0) t.push_back(x);
    }
    const int axes = rope.r.axes;
    std::vector<double> all_axes;
    for (int a = 0; a < axes; ++a) all_axes.insert(all_axes.end(), t.begin(), t.end());
    check_cache(rope, all_axes, int64_t(t.size()));
  }
  // The fast form's own error is largest where a fractional position meets a frequency near the 2^52 bound:
  // fr U ~ 2^50 quarter turns leaves its fractional part's rounding (up to 2^-55) in the angle. These t
  // (found by a search of t F mod pi in double-double, offline) put t F within 2e-9 of a multiple of pi, so
  // that sin is about 2^-30 and that rounding is near half its float's unit: a window narrower than the
  // error misrounds several of them.
  {
    const double F = 0x1.e6a09e667f3bdp+50;
    Rope rope =
        make_rope("F = 1.9 2^50, t F near k pi", 16, POSENC_ROPE_HALVES, 1e4, 1.0, 1.0, std::vector<double>(8, F));
    std::vector<double> t = {0x1.3333334081d69p-2, 0x1.333334eaa70cdp-2, 0x1.33333694cc431p-2, 0x1.3333383ef1795p-2,
                             0x1.333339e916af9p-2, 0x1.33333b933be5dp-2, 0x1.33333d3d611c1p-2};
    for (size_t k = 0, n = t.size(); k < n; ++k) t.push_back(-t[k]);
    check_cache(rope, t, int64_t(t.size()));
    Rope scaled = rope;
    scaled.r.attention_scale = 1.3;
    scaled.name += ", m 1.3";
    check_cache(scaled, t, int64_t(t.size()));
  }
  for (double m : {1.0, 1.0 + 0x1p-24, 0.8125}) {
    Rope rope = make_rope("f = 1, 1/3, 1e-3, 2^-30; m " + std::to_string(m), 8, POSENC_ROPE_HALVES, 1e4, 1.0, m,
                          {1.0, 1.0 / 3.0, 1e-3, 0x1p-30});
    std::vector<double> t;
    for (int q = 1; q < 40; ++q)
      for (double e : {0.0, 1e-9, -1e-9, 1e-12}) t.push_back(q * 1.5707963267948966 + e);
    for (double e : {0x1p-30, 0x1p-40, -0x1p-50, 0x1p-60, 1e-200}) t.push_back(e);
    check_cache(rope, t, int64_t(t.size()));
  }
}

TEST_CASE("real positions: rope, rope_qk and rope_copy equal the formula in every format", "[rope][real]") {
  uint64_t seed = 40;
  for (const Rope &rope : specs()) {
    Exact ex(rope);
    const int64_t r = rope.r.rotary_dim, d = r + 6, n = 37;
    const int axes = rope.r.axes;
    const std::vector<double> t = axis_positions(axes, n, seed++);
    Rotation one{"[T,H,D] 3 heads, d = r + 6", 0, thd(3, d, 5), Tensor{}, false, false, n, 0, {}, axes};
    one.elements = end_of(one.q, n, d);
    one.times = t;
    check_rotation(rope, ex, one, seed);
    // a table, laid out by hand
    // clang-format off
    Rotation qk{"qk: fused QKV, 4 q heads, 2 k heads", 0, Tensor{4, 8 * d, d, 0}, Tensor{2, 8 * d, d, 4 * d}, true,
                false, n, 0, {}, axes};
    // clang-format on
    qk.elements = n * 8 * d;
    qk.times = t;
    check_rotation(rope, ex, qk, seed + 1);
    Rotation copy{"copy: [T,H,D] from [H,T,D]",
                  0,
                  thd(2, d),
                  Tensor{},
                  false,
                  false,
                  n,
                  0,
                  {},
                  axes,
                  true,
                  htd(2, n, d, 3, end_of(thd(2, d), n, d))};
    copy.elements = end_of(copy.src, n, d);
    copy.times = t;
    check_rotation(rope, ex, copy, seed + 2);
  }
}

TEST_CASE("real positions: integer-valued ones give the bytes of the integer calls", "[rope][real]") {
  uint64_t seed = 77;
  for (const Rope &rope : specs()) {
    const posenc_rope spec = rope.get();
    const int axes = rope.r.axes;
    const int64_t r = rope.r.rotary_dim, h = rope.h(), n = 41, d = r + 2;
    std::vector<int64_t> pos;
    for (int a = 0; a < axes; ++a)
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t u = splitmix(seed);
        pos.push_back(u % 3 == 0 ? uniform_position(seed) : int64_t(u % 4096) - 1024);
      }
    const std::vector<double> t(pos.begin(), pos.end());
    for (RopeKernel kernel : ref::kAllRopeKernels) {
      const size_t es = ref::format_size(ref::rope_format(kernel));
      const int64_t elements = ref::is_cache(kernel) ? 2 * n * h : 2 * n * 3 * d;
      std::vector<unsigned char> in(size_t(elements) * es);
      fill(ref::rope_format(kernel), in, seed, true);
      ref::RopeCall c;
      c.kernel = kernel;
      c.rope = &spec;
      c.n = n;
      c.positions = pos.data();
      if (ref::is_cache(kernel)) {
        c.token_stride = h;
        c.k_token_stride = h;
      } else {
        c.heads = 3;
        c.token_stride = 3 * d;
        c.head_stride = d;
        c.k_heads = ref::is_qk(kernel) ? 3 : 0;
        c.k_token_stride = 3 * d;
        c.k_head_stride = d;
        c.src_token_stride = 3 * d;
        c.src_head_stride = d;
      }
      for (posenc_isa isa : ref::paths())
        ref::on_path(isa, [&] {
          std::vector<unsigned char> a = in, b = in;
          auto place = [&](ref::RopeCall &x, std::vector<unsigned char> &buf) {
            x.x = buf.data();
            x.k = buf.data() + es * size_t(ref::is_cache(kernel) ? n * h : n * 3 * d);
            x.src = buf.data() + es * size_t(n * 3 * d);  // copy: q's rows read from the second half
            if (ref::is_copy(kernel)) x.heads = 3, x.k_heads = 0;
          };
          ref::RopeCall ci = c, cr = c;
          place(ci, a);
          place(cr, b);
          cr.real = true;
          cr.times = t.data();
          REQUIRE(ref::invoke(ci) == POSENC_OK);
          REQUIRE(ref::invoke(cr) == POSENC_OK);
          INFO(rope.name << ", " << ref::rope_name(kernel) << " on " << posenc_isa_name(isa));
          CHECK(first_difference(a, b, es) == -1);
        });
    }
  }
}

TEST_CASE("real positions: every split into parts writes the bytes of the whole call", "[rope][real][parts]") {
  uint64_t seed = 91;
  const std::vector<Rope> all = specs();
  for (const Rope *rope : {&all[0], &all[2], &all[7]}) {
    const posenc_rope spec = rope->get();
    const int64_t r = rope->r.rotary_dim, h = rope->h(), n = 9, d = r;
    const std::vector<double> t = axis_positions(rope->r.axes, n, seed++);
    for (RopeKernel kernel : ref::kAllRopeKernels) {
      const size_t es = ref::format_size(ref::rope_format(kernel));
      const int64_t half = ref::is_cache(kernel) ? n * h : n * 2 * d;
      std::vector<unsigned char> in(size_t(2 * half) * es);
      fill(ref::rope_format(kernel), in, seed, false);
      ref::RopeCall c = two_heads(kernel, spec, n, t.data(), d);
      auto place = [&](ref::RopeCall &x, std::vector<unsigned char> &buf) {
        x.x = buf.data();
        x.k = buf.data() + es * size_t(half);
        x.src = x.k;
      };
      std::vector<unsigned char> whole = in;
      ref::RopeCall w = c;
      place(w, whole);
      REQUIRE(ref::invoke(w) == POSENC_OK);
      for (int64_t b = 0; b <= n; b += 4)
        for (int64_t e = b; e <= n; e += 3) {
          std::vector<unsigned char> got = in;
          ref::RopeCall p = c;
          place(p, got);
          p.part = true;
          for (const auto &range : {std::pair<int64_t, int64_t>{e, n}, {0, b}, {b, e}}) {
            p.begin = range.first;
            p.end = range.second;
            REQUIRE(ref::invoke(p) == POSENC_OK);
          }
          INFO(rope->name << ", " << ref::rope_name(kernel) << ": parts [0, " << b << ") [" << b << ", " << e << ") ["
                          << e << ", " << n << ")");
          CHECK(first_difference(got, whole, es) == -1);
        }
    }
  }
}

namespace {

// Golden digests: SHA-256 of MPFR's values (and posenc.h's formula on them) for fixed calls.
struct Golden {
  const char *name;
  Rope rope;
  bool cache;  // rope_cache_real_f32 (vLLM layout), else rope_qk_*_real on a fused QKV buffer in `format`
  Format format;
  std::vector<double> times;  // axes * n
  const char *sha256;
};

int64_t golden_n(const Golden &g) { return int64_t(g.times.size()) / g.rope.r.axes; }

Rotation golden_rotation(const Golden &g) {
  const int64_t d = g.rope.r.rotary_dim + 8, ts = 8 * d, n = golden_n(g);
  Rotation c{g.name, n * ts, Tensor{4, ts, d, 0}, Tensor{2, ts, d, 4 * d}, true, false, n, 0, {}, g.rope.r.axes};
  c.times = g.times;
  return c;
}

std::vector<unsigned char> golden_input(const Golden &g) {
  std::vector<unsigned char> in(size_t(golden_rotation(g).elements) * ref::format_size(g.format));
  fill(g.format, in, 2026, false);
  return in;
}

const std::vector<Golden> &goldens() {
  static const std::vector<Golden> g = {
      {"cache Flux per-axis [8, 28, 28], real ids",
       sectioned("", 128, POSENC_ROPE_INTERLEAVED, 1e4, {8, 28, 28}, POSENC_SECTIONS_PER_AXIS),
       true,
       Format::kF32,
       {0, 0, 0.5, 1, 2.25, 0, 0, 0, 0.5, 1.5, 63.5, -0.25, 0, 1, 1.5, 0.5, 0.5, 12.75},
       "fbabf087b015cc81365255a9865fe42f85096bc66844d662e94dc1149b4391f4"},
      {"qk bf16 interleaved r=40 explicit frequencies m 0.7, fractional and huge",
       make_rope("", 40, POSENC_ROPE_INTERLEAVED, 1e4, 1.0, 0.7, real_frequencies(20, 5)),
       false,
       Format::kBF16,
       {0.5, -3.25, 1e-5, 2147483647.5, 1e6 + 0.125},
       "0af8db8bc2385aa3cd5d1895301d0fd32dd8b26cf464740da2f27c84179137b2"},
      {"qk f16 halves LTX-like 3 axes (seconds at 25 fps, patch midpoints), m 1.25",
       sectioned("", 96, POSENC_ROPE_HALVES, 1e4, {16, 16, 16}, POSENC_SECTIONS_PER_AXIS, 1.25),
       false,
       Format::kF16,
       {0.0, 0.04, 0.08, 0.12, 0.5, 0.5, 1.5, 1.5, 0.5, 1.5, 0.5, 1.5},
       "cfca928577ed3b2921623d2fbaba124535ad629535c226e6e9f4ce8ece25fe3a"},
  };
  return g;
}

std::vector<unsigned char> golden_reference(const Golden &g) {
  Exact ex(g.rope);
  if (!g.cache) return expected(g.rope, ex, golden_rotation(g), g.format, golden_input(g));
  return as_bytes(reference_cache(ex, g.times, golden_n(g), g.rope.r.axes));
}

}  // namespace

TEST_CASE("real positions golden: the checked-in hashes are those of MPFR's values and posenc.h's formula",
          "[rope][real][golden]") {
  for (const Golden &g : goldens()) {
    INFO(g.name);
    CHECK(digest(golden_reference(g)) == g.sha256);
  }
}

TEST_CASE("real positions golden: every path of this build reproduces the hashes", "[rope][real][golden]") {
  every_path_reproduces(goldens(), [](const Golden &g) {
    if (!g.cache) return rotated(g.rope, golden_rotation(g), g.format, golden_input(g));
    return as_bytes(library_cache(g.rope, g.times, golden_n(g), true));
  });
}

TEST_CASE("real positions bad input: the documented status, and not one byte written", "[rope][real][hardening]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<uint8_t> axis = {0, 1, 2, 0, 1, 2, 0, 1};
  std::vector<double> big = {1.0, 0.5, 0x1p52, 0.25, 1.0, 1.0, 1.0, 1.0};
  struct Case {
    const char *what;
    int axes;
    bool big_freq;
    double scale;
    std::vector<double> t;  // empty: NULL positions
    int64_t n, begin, end;
    posenc_status want;
  };
  const Case cases[] = {
      {"NULL positions", 1, false, 1.0, {}, 3, 0, 3, POSENC_ERR_NULL},
      {"NaN", 1, false, 1.0, {0.5, nan, 2.0}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"+inf", 1, false, 1.0, {0.5, 1.0, inf}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"-inf", 1, false, 1.0, {-inf, 1.0, 2.0}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"2^31", 1, false, 1.0, {0.5, k2p31d, 2.0}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"-2^31", 1, false, 1.0, {0.5, -k2p31d, 2.0}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"NaN on axis 2 of 3", 3, false, 1.0, {0, 1, 2, 0, 1, 2, 0, nan, 2}, 3, 0, 3, POSENC_ERR_OUT_OF_RANGE},
      {"an explicit frequency of 2^52", 1, true, 1.0, {0.5, 1.0, 2.0}, 3, 0, 3, POSENC_ERR_INVALID},
      {"position scale 2^52 (f_0 = 1)", 1, false, 0x1p52, {0.5, 1.0, 2.0}, 3, 0, 3, POSENC_ERR_INVALID},
      {"n < 0", 1, false, 1.0, {0.5, 1.0, 2.0}, -1, 0, 0, POSENC_ERR_INVALID},
      {"a part past n, after every other check", 1, false, 1.0, {0.5, 1.0, 2.0}, 3, 1, 4, POSENC_ERR_INVALID},
      {"NaN before a part past n: OUT_OF_RANGE first",
       1,
       false,
       1.0,
       {0.5, nan, 2.0},
       3,
       1,
       4,
       POSENC_ERR_OUT_OF_RANGE},
  };
  const int64_t r = 16, h = 8;
  int64_t checked = 0;
  for (const Case &cs : cases)
    for (RopeKernel kernel : ref::kAllRopeKernels)
      for (bool part : {false, true}) {
        if (cs.begin != 0 && !part) continue;
        posenc_rope rope = posenc_rope_default(r);
        rope.position_scale = cs.scale;
        if (cs.big_freq) rope.freq = big.data();
        if (cs.axes > 1) {
          rope.axes = cs.axes;
          rope.axis = axis.data();
        }
        const size_t es = ref::format_size(ref::rope_format(kernel));
        std::vector<unsigned char> buf(size_t(6 * r) * es * 2, 0xA5);
        const std::vector<unsigned char> before = buf;
        ref::RopeCall c = two_heads(kernel, rope, cs.n, cs.t.empty() ? nullptr : cs.t.data(), r);
        c.part = part;
        c.begin = part ? cs.begin : 0;
        c.end = part ? cs.end : 0;
        c.x = buf.data();
        c.k = buf.data() + es * size_t(6 * r);
        c.src = c.k;
        INFO(cs.what << ", " << ref::rope_name(kernel) << (part ? " (part)" : ""));
        CHECK(ref::invoke(c) == cs.want);
        CHECK(buf == before);
        ++checked;
        // the same spec at integer positions is valid (the 2^52 bound is the real calls' own)
        if (cs.big_freq || cs.scale != 1.0) {
          ref::RopeCall ci = c;
          ci.real = false;
          ci.part = false;
          std::vector<int64_t> p = {0, 1, 2};
          ci.positions = p.data();
          CHECK(ref::invoke(ci) == POSENC_OK);
        }
      }
  CHECK(checked == 10 * 10 * 2 + 2 * 10);  // ten cases whole and as a part, two as a part only

  // n = 0 needs no positions (and checks the spec); an empty part of a valid call writes nothing
  posenc_rope rope = posenc_rope_default(r);
  float c[8], s[8];
  CHECK(posenc_rope_cache_real_f32(&rope, nullptr, 0, c, h, s, h) == POSENC_OK);
  rope.rotary_dim = 3;
  CHECK(posenc_rope_cache_real_f32(&rope, nullptr, 0, c, h, s, h) == POSENC_ERR_INVALID);
}
