// posenc-accuracy: what each implementation's speed costs in accuracy. Max error in float32 ULPs against
// MPFR (the exact angle from the spec's doubles, tests/support/reference.hpp) for every posenc path and
// every peer, on a fixed sample: all 256 pairs of d = 512 at 16 consecutive positions around 1e3, 1e5,
// 1e6 and 2^31 - 1.
//   posenc-accuracy [--json FILE]
// Prints a table; exits 1 when a posenc path breaks the contract's 1 ULP (a library bug, not noise).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "peers/peers.hpp"
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
      for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
        if (im.name == posenc_isa_name(posenc_isa(v))) posenc_force_isa(posenc_isa(v));
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

void write_json(const char *path, const std::vector<std::vector<Impl>> &by_group) {
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
                   sep, im.name.c_str(), im.kind.c_str(), kGroups[g].label, (long long)kGroups[g].center,
                   im.max_ulp, im.max_abs, (long long)im.over_one, (long long)im.count);
      sep = ",\n";
    }
  std::fprintf(f, "\n  ]\n}\n");
  std::fclose(f);
}

}  // namespace

int main(int argc, char **argv) {
  const char *json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  std::vector<Impl> proto;
  for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
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
  if (json) write_json(json, by_group);
  if (broken) std::fprintf(stderr, "posenc-accuracy: a posenc path is off by more than 1 ULP\n");
  return broken ? 1 : 0;
}
