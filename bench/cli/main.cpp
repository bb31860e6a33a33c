// posenc-cli: one positional-encoding table from a spec, printed and/or saved as .npy.
//   posenc-cli --d-model 6 --positions 10             (prints the seeds' table, 4 decimals)
//   posenc-cli --d-model 200 --positions 512 --npy pe.npy
// Spec options: --layout interleaved|sin-cos-halves|cos-sin-halves, --base B, --denominator D (0: h),
// --scale S, --first P. Output: --npy FILE, --print (the default without --npy), --decimals K,
// --isa scalar|avx2|avx512|neon (force a path).
//   posenc-cli rope --preset llama3.1 --positions 4   (RoPE mode, rope.cpp: cos/sin cache rows of any scheme)
//   posenc-cli --help                                 (every option of both modes)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "npy.hpp"
#include "rope.hpp"
#include "posenc/posenc.h"

namespace {

struct Options {
  posenc_spec spec = posenc_spec_default(0);
  int64_t positions = 10, first = 0;
  const char *npy = nullptr;
  bool print = false;
  int decimals = 4;
  const char *isa = nullptr;
};

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "posenc-cli: %s\nusage: posenc-cli --d-model N [--positions N] [--first P] [--layout "
               "interleaved|sin-cos-halves|cos-sin-halves] [--base B] [--denominator D] [--scale S] [--npy FILE] "
               "[--print] [--decimals K] [--isa NAME]\n",
               why);
  std::exit(2);
}

void help() {
  std::printf(
      "posenc-cli: positional-encoding tables and RoPE caches, printed and/or saved as .npy\n"
      "\n"
      "Table mode: one sinusoidal table (posenc_table_f32)\n"
      "  posenc-cli --d-model N [options]\n"
      "  --d-model N             row width (required)\n"
      "  --positions N           rows, for positions first .. first+N-1 (default 10)\n"
      "  --first P               first position (default 0)\n"
      "  --layout L              interleaved (default), sin-cos-halves or cos-sin-halves\n"
      "  --base B                frequency base (default 1e4)\n"
      "  --denominator D         D in base^(-i/D); 0 (default) means floor(d_model/2)\n"
      "  --scale S               position_scale (default 1)\n"
      "  --npy FILE              save the (N, d_model) float32 table\n"
      "  --print                 print it (the default without --npy)\n"
      "  --decimals K            printed decimals (default 4)\n"
      "  --isa NAME              force a path: scalar, avx2, avx512, neon\n"
      "\n");
  cli::rope_help(stdout);
  std::printf("\nExit status: 0 done, 1 the library refused (its status is printed) or a file could not be written, "
              "2 a usage error.\n");
}

double number(const char *s, const char *opt) {
  char *end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || *end) usage((std::string("not a number for ") + opt).c_str());
  return v;
}

posenc_layout layout_of(const char *s) {
  if (!std::strcmp(s, "interleaved")) return POSENC_INTERLEAVED;
  if (!std::strcmp(s, "sin-cos-halves")) return POSENC_SIN_COS_HALVES;
  if (!std::strcmp(s, "cos-sin-halves")) return POSENC_COS_SIN_HALVES;
  usage("unknown layout");
}

Options parse(int argc, char **argv) {
  Options o;
  bool have_d = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!std::strcmp(a, "--print")) {
      o.print = true;
      continue;
    }
    if (i + 1 >= argc) usage((std::string("missing value or unknown option ") + a).c_str());
    const char *v = argv[++i];
    if (!std::strcmp(a, "--d-model")) o.spec.d_model = int64_t(number(v, a)), have_d = true;
    else if (!std::strcmp(a, "--positions")) o.positions = int64_t(number(v, a));
    else if (!std::strcmp(a, "--first")) o.first = int64_t(number(v, a));
    else if (!std::strcmp(a, "--layout")) o.spec.layout = layout_of(v);
    else if (!std::strcmp(a, "--base")) o.spec.base = number(v, a);
    else if (!std::strcmp(a, "--denominator")) o.spec.freq_denominator = number(v, a);
    else if (!std::strcmp(a, "--scale")) o.spec.position_scale = number(v, a);
    else if (!std::strcmp(a, "--npy")) o.npy = v;
    else if (!std::strcmp(a, "--decimals")) o.decimals = int(number(v, a));
    else if (!std::strcmp(a, "--isa")) o.isa = v;
    else usage((std::string("unknown option ") + a).c_str());
  }
  if (!have_d) usage("--d-model is required");
  if (!o.npy) o.print = true;
  return o;
}

bool force(const char *name) {
  for (int v = POSENC_ISA_SCALAR; v <= POSENC_ISA_NEON; ++v)
    if (!std::strcmp(name, posenc_isa_name(posenc_isa(v)))) return posenc_force_isa(posenc_isa(v)) == POSENC_OK;
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && !std::strcmp(argv[1], "rope")) return cli::rope_main(argc - 1, argv + 1);
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      help();
      return 0;
    }
  const Options o = parse(argc, argv);
  if (o.isa && !force(o.isa)) usage("that path is not available here");
  const int64_t d = o.spec.d_model, n = o.positions;
  if (d < 1 || n < 0 || (n > 0 && d > (int64_t(1) << 40) / n)) usage("bad --d-model or --positions");
  std::vector<float> t(size_t(n * d));
  const posenc_status st = posenc_table_f32(&o.spec, o.first, n, t.data(), d);
  if (st != POSENC_OK) {
    std::fprintf(stderr, "posenc-cli: %s\n", posenc_status_string(st));
    return 1;
  }
  if (o.print)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t e = 0; e < d; ++e)
        std::printf("%.*f%c", o.decimals, double(t[size_t(r * d + e)]), e + 1 < d ? ' ' : '\n');
  if (o.npy && !cli::write_npy(o.npy, t.data(), n, d)) {
    std::perror(o.npy);
    return 1;
  }
  return 0;
}
