// posenc-bench: every kernel on every path, the peers and the bounds, as Google Benchmark cases.
//   posenc-bench [--quick] [Google Benchmark flags]
// --quick registers the small shapes only (CI). The versions of everything measured go into the JSON
// context, for the report.
#include <benchmark/benchmark.h>
#include <gnu/libc-version.h>

#include <cstring>
#include <string>
#include <vector>
#include <xsimd/config/xsimd_config.hpp>

#include "cases.hpp"
#include "harness.hpp"
#include "posenc/posenc.h"

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
  benchmark::AddCustomContext("xsimd", std::to_string(XSIMD_VERSION_MAJOR) + "." +
                                           std::to_string(XSIMD_VERSION_MINOR) + "." +
                                           std::to_string(XSIMD_VERSION_PATCH));
  benchmark::AddCustomContext("sleef", std::to_string(SLEEF_VERSION_MAJOR) + "." +
                                           std::to_string(SLEEF_VERSION_MINOR) + "." +
                                           std::to_string(SLEEF_VERSION_PATCHLEVEL));
  benchmark::AddCustomContext("google_benchmark", POSENC_BENCHMARK_VERSION);
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<char *> args;
  bool quick = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else args.push_back(argv[i]);
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  add_context(quick);
  const bench::Plan plan = quick ? bench::quick_plan() : bench::full_plan();
  bench::add_table_cases(plan);
  bench::add_embed_cases(plan);
  bench::add_split_cases(plan);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
