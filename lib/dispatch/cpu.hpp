// CPU feature detection, done by hand (cpuid + xgetbv on x86; xsimd 8.1's own detection is not used).
// The decision is a pure function of the raw register values so that tests can feed it synthetic CPUs.
#pragma once

#include <cstdint>

namespace posenc {
namespace detail {

// One member per path of isa_list.hpp, named as the path (dispatch.cpp reads cpu.<name>).
struct CpuFeatures {
  bool scalar = true;   // the baseline: every CPU
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

// The facts decide_x86 combines, one by one (`posenc info` lists them): the CPUID bits of each extension
// and whether the OS saves the register state it needs (XCR0).
struct X86Flags {
  bool osxsave = false, avx = false, fma = false, f16c = false, avx2 = false;
  bool avx512f = false, avx512cd = false, avx512dq = false, avx512bw = false, avx512vl = false;
  bool ymm_state = false;  // XCR0: SSE and AVX state
  bool zmm_state = false;  // XCR0: plus opmask, ZMM_Hi256, Hi16_ZMM
};
X86Flags x86_flags(const X86Registers &r);

// One data or unified cache as a subleaf of cpuid leaf 4 (Intel) or 0x8000001D (AMD, same layout)
// describes it; level 0 when the subleaf describes no such cache (the end of the list, or an
// instruction cache).
struct CacheLevel {
  int level = 0;
  uint64_t bytes = 0;
  uint32_t sharing = 1;  // logical processors sharing it, as the CPU (or hypervisor) reports
};
CacheLevel decode_cache_leaf(uint32_t eax, uint32_t ebx, uint32_t ecx);

// Output bytes from which one thread's writes go out with non-temporal stores: 3/4 of what one thread
// can expect to keep cached, its share of the last-level cache plus its own L2 (the same size glibc
// gives its memcpy/memset non-temporal threshold). A 2-vCPU slice of a 260 MiB L3 gets 99 MiB, not
// 195: sizing by the whole L3 kept 128 MiB tables on cached stores there, at ~0.55x of memset.
uint64_t stream_threshold_for(uint64_t l2, uint64_t l3, uint32_t l3_sharing);
// The same from what libc's sysconf reports (0 sizes when it does not know; no sharing known).
uint64_t stream_threshold_from_sysconf();
// This machine's (x86: from cpuid; elsewhere, or without cache leaves, from sysconf).
uint64_t stream_threshold_bytes();
// What this process runs on (x86: from cpuid; aarch64: NEON is architectural).
CpuFeatures detect_cpu();

// The cache sizes stream_threshold_bytes() decides from, and where they came from (`posenc info`).
struct CacheSizes {
  uint64_t l1d = 0, l2 = 0, l3 = 0;  // bytes; 0 when not known
  uint32_t l3_sharing = 1;           // logical processors sharing the L3 (1 when not known)
  const char *source = "none";       // "cpuid leaf 4", "cpuid leaf 0x8000001D" or "sysconf"
};
CacheSizes cache_sizes_from_sysconf();
// This machine's (x86: from cpuid, else sysconf; elsewhere sysconf).
CacheSizes cache_sizes();
#if defined(__x86_64__)
// cpuid and xgetbv as decide_x86 reads them (cpu_x86.cpp).
X86Registers read_x86_registers();
#endif

}  // namespace detail
}  // namespace posenc
