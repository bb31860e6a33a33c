// Feature detection, done by hand because xsimd 8.1's is unreliable: the decision on synthetic CPUs,
// and the real answer against the compiler's own detection and the kernel's /proc/cpuinfo.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cpu.hpp"
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
