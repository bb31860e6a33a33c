// Cross-architecture golden tables: the SHA-256 of fixed tables, checked in below. Each hash is the
// hash of MPFR's correctly rounded tables (recomputed here, so a wrong constant fails), and every path
// of every build (x86-64 natively, aarch64 under qemu) must reproduce it byte for byte.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/reference.hpp"
#include "support/sha256.hpp"
#include "support/spec.hpp"

namespace {

struct Golden {
  const char *name;
  posenc_spec spec;
  std::vector<int64_t> positions;
  const char *sha256;
};

using ref::spec_of;

std::vector<int64_t> run_of(int64_t first, int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t r = 0; r < n; ++r) v[r] = first + r;
  return v;
}

// The hash of a table's floats, as the checked-in hashes are taken.
std::string sha256_of(const std::vector<float> &t) {
  ref::Sha256 h;
  h.update(t.data(), t.size() * sizeof(float));
  return h.hex();
}

// MPFR's table of each golden, row(spec, point, out) for each point (position or timestep) of g.*points, has
// the checked-in hash: a wrong constant fails here rather than only on the library.
template <class G, class P, class Row>
void mpfr_reproduces(const std::vector<G> &goldens, std::vector<P> G::*points, Row row) {
  for (const G &g : goldens) {
    const int64_t d = g.spec.d_model;
    std::vector<float> t((g.*points).size() * d);
    for (size_t r = 0; r < (g.*points).size(); ++r) row(g.spec, (g.*points)[r], &t[r * d]);
    INFO(g.name);
    CHECK(sha256_of(t) == g.sha256);
  }
}

// Every path of this build writes each golden's table, write(g, out, n, d) for the n points (positions or
// timesteps) of g.*points, with the checked-in hash.
template <class G, class P, class Write>
void every_path_reproduces(const std::vector<G> &goldens, std::vector<P> G::*points, Write write) {
  for (posenc_isa isa : ref::paths())
    ref::on_path(isa, [&] {
      for (const G &g : goldens) {
        const int64_t d = g.spec.d_model, n = int64_t((g.*points).size());
        std::vector<float> t(n * d);
        REQUIRE(write(g, t.data(), n, d) == POSENC_OK);
        INFO(g.name << " on " << posenc_isa_name(isa));
        CHECK(sha256_of(t) == g.sha256);
      }
    });
}

const std::vector<Golden> &goldens() {
  static const std::vector<Golden> g = {
      {"vaswani d=64, positions 0..63", posenc_spec_default(64), run_of(0, 64),
       "84f6dfc6b5108aea633cb0fc00c93e4a6d15e97f7e8ae29210a3dc02d2843dde"},
      {"sin|cos halves d=33, base 1e6, positions -100..-69", spec_of(33, POSENC_SIN_COS_HALVES, 1e6, 0.0, 1.0),
       run_of(-100, 32), "561a90058300ea1a1aaaad546bd5b338836caa9ac284824ae6ac86f79ed8486e"},
      {"cos|sin halves d=130, D=64, scattered rows and a pad",
       spec_of(130, POSENC_COS_SIN_HALVES, 1e4, 64.0, 1.0),
       {0, 1, 1000000, 2147483647, -12345, POSENC_PAD, 7},
       "9183432ea0a12e4b5dcbbb66d62e8e2c68ed0d847a0494e9ab05f7f5544116dd"},
      {"interleaved d=48, base 2, D=0.5, scale 2^100, near the top of the range",
       spec_of(48, POSENC_INTERLEAVED, 2.0, 0.5, 0x1p100), run_of((int64_t(1) << 31) - 40, 39),
       "61bc310d0943be9746c6420a2ba4f8af431a926f4cb1576dbdebcb2fe3914c82"},
  };
  return g;
}

bool is_run(const std::vector<int64_t> &p) {
  for (size_t k = 1; k < p.size(); ++k)
    if (p[k] != p[k - 1] + 1) return false;
  return true;
}

}  // namespace

TEST_CASE("the checked-in hashes are those of MPFR's correctly rounded tables", "[golden]") {
  mpfr_reproduces(goldens(), &Golden::positions, ref::exact_row);
}

TEST_CASE("every path of this build reproduces the golden hashes", "[golden]") {
  every_path_reproduces(goldens(), &Golden::positions, [](const Golden &g, float *t, int64_t n, int64_t d) {
    if (is_run(g.positions)) return posenc_table_f32(&g.spec, g.positions[0], n, t, d);
    return posenc_rows_f32(&g.spec, g.positions.data(), n, t, d);
  });
}

// Real-valued positions (posenc_timesteps_f32): diffusion timesteps between the integers, Flux's [0, 1]
// scaled by 1000, and the ends of the range (a subnormal, -0, the largest fraction, +-(2^31 - 1/2)).
struct GoldenTimes {
  const char *name;
  posenc_spec spec;
  std::vector<double> t;
  const char *sha256;
};

const std::vector<GoldenTimes> &golden_times() {
  static const std::vector<GoldenTimes> g = {
      {"diffusers flip_sin_to_cos, shift 0, d=320, fractional timesteps",
       spec_of(320, POSENC_COS_SIN_HALVES, 1e4, 160.0, 1.0),
       {0.0, 0.5, 1.0, 999.5, 999.0, 250.25, 1e-3, 123.456, 0x1.8p-20},
       "8a0ec3a9e1a6c7b7f3f205cf14234174aa4c75f6c0238ff071e9a19dc86cad71"},
      {"flux d=256, time_factor 1000, t in [0, 1]",
       spec_of(256, POSENC_COS_SIN_HALVES, 1e4, 128.0, 1000.0),
       {0.0, 0.001, 0.25, 0.5, 0.999, 1.0, 1.0 / 3.0, 0x1.fffffffffffffp-1},
       "8828a9c5f01bc205dde1f5cca03a37b4a8402f6a1c5e71ef3b0c7b99c66c2083"},
      {"interleaved d=34, base 2, the ends of the range",
       spec_of(34, POSENC_INTERLEAVED, 2.0, 0.0, 1.0),
       {-2147483647.5, 2147483647.5, 0x1.fffffffcp30, 1e-300, -0.0, 0x1p-1074, 0x1.fffffffffffffp-1, -0.75},
       "f2d06cfe677b79780547144849d8139c4cb31381b85a9097e06f21085d6cdfc7"},
  };
  return g;
}

TEST_CASE("the checked-in timestep hashes are those of MPFR's correctly rounded rows", "[golden]") {
  mpfr_reproduces(golden_times(), &GoldenTimes::t, ref::exact_row_real);
}

TEST_CASE("every path of this build reproduces the golden timestep hashes", "[golden]") {
  every_path_reproduces(golden_times(), &GoldenTimes::t, [](const GoldenTimes &g, float *t, int64_t n, int64_t d) {
    return posenc_timesteps_f32(&g.spec, g.t.data(), n, t, d);
  });
}

TEST_CASE("SHA-256 itself: the FIPS 180-4 examples", "[golden]") {
  ref::Sha256 a;
  a.update("abc", 3);
  CHECK(a.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ref::Sha256 b;
  const std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  b.update(m.data(), m.size());
  CHECK(b.hex() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  ref::Sha256 c;
  CHECK(c.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
