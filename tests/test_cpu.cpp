// Feature detection, done by hand because xsimd 8.1's is unreliable: the decision on synthetic CPUs,
// and the real answer against the compiler's own detection and the kernel's /proc/cpuinfo.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "dispatch/cpu.hpp"
#include "posenc/posenc.h"

using posenc::detail::CpuFeatures;
using posenc::detail::decide_x86;
using posenc::detail::X86Registers;

namespace {

X86Registers full() {
  X86Registers r;
  r.max_leaf = 13;
  r.leaf1_ecx = (1u << 27) | (1u << 28) | (1u << 12) | (1u << 29);  // OSXSAVE AVX FMA F16C
  r.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
  r.xcr0 = 0xE7;
  return r;
}

}  // namespace

TEST_CASE("decision on synthetic CPUs", "[cpu]") {
  CpuFeatures f = decide_x86(full());
  CHECK(f.avx2);
  CHECK(f.avx512);
  X86Registers r = full();
  r.xcr0 = 0x7;  // the OS saves YMM but not ZMM state
  f = decide_x86(r);
  CHECK(f.avx2);
  CHECK_FALSE(f.avx512);
  r = full();
  r.xcr0 = 0x3;  // no YMM state: AVX faults
  f = decide_x86(r);
  CHECK_FALSE(f.avx2);
  CHECK_FALSE(f.avx512);
  for (int bit : {27, 28, 12, 29}) {  // without OSXSAVE, AVX, FMA or F16C: no vector path at all
    r = full();
    r.leaf1_ecx &= ~(1u << bit);
    f = decide_x86(r);
    CHECK_FALSE(f.avx2);
    CHECK_FALSE(f.avx512);
  }
  for (int bit : {16, 17, 28, 30, 31}) {  // each AVX-512 subset is required
    r = full();
    r.leaf7_ebx &= ~(1u << bit);
    f = decide_x86(r);
    CHECK(f.avx2);
    CHECK_FALSE(f.avx512);
  }
  r = full();
  r.leaf7_ebx &= ~(1u << 5);  // no AVX2
  CHECK_FALSE(decide_x86(r).avx2);
  CHECK_FALSE(decide_x86(r).avx512);
  r = full();
  r.max_leaf = 6;  // leaf 7 unavailable
  CHECK_FALSE(decide_x86(r).avx2);
  CHECK_FALSE(decide_x86(X86Registers{}).avx2);
}

TEST_CASE("detection agrees with the compiler builtins and /proc/cpuinfo", "[cpu]") {
  const CpuFeatures f = posenc::detail::detect_cpu();
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  CHECK(f.avx2 == avx2);
  CHECK(f.avx512 == avx512);
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      while (words >> w) flags.insert(w);
      break;
    }
  if (!flags.empty()) {
    const bool p2 = flags.count("avx2") && flags.count("fma") && flags.count("f16c");
    CHECK(f.avx2 == p2);
    CHECK(f.avx512 == (p2 && flags.count("avx512f") && flags.count("avx512dq") && flags.count("avx512cd") &&
                       flags.count("avx512bw") && flags.count("avx512vl")));
  }
  CHECK(posenc_isa_available(POSENC_ISA_AVX2) == (f.avx2 ? 1 : 0));
  CHECK(posenc_isa_available(POSENC_ISA_AVX512) == (f.avx512 ? 1 : 0));
  CHECK_FALSE(f.neon);
#elif defined(__aarch64__)
  CHECK(f.neon);
  CHECK_FALSE(f.avx2);
  CHECK(posenc_isa_available(POSENC_ISA_NEON) == 1);
#endif
}

TEST_CASE("cache leaves decode as the Intel SDM lays them out", "[cpu]") {
  using posenc::detail::decode_cache_leaf;
  // A 2-vCPU Emerald Rapids guest's leaf 4: an L1 data cache, an L1 instruction cache, the L3. Sizes
  // worked out by hand from the fields: ways x partitions x line x sets.
  auto l1d = decode_cache_leaf(0x4000121, 0x2c0003f, 0x3f);  // 12 ways, 64 B lines, 64 sets
  CHECK(l1d.level == 1);
  CHECK(l1d.bytes == 49152);
  CHECK(l1d.sharing == 1);
  CHECK(decode_cache_leaf(0x4000122, 0x1c0003f, 0x3f).level == 0);  // instruction cache: not counted
  auto l3 = decode_cache_leaf(0x4004163, 0x4c0003f, 0x33fff);       // 20 ways, 64 B lines, 212992 sets, 2 sharing
  CHECK(l3.level == 3);
  CHECK(l3.bytes == 272629760);
  CHECK(l3.sharing == 2);
  // a made-up unified L2: 16 ways, 2 partitions, 128 B lines, 1024 sets, 4 sharing
  auto l2 = decode_cache_leaf(3u | (2u << 5) | (3u << 14), (15u << 22) | (1u << 12) | 127u, 1023);
  CHECK(l2.level == 2);
  CHECK(l2.bytes == 16ull * 2 * 128 * 1024);
  CHECK(l2.sharing == 4);
  CHECK(decode_cache_leaf(0, 0, 0).level == 0);  // the end of the list
}

TEST_CASE("the streaming threshold is 3/4 of one thread's cache", "[cpu]") {
  using posenc::detail::stream_threshold_for;
  const uint64_t MiB = 1 << 20;
  CHECK(stream_threshold_for(2 * MiB, 260 * MiB, 2) == 99 * MiB);             // (130 + 2) * 3/4
  CHECK(stream_threshold_for(2 * MiB, 260 * MiB, 1) == 196 * MiB + MiB / 2);  // 262 * 3/4
  CHECK(stream_threshold_for(2 * MiB, 260 * MiB, 0) == 196 * MiB + MiB / 2);  // an unknown sharing counts as 1
  CHECK(stream_threshold_for(4 * MiB, 0, 1) == 3 * MiB);                      // no L3
  CHECK(stream_threshold_for(0, 0, 1) == 32 * MiB);                           // nothing known
  const uint64_t t = posenc::detail::stream_threshold_bytes();
  CHECK(t > 0);
#if defined(__x86_64__)
  // glibc reads the same cpuid leaves for sysconf: the machine's threshold lies between 3/4 of its L2
  // and 3/4 of its whole L3 plus L2 (equal to the latter only when no other thread shares the L3).
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l2 > 0 && l3 > 0) {
    CHECK(t >= uint64_t(l2) / 4 * 3);
    CHECK(t <= (uint64_t(l2) + uint64_t(l3)) / 4 * 3);
  }
#endif
}

TEST_CASE("posenc_machine_info reports what the internals decide", "[cpu]") {
  posenc_machine m;
  std::memset(&m, 0xA5, sizeof m);
  REQUIRE(posenc_machine_info(&m) == POSENC_OK);
  CHECK(posenc_machine_info(nullptr) == POSENC_ERR_NULL);
  // the paths: every available one is compiled, scalar always
  CHECK((m.compiled & 1u) == 1u);
  for (int v = POSENC_ISA_SCALAR; v < POSENC_ISA_COUNT; ++v)
    if (posenc_isa_available(posenc_isa(v))) CHECK((m.compiled >> v & 1u) == 1u);
  CHECK(m.compiled >> POSENC_ISA_COUNT == 0u);
  const char *env = std::getenv("POSENC_ISA");
  CHECK(m.reason == (env && *env ? POSENC_PATH_ENVIRONMENT : POSENC_PATH_BEST_AVAILABLE));
  // the features: those of the architecture, each as detect_cpu and decide_x86 combine them
  const posenc::detail::CpuFeatures cpu = posenc::detail::detect_cpu();
#if defined(__x86_64__)
  CHECK(m.features_known == 0xFFFu);
  const bool avx2 = (m.features >> POSENC_FEATURE_AVX2 & 1u) && (m.features >> POSENC_FEATURE_FMA & 1u) &&
                    (m.features >> POSENC_FEATURE_F16C & 1u) && (m.features >> POSENC_FEATURE_AVX & 1u) &&
                    (m.features >> POSENC_FEATURE_OS_YMM_STATE & 1u);
  CHECK(avx2 == cpu.avx2);
#else
  CHECK(m.features_known == 1u << POSENC_FEATURE_NEON);
  CHECK(((m.features >> POSENC_FEATURE_NEON) & 1u) == unsigned(cpu.neon));
#endif
  CHECK((m.features & ~m.features_known) == 0u);
  const posenc::detail::CacheSizes c = posenc::detail::cache_sizes();
  CHECK(m.l1d == c.l1d);
  CHECK(m.l2 == c.l2);
  CHECK(m.l3 == c.l3);
  CHECK(m.l3_sharing == c.l3_sharing);
  CHECK(std::string(m.cache_source) == c.source);
  CHECK(m.stream_threshold == posenc::detail::stream_threshold_bytes());
  // the names
  CHECK(std::string(posenc_feature_name(POSENC_FEATURE_OSXSAVE)) == "osxsave");
  CHECK(std::string(posenc_feature_name(POSENC_FEATURE_OS_ZMM_STATE)) == "os-zmm-state");
  CHECK(std::string(posenc_feature_name(POSENC_FEATURE_NEON)) == "neon");
  CHECK(posenc_feature_name(POSENC_FEATURE_COUNT) == nullptr);
  CHECK(posenc_feature_name(posenc_feature(-1)) == nullptr);
}
