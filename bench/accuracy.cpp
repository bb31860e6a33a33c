// posenc-accuracy: what each implementation's speed costs in accuracy. Max error in float32 ULPs against
// MPFR (the exact angle from the spec's doubles, tests/support/reference.hpp) for every posenc path and
// every peer, on a fixed sample: all 256 pairs of d = 512 at 16 consecutive positions around 1e3, 1e5,
// 1e6 and 2^31 - 1. RoPE: the cos/sin that rotate q and k, r = 128 (64 pairs, f_i = base^(-2i/128)),
// bases 1e4 and 5e5, 16 positions around 4096, 32768, 131072, 2^20 and 2^31 - 1: HF's float32 formula,
// llama.cpp's float theta chain and posenc_rope_cache_f32 on every path, against MPFR; and the multi-axis
// RoPE of Qwen2.5-VL (accuracy_axes.cpp).
//   posenc-accuracy [--json FILE]
// Prints the tables; exits 1 when a posenc path breaks the contract's 1 ULP on the tables or its 0.5 ULP
// (correct rounding) on the RoPE cos/sin (a library bug, not noise).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "accuracy_axes.hpp"
#include "accuracy_cells.hpp"
#include "accuracy_times.hpp"
#include "peers/peers.hpp"
#include "peers/rope.hpp"
#include "posenc/posenc.h"
#include "support/reference.hpp"

namespace {

constexpr int64_t kD = 512, kRows = 16;

struct Group {
  const char *label;
  int64_t center;
};
const Group kGroups[] = {{"1e3", 1000}, {"1e5", 100000}, {"1e6", 1000000}, {"2^31-1", 2147483647}};

// The 16 positions of a group: center - 8 .. center + 7, shifted down to stay below 2^31.
std::vector<int64_t> group_positions(const Group &g) {
  const int64_t start = std::min<int64_t>(g.center - 8, 2147483647 - kRows + 1);
  std::vector<int64_t> p(kRows);
  for (int64_t r = 0; r < kRows; ++r) p[size_t(r)] = start + r;
  return p;
}

struct Impl {
  std::string name, kind;  // kind: "posenc" or "peer"
  std::vector<float> out;  // kRows rows of kD, interleaved
  double max_ulp = 0, max_abs = 0;
  int64_t over_one = 0, count = 0;
};

// Fills every implementation's rows for one group.
void compute(std::vector<Impl> &impls, const std::vector<int64_t> &pos) {
  const posenc_spec spec = posenc_spec_default(kD);
  const peers::Freqs freqs(spec);
  for (Impl &im : impls) {
    im.out.assign(size_t(kRows * kD), 0.0f);
    if (im.kind == "posenc") {
      accuracy::force_path(im.name);
      if (posenc_rows_f32(&spec, pos.data(), kRows, im.out.data(), kD) != POSENC_OK) std::abort();
    } else {
      for (const peers::TablePeer &p : peers::table_peers())
        if (im.name == p.name) p.fn(freqs, pos.data(), 0, kRows, im.out.data(), kD);
    }
  }
}

void measure(Impl &im, float got, mpfr_srcptr exact) {
  const double u = ref::ulp_error(got, exact);
  const double a = std::fabs(mpfr_get_d(exact, MPFR_RNDN) - double(got));
  im.max_ulp = std::max(im.max_ulp, u);
  im.max_abs = std::max(im.max_abs, a);
  im.over_one += u > 1.0;
  im.count += 1;
}

// ---- RoPE ------------------------------------------------------------------------------------------------
constexpr int64_t kRopeR = 128;
const double kRopeBases[] = {1e4, 5e5};
const Group kRopeGroups[] = {
    {"4096", 4096}, {"32768", 32768}, {"131072", 131072}, {"2^20", 1048576}, {"2^31-1", 2147483647}};

// The cos and sin (kRows x h each) of one implementation at the positions.
//   hf_fp32:  cosf / sinf of fl32(fl32(p) * inv_freq32), inv_freq32 = 1 / fl32(fl32(base) ** fl32(2i/r)):
//             HF's LlamaRotaryEmbedding, and vLLM's float32 cos_sin_cache (the same float32 products)
//   llamacpp: theta = (float)p, then theta *= powf(base, -2/r) from pair to pair, cosf / sinf (ggml CPU)
posenc_status rope_values(const std::string &impl, double base, const std::vector<int64_t> &pos, float *c, float *s) {
  constexpr int64_t h = kRopeR / 2;
  if (impl == "hf_fp32" || impl == "llamacpp") {
    const peers::RopeModel m(kRopeR, kRopeR, base, 0);
    for (int64_t r = 0; r < kRows; ++r) {
      float theta = float(pos[size_t(r)]);
      for (int64_t i = 0; i < h; ++i) {
        const float a = impl == "hf_fp32" ? float(pos[size_t(r)]) * m.inv_freq[i] : theta;
        c[r * h + i] = cosf(a);
        s[r * h + i] = sinf(a);
        theta *= m.theta_scale;
      }
    }
    return POSENC_OK;
  }
  accuracy::force_path(impl);
  posenc_rope rope = posenc_rope_default(kRopeR);
  rope.base = base;
  return posenc_rope_cache_f32(&rope, pos.data(), 0, kRows, c, h, s, h);
}

// Cells base by base, group by group, implementation by implementation.
std::vector<accuracy::Cell> rope_accuracy(const std::vector<std::string> &paths) {
  constexpr int64_t h = kRopeR / 2;
  constexpr size_t kSin = size_t(kRows * h);  // each implementation's values: the cos rows, then the sin rows
  const accuracy::Impls impls = accuracy::implementations(paths, {"hf_fp32", "llamacpp"});
  std::vector<accuracy::Cell> rows;
  for (const double base : kRopeBases) {
    posenc_spec spec = posenc_spec_default(kRopeR);  // w_i = base^(-i/64) = base^(-2i/128): the RoPE f_i
    spec.base = base;
    for (const Group &g : kRopeGroups) {
      const std::vector<int64_t> pos = group_positions(g);
      const size_t first = rows.size();
      const auto run = [&](const std::string &impl, float *v) {
        const posenc_status st = rope_values(impl, base, pos, v, v + kSin);
        if (st != POSENC_OK)
          std::fprintf(stderr, "posenc-accuracy: posenc_rope_cache_f32 on %s, base %g, p ~ %s: %s (not measured)\n",
                       impl.c_str(), base, g.label, posenc_status_string(st));
        return st == POSENC_OK;
      };
      const auto got = accuracy::run_group(rows, impls, accuracy::Cell{{}, {}, g.label, g.center, base}, 2 * kSin, run);
      ref::Big es, ec;
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t i = 0; i < h; ++i) {
          ref::exact_pair(spec, i, pos[size_t(r)], es, ec);
          accuracy::add_pair(&rows[first], got, size_t(r * h + i), kSin + size_t(r * h + i), ec, es);
        }
    }
  }
  return rows;
}

void write_json(const char *path, const std::vector<std::vector<Impl>> &by_group,
                const std::vector<accuracy::Cell> &rope, const std::vector<accuracy::Cell> &axes,
                const std::vector<accuracy::Cell> &times) {
  FILE *f = std::fopen(path, "w");
  if (!f) {
    std::perror(path);
    std::exit(2);
  }
  std::fprintf(f, "{\n  \"mpfr\": \"%s\", \"d_model\": %lld, \"positions_per_group\": %lld,\n  \"results\": [\n",
               MPFR_VERSION_STRING, (long long)kD, (long long)kRows);
  const char *sep = "";
  for (size_t g = 0; g < by_group.size(); ++g)
    for (const Impl &im : by_group[g]) {
      std::fprintf(f,
                   "%s    {\"impl\": \"%s\", \"kind\": \"%s\", \"group\": \"%s\", \"center\": %lld, "
                   "\"max_ulp\": %.6g, \"max_abs\": %.6g, \"over_1ulp\": %lld, \"count\": %lld}",
                   sep, im.name.c_str(), im.kind.c_str(), kGroups[g].label, (long long)kGroups[g].center, im.max_ulp,
                   im.max_abs, (long long)im.over_one, (long long)im.count);
      sep = ",\n";
    }
  std::fprintf(f, "\n  ],\n  \"rope\": {\"rotary_dim\": %lld, \"positions_per_group\": %lld, \"results\": [\n",
               (long long)kRopeR, (long long)kRows);
  accuracy::write_cells(f, rope, [](FILE *o, const accuracy::Cell &c) {
    std::fprintf(o, "\"base\": %g, \"group\": \"%s\", \"center\": %lld, ", c.base, c.group, (long long)c.center);
  });
  std::fprintf(f, ",\n");
  accuracy::write_axes_json(f, axes);
  std::fprintf(f, ",\n");
  accuracy::write_times_json(f, times);
  std::fprintf(f, "\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char **argv) {
  const char *json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  std::vector<Impl> proto;
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) proto.push_back({posenc_isa_name(posenc_isa(v)), "posenc", {}});
  for (const peers::TablePeer &p : peers::table_peers())
    if (posenc_isa_available(p.needs)) proto.push_back({p.name, "peer", {}});

  const posenc_spec spec = posenc_spec_default(kD);
  const posenc_isa active = posenc_active_isa();
  std::vector<std::vector<Impl>> by_group;
  for (const Group &g : kGroups) {
    std::vector<Impl> impls = proto;
    const std::vector<int64_t> pos = group_positions(g);
    compute(impls, pos);
    ref::Big s, c;
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t i = 0; i < kD / 2; ++i) {
        ref::exact_pair(spec, i, pos[size_t(r)], s, c);
        for (Impl &im : impls) {
          measure(im, im.out[size_t(r * kD + 2 * i)], s);
          measure(im, im.out[size_t(r * kD + 2 * i + 1)], c);
        }
      }
    by_group.push_back(std::move(impls));
  }
  std::vector<std::string> path_names;
  for (const Impl &im : proto)
    if (im.kind == "posenc") path_names.push_back(im.name);
  const std::vector<accuracy::Cell> rope = rope_accuracy(path_names);
  const std::vector<accuracy::Cell> axes = accuracy::rope_axes_accuracy(path_names);
  const std::vector<accuracy::Cell> times = accuracy::timesteps_accuracy(path_names);
  posenc_force_isa(active);

  bool broken = false;
  std::printf("%-18s", "max ULP error");
  for (const Group &g : kGroups) std::printf(" %14s", g.label);
  std::printf("\n");
  for (size_t k = 0; k < proto.size(); ++k) {
    std::printf("%-18s", (proto[k].kind == "posenc" ? "posenc " + proto[k].name : proto[k].name).c_str());
    for (const auto &impls : by_group) {
      std::printf(" %14.4g", impls[k].max_ulp);
      broken |= proto[k].kind == "posenc" && impls[k].max_ulp > 1.0;
    }
    std::printf("\n");
  }
  std::printf("\nRoPE cos/sin, r = %lld: max abs error (max ULP error)\n%-10s %-8s", (long long)kRopeR, "impl", "base");
  // a line per (base, impl), its groups across
  bool rope_broken = !accuracy::print_cells(rope, path_names.size() + 2, std::size(kRopeGroups), 10);
  rope_broken |= !accuracy::print_axes(axes);
  rope_broken |= !accuracy::print_times(times);
  if (json) write_json(json, by_group, rope, axes, times);
  if (broken) std::fprintf(stderr, "posenc-accuracy: a posenc path is off by more than 1 ULP\n");
  if (rope_broken) std::fprintf(stderr, "posenc-accuracy: a posenc path's RoPE cos/sin is not correctly rounded\n");
  broken |= rope_broken;
  return broken ? 1 : 0;
}
