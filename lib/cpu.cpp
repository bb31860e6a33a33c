// The x86 feature decision, a pure function of cpuid/xgetbv values: built on every architecture so the
// detection tests can run it on synthetic CPUs everywhere.
#include <unistd.h>

#include "cpu.hpp"

namespace posenc {
namespace detail {

CpuFeatures decide_x86(const X86Registers &r) {
  CpuFeatures f;
  const bool osxsave = (r.leaf1_ecx >> 27) & 1;
  const bool avx = (r.leaf1_ecx >> 28) & 1, fma = (r.leaf1_ecx >> 12) & 1, f16c = (r.leaf1_ecx >> 29) & 1;
  if (!osxsave || r.max_leaf < 7) return f;
  const bool ymm_saved = (r.xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_saved = (r.xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
  const uint32_t b = r.leaf7_ebx;
  const bool avx2 = (b >> 5) & 1;
  f.avx2 = avx && fma && f16c && avx2 && ymm_saved;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 28) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
  f.avx512 = f.avx2 && avx512 && zmm_saved;
  return f;
}

CacheLevel decode_cache_leaf(uint32_t eax, uint32_t ebx, uint32_t ecx) {
  CacheLevel c;
  const uint32_t type = eax & 0x1F;  // 1 data, 2 instruction, 3 unified; 0 ends the list
  if (type != 1 && type != 3) return c;
  c.level = int((eax >> 5) & 0x7);
  const uint64_t ways = ((ebx >> 22) & 0x3FF) + 1, partitions = ((ebx >> 12) & 0x3FF) + 1,
                 line = (ebx & 0xFFF) + 1, sets = uint64_t(ecx) + 1;
  c.bytes = ways * partitions * line * sets;
  c.sharing = ((eax >> 14) & 0xFFF) + 1;
  return c;
}

uint64_t stream_threshold_for(uint64_t l2, uint64_t l3, uint32_t l3_sharing) {
  const uint64_t share = l3 / (l3_sharing ? l3_sharing : 1) + l2;
  if (share == 0) return uint64_t(32) << 20;  // nothing known: a size past any L2 of today
  return share / 4 * 3;
}

uint64_t stream_threshold_from_sysconf() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return stream_threshold_for(l2 > 0 ? uint64_t(l2) : 0, l3 > 0 ? uint64_t(l3) : 0, 1);
}

}  // namespace detail
}  // namespace posenc
