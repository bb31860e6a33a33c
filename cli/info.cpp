// posenc info: what the library knows about this build and this machine (posenc_machine_info), so that it
// shows the decisions the library itself makes.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "posenc/posenc.h"

namespace cli {
namespace {

template <class Keep>
std::vector<std::string> paths_where(Keep keep) {
  std::vector<std::string> out;
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (keep(v)) out.push_back(posenc_isa_name(posenc_isa(v)));
  return out;
}

std::string env_isa() {
  const char *e = std::getenv("POSENC_ISA");
  return e ? e : "";
}

// The active path (none when POSENC_ISA refused every path) and why, in words.
std::pair<std::string, std::string> active(posenc_path_reason reason) {
  const std::string name = posenc_isa_name(posenc_active_isa());
  switch (reason) {
    case POSENC_PATH_BEST_AVAILABLE: return {name, "the best path available (POSENC_ISA is not set)"};
    case POSENC_PATH_ENVIRONMENT: return {name, "POSENC_ISA=" + env_isa()};
    case POSENC_PATH_FORCED: return {name, "forced by posenc_force_isa"};
    case POSENC_PATH_ENV_UNAVAILABLE:
      return {"none", "POSENC_ISA=" + env_isa() +
                          " is not available here: every kernel call returns "
                          "\"instruction set not available\""};
    case POSENC_PATH_ENV_UNKNOWN: break;
  }
  return {"none", "POSENC_ISA=" + env_isa() +
                      " names no path (scalar, avx2, avx512, neon): every kernel call "
                      "returns \"instruction set not available\""};
}

// The CPU facts the path choice is made from, by name: those of this architecture.
std::vector<std::pair<std::string, bool>> features(const posenc_machine &m) {
  std::vector<std::pair<std::string, bool>> f;
  for (int i = 0; i < POSENC_FEATURE_COUNT; ++i)
    if (m.features_known >> i & 1u) f.push_back({posenc_feature_name(posenc_feature(i)), (m.features >> i & 1u) != 0});
  return f;
}

std::string join(const std::vector<std::string> &v, const char *sep) {
  std::string s;
  for (const std::string &x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string bytes(uint64_t b) {
  char buf[64];
  if (b == 0) return "unknown";
  if (b % (1u << 20) == 0)
    std::snprintf(buf, sizeof buf, "%llu MiB", (unsigned long long)(b >> 20));
  else if (b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)b);
  return buf;
}

std::string quoted(const std::string &s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string json_list(const std::vector<std::string> &v) {
  std::vector<std::string> q;
  for (const std::string &x : v) q.push_back(quoted(x));
  return "[" + join(q, ", ") + "]";
}

}  // namespace

int info_main(int argc, char **argv) {
  bool json = false;
  read_options(argc, argv, [&](Args &a) {
    if (a.name() != "--json") return false;
    a.flag();
    json = true;
    return true;
  });
  posenc_machine c;
  if (posenc_machine_info(&c) != POSENC_OK) return kExitFailed;
  const auto compiled_path = [&c](int v) { return (c.compiled >> v & 1u) != 0; };
  const std::vector<std::string> compiled = paths_where(compiled_path);
  const std::vector<std::string> available =
      paths_where([](int v) { return posenc_isa_available(posenc_isa(v)) != 0; });
  const auto [path, why] = active(c.reason);
  const uint64_t threshold = c.stream_threshold;
  std::vector<std::string> on, off;
  for (const auto &[name, has] : features(c)) (has ? on : off).push_back(name);
  // Only the x86 vector paths have non-temporal stores; the scalar and NEON paths store through the caches.
  const std::vector<std::string> streaming =
      paths_where([&](int v) { return (v == POSENC_ISA_AVX2 || v == POSENC_ISA_AVX512) && compiled_path(v); });

  if (json) {
    std::printf(
        "{\"version\": %s, \"compiled\": %s, \"available\": %s, \"active\": %s, \"why\": %s,\n"
        " \"posenc_isa\": %s, \"cpu_features\": %s, \"cpu_features_missing\": %s,\n"
        " \"caches\": {\"l1d\": %llu, \"l2\": %llu, \"l3\": %llu, \"l3_sharing\": %u, \"source\": %s},\n"
        " \"nontemporal_threshold\": %llu, \"nontemporal_paths\": %s}\n",
        quoted(posenc_version()).c_str(), json_list(compiled).c_str(), json_list(available).c_str(),
        quoted(path).c_str(), quoted(why).c_str(), std::getenv("POSENC_ISA") ? quoted(env_isa()).c_str() : "null",
        json_list(on).c_str(), json_list(off).c_str(), (unsigned long long)c.l1d, (unsigned long long)c.l2,
        (unsigned long long)c.l3, unsigned(c.l3_sharing), quoted(c.cache_source).c_str(), (unsigned long long)threshold,
        json_list(streaming).c_str());
    return kExitOk;
  }
  std::printf("posenc %s\n", posenc_version());
  std::printf("compiled paths:   %s\n", join(compiled, " ").c_str());
  std::printf("available paths:  %s (compiled, and supported by this CPU and OS)\n", join(available, " ").c_str());
  std::printf("active path:      %s: %s\n", path.c_str(), why.c_str());
  std::printf("CPU features:     %s\n", on.empty() ? "none of those below" : join(on, " ").c_str());
  if (!off.empty()) std::printf("  not present:    %s\n", join(off, " ").c_str());
  std::printf("caches:           L1d %s, L2 %s, L3 %s", bytes(c.l1d).c_str(), bytes(c.l2).c_str(), bytes(c.l3).c_str());
  if (c.l3 && c.l3_sharing > 1) std::printf(" shared by %u logical CPUs", unsigned(c.l3_sharing));
  std::printf(" (%s)\n", c.cache_source);
  if (streaming.empty())
    std::printf("non-temporal stores: none (the scalar and NEON paths store through the caches)\n");
  else
    std::printf("non-temporal stores: float32 outputs of %llu bytes (%s) or more, on the %s paths\n",
                (unsigned long long)threshold, bytes(threshold).c_str(), join(streaming, " and ").c_str());
  return kExitOk;
}

}  // namespace cli
