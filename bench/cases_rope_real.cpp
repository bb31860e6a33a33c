// RoPE at real-valued positions (issue 33): posenc_rope_cache_real_f32 on every path with Flux's per-axis spec
// (128 pairs' worth: [8, 28, 28], theta 1e4, adjacent pairs) at n tokens whose three coordinates are real (a
// CogVideoX-1.0-like linspace over a crop: row and column steps of 29/30 and 44/45, frames 0.5 apart), against
// diffusers' two CPU evaluations written out here: "double", its float64 path (f_i and the angle t f_i in
// double, libm cos / sin in double, rounded to float32), and "float", its float32 path (f_i, t and the angle in
// float32, cosf / sinf). Both peers write the same [cos | sin] rows.
//   rope_cache_real_f32/<impl>/d=128/n=<tokens>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"

namespace bench {
namespace {

const int64_t kSections[4] = {8, 28, 28, 0};

struct RealSpec {
  posenc_rope rope;
  uint8_t axis[64];
  double freq[64];
};

const RealSpec &flux_spec() {
  static const RealSpec s = [] {
    RealSpec r{};
    r.rope = posenc_rope_default(128);
    r.rope.pairs = POSENC_ROPE_INTERLEAVED;
    posenc_rope_sections(&r.rope, kSections, POSENC_SECTIONS_PER_AXIS, r.axis, r.freq);
    return r;
  }();
  return s;
}

// 3 n coordinates, axis-major: frame, row, column of a 13 x 30 x 45 grid's first n tokens, linspace-like.
const std::vector<double> &coords(int64_t n) {
  static std::map<int64_t, std::vector<double>> made;
  std::vector<double> &v = made[n];
  if (!v.empty()) return v;
  v.resize(size_t(3 * n));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t f = t / 1350, y = t / 45 % 30, x = t % 45;
    v[size_t(t)] = double(float(0.5 * double(f)));
    v[size_t(n + t)] = double(float(double(y) * 29.0 / 30.0));
    v[size_t(2 * n + t)] = double(float(double(x) * 44.0 / 45.0));
  }
  return v;
}

Case real_case(const std::string &impl, int64_t n) {
  return make_case("rope_cache_real_f32", impl, 128, n, sizeof(float));
}

void add_real(int64_t n) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, real_case(posenc_isa_name(isa), n));
    c.prepare = [=] {
      const RealSpec *sp = &flux_spec();
      const double *t = coords(n).data();
      float *out = buffer_of<float>("out", n * 128);
      return Work([=] {
        posenc_rope r = sp->rope;
        r.axis = sp->axis;
        r.freq = sp->freq;
        return posenc_rope_cache_real_f32(&r, t, n, out, 128, out + 64, 128);
      });
    };
    add(std::move(c));
  }
  for (const bool dbl : {true, false}) {
    Case c = real_case(dbl ? "double" : "float", n);
    c.prepare = [=] {
      const RealSpec *sp = &flux_spec();
      const double *t = coords(n).data();
      float *out = buffer_of<float>("out", n * 128);
      return Work([=] {
        for (int64_t k = 0; k < n; ++k) {
          float *row = out + k * 128;
          for (int64_t i = 0; i < 64; ++i) {
            const double p = t[sp->axis[i] * n + k];
            if (dbl) {
              const double a = p * sp->freq[i];
              row[i] = float(std::cos(a));
              row[64 + i] = float(std::sin(a));
            } else {
              const float a = float(p) * float(sp->freq[i]);
              row[i] = cosf(a);
              row[64 + i] = sinf(a);
            }
          }
        }
        return POSENC_OK;
      });
    };
    add(std::move(c));
  }
}

}  // namespace

void add_rope_real_cases(const Plan &plan) {
  for (int64_t n : plan.rope_real) add_real(n);
}

}  // namespace bench
