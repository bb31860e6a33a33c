// posenc-bench: every kernel on every path, the peers and the bounds, as Google Benchmark cases.
//   posenc-bench [--quick] [--pairs FILE] [Google Benchmark flags]
//   posenc-bench --report DIR [--quick]    (report_mode.cpp: the whole report, from an install)
// --quick registers the small shapes only (CI). --pairs FILE adds a paired case (harness.hpp: add_pair)
// for each line "a|b" of case names whose cases this plan has (bench/report/targets.py --pairs writes
// the issues' targets). The versions of everything measured go into the JSON context, for the report.
#include <benchmark/benchmark.h>
#include <gnu/libc-version.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>
#include <xsimd/config/xsimd_config.hpp>

#include "cases.hpp"
#include "harness.hpp"
#include "posenc/posenc.h"
#include "report_mode.hpp"

#if __has_include(<sleef.h>)
#include <sleef.h>
#endif

namespace {

std::string path_names() {
  std::string s;
  for (posenc_isa isa : bench::paths()) s += std::string(s.empty() ? "" : ",") + posenc_isa_name(isa);
  return s;
}

void add_context(bool quick) {
  benchmark::AddCustomContext("posenc_version", posenc_version());
  benchmark::AddCustomContext("posenc_paths", path_names());
  benchmark::AddCustomContext("plan", quick ? "quick" : "full");
  benchmark::AddCustomContext("compiler", "g++ " __VERSION__);
  benchmark::AddCustomContext("glibc", gnu_get_libc_version());
  benchmark::AddCustomContext("xsimd", std::to_string(XSIMD_VERSION_MAJOR) + "." + std::to_string(XSIMD_VERSION_MINOR) +
                                           "." + std::to_string(XSIMD_VERSION_PATCH));
  benchmark::AddCustomContext("sleef", std::to_string(SLEEF_VERSION_MAJOR) + "." + std::to_string(SLEEF_VERSION_MINOR) +
                                           "." + std::to_string(SLEEF_VERSION_PATCHLEVEL));
  benchmark::AddCustomContext("google_benchmark", POSENC_BENCHMARK_VERSION);
}

// Each line "a|b" names two cases; lines whose cases are not in this plan are skipped.
int add_pairs(const char *path) {
  std::ifstream in(path);
  if (!in) return -1;
  int added = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t bar = line.find('|');
    if (bar != std::string::npos && bench::add_pair(line.substr(0, bar), line.substr(bar + 1))) ++added;
  }
  return added;
}

}  // namespace

const char kUsage[] =
    "posenc-bench: every posenc kernel on every path of this machine, against its peers and bounds\n"
    "usage: posenc-bench [--quick] [--pairs FILE] [Google Benchmark flags]\n"
    "       posenc-bench --report DIR [--quick]\n"
    "  --quick         the small shapes only\n"
    "  --pairs FILE    also time the pairs of cases \"a|b\" listed in FILE, alternated\n"
    "  --report DIR    the whole benchmark report (DIR/summary.md, charts where matplotlib is importable):\n"
    "                  accuracy against MPFR, the benchmarks, the pictures of the encoding; POSENC_PYTHON\n"
    "                  names the Python 3 to run it with (default python3)\n"
    "Google Benchmark's own flags follow.\n\n";

int main(int argc, char **argv) {
  if (bench::wants_report(argc, argv)) return bench::run_report(argc, argv);
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help")) std::fputs(kUsage, stdout);
  std::vector<char *> args;
  bool quick = false;
  const char *pairs = nullptr;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--pairs") == 0 && i + 1 < argc)
      pairs = argv[++i];
    else
      args.push_back(argv[i]);
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  add_context(quick);
  const bench::Plan plan = quick ? bench::quick_plan() : bench::full_plan();
  bench::add_table_cases(plan);
  bench::add_embed_cases(plan);
  bench::add_split_cases(plan);
  bench::add_rope_cases(plan);
  bench::add_rope_axes_cases(plan);
  bench::add_times_cases(plan);
  bench::add_rope_real_cases(plan);
  bench::add_threads_cases(plan);
  if (pairs && add_pairs(pairs) < 0) {
    std::fprintf(stderr, "posenc-bench: cannot read %s\n", pairs);
    return 2;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
