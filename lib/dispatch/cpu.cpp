// The x86 feature decision, a pure function of cpuid/xgetbv values: built on every architecture so the
// detection tests can run it on synthetic CPUs everywhere.
#include <unistd.h>

#include "dispatch/cpu.hpp"

namespace posenc {
namespace detail {

X86Flags x86_flags(const X86Registers &r) {
  X86Flags f;
  f.osxsave = (r.leaf1_ecx >> 27) & 1;
  f.avx = (r.leaf1_ecx >> 28) & 1;
  f.fma = (r.leaf1_ecx >> 12) & 1;
  f.f16c = (r.leaf1_ecx >> 29) & 1;
  if (r.max_leaf >= 7) {
    const uint32_t b = r.leaf7_ebx;
    f.avx2 = (b >> 5) & 1;
    f.avx512f = (b >> 16) & 1;
    f.avx512dq = (b >> 17) & 1;
    f.avx512cd = (b >> 28) & 1;
    f.avx512bw = (b >> 30) & 1;
    f.avx512vl = (b >> 31) & 1;
  }
  if (f.osxsave) {  // XCR0 means nothing without OSXSAVE
    f.ymm_state = (r.xcr0 & 0x6) == 0x6;
    f.zmm_state = (r.xcr0 & 0xE6) == 0xE6;
  }
  return f;
}

CpuFeatures decide_x86(const X86Registers &r) {
  CpuFeatures f;
  const X86Flags x = x86_flags(r);
  f.avx2 = x.osxsave && x.avx && x.fma && x.f16c && x.avx2 && x.ymm_state;
  f.avx512 = f.avx2 && x.avx512f && x.avx512dq && x.avx512cd && x.avx512bw && x.avx512vl && x.zmm_state;
  return f;
}

CacheLevel decode_cache_leaf(uint32_t eax, uint32_t ebx, uint32_t ecx) {
  CacheLevel c;
  const uint32_t type = eax & 0x1F;  // 1 data, 2 instruction, 3 unified; 0 ends the list
  if (type != 1 && type != 3) return c;
  c.level = int((eax >> 5) & 0x7);
  const uint64_t ways = ((ebx >> 22) & 0x3FF) + 1, partitions = ((ebx >> 12) & 0x3FF) + 1, line = (ebx & 0xFFF) + 1,
                 sets = uint64_t(ecx) + 1;
  c.bytes = ways * partitions * line * sets;
  c.sharing = ((eax >> 14) & 0xFFF) + 1;
  return c;
}

uint64_t stream_threshold_for(uint64_t l2, uint64_t l3, uint32_t l3_sharing) {
  const uint64_t share = l3 / (l3_sharing ? l3_sharing : 1) + l2;
  if (share == 0) return uint64_t(32) << 20;  // nothing known: a size past any L2 of today
  return share / 4 * 3;
}

CacheSizes cache_sizes_from_sysconf() {
  CacheSizes c;
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
             l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  c.l1d = l1 > 0 ? uint64_t(l1) : 0;
  c.l2 = l2 > 0 ? uint64_t(l2) : 0;
  c.l3 = l3 > 0 ? uint64_t(l3) : 0;
  c.source = "sysconf";
  return c;
}

uint64_t stream_threshold_from_sysconf() {
  const CacheSizes c = cache_sizes_from_sysconf();
  return stream_threshold_for(c.l2, c.l3, c.l3_sharing);
}

uint64_t stream_threshold_bytes() {
  const CacheSizes c = cache_sizes();
  return stream_threshold_for(c.l2, c.l3, c.l3_sharing);
}

}  // namespace detail
}  // namespace posenc
