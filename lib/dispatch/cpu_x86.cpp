// x86 feature detection: cpuid for what the CPU implements, xgetbv for what the OS saves on a context
// switch. Both are needed: a CPU with AVX-512 under an OS (or hypervisor) that does not enable ZMM state
// faults on the first AVX-512 instruction.
#include <cpuid.h>

#include "dispatch/cpu.hpp"

namespace posenc {
namespace detail {

X86Registers read_x86_registers() {
  X86Registers r;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return r;
  r.max_leaf = a;
  __get_cpuid(1, &a, &b, &c, &d);
  r.leaf1_ecx = c;
  if (r.max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    r.leaf7_ebx = b;
  }
  if ((r.leaf1_ecx >> 27) & 1) {  // xgetbv is only defined when OSXSAVE is set
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    r.xcr0 = (uint64_t(hi) << 32) | lo;
  }
  return r;
}

CpuFeatures detect_cpu() { return decide_x86(read_x86_registers()); }

CacheSizes cache_sizes() {
  CacheSizes sizes;
  // Intel lists its caches in leaf 4, AMD (with topology extensions) in 0x8000001D, in the same format.
  auto scan = [&](unsigned leaf) {
    for (unsigned sub = 0; sub < 16; ++sub) {
      unsigned a = 0, b = 0, c = 0, d = 0;
      __cpuid_count(leaf, sub, a, b, c, d);
      if ((a & 0x1F) == 0) break;
      const CacheLevel lv = decode_cache_leaf(a, b, c);
      if (lv.level == 1) sizes.l1d = lv.bytes;
      if (lv.level == 2) sizes.l2 = lv.bytes;
      if (lv.level == 3) {
        sizes.l3 = lv.bytes;
        sizes.l3_sharing = lv.sharing;
      }
    }
  };
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) && a >= 4) {
    scan(4);
    sizes.source = "cpuid leaf 4";
  }
  if (sizes.l2 == 0 && sizes.l3 == 0 && __get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x8000001D) {
    __get_cpuid(0x80000001, &a, &b, &c, &d);
    if ((c >> 22) & 1) {
      sizes = CacheSizes{};
      scan(0x8000001D);
      sizes.source = "cpuid leaf 0x8000001D";
    }
  }
  // no cache leaves (an old CPU, a hypervisor hiding them): what libc knows
  if (sizes.l2 == 0 && sizes.l3 == 0) return cache_sizes_from_sysconf();
  return sizes;
}

}  // namespace detail
}  // namespace posenc
