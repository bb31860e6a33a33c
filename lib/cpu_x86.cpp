// x86 feature detection: cpuid for what the CPU implements, xgetbv for what the OS saves on a context
// switch. Both are needed: a CPU with AVX-512 under an OS (or hypervisor) that does not enable ZMM state
// faults on the first AVX-512 instruction.
#include <cpuid.h>

#include "cpu.hpp"

namespace posenc {
namespace detail {

CpuFeatures detect_cpu() {
  X86Registers r;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return CpuFeatures{};
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
  return decide_x86(r);
}

}  // namespace detail
}  // namespace posenc
