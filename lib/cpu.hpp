// CPU feature detection, done by hand (cpuid + xgetbv on x86; xsimd 8.1's own detection is not used).
// The decision is a pure function of the raw register values so that tests can feed it synthetic CPUs.
#pragma once

#include <cstdint>

namespace posenc {
namespace detail {

struct CpuFeatures {
  bool avx2 = false;    // AVX2 + FMA + F16C + AVX, and the OS saves YMM state
  bool avx512 = false;  // the above + AVX-512 F/CD/DQ/BW/VL, and the OS saves ZMM and opmask state
  bool neon = false;    // AArch64 Advanced SIMD
};

struct X86Registers {
  uint32_t max_leaf = 0;   // cpuid(0).eax
  uint32_t leaf1_ecx = 0;  // cpuid(1).ecx
  uint32_t leaf7_ebx = 0;  // cpuid(7, 0).ebx
  uint64_t xcr0 = 0;       // xgetbv(0), read only when leaf1_ecx has OSXSAVE
};

CpuFeatures decide_x86(const X86Registers &r);
// What this process runs on (x86: from cpuid; aarch64: NEON is architectural).
CpuFeatures detect_cpu();

}  // namespace detail
}  // namespace posenc
